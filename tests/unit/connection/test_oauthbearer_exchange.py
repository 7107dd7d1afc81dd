"""The OAUTHBEARER exchange on our connections ends as RFC 7628 asks when the broker rejects the token:
the client answers the broker's error challenge with %x01, so the broker fails the authentication with
its reason instead of leaving the connection mid-exchange (then every request is ILLEGAL_SASL_STATE)."""

from __future__ import annotations

from typing import Any

from staticconsumer import _aiokafka
from staticconsumer.testing.oauth import UnsecuredTokenProvider


def _exchange() -> tuple[Any, UnsecuredTokenProvider]:
    """The authenticator a connection of ours makes for OAUTHBEARER (no socket: only its steps run)."""
    bounded_connection = _aiokafka._bounded()[0]
    tokens = UnsecuredTokenProvider("alice")
    conn = bounded_connection(
        "127.0.0.1", 9092, sasl_mechanism="OAUTHBEARER", sasl_oauth_token_provider=tokens
    )
    return conn.authenticator_oauth(), tokens


async def test_an_accepted_token_ends_the_exchange() -> None:
    exchange, tokens = _exchange()
    first = await exchange.step(None)
    assert first is not None
    payload, expect_response = first
    assert payload.startswith(b"n,,\x01auth=Bearer ")
    assert expect_response
    assert await exchange.step(b"") is None  # the broker's empty success
    assert tokens.calls == 1


async def test_a_rejected_token_is_answered_with_the_separator_once() -> None:
    exchange, tokens = _exchange()
    await exchange.step(None)
    rejection = b'{"status":"invalid_token"}'
    assert await exchange.step(rejection) == (b"\x01", True)
    assert await exchange.step(rejection) is None  # never a loop
    assert tokens.calls == 1, "no second token on the same connection"

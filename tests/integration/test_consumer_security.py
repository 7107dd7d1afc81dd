"""A static StaticConsumer over TLS and SASL_SSL on a real broker, configured with aiokafka's keywords
(``ssl_context``, ``sasl_plain_*``) or our own settings (``ssl_ca_location``, ``sasl_*``): it consumes,
commits, restarts as the same static member without a rebalance and goes on from its committed offset.

One broker for the module: SASL_PLAINTEXT for the helpers, SSL and SASL_SSL listeners for the consumers
(both are the only bootstrap the consumer knows, so its membership thread and its fetcher use TLS).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Container, Iterator
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer

from staticconsumer.consumer import StaticConsumer
from staticconsumer.errors import AuthenticationFailedError, BrokerHandshakeError
from staticconsumer.testing.broker import BrokerSettings, EmbeddedKafka, SaslSettings
from staticconsumer.testing.oauth import UnsecuredTokenProvider, unsecured_jwt

from .support import FAST, consume

pytestmark = pytest.mark.kafka

USERS = {"alice": "alice-pw-tls"}


@pytest.fixture(scope="module")
def secure_kafka() -> Iterator[EmbeddedKafka]:
    sasl = SaslSettings(users=USERS, authorizer=False, mechanisms=("PLAIN", "SCRAM-SHA-256", "OAUTHBEARER"))
    settings = BrokerSettings(tls=True, sasl=sasl)
    with EmbeddedKafka(settings=settings) as kafka:
        yield kafka


async def _produce(kafka: EmbeddedKafka, topic: str, start: int, count: int) -> None:
    """Over the SASL_SSL listener as alice: producing needs TLS too."""
    producer = AIOKafkaProducer(acks="all", **kafka.tls_client_kwargs("alice", sasl=True))
    await producer.start()
    try:
        for i in range(start, start + count):
            await producer.send(topic, f"v{i}".encode(), key=f"k{i}".encode())
        await producer.flush()
    finally:
        await producer.stop()


CONNECTIONS: dict[str, Callable[[EmbeddedKafka], dict[str, Any]]] = {
    "ssl-context": lambda kafka: kafka.tls_client_kwargs(),
    "sasl-ssl-aiokafka-keywords": lambda kafka: kafka.tls_client_kwargs("alice", sasl=True),
    "sasl-ssl-our-settings-scram": lambda kafka: kafka.tls_settings("alice", "SCRAM-SHA-256", sasl=True),
    "ssl-our-settings": lambda kafka: kafka.tls_settings(),
    "sasl-ssl-oauthbearer-token-provider": lambda kafka: kafka.tls_client_kwargs(
        "alice", "OAUTHBEARER", sasl=True
    ),
}


@pytest.mark.parametrize("way", list(CONNECTIONS))
async def test_a_static_member_consumes_commits_and_restarts_without_a_rebalance_over_tls(
    secure_kafka: EmbeddedKafka, unique_group: str, way: str
) -> None:
    topic = f"{unique_group}-t"
    secure_kafka.create_topic(topic, 2)
    await _produce(secure_kafka, topic, 0, 6)
    connect = CONNECTIONS[way](secure_kafka)
    if "ssl_context" in connect:
        assert "ssl_ca_location" not in connect, "aiokafka's keyword alone"

    def member() -> StaticConsumer:
        return StaticConsumer(
            topic,
            group_id=unique_group,
            group_instance_id="pod-0",
            enable_auto_commit=False,
            value_deserializer=bytes.decode,
            **FAST,
            **connect,
        )

    first = member()
    async with first:
        records = await consume(first, 6)
        assert sorted(r.value for r in records) == [f"v{i}" for i in range(6)]
        await first.commit()
        generation, owned = first.generation, first.assignment()
        committed = {tp: await first.committed(tp) for tp in owned}
    assert sum(offset or 0 for offset in committed.values()) == 6

    await _produce(secure_kafka, topic, 6, 4)
    again = member()
    async with again:
        records = await consume(again, 4)  # polling until assigned would drop what it polled
        assert sorted(r.value for r in records) == ["v6", "v7", "v8", "v9"], "on from the committed offset"
        assert again.generation == generation, "the same static member: no rebalance, no new generation"
        assert again.assignment() == owned
        assert again.settings.security_protocol in ("SSL", "SASL_SSL")
    described = await _describe(secure_kafka, unique_group)
    assert described == ["pod-0"], "one member, the static one: it never left"


async def test_the_token_provider_is_asked_by_the_membership_thread_and_the_fetcher(
    secure_kafka: EmbeddedKafka, unique_group: str
) -> None:
    topic = f"{unique_group}-t"
    secure_kafka.create_topic(topic, 1)
    await _produce(secure_kafka, topic, 0, 2)
    connect = secure_kafka.tls_client_kwargs("alice", "OAUTHBEARER", sasl=True)
    tokens = connect["sasl_oauth_token_provider"]
    assert isinstance(tokens, UnsecuredTokenProvider)
    consumer = StaticConsumer(topic, group_id=unique_group, group_instance_id="pod-0", **FAST, **connect)
    async with consumer:
        assert len(await consume(consumer, 2)) == 2
    assert threading.current_thread().name in tokens.threads, "the fetcher, on the application's loop"
    assert len(tokens.threads) >= 2, f"the membership thread too: {tokens.threads}"


class _RejectedTokens(UnsecuredTokenProvider):
    """Valid tokens, except the calls numbered in ``expired`` (1-based), which get a token that expired
    a minute ago: the broker rejects those."""

    def __init__(self, subject: str, expired: Container[int]) -> None:
        super().__init__(subject)
        self.expired = expired

    async def token(self) -> str:
        fresh = await super().token()
        return unsecured_jwt(self.subject, -60.0) if self.calls in self.expired else fresh


async def test_a_rejected_oauthbearer_token_is_an_authentication_failure_not_an_illegal_sasl_state(
    secure_kafka: EmbeddedKafka, unique_group: str
) -> None:
    topic = f"{unique_group}-t"
    secure_kafka.create_topic(topic, 1)
    connect = secure_kafka.tls_client_kwargs("alice", "OAUTHBEARER", sasl=True)
    connect["sasl_oauth_token_provider"] = _RejectedTokens("alice", expired=range(1, 1_000_000))
    consumer = StaticConsumer(topic, group_id=unique_group, group_instance_id="pod-0", **FAST, **connect)
    with pytest.raises(AuthenticationFailedError) as raised:
        await asyncio.wait_for(consumer.start(), 30)
    error = raised.value
    assert error.mechanism == "OAUTHBEARER"
    assert "OAUTHBEARER token" in str(error)
    assert any("invalid_token" in attempt.detail for attempt in error.attempts), error.attempts


async def test_a_token_rejected_after_the_bootstrap_is_retried_with_a_fresh_one(
    secure_kafka: EmbeddedKafka, unique_group: str
) -> None:
    """The three tokens after the bootstrap probe's are rejected (the first connections of the membership
    thread and of the fetcher): each such connection fails and is made again with a fresh token; no
    request reaches the broker mid-exchange (it would answer ILLEGAL_SASL_STATE and end the membership)."""
    topic = f"{unique_group}-t"
    secure_kafka.create_topic(topic, 1)
    await _produce(secure_kafka, topic, 0, 2)
    connect = secure_kafka.tls_client_kwargs("alice", "OAUTHBEARER", sasl=True)
    tokens = _RejectedTokens("alice", expired={2, 3, 4})
    connect["sasl_oauth_token_provider"] = tokens
    consumer = StaticConsumer(topic, group_id=unique_group, group_instance_id="pod-0", **FAST, **connect)
    async with consumer:
        assert sorted(r.value for r in await consume(consumer, 2)) == [b"v0", b"v1"]
    assert tokens.calls >= 5, "the rejected connections were made again"


async def _describe(kafka: EmbeddedKafka, group: str) -> list[str | None]:
    """The group's instance ids, asked over the SSL listener (its client is User:ANONYMOUS)."""
    from staticconsumer.admin import GroupAdmin

    async with GroupAdmin(**kafka.tls_settings()) as admin:
        group_description = await admin.describe_group(group)
    return sorted(m.group_instance_id for m in group_description.members)


async def test_a_wrong_password_over_sasl_ssl_is_an_authentication_failure_that_hides_it(
    secure_kafka: EmbeddedKafka, unique_group: str
) -> None:
    topic = f"{unique_group}-t"
    secure_kafka.create_topic(topic, 1)
    connect = secure_kafka.tls_client_kwargs("alice", sasl=True)
    connect["sasl_plain_password"] = "not-alices-password"
    consumer = StaticConsumer(topic, group_id=unique_group, group_instance_id="pod-0", **FAST, **connect)
    with pytest.raises(AuthenticationFailedError) as raised:
        await asyncio.wait_for(consumer.start(), 30)
    error = raised.value
    assert (error.mechanism, error.username) == ("PLAIN", "alice")
    assert "not-alices-password" not in str(error)
    assert "not-alices-password" not in repr(error.attempts)
    assert USERS["alice"] not in str(error)


async def test_a_context_that_does_not_trust_the_broker_is_a_handshake_error(
    secure_kafka: EmbeddedKafka, unique_group: str
) -> None:
    import ssl

    connect = secure_kafka.tls_client_kwargs()
    connect["ssl_context"] = ssl.create_default_context(cafile=None)  # the system CAs only
    consumer = StaticConsumer(
        "t", group_id=unique_group, group_instance_id="pod-0", request_timeout_ms=5000, **FAST, **connect
    )
    with pytest.raises(BrokerHandshakeError) as raised:
        await asyncio.wait_for(consumer.start(), 30)
    assert "certificate" in str(raised.value).lower()

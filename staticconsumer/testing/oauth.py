"""Unsecured OAUTHBEARER tokens for the embedded broker: Kafka's default validator accepts them.

Brokers validate OAUTHBEARER tokens with ``OAuthBearerUnsecuredValidatorCallbackHandler`` unless told
otherwise: an unsigned JWT (``alg: none``) whose ``sub`` is the principal and whose ``exp`` is ahead.
It trusts whatever ``sub`` says, so it is for tests only; it is enough to carry a token provider through
every client of a consumer against a real broker.
"""

from __future__ import annotations

import base64
import json
import threading
import time

from aiokafka.abc import AbstractTokenProvider


def unsecured_jwt(subject: str, lifetime_seconds: float = 3600.0) -> str:
    """An unsigned JWT for ``subject`` (``header.claims.`` with an empty signature).

    Issued at a whole second, one second back, as identity providers stamp it: the broker's unsecured
    validator allows no clock skew and checks ``iat`` in milliseconds against a clock its network thread
    read a moment before the token arrived, so a token stamped with this instant's fraction of a second
    was refused about one connection in ten."""
    now = int(time.time()) - 1

    def part(value: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none'})}.{part({'sub': subject, 'iat': now, 'exp': now + lifetime_seconds})}."


class UnsecuredTokenProvider(AbstractTokenProvider):  # type: ignore[misc]  # aiokafka is untyped
    """aiokafka's token provider for ``subject``: a fresh unsecured token per call, and a record of the
    threads that asked (a consumer asks from its membership thread and from the application's loop)."""

    def __init__(self, subject: str) -> None:
        self.subject = subject
        self.calls = 0
        self.threads: set[str] = set()
        self._lock = threading.Lock()

    async def token(self) -> str:
        with self._lock:
            self.calls += 1
            self.threads.add(threading.current_thread().name)
        return unsecured_jwt(self.subject)

    def __repr__(self) -> str:
        return f"UnsecuredTokenProvider({self.subject!r})"

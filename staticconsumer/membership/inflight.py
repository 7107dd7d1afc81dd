"""The one table of requests in flight: what each request id was for, and which coordinator it went to.

Every response and every RequestFailed is matched here by its token's request id; an answer to a request
the machine no longer tracks (superseded, or abandoned when the member failed) finds nothing and is
ignored.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator

import msgspec

from .types import RequestToken


class RequestKind(enum.Enum):
    LOOKUP = "FindCoordinator"
    JOIN = "JoinGroup"
    SYNC = "SyncGroup"
    HEARTBEAT = "Heartbeat"
    COMMIT = "OffsetCommit"
    LEAVE = "LeaveGroup"
    CONSUMER_HEARTBEAT = "ConsumerGroupHeartbeat"
    """The consumer protocol's join, heartbeat and acknowledgement (one in flight)."""
    CONSUMER_LEAVE = "ConsumerGroupHeartbeat (leave)"
    """A leave (epoch -1 / -2), or the release of an earlier holder's place (epoch -2)."""
    METADATA = "Metadata"
    """Topic ids to names."""


SINGLE = frozenset(
    {
        RequestKind.LOOKUP,
        RequestKind.JOIN,
        RequestKind.SYNC,
        RequestKind.HEARTBEAT,
        RequestKind.CONSUMER_HEARTBEAT,
        RequestKind.METADATA,
    }
)
"""Kinds of which at most one is ever in flight."""


class Request(msgspec.Struct, frozen=True):
    kind: RequestKind
    token: RequestToken
    coordinator_epoch: int


class InFlight:
    def __init__(self) -> None:
        self._by_id: dict[int, Request] = {}

    def add(self, kind: RequestKind, token: RequestToken, coordinator_epoch: int) -> None:
        if kind in SINGLE and self.has(kind):
            raise AssertionError(f"a second {kind.value} while one is in flight")
        self._by_id[token.request_id] = Request(kind, token, coordinator_epoch)

    def take(self, token: RequestToken) -> Request | None:
        """Remove and return the request this answer belongs to, or None when it is no longer tracked."""
        return self._by_id.pop(token.request_id, None)

    def has(self, kind: RequestKind) -> bool:
        return any(request.kind is kind for request in self._by_id.values())

    def of(self, kind: RequestKind) -> Iterator[Request]:
        return (request for request in list(self._by_id.values()) if request.kind is kind)

    def contains(self, request_id: int) -> bool:
        return request_id in self._by_id

    def drop(self, kinds: Iterable[RequestKind]) -> None:
        """Stop tracking these kinds: their answers will be ignored."""
        dropped = frozenset(kinds)
        self._by_id = {rid: r for rid, r in self._by_id.items() if r.kind not in dropped}

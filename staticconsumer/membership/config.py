"""Settings of one group member and the group.instance.id rules.

The instance id is checked here, before the machine exists, because Kafka treats a bad id as a
configuration error that must surface before any request is sent (JoinGroupRequest.validateGroupInstanceId).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from staticconsumer.errors import ConfigurationError, InvalidGroupInstanceIdError

from .types import TopicPartition

MAX_GROUP_INSTANCE_ID_LENGTH = 249
"""Kafka's limit, shared with topic names (Topic.MAX_NAME_LENGTH)."""

_LEGAL_INSTANCE_ID = re.compile(r"[a-zA-Z0-9._-]+")

DEFAULT_PROTOCOL_TYPE = "consumer"


def validate_group_instance_id(instance_id: str) -> None:
    """Raise InvalidGroupInstanceIdError unless ``instance_id`` is one Kafka accepts."""
    if instance_id == "":
        raise InvalidGroupInstanceIdError(instance_id, "it must not be empty")
    if instance_id in (".", ".."):
        raise InvalidGroupInstanceIdError(instance_id, "'.' and '..' are reserved")
    if len(instance_id) > MAX_GROUP_INSTANCE_ID_LENGTH:
        raise InvalidGroupInstanceIdError(
            instance_id,
            f"it is {len(instance_id)} characters long; the limit is {MAX_GROUP_INSTANCE_ID_LENGTH}",
        )
    if _LEGAL_INSTANCE_ID.fullmatch(instance_id) is None:
        bad = sorted({c for c in instance_id if _LEGAL_INSTANCE_ID.fullmatch(c) is None})
        raise InvalidGroupInstanceIdError(
            instance_id,
            f"only ASCII letters, digits, '.', '_' and '-' are allowed; found {''.join(bad)!r}",
        )


AssignmentDecoder = Callable[[bytes], Iterable[TopicPartition]]
"""Turns a SyncGroup assignment into partitions; injected so the machine never depends on the codec."""

SubscriptionDecoder = Callable[[bytes], Iterable[str]]
"""Turns a member's JoinGroup metadata into the topics it subscribes to (for the leader's metadata watch)."""


@dataclass(frozen=True, slots=True)
class MembershipConfig:
    """Everything the state machine needs to know up front; validated at construction.

    Times are in milliseconds, like Kafka's settings, so they can be copied from a Java config.
    ``max_poll_interval_ms`` is also the rebalance timeout sent on JoinGroup, as in the Java client.
    """

    group_id: str
    decode_assignment: AssignmentDecoder
    group_instance_id: str | None = None
    decode_subscription: SubscriptionDecoder | None = None
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 3_000
    max_poll_interval_ms: int = 300_000
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1_000
    request_timeout_ms: int = 30_000
    protocol_type: str = DEFAULT_PROTOCOL_TYPE

    def __post_init__(self) -> None:
        if self.group_instance_id is not None:
            validate_group_instance_id(self.group_instance_id)
        if not self.group_id:
            raise ConfigurationError("group_id must be a non-empty string for group membership")
        for name in (
            "session_timeout_ms",
            "heartbeat_interval_ms",
            "max_poll_interval_ms",
            "retry_backoff_ms",
            "retry_backoff_max_ms",
            "request_timeout_ms",
        ):
            if getattr(self, name) <= 0:
                raise ConfigurationError(f"{name} must be positive, got {getattr(self, name)}")
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ConfigurationError(
                f"heartbeat_interval_ms ({self.heartbeat_interval_ms}) must be lower than "
                f"session_timeout_ms ({self.session_timeout_ms}), or the session expires between heartbeats"
            )
        if self.retry_backoff_max_ms < self.retry_backoff_ms:
            raise ConfigurationError("retry_backoff_max_ms must not be lower than retry_backoff_ms")

    @property
    def is_static(self) -> bool:
        """True when this member uses static membership (KIP-345)."""
        return self.group_instance_id is not None

    @property
    def join_request_timeout_ms(self) -> int:
        """How long a JoinGroup may take: the broker parks it up to the rebalance timeout (Java adds 5 s)."""
        return max(self.request_timeout_ms, self.max_poll_interval_ms + 5_000)

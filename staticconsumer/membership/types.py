"""Plain value types shared by the membership events and actions (no wire codec involved), and the
settings of one group member (:class:`MembershipConfig`, below) with the group.instance.id rules.

One module, not two (``membership.config`` before): every ``import staticconsumer`` loads both, and a
module costs a finder lookup, a stat and an unmarshal (issue 26).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, NamedTuple, Protocol
from uuid import UUID

import msgspec

from staticconsumer.errors import ConfigurationError, InvalidGroupInstanceIdError

if TYPE_CHECKING:  # aiokafka ships no types: its class, as type checkers should read it

    class TopicPartition(NamedTuple):
        """A partition of a topic."""

        topic: str
        partition: int

else:  # a partition of a topic: aiokafka's own NamedTuple, so the two are one type (an equal class of
    # our own cost ~0.2 ms to build at every import; issue 26)
    from aiokafka.structs import TopicPartition


class OffsetAndMetadata(msgspec.Struct, frozen=True):
    """What gets committed for one partition: the next offset to consume, plus optional metadata."""

    offset: int
    metadata: str = ""
    leader_epoch: int | None = None


class GroupProtocol(msgspec.Struct, frozen=True):
    """One entry of the JoinGroup protocol list: an assignor name and this member's metadata for it."""

    name: str
    metadata: bytes


class JoinGroupMember(msgspec.Struct, frozen=True):
    """A member as the JoinGroup response lists it to the leader."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


class RequestToken(msgspec.Struct, frozen=True):
    """Identifies one request and the identity it was sent with.

    The driver copies it from the Send* action into the matching response event, so the machine can
    apply Kafka's "only if the generation is unchanged" rule and ignore answers to requests it no
    longer cares about.
    """

    request_id: int
    generation: int
    member_id: str


class FailureKind(enum.Enum):
    """Why a request got no response."""

    DISCONNECTED = "disconnected"
    TIMED_OUT = "timed out"
    UNSUPPORTED_VERSION = "not supported by the broker"
    """No version both sides speak can carry the request (e.g. an instance id to a pre-2.3 broker)."""
    INVALID_REQUEST = "could not be encoded"
    """What the request was built from cannot go on the wire (nothing was sent)."""


class MemberState(enum.Enum):
    """Where the member stands: Java's MemberState phases, plus the lifecycle around them."""

    NOT_STARTED = "not started"
    UNJOINED = "unjoined"
    PREPARING_REBALANCE = "preparing rebalance"
    COMPLETING_REBALANCE = "completing rebalance"
    STABLE = "stable"
    STOPPING = "stopping"
    STOPPED = "stopped"
    FENCED = "fenced"
    FAILED = "failed"
    # The consumer protocol's phases (KIP-848, as Java's MemberState names them). Java's FENCED is
    # EPOCH_FENCED here (transient: partitions lost, then a rejoin at epoch 0); its FATAL is FAILED, or
    # FENCED above for FENCED_INSTANCE_ID (terminal, as under the classic protocol); its PREPARE_LEAVING
    # is STOPPING.
    JOINING = "joining"
    RECONCILING = "reconciling"
    ACKNOWLEDGING = "acknowledging"
    EPOCH_FENCED = "fenced by member epoch (partitions lost; rejoining at epoch 0)"
    STALE = "stale (max.poll.interval.ms expired; rejoins at the next poll)"
    LEAVING = "leaving"


class ReleaseReason(enum.Enum):
    """Why partitions are being given up, so callbacks and logs can say it."""

    REBALANCE = "rebalance"
    STOP = "stop"
    MEMBERSHIP_LOST = "membership lost"
    POLL_TIMEOUT = "poll timeout"
    FENCED = "fenced"
    FATAL = "fatal error"


class RebalanceProtocol(enum.Enum):
    """How the classic protocol moves partitions (Java's ConsumerPartitionAssignor.RebalanceProtocol).

    Defined here, with the value types, rather than in ``reconcile`` (which re-exports it): a consumer
    chooses its protocol when it is built, before anything of the machine is loaded."""

    EAGER = "eager"
    COOPERATIVE = "cooperative"


class IdPartitions(msgspec.Struct, frozen=True):
    """Partitions of one topic named by its id, as the consumer protocol (KIP-848) carries them.

    A value class (``msgspec.Struct``), not a NamedTuple: ~5x cheaper to define at import (issue 26);
    read by field name only."""

    topic_id: UUID
    partitions: tuple[int, ...]


NO_GENERATION = -1
"""Kafka's generation id for "not in a generation" (OffsetCommitRequest.DEFAULT_GENERATION_ID)."""

NO_MEMBER_ID = ""
"""Kafka's member id for "the coordinator has not given us one yet"."""


class InstanceEvidence(msgspec.Struct, frozen=True):
    """What the runtime knows, from this host, about earlier holders of the instance id.

    ``previous_member_id``: the member id of a run of this instance on this host that has ended (its
    process is gone) without the consumer knowing that it left; if the broker names it as the holder, its
    place is released and taken at once. ``live_holder``: another live process on this host runs this
    instance id (its description, e.g. ``"pid 4242"``); a refusal then needs no session timeout to explain.
    """

    previous_member_id: str | None = None
    live_holder: str | None = None


# -- Settings of one group member (was membership.config) ------------------------------------------------
#
# Settings of one group member and the group.instance.id rules.
#
# The instance id is checked here, before the machine exists, because Kafka treats a bad id as a
# configuration error that must surface before any request is sent (JoinGroupRequest.validateGroupInstanceId).


if TYPE_CHECKING:  # a Protocol only type checkers read: no class to build at import (issue 26)

    class MemberSettings(Protocol):
        """What the machine reads of a consumer's settings (``staticconsumer.settings.Settings`` has all
        of it)."""

        @property
        def group_id(self) -> str: ...
        @property
        def group_instance_id(self) -> str | None: ...
        @property
        def session_timeout_ms(self) -> int: ...
        @property
        def heartbeat_interval_ms(self) -> int: ...
        @property
        def max_poll_interval_ms(self) -> int: ...
        @property
        def retry_backoff_ms(self) -> int: ...
        @property
        def retry_backoff_max_ms(self) -> int: ...
        @property
        def request_timeout_ms(self) -> int: ...


MAX_GROUP_INSTANCE_ID_LENGTH = 249
"""Kafka's limit, shared with topic names (Topic.MAX_NAME_LENGTH)."""

_LEGAL_INSTANCE_ID_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
"""Kafka's ``[a-zA-Z0-9._-]``: a set, not a regex, which every start would compile (issue 26)."""

DEFAULT_PROTOCOL_TYPE = "consumer"

# The Java client's defaults; Settings declares its fields with these, so there is one set of them.
DEFAULT_SESSION_TIMEOUT_MS = 45_000
DEFAULT_HEARTBEAT_INTERVAL_MS = 3_000
DEFAULT_MAX_POLL_INTERVAL_MS = 300_000
DEFAULT_RETRY_BACKOFF_MS = 100
DEFAULT_RETRY_BACKOFF_MAX_MS = 1_000
DEFAULT_REQUEST_TIMEOUT_MS = 30_000


def heartbeat_interval_problem(heartbeat_interval_ms: int, session_timeout_ms: int) -> str | None:
    """The one heartbeat rule: below a third of the session timeout, so two lost heartbeats are survived."""
    if heartbeat_interval_ms * 3 >= session_timeout_ms:
        return (
            f"must be below a third of session.timeout.ms ({session_timeout_ms}), i.e. at most "
            f"{(session_timeout_ms - 1) // 3}, so that a member survives two lost heartbeats"
        )
    return None


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
    bad = sorted(set(instance_id) - _LEGAL_INSTANCE_ID_CHARS)
    if bad:
        raise InvalidGroupInstanceIdError(
            instance_id,
            f"only ASCII letters, digits, '.', '_' and '-' are allowed; found {''.join(bad)!r}",
        )


AssignmentDecoder = Callable[[bytes], Iterable[TopicPartition]]
"""Turns a SyncGroup assignment into partitions; injected so the machine never depends on the codec."""

SubscriptionDecoder = Callable[[bytes], Iterable[str]]
"""Turns a member's JoinGroup metadata into the topics it subscribes to (for the leader's metadata watch)."""


class MembershipConfig(msgspec.Struct, frozen=True):
    """Everything the state machine needs to know up front; validated at construction.

    Times are in milliseconds, like Kafka's settings, so they can be copied from a Java config.
    ``max_poll_interval_ms`` is also the rebalance timeout sent on JoinGroup, as in the Java client.
    """

    group_id: str
    decode_assignment: AssignmentDecoder
    group_instance_id: str | None = None
    decode_subscription: SubscriptionDecoder | None = None
    session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS
    heartbeat_interval_ms: int = DEFAULT_HEARTBEAT_INTERVAL_MS
    max_poll_interval_ms: int = DEFAULT_MAX_POLL_INTERVAL_MS
    retry_backoff_ms: int = DEFAULT_RETRY_BACKOFF_MS
    retry_backoff_max_ms: int = DEFAULT_RETRY_BACKOFF_MAX_MS
    request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS
    protocol_type: str = DEFAULT_PROTOCOL_TYPE
    server_assignor: str | None = None
    """group.remote.assignor: the broker-side assignor a consumer-protocol member asks for (None: the
    brokers' default)."""
    rack_id: str | None = None
    """client.rack, sent by consumer-protocol members so rack-aware server assignors can use it."""

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
        problem = heartbeat_interval_problem(self.heartbeat_interval_ms, self.session_timeout_ms)
        if problem is not None:
            raise ConfigurationError(f"heartbeat_interval_ms ({self.heartbeat_interval_ms}) {problem}")
        if self.retry_backoff_max_ms < self.retry_backoff_ms:
            raise ConfigurationError("retry_backoff_max_ms must not be lower than retry_backoff_ms")

    @classmethod
    def from_settings(
        cls,
        settings: MemberSettings,
        *,
        decode_assignment: AssignmentDecoder,
        decode_subscription: SubscriptionDecoder | None = None,
    ) -> MembershipConfig:
        """The machine's view of a consumer's settings (the codecs are injected by the runtime)."""
        return cls(
            group_id=settings.group_id,
            group_instance_id=settings.group_instance_id,
            decode_assignment=decode_assignment,
            decode_subscription=decode_subscription,
            session_timeout_ms=settings.session_timeout_ms,
            heartbeat_interval_ms=settings.heartbeat_interval_ms,
            max_poll_interval_ms=settings.max_poll_interval_ms,
            retry_backoff_ms=settings.retry_backoff_ms,
            retry_backoff_max_ms=settings.retry_backoff_max_ms,
            request_timeout_ms=settings.request_timeout_ms,
            server_assignor=getattr(settings, "group_remote_assignor", None),
            rack_id=getattr(settings, "client_rack", None),
        )

    @property
    def is_static(self) -> bool:
        """True when this member uses static membership (KIP-345)."""
        return self.group_instance_id is not None

    @property
    def join_request_timeout_ms(self) -> int:
        """How long a JoinGroup may take: the broker parks it up to the rebalance timeout (Java adds 5 s)."""
        return max(self.request_timeout_ms, self.max_poll_interval_ms + 5_000)

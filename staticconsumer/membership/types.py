"""Plain value types shared by the membership events and actions (no wire codec involved)."""

from __future__ import annotations

import enum
from typing import NamedTuple
from uuid import UUID

import msgspec


class TopicPartition(NamedTuple):
    """A partition of a topic; a NamedTuple so it compares equal to aiokafka's TopicPartition."""

    topic: str
    partition: int


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


class IdPartitions(NamedTuple):
    """Partitions of one topic named by its id, as the consumer protocol (KIP-848) carries them."""

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

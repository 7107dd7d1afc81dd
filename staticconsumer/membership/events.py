"""Inputs to the membership state machine.

Every event carries ``now``: monotonic seconds from the driver's clock. The machine never reads a
clock itself, which is what makes session, heartbeat, max-poll and backoff testable without sleeping.
Response events carry the RequestToken of the Send* action they answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from uuid import UUID

import msgspec

from staticconsumer.errors import ErrorCode

from .types import (
    FailureKind,
    GroupProtocol,
    IdPartitions,
    JoinGroupMember,
    OffsetAndMetadata,
    RequestToken,
    TopicPartition,
)


class Event(msgspec.Struct, frozen=True, kw_only=True):
    """Base of every input."""

    now: float


class Start(Event, frozen=True, kw_only=True):
    """Begin membership: find the coordinator and join with ``protocols`` (preference order).

    Under the consumer protocol (KIP-848) the broker assigns: the member sends its subscription instead,
    ``topics`` by name or a ``pattern`` the broker resolves (SubscribedTopicRegex).
    """

    protocols: tuple[GroupProtocol, ...]
    topics: frozenset[str] = frozenset()
    pattern: str | None = None


class Tick(Event, frozen=True, kw_only=True):
    """Time passed; the driver sends it at (or after) ``machine.next_deadline()``."""


class FindCoordinatorResponse(Event, frozen=True, kw_only=True):
    """Answer to FindCoordinator; on NONE the driver has connected (or is connecting) to ``node_id``."""

    token: RequestToken
    error_code: int = ErrorCode.NONE
    node_id: int | None = None
    host: str | None = None
    port: int | None = None
    """Where the coordinator is, as answered (ignored by the machine; observers name the server)."""


class CoordinatorDisconnected(Event, frozen=True, kw_only=True):
    """The coordinator connection dropped, or a request outside the machine (OffsetFetch) was told the
    coordinator moved: rediscover it."""


class JoinGroupResponse(Event, frozen=True, kw_only=True):
    """Answer to a JoinGroup; fields as in the wire message, ``members`` only for the leader."""

    token: RequestToken
    error_code: int = ErrorCode.NONE
    generation: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    member_id: str = ""
    skip_assignment: bool = False
    members: tuple[JoinGroupMember, ...] = ()
    refusal_detail: str = ""
    """What the runtime learnt about a refusal beyond its code (INCONSISTENT_GROUP_PROTOCOL: the
    protocols the group uses, from DescribeGroups), for the error's message."""


class SyncGroupResponse(Event, frozen=True, kw_only=True):
    """Answer to a SyncGroup; ``assignment`` is this member's encoded assignment."""

    token: RequestToken
    error_code: int = ErrorCode.NONE
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


class HeartbeatResponse(Event, frozen=True, kw_only=True):
    token: RequestToken
    error_code: int = ErrorCode.NONE


class OffsetCommitResponse(Event, frozen=True, kw_only=True):
    """Answer to an OffsetCommit: OffsetCommit has only per-partition error codes."""

    token: RequestToken
    partition_errors: Mapping[TopicPartition, int] = msgspec.field(default_factory=dict)


class LeaveGroupResponse(Event, frozen=True, kw_only=True):
    """Answer to a LeaveGroup: top-level code, or the first per-member code when that is NONE."""

    token: RequestToken
    error_code: int = ErrorCode.NONE


class RequestFailed(Event, frozen=True, kw_only=True):
    """A request sent for a Send* action got no response (connection lost or request timeout)."""

    token: RequestToken
    kind: FailureKind = FailureKind.DISCONNECTED
    detail: str = ""
    """What went wrong, in words (for UNSUPPORTED_VERSION and INVALID_REQUEST it becomes the error)."""


class Unrecoverable(Event, frozen=True, kw_only=True):
    """Something outside the machine's requests failed for good (for example the committed offsets of
    assigned partitions cannot be read): the member ends with ``error``."""

    error: Exception


class AssignmentComputed(Event, frozen=True, kw_only=True):
    """The leader's assignor finished for ``generation``: encoded assignment per member id."""

    generation: int
    assignments: Mapping[str, bytes]


class AssignmentFailed(Event, frozen=True, kw_only=True):
    """The leader's assignor raised for ``generation``."""

    generation: int
    error: Exception


class CallbackFinished(Event, frozen=True, kw_only=True):
    """A PartitionsRevoked/Assigned/Lost callback returned.

    After a revoke, ``offsets_to_commit`` are committed before the member rejoins or stops (for example
    the consumed positions when auto-commit is on); they are ignored for the other callbacks.
    """

    callback_id: int
    offsets_to_commit: Mapping[TopicPartition, OffsetAndMetadata] = msgspec.field(default_factory=dict)


class PollCalled(Event, frozen=True, kw_only=True):
    """The application called getone/getmany (resets the max.poll.interval timer)."""


class CommitRequested(Event, frozen=True, kw_only=True):
    """The application asked to commit; answered by exactly one CommitCompleted with ``commit_id``."""

    commit_id: int
    offsets: Mapping[TopicPartition, OffsetAndMetadata]
    caller: object | None = None
    """Opaque to the machine: what observers need to place the commit (the caller's trace context)."""


class Stop(Event, frozen=True, kw_only=True):
    """Shut down. Static members send LeaveGroup only when ``leave_group`` is True."""

    leave_group: bool = False


class RequestRejoin(Event, frozen=True, kw_only=True):
    """Rejoin the group (for example the leader saw a partition count change); ``reason`` goes on the wire."""

    reason: str


class UpdateProtocols(Event, frozen=True, kw_only=True):
    """This member's subscription changed: join with the new protocol list (and so force a rebalance).

    The consumer protocol reads ``topics`` / ``pattern`` (as in Start) and sends them in its next heartbeat.
    """

    protocols: tuple[GroupProtocol, ...]
    reason: str
    topics: frozenset[str] = frozenset()
    pattern: str | None = None


# -- the consumer protocol (KIP-848) ----------------------------------------------------------------


class ConsumerGroupHeartbeatResponse(Event, frozen=True, kw_only=True):
    """Answer to a ConsumerGroupHeartbeat. ``assignment`` is the member's whole assignment by topic id,
    or None when it did not change since the last heartbeat; ``heartbeat_interval_ms`` is 0 on errors."""

    token: RequestToken
    error_code: int = ErrorCode.NONE
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: tuple[IdPartitions, ...] | None = None


class TopicIdsResolved(Event, frozen=True, kw_only=True):
    """Answer to ResolveTopicIds: the name of each topic id the cluster knows (unknown ids are absent)."""

    token: RequestToken
    names: Mapping[UUID, str] = msgspec.field(default_factory=dict)

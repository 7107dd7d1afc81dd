"""Outputs of the membership state machine: requests to send, callbacks to run, verdicts to report.

The ownership actions (StopFetching, PartitionsRevoked, PartitionsLost, PartitionsAssigned) and the
verdicts (CommitCompleted, Fatal, Stopped) mean the same under every protocol; the request actions are the
classic protocol's, but for SendConsumerGroupHeartbeat and ResolveTopicIds (the consumer protocol) and
FindCoordinator and SendOffsetCommit (both).

Contract for the driver: every Send* action and FindCoordinator must be answered by exactly one
response event (or RequestFailed) carrying the action's token; every callback action by exactly one
CallbackFinished with its callback_id; RunAssignor by AssignmentComputed or AssignmentFailed.
"""

from __future__ import annotations

from collections.abc import Mapping
from uuid import UUID

import msgspec

from .types import (
    GroupProtocol,
    IdPartitions,
    JoinGroupMember,
    OffsetAndMetadata,
    ReleaseReason,
    RequestToken,
    TopicPartition,
)


class Action(msgspec.Struct, frozen=True, kw_only=True):
    """Base of every output."""


class FindCoordinator(Action, frozen=True, kw_only=True):
    token: RequestToken


class DisconnectCoordinator(Action, frozen=True, kw_only=True):
    """Forget the coordinator and drop its connection; in-flight requests on it should fail."""

    reason: str


class SendJoinGroup(Action, frozen=True, kw_only=True):
    token: RequestToken
    member_id: str
    group_instance_id: str | None
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[GroupProtocol, ...]
    reason: str
    request_timeout_ms: int
    """The broker parks a JoinGroup up to the rebalance timeout, so the usual request timeout is too short."""


class SyncAssignment(msgspec.Struct, frozen=True, kw_only=True):
    member_id: str
    assignment: bytes


class SendSyncGroup(Action, frozen=True, kw_only=True):
    """Followers and a leader that skips assignment send no assignments."""

    token: RequestToken
    generation: int
    member_id: str
    group_instance_id: str | None
    protocol_type: str
    protocol_name: str | None
    assignments: tuple[SyncAssignment, ...]


class SendHeartbeat(Action, frozen=True, kw_only=True):
    token: RequestToken
    generation: int
    member_id: str
    group_instance_id: str | None


class SendOffsetCommit(Action, frozen=True, kw_only=True):
    """``commit_id`` is the application's id, or None for a commit the machine made while releasing."""

    token: RequestToken
    commit_id: int | None
    generation: int
    member_id: str
    group_instance_id: str | None
    offsets: Mapping[TopicPartition, OffsetAndMetadata]


class LeaveGroupIdentity(msgspec.Struct, frozen=True, kw_only=True):
    member_id: str
    group_instance_id: str | None
    reason: str


class SendLeaveGroup(Action, frozen=True, kw_only=True):
    """Best effort: never resent, failures only logged. A static member is named by its instance id (v3+)."""

    token: RequestToken
    members: tuple[LeaveGroupIdentity, ...]


class LeaderElected(Action, frozen=True, kw_only=True):
    """We lead ``generation``: watch metadata for ``group_topics`` (every member's topics).

    Emitted whether or not the leader computes, right before RunAssignor or the SkipAssignment
    SyncGroup, because KIP-814 leaders must still notice partition changes of other members' topics.
    """

    generation: int
    member_id: str
    protocol_name: str | None
    members: tuple[JoinGroupMember, ...]
    group_topics: frozenset[str]
    skip_assignment: bool


class RunAssignor(Action, frozen=True, kw_only=True):
    """Compute the assignment for ``members`` and answer with AssignmentComputed(generation=...)."""

    generation: int
    protocol_name: str | None
    members: tuple[JoinGroupMember, ...]
    group_topics: frozenset[str]


class LeadershipGuessed(Action, frozen=True, kw_only=True):
    """Below JoinGroup v9 a returning static leader is told the old leader id (KAFKA-13435).

    The leader id is a member id the broker minted for our own instance id ("<instance id>-<uuid>"),
    so we almost certainly lead, yet the broker sent us no member list. The driver may take up leader
    duties (for example DescribeGroups to learn the members, then watch their topics).
    """

    generation: int
    member_id: str
    leader_id: str


class StopFetching(Action, frozen=True, kw_only=True):
    """Stop fetching ``partitions`` now (None: every partition): they are being revoked or are lost, or the
    member is finished. Their consumed positions are kept until the following revoke callback finished."""

    reason: ReleaseReason
    partitions: frozenset[TopicPartition] | None = None


class PartitionsRevoked(Action, frozen=True, kw_only=True):
    """Run the revoke callback; the member still owns the generation, so commits inside it work."""

    callback_id: int
    partitions: frozenset[TopicPartition]
    reason: ReleaseReason


class PartitionsLost(Action, frozen=True, kw_only=True):
    """Run the lost callback: another member may already own these partitions, so do not commit them."""

    callback_id: int
    partitions: frozenset[TopicPartition]
    reason: ReleaseReason


class PartitionsAssigned(Action, frozen=True, kw_only=True):
    """Fetch ``partitions`` from their committed offsets, then run the assigned callback with them.

    ``partitions`` is what is new (eager: the whole assignment); ``owned`` is the whole assignment after
    this step. Partitions already owned are never touched.
    """

    callback_id: int
    partitions: frozenset[TopicPartition]
    generation: int
    owned: frozenset[TopicPartition]


class CommitCompleted(Action, frozen=True, kw_only=True):
    """Outcome of a commit: ``error`` None means every offset in ``offsets`` is committed."""

    commit_id: int | None
    offsets: Mapping[TopicPartition, OffsetAndMetadata]
    error: Exception | None


class Fatal(Action, frozen=True, kw_only=True):
    """The member is finished: raise ``error`` from the pending call and every later poll and commit."""

    error: Exception


class Stopped(Action, frozen=True, kw_only=True):
    """Stop is complete; ``error`` is the fatal error that ended the member earlier, if any."""

    error: Exception | None


# -- the consumer protocol (KIP-848) ----------------------------------------------------------------


class SendConsumerGroupHeartbeat(Action, frozen=True, kw_only=True):
    """One ConsumerGroupHeartbeat (v1). A None field (or -1 ``rebalance_timeout_ms``) means "unchanged
    since my last heartbeat"; a join (epoch 0) and the first heartbeat after an error carry everything.

    ``member_epoch`` 0 joins, -1 leaves for good, -2 leaves for a while (a static member keeps its
    assignment for the session timeout). ``member_id`` is the client's own (KIP-1082), except when a
    member releases the place of an earlier holder of its instance id (``purpose`` "release").
    """

    token: RequestToken
    member_id: str
    member_epoch: int
    instance_id: str | None
    rack_id: str | None
    rebalance_timeout_ms: int
    subscribed_topic_names: tuple[str, ...] | None
    subscribed_topic_regex: str | None
    server_assignor: str | None
    owned: tuple[IdPartitions, ...] | None
    purpose: str
    """Why it is sent: "join", "heartbeat", "acknowledge", "leave" or "release" (logs and telemetry)."""
    request_timeout_ms: int


class ResolveTopicIds(Action, frozen=True, kw_only=True):
    """Look up the names of these topic ids (Metadata v12+ by id, from any broker): assignments name
    topics by id. Answered by TopicIdsResolved (unknown ids absent) or RequestFailed."""

    token: RequestToken
    topic_ids: frozenset[UUID]

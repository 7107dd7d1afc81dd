"""Each request action of the machine, as a wire request and back as an event: one table.

A row says which message carries the action, how to build it for the version the broker speaks, how
its answer becomes the machine's event, how long it may take, and where it goes (the coordinator's
connection, or any broker for FindCoordinator). The loop sends every row the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from staticconsumer.errors import ErrorCode
from staticconsumer.membership import (
    IdPartitions,
    JoinGroupMember,
    MembershipConfig,
    TopicPartition,
    actions,
    events,
)
from staticconsumer.protocol import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberIdentity,
    Message,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    SyncGroupResponse,
    coordinator_answer,
    find_group_coordinator,
)

if TYPE_CHECKING:
    from staticconsumer.protocol.consumer_group import ConsumerGroupHeartbeatResponse
    from staticconsumer.protocol.metadata import MetadataResponse

Versions = Mapping[int, tuple[int, int]]


class RequestSpec(msgspec.Struct, frozen=True):
    """How one action type travels: ``build(action, version, config)``, ``answer(action, response, now)``."""

    message: type[Message]
    build: Callable[[Any, int, MembershipConfig], Message]
    answer: Callable[[Any, Any, float], events.Event]
    timeout_ms: Callable[[Any, MembershipConfig], int]
    to_coordinator: bool = True
    check: Callable[[Versions, int], object] | None = None
    """Refuse a broker before anything is built (raises a typed error the loop reports as unsupported)."""
    explain: Callable[[Any, Versions, int], events.Event] | None = None
    """Reword an answer with what only the broker's versions can tell (which Kafka refused, and why)."""


def _request_timeout(action: Any, config: MembershipConfig) -> int:
    return config.request_timeout_ms


def _join_timeout(action: Any, config: MembershipConfig) -> int:
    """The broker parks JoinGroup and SyncGroup up to the rebalance timeout (Java adds 5 s)."""
    return config.join_request_timeout_ms


def _find_coordinator(a: actions.FindCoordinator, version: int, config: MembershipConfig) -> Message:
    return find_group_coordinator(config.group_id, version)


def _found(a: actions.FindCoordinator, r: FindCoordinatorResponse, now: float) -> events.Event:
    code, node = coordinator_answer(r)
    if code != 0:
        return events.FindCoordinatorResponse(now=now, token=a.token, error_code=code)
    host, port = (r.coordinators[0].host, r.coordinators[0].port) if r.coordinators else (r.host, r.port)
    return events.FindCoordinatorResponse(
        now=now, token=a.token, error_code=code, node_id=node, host=host or None, port=port
    )


def _join(a: actions.SendJoinGroup, version: int, config: MembershipConfig) -> Message:
    return JoinGroupRequest(
        group_id=config.group_id,
        session_timeout_ms=a.session_timeout_ms,
        rebalance_timeout_ms=a.rebalance_timeout_ms,
        member_id=a.member_id,
        group_instance_id=a.group_instance_id,
        protocol_type=a.protocol_type,
        protocols=[JoinGroupRequestProtocol(name=p.name, metadata=p.metadata) for p in a.protocols],
        reason=a.reason if version >= 8 else None,
    )


def _joined(a: actions.SendJoinGroup, r: JoinGroupResponse, now: float) -> events.Event:
    return events.JoinGroupResponse(
        now=now,
        token=a.token,
        error_code=r.error_code,
        generation=r.generation_id,
        protocol_type=r.protocol_type,
        protocol_name=r.protocol_name,
        leader_id=r.leader,
        member_id=r.member_id,
        skip_assignment=r.skip_assignment,
        members=tuple(JoinGroupMember(m.member_id, m.group_instance_id, m.metadata) for m in r.members),
    )


def _sync(a: actions.SendSyncGroup, version: int, config: MembershipConfig) -> Message:
    return SyncGroupRequest(
        group_id=config.group_id,
        generation_id=a.generation,
        member_id=a.member_id,
        group_instance_id=a.group_instance_id,
        protocol_type=a.protocol_type if version >= 5 else None,
        protocol_name=a.protocol_name if version >= 5 else None,
        assignments=[
            SyncGroupRequestAssignment(member_id=s.member_id, assignment=s.assignment) for s in a.assignments
        ],
    )


def _synced(a: actions.SendSyncGroup, r: SyncGroupResponse, now: float) -> events.Event:
    return events.SyncGroupResponse(
        now=now,
        token=a.token,
        error_code=r.error_code,
        protocol_type=r.protocol_type,
        protocol_name=r.protocol_name,
        assignment=r.assignment,
    )


def _heartbeat(a: actions.SendHeartbeat, version: int, config: MembershipConfig) -> Message:
    return HeartbeatRequest(
        group_id=config.group_id,
        generation_id=a.generation,
        member_id=a.member_id,
        group_instance_id=a.group_instance_id,
    )


def _heartbeat_answered(a: actions.SendHeartbeat, r: HeartbeatResponse, now: float) -> events.Event:
    return events.HeartbeatResponse(now=now, token=a.token, error_code=r.error_code)


def _commit(a: actions.SendOffsetCommit, version: int, config: MembershipConfig) -> Message:
    by_topic: dict[str, list[OffsetCommitRequestPartition]] = {}
    for tp, committed in sorted(a.offsets.items()):
        by_topic.setdefault(tp.topic, []).append(
            OffsetCommitRequestPartition(
                partition_index=tp.partition,
                committed_offset=committed.offset,
                committed_leader_epoch=-1 if committed.leader_epoch is None else committed.leader_epoch,
                committed_metadata=committed.metadata,
            )
        )
    return OffsetCommitRequest(
        group_id=config.group_id,
        generation_id_or_member_epoch=a.generation,
        member_id=a.member_id,
        group_instance_id=a.group_instance_id,
        topics=[OffsetCommitRequestTopic(name=t, partitions=ps) for t, ps in by_topic.items()],
    )


def _committed(a: actions.SendOffsetCommit, r: OffsetCommitResponse, now: float) -> events.Event:
    errors = {TopicPartition(t.name, p.partition_index): p.error_code for t in r.topics for p in t.partitions}
    return events.OffsetCommitResponse(now=now, token=a.token, partition_errors=errors)


def _leave(a: actions.SendLeaveGroup, version: int, config: MembershipConfig) -> Message:
    return LeaveGroupRequest(
        group_id=config.group_id,
        members=[
            MemberIdentity(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id if version >= 3 else None,
                reason=m.reason if version >= 5 else None,
            )
            for m in a.members
        ],
    )


def _left(a: actions.SendLeaveGroup, r: LeaveGroupResponse, now: float) -> events.Event:
    code = r.error_code or next((m.error_code for m in r.members if m.error_code), 0)
    return events.LeaveGroupResponse(now=now, token=a.token, error_code=code)


def _consumer_heartbeat(
    a: actions.SendConsumerGroupHeartbeat, version: int, config: MembershipConfig
) -> Message:
    from staticconsumer.protocol.consumer_group import ConsumerGroupHeartbeatRequest, TopicIdPartitions

    return ConsumerGroupHeartbeatRequest(
        group_id=config.group_id,
        member_id=a.member_id,
        member_epoch=a.member_epoch,
        instance_id=a.instance_id,
        rack_id=a.rack_id,
        rebalance_timeout_ms=a.rebalance_timeout_ms,
        subscribed_topic_names=None if a.subscribed_topic_names is None else list(a.subscribed_topic_names),
        subscribed_topic_regex=a.subscribed_topic_regex,
        server_assignor=a.server_assignor,
        topic_partitions=None
        if a.owned is None
        else [TopicIdPartitions(topic_id=t.topic_id, partitions=list(t.partitions)) for t in a.owned],
    )


def _consumer_heartbeat_answered(
    a: actions.SendConsumerGroupHeartbeat, r: ConsumerGroupHeartbeatResponse, now: float
) -> events.Event:
    assignment = (
        None
        if r.assignment is None
        else tuple(IdPartitions(t.topic_id, tuple(t.partitions)) for t in r.assignment.topic_partitions)
    )
    return events.ConsumerGroupHeartbeatResponse(
        now=now,
        token=a.token,
        error_code=r.error_code,
        error_message=r.error_message,
        member_id=r.member_id,
        member_epoch=r.member_epoch,
        heartbeat_interval_ms=r.heartbeat_interval_ms,
        assignment=assignment,
    )


def _check_consumer_protocol(versions: Versions, node: int) -> object:
    """The broker speaks KIP-848 (``broker_support``, loaded by a consumer-protocol member only)."""
    from staticconsumer.broker_support import check_consumer_protocol

    return check_consumer_protocol(versions, node)


def _consumer_protocol_refused(
    event: events.ConsumerGroupHeartbeatResponse, versions: Versions, node: int
) -> events.Event:
    """UNSUPPORTED_VERSION from a broker that advertises the API: the protocol is switched off there."""
    if event.error_code != ErrorCode.UNSUPPORTED_VERSION:
        return event
    from staticconsumer.broker_support import consumer_protocol_refused

    refusal = consumer_protocol_refused(versions, node, event.error_message)
    return msgspec.structs.replace(event, error_message=str(refusal))


def _resolve_topic_ids(a: actions.ResolveTopicIds, version: int, config: MembershipConfig) -> Message:
    """By id (v12+); an older broker is asked for every topic, whose answers carry their ids (v10+)."""
    from staticconsumer.protocol.metadata import MetadataRequest, MetadataRequestTopic

    if version < 12:
        return MetadataRequest(topics=None, allow_auto_topic_creation=False)
    return MetadataRequest(
        topics=[MetadataRequestTopic(topic_id=t, name=None) for t in sorted(a.topic_ids, key=str)],
        allow_auto_topic_creation=False,
    )


def _topic_ids_resolved(a: actions.ResolveTopicIds, r: MetadataResponse, now: float) -> events.Event:
    names = {
        t.topic_id: t.name
        for t in r.topics
        if t.error_code == ErrorCode.NONE and t.name and t.topic_id in a.topic_ids
    }
    return events.TopicIdsResolved(now=now, token=a.token, names=names)


_CLASSIC_ROWS: dict[type[actions.Action], RequestSpec] = {
    actions.FindCoordinator: RequestSpec(
        FindCoordinatorRequest, _find_coordinator, _found, _request_timeout, to_coordinator=False
    ),
    actions.SendJoinGroup: RequestSpec(JoinGroupRequest, _join, _joined, lambda a, c: a.request_timeout_ms),
    actions.SendSyncGroup: RequestSpec(SyncGroupRequest, _sync, _synced, _join_timeout),
    actions.SendHeartbeat: RequestSpec(HeartbeatRequest, _heartbeat, _heartbeat_answered, _request_timeout),
    actions.SendOffsetCommit: RequestSpec(OffsetCommitRequest, _commit, _committed, _request_timeout),
    actions.SendLeaveGroup: RequestSpec(LeaveGroupRequest, _leave, _left, _request_timeout),
}


def _consumer_protocol_rows() -> dict[type[actions.Action], RequestSpec]:
    """KIP-848's rows, whose messages (``protocol.consumer_group``, ``protocol.metadata``) a classic
    member never loads: built on the first lookup of one of them."""
    from staticconsumer.protocol.consumer_group import ConsumerGroupHeartbeatRequest
    from staticconsumer.protocol.metadata import MetadataRequest

    return {
        actions.SendConsumerGroupHeartbeat: RequestSpec(
            ConsumerGroupHeartbeatRequest,
            _consumer_heartbeat,
            _consumer_heartbeat_answered,
            lambda a, c: a.request_timeout_ms,
            check=_check_consumer_protocol,
            explain=_consumer_protocol_refused,
        ),
        actions.ResolveTopicIds: RequestSpec(
            MetadataRequest, _resolve_topic_ids, _topic_ids_resolved, _request_timeout, to_coordinator=False
        ),
    }


_CONSUMER_PROTOCOL_ACTIONS = frozenset({actions.SendConsumerGroupHeartbeat, actions.ResolveTopicIds})


class _RequestTable(Mapping[type[actions.Action], RequestSpec]):
    """The classic rows at once, KIP-848's on first use (issue 26: import cost of a classic restart)."""

    def __init__(self) -> None:
        self._rows = dict(_CLASSIC_ROWS)

    def _complete(self) -> dict[type[actions.Action], RequestSpec]:
        if len(self._rows) == len(_CLASSIC_ROWS):
            self._rows.update(_consumer_protocol_rows())
        return self._rows

    def __getitem__(self, action: type[actions.Action]) -> RequestSpec:
        if action in _CONSUMER_PROTOCOL_ACTIONS:
            return self._complete()[action]
        return self._rows[action]

    def __iter__(self) -> Iterator[type[actions.Action]]:
        return iter(self._complete())

    def __len__(self) -> int:
        return len(self._complete())


REQUESTS: Mapping[type[actions.Action], RequestSpec] = _RequestTable()
"""Every request action the machine emits (a new one must be added here, or the loop refuses it)."""

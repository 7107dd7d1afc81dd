"""Hypothesis strategies: for each message and version, values that this version can carry.

Fields a version cannot carry stay at their defaults, so ``decode(encode(m, v), v) == m`` must hold
exactly. Imported by the protocol tests (pytest puts this folder on sys.path).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from hypothesis import strategies as st

from staticconsumer import protocol as p
from staticconsumer.protocol import APIS, Message
from staticconsumer.protocol.offsets import TOPIC_IDS_FROM_VERSION

I8 = st.integers(-(2**7), 2**7 - 1)
I16 = st.integers(-(2**15), 2**15 - 1)
I32 = st.integers(-(2**31), 2**31 - 1)
I64 = st.integers(-(2**63), 2**63 - 1)
TEXT = st.text(max_size=12) | st.sampled_from(["", "consumer", "range", "ü日本語🎉", "x" * 249])
NTEXT = st.none() | TEXT
BLOB = st.binary(max_size=24)
NBLOB = st.none() | BLOB
REASON = st.none() | st.text(max_size=255)
UUIDS = st.uuids(allow_nil=True) | st.sampled_from([p.ZERO_UUID, uuid.UUID(int=2**128 - 1)])
TOPIC_IDS = st.uuids().filter(lambda u: u != p.ZERO_UUID)
"""v10 offset requests refuse a topic without its id (Java's builders do), so they draw real ids."""
TAGGED = st.lists(st.tuples(st.integers(0, 2**32 - 1), st.binary(max_size=8)), max_size=3).map(tuple)
NO_TAGS: st.SearchStrategy[tuple[tuple[int, bytes], ...]] = st.just(())


def _lists(elements: st.SearchStrategy, max_size: int = 4) -> st.SearchStrategy:
    return st.lists(elements, max_size=max_size)


def _if(cond: bool, strategy: st.SearchStrategy, default: object) -> st.SearchStrategy:
    return strategy if cond else st.just(default)


def join_group_request(v: int) -> st.SearchStrategy[p.JoinGroupRequest]:
    tags = TAGGED if v >= 6 else NO_TAGS
    return st.builds(
        p.JoinGroupRequest,
        group_id=TEXT,
        session_timeout_ms=I32,
        rebalance_timeout_ms=_if(v >= 1, I32, -1),
        member_id=TEXT,
        group_instance_id=_if(v >= 5, NTEXT, None),
        protocol_type=TEXT,
        protocols=_lists(
            st.builds(p.JoinGroupRequestProtocol, name=TEXT, metadata=BLOB, unknown_tagged_fields=tags)
        ),
        reason=_if(v >= 8, REASON, None),
        unknown_tagged_fields=tags,
    )


def join_group_response(v: int) -> st.SearchStrategy[p.JoinGroupResponse]:
    tags = TAGGED if v >= 6 else NO_TAGS
    member = st.builds(
        p.JoinGroupResponseMember,
        member_id=TEXT,
        group_instance_id=_if(v >= 5, NTEXT, None),
        metadata=BLOB,
        unknown_tagged_fields=tags,
    )
    return st.builds(
        p.JoinGroupResponse,
        throttle_time_ms=_if(v >= 2, I32, 0),
        error_code=I16,
        generation_id=I32,
        protocol_type=_if(v >= 7, NTEXT, None),
        protocol_name=NTEXT if v >= 7 else TEXT,
        leader=TEXT,
        skip_assignment=_if(v >= 9, st.booleans(), False),
        member_id=TEXT,
        members=_lists(member),
        unknown_tagged_fields=tags,
    )


def sync_group_request(v: int) -> st.SearchStrategy[p.SyncGroupRequest]:
    tags = TAGGED if v >= 4 else NO_TAGS
    return st.builds(
        p.SyncGroupRequest,
        group_id=TEXT,
        generation_id=I32,
        member_id=TEXT,
        group_instance_id=_if(v >= 3, NTEXT, None),
        protocol_type=_if(v >= 5, NTEXT, None),
        protocol_name=_if(v >= 5, NTEXT, None),
        assignments=_lists(
            st.builds(
                p.SyncGroupRequestAssignment, member_id=TEXT, assignment=BLOB, unknown_tagged_fields=tags
            )
        ),
        unknown_tagged_fields=tags,
    )


def sync_group_response(v: int) -> st.SearchStrategy[p.SyncGroupResponse]:
    return st.builds(
        p.SyncGroupResponse,
        throttle_time_ms=_if(v >= 1, I32, 0),
        error_code=I16,
        protocol_type=_if(v >= 5, NTEXT, None),
        protocol_name=_if(v >= 5, NTEXT, None),
        assignment=BLOB,
        unknown_tagged_fields=TAGGED if v >= 4 else NO_TAGS,
    )


def heartbeat_request(v: int) -> st.SearchStrategy[p.HeartbeatRequest]:
    return st.builds(
        p.HeartbeatRequest,
        group_id=TEXT,
        generation_id=I32,
        member_id=TEXT,
        group_instance_id=_if(v >= 3, NTEXT, None),
        unknown_tagged_fields=TAGGED if v >= 4 else NO_TAGS,
    )


def heartbeat_response(v: int) -> st.SearchStrategy[p.HeartbeatResponse]:
    return st.builds(
        p.HeartbeatResponse,
        throttle_time_ms=_if(v >= 1, I32, 0),
        error_code=I16,
        unknown_tagged_fields=TAGGED if v >= 4 else NO_TAGS,
    )


def leave_group_request(v: int) -> st.SearchStrategy[p.LeaveGroupRequest]:
    tags = TAGGED if v >= 4 else NO_TAGS
    if v < 3:
        members = st.builds(p.MemberIdentity, member_id=TEXT).map(lambda m: [m])
    else:
        members = _lists(
            st.builds(
                p.MemberIdentity,
                member_id=TEXT,
                group_instance_id=NTEXT,
                reason=_if(v >= 5, REASON, None),
                unknown_tagged_fields=tags,
            )
        )
    return st.builds(p.LeaveGroupRequest, group_id=TEXT, members=members, unknown_tagged_fields=tags)


def leave_group_response(v: int) -> st.SearchStrategy[p.LeaveGroupResponse]:
    tags = TAGGED if v >= 4 else NO_TAGS
    member = st.builds(
        p.LeaveGroupMemberResponse,
        member_id=TEXT,
        group_instance_id=NTEXT,
        error_code=I16,
        unknown_tagged_fields=tags,
    )
    return st.builds(
        p.LeaveGroupResponse,
        throttle_time_ms=_if(v >= 1, I32, 0),
        error_code=I16,
        members=_if(v >= 3, _lists(member), []),
        unknown_tagged_fields=tags,
    )


def offset_commit_request(v: int) -> st.SearchStrategy[p.OffsetCommitRequest]:
    tags = TAGGED if v >= 8 else NO_TAGS
    partition = st.builds(
        p.OffsetCommitRequestPartition,
        partition_index=I32,
        committed_offset=I64,
        committed_leader_epoch=_if(v >= 6, I32, -1),
        committed_metadata=NTEXT,
        unknown_tagged_fields=tags,
    )
    by_id = v >= TOPIC_IDS_FROM_VERSION
    topic = st.builds(
        p.OffsetCommitRequestTopic,
        name=_if(not by_id, TEXT, ""),
        partitions=_lists(partition),
        topic_id=_if(by_id, TOPIC_IDS, p.ZERO_UUID),
        unknown_tagged_fields=tags,
    )
    return st.builds(
        p.OffsetCommitRequest,
        group_id=TEXT,
        generation_id_or_member_epoch=I32,
        member_id=TEXT,
        group_instance_id=_if(v >= 7, NTEXT, None),
        retention_time_ms=_if(v <= 4, I64, -1),
        topics=_lists(topic),
        unknown_tagged_fields=tags,
    )


def offset_commit_response(v: int) -> st.SearchStrategy[p.OffsetCommitResponse]:
    tags = TAGGED if v >= 8 else NO_TAGS
    partition = st.builds(
        p.OffsetCommitResponsePartition, partition_index=I32, error_code=I16, unknown_tagged_fields=tags
    )
    by_id = v >= TOPIC_IDS_FROM_VERSION
    topic = st.builds(
        p.OffsetCommitResponseTopic,
        name=_if(not by_id, TEXT, ""),
        partitions=_lists(partition),
        topic_id=_if(by_id, UUIDS, p.ZERO_UUID),
        unknown_tagged_fields=tags,
    )
    return st.builds(
        p.OffsetCommitResponse,
        throttle_time_ms=_if(v >= 3, I32, 0),
        topics=_lists(topic),
        unknown_tagged_fields=tags,
    )


def _fetch_topics(
    tags: st.SearchStrategy, by_id: bool = False
) -> st.SearchStrategy[list[p.OffsetFetchRequestTopic]]:
    return _lists(
        st.builds(
            p.OffsetFetchRequestTopic,
            name=_if(not by_id, TEXT, ""),
            partition_indexes=_lists(I32, 6),
            topic_id=_if(by_id, TOPIC_IDS, p.ZERO_UUID),
            unknown_tagged_fields=tags,
        )
    )


def offset_fetch_request(v: int) -> st.SearchStrategy[p.OffsetFetchRequest]:
    tags = TAGGED if v >= 6 else NO_TAGS
    if v <= 7:
        topics = _fetch_topics(tags) | st.none() if v >= 2 else _fetch_topics(tags)
        return st.builds(
            p.OffsetFetchRequest,
            group_id=TEXT,
            topics=topics,
            require_stable=_if(v >= 7, st.booleans(), False),
            unknown_tagged_fields=tags,
        )
    group = st.builds(
        p.OffsetFetchRequestGroup,
        group_id=TEXT,
        member_id=_if(v >= 9, NTEXT, None),
        member_epoch=_if(v >= 9, I32, -1),
        topics=st.none() | _fetch_topics(tags, v >= TOPIC_IDS_FROM_VERSION),
        unknown_tagged_fields=tags,
    )
    return st.builds(
        p.OffsetFetchRequest,
        group_id=st.just(""),
        topics=st.just([]),
        groups=_lists(group),
        require_stable=st.booleans(),
        unknown_tagged_fields=tags,
    )


def _fetched_topics(
    tags: st.SearchStrategy, epoch: bool, by_id: bool = False
) -> st.SearchStrategy[list[p.OffsetFetchResponseTopic]]:
    partition = st.builds(
        p.OffsetFetchResponsePartition,
        partition_index=I32,
        committed_offset=I64,
        committed_leader_epoch=_if(epoch, I32, -1),
        metadata=NTEXT,
        error_code=I16,
        unknown_tagged_fields=tags,
    )
    return _lists(
        st.builds(
            p.OffsetFetchResponseTopic,
            name=_if(not by_id, TEXT, ""),
            partitions=_lists(partition),
            topic_id=_if(by_id, UUIDS, p.ZERO_UUID),
            unknown_tagged_fields=tags,
        )
    )


def offset_fetch_response(v: int) -> st.SearchStrategy[p.OffsetFetchResponse]:
    tags = TAGGED if v >= 6 else NO_TAGS
    if v <= 7:
        return st.builds(
            p.OffsetFetchResponse,
            throttle_time_ms=_if(v >= 3, I32, 0),
            topics=_fetched_topics(tags, v >= 5),
            error_code=_if(v >= 2, I16, 0),
            unknown_tagged_fields=tags,
        )
    group = st.builds(
        p.OffsetFetchResponseGroup,
        group_id=TEXT,
        topics=_fetched_topics(tags, True, v >= TOPIC_IDS_FROM_VERSION),
        error_code=I16,
        unknown_tagged_fields=tags,
    )
    return st.builds(
        p.OffsetFetchResponse, throttle_time_ms=I32, groups=_lists(group), unknown_tagged_fields=tags
    )


def describe_groups_request(v: int) -> st.SearchStrategy[p.DescribeGroupsRequest]:
    return st.builds(
        p.DescribeGroupsRequest,
        groups=_lists(TEXT),
        include_authorized_operations=_if(v >= 3, st.booleans(), False),
        unknown_tagged_fields=TAGGED if v >= 5 else NO_TAGS,
    )


def describe_groups_response(v: int) -> st.SearchStrategy[p.DescribeGroupsResponse]:
    tags = TAGGED if v >= 5 else NO_TAGS
    member = st.builds(
        p.DescribedGroupMember,
        member_id=TEXT,
        group_instance_id=_if(v >= 4, NTEXT, None),
        client_id=TEXT,
        client_host=TEXT,
        member_metadata=BLOB,
        member_assignment=BLOB,
        unknown_tagged_fields=tags,
    )
    group = st.builds(
        p.DescribedGroup,
        error_code=I16,
        group_id=TEXT,
        group_state=TEXT,
        protocol_type=TEXT,
        protocol_data=TEXT,
        members=_lists(member),
        authorized_operations=_if(v >= 3, I32, p.AUTHORIZED_OPERATIONS_OMITTED),
        unknown_tagged_fields=tags,
    )
    return st.builds(
        p.DescribeGroupsResponse,
        throttle_time_ms=_if(v >= 1, I32, 0),
        groups=_lists(group),
        unknown_tagged_fields=tags,
    )


def find_coordinator_request(v: int) -> st.SearchStrategy[p.FindCoordinatorRequest]:
    return st.builds(
        p.FindCoordinatorRequest,
        key=_if(v <= 3, TEXT, ""),
        key_type=_if(v >= 1, I8, 0),
        coordinator_keys=_if(v >= 4, _lists(TEXT), []),
        unknown_tagged_fields=TAGGED if v >= 3 else NO_TAGS,
    )


def find_coordinator_response(v: int) -> st.SearchStrategy[p.FindCoordinatorResponse]:
    tags = TAGGED if v >= 3 else NO_TAGS
    if v <= 3:
        return st.builds(
            p.FindCoordinatorResponse,
            throttle_time_ms=_if(v >= 1, I32, 0),
            error_code=I16,
            error_message=_if(v >= 1, NTEXT, None),
            node_id=I32,
            host=TEXT,
            port=I32,
            unknown_tagged_fields=tags,
        )
    coordinator = st.builds(
        p.Coordinator,
        key=TEXT,
        node_id=I32,
        host=TEXT,
        port=I32,
        error_code=I16,
        error_message=NTEXT,
        unknown_tagged_fields=tags,
    )
    return st.builds(
        p.FindCoordinatorResponse,
        throttle_time_ms=I32,
        coordinators=_lists(coordinator),
        unknown_tagged_fields=tags,
    )


def _topic_id_partitions() -> st.SearchStrategy[p.TopicIdPartitions]:
    return st.builds(
        p.TopicIdPartitions, topic_id=UUIDS, partitions=_lists(I32, 6), unknown_tagged_fields=TAGGED
    )


def consumer_group_heartbeat_request(v: int) -> st.SearchStrategy[p.ConsumerGroupHeartbeatRequest]:
    return st.builds(
        p.ConsumerGroupHeartbeatRequest,
        group_id=TEXT,
        member_id=TEXT,
        member_epoch=I32,
        instance_id=NTEXT,
        rack_id=NTEXT,
        rebalance_timeout_ms=I32,
        subscribed_topic_names=st.none() | _lists(TEXT),
        subscribed_topic_regex=_if(v >= 1, NTEXT, None),
        server_assignor=NTEXT,
        topic_partitions=st.none() | _lists(_topic_id_partitions()),
        unknown_tagged_fields=TAGGED,
    )


def consumer_group_heartbeat_response(v: int) -> st.SearchStrategy[p.ConsumerGroupHeartbeatResponse]:
    assignment = st.builds(
        p.ConsumerGroupHeartbeatAssignment,
        topic_partitions=_lists(_topic_id_partitions()),
        unknown_tagged_fields=TAGGED,
    )
    return st.builds(
        p.ConsumerGroupHeartbeatResponse,
        throttle_time_ms=I32,
        error_code=I16,
        error_message=NTEXT,
        member_id=NTEXT,
        member_epoch=I32,
        heartbeat_interval_ms=I32,
        assignment=st.none() | assignment,
        unknown_tagged_fields=TAGGED,
    )


def consumer_group_describe_request(v: int) -> st.SearchStrategy[p.ConsumerGroupDescribeRequest]:
    return st.builds(
        p.ConsumerGroupDescribeRequest,
        group_ids=_lists(TEXT),
        include_authorized_operations=st.booleans(),
        unknown_tagged_fields=TAGGED,
    )


def consumer_group_describe_response(v: int) -> st.SearchStrategy[p.ConsumerGroupDescribeResponse]:
    assignment = st.builds(
        p.DescribedAssignment,
        topic_partitions=_lists(
            st.builds(
                p.DescribedTopicPartitions,
                topic_id=UUIDS,
                topic_name=TEXT,
                partitions=_lists(I32, 6),
                unknown_tagged_fields=TAGGED,
            ),
            3,
        ),
        unknown_tagged_fields=TAGGED,
    )
    member = st.builds(
        p.ConsumerGroupDescribedMember,
        member_id=TEXT,
        instance_id=NTEXT,
        rack_id=NTEXT,
        member_epoch=I32,
        client_id=TEXT,
        client_host=TEXT,
        subscribed_topic_names=_lists(TEXT),
        subscribed_topic_regex=NTEXT,
        assignment=assignment,
        target_assignment=assignment,
        member_type=_if(v >= 1, I8, p.MEMBER_TYPE_UNKNOWN),
        unknown_tagged_fields=TAGGED,
    )
    group = st.builds(
        p.ConsumerGroupDescribedGroup,
        error_code=I16,
        error_message=NTEXT,
        group_id=TEXT,
        group_state=TEXT,
        group_epoch=I32,
        assignment_epoch=I32,
        assignor_name=TEXT,
        members=_lists(member, 3),
        authorized_operations=I32,
        unknown_tagged_fields=TAGGED,
    )
    return st.builds(
        p.ConsumerGroupDescribeResponse,
        throttle_time_ms=I32,
        groups=_lists(group, 3),
        unknown_tagged_fields=TAGGED,
    )


def metadata_request(v: int) -> st.SearchStrategy[p.MetadataRequest]:
    topic = st.builds(p.MetadataRequestTopic, topic_id=UUIDS, name=NTEXT, unknown_tagged_fields=TAGGED)
    return st.builds(
        p.MetadataRequest,
        topics=st.none() | _lists(topic),
        allow_auto_topic_creation=st.booleans(),
        include_cluster_authorized_operations=_if(v <= 10, st.booleans(), False),
        include_topic_authorized_operations=st.booleans(),
        unknown_tagged_fields=TAGGED,
    )


def metadata_response(v: int) -> st.SearchStrategy[p.MetadataResponse]:
    broker = st.builds(
        p.MetadataResponseBroker, node_id=I32, host=TEXT, port=I32, rack=NTEXT, unknown_tagged_fields=TAGGED
    )
    partition = st.builds(
        p.MetadataResponsePartition,
        error_code=I16,
        partition_index=I32,
        leader_id=I32,
        leader_epoch=I32,
        replica_nodes=_lists(I32),
        isr_nodes=_lists(I32),
        offline_replicas=_lists(I32),
        unknown_tagged_fields=TAGGED,
    )
    topic = st.builds(
        p.MetadataResponseTopic,
        error_code=I16,
        name=NTEXT if v >= 12 else TEXT,
        topic_id=UUIDS,
        is_internal=st.booleans(),
        partitions=_lists(partition, 3),
        topic_authorized_operations=I32,
        unknown_tagged_fields=TAGGED,
    )
    return st.builds(
        p.MetadataResponse,
        throttle_time_ms=I32,
        brokers=_lists(broker, 3),
        cluster_id=NTEXT,
        controller_id=I32,
        topics=_lists(topic, 3),
        cluster_authorized_operations=_if(v <= 10, I32, p.AUTHORIZED_OPERATIONS_OMITTED),
        error_code=_if(v >= 13, I16, 0),
        unknown_tagged_fields=TAGGED,
    )


STRATEGIES: dict[type[Message], Callable[[int], st.SearchStrategy]] = {
    p.JoinGroupRequest: join_group_request,
    p.JoinGroupResponse: join_group_response,
    p.SyncGroupRequest: sync_group_request,
    p.SyncGroupResponse: sync_group_response,
    p.HeartbeatRequest: heartbeat_request,
    p.HeartbeatResponse: heartbeat_response,
    p.LeaveGroupRequest: leave_group_request,
    p.LeaveGroupResponse: leave_group_response,
    p.OffsetCommitRequest: offset_commit_request,
    p.OffsetCommitResponse: offset_commit_response,
    p.OffsetFetchRequest: offset_fetch_request,
    p.OffsetFetchResponse: offset_fetch_response,
    p.DescribeGroupsRequest: describe_groups_request,
    p.DescribeGroupsResponse: describe_groups_response,
    p.FindCoordinatorRequest: find_coordinator_request,
    p.FindCoordinatorResponse: find_coordinator_response,
    p.ConsumerGroupHeartbeatRequest: consumer_group_heartbeat_request,
    p.ConsumerGroupHeartbeatResponse: consumer_group_heartbeat_response,
    p.ConsumerGroupDescribeRequest: consumer_group_describe_request,
    p.ConsumerGroupDescribeResponse: consumer_group_describe_response,
    p.MetadataRequest: metadata_request,
    p.MetadataResponse: metadata_response,
}

ALL_MESSAGE_VERSIONS: list[tuple[type[Message], int]] = [
    (cls, v)
    for spec in APIS.values()
    for cls in (spec.request, spec.response)
    for v in range(spec.min_version, spec.max_version + 1)
]


def case_id(case: tuple[type[Message], int]) -> str:
    return f"{case[0].__name__}-v{case[1]}"


def any_message() -> st.SearchStrategy[tuple[type[Message], int, Message]]:
    """A (class, version, value) triple over every message and version."""
    return st.sampled_from(ALL_MESSAGE_VERSIONS).flatmap(
        lambda case: STRATEGIES[case[0]](case[1]).map(lambda m: (case[0], case[1], m))
    )


SUBSCRIPTION = st.builds(
    p.Subscription,
    topics=_lists(TEXT),
    user_data=NBLOB,
    owned_partitions=_lists(st.builds(p.TopicPartitions, topic=TEXT, partitions=_lists(I32, 6))),
    generation_id=I32,
    rack_id=NTEXT,
)
ASSIGNMENT = st.builds(
    p.Assignment,
    assigned_partitions=_lists(st.builds(p.TopicPartitions, topic=TEXT, partitions=_lists(I32, 6))),
    user_data=NBLOB,
)

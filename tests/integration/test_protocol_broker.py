"""Our wire codec against a real broker (4.x and 3.9.x), sent through aiokafka's own client.

One static member walks the whole classic protocol with raw requests at the highest versions both
sides speak: FindCoordinator, JoinGroup v9, SyncGroup v5, Heartbeat v4, OffsetCommit/OffsetFetch,
DescribeGroups v5 (showing the instance id) and an admin-style LeaveGroup v5 by instance id. A dynamic
member takes the MEMBER_ID_REQUIRED detour (KIP-394) on JoinGroup v9.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiokafka.client import AIOKafkaClient

from staticconsumer import _aiokafka as bridge
from staticconsumer import protocol as p
from staticconsumer.errors import ErrorCode
from staticconsumer.testing import EmbeddedKafka, ExternalKafka

pytestmark = [pytest.mark.kafka, pytest.mark.both_versions]

INSTANCE_ID = "pod-0"
SESSION_MS = 10_000


@pytest.fixture
async def client(kafka_broker: EmbeddedKafka | ExternalKafka) -> AsyncIterator[AIOKafkaClient]:
    kafka = AIOKafkaClient(bootstrap_servers=kafka_broker.bootstrap_servers, client_id="protocol-test")
    await kafka.bootstrap()
    try:
        yield kafka
    finally:
        await kafka.close()


def _any_node(client: AIOKafkaClient) -> int:
    return int(next(iter(client.cluster.brokers())).nodeId)


async def _find_coordinator(client: AIOKafkaClient, group: str) -> int:
    node = _any_node(client)
    versions = await bridge.broker_versions(client, node, coordination=False)
    version = bridge.negotiated_version(versions, p.FindCoordinatorRequest)
    request = (
        p.FindCoordinatorRequest(coordinator_keys=[group])
        if version >= 4
        else p.FindCoordinatorRequest(group)
    )
    async with asyncio.timeout(60):
        while True:
            exchange = await bridge.send(client, node, request, coordination=False, max_version=version)
            response = exchange.response_as(p.FindCoordinatorResponse)
            if version >= 4:
                (answer,) = response.coordinators
                assert answer.key == group
                error, node_id = answer.error_code, answer.node_id
            else:
                error, node_id = response.error_code, response.node_id
            if error == ErrorCode.NONE:
                return node_id
            assert error in (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
            await asyncio.sleep(0.2)


async def _ready_coordinator(client: AIOKafkaClient, group: str) -> int:
    """Find the coordinator and wait until it has loaded the group's offsets partition.

    Right after the offsets topic is created, FindCoordinator can already name a broker that still
    answers NOT_COORDINATOR/COORDINATOR_LOAD_IN_PROGRESS; a real client retries, and so do we here,
    with DescribeGroups as the harmless probe.
    """
    retriable = {
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    }
    async with asyncio.timeout(60):
        while True:
            node = await _find_coordinator(client, group)
            exchange = await bridge.send(client, node, p.DescribeGroupsRequest([group]))
            (described,) = exchange.response_as(p.DescribeGroupsResponse).groups
            if described.error_code == ErrorCode.NONE:
                return node
            assert described.error_code in retriable, described
            await asyncio.sleep(0.2)


async def _call(client: AIOKafkaClient, node: int, message: p.Message, expect: type[Any]) -> tuple[int, Any]:
    exchange = await bridge.send(client, node, message)
    return exchange.version, exchange.response_as(expect)


async def test_negotiation_picks_join_group_v9(client: AIOKafkaClient) -> None:
    versions = await bridge.broker_versions(client, _any_node(client))
    assert bridge.negotiated_version(versions, p.JoinGroupRequest) == 9
    assert bridge.negotiated_version(versions, p.SyncGroupRequest) == 5
    assert bridge.negotiated_version(versions, p.HeartbeatRequest) == 4
    assert bridge.negotiated_version(versions, p.LeaveGroupRequest) == 5
    assert bridge.negotiated_version(versions, p.DescribeGroupsRequest) == 5
    assert bridge.negotiated_version(versions, p.OffsetCommitRequest) == min(9, versions[8][1])


async def test_static_member_round_trip_with_raw_requests(
    client: AIOKafkaClient, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=3)
    coordinator = await _ready_coordinator(client, unique_group)
    subscription = p.Subscription([topic], None, [], -1, "rack-a")

    # JoinGroup v9 with an instance id: a static member is admitted at once, never MEMBER_ID_REQUIRED.
    version, joined = await _call(
        client,
        coordinator,
        p.JoinGroupRequest(
            unique_group,
            SESSION_MS,
            SESSION_MS,
            "",
            INSTANCE_ID,
            "consumer",
            [p.JoinGroupRequestProtocol("range", subscription.encode())],
            "first join",
        ),
        p.JoinGroupResponse,
    )
    assert version == 9
    assert joined.error_code == ErrorCode.NONE, joined
    assert joined.member_id.startswith(INSTANCE_ID + "-")
    assert joined.leader == joined.member_id
    assert (joined.protocol_type, joined.protocol_name) == ("consumer", "range")
    assert [(m.member_id, m.group_instance_id) for m in joined.members] == [(joined.member_id, INSTANCE_ID)]
    assert p.Subscription.decode(joined.members[0].metadata) == subscription
    member_id, generation = joined.member_id, joined.generation_id

    # SyncGroup v5 as leader.
    assignment = p.Assignment([p.TopicPartitions(topic, [0, 1, 2])], None)
    version, synced = await _call(
        client,
        coordinator,
        p.SyncGroupRequest(
            unique_group,
            generation,
            member_id,
            INSTANCE_ID,
            "consumer",
            "range",
            [p.SyncGroupRequestAssignment(member_id, assignment.encode())],
        ),
        p.SyncGroupResponse,
    )
    assert version == 5
    assert synced.error_code == ErrorCode.NONE, synced
    assert (synced.protocol_type, synced.protocol_name) == ("consumer", "range")
    assert p.Assignment.decode(synced.assignment) == assignment

    # Heartbeat v4, then the same instance id with a stale member id is fenced.
    version, beat = await _call(
        client,
        coordinator,
        p.HeartbeatRequest(unique_group, generation, member_id, INSTANCE_ID),
        p.HeartbeatResponse,
    )
    assert (version, beat.error_code) == (4, ErrorCode.NONE)
    _, fenced = await _call(
        client,
        coordinator,
        p.HeartbeatRequest(unique_group, generation, INSTANCE_ID + "-not-me", INSTANCE_ID),
        p.HeartbeatResponse,
    )
    assert fenced.error_code == ErrorCode.FENCED_INSTANCE_ID

    # OffsetCommit at the highest common version, with the instance id; OffsetFetch reads it back.
    commit_version = bridge.negotiated_version(
        await bridge.broker_versions(client, coordinator), p.OffsetCommitRequest
    )
    offsets = {0: 10, 1: 20, 2: 30}
    version, committed = await _call(
        client,
        coordinator,
        p.OffsetCommitRequest(
            unique_group,
            generation,
            member_id,
            INSTANCE_ID,
            -1,
            [
                p.OffsetCommitRequestTopic(
                    topic, [p.OffsetCommitRequestPartition(i, o, -1, "m") for i, o in offsets.items()]
                )
            ],
        ),
        p.OffsetCommitResponse,
    )
    assert version == commit_version >= 7
    # the 3.9 coordinator answers partitions in hash order; order carries no meaning here
    assert [
        (t.name, sorted((q.partition_index, q.error_code) for q in t.partitions)) for t in committed.topics
    ] == [(topic, [(0, 0), (1, 0), (2, 0)])]
    fetch_version = bridge.negotiated_version(
        await bridge.broker_versions(client, coordinator), p.OffsetFetchRequest
    )
    topics = [p.OffsetFetchRequestTopic(topic, [0, 1, 2])]
    fetch = (
        p.OffsetFetchRequest(groups=[p.OffsetFetchRequestGroup(unique_group, None, -1, topics)])
        if fetch_version >= 8
        else p.OffsetFetchRequest(unique_group, topics)
    )
    _, fetched = await _call(client, coordinator, fetch, p.OffsetFetchResponse)
    fetched_topics = fetched.groups[0].topics if fetch_version >= 8 else fetched.topics
    assert {(q.partition_index, q.committed_offset, q.metadata) for q in fetched_topics[0].partitions} == {
        (i, o, "m") for i, o in offsets.items()
    }

    # DescribeGroups v5 shows the member with its instance id and assignment.
    version, described = await _call(
        client, coordinator, p.DescribeGroupsRequest([unique_group], True), p.DescribeGroupsResponse
    )
    assert version == 5
    (group,) = described.groups
    assert (group.error_code, group.group_id, group.group_state) == (0, unique_group, "Stable")
    assert (group.protocol_type, group.protocol_data) == ("consumer", "range")
    (member,) = group.members
    assert (member.member_id, member.group_instance_id, member.client_id) == (
        member_id,
        INSTANCE_ID,
        "protocol-test",
    )
    assert p.Assignment.decode(member.member_assignment) == assignment

    # LeaveGroup v5 by instance id alone (MemberId ""), as Kafka's admin removeMembersFromConsumerGroup does.
    version, left = await _call(
        client,
        coordinator,
        p.LeaveGroupRequest(unique_group, [p.MemberIdentity("", INSTANCE_ID, "scaled down")]),
        p.LeaveGroupResponse,
    )
    assert version == 5
    assert left.error_code == ErrorCode.NONE
    assert [(m.member_id, m.group_instance_id, m.error_code) for m in left.members] == [("", INSTANCE_ID, 0)]
    _, after = await _call(
        client, coordinator, p.DescribeGroupsRequest([unique_group]), p.DescribeGroupsResponse
    )
    assert after.groups[0].members == []
    assert after.groups[0].group_state == "Empty"


async def test_dynamic_member_needs_a_second_join_on_v9(client: AIOKafkaClient, unique_group: str) -> None:
    group = unique_group + "-dynamic"
    coordinator = await _ready_coordinator(client, group)
    protocols = [p.JoinGroupRequestProtocol("range", p.Subscription(["t"]).encode())]
    request = p.JoinGroupRequest(group, SESSION_MS, SESSION_MS, "", None, "consumer", protocols, None)
    version, first = await _call(client, coordinator, request, p.JoinGroupResponse)
    assert version == 9
    assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
    assert first.member_id.startswith("protocol-test-")
    request.member_id = first.member_id
    _, second = await _call(client, coordinator, request, p.JoinGroupResponse)
    assert second.error_code == ErrorCode.NONE, second
    assert second.member_id == first.member_id
    assert [(m.member_id, m.group_instance_id) for m in second.members] == [(first.member_id, None)]
    _, left = await _call(
        client,
        coordinator,
        p.LeaveGroupRequest(group, [p.MemberIdentity(first.member_id)]),
        p.LeaveGroupResponse,
    )
    assert left.error_code == ErrorCode.NONE


async def test_returning_static_leader_gets_skip_assignment_on_v9_only(
    client: AIOKafkaClient, create_topic: Callable[..., str], unique_group: str
) -> None:
    """KIP-814 on the wire: a static leader rejoining a Stable group with MemberId "" replaces itself;
    v9 tells it it leads (SkipAssignment, Leader = its new id), v8 names the old id as leader."""
    topic = create_topic(partitions=2)
    coordinator = await _ready_coordinator(client, unique_group)
    protocols = [p.JoinGroupRequestProtocol("range", p.Subscription([topic]).encode())]

    def join() -> p.JoinGroupRequest:
        return p.JoinGroupRequest(
            unique_group, SESSION_MS, SESSION_MS, "", INSTANCE_ID, "consumer", protocols, None
        )

    _, first = await _call(client, coordinator, join(), p.JoinGroupResponse)
    assert first.error_code == ErrorCode.NONE, first
    assignment = p.Assignment([p.TopicPartitions(topic, [0, 1])]).encode()
    _, synced = await _call(
        client,
        coordinator,
        p.SyncGroupRequest(
            unique_group,
            first.generation_id,
            first.member_id,
            INSTANCE_ID,
            "consumer",
            "range",
            [p.SyncGroupRequestAssignment(first.member_id, assignment)],
        ),
        p.SyncGroupResponse,
    )
    assert synced.error_code == ErrorCode.NONE, synced

    exchange = await bridge.send(client, coordinator, join())
    second = exchange.response_as(p.JoinGroupResponse)
    assert exchange.version == 9
    assert second.error_code == ErrorCode.NONE, second
    assert second.member_id != first.member_id
    assert second.generation_id == first.generation_id  # replaced in place, no rebalance
    assert second.skip_assignment is True
    assert second.leader == second.member_id
    assert [(m.member_id, m.group_instance_id) for m in second.members] == [(second.member_id, INSTANCE_ID)]

    _, stale = await _call(
        client,
        coordinator,
        p.HeartbeatRequest(unique_group, first.generation_id, first.member_id, INSTANCE_ID),
        p.HeartbeatResponse,
    )
    assert stale.error_code == ErrorCode.FENCED_INSTANCE_ID

    exchange = await bridge.send(client, coordinator, join(), max_version=8)
    third = exchange.response_as(p.JoinGroupResponse)
    assert exchange.version == 8
    assert third.error_code == ErrorCode.NONE, third
    assert third.skip_assignment is False  # v8 cannot say it
    assert third.leader == second.member_id != third.member_id  # the pre-KIP-814 answer
    assert third.members == []  # a "follower" gets no member list

"""KIP-848's consumer protocol on the real 4.x broker, with raw requests of our codec: what a static
member sees. These are the broker facts the consumer-protocol membership machine builds on.

A static member joins with ConsumerGroupHeartbeat v1 at epoch 0 with a member id it generated itself and
its instance id, gets its assignment as topic ids (resolved by Metadata v12 to the topic created),
acknowledges it, shows in ConsumerGroupDescribe; a second live process with the same instance id is
refused with UNRELEASED_INSTANCE_ID; a leave with epoch -2 keeps the member and its assignment for the
next process with that instance id, which rejoins at epoch 0 and gets the same partitions at once; a
leave with -1 removes it. Commits carry the member epoch (OffsetCommit/OffsetFetch v10 by topic id).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import pytest
from aiokafka.client import AIOKafkaClient

from staticconsumer import _aiokafka as bridge
from staticconsumer import protocol as p
from staticconsumer.broker_support import check_consumer_protocol
from staticconsumer.errors import ErrorCode
from staticconsumer.testing import EmbeddedKafka, ExternalKafka

pytestmark = [pytest.mark.kafka]

PARTITIONS = 4
BROKER_HEARTBEAT_INTERVAL_MS = 5000
"""group.consumer.heartbeat.interval.ms: the brokers' default, which they hand to every member."""


@dataclass
class Member:
    """One consumer-protocol member driven by hand: what it last heard from the coordinator."""

    client: AIOKafkaClient
    coordinator: int
    group: str
    topic: str
    instance_id: str
    member_id: str
    epoch: int = 0
    owned: list[p.TopicIdPartitions] | None = None

    async def heartbeat(self, request: p.ConsumerGroupHeartbeatRequest) -> p.ConsumerGroupHeartbeatResponse:
        exchange = await bridge.send(self.client, self.coordinator, request)
        assert exchange.version == 1
        return exchange.response_as(p.ConsumerGroupHeartbeatResponse)

    async def join(self) -> p.ConsumerGroupHeartbeatResponse:
        """The full heartbeat of a (re)join: epoch 0, everything that null would leave unchanged."""
        response = await self.heartbeat(
            p.ConsumerGroupHeartbeatRequest(
                group_id=self.group,
                member_id=self.member_id,
                member_epoch=p.JOIN_EPOCH,
                instance_id=self.instance_id,
                rebalance_timeout_ms=30_000,
                subscribed_topic_names=[self.topic],
                topic_partitions=[],
            )
        )
        self._take(response)
        return response

    async def acknowledge(self) -> p.ConsumerGroupHeartbeatResponse:
        """Report the owned partitions (the acknowledgement of a reconciled assignment)."""
        response = await self.heartbeat(
            p.ConsumerGroupHeartbeatRequest(
                group_id=self.group,
                member_id=self.member_id,
                member_epoch=self.epoch,
                topic_partitions=self.owned,
            )
        )
        self._take(response)
        return response

    async def heartbeat_until_assigned(self) -> None:
        async with asyncio.timeout(30):
            while not any(t.partitions for t in self.owned or []):
                await asyncio.sleep(0.2)
                assert (await self.acknowledge()).error_code == ErrorCode.NONE

    async def leave(self, epoch: int) -> p.ConsumerGroupHeartbeatResponse:
        return await self.heartbeat(
            p.ConsumerGroupHeartbeatRequest(
                group_id=self.group,
                member_id=self.member_id,
                member_epoch=epoch,
                instance_id=self.instance_id,
            )
        )

    def _take(self, response: p.ConsumerGroupHeartbeatResponse) -> None:
        if response.error_code == ErrorCode.NONE:
            self.epoch = response.member_epoch
            if response.assignment is not None:
                self.owned = response.assignment.topic_partitions


@pytest.fixture
async def client(kafka_broker: EmbeddedKafka | ExternalKafka) -> AsyncIterator[AIOKafkaClient]:
    kafka = AIOKafkaClient(bootstrap_servers=kafka_broker.bootstrap_servers, client_id="kip848-test")
    await kafka.bootstrap()
    try:
        yield kafka
    finally:
        await kafka.close()


async def _coordinator(client: AIOKafkaClient, group: str) -> int:
    """FindCoordinator, then wait until the coordinator has loaded the group (describe answers)."""
    node = bridge.any_node(client)
    async with asyncio.timeout(60):
        while True:
            found = await bridge.send(client, node, p.FindCoordinatorRequest(coordinator_keys=[group]))
            (answer,) = found.response_as(p.FindCoordinatorResponse).coordinators
            if answer.error_code == ErrorCode.NONE:
                described = await _describe(client, answer.node_id, group)
                if described.error_code in (ErrorCode.NONE, ErrorCode.GROUP_ID_NOT_FOUND):
                    return answer.node_id
            await asyncio.sleep(0.2)


async def _describe(client: AIOKafkaClient, coordinator: int, group: str) -> p.ConsumerGroupDescribedGroup:
    exchange = await bridge.send(client, coordinator, p.ConsumerGroupDescribeRequest([group]))
    assert exchange.version == 1
    (described,) = exchange.response_as(p.ConsumerGroupDescribeResponse).groups
    return described


async def _member(client: AIOKafkaClient, group: str, topic: str, instance_id: str) -> Member:
    coordinator = await _coordinator(client, group)
    check_consumer_protocol(await bridge.broker_versions(client, coordinator), coordinator)
    return Member(client, coordinator, group, topic, instance_id, str(uuid.uuid4()))


def _partitions(owned: list[p.TopicIdPartitions] | None) -> dict[uuid.UUID, list[int]]:
    return {t.topic_id: sorted(t.partitions) for t in owned or []}


def _described(assignment: p.DescribedAssignment) -> dict[tuple[uuid.UUID, str], list[int]]:
    return {(t.topic_id, t.topic_name): sorted(t.partitions) for t in assignment.topic_partitions}


async def test_a_static_member_joins_with_its_own_member_id_and_gets_topic_ids(
    client: AIOKafkaClient, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=PARTITIONS)
    member = await _member(client, unique_group, topic, "pod-0")

    joined = await member.join()
    assert joined.error_code == ErrorCode.NONE, joined.error_message
    assert joined.member_id == member.member_id, "v1: the broker keeps the id the client generated"
    assert joined.member_epoch >= 1
    assert joined.heartbeat_interval_ms == BROKER_HEARTBEAT_INTERVAL_MS
    # the join answer always carries an assignment, empty while the coordinator has not yet seen the
    # topic just created; later heartbeats bring it, whole
    assert joined.assignment is not None
    await member.heartbeat_until_assigned()
    (topic_id,) = _partitions(member.owned)
    assert _partitions(member.owned) == {topic_id: list(range(PARTITIONS))}

    # the assignment names the topic by id: Metadata v12 resolves it by id to the topic we created
    exchange = await bridge.send(
        client, bridge.any_node(client), p.MetadataRequest([p.MetadataRequestTopic(topic_id, None)])
    )
    assert exchange.version >= 12
    (resolved,) = exchange.response_as(p.MetadataResponse).topics
    assert (resolved.error_code, resolved.name, resolved.topic_id) == (0, topic, topic_id)
    assert sorted(q.partition_index for q in resolved.partitions) == list(range(PARTITIONS))

    acknowledged = await member.acknowledge()
    assert (acknowledged.error_code, acknowledged.member_epoch) == (0, member.epoch)
    assert acknowledged.assignment is None, "null: unchanged since the last heartbeat"

    described = await _describe(client, member.coordinator, unique_group)
    assert (described.error_code, described.group_state, described.assignor_name) == (0, "Stable", "uniform")
    assert described.group_epoch == described.assignment_epoch == member.epoch
    (seen,) = described.members
    assert (seen.member_id, seen.instance_id, seen.member_epoch) == (
        member.member_id,
        "pod-0",
        member.epoch,
    )
    assert (seen.member_type, seen.subscribed_topic_names, seen.client_id) == (
        p.MEMBER_TYPE_CONSUMER,
        [topic],
        "kip848-test",
    )
    everything = {(topic_id, topic): list(range(PARTITIONS))}
    assert _described(seen.assignment) == _described(seen.target_assignment) == everything

    # a second live process with the same instance id is refused; the first keeps everything
    intruder = Member(client, member.coordinator, unique_group, topic, "pod-0", str(uuid.uuid4()))
    refused = await intruder.join()
    assert refused.error_code == ErrorCode.UNRELEASED_INSTANCE_ID
    assert refused.error_message is not None
    assert "pod-0" in refused.error_message
    assert member.member_id in refused.error_message, "the broker names the member holding the id"
    assert (refused.member_id, refused.member_epoch, refused.assignment) == (None, 0, None)
    after = await _describe(client, member.coordinator, unique_group)
    assert [(m.member_id, m.member_epoch) for m in after.members] == [(member.member_id, member.epoch)]
    assert after.group_epoch == described.group_epoch


async def test_a_static_leave_with_epoch_minus_two_keeps_the_assignment_for_the_rejoin(
    client: AIOKafkaClient, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=PARTITIONS)
    first = await _member(client, unique_group, topic, "pod-0")
    other = Member(client, first.coordinator, unique_group, topic, "pod-1", str(uuid.uuid4()))
    await first.join()
    await other.join()
    async with asyncio.timeout(60):  # the two reconcile until both own half and the group is stable
        while True:
            for m in (first, other):
                assert (await m.acknowledge()).error_code == ErrorCode.NONE
            described = await _describe(client, first.coordinator, unique_group)
            owned = [_partitions(m.owned) for m in (first, other)]
            if (
                described.group_state == "Stable"
                and all(owned)
                and all(
                    _described(m.assignment) == _described(m.target_assignment) for m in described.members
                )
            ):
                break
            await asyncio.sleep(0.3)
    before = {m.instance_id: (_described(m.assignment), m.member_epoch) for m in described.members}
    group_epoch = described.group_epoch
    kept = _partitions(first.owned)

    left = await first.leave(p.STATIC_LEAVE_EPOCH)
    assert (left.error_code, left.member_id, left.member_epoch) == (0, first.member_id, -2)
    assert left.heartbeat_interval_ms == 0
    held = await _describe(client, first.coordinator, unique_group)
    by_instance = {m.instance_id: m for m in held.members}
    assert by_instance["pod-0"].member_id == first.member_id
    assert by_instance["pod-0"].member_epoch == p.STATIC_LEAVE_EPOCH
    assert _described(by_instance["pod-0"].assignment) == before["pod-0"][0], "the assignment is kept"
    assert held.group_epoch == group_epoch, "a static leave is no membership change"

    # the departed member id is told its epoch no longer matches
    stale = await first.acknowledge()
    assert stale.error_code == ErrorCode.FENCED_MEMBER_EPOCH

    # the next process with the same instance id rejoins at epoch 0 and gets the same partitions at once
    second = Member(client, first.coordinator, unique_group, topic, "pod-0", str(uuid.uuid4()))
    rejoined = await second.join()
    assert rejoined.error_code == ErrorCode.NONE, rejoined.error_message
    assert rejoined.member_id == second.member_id
    assert rejoined.member_epoch == before["pod-0"][1], "it takes the old member's epoch"
    assert _partitions(second.owned) == kept
    settled = await _describe(client, first.coordinator, unique_group)
    assert settled.group_epoch == group_epoch
    after = {m.instance_id: (_described(m.assignment), m.member_epoch) for m in settled.members}
    assert after == before, "nobody else's assignment changed"
    assert {m.member_id for m in settled.members} == {second.member_id, other.member_id}

    # the old process, back from the dead with the instance id, is fenced by the new one
    zombie = await first.leave(first.epoch)  # any epoch with its instance id
    assert zombie.error_code == ErrorCode.FENCED_INSTANCE_ID
    assert second.member_id in (zombie.error_message or "")

    # a leave with -1 removes the static member for good: its partitions go to the other member
    gone = await second.leave(p.LEAVE_EPOCH)
    assert (gone.error_code, gone.member_epoch) == (0, -1)
    remaining = await _describe(client, first.coordinator, unique_group)
    assert [m.instance_id for m in remaining.members] == ["pod-1"]
    assert remaining.group_epoch > group_epoch
    async with asyncio.timeout(30):  # the new target assignment is computed asynchronously
        while remaining.assignment_epoch < remaining.group_epoch:
            await other.acknowledge()
            await asyncio.sleep(0.2)
            remaining = await _describe(client, first.coordinator, unique_group)
    (target,) = [m.target_assignment for m in remaining.members]
    assert sum(len(ps) for ps in _described(target).values()) == PARTITIONS


async def test_commits_carry_the_member_epoch_by_topic_id(
    client: AIOKafkaClient, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=2)
    member = await _member(client, unique_group, topic, "pod-0")
    await member.join()
    await member.heartbeat_until_assigned()
    (topic_id,) = _partitions(member.owned)

    def commit(epoch: int, offset: int, by_id: bool) -> p.OffsetCommitRequest:
        partition = p.OffsetCommitRequestPartition(0, offset)
        named = p.OffsetCommitRequestTopic(
            "" if by_id else topic, [partition], topic_id if by_id else p.ZERO_UUID
        )
        return p.OffsetCommitRequest(unique_group, epoch, member.member_id, "pod-0", topics=[named])

    # by id, asked for explicitly (v10); by name the default ceiling keeps it at v9
    by_id = await bridge.send(client, member.coordinator, commit(member.epoch, 7, True), max_version=10)
    assert by_id.version == 10
    (answered,) = by_id.response_as(p.OffsetCommitResponse).topics
    assert (answered.topic_id, answered.name, answered.partitions[0].error_code) == (topic_id, "", 0)
    by_name = await bridge.send(client, member.coordinator, commit(member.epoch, 8, False))
    assert by_name.version == 9
    assert by_name.response_as(p.OffsetCommitResponse).topics[0].partitions[0].error_code == 0

    # an epoch ahead of the broker's is STALE_MEMBER_EPOCH, and nothing is committed
    ahead = await bridge.send(client, member.coordinator, commit(member.epoch + 1, 99, False))
    assert (
        ahead.response_as(p.OffsetCommitResponse).topics[0].partitions[0].error_code
        == ErrorCode.STALE_MEMBER_EPOCH
    )

    fetch = p.OffsetFetchRequest(
        groups=[
            p.OffsetFetchRequestGroup(
                unique_group, member.member_id, member.epoch, [p.OffsetFetchRequestTopic("", [0], topic_id)]
            )
        ],
        require_stable=True,
    )
    fetched = await bridge.send(client, member.coordinator, fetch, max_version=10)
    assert fetched.version == 10
    (group,) = fetched.response_as(p.OffsetFetchResponse).groups
    (offsets,) = group.topics
    assert (group.error_code, offsets.topic_id, offsets.partitions[0].committed_offset) == (0, topic_id, 8)

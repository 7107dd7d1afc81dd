"""StaticConsumer against the real broker: what goes on the wire when joining, staying and leaving."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest

from staticconsumer.consumer import DuplicateInstanceIdError, StaticConsumer
from staticconsumer.errors import ConfigurationError
from staticconsumer.membership import TopicPartition
from staticconsumer.testing import EmbeddedKafka

from .support import (
    FAST,
    RecordingListener,
    RequestRecorder,
    consume,
    describe_group,
    eventually,
    produce,
    until_assigned,
)

pytestmark = pytest.mark.kafka


@pytest.mark.both_versions
async def test_static_member_carries_its_instance_id_on_every_group_request(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=2)
    await produce(kafka_broker.bootstrap_servers, topic, 20)
    wire = RequestRecorder()
    consumer = StaticConsumer(
        topic,
        bootstrap_servers=kafka_broker.bootstrap_servers,
        group_id=unique_group,
        group_instance_id="pod-0",
        request_hook=wire,
        **FAST,
    )
    async with consumer:
        await consume(consumer, 20)
        await consumer.commit()
        await eventually(lambda: len(wire.of("HeartbeatRequest")) >= 2, 10, "two heartbeats")
    joins, syncs = wire.of("JoinGroupRequest"), wire.of("SyncGroupRequest")
    beats, commits = wire.of("HeartbeatRequest"), wire.of("OffsetCommitRequest")
    assert len(joins) == 1, "a static member joins with one JoinGroup: no MEMBER_ID_REQUIRED round trip"
    assert not wire.of("FindCoordinatorRequest"), "the join uses the coordinator the start-up check found"
    assert joins[0].version == 9
    assert syncs[0].version == 5
    assert beats[0].version == 4
    assert commits[0].version >= 7
    for sent in joins + syncs + beats + commits:
        assert sent.message.group_instance_id == "pod-0", f"{sent.api} v{sent.version} lacks the instance id"
    assert not wire.of("LeaveGroupRequest"), "a static member sends no LeaveGroup on stop"


@pytest.mark.both_versions
async def test_dynamic_member_joins_with_exactly_two_join_groups_whatever_the_assignors(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=3)
    wire = RequestRecorder()
    consumer = StaticConsumer(
        topic,
        bootstrap_servers=kafka_broker.bootstrap_servers,
        group_id=unique_group,
        assignors=["range", "roundrobin", "sticky"],
        request_hook=wire,
        **FAST,
    )
    async with consumer:
        await until_assigned(consumer)
        member_id = consumer.member_id
    joins = wire.of("JoinGroupRequest")
    assert len(joins) == 2, [j.message.member_id for j in joins]
    first, second = joins[0].message, joins[1].message
    assert first.member_id == ""
    assert second.member_id == member_id != ""
    for join in (first, second):
        assert [p.name for p in join.protocols] == ["range", "roundrobin", "sticky"], "full protocol list"
        assert join.group_instance_id is None
    assert wire.of("LeaveGroupRequest"), "a dynamic member leaves on stop"


async def test_second_consumer_with_the_same_instance_id_in_one_process_is_refused_before_any_request(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic()
    first = StaticConsumer(
        topic,
        bootstrap_servers=kafka_broker.bootstrap_servers,
        group_id=unique_group,
        group_instance_id="worker-1",
        **FAST,
    )
    wire = RequestRecorder()
    second = StaticConsumer(
        topic,
        bootstrap_servers=kafka_broker.bootstrap_servers,
        group_id=unique_group,
        group_instance_id="worker-1",
        request_hook=wire,
        **FAST,
    )
    async with first:
        with pytest.raises(DuplicateInstanceIdError, match=r"worker-1.*" + unique_group):
            await second.start()
        assert wire.sent == []
    # Once the first has stopped, the id is free again in this process.
    async with second:
        await until_assigned(second)


@pytest.mark.both_versions
async def test_static_restart_within_session_timeout_causes_no_rebalance(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=4)
    bootstrap = kafka_broker.bootstrap_servers
    stay_listener = RecordingListener()
    stay = StaticConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=unique_group,
        group_instance_id="a",
        listener=stay_listener,
        **FAST,
    )
    bounce = StaticConsumer(
        topic, bootstrap_servers=bootstrap, group_id=unique_group, group_instance_id="b", **FAST
    )
    async with stay:
        await bounce.start()

        async def settled() -> bool:
            await stay.getmany(timeout_ms=100)
            await bounce.getmany(timeout_ms=100)
            return len(stay.assignment()) == 2 and len(bounce.assignment()) == 2

        await eventually(settled, 30, "both members own two partitions")
        generation, bounced_partitions = stay.generation, bounce.assignment()
        events_before = len(stay_listener.events)
        wire = RequestRecorder()
        bounce._request_hook = wire  # observe the stop of this very instance
        await bounce.stop()
        assert not wire.of("LeaveGroupRequest")
        described = await describe_group(bootstrap, unique_group)
        assert "b" in {m.group_instance_id for m in described.members}, "still a member after stop"

        back = StaticConsumer(
            topic, bootstrap_servers=bootstrap, group_id=unique_group, group_instance_id="b", **FAST
        )
        async with back:
            await until_assigned(back)
            assert back.assignment() == bounced_partitions
            assert back.generation == generation, "no new generation: no rebalance"
            await stay.getmany(timeout_ms=2500)  # heartbeats keep flowing; a rebalance would show here
            assert stay.generation == generation
            assert stay_listener.events[events_before:] == [], "the member that stayed saw no revoke"


@pytest.mark.both_versions
async def test_explicit_leave_names_the_instance_and_rebalances_at_once(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=4)
    bootstrap = kafka_broker.bootstrap_servers
    stay = StaticConsumer(
        topic, bootstrap_servers=bootstrap, group_id=unique_group, group_instance_id="a", **FAST
    )
    wire = RequestRecorder()
    leaver = StaticConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=unique_group,
        group_instance_id="b",
        request_hook=wire,
        **FAST,
    )
    async with stay:
        await leaver.start()

        async def split() -> bool:
            await stay.getmany(timeout_ms=100)
            await leaver.getmany(timeout_ms=100)
            return len(stay.assignment()) == 2 and len(leaver.assignment()) == 2

        await eventually(split, 30, "both members own two partitions")
        generation = stay.generation
        left_at = time.monotonic()
        await leaver.stop(leave_group=True)
        leaves = wire.of("LeaveGroupRequest")
        assert len(leaves) == 1
        assert leaves[0].version >= 3
        identity = leaves[0].message.members[0]
        assert identity.group_instance_id == "b"
        if leaves[0].version >= 5:
            assert identity.reason

        async def took_over() -> bool:
            await stay.getmany(timeout_ms=100)
            return len(stay.assignment()) == 4

        await eventually(
            took_over, 5, "the remaining member owns every partition well before the session timeout"
        )
        assert stay.generation > generation
        assert time.monotonic() - left_at < FAST["session_timeout_ms"] / 1000


@pytest.mark.parametrize("bad", ["", ".", "..", "a" * 250, "has space", "colon:", "eq=", "ünï"])
def test_instance_ids_are_validated_before_anything_is_sent(bad: str) -> None:
    # Port 1 on loopback: any attempt to connect would fail loudly instead of this error.
    with pytest.raises(ConfigurationError, match=r"KAFKA_GROUP_INSTANCE_ID|group_instance_id"):
        StaticConsumer("t", bootstrap_servers="127.0.0.1:1", group_id="g", group_instance_id=bad)


def test_longest_legal_instance_id_is_accepted() -> None:
    consumer = StaticConsumer("t", bootstrap_servers="127.0.0.1:1", group_id="g", group_instance_id="a" * 249)
    assert consumer.settings.group_instance_id == "a" * 249


async def test_a_new_member_triggers_an_eager_rebalance_with_revoke_and_commit_first(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=2)
    bootstrap = kafka_broker.bootstrap_servers
    await produce(bootstrap, topic, 40)
    listener = RecordingListener()
    first = StaticConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=unique_group,
        group_instance_id="a",
        listener=listener,
        **FAST,
    )
    async with first:
        records = await consume(first, 40)
        positions = {}
        for record in records:
            positions[(record.topic, record.partition)] = record.offset + 1
        second = StaticConsumer(
            topic, bootstrap_servers=bootstrap, group_id=unique_group, group_instance_id="b", **FAST
        )
        async with second:

            async def rebalanced() -> bool:
                await first.getmany(timeout_ms=100)
                await second.getmany(timeout_ms=100)
                return len(first.assignment()) == 1 and len(second.assignment()) == 1

            await eventually(rebalanced, 30, "the two members split the partitions")
            assert listener.kinds()[:4] == ["revoked", "assigned", "revoked", "assigned"], (
                "eager: the empty revoke before the first join, then the rebalance's"
            )
            from .support import committed_offsets

            committed = await committed_offsets(bootstrap, unique_group)
            assert {(tp.topic, tp.partition): o for tp, o in committed.items()} == positions, (
                "the revoke committed every returned record's position before rejoining"
            )
            assert await asyncio.wait_for(second.getmany(timeout_ms=500), 5) == {}, "nothing re-delivered"


async def test_a_restarting_member_of_a_large_topic_reads_only_its_own_committed_offsets(
    kafka_broker: EmbeddedKafka,
    create_topic: Callable[..., str],
    unique_group: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Above PREFETCH_MAX_PARTITIONS (256) the join reads no offsets ahead for the whole topic (a fleet
    member decoded 600 to keep 2, issue 27): the restarted member sends one OffsetFetch, for exactly
    the partitions it was assigned."""
    from staticconsumer.runtime import loop as loop_module
    from staticconsumer.runtime.loop import PREFETCH_MAX_PARTITIONS

    assert PREFETCH_MAX_PARTITIONS < 300
    topic = create_topic(partitions=300)  # two members of 150 each: a fleet's shape, smaller

    def member(instance: str) -> StaticConsumer:
        return StaticConsumer(
            topic,
            bootstrap_servers=kafka_broker.bootstrap_servers,
            group_id=unique_group,
            group_instance_id=instance,
            enable_auto_commit=False,
            **FAST,
        )

    other = member("pod-0")
    async with other:
        first = member("pod-1")
        async with first:
            await asyncio.gather(until_assigned(other), until_assigned(first))
            await eventually(lambda: len(first.assignment()) == 150, 20, "two members of 150")
            mine = first.assignment()
        read: list[frozenset[TopicPartition]] = []
        fetch_committed = loop_module.fetch_committed

        async def recorded(
            client: object, group_id: str, partitions: frozenset[TopicPartition], **kw: Any
        ) -> Any:
            read.append(partitions)  # on the membership thread: one append per OffsetFetch
            return await fetch_committed(client, group_id, partitions, **kw)

        monkeypatch.setattr(loop_module, "fetch_committed", recorded)
        again = member("pod-1")
        async with again:
            assert again.assignment() == mine
            assert read == [frozenset((tp.topic, tp.partition) for tp in mine)], "the assignment's, once"

"""Static membership is unchanged under the cooperative protocol, on real brokers: a static restart causes
no rebalance and no revoke anywhere (Kafka's system tests expect exactly that of cooperative-sticky), a
returning leader keeps its assignment without computing (KIP-814), its metadata watch still notices new
partitions (and the cooperative round that hands them out revokes nothing), and the ownership audit still
finds partitions added while the leader was down."""

from __future__ import annotations

import time
from typing import Any

import pytest

from staticconsumer.consumer import StaticConsumer
from staticconsumer.testing import EmbeddedKafka

from .support import FAST, RecordingListener, RequestRecorder, eventually, produce, until_assigned

pytestmark = [pytest.mark.kafka, pytest.mark.both_versions]

COOPERATIVE_WATCH = {**FAST, "metadata_max_age_ms": 2000, "assignors": ["cooperative-sticky"]}


def _static(topics: list[str], bootstrap: str, group: str, instance: str, **extra: Any) -> StaticConsumer:
    return StaticConsumer(
        *topics,
        bootstrap_servers=bootstrap,
        group_id=group,
        group_instance_id=instance,
        **{**COOPERATIVE_WATCH, **extra},
    )


async def _settle(*consumers: StaticConsumer, within: float = 45) -> None:
    async def stable() -> bool:
        for consumer in consumers:
            await consumer.getmany(timeout_ms=50)
        return all(c.assignment() for c in consumers) and len({c.generation for c in consumers}) == 1

    await eventually(stable, within, "every member owns partitions in one generation")


async def _first_record_from(
    consumers: list[StaticConsumer], topic: str, partitions: set[int], within: float
) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        for consumer in consumers:
            batch = await consumer.getmany(timeout_ms=50)
            if any(tp.topic == topic and tp.partition in partitions and rows for tp, rows in batch.items()):
                return
    raise AssertionError(f"no record from {topic} {sorted(partitions)} within {within}s")


async def test_a_static_follower_restart_causes_no_rebalance_and_no_revoke(
    kafka_broker: EmbeddedKafka, unique_topic: str, unique_group: str
) -> None:
    kafka_broker.create_topic(unique_topic, 4)
    bootstrap = kafka_broker.bootstrap_servers
    stay_listener = RecordingListener()
    stay = _static([unique_topic], bootstrap, unique_group, "a", listener=stay_listener)
    bounce = _static([unique_topic], bootstrap, unique_group, "b")
    async with stay:
        await bounce.start()
        await _settle(stay, bounce)
        generation, bounced = stay.generation, bounce.assignment()
        assert stay.rebalance_protocol == bounce.rebalance_protocol == "cooperative"
        seen = len(stay_listener.events)
        await bounce.stop()

        back_listener = RecordingListener()
        back = _static([unique_topic], bootstrap, unique_group, "b", listener=back_listener)
        async with back:
            await until_assigned(back)
            assert back.assignment() == bounced
            assert back.generation == generation, "no new generation: no rebalance"
            assert back_listener.kinds() == ["assigned"], "the returning member is told what it owns"
            await stay.getmany(timeout_ms=2500)
            assert stay.generation == generation
            assert stay_listener.events[seen:] == [], "the member that stayed saw nothing at all"


async def test_a_returning_leader_keeps_everything_and_its_watch_hands_out_new_partitions(
    kafka_broker: EmbeddedKafka, unique_topic: str, unique_group: str
) -> None:
    kafka_broker.create_topic(unique_topic, 4)
    bootstrap = kafka_broker.bootstrap_servers
    leader = _static([unique_topic], bootstrap, unique_group, "leader")
    await leader.start()
    await until_assigned(leader)
    listener = RecordingListener()
    follower = _static([unique_topic], bootstrap, unique_group, "follower", listener=listener)
    async with follower:
        await _settle(leader, follower)
        assert leader.is_leader
        generation, leader_partitions = leader.generation, leader.assignment()
        seen = len(listener.events)

        await leader.stop()
        wire = RequestRecorder()
        leader = _static([unique_topic], bootstrap, unique_group, "leader", request_hook=wire)
        await leader.start()
        try:
            await until_assigned(leader)
            assert leader.generation == generation, "a leader restart within the session: no rebalance"
            assert leader.is_leader, "KIP-814: SkipAssignment told it that it leads"
            assert leader.assignment() == leader_partitions
            assert wire.of("SyncGroupRequest")[-1].message.assignments == [], "it did not compute"
            await follower.getmany(timeout_ms=500)
            assert listener.events[seen:] == []

            kept = follower.assignment()
            kafka_broker.add_partitions(unique_topic, 6)
            await produce(bootstrap, unique_topic, 60)
            await _first_record_from([leader, follower], unique_topic, {4, 5}, within=30)
            await _settle(leader, follower)
            assert kept <= follower.assignment(), "the follower kept what it had"
            assert [kind for kind, _, _ in listener.events[seen:]] == ["assigned"], (
                "new partitions are nobody's: handed out in one cooperative round, nothing revoked"
            )
        finally:
            await leader.stop()


async def test_partitions_added_while_the_leader_was_down_are_found_by_the_audit(
    kafka_broker: EmbeddedKafka, unique_topic: str, unique_group: str
) -> None:
    kafka_broker.create_topic(unique_topic, 2)
    bootstrap = kafka_broker.bootstrap_servers
    leader = _static([unique_topic], bootstrap, unique_group, "leader")
    await leader.start()
    await until_assigned(leader)
    follower = _static([unique_topic], bootstrap, unique_group, "follower")
    async with follower:
        await _settle(leader, follower)
        await leader.stop()
        kafka_broker.add_partitions(unique_topic, 4)  # Java's KIP-814 leader never notices this
        leader = _static([unique_topic], bootstrap, unique_group, "leader")
        await leader.start()
        try:
            await produce(bootstrap, unique_topic, 40)
            await _first_record_from([leader, follower], unique_topic, {2, 3}, within=30)
            assert leader.is_leader
        finally:
            await leader.stop()

"""KIP-814 and beyond, on the real broker: a returning leader that does not compute still leads."""

from __future__ import annotations

import time
from typing import Any

import pytest

from staticconsumer.consumer import StaticConsumer
from staticconsumer.testing import EmbeddedKafka

from .support import FAST, RecordingListener, RequestRecorder, eventually, produce, until_assigned

pytestmark = [pytest.mark.kafka, pytest.mark.both_versions]

WATCH = {**FAST, "metadata_max_age_ms": 2000}
"""The leader re-reads metadata every 2 s in these tests (Java's default is 5 min)."""


async def _settle(*consumers: StaticConsumer, within: float = 30) -> None:
    async def stable() -> bool:
        for consumer in consumers:
            await consumer.getmany(timeout_ms=50)
        generations = {c.generation for c in consumers}
        return all(c.assignment() for c in consumers) and len(generations) == 1

    await eventually(stable, within, "every member owns partitions in one generation")


async def _first_records_from(
    consumers: list[StaticConsumer], wanted: dict[str, set[int]], within: float
) -> dict[str, float]:
    """Poll every member until each topic of ``wanted`` delivered a record from one of its partitions;
    returns when each did. One loop for all topics: a batch may carry records of several, and waiting for
    them in turn would drop the next topic's records that arrived while waiting for the first."""
    deadline = time.monotonic() + within
    seen: dict[str, float] = {}
    while time.monotonic() < deadline:
        for consumer in consumers:
            batch = await consumer.getmany(timeout_ms=50)
            for tp, records in batch.items():
                if records and tp.topic not in seen and tp.partition in wanted.get(tp.topic, set()):
                    seen[tp.topic] = time.monotonic()
            if len(seen) == len(wanted):
                return seen
    missing = {topic: sorted(partitions) for topic, partitions in wanted.items() if topic not in seen}
    raise AssertionError(f"no record from {missing} within {within}s")


async def _first_record_from(
    consumers: list[StaticConsumer], topic: str, partitions: set[int], within: float
) -> float:
    return (await _first_records_from(consumers, {topic: partitions}, within))[topic]


def _static(topics: list[str], bootstrap: str, group: str, instance: str, **extra: Any) -> StaticConsumer:
    return StaticConsumer(
        *topics, bootstrap_servers=bootstrap, group_id=group, group_instance_id=instance, **{**WATCH, **extra}
    )


async def test_leader_restart_keeps_everything_then_new_partitions_are_consumed(
    kafka_broker: EmbeddedKafka, unique_topic: str, unique_group: str
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    shared, follower_only = f"{unique_topic}-shared", f"{unique_topic}-mine"
    kafka_broker.create_topic(shared, 4)
    kafka_broker.create_topic(follower_only, 2)
    leader = _static([shared], bootstrap, unique_group, "leader")
    await leader.start()
    await until_assigned(leader)
    listener = RecordingListener()
    follower = _static([shared, follower_only], bootstrap, unique_group, "follower", listener=listener)
    async with follower:
        await _settle(leader, follower)
        assert leader.is_leader
        assert not follower.is_leader
        generation, leader_partitions = leader.generation, leader.assignment()
        follower_events = len(listener.events)

        await leader.stop()
        wire = RequestRecorder()
        leader = _static([shared], bootstrap, unique_group, "leader", request_hook=wire)
        await leader.start()
        try:
            await until_assigned(leader)
            assert leader.generation == generation, (
                "a leader restart within the session timeout: no rebalance"
            )
            assert leader.is_leader, "SkipAssignment told the returning leader that it leads"
            assert leader.assignment() == leader_partitions
            syncs = wire.of("SyncGroupRequest")
            assert syncs[-1].message.assignments == [], "it did not compute: SyncGroup without assignments"
            await follower.getmany(timeout_ms=500)
            assert listener.events[follower_events:] == [], "no follower saw a revoke"

            grown_at = time.monotonic()
            kafka_broker.add_partitions(shared, 6)
            kafka_broker.add_partitions(follower_only, 3)
            await produce(bootstrap, shared, 60)
            await produce(bootstrap, follower_only, 30)
            wanted = {shared: {4, 5}, follower_only: {2}}
            seen = await _first_records_from([leader, follower], wanted, within=30)
            shared_at, mine_at = seen[shared], seen[follower_only]
            print(
                f"Kafka {kafka_broker.version}: first record from a new partition "
                f"{shared_at - grown_at:.2f}s (shared topic) / {mine_at - grown_at:.2f}s (follower-only "
                f"topic) after the increase; metadata refresh 2 s"
            )
            assert shared_at - grown_at < 2 * 2 + 6, "within twice the refresh interval plus a rebalance"
        finally:
            await leader.stop()


async def test_partitions_added_while_the_leader_was_down_are_found_by_the_audit(
    kafka_broker: EmbeddedKafka, unique_topic: str, unique_group: str
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    kafka_broker.create_topic(unique_topic, 2)
    leader = _static([unique_topic], bootstrap, unique_group, "leader")
    await leader.start()
    await until_assigned(leader)
    follower = _static([unique_topic], bootstrap, unique_group, "follower")
    async with follower:
        await _settle(leader, follower)
        assert leader.is_leader
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


async def test_a_static_restart_with_a_new_topic_gets_it_assigned(
    kafka_broker: EmbeddedKafka, unique_topic: str, unique_group: str
) -> None:
    """KAFKA-12759: the broker replaces the member in place; no one assigns the new topic."""
    bootstrap = kafka_broker.bootstrap_servers
    old, new = f"{unique_topic}-old", f"{unique_topic}-new"
    kafka_broker.create_topic(old, 2)
    kafka_broker.create_topic(new, 2)
    leader = _static([old], bootstrap, unique_group, "leader")
    async with leader:
        await until_assigned(leader)
        member = _static([old], bootstrap, unique_group, "member")
        await member.start()
        await _settle(leader, member)
        await member.stop()
        member = _static([old, new], bootstrap, unique_group, "member")  # new configuration, same id
        async with member:
            await produce(bootstrap, new, 20)
            started = time.monotonic()
            await _first_record_from([leader, member], new, {0, 1}, within=30)
            print(
                f"Kafka {kafka_broker.version}: new topic consumed "
                f"{time.monotonic() - started:.2f}s after the restart"
            )


async def test_below_join_group_v9_a_returning_leader_guesses_and_keeps_the_duties(
    kafka_broker: EmbeddedKafka, unique_topic: str, unique_group: str
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    kafka_broker.create_topic(unique_topic, 2)
    old_client = {"api_version_caps": {"JoinGroup": 8}}
    leader = _static([unique_topic], bootstrap, unique_group, "leader", **old_client)
    await leader.start()
    await until_assigned(leader)
    follower = _static([unique_topic], bootstrap, unique_group, "follower", **old_client)
    async with follower:
        await _settle(leader, follower)
        generation = leader.generation
        await leader.stop()
        leader = _static([unique_topic], bootstrap, unique_group, "leader", **old_client)
        await leader.start()
        try:
            await until_assigned(leader)
            assert leader.generation == generation
            assert not leader.is_leader, "below v9 the broker names the old leader id"
            assert leader._membership is not None
            assert leader._membership.snapshot.leadership_guessed, "but it carries our instance id"
            grown_at = time.monotonic()
            kafka_broker.add_partitions(unique_topic, 3)
            await produce(bootstrap, unique_topic, 30)
            seen_at = await _first_record_from([leader, follower], unique_topic, {2}, within=30)
            print(
                f"Kafka {kafka_broker.version}, JoinGroup v8: new partition consumed "
                f"{seen_at - grown_at:.2f}s after the increase"
            )
        finally:
            await leader.stop()


async def test_the_leaders_metadata_names_its_topics_and_creates_none(
    kafka_broker: EmbeddedKafka, unique_topic: str
) -> None:
    """Before each assignment the leader asks for the group's topics by name (not every topic of the
    cluster), and a subscribed topic that does not exist is left out, never auto-created."""
    from staticconsumer import _aiokafka

    kafka_broker.create_topic(unique_topic, 3)
    kafka_broker.create_topic(f"{unique_topic}-other", 1)
    client = _aiokafka.new_client(bootstrap_servers=kafka_broker.bootstrap_servers)
    await client.bootstrap()
    try:
        named = await _aiokafka.topic_partitions(client, frozenset({unique_topic, f"{unique_topic}-absent"}))
        assert {topic: [row.partition for row in rows] for topic, rows in named.items()} == {
            unique_topic: [0, 1, 2]
        }
        assert await _aiokafka.topic_partitions(client, frozenset()) == {}
        everything = await _aiokafka.topic_partitions(client, None)
        assert {unique_topic, f"{unique_topic}-other"} <= set(everything)
        assert f"{unique_topic}-absent" not in everything, "naming a missing topic must not create it"
    finally:
        await client.close()

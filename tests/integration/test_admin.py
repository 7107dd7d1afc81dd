"""GroupAdmin against the real broker: describe static members, list groups, remove members by instance id."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest
from aiokafka import AIOKafkaProducer

from staticconsumer.admin import GroupAdmin
from staticconsumer.consumer import StaticConsumer
from staticconsumer.errors import UnknownMemberIdError
from staticconsumer.membership import TopicPartition
from staticconsumer.testing import EmbeddedKafka

from .support import FAST, eventually

pytestmark = pytest.mark.kafka


def _member(bootstrap: str, topic: str, group: str, instance_id: str, **overrides: object) -> StaticConsumer:
    settings = {**FAST, **overrides}
    return StaticConsumer(
        topic, bootstrap_servers=bootstrap, group_id=group, group_instance_id=instance_id, **settings
    )


async def _all_assigned(consumers: list[StaticConsumer], partitions: int, within: float = 30.0) -> None:
    """Poll every consumer until together they own all partitions, each exactly once."""
    deadline = time.monotonic() + within
    while True:
        await asyncio.gather(*(c.getmany(timeout_ms=200) for c in consumers))
        owned = [tp for c in consumers for tp in c.assignment()]
        if len(owned) == partitions == len(set(owned)) and all(c.assignment() for c in consumers):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"not all {partitions} partitions assigned within {within}s: {owned}")


@pytest.mark.both_versions
async def test_describe_shows_instance_ids_and_decoded_assignments(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=4)
    bootstrap = kafka_broker.bootstrap_servers
    consumers = [_member(bootstrap, topic, unique_group, f"pod-{i}") for i in range(2)]
    for consumer in consumers:
        await consumer.start()
    try:
        await _all_assigned(consumers, 4)
        owned = {c.member_id: set(c.assignment()) for c in consumers}
        async with GroupAdmin(bootstrap_servers=bootstrap) as admin:
            described = await admin.describe_group(unique_group)
            listed = {g.group_id: g for g in await admin.list_groups()}
    finally:
        for consumer in consumers:
            await consumer.stop()

    assert (described.state, described.protocol_type, described.protocol) == ("Stable", "consumer", "range")
    assert sorted(m.group_instance_id or "" for m in described.members) == ["pod-0", "pod-1"]
    for consumer in consumers:
        member = described.member(consumer.settings.group_instance_id or "")
        assert member is not None
        assert member.member_id == consumer.member_id
        assert member.member_id.startswith(f"{member.group_instance_id}-")
        assert member.client_id == f"consumer-{unique_group}-{member.group_instance_id}"
        assert member.host
        assert member.subscription == (topic,)
        decoded = {TopicPartition(tp.topic, p) for tp in member.assignment for p in tp.partitions}
        assert decoded == owned[member.member_id], "the decoded assignment is what the member consumes"
    assert listed[unique_group].protocol_type == "consumer"
    assert listed[unique_group].state == "Stable"


async def _produce_to(bootstrap: str, topic: str, partitions: list[int], tag: str) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        for partition in partitions:
            await producer.send_and_wait(topic, tag.encode(), partition=partition)
    finally:
        await producer.stop()


async def _seconds_until_taken_over(
    bootstrap: str, topic: str, group: str, session_timeout_ms: int, remove: bool
) -> float:
    """Two static members; pod-1 goes offline (a static member sends no LeaveGroup). Seconds from then
    until pod-0 has consumed a record from each of pod-1's partitions: with ``remove`` the admin removes
    pod-1 at once, else the group waits for pod-1's session to time out."""
    survivor = _member(bootstrap, topic, group, "pod-0", session_timeout_ms=session_timeout_ms)
    leaving = _member(bootstrap, topic, group, "pod-1", session_timeout_ms=session_timeout_ms)
    await survivor.start()
    await leaving.start()
    try:
        await _all_assigned([survivor, leaving], 4)
        orphaned = sorted(tp.partition for tp in leaving.assignment())
        await leaving.stop()
        offline_at = time.monotonic()
        await _produce_to(bootstrap, topic, orphaned, "after-offline")
        if remove:
            async with GroupAdmin(bootstrap_servers=bootstrap) as admin:
                result = await admin.remove_members(group, ["pod-1"], reason="scaled down")
            assert result.all_removed, result
        seen: set[int] = set()
        while not set(orphaned) <= seen:
            batch = await survivor.getmany(timeout_ms=100)
            for tp, records in batch.items():
                if any(r.value == b"after-offline" for r in records):
                    seen.add(tp.partition)
            if time.monotonic() - offline_at > 60:
                raise AssertionError(f"pod-1's partitions {orphaned} not consumed within 60 s (saw {seen})")
        return time.monotonic() - offline_at
    finally:
        await survivor.stop()
        await leaving.stop()


@pytest.mark.both_versions
async def test_removing_an_offline_static_member_rebalances_at_once(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    session_timeout_ms = 10_000
    removed_topic, waited_topic = create_topic(f"{unique_group}-r", 4), create_topic(f"{unique_group}-w", 4)
    bootstrap = kafka_broker.bootstrap_servers
    by_removal, by_timeout = await asyncio.gather(
        _seconds_until_taken_over(bootstrap, removed_topic, f"{unique_group}-r", session_timeout_ms, True),
        _seconds_until_taken_over(bootstrap, waited_topic, f"{unique_group}-w", session_timeout_ms, False),
    )
    print(
        f"\noffline static member's partitions consumed by the others after: "
        f"{by_removal:.2f} s with remove_members, {by_timeout:.2f} s waiting for the "
        f"{session_timeout_ms / 1000:.0f} s session timeout (Kafka {kafka_broker.version})"
    )
    assert by_timeout >= session_timeout_ms / 1000 * 0.8, "without removal the session timeout must pass"
    assert by_removal < 3.0
    assert by_removal * 4 < by_timeout


@pytest.mark.both_versions
async def test_batch_with_an_unknown_instance_id_removes_the_others_and_reports_it(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=3)
    bootstrap = kafka_broker.bootstrap_servers
    consumers = [_member(bootstrap, topic, unique_group, f"pod-{i}") for i in range(3)]
    for consumer in consumers:
        await consumer.start()
    try:
        await _all_assigned(consumers, 3)
        await consumers[1].stop()
        await consumers[2].stop()
        async with GroupAdmin(bootstrap_servers=bootstrap) as admin:
            result = await admin.remove_members(
                unique_group, ["pod-1", "no-such-pod", "pod-2"], reason="gone"
            )
            assert [m.group_instance_id for m in result.removed] == ["pod-1", "pod-2"]
            assert [m.group_instance_id for m in result.failed] == ["no-such-pod"]
            error = result.error_for("no-such-pod")
            assert isinstance(error, UnknownMemberIdError)
            assert error.code == 25
            assert "no-such-pod" in str(error)
            await _all_assigned(consumers[:1], 3)

            async def only_pod_0_left() -> bool:
                described = await admin.describe_group(unique_group)
                return [m.group_instance_id for m in described.members] == ["pod-0"]

            await eventually(only_pod_0_left, 20, "the group lists only pod-0")
            again = await admin.remove_members(unique_group, ["pod-1"])
            assert isinstance(again.error_for("pod-1"), UnknownMemberIdError), "already removed"
            nowhere = await admin.remove_members(f"{unique_group}-missing", ["pod-0", "pod-1"])
            assert all(isinstance(m.error, UnknownMemberIdError) for m in nowhere.members)
            missing = await admin.describe_group(f"{unique_group}-missing")
            assert (missing.exists, missing.members) == (False, ())
    finally:
        for consumer in consumers:
            await consumer.stop()

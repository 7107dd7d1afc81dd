"""StaticConsumer with group_protocol=consumer (KIP-848) against the real 4.x broker: joining with its own
member id, consuming and committing with the member epoch, stop() leaving with -2 (or -1 with
leave_group), the next run taking the same partitions, and Kafka 3.9 refused with a clear error."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from staticconsumer.consumer import StaticConsumer
from staticconsumer.errors import ConsumerProtocolUnsupportedError
from staticconsumer.membership import TopicPartition
from staticconsumer.testing import EmbeddedKafka

from .support import RecordingListener, RequestRecorder, committed_offsets, consume, produce

pytestmark = pytest.mark.kafka

CONSUMER = {"group_protocol": "consumer", "auto_offset_reset": "earliest"}


def _consumer(
    kafka: EmbeddedKafka, topic: str, group: str, instance: str | None, **extra: Any
) -> StaticConsumer:
    return StaticConsumer(
        topic,
        bootstrap_servers=kafka.bootstrap_servers,
        group_id=group,
        group_instance_id=instance,
        **{**CONSUMER, **extra},
    )


async def _until_owns(
    consumer: StaticConsumer, count: int, within: float = 60.0
) -> frozenset[TopicPartition]:
    deadline = asyncio.get_running_loop().time() + within
    while len(consumer.assignment()) != count:
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"owns {sorted(consumer.assignment())}, expected {count} partitions")
        await consumer.getmany(timeout_ms=200)
    return consumer.assignment()


async def test_a_static_member_joins_consumes_commits_and_leaves_with_minus_2(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=3)
    await produce(kafka_broker.bootstrap_servers, topic, 30)
    wire = RequestRecorder()
    listener = RecordingListener()
    consumer = _consumer(
        kafka_broker,
        topic,
        unique_group,
        "pod-0",
        request_hook=wire,
        enable_auto_commit=False,
        listener=listener,
    )
    async with consumer:
        await consume(consumer, 30, within=60)
        owned = consumer.assignment()
        assert len(owned) == 3
        await consumer.commit()
        member_id = consumer.member_id
        epoch = consumer.generation
        assert epoch >= 1
    beats = [s.message for s in wire.of("ConsumerGroupHeartbeatRequest")]
    assert beats[0].member_epoch == 0
    assert beats[0].member_id == member_id, "v1: the member id is the client's own"
    assert beats[0].instance_id == "pod-0"
    assert all(s.version == 1 for s in wire.of("ConsumerGroupHeartbeatRequest"))
    leave = beats[-1]
    assert (leave.member_epoch, leave.instance_id, leave.member_id) == (-2, "pod-0", member_id)
    commits = wire.of("OffsetCommitRequest")
    assert commits
    assert {c.message.generation_id_or_member_epoch for c in commits} == {epoch}
    assert commits[0].version >= 9
    committed = await committed_offsets(kafka_broker.bootstrap_servers, unique_group)
    assert set(committed) == {TopicPartition(topic, p) for p in range(3)}
    assert sum(committed.values()) == 30, "every record consumed is committed"
    assert listener.kinds() == ["assigned", "revoked"], "one assignment, one revoke on stop"

    # the next run with the instance id gets the same partitions in its first assignment
    again = _consumer(kafka_broker, topic, unique_group, "pod-0")
    async with again:
        assert await _until_owns(again, 3, within=20) == owned
        assert again.member_id != member_id


async def test_stop_with_leave_group_leaves_for_good(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=2)
    wire = RequestRecorder()
    first = _consumer(kafka_broker, topic, unique_group, "pod-0", request_hook=wire)
    second = _consumer(kafka_broker, topic, unique_group, "pod-1")
    await first.start()
    await second.start()
    try:
        await asyncio.gather(_until_owns(first, 1), _until_owns(second, 1))
        await first.stop(leave_group=True)
        assert wire.of("ConsumerGroupHeartbeatRequest")[-1].message.member_epoch == -1
        await _until_owns(second, 2, within=30)
    finally:
        await first.stop()
        await second.stop()


@pytest.mark.both_versions
async def test_kafka_4_starts_and_3_9_is_refused_with_a_clear_error(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=1)
    if not kafka_broker.version.startswith("3."):
        async with _consumer(kafka_broker, topic, unique_group, "pod-0") as consumer:
            await _until_owns(consumer, 1)
        return
    topic = create_topic(partitions=1)
    consumer = _consumer(kafka_broker, topic, unique_group, "pod-0")
    with pytest.raises(ConsumerProtocolUnsupportedError) as raised:
        await consumer.start()
    assert "3.9" in str(raised.value)
    assert "group_protocol=classic" in str(raised.value)

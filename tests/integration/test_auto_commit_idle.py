"""Auto-commit sends offsets only when they moved (issue 27: idle CPU): an idle consumer's commit every
interval crossed to the membership thread, to the coordinator and back for nothing, while Kafka keeps a
live group's offsets however long ago they were committed."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from staticconsumer.consumer import StaticConsumer
from staticconsumer.testing import EmbeddedKafka

from .support import FAST, RequestRecorder, committed_offsets, consume, produce


async def _idle(consumer: StaticConsumer, seconds: float) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while asyncio.get_running_loop().time() < deadline:
        await consumer.getmany(timeout_ms=100)


async def test_an_idle_consumer_commits_once_then_only_when_its_offsets_move(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=2)
    await produce(kafka_broker.bootstrap_servers, topic, 6)
    wire = RequestRecorder()
    consumer = StaticConsumer(
        topic,
        bootstrap_servers=kafka_broker.bootstrap_servers,
        group_id=unique_group,
        group_instance_id="idle-0",
        request_hook=wire,
        auto_commit_interval_ms=200,
        **FAST,
    )
    await consumer.start()
    try:
        assert len(await consume(consumer, 6)) == 6
        await _idle(consumer, 1.0)
        after_first = len(wire.of("OffsetCommitRequest"))
        assert after_first >= 1, "the consumed offsets are committed"
        await _idle(consumer, 1.5)  # seven intervals with nothing consumed
        assert len(wire.of("OffsetCommitRequest")) == after_first, "unchanged offsets are not sent again"
        await produce(kafka_broker.bootstrap_servers, topic, 2, start=6)
        assert len(await consume(consumer, 2)) == 2
        await _idle(consumer, 1.0)
        assert len(wire.of("OffsetCommitRequest")) > after_first, "offsets that moved are committed"
        committed = await committed_offsets(kafka_broker.bootstrap_servers, unique_group)
        assert sum(committed.values()) == 8
    finally:
        await consumer.stop()

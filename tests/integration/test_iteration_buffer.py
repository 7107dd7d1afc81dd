"""``async for`` and ``getone`` hand records out of a buffered segment per partition whose position is
settled only when read: what the application sees (positions, commits, seeks, pauses, revokes) must be
as if each record had moved the position as it was handed out."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from staticconsumer.consumer import StaticConsumer
from staticconsumer.membership import TopicPartition
from staticconsumer.testing import EmbeddedKafka

from .support import FAST, committed_offsets, produce

pytestmark = pytest.mark.kafka


async def test_iteration_mid_segment_positions_commits_seek_and_pause(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=1)
    bootstrap = kafka_broker.bootstrap_servers
    await produce(bootstrap, topic, 40)
    tp = TopicPartition(topic, 0)
    async with StaticConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=unique_group,
        group_instance_id="seg-0",
        enable_auto_commit=False,
        **FAST,
    ) as consumer:
        seen: list[int] = []
        async for record in consumer:  # one fetch buffers all 40: every step below is mid-segment
            seen.append(record.offset)
            if record.offset == 4:
                break
        assert seen == [0, 1, 2, 3, 4]
        assert await consumer.position(tp) == 5, "the position is past the records handed out, no further"
        await consumer.commit()
        assert await committed_offsets(bootstrap, unique_group) == {tp: 5}

        assert (await consumer.getone()).offset == 5
        consumer.seek(tp, 20)  # buffered 6..39 are dropped: the sought offset comes next
        assert (await consumer.getone()).offset == 20
        consumer.seek(tp, 2)  # backwards too, past what the fetcher already read
        assert [(await consumer.getone()).offset for _ in range(3)] == [2, 3, 4]

        consumer.pause(tp)  # 5..39 are buffered: none of them is handed over while paused
        assert await consumer.getmany(timeout_ms=300) == {}
        assert consumer._partitions.take_one() is None
        consumer.resume(tp)
        rest = [(await consumer.getone()).offset for _ in range(35)]
        assert rest == list(range(5, 40)), "resumed where it paused, every record once, in order"
        assert await consumer.position(tp) == 40
        await consumer.commit()
        assert await committed_offsets(bootstrap, unique_group) == {tp: 40}


async def test_getmany_after_iteration_continues_from_the_segment(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    """getmany after a partly handed-out segment returns its remaining records first, in order, once."""
    topic = create_topic(partitions=1)
    bootstrap = kafka_broker.bootstrap_servers
    await produce(bootstrap, topic, 30)
    tp = TopicPartition(topic, 0)
    async with StaticConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=unique_group,
        group_instance_id="seg-1",
        enable_auto_commit=False,
        **FAST,
    ) as consumer:
        assert [(await consumer.getone()).offset for _ in range(3)] == [0, 1, 2]
        batch = await consumer.getmany(timeout_ms=5_000, max_records=10)
        assert [r.offset for r in batch[tp]] == list(range(3, 13))
        assert (await consumer.getone()).offset == 13
        assert await consumer.position(tp) == 14


async def test_resubscribe_drops_the_buffered_segment_and_commits_only_what_was_handed_out(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    """Partitions of a topic no longer subscribed stop at once: records buffered (and read ahead) for
    them are never handed out, and the revoke commits the position of the last one that was."""
    old = create_topic(partitions=1)
    new = create_topic(f"{old}-new", partitions=1)
    bootstrap = kafka_broker.bootstrap_servers
    await produce(bootstrap, old, 30)
    await produce(bootstrap, new, 5)
    async with StaticConsumer(
        old,
        bootstrap_servers=bootstrap,
        group_id=unique_group,
        group_instance_id="seg-2",
        enable_auto_commit=True,
        **FAST,
    ) as consumer:
        assert [(await consumer.getone()).offset for _ in range(4)] == [0, 1, 2, 3]
        consumer.subscribe([new])
        records = [await consumer.getone() for _ in range(5)]
        assert {r.topic for r in records} == {new}, "no buffered record of the revoked topic came back"
        assert [r.offset for r in records] == [0, 1, 2, 3, 4]
    committed = await committed_offsets(bootstrap, unique_group)
    assert committed[TopicPartition(old, 0)] == 4, "the revoke committed what was handed out, no more"

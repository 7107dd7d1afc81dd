"""aiokafka 0.14's runtime behaviour, kept by StaticConsumer against a real broker (a service ported by
changing one import relies on each): start() waits for the first assignment, the eager first join runs
``on_partitions_revoked(set())``, a poll waiting when stop() runs ends as aiokafka's does, seek() then
getmany() reads from the sought offset, seek's argument errors, and a session timeout the broker refuses
is raised from start()."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest

from staticconsumer.consumer import StaticConsumer
from staticconsumer.errors import ConsumerStoppedError, InvalidSessionTimeoutError
from staticconsumer.membership import TopicPartition
from staticconsumer.testing import EmbeddedKafka

from .support import FAST, RecordingListener, produce

pytestmark = pytest.mark.kafka


def _consumer(kafka_broker: EmbeddedKafka, topic: str, group: str, **options: object) -> StaticConsumer:
    return StaticConsumer(
        topic,
        bootstrap_servers=kafka_broker.bootstrap_servers,
        group_id=group,
        enable_auto_commit=False,
        **{**FAST, "group_instance_id": "behaviour-0", **options},  # type: ignore[arg-type]
    )


async def test_start_returns_assigned_with_the_empty_revoke_before_the_first_join(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=2)
    await produce(kafka_broker.bootstrap_servers, topic, 4)
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    listener = RecordingListener()
    consumer = _consumer(kafka_broker, topic, unique_group, listener=listener, assignors=["range"])
    await consumer.start()
    try:
        assert consumer.assignment() == {tp0, tp1}, "start() waits for the first assignment"
        assert [(kind, parts) for kind, parts, _ in listener.events] == [
            ("revoked", frozenset()),
            ("assigned", frozenset({tp0, tp1})),
        ], "eager: on_partitions_revoked(set()) before the first join, as aiokafka"
        assert await consumer.seek_to_committed() == {tp0: None, tp1: None}
        consumer.seek(tp1, 1)
        assert await consumer.position(tp1) == 1
    finally:
        await consumer.stop()
    # A static restart: start() waits for the same partitions again, and its join moves nobody.
    listener.events.clear()
    again = _consumer(kafka_broker, topic, unique_group, listener=listener, assignors=["range"])
    began = time.monotonic()
    await again.start()
    try:
        assert again.assignment() == {tp0, tp1}
        assert time.monotonic() - began < 5.0, "a static restart is quick: no rebalance to wait for"
    finally:
        await again.stop()


async def test_cooperative_first_join_has_no_empty_revoke(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=1)
    listener = RecordingListener()
    consumer = _consumer(
        kafka_broker, topic, unique_group, listener=listener, assignors=["cooperative-sticky"]
    )
    async with consumer:
        assert consumer.assignment() == {TopicPartition(topic, 0)}
        assert listener.kinds() == ["assigned"]


async def test_start_waits_for_the_first_assignment_under_the_consumer_protocol(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=2)
    listener = RecordingListener()
    consumer = StaticConsumer(
        topic,
        bootstrap_servers=kafka_broker.bootstrap_servers,
        group_id=unique_group,
        group_instance_id="behaviour-848",
        group_protocol="consumer",
        listener=listener,
    )
    began = time.monotonic()
    async with consumer:
        assert time.monotonic() - began < 10.0
        # The broker's first answer may carry an empty target (its assignor runs meanwhile): start()
        # returns after the first reconciliation, as aiokafka's after the first (maybe empty) assignment.
        assert listener.kinds() == ["assigned"], "the broker assigns: nothing to revoke before joining"
        assert consumer.assignment() == listener.events[0][1]


async def test_start_with_nothing_to_assign_returns_after_the_first_join(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=1)
    first = _consumer(kafka_broker, topic, unique_group, assignors=["range"])
    second = _consumer(
        kafka_broker, topic, unique_group, assignors=["range"], group_instance_id="behaviour-1"
    )
    await first.start()
    try:
        # The second join rebalances the group: the first must rejoin within its poll deadline.
        polling = asyncio.ensure_future(_poll_until_cancelled(first))
        try:
            await asyncio.wait_for(second.start(), 30)
            assert second.generation > 0
            assert len(first.assignment() | second.assignment()) <= 1
        finally:
            polling.cancel()
            await second.stop()
    finally:
        await first.stop()


async def _poll_until_cancelled(consumer: StaticConsumer) -> None:
    while True:
        await consumer.getmany(timeout_ms=100)


async def test_a_session_timeout_the_broker_refuses_is_raised_from_start(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=1)
    consumer = _consumer(kafka_broker, topic, unique_group, session_timeout_ms=300, heartbeat_interval_ms=50)
    with pytest.raises(InvalidSessionTimeoutError) as raised:
        await asyncio.wait_for(consumer.start(), 30)
    message = str(raised.value)
    assert "session.timeout.ms=300" in message
    assert "group.min.session.timeout.ms" in message
    assert "6000 to 1800000 ms by default" in message
    assert consumer.assignment() == frozenset()


async def test_a_poll_waiting_when_stop_runs_ends_as_aiokafkas(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=1)
    consumer = _consumer(kafka_broker, topic, unique_group)
    await consumer.start()
    many = asyncio.ensure_future(consumer.getmany(timeout_ms=20_000))
    one = asyncio.ensure_future(consumer.getone())

    async def iterate() -> list[object]:
        return [record async for record in consumer]

    loop = asyncio.ensure_future(iterate())
    await asyncio.sleep(0.5)
    assert not any(task.done() for task in (many, one, loop)), "all three wait for records"
    began = time.monotonic()
    await consumer.stop()
    assert await asyncio.wait_for(many, 5) == {}, "getmany returns nothing, as aiokafka's"
    with pytest.raises(ConsumerStoppedError):
        await asyncio.wait_for(one, 5)
    assert await asyncio.wait_for(loop, 5) == [], "async for ends (StopAsyncIteration)"
    assert time.monotonic() - began < 10
    with pytest.raises(ConsumerStoppedError):  # called after stop(): refused, as aiokafka
        await consumer.getmany(timeout_ms=10)
    with pytest.raises(ConsumerStoppedError):  # a new loop over a stopped consumer must not spin
        await iterate()


async def test_seek_then_getmany_reads_from_the_sought_offset(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    """aiokafka's seek tests: getone leaves the rest of a fetch buffered and reads nothing ahead, so a
    seek is served by one fetch from the new offset, well within getmany(timeout_ms=500)."""
    topic = create_topic(partitions=1)
    await produce(kafka_broker.bootstrap_servers, topic, 3)
    tp = TopicPartition(topic, 0)
    async with _consumer(kafka_broker, topic, unique_group, fetch_max_wait_ms=3000) as consumer:
        assert (await consumer.getone()).offset == 0
        await asyncio.sleep(0.3)  # time for a read ahead to reach the broker, if one were sent
        consumer.seek(tp, 0)  # backward
        assert [(await consumer.getone()).offset for _ in range(2)] == [0, 1]
        await asyncio.sleep(0.3)
        consumer.seek(tp, 1)
        batch = await consumer.getmany(timeout_ms=500)
        assert [r.offset for r in batch.get(tp, [])] == [1, 2]

    async with _consumer(kafka_broker, topic, unique_group + "-forward", fetch_max_wait_ms=3000) as consumer:
        assert (await consumer.getone()).offset == 0
        await asyncio.sleep(0.3)
        consumer.seek(tp, 2)  # forward, past what is buffered
        batch = await consumer.getmany(timeout_ms=500)
        assert [r.offset for r in batch.get(tp, [])] == [2]
        assert await consumer.getmany(timeout_ms=0) == {}


async def test_seek_argument_errors_are_aiokafkas(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=1)
    tp = TopicPartition(topic, 0)
    async with _consumer(kafka_broker, topic, unique_group) as consumer:
        for bad in ("", "3", None, -1, 1.5):
            with pytest.raises(ValueError, match="offset"):
                consumer.seek(tp, bad)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="partitions"):
            await consumer.seek_to_beginning("not a partition")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="partitions"):
            await consumer.seek_to_end(1)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="partitions"):
            await consumer.seek_to_committed(None)  # type: ignore[arg-type]

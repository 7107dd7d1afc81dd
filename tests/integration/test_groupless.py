"""StaticConsumer(group_id=None) against a real broker: aiokafka's consumer without a group. Partitions
come from assign() or from subscribe() (all partitions of the topics), positions move with seek*, and no
group request ever leaves the client; what needs a group is refused as aiokafka refuses it."""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Callable
from typing import Any

import aiokafka.client
import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.errors import IllegalOperation

from staticconsumer import StaticConsumer
from staticconsumer.connection import ConnectionState
from staticconsumer.errors import ConsumerStoppedError, IllegalStateError
from staticconsumer.membership import TopicPartition
from staticconsumer.testing import EmbeddedKafka

from .support import eventually

pytestmark = pytest.mark.kafka

GROUP_APIS = {
    "FindCoordinatorRequest",
    "JoinGroupRequest",
    "SyncGroupRequest",
    "HeartbeatRequest",
    "LeaveGroupRequest",
    "OffsetCommitRequest",
    "OffsetFetchRequest",
    "ConsumerGroupHeartbeatRequest",
}


@pytest.fixture
def sent_requests(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The class name of every request any aiokafka client in the process sends while the test runs."""
    sent: list[str] = []
    original = aiokafka.client.AIOKafkaClient.send

    async def recording(self: Any, node_id: int, request: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(type(getattr(request, "message", request)).__name__)  # ours wrap a message
        return await original(self, node_id, request, *args, **kwargs)

    monkeypatch.setattr(aiokafka.client.AIOKafkaClient, "send", recording)
    return sent


async def _produce(bootstrap: str, topic: str, per_partition: dict[int, int]) -> None:
    """``count`` records to each partition, values ``p<partition>-<i>``."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        for partition, count in per_partition.items():
            for i in range(count):
                await producer.send(topic, f"p{partition}-{i}".encode(), partition=partition)
        await producer.flush()
    finally:
        await producer.stop()


def _groupless(bootstrap: str, *topics: str, **options: Any) -> StaticConsumer:
    return StaticConsumer(
        *topics,
        bootstrap_servers=bootstrap,
        group_id=None,
        auto_offset_reset="earliest",
        request_timeout_ms=5000,
        **options,
    )


async def _values(
    consumer: StaticConsumer, count: int, within: float = 15.0
) -> dict[TopicPartition, list[str]]:
    """getmany until ``count`` records came back: their values per partition, in order."""
    got: dict[TopicPartition, list[str]] = {}
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while sum(map(len, got.values())) < count:
        assert loop.time() < deadline, f"only {got} within {within}s"
        for tp, batch in (await consumer.getmany(timeout_ms=300)).items():
            got.setdefault(tp, []).extend(r.value.decode() for r in batch)
    return got


async def test_assign_seek_and_offsets_without_a_group(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], sent_requests: list[str]
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic(partitions=2)
    await _produce(bootstrap, topic, {0: 5, 1: 3})
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    threads_before = {t.name for t in threading.enumerate()}
    consumer = _groupless(bootstrap)
    assert isinstance(consumer, StaticConsumer)
    consumer.assign([tp0])  # before start(), as aiokafka allows
    assert consumer.assignment() == {tp0}
    async with consumer:
        assert consumer.connection_state is ConnectionState.CONNECTED
        assert await consumer.position(tp0) == 0
        assert await _values(consumer, 5) == {tp0: [f"p0-{i}" for i in range(5)]}
        assert consumer.highwater(tp0) == 5
        assert await consumer.end_offsets([tp0, tp1]) == {tp0: 5, tp1: 3}
        assert await consumer.beginning_offsets([tp0, tp1]) == {tp0: 0, tp1: 0}
        found = await consumer.offsets_for_times({tp1: 0})
        assert found[tp1] is not None
        assert found[tp1].offset == 0
        assert consumer.last_stable_offset(tp0) == 5  # no transactions: the high watermark
        assert consumer.last_poll_timestamp(tp0) is not None

        consumer.seek(tp0, 3)
        assert await consumer.position(tp0) == 3
        assert await _values(consumer, 2) == {tp0: ["p0-3", "p0-4"]}
        assert await consumer.seek_to_beginning(tp0)
        assert await consumer.position(tp0) == 0
        assert await consumer.seek_to_end()  # every assigned partition
        assert await consumer.position(tp0) == 5
        assert await consumer.getmany(timeout_ms=200) == {}

        consumer.assign([tp1])  # a new assignment replaces the old one
        assert consumer.assignment() == {tp1}
        assert await _values(consumer, 3) == {tp1: ["p1-0", "p1-1", "p1-2"]}
        with pytest.raises(IllegalStateError, match=rf"position\({topic}\[0\]\): not assigned"):
            await consumer.position(tp0)
        with pytest.raises(IllegalStateError, match=rf"seek\({topic}\[0\]\): not assigned"):
            consumer.seek(tp0, 1)

        assert consumer.member_id == ""
        assert consumer.generation == -1
        assert not consumer.is_leader
        new_threads = {t.name for t in threading.enumerate()} - threads_before
        assert not any("membership" in name for name in new_threads), new_threads
    assert sent_requests, "the recorder sees the fetcher's requests"
    assert GROUP_APIS.isdisjoint(sent_requests), sorted(GROUP_APIS & set(sent_requests))
    assert consumer.connection_state is ConnectionState.DISCONNECTED


async def test_getone_and_iteration_until_stop(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str]
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic()
    await _produce(bootstrap, topic, {0: 4})
    tp = TopicPartition(topic, 0)
    consumer = _groupless(bootstrap)
    async for _ in consumer:  # not started: the loop ends at once, as a group consumer's does
        pytest.fail("a consumer that is not running yields nothing")
    await consumer.start()
    try:
        consumer.assign([tp])
        first = await consumer.getone()
        assert (first.value, first.offset) == (b"p0-0", 0)
        assert (await consumer.getone(tp)).offset == 1
        seen: list[int] = []
        async for record in consumer:
            seen.append(record.offset)
            if record.offset == 3:
                break
        assert seen == [2, 3]

        async def iterate() -> list[bytes]:
            return [record.value async for record in consumer]

        loop_task = asyncio.create_task(iterate())
        await _produce(bootstrap, topic, {0: 1})
        await eventually(lambda: consumer.highwater(tp) == 5, 10, "the new record fetched")
    finally:
        await consumer.stop()
    assert await asyncio.wait_for(loop_task, 10) == [b"p0-0"], "stop() ends the loop"
    with pytest.raises(ConsumerStoppedError):
        await consumer.getone()
    with pytest.raises(ConsumerStoppedError):
        await consumer.getmany()
    with pytest.raises(ConsumerStoppedError):  # a new loop over a stopped consumer must not spin
        await iterate()


async def test_subscribe_without_a_group_takes_every_partition(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_topic: str, sent_requests: list[str]
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    first = create_topic(partitions=3)
    second = create_topic(f"{unique_topic}-second", partitions=2)
    third = create_topic(f"{unique_topic}-third")
    await _produce(bootstrap, first, {0: 1, 1: 2, 2: 1})
    await _produce(bootstrap, second, {0: 1, 1: 1})
    await _produce(bootstrap, third, {0: 1})
    async with _groupless(bootstrap, first) as consumer:
        assert consumer.subscription() == {first}
        assert consumer.assignment() == {TopicPartition(first, p) for p in range(3)}
        assert await _values(consumer, 4) == {
            TopicPartition(first, 0): ["p0-0"],
            TopicPartition(first, 1): ["p1-0", "p1-1"],
            TopicPartition(first, 2): ["p2-0"],
        }
        with pytest.raises(IllegalStateError, match="call unsubscribe\\(\\) first"):
            consumer.assign([TopicPartition(first, 0)])

        consumer.subscribe([second])  # on a running consumer: the other topic's partitions instead
        await eventually(
            lambda: consumer.assignment() == {TopicPartition(second, 0), TopicPartition(second, 1)},
            10,
            "the second topic's partitions",
        )
        assert await _values(consumer, 2) == {
            TopicPartition(second, 0): ["p0-0"],
            TopicPartition(second, 1): ["p1-0"],
        }

        consumer.unsubscribe()
        assert consumer.assignment() == frozenset()
        assert consumer.subscription() == frozenset()
        consumer.assign([TopicPartition(first, 1)])  # allowed once unsubscribed
        assert await _values(consumer, 2) == {TopicPartition(first, 1): ["p1-0", "p1-1"]}
        with pytest.raises(IllegalStateError, match="partitions were assigned with assign\\(\\)"):
            consumer.subscribe([first])
        consumer.unsubscribe()
        consumer.subscribe(pattern=re.escape(third) + "$")  # a pattern: the matching topics' partitions
        await eventually(lambda: consumer.subscription() == {third}, 10, "the pattern matched")
        assert await _values(consumer, 1) == {TopicPartition(third, 0): ["p0-0"]}
    assert GROUP_APIS.isdisjoint(sent_requests), sorted(GROUP_APIS & set(sent_requests))


async def test_pause_and_resume(kafka_broker: EmbeddedKafka, create_topic: Callable[..., str]) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic(partitions=2)
    await _produce(bootstrap, topic, {0: 2, 1: 2})
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    async with _groupless(bootstrap) as consumer:
        consumer.assign([tp0, tp1])
        consumer.pause(tp0)
        assert consumer.paused() == {tp0}
        assert await _values(consumer, 2) == {tp1: ["p1-0", "p1-1"]}
        assert await consumer.getmany(timeout_ms=300) == {}, "nothing from the paused partition"
        consumer.resume(tp0)
        assert consumer.paused() == frozenset()
        assert await _values(consumer, 2) == {tp0: ["p0-0", "p0-1"]}


async def test_what_needs_a_group_is_refused_as_aiokafka_refuses_it(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str]
) -> None:
    topic = create_topic()
    tp = TopicPartition(topic, 0)
    async with _groupless(kafka_broker.bootstrap_servers) as consumer:
        consumer.assign([tp])
        with pytest.raises(IllegalOperation, match=r"commit\(\) requires a group_id"):
            await consumer.commit()
        with pytest.raises(IllegalOperation, match=r"committed\(\) requires a group_id"):
            await consumer.committed(tp)
        with pytest.raises(IllegalOperation, match=r"seek_to_committed\(\) requires a group_id"):
            await consumer.seek_to_committed(tp)
        with pytest.raises(IllegalStateError, match=rf"seek_to_committed\({topic}\[1\]\): not assigned"):
            await consumer.seek_to_committed(TopicPartition(topic, 1))  # as aiokafka: checked first
        assert topic in await consumer.topics()
        await eventually(
            lambda: consumer.partitions_for_topic(topic) == {0}, 10, "the assigned topic's metadata"
        )
        with pytest.raises(IllegalStateError, match=r"already"):
            await consumer.start()

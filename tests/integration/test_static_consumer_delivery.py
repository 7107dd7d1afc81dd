"""Delivery guarantees and subscriptions against the real broker."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest
from aiokafka import AIOKafkaProducer

from staticconsumer.consumer import StaticConsumer
from staticconsumer.membership import TopicPartition
from staticconsumer.testing import EmbeddedKafka

from .support import FAST, committed_offsets, consume, eventually, produce

pytestmark = pytest.mark.kafka


async def test_rolling_restart_processes_every_record_and_commits_never_move_backwards(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=6)
    bootstrap = kafka_broker.bootstrap_servers
    total = 600
    processed: list[tuple[int, int, bytes]] = []
    regressions: list[str] = []
    stop_sampling = asyncio.Event()

    async def producer() -> None:
        kafka = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
        await kafka.start()
        try:
            for i in range(total):
                await kafka.send_and_wait(topic, f"v{i}".encode(), key=f"key-{i}".encode())
                await asyncio.sleep(0.01)
        finally:
            await kafka.stop()

    async def sample_commits() -> None:
        highest: dict[TopicPartition, int] = {}
        while not stop_sampling.is_set():
            for tp, offset in (await committed_offsets(bootstrap, unique_group)).items():
                if offset < highest.get(tp, -1):
                    regressions.append(f"{tp}: {highest[tp]} -> {offset}")
                highest[tp] = max(highest.get(tp, -1), offset)
            await asyncio.sleep(0.2)

    async def member(instance: str, run_for: float) -> None:
        consumer = StaticConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=unique_group,
            group_instance_id=instance,
            enable_auto_commit=False,
            **FAST,
        )
        async with consumer:
            deadline = time.monotonic() + run_for
            while time.monotonic() < deadline:
                batch = await consumer.getmany(timeout_ms=200)
                for rows in batch.values():
                    processed.extend((r.partition, r.offset, r.value) for r in rows)
                if batch:
                    await consumer.commit()

    sampler = asyncio.create_task(sample_commits())
    production = asyncio.create_task(producer())
    # Three members; each in turn is stopped and restarted with the same instance id.
    runs = [asyncio.create_task(member(f"m{i}", 4.0 + 3.0 * i)) for i in range(3)]
    restarts = [asyncio.create_task(_after(r, member(f"m{i}", 14.0 - 3.0 * i))) for i, r in enumerate(runs)]
    await production
    await asyncio.gather(*restarts)
    # Everything produced is committed by now; a last member drains whatever is left to be sure.
    last = StaticConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=unique_group,
        group_instance_id="m0",
        enable_auto_commit=False,
        **FAST,
    )
    async with last:
        end = time.monotonic() + 8
        while time.monotonic() < end and len({v for _, _, v in processed}) < total:
            batch = await last.getmany(timeout_ms=300)
            for rows in batch.values():
                processed.extend((r.partition, r.offset, r.value) for r in rows)
            if batch:
                await last.commit()
    stop_sampling.set()
    await sampler
    values = {v for _, _, v in processed}
    missing = {f"v{i}".encode() for i in range(total)} - values
    assert not missing, f"{len(missing)} records never processed, e.g. {sorted(missing)[:5]}"
    assert regressions == [], regressions
    duplicates = len(processed) - len(values)
    assert duplicates < total / 2, f"{duplicates} duplicates: restarts should re-deliver little"


async def _after(first: asyncio.Task[None], then: object) -> None:
    await first
    await then  # type: ignore[misc]


@pytest.mark.both_versions
async def test_subscription_by_pattern_picks_up_new_matching_topics(
    kafka_broker: EmbeddedKafka, unique_topic: str, unique_group: str
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    kafka_broker.create_topic(f"{unique_topic}-a", 2)
    kafka_broker.create_topic(f"other-{unique_topic}", 1)
    consumer = StaticConsumer(
        pattern=rf"{unique_topic}-.*",
        bootstrap_servers=bootstrap,
        group_id=unique_group,
        group_instance_id="p0",
        metadata_max_age_ms=1000,
        **FAST,
    )
    async with consumer:

        async def owns(count: int) -> bool:
            await consumer.getmany(timeout_ms=100)
            return len(consumer.assignment()) == count

        await eventually(lambda: owns(2), 20, "the matching topic's two partitions")
        assert {tp.topic for tp in consumer.assignment()} == {f"{unique_topic}-a"}
        kafka_broker.create_topic(f"{unique_topic}-b", 3)
        await eventually(lambda: owns(5), 20, "the new matching topic joins the subscription")
        await produce(bootstrap, f"{unique_topic}-b", 6)
        records = await consume(consumer, 6)
        assert {r.topic for r in records} == {f"{unique_topic}-b"}


async def test_getone_commits_only_what_it_returned_and_the_next_owner_resumes_there(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=1)
    bootstrap = kafka_broker.bootstrap_servers
    await produce(bootstrap, topic, 50)
    first = StaticConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=unique_group,
        group_instance_id="a",
        enable_auto_commit=False,
        **FAST,
    )
    async with first:
        assert (await first.getone()).offset == 0  # one fetch buffers many more records
        await first.commit()
        assert await committed_offsets(bootstrap, unique_group) == {TopicPartition(topic, 0): 1}
        assert (await first.getone()).offset == 1
        await first.commit()
    second = StaticConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=unique_group,
        group_instance_id="b",
        enable_auto_commit=False,
        **FAST,
    )
    async with second:
        record = await asyncio.wait_for(second.getone(), 30)
        assert record.offset == 2, "buffered but unreturned records are read again by the next owner"
        rest = [record.offset] + [(await second.getone()).offset for _ in range(47)]
    assert rest == list(range(2, 50)), "getone returns every record once, in order"


async def test_neither_client_opens_a_bootstrap_connection_of_its_own(
    kafka_broker: EmbeddedKafka,
    create_topic: Callable[..., str],
    unique_group: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The membership's probe read the cluster's metadata once: the membership client and the fetcher
    both start from it, so a restart opens no bootstrap connection per client (and still consumes)."""
    from staticconsumer import _aiokafka

    topic = create_topic(partitions=2)
    await produce(kafka_broker.bootstrap_servers, topic, 10)
    client_class = _aiokafka._bounded()[1]
    bootstraps: list[object] = []
    own_bootstrap = client_class.bootstrap

    async def counted(self: object) -> None:
        bootstraps.append(self)
        await own_bootstrap(self)

    monkeypatch.setattr(client_class, "bootstrap", counted)
    consumer = StaticConsumer(
        topic,
        bootstrap_servers=kafka_broker.bootstrap_servers,
        group_id=unique_group,
        group_instance_id="p-0",
        auto_offset_reset="earliest",
    )
    async with consumer:
        assert len(await consume(consumer, 10)) == 10
    assert bootstraps == [], "a client bootstrapped over a connection of its own"


async def test_getmany_hands_over_records_already_fetched_without_suspending(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    """The throughput path: a poll whose records the fetcher already holds completes in one step (no
    task, no event-loop iteration), continues exactly where the last poll ended, and moves the
    position commits use."""
    topic = create_topic(partitions=1)
    await produce(kafka_broker.bootstrap_servers, topic, 20)
    tp = TopicPartition(topic, 0)
    async with StaticConsumer(
        topic,
        bootstrap_servers=kafka_broker.bootstrap_servers,
        group_id=unique_group,
        group_instance_id="ready-0",
        enable_auto_commit=False,
        **FAST,
    ) as consumer:
        first = await consumer.getmany(timeout_ms=10_000, max_records=5)
        assert [r.offset for r in first[tp]] == [0, 1, 2, 3, 4]
        poll = consumer.getmany(max_records=5)
        with pytest.raises(StopIteration) as done:
            poll.send(None)  # the fetcher holds offsets 5-19 from the same fetch: nothing to wait for
        assert [r.offset for r in done.value.value[tp]] == [5, 6, 7, 8, 9]
        assert await consumer.position(tp) == 10
        await consumer.commit()
        assert await consumer.committed(tp) == 10

"""An aiokafka service, ported to staticconsumer by changing one import line.

The service below is written against aiokafka's ``AIOKafkaConsumer`` API only: deserializers, a
``ConsumerRebalanceListener`` subclass from aiokafka (no ``on_partitions_lost``) that commits with
aiokafka's ``OffsetAndMetadata`` when partitions are revoked, ``subscribe()`` after ``start()`` and again
to other topics on the running consumer, commits of ``(offset, metadata)`` tuples, and the offset queries
(``committed``, ``position``, ``highwater``, ``end_offsets`` ...). The only line that differs from the
aiokafka original is the import of ``AIOKafkaConsumer``; tests/integration/test_aiokafka_port.py runs
both on the same topics and compares every answer.

Run: .venv/bin/python examples/aiokafka_dropin.py   (starts its own embedded Kafka broker;
     --bootstrap-server HOST:PORT runs it on a broker you already have)
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from typing import Any

from aiokafka import AIOKafkaProducer, ConsumerRebalanceListener
from aiokafka.structs import OffsetAndMetadata, TopicPartition

from staticconsumer import StaticConsumer as AIOKafkaConsumer  # the one line a port changes

PARTITIONS = 3
RECORDS_PER_TOPIC = 30


class CommitOnRevoke(ConsumerRebalanceListener):  # type: ignore[misc]  # aiokafka's, untyped
    """Commits what was processed before partitions go away; remembers every call."""

    def __init__(self, consumer: Any, processed: dict[TopicPartition, int]) -> None:
        self.consumer = consumer
        self.processed = processed
        self.calls: list[tuple[str, list[tuple[str, int]]]] = []

    async def on_partitions_revoked(self, revoked: Any) -> None:
        self.calls.append(("revoked", sorted((tp.topic, tp.partition) for tp in revoked)))
        processed = self.processed
        done = {tp: OffsetAndMetadata(processed[tp], "revoked") for tp in revoked if tp in processed}
        if done:
            await self.consumer.commit(done)

    async def on_partitions_assigned(self, assigned: Any) -> None:
        self.calls.append(("assigned", sorted((tp.topic, tp.partition) for tp in assigned)))


async def consume(
    consumer: Any, topic: str, processed: dict[TopicPartition, int], counts: Counter[str]
) -> None:
    """Until every record of ``topic`` was processed; commits each batch as (offset, metadata)."""
    while sum(offset for tp, offset in processed.items() if tp.topic == topic) < RECORDS_PER_TOPIC:
        batches = await consumer.getmany(timeout_ms=1000)
        for tp, records in batches.items():
            for record in records:
                counts[f"{record.key}:{record.value['n'] % 3}"] += 1
            processed[tp] = records[-1].offset + 1
            await consumer.commit({tp: (processed[tp], "batch")})


async def observe(consumer: Any, topic: str) -> dict[str, Any]:
    """Every answer about ``topic`` an aiokafka service may ask for."""
    partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    owned = [tp for tp in partitions if tp in consumer.assignment()]
    by_time = await consumer.offsets_for_times(dict.fromkeys(partitions, 0))
    consumer.pause(*owned[:1])
    paused = sorted(consumer.paused())
    consumer.resume(*owned[:1])
    return {
        "committed": [await consumer.committed(tp) for tp in partitions],
        "position": [await consumer.position(tp) for tp in owned],
        "highwater": [consumer.highwater(tp) for tp in owned],
        "last_stable_offset": [consumer.last_stable_offset(tp) for tp in owned],
        "polled": [consumer.last_poll_timestamp(tp) is not None for tp in owned],
        "end_offsets": sorted((await consumer.end_offsets(partitions)).items()),
        "beginning_offsets": sorted((await consumer.beginning_offsets(partitions)).items()),
        "by_time": sorted((tp, found.offset) for tp, found in by_time.items()),
        "seek_to_committed": sorted((await consumer.seek_to_committed(*owned)).items()),
        "partitions_for_topic": consumer.partitions_for_topic(topic),
        "topics": {topic} <= await consumer.topics(),
        "subscription": set(consumer.subscription()),
        "assignment": sorted(consumer.assignment()),
        "paused": paused,
    }


async def serve(bootstrap: str, group: str, topics: list[str]) -> dict[str, Any]:
    """The service: one topic, then the next one on the same running consumer."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        key_deserializer=lambda key: key.decode() if key is not None else None,
        value_deserializer=json.loads,
    )
    await consumer.start()
    processed: dict[TopicPartition, int] = {}
    counts: Counter[str] = Counter()
    listener = CommitOnRevoke(consumer, processed)
    report: dict[str, Any] = {}
    try:
        for topic in topics:
            consumer.subscribe(topics=[topic], listener=listener)
            await consume(consumer, topic, processed, counts)
            report[topic] = await observe(consumer, topic)
        report["listener"] = list(listener.calls)  # before stop(): only ours revokes there, as Java does
    finally:
        await consumer.stop()
    report["counts"] = dict(counts)
    return report


async def produce(bootstrap: str, topic: str) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for n in range(RECORDS_PER_TOPIC):
            value = json.dumps({"n": n}).encode()
            await producer.send(topic, value, key=f"k{n % 5}".encode(), partition=n % PARTITIONS)
        await producer.flush()
    finally:
        await producer.stop()


if __name__ == "__main__":
    import argparse

    from staticconsumer.testing import KafkaBootstrap

    async def main(given: str | None) -> None:
        topics = ["clicks", "views"]
        async with KafkaBootstrap(given, topics=dict.fromkeys(topics, PARTITIONS)) as bootstrap:
            for topic in topics:
                await produce(bootstrap, topic)
            report = await serve(bootstrap, "dropin", topics)
        for topic in topics:
            print(topic, "committed", report[topic]["committed"], "highwater", report[topic]["highwater"])
        print("listener calls:", report["listener"])

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bootstrap-server", help="run on these brokers instead of an embedded one")
    asyncio.run(main(parser.parse_args().bootstrap_server))

"""The main job: a demo against the embedded broker.

Until StaticConsumer lands (issue 4) this is a produce/consume round trip through aiokafka on a
freshly launched real broker, which proves the whole set-up on a new machine end to end.
"""

from __future__ import annotations

import asyncio
import logging
import time

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from staticconsumer.testing import EmbeddedKafka


async def round_trip(bootstrap_servers: str, topic: str, records: int) -> dict[int, int]:
    """Produce ``records`` keyed records and consume them all back; returns records per partition."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap_servers, acks="all")
    await producer.start()
    try:
        for i in range(records):
            await producer.send(topic, f"record-{i}".encode(), key=f"key-{i}".encode())
        await producer.flush()
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap_servers, group_id="demo-round-trip", auto_offset_reset="earliest"
    )
    await consumer.start()
    per_partition: dict[int, int] = {}
    try:
        async with asyncio.timeout(60):
            while sum(per_partition.values()) < records:
                for tp, batch in (await consumer.getmany(timeout_ms=500)).items():
                    per_partition[tp.partition] = per_partition.get(tp.partition, 0) + len(batch)
        await consumer.commit()
    finally:
        await consumer.stop()
    return per_partition


def run_demo(version: str | None = None, records: int = 1000) -> int:
    # aiokafka logs the broker's "coordinator not available yet" at ERROR while the offsets topic is
    # created; it retries on its own, so the demo shows only what is worth a reader's attention.
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    print(f"Starting an embedded Kafka broker ({version or 'default version'}) on loopback ...")
    with EmbeddedKafka(version) as kafka:
        print(
            f"Kafka {kafka.version} ready at {kafka.bootstrap_servers} in {kafka.start_seconds:.1f}s "
            f"(jar resolution {kafka.resolve_seconds:.1f}s)"
        )
        kafka.create_topic("demo", partitions=3)
        started = time.monotonic()
        per_partition = asyncio.run(round_trip(kafka.bootstrap_servers, "demo", records))
        elapsed = time.monotonic() - started
        total = sum(per_partition.values())
        print(f"Round trip: produced and consumed {total} records in {elapsed:.2f}s")
        for partition in sorted(per_partition):
            print(f"  partition {partition}: {per_partition[partition]} records")
        ok = total == records
    print("Broker stopped." + ("" if ok else " Records were lost!"))
    return 0 if ok else 1

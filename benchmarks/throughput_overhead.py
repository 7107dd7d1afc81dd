"""Throughput overhead: records/s consumed by StaticConsumer against bare aiokafka, same topic, same run.

StaticConsumer fetches with a group-less AIOKafkaConsumer and runs its own membership beside it, so
what it can cost is the membership loop and the bookkeeping on every poll. Three consumers read the
same pre-filled topic from the start, each run a fresh consumer in a fresh group:

* ``staticconsumer``: StaticConsumer with a group_instance_id, defaults otherwise (telemetry on, no SDK);
* ``aiokafka-assigned``: AIOKafkaConsumer with the partitions assigned by hand, no group at all (the
  fetcher alone: the floor of what StaticConsumer could reach);
* ``aiokafka-group``: AIOKafkaConsumer in its own group (what an aiokafka user runs today);
* ``staticconsumer-iterate``: the first StaticConsumer again, read record by record with ``async for``
  (the per-record path: ``getone`` does the same).

Each run is timed from the first batch (or record) to the last record (joining is not timed), with
``getmany`` except for the ``async for`` variant. Variants alternate within each repeat and the order
rotates, so the shared machine's noise hits all alike. Targets: StaticConsumer's ``getmany`` median within
5% of bare aiokafka's (issue 18), and ``async for`` at least 80% of StaticConsumer's ``getmany``.

Run: .venv/bin/python -m benchmarks.throughput_overhead [--repeats 7] [--records 200000]
Writes benchmarks/results/throughput_overhead.json (schema: ``Report``) and a PNG when matplotlib is
installed.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import msgspec
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from benchmarks.common import Environment, Spread, environment, spread, write_json
from staticconsumer import StaticConsumer
from staticconsumer.testing import EmbeddedKafka

NAME = "throughput_overhead"
PARTITIONS = 8
TARGET = 0.95
ITERATE_TARGET = 0.80
"""``async for`` records/s over ``getmany``'s, at least."""
BATCH = 1000
"""max_records per getmany, the same for all, so the first batch (which starts the clock) is small."""


class Variant(msgspec.Struct):
    variant: str
    records_per_second: Spread


class Report(msgspec.Struct):
    benchmark: str
    records_per_run: int
    partitions: int
    record_bytes: int
    environment: Environment
    variants: list[Variant]
    ratio_to_assigned: float
    """StaticConsumer's median over bare (hand-assigned) aiokafka's: 1.0 is no overhead."""
    ratio_to_group: float
    """StaticConsumer's median over aiokafka in its own group."""
    target_met: bool
    """Both ratios at least 0.95."""
    ratio_iterate_to_getmany: float | None = None
    """StaticConsumer's ``async for`` median over its ``getmany`` median (absent in older results)."""
    iterate_ratios: list[float] | None = None
    """The same ratio within each repeat (both runs close in time, so sharing the machine's state)."""
    iterate_target_met: bool | None = None
    """``ratio_iterate_to_getmany`` at least 0.80."""


async def fill(bootstrap: str, topic: str, records: int, size: int) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks=1, linger_ms=20, max_batch_size=256 * 1024)
    await producer.start()
    try:
        payload = b"x" * size
        for i in range(records):
            await producer.send(topic, payload, key=str(i).encode())
            if i % 10_000 == 0:
                await producer.flush()
        await producer.flush()
    finally:
        await producer.stop()


async def _timed(poll: Callable[[], Awaitable[dict[Any, list[Any]]]], records: int) -> float:
    """Records/s from the first batch (which starts the clock) to the ``records``-th record."""
    seen = first_batch = 0
    first_at = 0.0
    while seen < records:
        got = sum(len(rows) for rows in (await poll()).values())
        if got and not seen:
            first_at, first_batch = time.perf_counter(), got
        seen += got
    return (seen - first_batch) / (time.perf_counter() - first_at)


async def ours(bootstrap: str, topic: str, records: int) -> float:
    async with StaticConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=f"bench-{uuid.uuid4().hex[:8]}",
        group_instance_id="bench-0",
        auto_offset_reset="earliest",
        session_timeout_ms=10_000,
        heartbeat_interval_ms=1_000,
    ) as consumer:
        return await _timed(lambda: consumer.getmany(timeout_ms=1000, max_records=BATCH), records)


async def ours_iterate(bootstrap: str, topic: str, records: int) -> float:
    """Records/s from the first record to the ``records``-th, handed over one at a time."""
    async with StaticConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=f"bench-{uuid.uuid4().hex[:8]}",
        group_instance_id="bench-0",
        auto_offset_reset="earliest",
        session_timeout_ms=10_000,
        heartbeat_interval_ms=1_000,
    ) as consumer:
        await consumer.getone()  # the first record starts the clock
        first_at = time.perf_counter()
        seen = 1
        async for _record in consumer:
            seen += 1
            if seen >= records:
                break
        return (seen - 1) / (time.perf_counter() - first_at)


async def aiokafka_assigned(bootstrap: str, topic: str, records: int) -> float:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False
    )
    await consumer.start()
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
        return await _timed(lambda: consumer.getmany(timeout_ms=1000, max_records=BATCH), records)
    finally:
        await consumer.stop()


async def aiokafka_group(bootstrap: str, topic: str, records: int) -> float:
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=f"bench-{uuid.uuid4().hex[:8]}",
        auto_offset_reset="earliest",
        session_timeout_ms=10_000,
        heartbeat_interval_ms=1_000,
    )
    await consumer.start()
    try:
        return await _timed(lambda: consumer.getmany(timeout_ms=1000, max_records=BATCH), records)
    finally:
        await consumer.stop()


VARIANTS: dict[str, Callable[[str, str, int], Awaitable[float]]] = {
    "staticconsumer": ours,
    "staticconsumer-iterate": ours_iterate,
    "aiokafka-assigned": aiokafka_assigned,
    "aiokafka-group": aiokafka_group,
}


async def run(bootstrap: str, topic: str, repeats: int, records: int) -> dict[str, list[float]]:
    results: dict[str, list[float]] = {name: [] for name in VARIANTS}
    names = list(VARIANTS)
    for name in names:  # warm up: imports, connections, the broker's page cache
        await VARIANTS[name](bootstrap, topic, min(records, 5_000))
    for repeat in range(repeats):
        shift = repeat % len(names)
        for name in names[shift:] + names[:shift]:
            rate = await VARIANTS[name](bootstrap, topic, records)
            results[name].append(rate)
            print(f"repeat {repeat + 1}/{repeats} {name:18s} {rate:12,.0f} records/s", flush=True)
    return results


def plot(report: Report, path: Path) -> bool:
    """One box per consumer; False when matplotlib (the ``bench`` extra) is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    figure, axis = plt.subplots(figsize=(7, 4))
    axis.boxplot([v.records_per_second.samples for v in report.variants], patch_artist=True)
    axis.set_xticks(range(1, len(report.variants) + 1))
    axis.set_xticklabels([v.variant for v in report.variants])
    axis.set_ylabel("records/s (getmany)")
    axis.set_title(
        f"Throughput, {report.records_per_run:,} records of {report.record_bytes} B, "
        f"{report.partitions} partitions ({report.variants[0].records_per_second.runs} runs each)",
        fontsize=10,
    )
    axis.grid(axis="y", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=80)
    plt.close(figure)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="timed runs per consumer (>= 5)")
    parser.add_argument("--records", type=int, default=200_000, help="records per run")
    parser.add_argument("--record-bytes", type=int, default=100)
    parser.add_argument("--kafka-version", default=None)
    args = parser.parse_args(argv)
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    with EmbeddedKafka(args.kafka_version) as kafka:
        topic = f"throughput-{uuid.uuid4().hex[:8]}"
        kafka.create_topic(topic, PARTITIONS)
        asyncio.run(fill(kafka.bootstrap_servers, topic, args.records, args.record_bytes))
        results = asyncio.run(run(kafka.bootstrap_servers, topic, args.repeats, args.records))
        env = environment(kafka.version)
    variants = [Variant(name, spread(samples)) for name, samples in results.items()]
    medians = {v.variant: v.records_per_second.median for v in variants}
    to_assigned = medians["staticconsumer"] / medians["aiokafka-assigned"]
    to_group = medians["staticconsumer"] / medians["aiokafka-group"]
    iterate = medians["staticconsumer-iterate"] / medians["staticconsumer"]
    paired = [
        round(i / g, 4)
        for i, g in zip(results["staticconsumer-iterate"], results["staticconsumer"], strict=True)
    ]
    report = Report(
        NAME,
        args.records,
        PARTITIONS,
        args.record_bytes,
        env,
        variants,
        round(to_assigned, 4),
        round(to_group, 4),
        to_assigned >= TARGET and to_group >= TARGET,
        round(iterate, 4),
        paired,
        iterate >= ITERATE_TARGET,
    )
    path = write_json(report, NAME)
    print(f"wrote {path}")
    if plot(report, path.with_suffix(".png")):
        print(f"wrote {path.with_suffix('.png')}")
    for variant in variants:
        print(f"{variant.variant:18s} median {variant.records_per_second.median:12,.0f} records/s")
    print(
        f"StaticConsumer / aiokafka assigned {to_assigned:.3f}, / aiokafka group {to_group:.3f}: "
        f"target (>= {TARGET}) {'MET' if report.target_met else 'NOT MET'}"
    )
    print(
        f"StaticConsumer async for / getmany {iterate:.3f} (per repeat {paired}): "
        f"target (>= {ITERATE_TARGET}) {'MET' if report.iterate_target_met else 'NOT MET'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

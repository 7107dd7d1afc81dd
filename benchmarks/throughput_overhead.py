"""Throughput overhead: records/s consumed by StaticConsumer against bare aiokafka, same topic, same run.

StaticConsumer fetches with a group-less AIOKafkaConsumer and runs its own membership beside it, so
what it can cost is the membership loop and the bookkeeping on every poll. Three consumers read the
same pre-filled topic from the start, each run a fresh consumer in a fresh group:

* ``staticconsumer``: StaticConsumer with a group_instance_id, defaults otherwise (telemetry on, no SDK);
* ``aiokafka-assigned``: AIOKafkaConsumer with the partitions assigned by hand, no group at all (the
  fetcher alone: the floor of what StaticConsumer could reach);
* ``aiokafka-group``: AIOKafkaConsumer in its own group (what an aiokafka user runs today);
* ``staticconsumer-iterate``: the first StaticConsumer again, read record by record with ``async for``
  (the per-record path: ``getone`` does the same);
* ``confluent-aio``: confluent-kafka 2.16's ``confluent_kafka.aio.AIOConsumer`` (librdkafka), a static
  member (``group.instance.id``), ``consume(num_messages=500)``;
* ``confluent``: its blocking ``confluent_kafka.Consumer``, the same, its loop in a thread of its own.

Each run is timed from the first batch (or record) to the last record (joining is not timed), with
``getmany`` (``consume`` for confluent-kafka) of at most 500 records except for the ``async for``
variant. Variants alternate within each repeat and the order rotates, so the shared machine's noise hits
all alike; the 1-minute load average is recorded before each repeat. Targets (issue 26): StaticConsumer's
``getmany`` median at least 0.95 of bare aiokafka's, at least 1.5 of confluent's AIOConsumer's, and
``async for`` at least 80% of StaticConsumer's ``getmany``. confluent-kafka is imported by its variants
only (the ``dev`` extra); without it they are left out.

Run: .venv/bin/python -m benchmarks.throughput_overhead [--repeats 7] [--records 200000]
Writes benchmarks/results/throughput_overhead.json (schema: ``Report``) and a PNG when matplotlib is
installed.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
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
PARTITIONS = 12
TARGET = 0.95
CONFLUENT_TARGET = 1.5
"""StaticConsumer's ``getmany`` records/s over confluent's AIOConsumer's, at least."""
ITERATE_TARGET = 0.80
"""``async for`` records/s over ``getmany``'s, at least."""
BATCH = 500
"""max_records per getmany (num_messages per consume), the same for all: the shape of issue 26."""


class Variant(msgspec.Struct):
    variant: str
    records_per_second: Spread
    records_per_cpu_second: Spread | None = None
    """Records per second of process CPU (all its threads) over the same span (absent in older results)."""


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
    ratio_to_confluent_aio: float | None = None
    """StaticConsumer's median over confluent-kafka's AIOConsumer's (absent when not measured)."""
    ratio_to_confluent: float | None = None
    """StaticConsumer's median over confluent-kafka's blocking Consumer's."""
    confluent_target_met: bool | None = None
    """``ratio_to_confluent_aio`` at least 1.5."""
    load_1min: list[float] | None = None
    """The 1-minute load average before each repeat: the machine is shared, so read ratios, not rates."""
    cpu_ratio_to_assigned: float | None = None
    """``ratio_to_assigned`` by CPU: records per CPU second over bare aiokafka's (the overhead itself)."""
    cpu_ratio_to_group: float | None = None
    max_records: int | None = None
    """Records per ``getmany``/``consume`` at most (absent in older results: 1,000 then)."""


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


_cpu_rates: list[float] = []
"""Records per CPU second of each run, in the order run (``_rate`` appends)."""


def _clocks() -> tuple[float, float]:
    """Wall and process CPU clocks (every thread of the process: a client's own threads count)."""
    return time.perf_counter(), time.process_time()


def _rate(records: int, started: tuple[float, float]) -> float:
    """Records/s since ``started``; records per CPU second go to ``_cpu_rates``. On a loaded shared
    machine the CPU clock tells overhead apart from waiting for a core, which the wall clock cannot."""
    wall, cpu = time.perf_counter() - started[0], time.process_time() - started[1]
    _cpu_rates.append(records / cpu if cpu > 0 else 0.0)
    return records / wall


async def _timed(poll: Callable[[], Awaitable[dict[Any, list[Any]]]], records: int) -> float:
    """Records/s from the first batch (which starts the clock) to the ``records``-th record."""
    seen = first_batch = 0
    started = _clocks()
    while seen < records:
        got = sum(len(rows) for rows in (await poll()).values())
        if got and not seen:
            started, first_batch = _clocks(), got
        seen += got
    return _rate(seen - first_batch, started)


def _confluent_config(bootstrap: str) -> dict[str, Any]:
    """A static member in a fresh group, reading from the start; session and heartbeat as the others."""
    return {
        "bootstrap.servers": bootstrap,
        "group.id": f"bench-{uuid.uuid4().hex[:8]}",
        "group.instance.id": "bench-0",
        "auto.offset.reset": "earliest",
        "session.timeout.ms": 10_000,
        "heartbeat.interval.ms": 1_000,
    }


def _delivered(messages: list[Any]) -> int:
    """Records in a ``consume`` batch (an end-of-partition or error event is not one)."""
    return sum(1 for message in messages if message.error() is None)


async def confluent_aio(bootstrap: str, topic: str, records: int) -> float:
    from confluent_kafka.aio import AIOConsumer

    consumer = AIOConsumer(_confluent_config(bootstrap))
    try:
        await consumer.subscribe([topic])
        seen = first_batch = 0
        started = _clocks()
        while seen < records:
            got = _delivered(await consumer.consume(num_messages=BATCH, timeout=1.0))
            if got and not seen:
                started, first_batch = _clocks(), got
            seen += got
        return _rate(seen - first_batch, started)
    finally:
        await consumer.close()


def _confluent_blocking(bootstrap: str, topic: str, records: int) -> float:
    from confluent_kafka import Consumer

    consumer = Consumer(_confluent_config(bootstrap))
    try:
        consumer.subscribe([topic])
        seen = first_batch = 0
        started = _clocks()
        while seen < records:
            got = _delivered(consumer.consume(num_messages=BATCH, timeout=1.0))
            if got and not seen:
                started, first_batch = _clocks(), got
            seen += got
        return _rate(seen - first_batch, started)
    finally:
        consumer.close()


async def confluent_blocking(bootstrap: str, topic: str, records: int) -> float:
    """The blocking Consumer's whole loop in a thread, as a synchronous application runs it."""
    return await asyncio.to_thread(_confluent_blocking, bootstrap, topic, records)


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
        started = _clocks()
        seen = 1
        async for _record in consumer:
            seen += 1
            if seen >= records:
                break
        return _rate(seen - 1, started)


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
try:
    import confluent_kafka  # noqa: F401  (only whether it is installed)
except ImportError:  # pragma: no cover - the dev extra installs it
    pass
else:
    VARIANTS["confluent-aio"] = confluent_aio
    VARIANTS["confluent"] = confluent_blocking


async def run(
    bootstrap: str, topic: str, repeats: int, records: int, loads: list[float]
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    results: dict[str, list[float]] = {name: [] for name in VARIANTS}
    cpu: dict[str, list[float]] = {name: [] for name in VARIANTS}
    names = list(VARIANTS)
    for name in names:  # warm up: imports, connections, the broker's page cache
        await VARIANTS[name](bootstrap, topic, min(records, 5_000))
    for repeat in range(repeats):
        loads.append(round(os.getloadavg()[0], 2))
        shift = repeat % len(names)
        for name in names[shift:] + names[:shift]:
            rate = await VARIANTS[name](bootstrap, topic, records)
            results[name].append(rate)
            cpu[name].append(_cpu_rates[-1])
            print(
                f"repeat {repeat + 1}/{repeats} {name:18s} {rate:12,.0f} records/s "
                f"{_cpu_rates[-1]:12,.0f} per CPU second",
                flush=True,
            )
    return results, cpu


def plot(report: Report, path: Path) -> bool:
    """One box per consumer; False when matplotlib (the ``bench`` extra) is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    panels = [("records/s (wall clock)", [v.records_per_second for v in report.variants])]
    if all(v.records_per_cpu_second is not None for v in report.variants):
        panels.append(("records per CPU second", [v.records_per_cpu_second for v in report.variants]))
    figure, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4.5), squeeze=False)
    for axis, (label, spreads) in zip(axes[0], panels, strict=True):
        axis.boxplot([s.samples for s in spreads if s is not None], patch_artist=True)
        axis.set_xticks(range(1, len(report.variants) + 1))
        axis.set_xticklabels([v.variant for v in report.variants], rotation=30, ha="right", fontsize=8)
        axis.set_ylabel(label)
        axis.grid(axis="y", alpha=0.3)
    figure.suptitle(
        f"Throughput, {report.records_per_run:,} records of {report.record_bytes} B, "
        f"{report.partitions} partitions, batches of {report.max_records or 1000} "
        f"({report.variants[0].records_per_second.runs} runs each)",
        fontsize=10,
    )
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
        loads: list[float] = []
        results, cpu = asyncio.run(run(kafka.bootstrap_servers, topic, args.repeats, args.records, loads))
        env = environment(kafka.version, packages=("aiokafka", "staticconsumer", "confluent-kafka"))
    variants = [Variant(name, spread(samples), spread(cpu[name])) for name, samples in results.items()]
    cpu_medians = {name: spread(samples).median for name, samples in cpu.items()}
    cpu_to_assigned = cpu_medians["staticconsumer"] / cpu_medians["aiokafka-assigned"]
    cpu_to_group = cpu_medians["staticconsumer"] / cpu_medians["aiokafka-group"]
    medians = {v.variant: v.records_per_second.median for v in variants}
    to_assigned = medians["staticconsumer"] / medians["aiokafka-assigned"]
    to_group = medians["staticconsumer"] / medians["aiokafka-group"]
    iterate = medians["staticconsumer-iterate"] / medians["staticconsumer"]
    confluent_aio_ratio = (
        medians["staticconsumer"] / medians["confluent-aio"] if "confluent-aio" in medians else None
    )
    confluent_ratio = medians["staticconsumer"] / medians["confluent"] if "confluent" in medians else None
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
        None if confluent_aio_ratio is None else round(confluent_aio_ratio, 4),
        None if confluent_ratio is None else round(confluent_ratio, 4),
        None if confluent_aio_ratio is None else confluent_aio_ratio >= CONFLUENT_TARGET,
        loads,
        round(cpu_to_assigned, 4),
        round(cpu_to_group, 4),
        BATCH,
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
    print(
        f"By CPU: StaticConsumer / aiokafka assigned {cpu_to_assigned:.3f}, "
        f"/ aiokafka group {cpu_to_group:.3f}"
    )
    if confluent_aio_ratio is not None and confluent_ratio is not None:
        print(
            f"StaticConsumer / confluent AIOConsumer {confluent_aio_ratio:.3f}, / confluent Consumer "
            f"{confluent_ratio:.3f}: target (>= {CONFLUENT_TARGET} AIOConsumer) "
            f"{'MET' if report.confluent_target_met else 'NOT MET'}; load {loads}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

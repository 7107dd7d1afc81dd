"""Telemetry overhead: records/s consumed by StaticConsumer with telemetry off, on without an SDK, and
with the OpenTelemetry SDK installed and tracing every record.

    .venv/bin/python benchmarks/telemetry_overhead.py [--repeats 7] [--records 300000]
        [--iterate-records 20000] [--variants ...] [--patterns ...]
        [--out benchmarks/results/telemetry_overhead.json]

Variants (``--variants``, all by default):

- ``telemetry_off``: ``StaticConsumer(telemetry=False)``;
- ``telemetry_on_no_sdk``: the default, with no OpenTelemetry SDK installed: what every user pays;
- ``tracing_sdk_noop_exporter``: the SDK installed as the global providers, every span handed to a
  ``SimpleSpanProcessor`` whose exporter discards it, metrics into an in-memory reader that is never
  read: the cost of creating, recording and ending spans and of aggregating metrics;
- ``tracing_sdk_batch_exporter``: the SDK as an application runs it: a ``BatchSpanProcessor`` that
  serialises every span to JSON on its worker thread (the console exporter, written to /dev/null)
  and a periodic metric reader exporting every 5 s the same way.

Patterns (``--patterns``): ``getmany`` (batches, the usual loop; no per-record span, a ``poll`` span
per batch with a link per record), ``iterate`` (``async for``: a ``process`` span per record, one poll
per record, the worst case) and ``getmany_processing`` (``getmany`` with ``consumer.processing(record)``
around each record; skipped while the consumer has no ``processing``).

One embedded broker, one topic filled once with records that carry a W3C ``traceparent`` header each,
as an instrumented producer writes them. Each timed run is a fresh Python process (so each can install
its own global SDK, as applications do) running a fresh consumer in a fresh group that reads the whole
topic from the start, timed from its first record to its last (start-up and joining are not timed).
Variants alternate within every repeat and their order rotates, so machine noise hits all alike. The
SDK variants also count the record spans they saw: zero means the consumer is not wired to the record
telemetry (before issue 15's phase 2) and the figure measures membership telemetry only.

Against opentelemetry-instrumentation-aiokafka (``--patterns peer``, issue 26): what a user would
otherwise install to trace each record. Both consume the same topic with ``async for`` (a span per
record either way: our ``process`` span, its ``receive`` span; each parented to the record's producer
context, with about ten attributes; ours also links to the producer, as the conventions ask), under the
same SDK set-up: a ``TracerProvider`` whose spans go through a ``BatchSpanProcessor`` to an exporter
that discards them, no meter provider. The topic's records carry traceparents sampled at 1% (as a
producer behind a 1% sampler writes them). Variants: StaticConsumer with telemetry off, on without an
SDK, tracing with the ``ALWAYS_ON`` sampler and with a parent-based 1% ``TraceIdRatioBased`` sampler;
bare ``AIOKafkaConsumer`` without and with the instrumentation (``ALWAYS_ON`` and the 1% sampler).
Each run reports the consumer process's CPU time per record (on a shared machine, far steadier than
wall time): the tracing overhead is a variant's CPU per record minus its own consumer's with tracing
off. ``--merge`` keeps the other sections of an existing results file and replaces only ``peer``.

Measured alone, without a broker (``hot_path``, ``per_record``): the membership observer's cost per
call, and the record telemetry's cost per record for each variant: ``RecordTracer`` driven the way the
consumer drives it. End-to-end throughput on a shared machine is too noisy to resolve these. Results go
to a msgspec-typed JSON file with the machine (cores, memory, load average), git revision and Kafka
version; a PNG plot is written if matplotlib is importable. Not a timed test: read the medians against
the spread.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

# Run as a script, Python puts benchmarks/ first on sys.path, where benchmarks/assignors.py would
# shadow the real ``assignors`` package.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)

import msgspec
from aiokafka import AIOKafkaProducer
from opentelemetry import metrics, trace

from staticconsumer import StaticConsumer
from staticconsumer.testing import EmbeddedKafka
from staticconsumer.testing.broker import external_bootstrap

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "telemetry_overhead.json"
PARTITIONS = 4
VARIANTS = ("telemetry_on_no_sdk", "telemetry_off")
"""The two variants every report has (the committed results' schema)."""
SDK_VARIANTS = ("tracing_sdk_noop_exporter", "tracing_sdk_batch_exporter")
ALL_VARIANTS = VARIANTS + SDK_VARIANTS
PATTERNS = ("getmany", "iterate", "getmany_processing", "peer")
PEER_VARIANTS = (
    "telemetry_off",
    "telemetry_on_no_sdk",
    "tracing_always_on",
    "tracing_ratio_1pct",
    "aiokafka_off",
    "aiokafka_instrumented",
    "aiokafka_instrumented_ratio_1pct",
)
"""The peer comparison's variants (``--patterns peer``)."""
SAMPLED_SHARE = 0.01
"""The share of the peer topic's records a producer behind a 1% ratio sampler marks sampled."""
BATCH = 500
"""Records per batch in the per-record measurements (``max_poll_records``' default)."""


class Spread(msgspec.Struct):
    """Records per second over ``runs`` timed runs."""

    runs: int
    median: float
    p25: float
    p75: float
    min: float
    max: float
    samples: list[float]


class Pattern(msgspec.Struct):
    pattern: str
    records_per_run: int
    telemetry_on_no_sdk: Spread
    telemetry_off: Spread
    on_vs_off_median: float
    """Median records/s with telemetry on divided by off: 1.0 means no cost, below 1 a cost."""
    within_spread: bool
    """True when the medians differ by less than either variant's interquartile range."""
    tracing_sdk_noop_exporter: Spread | None = None
    tracing_sdk_batch_exporter: Spread | None = None
    sdk_noop_vs_off_median: float | None = None
    sdk_batch_vs_off_median: float | None = None
    record_spans_per_record: dict[str, float] = {}
    """Per SDK variant: the consumer's record spans (``poll``/``process``) seen per record consumed."""


class HotPath(msgspec.Struct):
    """Nanoseconds per ``TelemetryObserver.observe`` call with no SDK, measured alone (no broker noise):
    CPU time of the process (wall time on a shared machine mostly measures the other tenants)."""

    step: str
    calls_per_run: int
    runs: int
    median_ns: float
    min_ns: float
    max_ns: float


class PerRecord(msgspec.Struct):
    """CPU nanoseconds per record of the record telemetry alone: ``RecordTracer`` driven as the consumer
    does, every record with a traceparent header; and, per SDK variant, the SDK's own reference costs."""

    variant: str
    path: str
    records_per_run: int
    runs: int
    median_ns: float
    min_ns: float
    max_ns: float


class PeerVariant(msgspec.Struct):
    """One consumer set-up of the peer comparison: CPU microseconds per record and records/s (wall)."""

    variant: str
    cpu_us_per_record: Spread
    records_per_second: Spread
    spans_per_record: float | None = None
    """Record spans ended per record consumed (median): 1 when every record is traced, ~0.01 at 1%."""


class Peer(msgspec.Struct):
    """Per-record tracing overhead against opentelemetry-instrumentation-aiokafka (issue 26 targets)."""

    records_per_run: int
    sampled_share_of_records: float
    """Share of the topic's records whose producer context is sampled."""
    instrumentation_version: str
    load_average: tuple[float, float, float] | None
    load_average_after: tuple[float, float, float] | None
    git_revision: str
    variants: list[PeerVariant]
    ours_always_on_overhead_us: float
    """Median CPU per record, tracing always on, minus telemetry off (StaticConsumer)."""
    theirs_always_on_overhead_us: float
    """The same for bare aiokafka with opentelemetry-instrumentation-aiokafka."""
    ours_ratio_overhead_us: float
    theirs_ratio_overhead_us: float
    ours_vs_instrumentation: float
    """Our always-on overhead over theirs: target <= 0.8."""
    ratio_sampler_vs_always_on: float
    """Our overhead with the parent-based 1% sampler over our always-on overhead: target <= 0.5."""
    no_sdk_vs_off: float
    """Records per CPU second with telemetry on and no SDK over telemetry off: target >= 0.98."""
    targets_met: dict[str, bool]


class Environment(msgspec.Struct):
    cores: int
    memory_bytes: int | None
    cpu: str
    python: str
    platform: str
    aiokafka: str
    opentelemetry_api: str
    kafka_version: str
    git_revision: str
    git_dirty: bool
    opentelemetry_sdk: str | None = None
    load_average: tuple[float, float, float] | None = None
    """1, 5 and 15 minute load averages at the start: how busy the (shared) machine was."""


class Report(msgspec.Struct):
    benchmark: str
    created_utc: str
    command: str
    environment: Environment
    patterns: list[Pattern]
    hot_path: list[HotPath]
    poll_share_of_iterate: float
    """The per-poll observe() cost as a fraction of one ``async for`` step (median telemetry-off rate)."""
    per_record: list[PerRecord] = []
    peer: Peer | None = None


# -- the SDK variants -------------------------------------------------------------------------------


def sdk_providers(variant: str) -> tuple[Any, Any, Any]:
    """Tracer and meter providers of an SDK variant, and a span counter added to the tracer's."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import (
        ConsoleMetricExporter,
        InMemoryMetricReader,
        PeriodicExportingMetricReader,
    )
    from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        ConsoleSpanExporter,
        SimpleSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )

    class Discard(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    class SpanCounter(SpanProcessor):
        """Counts the consumer's record spans (``poll``/``process``): the proof they were made."""

        def __init__(self) -> None:
            self.record_spans = 0

        def on_end(self, span: ReadableSpan) -> None:
            if span.name.startswith(("process ", "poll")):
                self.record_spans += 1

    counter = SpanCounter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(counter)
    if variant == "tracing_sdk_noop_exporter":
        tracer_provider.add_span_processor(SimpleSpanProcessor(Discard()))
        reader: Any = InMemoryMetricReader()
    elif variant == "tracing_sdk_batch_exporter":
        devnull = open(os.devnull, "w")  # noqa: SIM115 (lives as long as the process)
        tracer_provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter(out=devnull)))
        reader = PeriodicExportingMetricReader(
            ConsoleMetricExporter(out=devnull), export_interval_millis=5000
        )
    else:
        raise ValueError(f"not an SDK variant: {variant}")
    return tracer_provider, MeterProvider(metric_readers=[reader]), counter


# -- the broker runs --------------------------------------------------------------------------------


def traceparent(rng: random.Random, sampled_share: float = 1.0) -> bytes:
    """A producer context; sampled as ``TraceIdRatioBased(sampled_share)`` decides for its trace id."""
    trace_id = rng.getrandbits(128)
    sampled = (trace_id & 0xFFFF_FFFF_FFFF_FFFF) < round(sampled_share * 2**64)
    return f"00-{trace_id:032x}-{rng.getrandbits(64):016x}-{'01' if sampled else '00'}".encode()


async def fill(bootstrap: str, topic: str, records: int, sampled_share: float = 1.0) -> None:
    """``records`` records of 100 bytes, each with its own producer context in a traceparent header."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks=1, linger_ms=20, max_batch_size=256 * 1024)
    await producer.start()
    rng = random.Random(15)
    try:
        payload = b"x" * 100
        for i in range(records):
            await producer.send(
                topic,
                payload,
                key=str(i).encode(),
                headers=[("traceparent", traceparent(rng, sampled_share))],
            )
            if i % 10_000 == 0:
                await producer.flush()
        await producer.flush()
    finally:
        await producer.stop()


class Unsupported(Exception):
    """The pattern needs a consumer API this revision does not have."""


async def consume_once(bootstrap: str, topic: str, records: int, pattern: str, telemetry: bool) -> float:
    """Records/s from the first record to the ``records``-th, for one fresh consumer."""
    consumer = StaticConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=f"bench-{uuid.uuid4().hex[:8]}",
        group_instance_id="bench-0",
        auto_offset_reset="earliest",
        session_timeout_ms=10_000,
        heartbeat_interval_ms=1_000,
        telemetry=telemetry,
    )
    processing: Callable[[Any], Any] | None = getattr(consumer, "processing", None)
    if pattern == "getmany_processing" and processing is None:
        raise Unsupported("StaticConsumer has no processing(record) yet (issue 15, phase 2)")
    seen = 0
    first_batch = 0
    first_at = 0.0
    async with consumer:
        if pattern in ("getmany", "getmany_processing"):
            while seen < records:
                batch = await consumer.getmany(timeout_ms=1000)
                got = sum(len(rows) for rows in batch.values())
                if got and not seen:
                    first_at, first_batch = time.perf_counter(), got  # the first batch starts the clock
                if processing is not None and pattern == "getmany_processing":
                    for rows in batch.values():
                        for record in rows:
                            with processing(record):
                                pass
                seen += got
        else:
            async for _record in consumer:
                if not seen:
                    first_at, first_batch = time.perf_counter(), 1
                seen += 1
                if seen >= records:
                    break
        elapsed = time.perf_counter() - first_at
    return (seen - first_batch) / elapsed


def child(variant: str, pattern: str, bootstrap: str, topic: str, records: int) -> dict[str, Any]:
    """One timed run in this (fresh) process; what the parent reads from its last line of output."""
    counter = None
    if variant in SDK_VARIANTS:
        tracer_provider, meter_provider, counter = sdk_providers(variant)
        trace.set_tracer_provider(tracer_provider)
        metrics.set_meter_provider(meter_provider)
    try:
        rate = asyncio.run(consume_once(bootstrap, topic, records, pattern, variant != "telemetry_off"))
    except Unsupported as reason:
        return {"unsupported": str(reason)}
    out: dict[str, Any] = {"rate": rate}
    if counter is not None:
        out["record_spans_per_record"] = counter.record_spans / records
        tracer_provider.shutdown()
        meter_provider.shutdown()
    return out


# -- against opentelemetry-instrumentation-aiokafka ----------------------------------------------------


def peer_provider(variant: str) -> tuple[Any, Any]:
    """The one SDK set-up of the peer comparison, with the variant's sampler, and a record span counter."""
    from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
    from opentelemetry.sdk.trace.sampling import ALWAYS_ON, ParentBased, TraceIdRatioBased

    class Discard(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    class RecordSpans(SpanProcessor):
        def __init__(self) -> None:
            self.ended = 0

        def on_end(self, span: ReadableSpan) -> None:
            if span.name.startswith("process ") or span.name.endswith(" receive"):
                self.ended += 1

    ratio = variant.endswith("ratio_1pct")
    provider = TracerProvider(sampler=ParentBased(TraceIdRatioBased(SAMPLED_SHARE)) if ratio else ALWAYS_ON)
    counter = RecordSpans()
    provider.add_span_processor(counter)
    provider.add_span_processor(BatchSpanProcessor(Discard()))
    return provider, counter


async def consume_peer(bootstrap: str, topic: str, records: int, variant: str) -> tuple[float, float]:
    """``async for`` over ``records`` records: (records/s, CPU microseconds per record) from the first."""
    group = f"bench-{uuid.uuid4().hex[:8]}"
    consumer: Any
    if variant.startswith("aiokafka"):
        from aiokafka import AIOKafkaConsumer

        consumer = AIOKafkaConsumer(
            topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest"
        )
    else:
        consumer = StaticConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=group,
            group_instance_id="bench-0",
            auto_offset_reset="earliest",
            session_timeout_ms=10_000,
            heartbeat_interval_ms=1_000,
            telemetry=variant != "telemetry_off",
        )
    seen = 0
    wall = cpu = 0.0
    await consumer.start()
    try:
        async for _record in consumer:
            seen += 1
            if seen == 1:
                wall, cpu = time.perf_counter(), time.process_time()
            if seen >= records:
                break
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    finally:
        await consumer.stop()
    return (seen - 1) / wall, cpu * 1e6 / (seen - 1)


def peer_child(variant: str, bootstrap: str, topic: str, records: int) -> dict[str, Any]:
    """One timed peer run in this (fresh) process."""
    counter = None
    if variant not in ("telemetry_off", "telemetry_on_no_sdk", "aiokafka_off"):
        provider, counter = peer_provider(variant)
        trace.set_tracer_provider(provider)
        if variant.startswith("aiokafka"):
            from opentelemetry.instrumentation.aiokafka import AIOKafkaInstrumentor

            AIOKafkaInstrumentor().instrument(tracer_provider=provider)
    rate, cpu_us = asyncio.run(consume_peer(bootstrap, topic, records, variant))
    out: dict[str, Any] = {"rate": rate, "cpu_us": cpu_us}
    if counter is not None:
        provider.shutdown()
        out["spans_per_record"] = counter.ended / records
    return out


def run_peer(bootstrap: str, repeats: int, records: int) -> Peer:
    """The peer comparison: its own topic (1% sampled producer contexts), variants interleaved."""
    from importlib import metadata

    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    topic = f"bench-peer-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic)
    asyncio.run(fill(bootstrap, topic, records, SAMPLED_SHARE))
    run_child("aiokafka_instrumented", "peer", bootstrap, topic, min(records, 2_000))  # warm caches
    cpu: dict[str, list[float]] = {v: [] for v in PEER_VARIANTS}
    rate: dict[str, list[float]] = {v: [] for v in PEER_VARIANTS}
    spans: dict[str, list[float]] = {}
    for repeat in range(repeats):
        for variant in rotated(PEER_VARIANTS, repeat):
            found = run_child(variant, "peer", bootstrap, topic, records)
            cpu[variant].append(found["cpu_us"])
            rate[variant].append(found["rate"])
            if "spans_per_record" in found:
                spans.setdefault(variant, []).append(found["spans_per_record"])
            print(
                f"peer repeat {repeat + 1}/{repeats} {variant:34s} {found['cpu_us']:8.2f} us CPU/record "
                f"{found['rate']:10,.0f} records/s"
            )
    med = {v: statistics.median(x) for v, x in cpu.items()}
    ours = med["tracing_always_on"] - med["telemetry_off"]
    theirs = med["aiokafka_instrumented"] - med["aiokafka_off"]
    ours_ratio = med["tracing_ratio_1pct"] - med["telemetry_off"]
    theirs_ratio = med["aiokafka_instrumented_ratio_1pct"] - med["aiokafka_off"]
    versus, sampled = ours / theirs, ours_ratio / ours
    no_sdk = med["telemetry_off"] / med["telemetry_on_no_sdk"]
    return Peer(
        records_per_run=records,
        sampled_share_of_records=SAMPLED_SHARE,
        instrumentation_version=metadata.version("opentelemetry-instrumentation-aiokafka"),
        load_average=load,
        load_average_after=os.getloadavg() if hasattr(os, "getloadavg") else None,
        git_revision=_git("rev-parse", "HEAD") or "unknown",
        variants=[
            PeerVariant(
                variant=v,
                cpu_us_per_record=spread(cpu[v]),
                records_per_second=spread(rate[v]),
                spans_per_record=round(statistics.median(spans[v]), 4) if v in spans else None,
            )
            for v in PEER_VARIANTS
        ],
        ours_always_on_overhead_us=round(ours, 3),
        theirs_always_on_overhead_us=round(theirs, 3),
        ours_ratio_overhead_us=round(ours_ratio, 3),
        theirs_ratio_overhead_us=round(theirs_ratio, 3),
        ours_vs_instrumentation=round(versus, 3),
        ratio_sampler_vs_always_on=round(sampled, 3),
        no_sdk_vs_off=round(no_sdk, 3),
        targets_met={
            "always-on overhead <= 0.8x the instrumentation's": versus <= 0.8,
            "1% sampler overhead <= 0.5x our always-on": sampled <= 0.5,
            "no SDK >= 0.98 of telemetry off": no_sdk >= 0.98,
        },
    )


def run_child(variant: str, pattern: str, bootstrap: str, topic: str, records: int) -> dict[str, Any]:
    command = [sys.executable, str(Path(__file__).resolve()), "--child", variant, pattern]
    command += ["--bootstrap", bootstrap, "--topic", topic, "--records", str(records)]
    result = subprocess.run(command, capture_output=True, text=True, check=False, cwd=ROOT)
    if result.returncode != 0:
        raise RuntimeError(f"{variant}/{pattern} run failed:\n{result.stderr[-3000:]}")
    found: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return found


def spread(samples: list[float]) -> Spread:
    q = statistics.quantiles(samples, n=4) if len(samples) > 1 else [samples[0]] * 3
    return Spread(
        runs=len(samples),
        median=statistics.median(samples),
        p25=q[0],
        p75=q[2],
        min=min(samples),
        max=max(samples),
        samples=[round(s, 1) for s in samples],
    )


def rotated(variants: Sequence[str], repeat: int) -> list[str]:
    """Each repeat starts with the next variant, and every other repeat runs backwards."""
    order = list(variants[repeat % len(variants) :]) + list(variants[: repeat % len(variants)])
    return order if repeat % 2 == 0 else order[::-1]


def create_topic(bootstrap: str, topic: str) -> None:
    async def create() -> None:
        from aiokafka.admin import AIOKafkaAdminClient, NewTopic

        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
        finally:
            await admin.close()
        await asyncio.sleep(1)

    asyncio.run(create())


def run(
    bootstrap: str,
    repeats: int,
    records: int,
    iterate_records: int,
    variants: Sequence[str],
    patterns: Sequence[str],
) -> list[Pattern]:
    topic = f"bench-telemetry-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic)
    asyncio.run(fill(bootstrap, topic, records))
    out = []
    for pattern in patterns:
        count = iterate_records if pattern == "iterate" else records
        warm = run_child("telemetry_on_no_sdk", pattern, bootstrap, topic, min(count, 5_000))
        if "unsupported" in warm:
            print(f"{pattern:18s} skipped: {warm['unsupported']}")
            continue
        results: dict[str, list[float]] = {v: [] for v in variants}
        spans: dict[str, list[float]] = {v: [] for v in variants if v in SDK_VARIANTS}
        for repeat in range(repeats):
            for variant in rotated(variants, repeat):
                found = run_child(variant, pattern, bootstrap, topic, count)
                results[variant].append(found["rate"])
                if variant in spans:
                    spans[variant].append(found["record_spans_per_record"])
                rate = found["rate"]
                print(f"{pattern:18s} repeat {repeat + 1}/{repeats} {variant:28s} {rate:12,.0f} records/s")
        off = spread(results["telemetry_off"])
        on = spread(results["telemetry_on_no_sdk"])
        widest = max(on.p75 - on.p25, off.p75 - off.p25)
        row = Pattern(
            pattern=pattern,
            records_per_run=count,
            telemetry_on_no_sdk=on,
            telemetry_off=off,
            on_vs_off_median=round(on.median / off.median, 4),
            within_spread=abs(on.median - off.median) <= widest,
            record_spans_per_record={v: round(statistics.median(x), 4) for v, x in spans.items()},
        )
        if "tracing_sdk_noop_exporter" in results:
            row.tracing_sdk_noop_exporter = spread(results["tracing_sdk_noop_exporter"])
            row.sdk_noop_vs_off_median = round(row.tracing_sdk_noop_exporter.median / off.median, 4)
        if "tracing_sdk_batch_exporter" in results:
            row.tracing_sdk_batch_exporter = spread(results["tracing_sdk_batch_exporter"])
            row.sdk_batch_vs_off_median = round(row.tracing_sdk_batch_exporter.median / off.median, 4)
        for variant, per_record in row.record_spans_per_record.items():
            if per_record == 0:
                print(
                    f"{pattern:18s} {variant}: the consumer emitted no record span; this revision traces "
                    "membership only (record telemetry is wired in issue 15, phase 2)"
                )
        out.append(row)
    return out


# -- measured alone ---------------------------------------------------------------------------------


def hot_path(runs: int, calls: int = 100_000) -> list[HotPath]:
    """The observer's own cost per step, which end-to-end throughput is too noisy to resolve."""
    from staticconsumer.membership import MembershipConfig, MembershipMachine, RequestToken
    from staticconsumer.membership import actions as act
    from staticconsumer.membership import events as ev
    from staticconsumer.runtime.loop import decode_assignment
    from staticconsumer.telemetry import TelemetryObserver

    machine = MembershipMachine(
        MembershipConfig(group_id="bench", group_instance_id="bench-0", decode_assignment=decode_assignment)
    )
    observer = TelemetryObserver(client_id="bench")
    poll = ev.PollCalled(now=1.0)
    token = RequestToken(1, 1, "m")
    send = [act.SendHeartbeat(token=token, generation=1, member_id="m", group_instance_id="bench-0")]
    tick = ev.Tick(now=1.0)
    answer = ev.HeartbeatResponse(now=1.0, token=token)

    def poll_step() -> None:
        observer.observe(poll, [], machine)

    def heartbeat_round_trip() -> None:
        observer.observe(tick, send, machine)
        observer.observe(answer, [], machine)

    out = []
    for name, step in (
        ("PollCalled (every poll)", poll_step),
        ("heartbeat sent + answered", heartbeat_round_trip),
    ):
        samples = []
        for _ in range(runs):
            started = time.process_time_ns()
            for _ in range(calls):
                step()
            samples.append((time.process_time_ns() - started) / calls)
        out.append(
            HotPath(
                step=name,
                calls_per_run=calls,
                runs=runs,
                median_ns=round(statistics.median(samples), 1),
                min_ns=round(min(samples), 1),
                max_ns=round(max(samples), 1),
            )
        )
    return out


def bench_records(count: int) -> list[Any]:
    """Records as aiokafka hands them over: 100-byte values, short keys, a traceparent header each."""
    from aiokafka.structs import ConsumerRecord

    rng = random.Random(15)
    return [
        ConsumerRecord(
            topic="bench",
            partition=i % PARTITIONS,
            offset=i,
            timestamp=0,
            timestamp_type=0,
            key=str(i).encode(),
            value=b"x" * 100,
            checksum=None,
            serialized_key_size=-1,
            serialized_value_size=100,
            headers=(("traceparent", traceparent(rng)),),
        )
        for i in range(count)
    ]


def per_record(runs: int, records: int = 20_000) -> list[PerRecord]:
    """The record telemetry's cost per record, for each variant, driven as the consumer drives it."""
    from aiokafka.structs import TopicPartition

    from staticconsumer.telemetry import RecordTracer

    rows = bench_records(records)
    batches = []
    for start in range(0, records, BATCH):
        batch: dict[Any, list[Any]] = {}
        for record in rows[start : start + BATCH]:
            batch.setdefault(TopicPartition(record.topic, record.partition), []).append(record)
        batches.append(batch)

    def one_by_one(tracer: RecordTracer) -> None:  # getone / async for
        for record in rows:
            tracer.requested()
            tracer.delivered(record)
        tracer.requested()

    def in_batches(tracer: RecordTracer) -> None:  # getmany, no per-record span
        for batch in batches:
            tracer.polled(batch, tracer.requested())

    def in_batches_processing(tracer: RecordTracer) -> None:  # getmany + processing(record)
        for batch in batches:
            tracer.polled(batch, tracer.requested())
            for partition_rows in batch.values():
                for record in partition_rows:
                    with tracer.processing(record):
                        pass

    paths: tuple[tuple[str, Callable[[RecordTracer], None]], ...] = (
        ("async for / getone: requested + delivered", one_by_one),
        (f"getmany, batches of {BATCH}: requested + polled", in_batches),
        (f"getmany, batches of {BATCH}, processing(record) each", in_batches_processing),
    )
    out = []
    for variant in ("telemetry_on_no_sdk", *SDK_VARIANTS):
        if variant == "telemetry_on_no_sdk":
            tracer_provider, meter_provider, flush = None, None, None
        else:
            tracer_provider, meter_provider, _ = sdk_providers(variant)
            flush = tracer_provider
        tracer = RecordTracer(
            group_id="bench",
            client_id="bench-0",
            group_instance_id="bench-0",
            bootstrap_servers="localhost:9092",
            tracer_provider=tracer_provider,
            meter_provider=meter_provider,
        )
        for path, drive in paths:
            samples = []
            for _ in range(runs):

                async def timed() -> int:
                    started = time.process_time_ns()
                    drive(tracer)  # noqa: B023 (called at once)
                    return time.process_time_ns() - started

                samples.append(asyncio.run(timed()) / records)
                if flush is not None:
                    flush.force_flush()
            out.append(
                PerRecord(
                    variant=variant,
                    path=path,
                    records_per_run=records,
                    runs=runs,
                    median_ns=round(statistics.median(samples), 1),
                    min_ns=round(min(samples), 1),
                    max_ns=round(max(samples), 1),
                )
            )
        if tracer_provider is not None:
            out += reference_costs(variant, tracer_provider, meter_provider, runs, records)
        tracer.close()
        if flush is not None:
            flush.shutdown()
    return out


def reference_costs(
    variant: str, tracer_provider: Any, meter_provider: Any, runs: int, calls: int
) -> list[PerRecord]:
    """What the SDK itself costs on this machine right now, to read the per-record figures against:
    the record telemetry cannot cost less than one span with its attributes and one histogram point."""
    span_attributes = {f"attribute.{i}": "value" for i in range(10)}
    point_attributes = {f"attribute.{i}": "value" for i in range(7)}
    tracer = tracer_provider.get_tracer("reference")
    histogram = meter_provider.get_meter("reference").create_histogram("reference.duration", unit="s")

    def span() -> None:
        tracer.start_span("reference", attributes=span_attributes).end()

    def point() -> None:
        histogram.record(0.001, point_attributes)

    out = []
    for path, step in (
        ("reference: one span, 10 attributes, started and ended", span),
        ("reference: one histogram point, 7 attributes", point),
    ):
        samples = []
        for _ in range(runs):
            started = time.process_time_ns()
            for _ in range(calls):
                step()
            samples.append((time.process_time_ns() - started) / calls)
            tracer_provider.force_flush()
        out.append(
            PerRecord(
                variant=variant,
                path=path,
                records_per_run=calls,
                runs=runs,
                median_ns=round(statistics.median(samples), 1),
                min_ns=round(min(samples), 1),
                max_ns=round(max(samples), 1),
            )
        )
    return out


# -- report -----------------------------------------------------------------------------------------


def _memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _git(*args: str) -> str:
    result = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    return result.stdout.strip()


def environment(kafka_version: str, load: tuple[float, float, float] | None) -> Environment:
    from importlib import metadata

    import aiokafka

    try:
        sdk: str | None = metadata.version("opentelemetry-sdk")
    except metadata.PackageNotFoundError:
        sdk = None
    return Environment(
        cores=len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1),
        memory_bytes=_memory_bytes(),
        cpu=_cpu(),
        python=sys.version.split()[0],
        platform=platform.platform(),
        aiokafka=aiokafka.__version__,
        opentelemetry_api=metadata.version("opentelemetry-api"),
        kafka_version=kafka_version,
        git_revision=_git("rev-parse", "HEAD") or "unknown",
        git_dirty=bool(_git("status", "--porcelain", "--", "staticconsumer", "benchmarks")),
        opentelemetry_sdk=sdk,
        load_average=load,
    )


def plot(report: Report, path: Path) -> bool:
    """Median records/s per pattern and variant, min-max whiskers; skipped without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    labels = {
        "telemetry_off": "off",
        "telemetry_on_no_sdk": "on, no SDK",
        "tracing_sdk_noop_exporter": "SDK, no-op\nexporter",
        "tracing_sdk_batch_exporter": "SDK, batch\nexporter",
    }
    colors = ["tab:gray", "tab:blue", "tab:orange", "tab:red"]
    panels = len(report.patterns) + (report.peer is not None)
    fig, axes = plt.subplots(1, panels, figsize=(5 * panels, 4), squeeze=False)
    if report.peer is not None:
        peer = report.peer
        ax = axes[0][-1]
        ax.bar(
            ["ours,\nalways on", "instr.,\nalways on", "ours,\n1% sampler", "instr.,\n1% sampler"],
            [
                peer.ours_always_on_overhead_us,
                peer.theirs_always_on_overhead_us,
                peer.ours_ratio_overhead_us,
                peer.theirs_ratio_overhead_us,
            ],
            color=["tab:blue", "tab:gray", "tab:blue", "tab:gray"],
        )
        ax.set_title(f"async for, {peer.records_per_run:,} records: tracing overhead")
        ax.set_ylabel("CPU us per record above tracing off (median)")
    for ax, row in zip(axes[0], report.patterns, strict=False):
        shown = [(v, getattr(row, v)) for v in labels if getattr(row, v) is not None]
        medians = [s.median for _, s in shown]
        ax.bar(
            [labels[v] for v, _ in shown],
            medians,
            yerr=[
                [m - s.min for m, (_, s) in zip(medians, shown, strict=True)],
                [s.max - m for m, (_, s) in zip(medians, shown, strict=True)],
            ],
            color=colors[: len(shown)],
        )
        ax.set_title(f"{row.pattern} ({row.records_per_run:,} records)")
        ax.set_ylabel("records/s (median, min-max)")
    title = f"telemetry overhead @ {report.environment.git_revision[:10]}"
    if report.peer is not None and report.peer.git_revision != report.environment.git_revision:
        title += f" (peer comparison @ {report.peer.git_revision[:10]})"
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def print_peer(peer: Peer | None) -> None:
    if peer is None:
        return
    for v in peer.variants:
        cpu = v.cpu_us_per_record.median
        print(f"peer {v.variant:34s} {cpu:8.2f} us CPU/record  spans/record {v.spans_per_record}")
    print(
        f"peer overhead us/record: ours {peer.ours_always_on_overhead_us} "
        f"(1%: {peer.ours_ratio_overhead_us}), "
        f"instrumentation {peer.theirs_always_on_overhead_us} (1%: {peer.theirs_ratio_overhead_us}); "
        f"ours/theirs {peer.ours_vs_instrumentation}, 1%/always {peer.ratio_sampler_vs_always_on}, "
        f"no SDK/off {peer.no_sdk_vs_off}; targets {peer.targets_met}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=7, help="timed runs per variant and pattern (>= 5)")
    parser.add_argument("--records", type=int, default=300_000, help="records per getmany run")
    parser.add_argument("--iterate-records", type=int, default=20_000, help="records per async-for run")
    parser.add_argument("--variants", nargs="+", choices=ALL_VARIANTS, default=list(ALL_VARIANTS))
    parser.add_argument("--patterns", nargs="+", choices=PATTERNS, default=list(PATTERNS))
    parser.add_argument("--peer-records", type=int, default=20_000, help="records per peer run")
    parser.add_argument(
        "--merge", action="store_true", help="with --patterns peer: replace only the peer section of --out"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--child", nargs=2, metavar=("VARIANT", "PATTERN"), help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    parser.add_argument("--topic", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        variant, pattern = args.child
        if pattern == "peer":
            print(json.dumps(peer_child(variant, args.bootstrap, args.topic, args.records)))
        else:
            print(json.dumps(child(variant, pattern, args.bootstrap, args.topic, args.records)))
        return 0
    if args.repeats < 5:
        parser.error("--repeats must be at least 5: fewer runs say nothing about the spread")
    missing = set(VARIANTS) - set(args.variants)
    if missing:
        parser.error(f"--variants must include {sorted(missing)}: every report compares them")
    if args.merge and (args.patterns != ["peer"] or not args.out.exists()):
        parser.error("--merge runs only --patterns peer, into an existing --out")
    record_patterns = [p for p in args.patterns if p != "peer"]
    # The default variant's point is the cost with no SDK: refuse to run if something installed one.
    assert type(trace.get_tracer_provider()).__name__ == "ProxyTracerProvider"
    assert type(metrics.get_meter_provider()).__name__ == "_ProxyMeterProvider"
    load = os.getloadavg() if hasattr(os, "getloadavg") else None

    def everything(bootstrap: str) -> tuple[list[Pattern], Peer | None]:
        patterns = run(
            bootstrap, args.repeats, args.records, args.iterate_records, args.variants, record_patterns
        )
        peer = run_peer(bootstrap, args.repeats, args.peer_records) if "peer" in args.patterns else None
        return patterns, peer

    bootstrap = external_bootstrap()
    if bootstrap:
        patterns, peer = everything(bootstrap)
        kafka_version = "external"
    else:
        with EmbeddedKafka() as kafka:
            patterns, peer = everything(kafka.bootstrap_servers)
            kafka_version = kafka.version
    if args.merge:
        merged = msgspec.json.decode(args.out.read_bytes(), type=Report)
        merged.peer = peer
        args.out.write_bytes(msgspec.json.format(msgspec.json.encode(merged), indent=2) + b"\n")
        print_peer(merged.peer)
        png = args.out.with_suffix(".png")
        print(f"wrote {args.out}" + (f" and {png}" if plot(merged, png) else " (no matplotlib: no plot)"))
        return 0
    hot = hot_path(args.repeats)
    records = per_record(args.repeats)
    iterate = next((row for row in patterns if row.pattern == "iterate"), None)
    report = Report(
        benchmark="telemetry_overhead",
        created_utc=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        command=" ".join([Path(sys.executable).name, *sys.argv]),
        environment=environment(kafka_version, load),
        patterns=patterns,
        hot_path=hot,
        poll_share_of_iterate=(
            round(hot[0].median_ns * iterate.telemetry_off.median / 1e9, 6) if iterate is not None else 0.0
        ),
        per_record=records,
        peer=peer,
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(msgspec.json.format(msgspec.json.encode(report), indent=2) + b"\n")
    for row in patterns:
        off = row.telemetry_off.median
        line = f"{row.pattern:18s} off {off:10,.0f} rec/s  on/no SDK {row.on_vs_off_median:.3f}"
        if row.sdk_noop_vs_off_median is not None:
            line += f"  SDK no-op exporter {row.sdk_noop_vs_off_median:.3f}"
        if row.sdk_batch_vs_off_median is not None:
            line += f"  SDK batch exporter {row.sdk_batch_vs_off_median:.3f}"
        print(line + "  (x off)")
    for h in hot:
        print(f"observe() {h.step:28s} {h.median_ns:8.1f} ns [{h.min_ns:.1f}..{h.max_ns:.1f}]")
    for r in records:
        print(
            f"per record {r.variant:28s} {r.path:52s} {r.median_ns:9.1f} ns [{r.min_ns:.1f}..{r.max_ns:.1f}]"
        )
    print_peer(peer)
    if iterate is not None:
        print(f"per-poll observe() = {report.poll_share_of_iterate:.4%} of one async-for step")
    png = args.out.with_suffix(".png")
    print(f"wrote {args.out}" + (f" and {png}" if plot(report, png) else " (no matplotlib: no plot)"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

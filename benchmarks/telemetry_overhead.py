"""Telemetry overhead: records/s consumed by StaticConsumer with telemetry on (no SDK) and off.

    .venv/bin/python benchmarks/telemetry_overhead.py [--repeats 7] [--records 300000]
        [--iterate-records 20000] [--out benchmarks/results/telemetry_overhead.json]

Telemetry is on by default, so its cost when the application installs no OpenTelemetry SDK is what
every user pays. One embedded broker, one topic filled once; each timed run is a fresh consumer in a
fresh group reading the whole topic from the start, timed from its first record to its last (joining
is not timed). Variants alternate within every repeat, and the order flips each repeat, so machine
noise hits both alike. Two access patterns: ``getmany`` (batches, the usual loop) and ``iterate``
(``async for``, one poll per record, the worst case for the observer because every poll is a
membership step). The observer's own cost per call is also timed alone (``hot_path``), since
end-to-end throughput on a shared machine is too noisy to resolve nanoseconds. Results go to a
msgspec-typed JSON file with the machine (cores, memory), git revision and Kafka version; a PNG plot is
written if matplotlib is importable. Not a timed test: read the medians against the spread.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import platform
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

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


class HotPath(msgspec.Struct):
    """Nanoseconds per ``TelemetryObserver.observe`` call with no SDK, measured alone (no broker noise)."""

    step: str
    calls_per_run: int
    runs: int
    median_ns: float
    min_ns: float
    max_ns: float


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


class Report(msgspec.Struct):
    benchmark: str
    created_utc: str
    command: str
    environment: Environment
    patterns: list[Pattern]
    hot_path: list[HotPath]
    poll_share_of_iterate: float
    """The per-poll observe() cost as a fraction of one ``async for`` step (median telemetry-off rate)."""


async def fill(bootstrap: str, topic: str, records: int) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks=1, linger_ms=20, max_batch_size=256 * 1024)
    await producer.start()
    try:
        payload = b"x" * 100
        for i in range(records):
            await producer.send(topic, payload, key=str(i).encode())
            if i % 10_000 == 0:
                await producer.flush()
        await producer.flush()
    finally:
        await producer.stop()


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
    seen = 0
    first_batch = 0
    first_at = 0.0
    async with consumer:
        if pattern == "getmany":
            while seen < records:
                batch = await consumer.getmany(timeout_ms=1000)
                got = sum(len(rows) for rows in batch.values())
                if got and not seen:
                    first_at, first_batch = time.perf_counter(), got  # the first batch starts the clock
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


async def run(bootstrap: str, repeats: int, records: int, iterate_records: int) -> list[Pattern]:
    topic = f"bench-telemetry-{uuid.uuid4().hex[:8]}"
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    finally:
        await admin.close()
    await asyncio.sleep(1)
    await fill(bootstrap, topic, records)
    patterns = []
    for pattern, count in (("getmany", records), ("iterate", iterate_records)):
        results: dict[str, list[float]] = {v: [] for v in VARIANTS}
        await consume_once(bootstrap, topic, min(count, 5_000), pattern, True)  # warm up
        for repeat in range(repeats):
            order = VARIANTS if repeat % 2 == 0 else VARIANTS[::-1]
            for variant in order:
                rate = await consume_once(bootstrap, topic, count, pattern, variant == "telemetry_on_no_sdk")
                results[variant].append(rate)
                print(f"{pattern:8s} repeat {repeat + 1}/{repeats} {variant:20s} {rate:12,.0f} records/s")
        on, off = spread(results["telemetry_on_no_sdk"]), spread(results["telemetry_off"])
        widest = max(on.p75 - on.p25, off.p75 - off.p25)
        patterns.append(
            Pattern(
                pattern=pattern,
                records_per_run=count,
                telemetry_on_no_sdk=on,
                telemetry_off=off,
                on_vs_off_median=round(on.median / off.median, 4),
                within_spread=abs(on.median - off.median) <= widest,
            )
        )
    return patterns


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
            started = time.perf_counter_ns()
            for _ in range(calls):
                step()
            samples.append((time.perf_counter_ns() - started) / calls)
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


def environment(kafka_version: str) -> Environment:
    from importlib import metadata

    import aiokafka

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
    )


def plot(report: Report, path: Path) -> bool:
    """Median records/s per pattern and variant, min-max whiskers; skipped without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, axes = plt.subplots(1, len(report.patterns), figsize=(5 * len(report.patterns), 4))
    for ax, row in zip(list(axes) if len(report.patterns) > 1 else [axes], report.patterns, strict=True):
        spreads = [row.telemetry_on_no_sdk, row.telemetry_off]
        medians = [s.median for s in spreads]
        ax.bar(
            ["on, no SDK", "off"],
            medians,
            yerr=[
                [m - s.min for m, s in zip(medians, spreads, strict=True)],
                [s.max - m for m, s in zip(medians, spreads, strict=True)],
            ],
            color=["tab:blue", "tab:gray"],
        )
        ax.set_title(f"{row.pattern} ({row.records_per_run:,} records)")
        ax.set_ylabel("records/s (median, min-max)")
    fig.suptitle(f"telemetry overhead @ {report.environment.git_revision[:10]}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=7, help="timed runs per variant and pattern (>= 5)")
    parser.add_argument("--records", type=int, default=300_000, help="records per getmany run")
    parser.add_argument("--iterate-records", type=int, default=20_000, help="records per async-for run")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    if args.repeats < 5:
        parser.error("--repeats must be at least 5: fewer runs say nothing about the spread")
    # The point is the cost with no SDK: refuse to run if something installed one.
    assert type(trace.get_tracer_provider()).__name__ == "ProxyTracerProvider"
    assert type(metrics.get_meter_provider()).__name__ == "_ProxyMeterProvider"
    bootstrap = external_bootstrap()
    if bootstrap:
        patterns = asyncio.run(run(bootstrap, args.repeats, args.records, args.iterate_records))
        kafka_version = "external"
    else:
        with EmbeddedKafka() as kafka:
            patterns = asyncio.run(
                run(kafka.bootstrap_servers, args.repeats, args.records, args.iterate_records)
            )
            kafka_version = kafka.version
    hot = hot_path(args.repeats)
    iterate = next(row for row in patterns if row.pattern == "iterate")
    report = Report(
        benchmark="telemetry_overhead",
        created_utc=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        command=" ".join([Path(sys.executable).name, *sys.argv]),
        environment=environment(kafka_version),
        patterns=patterns,
        hot_path=hot,
        poll_share_of_iterate=round(hot[0].median_ns * iterate.telemetry_off.median / 1e9, 6),
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(msgspec.json.format(msgspec.json.encode(report), indent=2) + b"\n")
    for row in patterns:
        on, off = row.telemetry_on_no_sdk, row.telemetry_off
        print(
            f"{row.pattern:8s} on/no SDK {on.median:10,.0f} rec/s [{on.min:,.0f}..{on.max:,.0f}]  "
            f"off {off.median:10,.0f} rec/s [{off.min:,.0f}..{off.max:,.0f}]  "
            f"ratio {row.on_vs_off_median:.3f}  within spread: {row.within_spread}"
        )
    for row in hot:
        print(f"observe() {row.step:28s} {row.median_ns:8.1f} ns [{row.min_ns:.1f}..{row.max_ns:.1f}]")
    print(f"per-poll observe() = {report.poll_share_of_iterate:.4%} of one async-for step")
    png = args.out.with_suffix(".png")
    print(f"wrote {args.out}" + (f" and {png}" if plot(report, png) else " (no matplotlib: no plot)"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

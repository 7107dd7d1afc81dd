"""The Spark job over event logs of a real rolling bounce agrees with what the member processes saw.

The member processes print every rebalance callback (with its partitions and wall-clock time) on
stdout; that is the direct observation. Their event logs go through ``analyze`` and the tables must
match it: rebalances and revoked/lost partitions exactly, unowned partition-seconds within
``UNOWNED_TOLERANCE_PER_GAP`` per handover, because the log stamps an assignment when the machine
decides it, and the callback that prints it runs after the committed offsets were fetched (one round
trip to the broker later).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from staticconsumer.analytics.jars import spark_home
from staticconsumer.analytics.run import analyze
from staticconsumer.demo import MEMBERS, PARTITIONS_PER_MEMBER, Member, ModeResult, run_mode, tradeoffs
from staticconsumer.testing import EmbeddedKafka

pytestmark = pytest.mark.kafka

TABLES = (
    "windows",
    "generations",
    "leaders",
    "ownership",
    "gaps",
    "overlaps",
    "moves",
    "sessions",
    "malformed",
)

UNOWNED_TOLERANCE_PER_GAP = 0.1
"""Seconds per handover (measured: 12-15 ms per gap on a loaded two-core machine, the offset fetch)."""


def _all_stopped(members: list[Member], within: float = 30.0) -> None:
    """The stdout readers are threads: wait until each process's last line ("stopped") was read."""
    deadline = time.monotonic() + within
    while any(m.first("stopped") is None for m in members):
        assert time.monotonic() < deadline, "a member process did not report its stop"
        time.sleep(0.1)


def _observed_unowned(members: list[Member]) -> tuple[float, int]:
    """Partition-seconds nobody owned, from the callbacks: the same rule as the job, other clock points."""
    intervals: dict[tuple[str, int], list[tuple[float, float]]] = {}
    for member in members:
        owned: dict[tuple[str, int], float] = {}
        for event in member.events:
            if event["e"] == "assigned":
                for topic, partition in event["partitions"]:
                    owned[(topic, partition)] = event["t"]
            elif event["e"] in ("revoked", "lost"):
                for topic, partition in event["partitions"]:
                    start = owned.pop((topic, partition), None)
                    if start is not None:
                        intervals.setdefault((topic, partition), []).append((start, event["t"]))
        for key, start in owned.items():
            intervals.setdefault(key, []).append((start, float("inf")))
    total, gaps = 0.0, 0
    for spans in intervals.values():
        spans.sort()
        latest_end = spans[0][1]
        for start, end in spans[1:]:
            if start > latest_end:
                total += start - latest_end
                gaps += 1
            latest_end = max(latest_end, end)
    return total, gaps


def _count(members: list[Member], kind: str) -> int:
    return sum(e["n"] for m in members for e in m.events if e["e"] == kind)


async def _bounce(kafka: EmbeddedKafka, static: bool, logs: Path) -> ModeResult:
    name = f"analytics-{'static' if static else 'dynamic'}-{uuid.uuid4().hex[:6]}"
    result = await run_mode(kafka, static=static, event_log_dir=logs / name, name=name)
    _all_stopped(result.members)
    return result


@dataclass
class Bounces:
    logs: Path
    results: list[ModeResult]


@pytest.fixture(scope="module")
def bounces(kafka_broker: EmbeddedKafka, tmp_path_factory: pytest.TempPathFactory) -> Bounces:
    """A static and a dynamic rolling bounce on the real broker, their event logs in one directory
    (shared by this module's tests: a bounce is the expensive part)."""
    logs = tmp_path_factory.mktemp("bounce") / "logs"

    async def both() -> list[ModeResult]:
        return [await _bounce(kafka_broker, True, logs), await _bounce(kafka_broker, False, logs)]

    return Bounces(logs, asyncio.run(both()))


def test_job_tables_agree_with_a_real_rolling_bounce(
    bounces: Bounces, spark: SparkSession, tmp_path: Path
) -> None:
    logs, results = bounces.logs, bounces.results
    analysis = analyze([logs], tmp_path / "out", spark=spark)
    assert analysis.malformed_lines == 0
    assert (tmp_path / "out" / "ownership.png").stat().st_size > 0
    assert "windows" in {p.name for p in (tmp_path / "out").iterdir()}
    report: list[str] = []
    for result in results:
        group = next(p.name for p in logs.iterdir() if p.name.startswith(f"analytics-{result.mode}-"))
        totals = analysis.totals(group)
        generations = analysis.tables.generations.where(F.col("group") == group)
        new_generations = generations.where(F.col("generation") > result.start_generation).count()
        assert new_generations == result.rebalances, f"{result.mode}: rebalances"
        assert totals["revoked_partitions"] == _count(result.members, "revoked"), f"{result.mode}: revoked"
        assert totals["lost_partitions"] == _count(result.members, "lost"), f"{result.mode}: lost"
        sessions: list[dict[str, Any]] = [
            r.asDict() for r in analysis.tables.sessions.where(F.col("group") == group).collect()
        ]
        assert len(sessions) == len(result.members) == 2 * MEMBERS
        assert {s["ended"] for s in sessions} == {"stopped"}
        observed, gaps = _observed_unowned(result.members)
        tolerance = UNOWNED_TOLERANCE_PER_GAP * max(gaps, 1)
        report.append(
            f"{result.mode}: job {totals['unowned_partition_seconds']:.3f}s, "
            f"observed {observed:.3f}s over {gaps} gaps"
        )
        assert totals["unowned_partition_seconds"] == pytest.approx(observed, abs=tolerance), report[-1]
        assert totals["double_owned"] == 0
        bounce_started = min(m.spawned_at for m in result.members[MEMBERS:])
        moved_in_bounce = analysis.tables.moves.where(
            (F.col("group") == group) & (F.col("ts") >= bounce_started)
        ).count()
        if result.mode == "static":
            assert result.rebalances == 0, "static membership held (as test_rolling_bounce asserts)"
            assert (totals["restarts"], totals["restarts_absorbed"]) == (MEMBERS, MEMBERS)
            assert moved_in_bounce == 0, "every restarted instance got its own partitions back"
        else:
            assert totals["restarts"] == 0, "dynamic members have no identity that survives a restart"
            # The analysis knows members by member id, which a dynamic restart renews: its own
            # partitions going back to it count as moves here (unlike the demo's per-process count).
            assert moved_in_bounce > 0
    print("; ".join(report))


def test_the_demo_says_what_each_mode_bought_and_paid_beside_its_unowned_time(
    bounces: Bounces, spark: SparkSession, tmp_path: Path
) -> None:
    """The closing lines put static's larger unowned time beside what it bought (nothing moved, nothing
    revoked from members that kept running, nothing processed twice) and why (the wait for a restart)."""
    logs, results = bounces.logs, bounces.results
    analysis = analyze([logs], spark=spark, report=False)
    unowned = {
        r.mode: analysis.totals(next(g for g in analysis.groups() if g.startswith(f"analytics-{r.mode}-")))[
            "unowned_partition_seconds"
        ]
        for r in results
    }
    static, dynamic = results
    lines = tradeoffs(results, unowned)
    print("\n".join(lines))
    assert lines[0] == f"What each mode bought and paid over the {MEMBERS} restarts:"
    static_line, dynamic_line = lines[1:]
    assert (static.moved, static.revoked_from_others, static.processed_twice) == (0, 0, 0)
    assert static_line.startswith(
        "  static   0 partitions moved, 0 revoked from members that did not restart, "
        "0 records processed twice; paid: each restarting member's "
        f"{PARTITIONS_PER_MEMBER} partitions waited for it"
    ), static_line
    assert "the 10s session timeout bounds the wait" in static_line
    assert f"unowned {unowned['static']:.1f} partition-s" in static_line
    assert f"records delayed up to {static.longest_delay:.1f}s end to end" in static_line
    # Records produced while a member restarts wait for it: about its start to first record, or more.
    assert static.longest_delay >= 0.5 * min(static.restart_to_first_record), static.restart_to_first_record
    # Eager dynamic rebalances always take every partition from the members that kept running; whether
    # one lands on another process depends on where the restarted member's fresh random member id sorts
    # (the range assignor orders by member id), so "moved" may be 0 by chance (about 1 run in 27).
    assert dynamic.revoked_from_others > 0
    assert dynamic.rebalances > 0
    assert dynamic_line.startswith(
        f"  dynamic  {dynamic.moved} partitions moved, {dynamic.revoked_from_others} revoked from members "
        f"that did not restart, {dynamic.processed_twice} records processed twice; "
        f"paid: {dynamic.rebalances} rebalances"
    ), dynamic_line
    assert f"unowned {unowned['dynamic']:.1f} partition-s" in dynamic_line


# -- the same logs on a real Spark standalone cluster ------------------------------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class Standalone:
    master: str
    processes: list[subprocess.Popen[bytes]]


def _wait_for_worker(ui_port: int, within: float = 120.0) -> None:
    """The master's JSON status lists the worker once it registered (loopback only)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as answer:
                status = json.loads(answer.read())
            if any(w.get("state") == "ALIVE" for w in status.get("workers", [])):
                return
        except OSError:
            pass
        time.sleep(1)
    raise AssertionError("the Spark worker did not register with the master")


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Standalone]:
    """A Spark standalone master and one worker (2 cores, 2 GB) from the installed PySpark, on loopback."""
    home = spark_home()
    work = tmp_path_factory.mktemp("spark-standalone")
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOG_DIR": str(work)}
    port, ui, worker_ui = _free_port(), _free_port(), _free_port()
    master = f"spark://127.0.0.1:{port}"
    spark_class = str(home / "bin" / "spark-class")
    logs = [open(work / "master.log", "wb"), open(work / "worker.log", "wb")]  # noqa: SIM115
    processes = [
        subprocess.Popen(
            [
                spark_class,
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(ui),
            ],
            env=env,
            stdout=logs[0],
            stderr=subprocess.STDOUT,
        ),
    ]
    try:
        _wait_for_port(port)
        processes.append(
            subprocess.Popen(
                [
                    spark_class,
                    "org.apache.spark.deploy.worker.Worker",
                    master,
                    "--host",
                    "127.0.0.1",
                    "--cores",
                    "2",
                    "--memory",
                    "2g",
                    "--webui-port",
                    str(worker_ui),
                    "--work-dir",
                    str(work),
                ],
                env=env,
                stdout=logs[1],
                stderr=subprocess.STDOUT,
            )
        )
        _wait_for_worker(ui)
        yield Standalone(master, processes)
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for log in logs:
            log.close()


def _wait_for_port(port: int, within: float = 120.0) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port}")


def _analyze_command(logs: Path, out: Path, master: str) -> float:
    """``staticconsumer analyze`` as a user runs it; returns its wall time."""
    started = time.monotonic()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "staticconsumer.cli",
            "analyze",
            str(logs),
            "--master",
            master,
            "--out",
            str(out),
            "--no-report",
            "--conf",
            "spark.executor.memory=1g",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"},
    )
    took = time.monotonic() - started
    assert result.returncode == 0, result.stderr[-3000:]
    assert "stage" in result.stderr, "progress lines name Spark stages as they complete"
    return took


def _table(spark: SparkSession, path: Path) -> list[tuple[Any, ...]]:
    """A table's rows, sorted, doubles rounded to the microsecond (sums may add up in another order)."""
    frame = spark.read.parquet(str(path))
    columns = [
        F.round(F.col(f.name), 6).alias(f.name) if f.dataType.typeName() == "double" else F.col(f.name)
        for f in frame.schema.fields
    ]
    return sorted((tuple(row) for row in frame.select(*columns).collect()), key=repr)


MAX_PAIRS = 3
"""Alternated pairs of runs (local[2], then the cluster) at most; the fastest of each master is held to 2x.
On a CI machine that other jobs load, one run's wall time varies by more than the 2x this test holds the
cluster to (a JVM that starts during another test's burst), so a pair that misses it is followed by another,
and the fastest of alternated runs saw the same load. One pair usually settles it: each run is a JVM and a
Spark job over the whole log (about 30 s on a busy two-core machine), so a fixed second pair cost a minute."""


def test_a_standalone_cluster_gives_every_table_of_the_local_run_within_twice_its_time(
    bounces: Bounces, standalone: Standalone, spark: SparkSession, tmp_path: Path
) -> None:
    local_times: list[float] = []
    cluster_times: list[float] = []
    for run in range(MAX_PAIRS):
        local_times.append(_analyze_command(bounces.logs, tmp_path / f"local{run}", "local[2]"))
        cluster_times.append(_analyze_command(bounces.logs, tmp_path / f"cluster{run}", standalone.master))
        if min(cluster_times) < 2 * min(local_times):
            break
    names = sorted(p.name for p in (tmp_path / "local0").iterdir() if p.is_dir())
    assert names == sorted(TABLES)
    for name in names:
        local = _table(spark, tmp_path / "local0" / name)
        for run in range(len(local_times)):
            assert _table(spark, tmp_path / f"local{run}" / name) == local, f"table {name}: local runs differ"
            cluster = _table(spark, tmp_path / f"cluster{run}" / name)
            assert cluster == local, f"table {name} differs between local[2] and {standalone.master}"
    assert _table(spark, tmp_path / "local0" / "windows"), "the bounce made deploy windows"
    local_seconds, cluster_seconds = min(local_times), min(cluster_times)
    print(f"local[2] {local_times} s, standalone cluster {cluster_times} s")
    assert cluster_seconds < 2 * local_seconds, (local_times, cluster_times)

"""Fleet analytics benchmark: a synthetic fleet's event log through the Spark job, timed and measured.

    .venv/bin/python benchmarks/analytics_fleet.py                      # the issue's size (below)
    .venv/bin/python benchmarks/analytics_fleet.py --scale 0.1          # a tenth of consumers and partitions
    .venv/bin/python benchmarks/analytics_fleet.py --scales 0.1,0.3,1   # all three, and the scaling plot

Full size: 2,000 static consumers in 20 groups, 100,000 partitions, 50 deploys (every consumer restarted
in each), a share of restarts slower than the session timeout so the group rebalances. The log is written
with the real schema (staticconsumer.analytics.synthetic), one file per group, then ``analyze`` runs on
``--master`` (default local[*]) and writes every Parquet table and the report. Reported: wall time of
generation, Spark start and the job, the job's steps (planning, the tables computed and written, the
report), and the floor: one Spark pass over the same files on the same session (every line parsed, every
partition list exploded, aggregated per group), so ``job / floor`` compares the job with what the engine
needs to read its input on this machine, whatever its speed or load, and the same ratio of executor CPU
(from Spark's event log: the work per row, which the machine's load hardly moves); peak resident
memory of the Python driver and of the JVM (sampled from /proc every 0.2 s, the whole process tree);
the job's answers against the generator's truth; the machine (cores, memory, CPU, ``uptime``) and git
revision. JSON (msgspec-typed) goes to benchmarks/results/.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)  # benchmarks/assignors.py would shadow the assignors package

import contextlib
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ROOT = Path(__file__).resolve().parents[1]
PLAN_STEP = "planning the tables"
TABLE_STEP = "table "
REPORT_STEP = "report"
FLOOR_STEP = "floor pass"
"""Names of the job's steps (staticconsumer.analytics.run) that the timings split out."""
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "analytics_fleet.json"


class FleetSize(msgspec.Struct):
    scale: float
    groups: int
    consumers: int
    partitions: int
    deploys: int
    rebalance_fraction: float
    records: int
    input_bytes: int
    files: int


class Timings(msgspec.Struct):
    generate_s: float
    spark_start_s: float
    job_s: float
    """read + parse + every table written as Parquet + the report (plots included)."""
    floor_s: float = 0.0
    """The floor pass (:func:`floor_pass`) on the same session after the job; 0 in runs before it."""
    plan_s: float = 0.0
    """The step "planning the tables": the plan, and the shared frames it materializes (the small
    tables, the ownership intervals' sort, the summary): work, more than half the job's executor CPU."""
    tables_s: float = 0.0
    """Computing what is left of the Parquet tables and writing them (every write)."""
    report_s: float = 0.0
    """The report's plots and pages (Python on the driver). Spark's start (``spark_start_s``) is the
    only fixed cost, and it is outside ``job_s``."""
    steps_s: dict[str, float] = {}
    """Every step of the job by name, in seconds (Progress's steps)."""
    job_cpu_s: float = 0.0
    """Executor CPU of the job's stages (Spark's event log: every task's ``executorCpuTime``); 0 in
    runs before it. Unlike wall time it hardly moves with the machine's load: the robust figure."""
    floor_cpu_s: float = 0.0
    """Executor CPU of the floor pass's stages, from the same event log."""

    @property
    def job_over_floor(self) -> float:
        """How far the job is from one pass over its input: the figure that travels between machines."""
        return self.job_s / self.floor_s if self.floor_s else float("nan")

    @property
    def cpu_over_floor(self) -> float:
        """The job's executor CPU over the floor's: the work per row, whatever else runs on the cores."""
        return self.job_cpu_s / self.floor_cpu_s if self.floor_cpu_s else float("nan")


class Memory(msgspec.Struct):
    driver_peak_rss_bytes: int
    jvm_peak_rss_bytes: int
    total_peak_rss_bytes: int
    """Peak of the sum over the driver's whole process tree, sampled together."""
    spark_driver_memory: str
    jvm_peak_anon_rss_bytes: int = 0
    """The JVM's own memory (heap, metaspace, native), without file pages the kernel can drop
    (memory-mapped shuffle and cache blocks count in RSS too). 0 in runs that did not measure it."""


class Checks(msgspec.Struct):
    """The job's answers against what the generator did (they must agree)."""

    rebalances_expected: int
    rebalances_found: int
    restarts_expected: int
    restarts_found: int
    absorbed_expected: int
    absorbed_found: int
    moved_partitions_found: int
    malformed_lines: int


class Environment(msgspec.Struct):
    cores: int
    memory_bytes: int | None
    cpu: str
    load_average_at_start: list[float]
    python: str
    platform: str
    pyspark: str
    java: str
    git_revision: str
    git_dirty: bool
    uptime: str = ""
    """``uptime`` at the start: how loaded the machine was (other work shares it)."""


class Report(msgspec.Struct):
    benchmark: str
    timestamp: str
    master: str
    shuffle_partitions: str
    size: FleetSize
    timings: Timings
    memory: Memory
    checks: Checks
    environment: Environment
    command: str
    label: str = ""
    """What kind of run this is when it is not the reference (``--label``: e.g. a loaded machine)."""
    floor_rows: int = 0
    """Rows the floor pass aggregated: every record, one per partition for those that list some."""
    stages: list[StepStages] = []
    """Spark's stages summed per step, from the event log (``--event-log``); empty without it."""

    @property
    def agree(self) -> bool:
        """The job's answers are the generator's."""
        c = self.checks
        return (
            c.rebalances_found == c.rebalances_expected
            and c.restarts_found == c.restarts_expected
            and c.absorbed_found == c.absorbed_expected
            and c.malformed_lines == 0
        )


# -- measuring -------------------------------------------------------------------------------------


def _rss(pid: int, field: str = "VmRSS") -> int:
    """Resident bytes; ``RssAnon`` leaves out file pages (memory-mapped shuffle and cache blocks)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return 0
    return 0


def _children(pid: int) -> list[int]:
    try:
        tasks = Path(f"/proc/{pid}/task").iterdir()
        found: list[int] = []
        for task in tasks:
            text = (task / "children").read_text().split()
            found += [int(child) for child in text]
        return found
    except OSError:
        return []


def _address_space(pid: int) -> tuple[str, ...]:
    """Where the process's code and stack are (``/proc/PID/stat`` startcode, endcode, startstack).

    A child made by ``vfork``/``posix_spawn`` shares its parent's memory until it calls exec, and in
    that instant reports the parent's whole RSS as its own: the JVM starting ``chmod`` through Hadoop's
    shell (every Parquet file written) would be counted twice. Such a child has the parent's values.
    """
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return tuple(fields[23:26])
    except (OSError, IndexError):
        return ()


class PeakMemory:
    """Samples RSS of this process and of every descendant (the JVM) until stopped; keeps the peaks."""

    def __init__(self, interval: float = 0.2) -> None:
        self.interval = interval
        self.driver = 0
        self.jvm = 0
        self.jvm_anon = 0
        self.total = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        me = os.getpid()
        while not self._stop.is_set():
            driver = _rss(me)
            pending = [(child, _address_space(me)) for child in _children(me)]
            others = anon = 0
            while pending:
                pid, parents = pending.pop()
                mine = _address_space(pid)
                if not mine or mine != parents:  # else: its parent's memory, counted already
                    others += _rss(pid)
                    anon += _rss(pid, "RssAnon")
                pending += [(child, mine) for child in _children(pid)]
            self.driver = max(self.driver, driver)
            self.jvm = max(self.jvm, others)
            self.jvm_anon = max(self.jvm_anon, anon)
            self.total = max(self.total, driver + others)
            self._stop.wait(self.interval)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _git(*args: str) -> str:
    result = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    return result.stdout.strip()


def _environment() -> Environment:
    import pyspark

    java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False).stderr
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = None
    with contextlib.suppress(ValueError, OSError):
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return Environment(
        cores=os.cpu_count() or 0,
        memory_bytes=memory,
        cpu=cpu,
        load_average_at_start=[round(x, 2) for x in os.getloadavg()],
        python=platform.python_version(),
        platform=platform.platform(),
        pyspark=pyspark.__version__,
        java=java.splitlines()[0] if java else "unknown",
        git_revision=_git("rev-parse", "HEAD") or "unknown",
        git_dirty=bool(
            _git("status", "--porcelain", "--", "staticconsumer/analytics", "benchmarks/analytics_fleet.py")
        ),
        uptime=_uptime(),
    )


def _uptime() -> str:
    try:
        result = subprocess.run(["uptime"], capture_output=True, text=True, check=False, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return result.stdout.strip()


def floor_pass(spark: SparkSession, paths: list[str]) -> tuple[float, int]:
    """Seconds and rows of one Spark pass over the job's input: what the engine needs to read it.

    Every line is parsed with the job's schema (all of it: the hash of the whole record is aggregated,
    so no field is pruned), every partition list exploded, and the rows aggregated per group.
    """
    from pyspark.sql import functions as F

    from staticconsumer.analytics.job import EVENT_SCHEMA

    started = time.perf_counter()
    spark.sparkContext.setJobDescription(FLOOR_STEP)
    lines = spark.read.option("recursiveFileLookup", "true").text(paths)
    parsed = lines.select(F.from_json(F.col("value"), EVENT_SCHEMA).alias("r"))
    exploded = parsed.select(
        F.col("r.group").alias("group"),
        F.col("r.ts").alias("ts"),
        F.xxhash64(F.col("r")).alias("record"),
        F.explode_outer(F.col("r.partitions")).alias("p"),
    )
    groups = (
        exploded.groupBy("group")
        .agg(
            F.count(F.lit(1)).alias("rows"),
            F.count(F.col("p")).alias("partitions"),
            F.sum(F.col("p.partition")).alias("partition_sum"),
            F.min("ts").alias("first"),
            F.max("ts").alias("last"),
            F.max("record").alias("record"),
        )
        .collect()
    )
    spark.sparkContext.setJobDescription(None)  # type: ignore[arg-type]
    return time.perf_counter() - started, sum(int(g["rows"]) for g in groups)


# -- Spark's event log: the stage table --------------------------------------------------------------


class StepStages(msgspec.Struct):
    """What one step of the job cost Spark's executors, summed over its stages (from the event log)."""

    step: str
    stages: int
    tasks: int
    run_s: float
    """Executor run time of every task (two cores: up to twice the wall time)."""
    cpu_s: float
    input_mb: float
    shuffle_write_mb: float
    shuffle_read_mb: float
    spill_mb: float
    """Memory spilled (its size in memory): sorts or aggregations that did not fit."""


_METRICS = {
    "internal.metrics.executorRunTime": "run_ms",
    "internal.metrics.executorCpuTime": "cpu_ns",
    "internal.metrics.input.bytesRead": "input",
    "internal.metrics.shuffle.write.bytesWritten": "shuffle_write",
    "internal.metrics.shuffle.read.localBytesRead": "shuffle_read",
    "internal.metrics.shuffle.read.remoteBytesRead": "shuffle_read",
    "internal.metrics.memoryBytesSpilled": "spill",
}


def stage_table(event_log: Path) -> list[StepStages]:
    """Every completed stage of the event log (a file, or the directory Spark wrote it in, read
    uncompressed) summed per step: the job description Progress gives each step's Spark jobs."""
    files = sorted(event_log.rglob("events_*")) if event_log.is_dir() else [event_log]
    step_of_stage: dict[int, str] = {}
    totals: dict[str, dict[str, float]] = {}
    for file in files:
        for line in file.read_text().splitlines():
            event = msgspec.json.decode(line)
            kind = event.get("Event")
            if kind == "SparkListenerJobStart":
                step = (event.get("Properties") or {}).get("spark.job.description") or "(outside the job)"
                for stage in event.get("Stage IDs", []):
                    step_of_stage[int(stage)] = str(step)
            elif kind == "SparkListenerStageCompleted":
                info = event["Stage Info"]
                if "Failure Reason" in info:
                    continue
                row = totals.setdefault(step_of_stage.get(int(info["Stage ID"]), "(outside the job)"), {})
                row["stages"] = row.get("stages", 0) + 1
                row["tasks"] = row.get("tasks", 0) + int(info["Number of Tasks"])
                for accumulable in info.get("Accumulables", []):
                    name = _METRICS.get(str(accumulable.get("Name")))
                    if name is not None:
                        row[name] = row.get(name, 0) + float(accumulable.get("Value") or 0)
    mb = 1e6
    return [
        StepStages(
            step=step,
            stages=int(row["stages"]),
            tasks=int(row["tasks"]),
            run_s=round(row.get("run_ms", 0) / 1e3, 1),
            cpu_s=round(row.get("cpu_ns", 0) / 1e9, 1),
            input_mb=round(row.get("input", 0) / mb, 1),
            shuffle_write_mb=round(row.get("shuffle_write", 0) / mb, 1),
            shuffle_read_mb=round(row.get("shuffle_read", 0) / mb, 1),
            spill_mb=round(row.get("spill", 0) / mb, 1),
        )
        for step, row in totals.items()
    ]


def stage_markdown(rows: list[StepStages]) -> str:
    """The stage table as docs/analytics.md shows it, with a total line."""
    head = "| step | stages | tasks | task run s | CPU s | input MB | shuffle write MB | shuffle read MB "
    lines = [head + "| spill MB |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in [*rows, _total(rows)]:
        lines.append(
            f"| {r.step} | {r.stages} | {r.tasks} | {r.run_s:.1f} | {r.cpu_s:.1f} | {r.input_mb:.1f} "
            f"| {r.shuffle_write_mb:.1f} | {r.shuffle_read_mb:.1f} | {r.spill_mb:.1f} |"
        )
    return "\n".join(lines)


def _total(rows: list[StepStages]) -> StepStages:
    job = [r for r in rows if r.step not in ("(outside the job)", FLOOR_STEP)]
    return StepStages(
        step="**the job**",
        stages=sum(r.stages for r in job),
        tasks=sum(r.tasks for r in job),
        run_s=round(sum(r.run_s for r in job), 1),
        cpu_s=round(sum(r.cpu_s for r in job), 1),
        input_mb=round(sum(r.input_mb for r in job), 1),
        shuffle_write_mb=round(sum(r.shuffle_write_mb for r in job), 1),
        shuffle_read_mb=round(sum(r.shuffle_read_mb for r in job), 1),
        spill_mb=round(sum(r.spill_mb for r in job), 1),
    )


# -- the run ---------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scale", type=float, default=1.0, help="share of the full consumers and partitions")
    parser.add_argument(
        "--scales",
        default=None,
        help="e.g. 0.1,0.3,1: run each size in turn, one JSON each, and plot time against input size",
    )
    parser.add_argument("--deploys", type=int, default=50)
    parser.add_argument("--groups", type=int, default=20)
    parser.add_argument("--rebalance-fraction", type=float, default=0.005)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--driver-memory", default="2g")
    parser.add_argument(
        "--shuffle-partitions", default="auto", help="auto: sized from the input, as the job does by default"
    )
    parser.add_argument("--workdir", type=Path, default=None, help="default: a temporary directory")
    parser.add_argument("--keep", action="store_true", help="keep the generated log and the tables")
    parser.add_argument(
        "--label", default="", help="what kind of run this is, kept in the JSON (e.g. 'loaded machine')"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--event-log",
        type=Path,
        default=None,
        help="keep Spark's event log under this directory and print its stages per step (without it "
        "the log goes to the work directory, for the executor CPU figures only)",
    )
    parser.add_argument(
        "--stage-table",
        type=Path,
        default=None,
        help="only print the stage table of an existing (uncompressed) Spark event log",
    )
    parser.add_argument(
        "--replot",
        action="store_true",
        help="only redraw the scaling plot from the JSON results beside --out",
    )
    return parser


def _event_log(directory: Path) -> dict[str, str]:
    """Spark settings that write the event log (uncompressed, for :func:`stage_table`) under
    ``directory``: ``--event-log``, else the run's work directory (the CPU figures come from it)."""
    directory.mkdir(parents=True, exist_ok=True)
    return {
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": directory.resolve().as_uri(),
        "spark.eventLog.compress": "false",
    }


def _scale_out(out: Path, scale: float) -> Path:
    """analytics_fleet.json for the full size, analytics_fleet_scale0.3.json beside it for the others."""
    return out if scale == 1.0 else out.with_name(f"{out.stem}_scale{scale:g}{out.suffix}")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.stage_table is not None:
        print(stage_markdown(stage_table(args.stage_table)))
        return 0
    if args.replot:
        print(f"scaling plot: {replot(args.out)}")
        return 0
    if args.scales is None:
        return 0 if run_one(args, args.scale, args.out, argv).agree else 1
    reports = []
    for scale in sorted(float(x) for x in args.scales.split(",")):
        reports.append(run_one(args, scale, _scale_out(args.out, scale), argv))
    plot = scaling_plot(reports, args.out.with_name(f"{args.out.stem}_scaling.png"))
    print(f"scaling plot: {plot}")
    return 0 if all(r.agree for r in reports) else 1


def straight_line(sizes: list[float], times: list[float]) -> tuple[float, float]:
    """Least-squares seconds per MB and fixed seconds: how the job grows, and what it costs at no input."""
    n = len(sizes)
    mean_x, mean_y = sum(sizes) / n, sum(times) / n
    spread = sum((x - mean_x) ** 2 for x in sizes)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(sizes, times, strict=True)) / spread
    return slope, mean_y - slope * mean_x


def scaling_plot(reports: list[Report], path: Path) -> Path:
    """Job time against input size, with the least-squares line (per MB plus a fixed part) through the
    reference runs, and the floor pass beside each run that measured it, with job / floor."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [r.size.input_bytes / 1e6 for r in reports]
    times = [r.timings.job_s for r in reports]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.plot(
        sizes, times, marker="o", linestyle="", color="#4e79a7", label="job wall time (read, tables, report)"
    )
    floors = [(x, r.timings.floor_s) for r, x in zip(reports, sizes, strict=True) if r.timings.floor_s]
    if floors:
        ax.plot(
            [x for x, _ in floors],
            [f for _, f in floors],
            marker="v",
            linestyle="",
            color="#59a14f",
            label="floor: one pass (parse, explode, aggregate per group)",
        )
    for index, (r, x, y) in enumerate(zip(reports, sizes, times, strict=True)):
        t = r.timings
        versus = (
            f"\njob / floor {t.job_over_floor:.1f} (floor {t.floor_s:.1f} s); fixed: start "
            f"{t.spark_start_s:.0f} s; work: shared frames {t.plan_s:.0f} s, report {t.report_s:.0f} s"
            if t.floor_s
            else ""
        )
        if t.floor_cpu_s:
            versus += (
                f"\nexecutor CPU job / floor {t.cpu_over_floor:.1f} "
                f"({t.job_cpu_s:.0f} s / {t.floor_cpu_s:.1f} s)"
            )
        ax.annotate(
            f"{r.size.scale:g}x{f' ({r.label})' if r.label else ''}: {r.size.records:,} records, "
            f"{y:.0f} s{versus}\n"
            f"JVM {r.memory.jvm_peak_rss_bytes / 1e9:.1f} GB, "
            f"load {r.environment.load_average_at_start[0]:.1f}",
            (x, y),
            textcoords="offset points",
            xytext=(8, -40) if r.label else (8, -26) if index % 2 == 0 else (8, 10),
            fontsize=8,
        )
    reference = [(x, y) for r, x, y in zip(reports, sizes, times, strict=True) if not r.label]
    if len({x for x, _ in reference}) >= 2:
        slope, fixed = straight_line([x for x, _ in reference], [y for _, y in reference])
        end = max(sizes) * 1.05
        ax.plot(
            [0, end],
            [fixed, fixed + slope * end],
            linestyle=":",
            color="grey",
            label=f"least squares: {fixed:.0f} s + {slope:.3f} s/MB",
        )
    ax.set_xlabel("input size (MB of event log)")
    ax.set_xlim(left=0)
    lows = [*times, *(f for _, f in floors)]
    if max(times) > 4 * min(lows):  # a loaded run or a floor pass beside the job: seconds on a log axis
        ax.set_yscale("log")
        ax.set_ylabel("seconds (log scale)")
        ax.set_ylim(bottom=min(lows) / 2, top=max(times) * 3)
    else:
        ax.set_ylabel("seconds")
        ax.set_ylim(bottom=0, top=max(times) * 1.2)
    env = reports[-1].environment
    ax.set_title(
        f"staticconsumer analyze on {reports[-1].master}, {env.cores} cores\n"
        "(1-minute load at each run's start; the line fits the unlabelled runs)",
        fontsize=10,
    )
    ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def replot(out: Path) -> Path:
    """Redraw the scaling plot from the JSON results beside ``out`` (no run)."""
    found = [*sorted(out.parent.glob(f"{out.stem}_scale*{out.suffix}")), out]
    reports = sorted(
        (msgspec.json.decode(p.read_bytes(), type=Report) for p in found if p.exists()),
        key=lambda r: r.size.scale,
    )
    return scaling_plot(reports, out.with_name(f"{out.stem}_scaling.png"))


def run_one(args: argparse.Namespace, scale: float, out: Path, argv: list[str] | None) -> Report:
    """Generate the fleet of this size, run the whole job on it, write and return the report."""
    from staticconsumer.analytics.job import Options
    from staticconsumer.analytics.progress import Progress
    from staticconsumer.analytics.run import analyze
    from staticconsumer.analytics.session import spark_session
    from staticconsumer.analytics.synthetic import FleetSpec, write_fleet

    consumers = max(args.groups, round(2_000 * scale))
    partitions = max(consumers, round(100_000 * scale))
    spec = FleetSpec(
        groups=args.groups,
        consumers_per_group=consumers // args.groups,
        partitions_per_group=partitions // args.groups,
        deploys=args.deploys,
        rebalance_fraction=args.rebalance_fraction,
    )
    environment = _environment()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="analytics-fleet-"))
    logs, tables = workdir / "logs", workdir / "out"
    event_log = args.event_log or workdir / "eventlog"
    try:
        started = time.perf_counter()
        truth = write_fleet(logs, spec)
        generate_s = time.perf_counter() - started
        files = sorted(logs.iterdir())
        input_bytes = sum(f.stat().st_size for f in files)
        print(
            f"generated {truth.records:,} records ({input_bytes / 1e6:.0f} MB) "
            f"for {spec.consumers:,} consumers, "
            f"{spec.partitions:,} partitions, {spec.deploys} deploys in {generate_s:.1f}s",
            flush=True,
        )
        with PeakMemory() as memory:
            started = time.perf_counter()
            fixed = (
                {}
                if args.shuffle_partitions == "auto"
                else {"spark.sql.shuffle.partitions": args.shuffle_partitions}
            )
            spark = spark_session(
                args.master, driver_memory=args.driver_memory, config={**fixed, **_event_log(event_log)}
            )
            spark.range(1).count()
            spark_start_s = time.perf_counter() - started
            started = time.perf_counter()
            progress = Progress()
            analysis = analyze(
                [str(logs)],
                tables,
                spark=spark,
                options=Options(deploy_gap_seconds=600.0),
                progress=progress,
                size_shuffles=not fixed,
            )
            shuffle_partitions = spark.conf.get("spark.sql.shuffle.partitions") or "?"
            job_s = time.perf_counter() - started
            moved = int(sum(row["moved_partitions"] for row in analysis.windows))
            # After the job, on its session and shuffle settings: a warm JVM and a page cache holding
            # the files favour the floor, so job / floor errs against the job.
            floor_s, floor_rows = floor_pass(spark, [str(logs)])
            print(f"floor pass: {floor_rows:,} rows in {floor_s:.1f}s; job / floor {job_s / floor_s:.1f}")
            application = spark.sparkContext.applicationId
            spark.stop()
        stages = stage_table(event_log / f"eventlog_v2_{application}")
        job_cpu_s = _total(stages).cpu_s
        floor_cpu_s = sum(r.cpu_s for r in stages if r.step == FLOOR_STEP)
        print(
            f"executor CPU: job {job_cpu_s:.1f} s, floor {floor_cpu_s:.1f} s; "
            f"job / floor {job_cpu_s / floor_cpu_s if floor_cpu_s else float('nan'):.1f}"
        )
        totals = {g: analysis.totals(g) for g in analysis.groups()}
        checks = Checks(
            rebalances_expected=truth.rebalances + spec.groups,  # + each group's first generation
            rebalances_found=int(sum(t["rebalances"] for t in totals.values())),
            restarts_expected=truth.restarts,
            restarts_found=int(sum(t["restarts"] for t in totals.values())),
            absorbed_expected=truth.absorbed,
            absorbed_found=int(sum(t["restarts_absorbed"] for t in totals.values())),
            moved_partitions_found=moved,
            malformed_lines=analysis.malformed_lines,
        )
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    report = Report(
        benchmark="analytics_fleet",
        timestamp=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        master=args.master,
        shuffle_partitions=shuffle_partitions,
        size=FleetSize(
            scale=scale,
            groups=spec.groups,
            consumers=spec.consumers,
            partitions=spec.partitions,
            deploys=spec.deploys,
            rebalance_fraction=spec.rebalance_fraction,
            records=truth.records,
            input_bytes=input_bytes,
            files=len(files),
        ),
        timings=Timings(
            generate_s=round(generate_s, 2),
            spark_start_s=round(spark_start_s, 2),
            job_s=round(job_s, 2),
            floor_s=round(floor_s, 2),
            plan_s=round(progress.steps.get(PLAN_STEP, 0.0), 2),
            tables_s=round(sum(t for n, t in progress.steps.items() if n.startswith(TABLE_STEP)), 2),
            report_s=round(progress.steps.get(REPORT_STEP, 0.0), 2),
            steps_s={name: round(took, 2) for name, took in progress.steps.items()},
            job_cpu_s=round(job_cpu_s, 1),
            floor_cpu_s=round(floor_cpu_s, 1),
        ),
        memory=Memory(
            driver_peak_rss_bytes=memory.driver,
            jvm_peak_rss_bytes=memory.jvm,
            jvm_peak_anon_rss_bytes=memory.jvm_anon,
            total_peak_rss_bytes=memory.total,
            spark_driver_memory=args.driver_memory,
        ),
        checks=checks,
        environment=environment,
        command="benchmarks/analytics_fleet.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        label=args.label,
        floor_rows=floor_rows,
        stages=stages,
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(msgspec.json.format(msgspec.json.encode(report), indent=2) + b"\n")
    print(msgspec.json.format(msgspec.json.encode(report), indent=2).decode())
    if args.event_log is not None:
        print(stage_markdown(stages))
    print(
        "the job's answers agree with the generator"
        if report.agree
        else "MISMATCH between the job and the generator"
    )
    return report


if __name__ == "__main__":
    sys.exit(main())

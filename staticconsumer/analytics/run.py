"""The Python entry point: read event logs, build the tables, write Parquet and the report."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from staticconsumer.errors import AnalyticsInputError

from . import job
from .progress import Progress
from .session import shuffle_partitions, spark_session

MAX_SUMMARY_ROWS = 10_000
"""Windows collected to the driver for the report; a fleet with more groups x deploys is cut here."""

MALFORMED_FILES_SHOWN = 100


@dataclass
class Analysis:
    """What the job found: small collected summaries plus the (lazy) tables and where they were written."""

    tables: job.Tables
    windows: list[dict[str, Any]]
    events: int
    malformed_lines: int
    malformed: list[dict[str, Any]]
    options: job.Options
    out: Path | None = None
    report: Path | None = None
    images: list[Path] = field(default_factory=list)

    def groups(self) -> list[str]:
        return sorted({str(row["group"]) for row in self.windows})

    def totals(self, group: str) -> dict[str, float]:
        """Every numeric window column summed over the group's windows (longest gap: the maximum)."""
        rows = [row for row in self.windows if row["group"] == group]
        totals: dict[str, float] = {}
        for name in _COUNTED:
            values = [float(row[name] or 0) for row in rows]
            totals[name] = max(values, default=0.0) if name.startswith("longest") else sum(values)
        totals["windows"] = len(rows)
        return totals

    def text(self) -> str:
        """The summary the CLI and the demo print."""
        lines = [f"{self.events} events read; {self.malformed_lines} malformed lines skipped"]
        for row in self.windows:
            span = (row["last_lifecycle_ts"] or row["start_ts"]) - row["start_ts"]
            forming = (
                f"{row['formation_generations']} generations while the group formed, "
                if row["formation_generations"]
                else ""
            )
            lines.append(
                f"  {row['group']} deploy {row['window']} ({_utc(row['start_ts'])}, {span:.1f}s, "
                f"{row['joins']} starts, {row['stops']} stops): {forming}"
                f"{row['rebalances_after_formation']} rebalances after the group formed; "
                f"{row['rebalances']} rebalances ({_generations(row)}), "
                f"{row['revoked_partitions']} partitions revoked ({row['revoked_in_rebalances']} by "
                f"rebalances), {row['lost_partitions']} lost, "
                f"{row['moved_partitions']} moved between instances; "
                f"{row['restarts']} restarts ({row['restarts_absorbed']} without a rebalance); "
                f"unowned {row['unowned_partition_seconds']:.1f} partition-s "
                f"(longest {row['longest_unowned_seconds']:.2f}s); "
                f"{row['double_owned']} double-owned; fenced {row['fenced']}, evicted {row['evicted']}, "
                f"vanished {row['vanished']}; {row['leader_changes']} leader changes, "
                f"{row['skip_assignments']} SkipAssignment"
            )
        if len(self.windows) >= MAX_SUMMARY_ROWS:
            lines.append(f"  (summary cut at {MAX_SUMMARY_ROWS} windows; the windows table has them all)")
        if self.report is not None:
            lines.append(f"Report: {self.report}")
        return "\n".join(lines)


def _utc(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _generations(row: dict[str, Any]) -> str:
    if not row["rebalances"]:
        return "no new generation"
    if row["first_generation"] == row["last_generation"]:
        return f"generation {row['first_generation']}"
    return f"generations {row['first_generation']}..{row['last_generation']}"


_COUNTED = (
    "joins",
    "stops",
    "rebalances",
    "formation_generations",
    "rebalances_after_formation",
    "revoked_partitions",
    "revoked_in_rebalances",
    "lost_partitions",
    "moved_partitions",
    "restarts",
    "restarts_absorbed",
    "unowned_gaps",
    "unowned_partition_seconds",
    "longest_unowned_seconds",
    "double_owned",
    "double_owned_seconds",
    "fenced",
    "evicted",
    "vanished",
    "running_at_end",
    "leader_changes",
    "skip_assignments",
    "dropped_records",
)


def _rows(frame: DataFrame, limit: int) -> list[dict[str, Any]]:
    return [row.asDict() for row in frame.limit(limit).collect()]


@dataclass(frozen=True)
class InputSize:
    paths: tuple[str, ...]
    files: int
    bytes: int


def check_input(spark: SparkSession, paths: Sequence[str]) -> InputSize:
    """Every path exists and the files under them hold bytes; else one clear error naming the path.

    Asks the path's own filesystem (Hadoop's API, so local, HDFS, S3 and globs alike) before Spark
    plans anything: Spark's own answer to a missing path is a long stack trace.
    """
    if not paths:
        raise AnalyticsInputError("no input path given")
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    files = size = 0
    for text in paths:
        path = jvm.org.apache.hadoop.fs.Path(text)
        try:
            filesystem = path.getFileSystem(conf)
            found = filesystem.globStatus(path)
            statuses = list(found) if found is not None else []
            for status in statuses:
                summary = filesystem.getContentSummary(status.getPath())
                files += int(summary.getFileCount())
                size += int(summary.getLength())
        except Exception as error:
            raise AnalyticsInputError(_filesystem_problem(spark, text, error)) from None
        if not statuses:
            raise AnalyticsInputError(f"{text}: no such file or directory")
    if files == 0:
        raise AnalyticsInputError(f"empty input: no files under {', '.join(paths)}")
    if size == 0:
        raise AnalyticsInputError(f"empty input: {files} files under {', '.join(paths)}, all empty")
    return InputSize(tuple(paths), files, size)


def _filesystem_problem(spark: SparkSession, path: str, error: Exception) -> str:
    """One line for a path Hadoop cannot open: a missing filesystem jar gets the --packages to add."""
    text = str(error)
    scheme = path.split("://", 1)[0] if "://" in path else "file"
    if "No FileSystem for scheme" in text or "S3AFileSystem" in text or "ClassNotFoundException" in text:
        hint = ""
        if scheme in ("s3a", "s3"):
            jvm = spark.sparkContext._jvm
            version = jvm.org.apache.hadoop.util.VersionInfo.getVersion() if jvm is not None else "VERSION"
            hint = f": add --packages org.apache.hadoop:hadoop-aws:{version} (see docs/analytics.md)"
        return f"{path}: Spark has no filesystem for {scheme}://{hint}"
    first = next((line for line in text.splitlines() if "Exception" in line or "Error" in line), text)
    return f"{path}: cannot be read ({first.strip()[:300]})"


def analyze(
    paths: Sequence[str | Path],
    out: str | Path | None = None,
    *,
    spark: SparkSession | None = None,
    master: str | None = None,
    options: job.Options | None = None,
    report: bool = True,
    progress: Progress | None = None,
    size_shuffles: bool = True,
) -> Analysis:
    """Analyse the event logs under ``paths``; with ``out``, write Parquet tables and the report there.

    ``spark`` reuses a session (tests, notebooks); otherwise one is made for ``master`` (default
    ``local[*]``, or the cluster's under spark-submit). Malformed lines are counted, never fatal; a
    missing path or an input without a single record raises :class:`AnalyticsInputError`.
    ``size_shuffles`` sets ``spark.sql.shuffle.partitions`` from the input's size (off when the user
    chose a number). ``progress`` prints a line per step and per completed Spark stage.
    """
    options = options or job.Options()
    session = spark or spark_session(master)
    progress = progress or Progress(quiet=True)
    progress.attach(session.sparkContext)
    try:
        return _analyze(session, [str(p) for p in paths], out, options, report, progress, size_shuffles)
    finally:
        progress.close()


def _analyze(
    session: SparkSession,
    paths: list[str],
    out: str | Path | None,
    options: job.Options,
    report: bool,
    progress: Progress,
    size_shuffles: bool,
) -> Analysis:
    size = check_input(session, paths)
    if size_shuffles:
        partitions = shuffle_partitions(size.bytes, session.sparkContext.defaultParallelism)
        session.conf.set("spark.sql.shuffle.partitions", str(partitions))
    shuffles = session.conf.get("spark.sql.shuffle.partitions")
    progress.say(
        f"{size.files} files, {size.bytes / 1e6:.1f} MB under {', '.join(paths)}; "
        f"{shuffles} shuffle partitions (adaptive), master {session.sparkContext.master}"
    )
    with progress.step("reading and parsing every line once"):
        scanned = job.scan(job.parse(job.read_lines(session, paths)))
        valid = F.col("problem").isNull()
        # The same pass gives the span and about how many groups (they size the window placement).
        counts = scanned.agg(
            F.count_if(valid).alias("valid"),
            F.count_if(valid & ~F.col("dup")).alias("records"),
            F.count_if(~valid).alias("malformed"),
            F.min(F.when(valid, F.col("ts"))).alias("first_ts"),
            F.max(F.when(valid, F.col("ts"))).alias("last_ts"),
            F.approx_count_distinct(F.when(valid, F.col("group"))).alias("groups"),
        ).collect()[0]
    malformed_lines = int(counts["malformed"] or 0)
    if not counts["valid"]:
        example = ""
        if malformed_lines:
            first = job.malformed_lines(scanned).limit(1).collect()[0]
            example = f"; e.g. {first['file']}: {first['problem']}"
        raise AnalyticsInputError(
            f"empty input: no event log record in {size.files} files under {', '.join(paths)} "
            f"({malformed_lines} malformed lines{example})"
        )
    event_count = int(counts["records"])
    with progress.step("planning the tables"):  # and computing the shared frames (materialized in build)
        events = job.records(scanned)
        span = job.Span(float(counts["first_ts"]), float(counts["last_ts"]), int(counts["groups"] or 1))
        tables = job.build(scanned, events, options, malformed=malformed_lines > 0, span=span)
    out_path = None if out is None else Path(str(out))
    if out is not None:
        for name, frame in tables.as_dict().items():
            with progress.step(f"table {name}"):
                frame.write.mode("overwrite").options(**job.write_options(name)).parquet(f"{out}/{name}")
        # From here on (the summary, the report, the caller) the written tables are read: a filtered
        # Parquet scan reads a few columns, where the plan's frames would decode whole cached rows
        # and place each in its window again. Read with the schema they were written with: without it
        # each read is a Spark job listing the files and reading a footer (nine one-task jobs).
        tables = job.Tables(
            **{
                name: session.read.schema(frame.schema).parquet(f"{out}/{name}")
                for name, frame in tables.as_dict().items()
            }
        )
    with progress.step("per-window summary"):
        windows = _rows(tables.windows.orderBy("group", "window"), MAX_SUMMARY_ROWS)
        malformed = _rows(tables.malformed.orderBy(F.desc("lines")), MALFORMED_FILES_SHOWN)
    analysis = Analysis(
        tables=tables,
        windows=windows,
        events=event_count,
        malformed_lines=malformed_lines,
        malformed=malformed,
        options=options,
        out=out_path,
    )
    for row in analysis.windows:
        for name, value in row.items():
            if isinstance(value, float) and math.isinf(value):
                row[name] = None
    if report and out_path is not None and out_path.parts and "://" not in str(out):
        from .report import write_report

        with progress.step("report"):
            write_report(analysis, out_path)
    return analysis

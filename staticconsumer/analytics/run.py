"""The Python entry point: read event logs, build the tables, write Parquet and the report."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from . import job
from .session import spark_session

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
            lines.append(
                f"  {row['group']} deploy {row['window']} ({span:.1f}s, {row['joins']} starts, "
                f"{row['stops']} stops): {row['rebalances']} rebalances "
                f"({_generations(row)}), "
                f"{row['revoked_partitions']} partitions revoked, {row['lost_partitions']} lost, "
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
    "revoked_partitions",
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


def analyze(
    paths: Sequence[str | Path],
    out: str | Path | None = None,
    *,
    spark: SparkSession | None = None,
    master: str | None = None,
    options: job.Options | None = None,
    report: bool = True,
) -> Analysis:
    """Analyse the event logs under ``paths``; with ``out``, write Parquet tables and the report there.

    ``spark`` reuses a session (tests, notebooks); otherwise one is made for ``master`` (default
    ``local[*]``, or the cluster's under spark-submit). Malformed lines are counted, never fatal.
    """
    options = options or job.Options()
    session = spark or spark_session(master)
    lines = job.read_lines(session, [str(path) for path in paths])
    events, malformed = job.parse(lines)
    tables = job.build(events, malformed, options)
    out_path = None if out is None else Path(str(out))
    if out is not None:
        for name, frame in tables.as_dict().items():
            frame.write.mode("overwrite").parquet(f"{out}/{name}")
    windows = _rows(tables.windows.orderBy("group", "window"), MAX_SUMMARY_ROWS)
    totals = events.agg(F.count("*").alias("n")).collect()[0]
    bad = tables.malformed.agg(F.sum("lines").alias("n")).collect()[0]
    analysis = Analysis(
        tables=tables,
        windows=windows,
        events=int(totals["n"]),
        malformed_lines=int(bad["n"] or 0),
        malformed=_rows(tables.malformed.orderBy(F.desc("lines")), MALFORMED_FILES_SHOWN),
        options=options,
        out=out_path,
    )
    for row in analysis.windows:
        for name, value in row.items():
            if isinstance(value, float) and math.isinf(value):
                row[name] = None
    if report and out_path is not None and out_path.parts and "://" not in str(out):
        from .report import write_report

        write_report(analysis, out_path)
    return analysis

"""``staticconsumer analyze``: tables, report and summary from the command line; clear exit without Spark."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from staticconsumer import cli
from staticconsumer.analytics import cli as analytics_cli
from staticconsumer.analytics.synthetic import FleetSpec, write_fleet

TABLES = {
    "windows",
    "generations",
    "leaders",
    "ownership",
    "gaps",
    "overlaps",
    "moves",
    "sessions",
    "malformed",
}


def test_analyze_command_writes_tables_report_and_summary(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = FleetSpec(
        groups=2, consumers_per_group=4, partitions_per_group=16, deploys=3, rebalance_fraction=0.25
    )
    truth = write_fleet(tmp_path / "logs", spec)
    out = tmp_path / "report"
    assert cli.main(["analyze", str(tmp_path / "logs"), "--out", str(out), "--deploy-gap", "600"]) == 0
    captured = capsys.readouterr()
    printed = captured.out
    progress = captured.err.splitlines()
    assert any(
        line.startswith("analyze: [") and "reading and parsing every line once: done in" in line
        for line in progress
    )
    assert any(" done (" in line and " tasks" in line for line in progress), "Spark stages as they complete"
    assert printed.startswith(f"{truth.records} events read; 0 malformed lines skipped\n")
    assert printed.count(" deploy ") == spec.groups * (spec.deploys + 1)
    assert {p.name for p in out.iterdir()} >= TABLES
    assert {"summary.md", "summary.html", "groups.png", "ownership.png"} <= {p.name for p in out.iterdir()}
    windows = spark.read.parquet(str(out / "windows"))
    totals = windows.groupBy().sum("rebalances", "restarts", "restarts_absorbed", "moved_partitions").first()
    assert totals is not None
    assert list(totals) == [truth.rebalances + spec.groups, truth.restarts, truth.absorbed, 0]
    assert "| deploy window (UTC) | starts | generations while forming |" in (out / "summary.md").read_text()
    assert "rebalances after the group formed" in printed
    assert spark.sparkContext._jsc is not None, "the command left the borrowed session running"


def test_analyze_without_pyspark_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(analytics_cli, "pyspark_available", lambda: False)
    assert cli.main(["analyze", "/nonexistent"]) == 2
    assert "pip install 'staticconsumer[analytics]'" in capsys.readouterr().err

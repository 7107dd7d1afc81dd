"""The scan's counts (lines, records, malformed lines, span, groups) come from the pass that keeps it."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import Observation, SparkSession

from staticconsumer.analytics import job
from staticconsumer.analytics.synthetic import SyntheticSession, write_lines


def test_the_scan_counts_its_input_in_the_pass_that_keeps_it(spark: SparkSession, tmp_path: Path) -> None:
    a = SyntheticSession("g1", "pod-a", "c-a1").joining(10).synced(11, 1, "m-a", "m-a", [("t", 0)])
    a.revoked(40, [("t", 0)], reason="stop").stopped(40.5)
    b = SyntheticSession("g2", "pod-b", "c-b1").joining(12).synced(13, 1, "m-b", "m-b", [("t", 1)])
    path = write_lines(tmp_path / "log" / "fleet.jsonl", [a, b])
    first_line = path.read_bytes().splitlines(keepends=True)[0]
    with open(path, "ab") as out:  # one record repeated, one line that is no record
        out.write(first_line + b"not json\n")
    records = len(a.records) + len(b.records)

    context = spark.sparkContext
    context.setJobGroup("scan-counts", "the scan and its counts")
    try:
        observation = Observation("scan")
        scanned = job.scan(job.parse(job.read_lines(spark, [str(path.parent)])), observation)
        jobs = len(context.statusTracker().getJobIdsForGroup("scan-counts"))
        counts = observation.get
        assert len(context.statusTracker().getJobIdsForGroup("scan-counts")) == jobs, (
            "reading the counts ran no Spark job of its own"
        )
    finally:
        context.setJobGroup(None, None)  # type: ignore[arg-type]
    assert counts == {
        "valid": records + 1,
        "records": records,
        "malformed": 1,
        "first_ts": 10.0,
        "last_ts": 40.5,
        "groups": 2,
    }
    assert scanned.where("problem IS NULL AND NOT dup").count() == records

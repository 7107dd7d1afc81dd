"""Analyse membership event logs with Spark, from Python, locally or under spark-submit.

    python examples/analyze_events.py                        # a small synthetic rollout, analysed
    python examples/analyze_events.py LOGS... --out report/  # your logs (`staticconsumer analyze` options)
    spark-submit --master yarn examples/analyze_events.py hdfs:///logs/m/ --out hdfs:///reports/m --no-report

Without arguments it writes the event log of a three-pod rollout (one restart absorbed by static
membership, one slow enough to cost a rebalance, one pod killed outright), runs the job on local[*],
and prints the per-deploy summary and a few rows of the tables. Needs `pip install
'staticconsumer[analytics]'` and Java 17+.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from pyspark.sql import functions as F

from staticconsumer.analytics.cli import main as cli_main
from staticconsumer.analytics.run import analyze
from staticconsumer.analytics.synthetic import SyntheticSession, write_lines

T = "orders"


def rollout(directory: Path) -> Path:
    """Three static pods, 6 partitions; then a rollout an hour later."""
    parts = {
        pod: [(T, p) for p in range(i * 2, i * 2 + 2)] for i, pod in enumerate(["pod-0", "pod-1", "pod-2"])
    }
    first = {pod: SyntheticSession("orders", pod, f"{pod}-a").joining(0.0) for pod in parts}
    for pod, session in first.items():
        session.synced(1.0, 1, f"{pod}-a", "pod-0-a", parts[pod])
    t = 3600.0
    # pod-0 restarts within the session timeout: same generation, same partitions, no rebalance.
    first["pod-0"].revoked(t, parts["pod-0"], reason="stop").stopped(t + 0.1)
    again = SyntheticSession("orders", "pod-0", "pod-0-b").joining(t + 2)
    again.synced(t + 3, 1, "pod-0-b", "pod-0-b", parts["pod-0"], skip_assignment=True)
    # pod-1 is killed (no final records) and comes back after the session timeout: a rebalance.
    first["pod-1"].committed(t + 5, parts["pod-1"])
    for pod, session in (("pod-0", again), ("pod-2", first["pod-2"])):
        session.rejoin(t + 60).revoked(t + 60, parts[pod])
        session.synced(t + 61, 2, session.session, "pod-0-b", parts[pod])
    back = SyntheticSession("orders", "pod-1", "pod-1-b").joining(t + 58)
    back.synced(t + 61.5, 2, "pod-1-b", "pod-0-b", parts["pod-1"])
    return write_lines(directory / "orders.jsonl", [*first.values(), again, back])


def main() -> int:
    if len(sys.argv) > 1:
        return cli_main(sys.argv[1:])
    work = Path(tempfile.mkdtemp(prefix="analyze-events-"))
    log = rollout(work / "logs")
    analysis = analyze([log], work / "report")
    print(analysis.text())
    print("Unowned gaps of the killed pod's partitions:")
    gaps = analysis.tables.gaps.where(F.col("from_owner") == "pod-1").orderBy("partition")
    for row in gaps.select("partition", "seconds", "after_inferred_end").collect():
        inferred = row["after_inferred_end"]
        print(f"  {T}-{row['partition']}: {row['seconds']:.1f}s (dead owner's end inferred: {inferred})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

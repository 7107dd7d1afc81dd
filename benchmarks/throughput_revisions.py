"""getmany throughput of StaticConsumer at two revisions of this repository, interleaved on one broker.

Issue 16 moved group membership onto its own thread; its target is that ``getmany`` throughput stays
within 5% of what it was before. Two trees cannot be imported by one interpreter (both are
``staticconsumer``), so each timed run is its own process started in the tree of its revision: the
base (``git archive`` of ``--base`` into a temporary directory) and this checkout. Every round runs the
base, this checkout and a bare hand-assigned aiokafka consumer (the floor, as the noise reference), in
an order that rotates from round to round, against the same pre-filled topic. Each run is a fresh
consumer in a fresh group, timed from its first batch to the last record, exactly as
``benchmarks.throughput_overhead`` times it (the run functions are that module's, at each revision).

Run: .venv/bin/python -m benchmarks.throughput_revisions [--base 88c250a] [--rounds 9]
Writes benchmarks/results/revisions/throughput_revisions.json (schema ``Report``, self-contained:
``benchmarks.run`` does not know it) and a PNG when matplotlib is installed.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import msgspec

from benchmarks.common import RESULTS, Environment, Spread, environment, spread
from benchmarks.throughput_overhead import PARTITIONS, fill
from staticconsumer.testing import EmbeddedKafka

NAME = "throughput_revisions"
TARGET = 0.95
"""This checkout's getmany median over the base's, at least."""
ROOT = Path(__file__).resolve().parent.parent
RUN = (
    "import asyncio, sys\n"
    "from benchmarks.throughput_overhead import {function}\n"
    "print(asyncio.run({function}(sys.argv[1], sys.argv[2], int(sys.argv[3]))))\n"
)


class Report(msgspec.Struct):
    benchmark: str
    base: str
    head: str
    records_per_run: int
    environment: Environment
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]
    base_records_per_second: Spread
    head_records_per_second: Spread
    aiokafka_records_per_second: Spread
    ratio: float
    """This checkout's median over the base's: 1.0 is no change."""
    paired_ratios: list[float]
    """The same ratio within each round (runs close in time share the machine's state)."""
    target_met: bool


def _revision(rev: str) -> str:
    return subprocess.run(
        ["git", "rev-parse", "--short", rev], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()


def _export(rev: str, into: Path) -> None:
    """The tree of ``rev`` as files (no git metadata): what that revision's users ran."""
    archive = subprocess.run(["git", "archive", rev], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)


def _timed_run(tree: Path, function: str, bootstrap: str, topic: str, records: int) -> float:
    """One run in its own interpreter, importing the ``staticconsumer`` of ``tree`` (its cwd)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, "-c", RUN.format(function=function), bootstrap, topic, str(records)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{function} in {tree} failed:\n{done.stderr[-2000:]}")
    return float(done.stdout.strip().splitlines()[-1])


def plot(report: Report, path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    figure, axis = plt.subplots(figsize=(7, 4))
    spreads = [
        report.base_records_per_second,
        report.head_records_per_second,
        report.aiokafka_records_per_second,
    ]
    axis.boxplot([s.samples for s in spreads], patch_artist=True)
    axis.set_xticks([1, 2, 3])
    axis.set_xticklabels([f"base {report.base}", f"head {report.head}", "aiokafka assigned"])
    axis.set_ylabel("records/s (getmany)")
    axis.set_title(
        f"getmany before and after the membership thread: head/base {report.ratio:.3f} "
        f"({report.base_records_per_second.runs} rounds)",
        fontsize=10,
    )
    axis.grid(axis="y", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=80)
    plt.close(figure)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--base", default="88c250a", help="the revision to compare against")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--records", type=int, default=200_000, help="records per run")
    parser.add_argument("--record-bytes", type=int, default=100)
    parser.add_argument("--kafka-version", default=None)
    parser.add_argument("--out", type=Path, default=RESULTS / "revisions")
    args = parser.parse_args(argv)
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    base, head = _revision(args.base), _revision("HEAD")
    load_before = os.getloadavg()
    runs: dict[str, list[float]] = {"base": [], "head": [], "aiokafka": []}
    with (
        tempfile.TemporaryDirectory(prefix="throughput-base-") as base_dir,
        EmbeddedKafka(args.kafka_version) as kafka,
    ):
        _export(args.base, Path(base_dir))
        topic = f"throughput-{uuid.uuid4().hex[:8]}"
        kafka.create_topic(topic, PARTITIONS)
        asyncio.run(fill(kafka.bootstrap_servers, topic, args.records, args.record_bytes))
        plan = [
            ("base", Path(base_dir), "ours"),
            ("head", ROOT, "ours"),
            ("aiokafka", ROOT, "aiokafka_assigned"),
        ]
        for round_ in range(args.rounds):
            shift = round_ % len(plan)
            for name, tree, function in plan[shift:] + plan[:shift]:
                rate = _timed_run(tree, function, kafka.bootstrap_servers, topic, args.records)
                runs[name].append(rate)
                print(f"round {round_ + 1}/{args.rounds} {name:9s} {rate:12,.0f} records/s", flush=True)
        env = environment(kafka.version)
    load_after = os.getloadavg()
    paired = [round(h / b, 4) for h, b in zip(runs["head"], runs["base"], strict=True)]
    ratio = statistics.median(runs["head"]) / statistics.median(runs["base"])
    report = Report(
        NAME,
        base,
        head,
        args.records,
        env,
        load_before,
        load_after,
        spread(runs["base"]),
        spread(runs["head"]),
        spread(runs["aiokafka"]),
        round(ratio, 4),
        paired,
        ratio >= TARGET,
    )
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"{NAME}.json"
    path.write_bytes(msgspec.json.format(msgspec.json.encode(report), indent=2) + b"\n")
    print(f"wrote {path}")
    if plot(report, path.with_suffix(".png")):
        print(f"wrote {path.with_suffix('.png')}")
    print(
        f"head {head} / base {base}: {ratio:.3f} (paired median {statistics.median(paired):.3f}); "
        f"target (>= {TARGET}) {'MET' if report.target_met else 'NOT MET'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

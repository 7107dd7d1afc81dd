"""Assignor benchmark: ours vs aiokafka 0.14 vs Java (kafka-clients in the oracle JVM), same run.

For each size (members x partitions, every member subscribed to every topic, all members static) and
each of range, roundrobin and sticky it measures:

* ``initial``: the first assignment of an empty group;
* ``member-left``: the next rebalance after one member leaves, every survivor reporting what it was
  given (sticky: in userData), with the number of partitions moved away from a surviving owner.

Java's time is kafka-clients' own ``assign`` (the oracle's ``elapsedNanos``), JSON excluded. aiokafka
sizes that would take many minutes are skipped and recorded as such, with the last size measured.

    .venv/bin/python benchmarks/assignors.py            # default sizes, a few minutes
    .venv/bin/python benchmarks/assignors.py --full     # adds 2,000 members x 1,000,000 partitions

Writes benchmarks/results/assignors.json (schema: the ``Results`` struct below) and, when matplotlib
is importable, benchmarks/results/assignors.png.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import gc
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from assignors import Member, TopicInfo, create, encode_sticky_user_data  # noqa: E402

Assignment = dict[str, list[tuple[str, int]]]

ASSIGNORS = ("range", "roundrobin", "sticky")
# (members, topics, partitions per topic)
DEFAULT_SIZES = [(10, 10, 100), (100, 20, 500), (500, 50, 2_000), (2_000, 50, 2_000)]
FULL_SIZE = (2_000, 500, 2_000)
AIOKAFKA_BUDGET_SECONDS = 60.0


class Environment(msgspec.Struct):
    python: str
    platform: str
    cpu_model: str
    cores: int
    memory_bytes: int
    git_revision: str
    kafka_clients_version: str | None
    aiokafka_version: str
    started_at: str
    command: str


class Row(msgspec.Struct):
    assignor: str
    implementation: str  # "staticconsumer" | "aiokafka" | "java"
    phase: str  # "initial" | "member-left"
    members: int
    partitions: int
    seconds: float | None
    moved: int | None = None
    skipped: str | None = None


class Results(msgspec.Struct):
    environment: Environment
    rows: list[Row]
    notes: list[str]


# ---- environment -------------------------------------------------------------------------------------


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_bytes() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _git_revision() -> str:
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "assignors"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        return rev + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


# ---- inputs --------------------------------------------------------------------------------------------


def make_topics(topic_count: int, per_topic: int) -> dict[str, TopicInfo]:
    return {f"topic-{i:04d}": TopicInfo(per_topic) for i in range(topic_count)}


def member_ids(count: int) -> list[tuple[str, str]]:
    """(member id, instance id): member ids deliberately sort differently from instance ids."""
    return [(f"consumer-{(i * 7919) % count:05d}-{i}", f"instance-{i:05d}") for i in range(count)]


def moved_from_survivors(before: Assignment, after: Assignment, survivors: Sequence[str]) -> int:
    return sum(len(set(before[m]) - set(after.get(m, []))) for m in survivors)


def _measure(fn: Callable[[], Any], number: int) -> tuple[float, Any]:
    # As timeit does: no cyclic GC pauses inside the measurement, for every implementation alike.
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(number):
            result = fn()
        return (time.perf_counter() - start) / number, result
    finally:
        gc.enable()


def _timed(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Best of ``repeat`` measurements; calls under 20 ms are looped so a measurement lasts ~50 ms.

    Calls over 2 s are measured once: at those sizes the noise is small relative to the time.
    """
    best, result = _measure(fn, 1)
    if best > 2.0:
        return best, result
    number = max(1, int(0.05 / max(best, 1e-6))) if best < 0.02 else 1
    for _ in range(repeat):
        seconds, result = _measure(fn, number)
        best = min(best, seconds)
    return best, result


# ---- implementations ----------------------------------------------------------------------------------


def run_ours(
    name: str,
    ids: list[tuple[str, str]],
    topics: dict[str, TopicInfo],
    previous: Assignment | None,
    repeat: int,
) -> tuple[float, Assignment]:
    topic_names = list(topics)
    members = []
    for member_id, instance in ids:
        owned = previous.get(member_id, []) if previous is not None else []
        members.append(
            Member(
                member_id,
                topic_names,
                group_instance_id=instance,
                owned_partitions=owned,
                generation=1 if previous is not None else -1,
                user_data=encode_sticky_user_data(owned, 1)
                if name == "sticky" and previous is not None
                else None,
            )
        )
    assignor = create(name)
    seconds, result = _timed(lambda: assignor.assign(members, topics), repeat)
    return seconds, {m: a.partitions for m, a in result.items()}


class _Cluster:
    """The ClusterMetadata methods aiokafka's assignors call."""

    def __init__(self, topics: Mapping[str, TopicInfo]):
        self._partitions = {t: set(range(info.partitions)) for t, info in topics.items()}

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        return self._partitions.get(topic)

    def topics(self) -> set[str]:
        return set(self._partitions)


def run_aiokafka(
    name: str,
    ids: list[tuple[str, str]],
    topics: dict[str, TopicInfo],
    previous: Assignment | None,
    repeat: int,
) -> tuple[float, Assignment]:
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from aiokafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
    from aiokafka.coordinator.protocol import ConsumerProtocolMemberMetadata

    cls: Any = {
        "range": RangePartitionAssignor,
        "roundrobin": RoundRobinPartitionAssignor,
        "sticky": StickyPartitionAssignor,
    }[name]
    topic_names = list(topics)
    metadata = {}
    for member_id, _ in ids:
        user_data = b""
        if name == "sticky" and previous is not None:
            user_data = encode_sticky_user_data(previous.get(member_id, []), 1)
        metadata[member_id] = ConsumerProtocolMemberMetadata(0, topic_names, user_data)
    cluster = _Cluster(topics)
    seconds, result = _timed(lambda: cls.assign(cluster, metadata), repeat)
    out: Assignment = {}
    for member_id, assignment in result.items():
        out[member_id] = [(t, p) for t, parts in assignment.assignment for p in parts]
    return seconds, out


def run_java(
    oracle: Any,
    name: str,
    ids: list[tuple[str, str]],
    topics: dict[str, TopicInfo],
    previous: Assignment | None,
) -> tuple[float, Assignment]:
    topic_names = list(topics)
    members = []
    for member_id, instance in ids:
        body: dict[str, Any] = {"memberId": member_id, "groupInstanceId": instance, "topics": topic_names}
        if previous is not None:
            owned = previous.get(member_id, [])
            body["ownedPartitions"] = [list(tp) for tp in owned]
            body["generation"] = 1
            if name == "sticky":
                body["userData"] = base64.b64encode(encode_sticky_user_data(owned, 1)).decode()
        members.append(body)
    java_topics = {t: [{"partition": p} for p in range(info.partitions)] for t, info in topics.items()}
    result = oracle.assign(name, members, java_topics)
    assignment = {
        m: [(tp[0], tp[1]) for tp in body["partitions"]] for m, body in result["assignment"].items()
    }
    return result["elapsedNanos"] / 1e9, assignment


# ---- driver --------------------------------------------------------------------------------------------


def bench(args: argparse.Namespace) -> Results:
    sizes = list(DEFAULT_SIZES)
    if args.full:
        sizes.append(FULL_SIZE)
    oracle: Any = None
    if not args.no_java:
        from staticconsumer.testing.oracle import JavaOracle

        oracle = JavaOracle.start(args.kafka_version)
        # Warm the JIT a little so small sizes are not all class loading.
        warm_ids = member_ids(20)
        for name in ASSIGNORS:
            for _ in range(3):
                run_java(oracle, name, warm_ids, make_topics(5, 40), None)
    import aiokafka

    env = Environment(
        python=sys.version.split()[0],
        platform=platform.platform(),
        cpu_model=_cpu_model(),
        cores=os.cpu_count() or 0,
        memory_bytes=_memory_bytes(),
        git_revision=_git_revision(),
        kafka_clients_version=None if oracle is None else oracle.kafka_version,
        aiokafka_version=aiokafka.__version__,
        started_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        command=" ".join([Path(sys.executable).name, *sys.argv]),
    )
    rows: list[Row] = []
    aiokafka_last: dict[str, tuple[int, int, float]] = {}  # assignor -> (members, partitions, seconds)

    def record(row: Row) -> None:
        rows.append(row)
        shown = "skipped" if row.seconds is None else f"{row.seconds:8.3f}s"
        moved = "" if row.moved is None else f" moved={row.moved}"
        print(
            f"{row.assignor:10} {row.implementation:14} {row.phase:11} "
            f"{row.members:5}x{row.partitions:<8} {shown}{moved}",
            flush=True,
        )

    try:
        for members, topic_count, per_topic in sizes:
            topics = make_topics(topic_count, per_topic)
            partitions = topic_count * per_topic
            ids = member_ids(members)
            leaver = ids[members // 2][0]
            survivors_ids = [x for x in ids if x[0] != leaver]
            survivors = [m for m, _ in survivors_ids]
            repeat = 1 if partitions >= 1_000_000 else args.repeat
            for name in ASSIGNORS:
                t0, first = run_ours(name, ids, topics, None, repeat)
                record(Row(name, "staticconsumer", "initial", members, partitions, t0))
                t1, second = run_ours(name, survivors_ids, topics, first, repeat)
                moved = moved_from_survivors(first, second, survivors)
                record(Row(name, "staticconsumer", "member-left", members, partitions, t1, moved))

                if not args.no_aiokafka:
                    last = aiokafka_last.get(name)
                    estimate = 0.0
                    if last is not None:
                        estimate = last[2] * (members * partitions) / max(1, last[0] * last[1])
                    if estimate > AIOKAFKA_BUDGET_SECONDS:
                        note = (
                            f"skipped: too slow (estimated {estimate:.0f}s from {last[2]:.2f}s at "  # type: ignore[index]
                            f"{last[0]} members x {last[1]} partitions)"  # type: ignore[index]
                        )
                        for phase in ("initial", "member-left"):
                            record(Row(name, "aiokafka", phase, members, partitions, None, skipped=note))
                    else:
                        a0, a_first = run_aiokafka(name, ids, topics, None, repeat)
                        record(Row(name, "aiokafka", "initial", members, partitions, a0))
                        a1, a_second = run_aiokafka(name, survivors_ids, topics, a_first, repeat)
                        a_moved = moved_from_survivors(a_first, a_second, survivors)
                        record(Row(name, "aiokafka", "member-left", members, partitions, a1, a_moved))
                        aiokafka_last[name] = (members, partitions, max(a0, a1))

                if oracle is not None:
                    best0 = float("inf")
                    j_first: Assignment = {}
                    for _ in range(repeat):
                        j0, j_first = run_java(oracle, name, ids, topics, None)
                        best0 = min(best0, j0)
                    record(Row(name, "java", "initial", members, partitions, best0))
                    best1 = float("inf")
                    j_second: Assignment = {}
                    for _ in range(repeat):
                        j1, j_second = run_java(oracle, name, survivors_ids, topics, j_first)
                        best1 = min(best1, j1)
                    j_moved = moved_from_survivors(j_first, j_second, survivors)
                    record(Row(name, "java", "member-left", members, partitions, best1, j_moved))
    finally:
        if oracle is not None:
            oracle.close()
    return Results(env, rows, ratio_notes(rows))


def ratio_notes(rows: list[Row]) -> list[str]:
    """Ours vs the others per assignor, size and phase: the figures the closing note quotes."""
    index = {(r.assignor, r.implementation, r.phase, r.members, r.partitions): r for r in rows}
    notes = []
    for r in rows:
        if r.implementation != "staticconsumer" or r.seconds is None:
            continue
        parts = [f"{r.assignor} {r.phase} {r.members}x{r.partitions}: ours {r.seconds:.3f}s"]
        for other in ("aiokafka", "java"):
            o = index.get((r.assignor, other, r.phase, r.members, r.partitions))
            if o is None:
                continue
            if o.seconds is None:
                parts.append(f"{other} skipped")
            else:
                parts.append(
                    f"{other} {o.seconds:.3f}s (ours/{other} = {r.seconds / max(o.seconds, 1e-9):.2f})"
                )
        notes.append("; ".join(parts))
    return notes


def plot(results: Results, path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, axes = plt.subplots(1, len(ASSIGNORS), figsize=(5 * len(ASSIGNORS), 4), sharey=True)
    for ax, name in zip(axes, ASSIGNORS, strict=True):
        for impl in ("staticconsumer", "aiokafka", "java"):
            points = [
                (r.members * r.partitions, r.seconds)
                for r in results.rows
                if r.assignor == name and r.implementation == impl and r.phase == "member-left" and r.seconds
            ]
            if points:
                xs, ys = zip(*points, strict=True)
                ax.loglog(xs, ys, marker="o", label=impl)
        ax.set_title(f"{name}: rebalance after one member leaves")
        ax.set_xlabel("members x partitions")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("seconds")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return True


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--full", action="store_true", help="add 2,000 members x 1,000,000 partitions")
    parser.add_argument("--no-java", action="store_true", help="skip Java (no JVM needed)")
    parser.add_argument("--no-aiokafka", action="store_true", help="skip aiokafka")
    parser.add_argument("--repeat", type=int, default=2, help="best of N per implementation (default 2)")
    parser.add_argument("--kafka-version", default=None, help="kafka-clients version for the oracle")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "assignors.json")
    args = parser.parse_args(argv)
    results = bench(args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(msgspec.json.format(msgspec.json.encode(results), indent=2) + b"\n")
    print(f"wrote {args.out}")
    if plot(results, args.out.with_suffix(".png")):
        print(f"wrote {args.out.with_suffix('.png')}")
    else:
        print("matplotlib not installed: no plot (pip install matplotlib)")
    for note in results.notes:
        print(note)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

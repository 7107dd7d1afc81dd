"""Assignor benchmark: ours vs aiokafka 0.14 vs Java (kafka-clients), interleaved in one run.

For each size (members x partitions, every member subscribed to every topic, all members static) and
each of range, roundrobin, sticky and cooperative-sticky it measures:

* ``initial``: the first assignment of an empty group;
* ``member-left``: the next rebalance after one member leaves, every survivor reporting what this
  implementation gave it (sticky: in userData; cooperative-sticky: owned partitions and generation),
  with the number of partitions moved away from a surviving owner.

How, so that the figures compare like with like:

* every implementation is measured on the same inputs, built before timing (ours: ``Member`` objects;
  aiokafka: its member metadata; Java: ``Subscription`` objects built inside the JVM by
  ``AssignorBench`` in the oracle module, kafka-clients' own ``assign`` timed with ``System.nanoTime``);
* the same warm-up for all: ``--warmup`` untimed calls of the very call measured, per implementation;
* the garbage collector on for all, as a real leader runs: both heaps are collected once after the
  inputs are built (``gc.collect()``, ``System.gc()``), then the collectors run as they do in any
  process (Python's cyclic GC enabled, the JVM's defaults), during the calls that pay for them; no
  implementation is timed in a loop, and results kept between calls are arrays the GC never scans;
* repeats interleaved: each repeat runs every implementation once, in an order that rotates, so they
  share the machine's conditions; ratios are paired per repeat (ours / Java and ours / aiokafka of the
  same repeat), summarised as median with quartiles; every sample is kept;
* every assignment, warm-up ones included, is checked complete and valid (each partition assigned
  exactly once, only to subscribers; balanced for roundrobin and the sticky assignors, range's
  floor/ceil share per topic), and the row says so;
* the load average is recorded at the start and for every row.

aiokafka sizes that would take many minutes are skipped and recorded as such, with the last size
measured; aiokafka has no cooperative-sticky.

    .venv/bin/python benchmarks/assignors.py            # default sizes
    .venv/bin/python benchmarks/assignors.py --full     # adds 2,000 members x 1,000,000 partitions

Writes benchmarks/results/assignors.json (schema: the ``Results`` struct below) and, when matplotlib
is importable, benchmarks/results/assignors.png.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import gc
import json
import os
import platform
import subprocess
import sys
import time
from array import array
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from assignors import (  # noqa: E402
    Member,
    TopicInfo,
    create,
    encode_cooperative_user_data,
    encode_sticky_user_data,
)
from benchmarks.common import Spread, spread  # noqa: E402

Assignment = dict[str, "array[int]"]
"""Member id -> partition ids (topic index x partitions per topic + partition). Arrays, not lists:
they hold no Python objects, so the results kept between calls give the cyclic GC nothing to scan
that a real leader's heap would not have."""

ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")
IMPLEMENTATIONS = ("staticconsumer", "aiokafka", "java")
AIOKAFKA_ASSIGNORS = ("range", "roundrobin", "sticky")
# (members, topics, partitions per topic)
DEFAULT_SIZES = [(10, 10, 100), (100, 20, 500), (500, 50, 2_000), (2_000, 50, 2_000)]
FULL_SIZE = (2_000, 500, 2_000)
AIOKAFKA_BUDGET_SECONDS = 60.0
BALANCED = ("roundrobin", "sticky", "cooperative-sticky")


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
    load_average_at_start: tuple[float, float, float] | None = None
    java_version: str | None = None
    method: str | None = None
    """How the figures were taken (warm-up, GC, interleaving); absent in results from before."""


class Row(msgspec.Struct):
    assignor: str
    implementation: str  # "staticconsumer" | "aiokafka" | "java"
    phase: str  # "initial" | "member-left"
    members: int
    partitions: int
    seconds: float | None
    """Median of ``samples`` (results from before interleaving: the best of a few runs)."""
    moved: int | None = None
    skipped: str | None = None
    samples: list[float] = msgspec.field(default_factory=list)
    """Seconds of every measured call, in repeat order (paired with the other implementations')."""
    warmup: int | None = None
    valid: bool | None = None
    """Every assignment it made here (warm-up included) was complete and valid; see ``problem``."""
    problem: str | None = None
    ratio_to_java: Spread | None = None
    """ours / Java, paired per repeat (staticconsumer rows only)."""
    ratio_to_aiokafka: Spread | None = None
    load_average: tuple[float, float, float] | None = None
    """At the start of this row's measurements."""


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


def _load() -> tuple[float, float, float] | None:
    return os.getloadavg() if hasattr(os, "getloadavg") else None


# ---- inputs and checks ---------------------------------------------------------------------------------


def topic_names(count: int) -> list[str]:
    return [f"topic-{i:04d}" for i in range(count)]


def make_topics(topic_count: int, per_topic: int) -> dict[str, TopicInfo]:
    return {name: TopicInfo(per_topic) for name in topic_names(topic_count)}


def member_ids(count: int) -> list[tuple[str, str]]:
    """(member id, instance id): member ids deliberately sort differently from instance ids."""
    return [(f"consumer-{(i * 7919) % count:05d}-{i}", f"instance-{i:05d}") for i in range(count)]


def moved_from_survivors(before: Assignment, after: Assignment, survivors: Sequence[str]) -> int:
    return sum(len(set(before[m]) - set(after.get(m, []))) for m in survivors)


def check(
    assignor: str, members: Sequence[str], topic_count: int, per_topic: int, assignment: Assignment
) -> str | None:
    """What is wrong with ``assignment`` (None: complete and valid). Every member subscribes to every
    topic, so: every member has an entry, every partition is assigned exactly once, and the counts are
    balanced (max - min <= 1) for roundrobin and the sticky assignors; range gives each member
    floor(P/C) or ceil(P/C) partitions of every topic."""
    total = topic_count * per_topic
    if set(assignment) != set(members):
        return f"members {len(assignment)} given, {len(members)} expected"
    seen = bytearray(total)
    for pids in assignment.values():
        for pid in pids:
            if not 0 <= pid < total:
                return f"partition id {pid} does not exist"
            if seen[pid]:
                return f"partition id {pid} assigned twice"
            seen[pid] = 1
    if seen.count(1) != total:
        return f"{total - seen.count(1)} partitions unassigned"
    sizes = [len(pids) for pids in assignment.values()]
    if assignor in BALANCED and max(sizes) - min(sizes) > 1:
        return f"unbalanced: {min(sizes)} to {max(sizes)} partitions per member"
    if assignor == "range":
        low, high = per_topic // len(members), -(-per_topic // len(members))
        for pids in assignment.values():
            per = [0] * topic_count
            for pid in pids:
                per[pid // per_topic] += 1
            if any(not low <= n <= high for n in per):
                return f"range share outside {low}..{high} partitions per topic"
    return None


# ---- implementations ----------------------------------------------------------------------------------


class Implementation:
    """One implementation's inputs for a (size, assignor, phase) and a timed call on them."""

    name: str

    def prepare(
        self,
        assignor: str,
        ids: list[tuple[str, str]],
        topic_count: int,
        per_topic: int,
        previous: Assignment | None,
    ) -> None:
        raise NotImplementedError

    def run(self) -> tuple[float, Assignment]:
        """Seconds of one ``assign`` and what it assigned (as partition ids)."""
        raise NotImplementedError

    def collect(self) -> None:
        """Collect garbage in this implementation's runtime (Python's is collected by the driver)."""


class _PythonImplementation(Implementation):
    def __init__(self) -> None:
        self._call: Callable[[], Any] = lambda: None
        self._per_topic = 1
        self._topic_index: dict[str, int] = {}

    def _ids(self, assignment: Mapping[str, Sequence[tuple[str, int]]]) -> Assignment:
        index, per = self._topic_index, self._per_topic
        return {m: array("i", [index[t] * per + p for t, p in tps]) for m, tps in assignment.items()}

    def _timed(self) -> tuple[float, Any]:
        start = time.perf_counter()
        result = self._call()
        return time.perf_counter() - start, result


class Ours(_PythonImplementation):
    name = "staticconsumer"
    _assignor = "range"
    _inputs: tuple[list[Member], dict[str, TopicInfo]] = ([], {})

    def prepare(
        self,
        assignor: str,
        ids: list[tuple[str, str]],
        topic_count: int,
        per_topic: int,
        previous: Assignment | None,
    ) -> None:
        names = topic_names(topic_count)
        self._per_topic = per_topic
        self._topic_index = {t: k for k, t in enumerate(names)}
        topics = {t: TopicInfo(per_topic) for t in names}
        members = []
        for member_id, instance in ids:
            owned: list[tuple[str, int]] = []
            user_data = None
            if previous is not None:
                owned = [(names[pid // per_topic], pid % per_topic) for pid in previous.get(member_id, [])]
                if assignor == "sticky":
                    user_data = encode_sticky_user_data(owned, 1)
                elif assignor == "cooperative-sticky":
                    user_data = encode_cooperative_user_data(1)
            members.append(
                Member(
                    member_id,
                    names,
                    group_instance_id=instance,
                    owned_partitions=owned,
                    generation=1 if previous is not None else -1,
                    user_data=user_data,
                )
            )

        self._assignor = assignor
        self._inputs = (members, topics)

    def run(self) -> tuple[float, Assignment]:
        instance = create(self._assignor)  # a fresh one per call, as Java's is
        members, topics = self._inputs
        start = time.perf_counter()
        result = instance.assign(members, topics)
        seconds = time.perf_counter() - start
        return seconds, self._ids({m: a.partitions for m, a in result.items()})


class _Cluster:
    """The ClusterMetadata methods aiokafka's assignors call."""

    def __init__(self, names: Sequence[str], per_topic: int):
        self._partitions = {t: set(range(per_topic)) for t in names}

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        return self._partitions.get(topic)

    def topics(self) -> set[str]:
        return set(self._partitions)


class Aiokafka(_PythonImplementation):
    name = "aiokafka"

    def prepare(
        self,
        assignor: str,
        ids: list[tuple[str, str]],
        topic_count: int,
        per_topic: int,
        previous: Assignment | None,
    ) -> None:
        from aiokafka.coordinator.assignors.range import RangePartitionAssignor
        from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
        from aiokafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
        from aiokafka.coordinator.protocol import ConsumerProtocolMemberMetadata

        cls: Any = {
            "range": RangePartitionAssignor,
            "roundrobin": RoundRobinPartitionAssignor,
            "sticky": StickyPartitionAssignor,
        }[assignor]
        names = topic_names(topic_count)
        self._per_topic = per_topic
        self._topic_index = {t: k for k, t in enumerate(names)}
        metadata = {}
        for member_id, _ in ids:
            user_data = b""
            if assignor == "sticky" and previous is not None:
                owned = [(names[pid // per_topic], pid % per_topic) for pid in previous.get(member_id, [])]
                user_data = encode_sticky_user_data(owned, 1)
            metadata[member_id] = ConsumerProtocolMemberMetadata(0, names, user_data)
        cluster = _Cluster(names, per_topic)
        self._call = lambda: cls.assign(cluster, metadata)

    def run(self) -> tuple[float, Assignment]:
        seconds, result = self._timed()
        return seconds, self._ids(
            {m: [(t, p) for t, parts in a.assignment for p in parts] for m, a in result.items()}
        )


class Java(Implementation):
    """kafka-clients' assignors in the oracle module's AssignorBench JVM (inputs built there)."""

    name = "java"

    def __init__(self, kafka_version: str | None) -> None:
        from staticconsumer.testing.broker import find_java, resolve_version
        from tests.interop.oracle import build_oracle

        version = resolve_version(kafka_version)
        build = build_oracle(version)
        classpath = os.pathsep.join([str(build / "classes"), str(build / "lib" / "*")])
        self.command = [find_java(version), "-cp", classpath, "io.staticconsumer.oracle.AssignorBench"]
        self._process = subprocess.Popen(
            self.command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
        assert self._process.stdout is not None
        ready = json.loads(self._process.stdout.readline() or "{}")
        if not ready.get("ready"):
            raise RuntimeError(f"AssignorBench did not start (exit {self._process.poll()})")
        self.kafka_version = version
        self.java_version = str(ready.get("java"))
        self._key = ""
        self._count = 0
        self._held: set[str] = set()

    def _request(self, op: str, **fields: Any) -> Any:
        assert self._process.stdin is not None
        assert self._process.stdout is not None
        self._process.stdin.write(json.dumps({"op": op, **fields}) + "\n")
        self._process.stdin.flush()
        answer = json.loads(self._process.stdout.readline() or '{"ok": false, "error": "JVM gone"}')
        if not answer.get("ok"):
            raise RuntimeError(f"AssignorBench {op}: {answer.get('error')}")
        return answer

    def prepare(
        self,
        assignor: str,
        ids: list[tuple[str, str]],
        topic_count: int,
        per_topic: int,
        previous: Assignment | None,
    ) -> None:
        # ``previous`` is always this JVM's own last assignment (member-left follows initial): the
        # group set up last, whose latest run produced it.
        self._count += 1
        key = f"group-{self._count}"
        self._request(
            "setup",
            key=key,
            assignor=assignor,
            topics=topic_count,
            perTopic=per_topic,
            members=[list(pair) for pair in ids],
            previous=self._key if previous is not None else None,
        )
        keep = {key, self._key} if previous is not None else {key}
        for old in self._held - keep:
            self._request("drop", key=old)
        self._held = keep
        self._key = key

    def run(self) -> tuple[float, Assignment]:
        seconds = self._request("run", key=self._key)["elapsedNanos"] / 1e9
        encoded = self._request("result", key=self._key)["assignment"]
        result: Assignment = {}
        for member, data in encoded.items():
            ids = array("i", base64.b64decode(data))
            if sys.byteorder == "little":
                ids.byteswap()  # sent big-endian
            result[member] = ids
        return seconds, result

    def collect(self) -> None:
        self._request("gc")

    def close(self) -> None:
        if self._process.poll() is None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()


# ---- driver --------------------------------------------------------------------------------------------


class Cell:
    """One implementation's measurements for a (size, assignor, phase)."""

    def __init__(self, implementation: Implementation) -> None:
        self.implementation = implementation
        self.samples: list[float] = []
        self.problems: list[str] = []
        self.last: Assignment = {}
        self.checked = 0


def measure(
    cells: list[Cell],
    assignor: str,
    ids: list[tuple[str, str]],
    topic_count: int,
    per_topic: int,
    warmup: int,
    repeats: int,
) -> None:
    """Warm-up then interleaved repeats (the order rotates every repeat); every result checked.

    Once, before the warm-up, both runtimes collect what setting up left behind (gc.collect() here,
    System.gc() in the JVM), so every implementation starts from a clean heap; from then on the
    collectors run as they do in any process, during the calls they pay for.
    """
    members = [m for m, _ in ids]
    gc.collect()
    for cell in cells:
        cell.implementation.collect()
    for rounds, timed in ((warmup, False), (repeats, True)):
        for r in range(rounds):
            shift = r % len(cells)
            for cell in cells[shift:] + cells[:shift]:
                seconds, result = cell.implementation.run()
                problem = check(assignor, members, topic_count, per_topic, result)
                cell.checked += 1
                if problem is not None:
                    cell.problems.append(problem)
                if timed:
                    cell.samples.append(seconds)
                cell.last = result


def repeats_for(partitions: int, args: argparse.Namespace) -> int:
    return int(args.repeat if partitions >= 1_000_000 else max(args.repeat, args.repeat_small))


def bench(args: argparse.Namespace) -> Results:
    import aiokafka

    sizes = [] if args.only_full else list(DEFAULT_SIZES)
    if args.full or args.only_full:
        sizes.append(FULL_SIZE)
    java = None if args.no_java else Java(args.kafka_version)
    method = (
        f"inputs built untimed, both heaps collected once (gc.collect(), System.gc()), {args.warmup} "
        "warm-up call(s) per implementation, then repeats interleaved in rotating order, one assign per "
        "sample, garbage collectors on and never forced between calls"
    )
    env = Environment(
        python=sys.version.split()[0],
        platform=platform.platform(),
        cpu_model=_cpu_model(),
        cores=os.cpu_count() or 0,
        memory_bytes=_memory_bytes(),
        git_revision=_git_revision(),
        kafka_clients_version=None if java is None else java.kafka_version,
        aiokafka_version=aiokafka.__version__,
        started_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        command=" ".join([Path(sys.executable).name, *sys.argv]),
        load_average_at_start=_load(),
        java_version=None if java is None else java.java_version,
        method=method,
    )
    rows: list[Row] = []
    aiokafka_last: dict[str, tuple[int, int, float]] = {}  # assignor -> (members, partitions, seconds)

    def record(row: Row) -> None:
        rows.append(row)
        shown = "skipped" if row.seconds is None else f"{row.seconds:8.3f}s"
        moved = "" if row.moved is None else f" moved={row.moved}"
        ratio = "" if row.ratio_to_java is None else f" ours/java={row.ratio_to_java.median:.2f}"
        invalid = "" if row.valid in (None, True) else f" INVALID: {row.problem}"
        print(
            f"{row.assignor:18} {row.implementation:14} {row.phase:11} "
            f"{row.members:5}x{row.partitions:<8} {shown}{moved}{ratio}{invalid}",
            flush=True,
        )

    try:
        for members, topic_count, per_topic in sizes:
            partitions = topic_count * per_topic
            ids = member_ids(members)
            leaver = ids[members // 2][0]
            survivors_ids = [x for x in ids if x[0] != leaver]
            survivors = [m for m, _ in survivors_ids]
            repeats = repeats_for(partitions, args)
            for name in args.assignors:
                implementations: list[Implementation] = [Ours()]
                skipped = None
                if not args.no_aiokafka and name in AIOKAFKA_ASSIGNORS:
                    last = aiokafka_last.get(name)
                    estimate = 0.0 if last is None else last[2] * (members * partitions) / (last[0] * last[1])
                    if estimate > AIOKAFKA_BUDGET_SECONDS and last is not None:
                        skipped = (
                            f"skipped: too slow (estimated {estimate:.0f}s from {last[2]:.2f}s at "
                            f"{last[0]} members x {last[1]} partitions)"
                        )
                    else:
                        implementations.append(Aiokafka())
                if java is not None:
                    implementations.append(java)
                first: dict[str, Assignment] = {}
                for phase, phase_ids, previous_of in (
                    ("initial", ids, None),
                    ("member-left", survivors_ids, first),
                ):
                    load = _load()
                    cells = []
                    for impl in implementations:
                        impl.prepare(
                            name,
                            phase_ids,
                            topic_count,
                            per_topic,
                            None if previous_of is None else previous_of[impl.name],
                        )
                        cells.append(Cell(impl))
                    measure(cells, name, phase_ids, topic_count, per_topic, args.warmup, repeats)
                    by_name = {c.implementation.name: c for c in cells}
                    for cell in cells:
                        impl_name = cell.implementation.name
                        if phase == "initial":
                            first[impl_name] = cell.last
                        moved = None
                        if phase == "member-left":
                            moved = moved_from_survivors(first[impl_name], cell.last, survivors)
                        ratios: dict[str, Spread | None] = {"java": None, "aiokafka": None}
                        if impl_name == "staticconsumer":
                            for other in ratios:
                                if other in by_name:
                                    ratios[other] = spread(
                                        [
                                            o / t
                                            for o, t in zip(cell.samples, by_name[other].samples, strict=True)
                                        ]
                                    )
                        record(
                            Row(
                                name,
                                impl_name,
                                phase,
                                members,
                                partitions,
                                spread(cell.samples).median,
                                moved,
                                samples=cell.samples,
                                warmup=args.warmup,
                                valid=not cell.problems,
                                problem=cell.problems[0] if cell.problems else None,
                                ratio_to_java=ratios["java"],
                                ratio_to_aiokafka=ratios["aiokafka"],
                                load_average=load,
                            )
                        )
                    if skipped is not None:
                        record(Row(name, "aiokafka", phase, members, partitions, None, skipped=skipped))
                if "aiokafka" in first:
                    worst = max(
                        r.seconds or 0.0
                        for r in rows
                        if r.assignor == name and r.implementation == "aiokafka" and r.members == members
                    )
                    aiokafka_last[name] = (members, partitions, worst)
    finally:
        if java is not None:
            java.close()
    return Results(env, rows, ratio_notes(rows))


def ratio_notes(rows: list[Row]) -> list[str]:
    """Ours vs the others per assignor, size and phase: the figures the closing note quotes."""
    index = {(r.assignor, r.implementation, r.phase, r.members, r.partitions): r for r in rows}
    notes = []
    for r in rows:
        if r.implementation != "staticconsumer" or r.seconds is None:
            continue
        parts = [f"{r.assignor} {r.phase} {r.members}x{r.partitions}: ours {r.seconds:.3f}s"]
        for other, paired in (("aiokafka", r.ratio_to_aiokafka), ("java", r.ratio_to_java)):
            o = index.get((r.assignor, other, r.phase, r.members, r.partitions))
            if o is None:
                continue
            if o.seconds is None:
                parts.append(f"{other} skipped")
            elif paired is not None:
                parts.append(
                    f"{other} {o.seconds:.3f}s (ours/{other} paired: {paired.median:.2f} "
                    f"[{paired.p25:.2f}-{paired.p75:.2f}])"
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
    phases = ("initial", "member-left")
    fig, axes = plt.subplots(len(phases), len(ASSIGNORS), figsize=(4.5 * len(ASSIGNORS), 7.5), sharey=True)
    for row_axes, phase in zip(axes, phases, strict=True):
        for ax, name in zip(row_axes, ASSIGNORS, strict=True):
            for impl in IMPLEMENTATIONS:
                points = [
                    (r.members * r.partitions, r.seconds)
                    for r in results.rows
                    if r.assignor == name and r.implementation == impl and r.phase == phase and r.seconds
                ]
                if points:
                    xs, ys = zip(*points, strict=True)
                    ax.loglog(xs, ys, marker="o", label=impl)
            ax.set_title(f"{name}: {phase}", fontsize=10)
            ax.set_xlabel("members x partitions")
            ax.grid(True, which="both", alpha=0.3)
        row_axes[0].set_ylabel("seconds (median)")
    axes[0][0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return True


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--full", action="store_true", help="add 2,000 members x 1,000,000 partitions")
    parser.add_argument("--only-full", action="store_true", help="only 2,000 members x 1,000,000 partitions")
    parser.add_argument("--assignors", nargs="+", choices=ASSIGNORS, default=list(ASSIGNORS))
    parser.add_argument("--no-java", action="store_true", help="skip Java (no JVM needed)")
    parser.add_argument("--no-aiokafka", action="store_true", help="skip aiokafka")
    parser.add_argument("--repeat", type=int, default=3, help="measured calls per implementation (default 3)")
    parser.add_argument(
        "--repeat-small",
        type=int,
        default=15,
        help="at least this many below 1,000,000 partitions (default 15)",
    )
    parser.add_argument(
        "--warmup", type=int, default=2, help="untimed calls per implementation first (default 2)"
    )
    parser.add_argument("--kafka-version", default=None, help="kafka-clients version for Java")
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

"""Scale a group out (N -> N+1) and back in (N+1 -> N) under a steady producer: what each rebalance
protocol pauses, side by side.

Modes, interleaved in one run (each repeat rotates their order, every scenario a fresh topic and group):

* ``staticconsumer-eager``: StaticConsumer with the default assignors (range, cooperative-sticky), so the
  eager protocol: every member revokes everything before it rejoins;
* ``staticconsumer-cooperative``: StaticConsumer with cooperative-sticky alone (KIP-429);
* ``java-cooperative``: Java's KafkaConsumer (kafka-clients at the broker's version) with
  cooperative-sticky;
* ``staticconsumer-consumer`` and ``java-consumer``: the consumer group protocol (KIP-848,
  ``group_protocol=consumer`` / ``group.protocol=consumer``, Kafka 4.0+): the broker assigns (its default
  assignor) and owns the session timeout and heartbeat interval (``group.consumer.*``: the broker's
  defaults, a 5 s heartbeat), so ``--session-ms``/``--heartbeat-ms`` do not apply to them. A member
  learns of a change at its next heartbeat: revokes, then the newcomer's partitions, each up to an
  interval later. Settled also means the coordinator sees the group Stable with every member's
  assignment equal to its target; their ``generations`` are member epochs.

Every member is a static member in a process of its own (``python -m benchmarks.rebalance_scale member``
or the Java oracle module's PeerConsumer) and reports its listener calls and consumed records as JSON
lines. Scale-out starts member N; scale-in takes it away again: StaticConsumer with
``stop(leave_group=True)``; a static Java member cannot leave on ``close()`` before KIP-1092, so, as Kafka
Streams does, a LeaveGroup naming its instance id (``GroupAdmin.remove_members``) follows its close.

Per event: **paused partitions** (partitions owned by nobody at some moment: revoked or lost and not yet
assigned again), **paused partition-seconds** (their total time owned by nobody), **records/s dip** (the
lowest consumption rate in half-second bins from the event until the group settled, against the rate
over the 5 s before), **settle** (seconds from the start of the rebalance, the coordinator first seen
out of Stable, to the last listener call it caused; settled means every partition owned exactly once in
one generation and no listener call for the quiet period), **to rebalance** (seconds from the event, the
new process's start or the stop command, to that start), **generations** and **moved** (partitions whose
owner changed).

Run: .venv/bin/python -m benchmarks.rebalance_scale [--members 4 12] [--repeats 5] [--out PATH]
Writes ``rebalance_scale.json`` (schema: ``Report``) and ``rebalance_scale.png`` (matplotlib, the
``bench`` extra) in benchmarks/results, or beside ``--out``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import msgspec

from benchmarks.common import RESULTS, ROOT, Environment, Spread, environment, spread

NAME = "rebalance_scale"
MODES = (
    "staticconsumer-eager",
    "staticconsumer-cooperative",
    "java-cooperative",
    "staticconsumer-consumer",
    "java-consumer",
)
EVENTS = ("scale-out", "scale-in")
ASSIGNORS = {
    "staticconsumer-eager": ["range", "cooperative-sticky"],
    "staticconsumer-cooperative": ["cooperative-sticky"],
}
BIN_SECONDS = 0.5


def consumer_protocol(mode: str) -> bool:
    """The KIP-848 modes: the broker assigns, member epochs instead of generations."""
    return mode.endswith("-consumer")


Partition = tuple[str, int]


# -- the result ------------------------------------------------------------------------------------


class Settings(msgspec.Struct):
    session_ms: int
    heartbeat_ms: int
    partitions_per_member: int
    records_per_second: int
    baseline_seconds: float
    quiet_seconds: float
    limit_seconds: float


class EventResult(msgspec.Struct):
    event: str
    error: str | None = None
    moved_partitions: int = 0
    paused_partitions: int = 0
    paused_partition_seconds: float = 0.0
    records_per_second_before: float = 0.0
    lowest_records_per_second: float = 0.0
    dip: float = 0.0
    """1 - lowest / before: 0 is no dip, 1 is a full stop for a whole bin."""
    settle_seconds: float = 0.0
    """From the start of the rebalance (the coordinator first seen out of Stable, polled every 100 ms)
    to the last listener call it caused."""
    seconds_to_rebalance: float = 0.0
    """From the event (the new process's start, or the stop command) to the start of the rebalance:
    client start-up, or the leaving member's revoke, commit and LeaveGroup."""
    generations: int = 0


class Run(msgspec.Struct):
    repeat: int
    mode: str
    events: list[EventResult]
    error: str | None = None


class Summary(msgspec.Struct):
    mode: str
    event: str
    completed: int
    moved_partitions: Spread | None
    paused_partitions: Spread | None
    paused_partition_seconds: Spread | None
    dip: Spread | None
    settle_seconds: Spread | None
    generations: Spread | None


class Target(msgspec.Struct):
    target: str
    met: bool
    detail: str


class SizeResult(msgspec.Struct):
    members: int
    partitions: int
    repeats: int
    settings: Settings
    environment: Environment
    runs: list[Run]
    summaries: list[Summary]
    targets: list[Target]


class Report(msgspec.Struct):
    benchmark: str
    sizes: list[SizeResult]


# -- a member process (ours) -------------------------------------------------------------------------


def _say(event: str, **fields: Any) -> None:
    print(json.dumps({"e": event, "t": time.time(), **fields}), flush=True)


async def _member(args: argparse.Namespace) -> int:
    """One StaticConsumer reporting in PeerConsumer's vocabulary; 'stop' or 'leave' on stdin ends it."""
    from staticconsumer.consumer import ConsumerRebalanceListener, StaticConsumer

    consumer: StaticConsumer | None = None

    def partitions(tps: Iterable[Any]) -> list[list[Any]]:
        return sorted([tp.topic, tp.partition] for tp in tps)

    class Reporting(ConsumerRebalanceListener):
        def on_partitions_assigned(self, assigned: frozenset[Any]) -> None:
            generation = consumer.generation if consumer is not None else -1
            _say("assigned", partitions=partitions(assigned), gen=generation)

        def on_partitions_revoked(self, revoked: frozenset[Any]) -> None:
            _say("revoked", partitions=partitions(revoked))

        def on_partitions_lost(self, lost: frozenset[Any]) -> None:
            _say("lost", partitions=partitions(lost))

    if args.group_protocol == "consumer":  # the broker assigns and owns session and heartbeat
        protocol: dict[str, Any] = {"group_protocol": "consumer"}
    else:
        protocol = {
            "assignors": args.assignors.split(","),
            "session_timeout_ms": args.session_ms,
            "heartbeat_interval_ms": args.heartbeat_ms,
        }
    consumer = StaticConsumer(
        args.topic,
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        group_instance_id=args.instance,
        **protocol,
        auto_offset_reset="earliest",
        enable_auto_commit=True,
        auto_commit_interval_ms=1000,
        listener=Reporting(),
        telemetry=False,
    )
    loop = asyncio.get_running_loop()
    command: asyncio.Future[str] = loop.create_future()

    def decide(word: str) -> None:
        if not command.done():
            command.set_result(word)

    def read_stdin() -> None:
        for line in sys.stdin:
            word = line.strip()
            if word in ("stop", "leave"):
                loop.call_soon_threadsafe(decide, word)
                return
        loop.call_soon_threadsafe(decide, "stop")

    threading.Thread(target=read_stdin, daemon=True).start()
    await consumer.start()
    _say("started")
    total = 0
    while not command.done():
        batch = await consumer.getmany(timeout_ms=200)
        count = sum(len(rows) for rows in batch.values())
        if count:
            total += count
            _say("records", count=count, total=total)
    await consumer.stop(leave_group=command.result() == "leave")
    _say("stopped")
    return 0


class PythonMember:
    """Our member process, with the interface of ``JavaPeerConsumer``: ``events``, ``stop()``."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.events: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    @classmethod
    def start(cls, **options: str | int) -> PythonMember:
        command = [sys.executable, "-m", "benchmarks.rebalance_scale", "member"]
        for key, value in options.items():
            command += [f"--{key.replace('_', '-')}", str(value)]
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        return cls(process)

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            with contextlib.suppress(json.JSONDecodeError):
                self.events.append(json.loads(line))

    def send(self, word: str) -> None:
        if self.process.poll() is None and self.process.stdin is not None:
            with contextlib.suppress(BrokenPipeError, OSError):
                self.process.stdin.write(word + "\n")
                self.process.stdin.flush()

    def stop(self, timeout: float = 30.0, leave: bool = False) -> int:
        self.send("leave" if leave else "stop")
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        self._reader.join(timeout=5)
        return code


# -- what the events say ------------------------------------------------------------------------------


def _ownership_changes(members: dict[str, Any]) -> list[tuple[float, str, str, set[Partition]]]:
    """Every listener call and stop of every member, in time order: (t, member, kind, partitions)."""
    changes = []
    for name, member in members.items():
        for event in list(member.events):
            if event["e"] in ("assigned", "revoked", "lost", "stopped"):
                parts = {(str(t), int(p)) for t, p in event.get("partitions", [])}
                changes.append((float(event["t"]), name, str(event["e"]), parts))
    return sorted(changes, key=lambda c: c[0])


def owners_at(
    changes: Sequence[tuple[float, str, str, set[Partition]]], until: float
) -> dict[Partition, set[str]]:
    owners: dict[Partition, set[str]] = {}
    for t, name, kind, parts in changes:
        if t > until:
            break
        if kind == "assigned":
            for p in parts:
                owners.setdefault(p, set()).add(name)
        elif kind in ("revoked", "lost"):
            for p in parts:
                owners.setdefault(p, set()).discard(name)
        else:  # stopped: whatever it still held is held no more
            for held in owners.values():
                held.discard(name)
    return owners


def unowned_seconds(
    changes: Sequence[tuple[float, str, str, set[Partition]]],
    partitions: Iterable[Partition],
    start: float,
    end: float,
) -> dict[Partition, float]:
    """Per partition, the time in [start, end] during which no member owned it."""
    wanted = set(partitions)
    owners: dict[Partition, set[str]] = {p: set() for p in wanted}
    total = dict.fromkeys(wanted, 0.0)
    empty_since: dict[Partition, float] | None = None  # from ``start`` on: since when nobody owns it

    for t, name, kind, parts in changes:
        if t > end:
            break
        if t > start and empty_since is None:
            empty_since = {p: start for p in wanted if not owners[p]}
        touched = wanted if kind == "stopped" else parts & wanted
        for p in touched:
            if kind == "assigned":
                owners[p].add(name)
            else:
                owners[p].discard(name)
            if empty_since is None:
                continue
            if owners[p] and p in empty_since:
                total[p] += t - empty_since.pop(p)
            elif not owners[p] and p not in empty_since:
                empty_since[p] = t
    if empty_since is None:
        empty_since = {p: start for p in wanted if not owners[p]}
    for p, since in empty_since.items():
        total[p] += end - since
    return total


def record_rate(members: Iterable[Any], start: float, end: float) -> float:
    count = 0
    for member in members:
        for event in list(member.events):
            if event["e"] == "records" and start <= float(event["t"]) < end:
                count += int(event["count"])
    return count / max(end - start, 1e-9)


def lowest_rate(members: Sequence[Any], start: float, end: float) -> float:
    """The lowest records/s over consecutive half-second bins in [start, end]."""
    bins = max(1, int((end - start) / BIN_SECONDS))
    return min(
        record_rate(members, start + i * BIN_SECONDS, start + (i + 1) * BIN_SECONDS) for i in range(bins)
    )


def last_generation(member: Any) -> int | None:
    gens = [int(e["gen"]) for e in list(member.events) if e["e"] == "assigned"]
    return gens[-1] if gens else None


async def until_settled(
    members: dict[str, Any],
    expected: set[Partition],
    since: float,
    quiet: float,
    limit: float,
    converged: Callable[[], bool] | None = None,
) -> float:
    """Wait until every partition is owned exactly once, in one generation, with no listener call for
    ``quiet`` seconds and at least one after ``since``; returns the time of the last listener call.

    ``converged`` (the consumer protocol) replaces "one generation": member epochs differ by design and
    a member learns of a change only at its next heartbeat, so the coordinator must see it done."""
    deadline = time.time() + limit
    while True:
        changes = _ownership_changes(members)
        now = time.time()
        owners = owners_at(changes, now)
        once = all(len(owners.get(p, set())) == 1 for p in expected)
        generations = {last_generation(m) for m in members.values()}
        moved = [c for c in changes if c[0] > since and c[2] != "stopped"]
        if converged is not None:
            agreed = converged() and None not in generations
        else:
            agreed = len(generations) == 1 and None not in generations
        if once and agreed and moved:
            last = moved[-1][0]
            if now - last >= quiet:
                return last
        if now > deadline:
            held = {str(p): sorted(o) for p, o in owners.items() if len(o) != 1}
            raise TimeoutError(f"not settled within {limit:.0f}s: generations {generations}, owners {held}")
        await asyncio.sleep(0.2)


class GroupWatch:
    """The coordinator's state of the group every 100 ms (DescribeGroups), to see when a rebalance starts."""

    def __init__(self, bootstrap: str, group: str) -> None:
        self.bootstrap, self.group = bootstrap, group
        self.states: list[tuple[float, str]] = []
        self.latest: Any = None
        """The last GroupDescription."""
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> GroupWatch:
        from staticconsumer.admin import GroupAdmin

        self._admin = await GroupAdmin(bootstrap_servers=self.bootstrap).start()
        self._task = asyncio.create_task(self._run())
        return self

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(Exception):
                described = await self._admin.describe_group(self.group)
                self.states.append((time.time(), described.state))
                self.latest = described
            await asyncio.sleep(0.1)

    def converged(self, members: set[str]) -> Callable[[], bool]:
        """A consumer group Stable with exactly ``members`` (instance ids), each owning its target."""

        def check() -> bool:
            group = self.latest
            return (
                group is not None
                and group.state == "Stable"
                and {m.group_instance_id for m in group.members} == members
                and all(m.assignment == m.target_assignment for m in group.members)
            )

        return check

    def rebalance_started(self, after: float) -> float | None:
        return next((t for t, state in self.states if t >= after and state != "Stable"), None)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        with contextlib.suppress(Exception):
            await self._admin.close()


def _event_result(
    event: str,
    members: dict[str, Any],
    expected: set[Partition],
    before_owners: dict[Partition, set[str]],
    t0: float,
    settled: float,
    settings: Settings,
    generation_before: int,
    watch: GroupWatch,
) -> EventResult:
    changes = _ownership_changes(members)
    first_call = next((c[0] for c in changes if c[0] > t0 and c[2] != "stopped"), settled)
    started = min(watch.rebalance_started(t0) or first_call, first_call)
    after_owners = owners_at(changes, settled + 0.001)
    paused = {p: s for p, s in unowned_seconds(changes, expected, t0, settled).items() if s > 0}
    before_rate = record_rate(members.values(), t0 - settings.baseline_seconds, t0)
    lowest = lowest_rate(list(members.values()), t0, max(settled, t0 + BIN_SECONDS))
    moved = sum(1 for p in expected if before_owners.get(p) != after_owners.get(p))
    generations = {last_generation(m) for m in members.values()} - {None}
    return EventResult(
        event=event,
        moved_partitions=moved,
        paused_partitions=len(paused),
        paused_partition_seconds=round(sum(paused.values()), 3),
        records_per_second_before=round(before_rate, 1),
        lowest_records_per_second=round(lowest, 1),
        dip=round(max(0.0, 1 - lowest / before_rate), 3) if before_rate > 0 else 0.0,
        settle_seconds=round(settled - started, 3),
        seconds_to_rebalance=round(started - t0, 3),
        generations=max(int(g) for g in generations if g is not None) - generation_before
        if generations
        else 0,
    )


# -- one scenario --------------------------------------------------------------------------------------


class Producer:
    """``rate`` records a second, round-robin over the partitions (even load), until stopped."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, rate: int) -> None:
        self.bootstrap, self.topic, self.partitions, self.rate = bootstrap, topic, partitions, rate
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> Producer:
        from aiokafka import AIOKafkaProducer

        self._producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap, linger_ms=5)
        await self._producer.start()
        self._task = asyncio.create_task(self._run())
        return self

    async def _run(self) -> None:
        started, sent = time.monotonic(), 0
        while True:
            await asyncio.sleep(max(0.0, started + sent / self.rate - time.monotonic()))
            with contextlib.suppress(Exception):
                await self._producer.send(self.topic, b"x" * 100, partition=sent % self.partitions)
            sent += 1

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        with contextlib.suppress(Exception):
            await self._producer.stop()


def _start_member(mode: str, kafka: Any, topic: str, group: str, instance: str, s: Settings) -> Any:
    if mode.startswith("java"):
        from tests.interop.oracle import JavaPeerConsumer

        return JavaPeerConsumer.start(
            kafka.version,
            bootstrap=kafka.bootstrap_servers,
            group=group,
            topics=topic,
            instance=instance,
            assignor="cooperative-sticky",
            session_ms=s.session_ms,
            heartbeat_ms=s.heartbeat_ms,
            protocol="consumer" if consumer_protocol(mode) else "classic",
        )
    return PythonMember.start(
        bootstrap=kafka.bootstrap_servers,
        topic=topic,
        group=group,
        instance=instance,
        assignors=",".join(ASSIGNORS.get(mode, ["range"])),
        session_ms=s.session_ms,
        heartbeat_ms=s.heartbeat_ms,
        group_protocol="consumer" if consumer_protocol(mode) else "classic",
    )


async def _started(member: Any, limit: float) -> float:
    deadline = time.time() + limit
    while True:
        for event in list(member.events):
            if event["e"] == "started":
                return float(event["t"])
        if time.time() > deadline:
            raise TimeoutError("a member did not start")
        await asyncio.sleep(0.05)


async def run_scenario(kafka: Any, mode: str, n: int, repeat: int, s: Settings) -> Run:
    partitions = n * s.partitions_per_member
    topic = f"scale-{uuid.uuid4().hex[:8]}"
    group = f"scale-{mode}-{uuid.uuid4().hex[:8]}"
    kafka.create_topic(topic, partitions)
    expected = {(topic, p) for p in range(partitions)}
    producer = await Producer(kafka.bootstrap_servers, topic, partitions, s.records_per_second).start()
    watch = await GroupWatch(kafka.bootstrap_servers, group).start()
    members: dict[str, Any] = {}
    events: list[EventResult] = []

    def converged(names: Iterable[str]) -> Callable[[], bool] | None:
        return watch.converged(set(names)) if consumer_protocol(mode) else None

    try:
        for i in range(n):
            members[f"m{i}"] = _start_member(mode, kafka, topic, group, f"m{i}", s)
        await until_settled(members, expected, 0.0, s.quiet_seconds, s.limit_seconds, converged(members))
        await asyncio.sleep(s.baseline_seconds)

        # scale-out: member n joins
        before = owners_at(_ownership_changes(members), time.time())
        generation = max(g for g in (last_generation(m) for m in members.values()) if g is not None)
        newcomer = f"m{n}"
        members[newcomer] = _start_member(mode, kafka, topic, group, newcomer, s)
        t0 = await _started(members[newcomer], s.limit_seconds)
        settled = await until_settled(
            members, expected, t0, s.quiet_seconds, s.limit_seconds, converged(members)
        )
        events.append(
            _event_result("scale-out", members, expected, before, t0, settled, s, generation, watch)
        )
        await asyncio.sleep(max(0.0, s.baseline_seconds - s.quiet_seconds))

        # scale-in: it leaves again
        before = owners_at(_ownership_changes(members), time.time())
        generation = max(g for g in (last_generation(m) for m in members.values()) if g is not None)
        leaving = members[newcomer]
        t0 = time.time()
        if mode.startswith("java"):
            await asyncio.to_thread(leaving.stop)
            await _remove_static_member(kafka.bootstrap_servers, group, newcomer)
        else:
            await asyncio.to_thread(leaving.stop, 30.0, True)
        staying = {k: v for k, v in members.items() if k != newcomer}
        settled = await until_settled(
            staying, expected, t0, s.quiet_seconds, s.limit_seconds, converged(staying)
        )
        result = _event_result("scale-in", members, expected, before, t0, settled, s, generation, watch)
        events.append(result)
        return Run(repeat, mode, events)
    except Exception as error:
        return Run(repeat, mode, events, error=f"{type(error).__name__}: {error}")
    finally:
        await watch.stop()
        await producer.stop()
        await asyncio.gather(*(asyncio.to_thread(m.stop) for m in members.values()))


async def _remove_static_member(bootstrap: str, group: str, instance: str) -> None:
    from staticconsumer.admin import GroupAdmin

    async with GroupAdmin(bootstrap_servers=bootstrap) as admin:
        await admin.remove_members(group, [instance], reason="scaled in")


# -- summary, targets, plot ---------------------------------------------------------------------------


def _spread_of(values: list[float]) -> Spread | None:
    return spread(values) if values else None


def summarise(runs: list[Run]) -> list[Summary]:
    out = []
    for mode in MODES:
        for event in EVENTS:
            done = [
                e for r in runs if r.mode == mode for e in r.events if e.event == event and e.error is None
            ]

            def of(field: str, done: list[EventResult] = done) -> Spread | None:
                return _spread_of([float(getattr(e, field)) for e in done])

            out.append(
                Summary(
                    mode=mode,
                    event=event,
                    completed=len(done),
                    moved_partitions=of("moved_partitions"),
                    paused_partitions=of("paused_partitions"),
                    paused_partition_seconds=of("paused_partition_seconds"),
                    dip=of("dip"),
                    settle_seconds=of("settle_seconds"),
                    generations=of("generations"),
                )
            )
    return out


def targets(runs: list[Run], summaries: list[Summary]) -> list[Target]:
    by = {(s.mode, s.event): s for s in summaries}
    cooperative = [
        e for r in runs if r.mode == "staticconsumer-cooperative" for e in r.events if e.error is None
    ]
    only_moved = [e for e in cooperative if e.paused_partitions <= e.moved_partitions]
    out = [
        Target(
            "staticconsumer cooperative pauses only the partitions that move",
            bool(cooperative) and len(only_moved) == len(cooperative),
            f"{len(only_moved)}/{len(cooperative)} events paused no more partitions than moved",
        )
    ]
    for event in EVENTS:
        ours = by[("staticconsumer-cooperative", event)].settle_seconds
        java = by[("java-cooperative", event)].settle_seconds
        met = ours is not None and java is not None and ours.median <= java.median
        detail = (
            f"median {ours.median:.2f} s against Java's {java.median:.2f} s"
            if ours is not None and java is not None
            else "not measured"
        )
        out.append(Target(f"{event}: staticconsumer cooperative settles no slower than Java's", met, detail))
    for event in EVENTS:
        ours = by[("staticconsumer-consumer", event)].settle_seconds
        java = by[("java-consumer", event)].settle_seconds
        if ours is None and java is None:
            continue  # the consumer protocol was not run (--modes)
        met = ours is not None and java is not None and ours.median <= java.median
        detail = (
            f"median {ours.median:.2f} s against Java's {java.median:.2f} s"
            if ours is not None and java is not None
            else "not measured"
        )
        out.append(
            Target(f"{event}: staticconsumer consumer protocol settles no slower than Java's", met, detail)
        )
    return out


def size_label(size: SizeResult) -> str:
    """``N=4``, with the classic heartbeat when it is not the default (runs appended with ``--append``)."""
    heartbeat = size.settings.heartbeat_ms
    return f"N={size.members}" + ("" if heartbeat == 1_000 else f", heartbeat {heartbeat} ms")


def plot(report: Report, path: Path) -> bool:
    """Four panels (paused partitions, paused partition-seconds, dip, settle), one box per mode and event,
    one colour per group size. False when matplotlib is not installed (the ``bench`` extra)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    sizes = sorted(report.sizes, key=lambda s: (s.members, -s.settings.heartbeat_ms))
    if not sizes:
        return False
    slots = [(mode, event) for event in EVENTS for mode in MODES]
    panels: list[tuple[str, Callable[[EventResult], float]]] = [
        ("partitions paused", lambda e: float(e.paused_partitions)),
        ("paused partition-seconds", lambda e: e.paused_partition_seconds),
        ("records/s dip (1 = a full stop)", lambda e: e.dip),
        ("seconds to settle", lambda e: e.settle_seconds),
    ]
    figure, axes = plt.subplots(2, 2, figsize=(18, 9))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    width = 0.8 / len(sizes)
    for axis, (title, value) in zip(axes.flat, panels, strict=True):
        for k, size in enumerate(sizes):
            data = [
                [value(e) for r in size.runs if r.mode == mode for e in r.events if e.event == event]
                for mode, event in slots
            ]
            positions = [i + (k - (len(sizes) - 1) / 2) * width for i in range(len(slots))]
            shown = [(p, d) for p, d in zip(positions, data, strict=True) if d]
            if not shown:
                continue
            boxes = axis.boxplot(
                [d for _, d in shown],
                positions=[p for p, _ in shown],
                widths=width * 0.85,
                patch_artist=True,
                manage_ticks=False,
            )
            for patch in boxes["boxes"]:
                patch.set_facecolor(colours[k % len(colours)])
                patch.set_alpha(0.6)
            axis.plot([], [], color=colours[k % len(colours)], linewidth=8, alpha=0.6, label=size_label(size))
        axis.set_title(title, fontsize=10)
        axis.set_xticks(range(len(slots)))
        axis.set_xticklabels([f"{m.replace('-', chr(10), 1)}\n{e}" for m, e in slots], fontsize=7)
        axis.grid(axis="y", alpha=0.3)
    axes.flat[0].legend(fontsize=8)
    s = sizes[0].settings
    figure.suptitle(
        f"Scale-out N -> N+1 and scale-in N+1 -> N under load ({s.partitions_per_member} partitions per "
        f"member, {s.records_per_second} records/s, classic session {s.session_ms / 1000:.0f} s)"
    )
    figure.tight_layout()
    figure.savefig(path, dpi=80)
    plt.close(figure)
    return True


# -- main ---------------------------------------------------------------------------------------------


async def measure(args: argparse.Namespace, kafka: Any, settings: Settings) -> list[SizeResult]:
    runs: dict[int, list[Run]] = {n: [] for n in args.members}
    modes = list(args.modes)
    for repeat in range(args.repeats):
        order = modes[repeat % len(modes) :] + modes[: repeat % len(modes)]
        for n in args.members:
            for mode in order:
                began = time.monotonic()
                run = await run_scenario(kafka, mode, n, repeat, settings)
                runs[n].append(run)
                status = run.error or ", ".join(
                    f"{e.event}: paused {e.paused_partitions}/{e.moved_partitions} moved, "
                    f"{e.paused_partition_seconds:.1f} p-s, settle {e.settle_seconds:.2f} s, dip {e.dip:.2f}"
                    for e in run.events
                )
                print(
                    f"N={n} {mode} repeat {repeat + 1}: {status} ({time.monotonic() - began:.0f}s)",
                    flush=True,
                )
    env = environment(kafka.version, dirty_paths=("benchmarks", "staticconsumer", "assignors"))
    sizes = []
    for n in args.members:
        summaries = summarise(runs[n])
        sizes.append(
            SizeResult(
                members=n,
                partitions=n * settings.partitions_per_member,
                repeats=args.repeats,
                settings=settings,
                environment=env,
                runs=runs[n],
                summaries=summaries,
                targets=targets(runs[n], summaries),
            )
        )
    return sizes


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["member"]:
        member = argparse.ArgumentParser(prog="python -m benchmarks.rebalance_scale member")
        for option in ("--bootstrap", "--topic", "--group", "--instance", "--assignors"):
            member.add_argument(option, required=True)
        member.add_argument("--session-ms", type=int, required=True)
        member.add_argument("--heartbeat-ms", type=int, required=True)
        member.add_argument("--group-protocol", choices=("classic", "consumer"), default="classic")
        logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        return asyncio.run(_member(member.parse_args(argv[1:])))
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--members", type=int, nargs="+", default=[4, 12], help="group sizes N")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--partitions-per-member", type=int, default=3)
    parser.add_argument("--records-per-second", type=int, default=600)
    parser.add_argument("--session-ms", type=int, default=10_000)
    parser.add_argument("--heartbeat-ms", type=int, default=1_000)
    parser.add_argument(
        "--baseline", type=float, default=5.0, help="seconds of steady load before each event"
    )
    parser.add_argument("--quiet", type=float, default=3.0, help="seconds without a listener call = settled")
    parser.add_argument("--limit", type=float, default=90.0, help="seconds allowed to settle")
    parser.add_argument("--kafka-version", default=None)
    parser.add_argument("--out", type=Path, default=RESULTS / f"{NAME}.json")
    parser.add_argument(
        "--append",
        action="store_true",
        help="add this run's sizes to the report already at --out (e.g. a second run with a shorter "
        "--heartbeat-ms, whose settle times show the clients' own latency rather than heartbeat phase)",
    )
    args = parser.parse_args(argv)
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    settings = Settings(
        session_ms=args.session_ms,
        heartbeat_ms=args.heartbeat_ms,
        partitions_per_member=args.partitions_per_member,
        records_per_second=args.records_per_second,
        baseline_seconds=args.baseline,
        quiet_seconds=args.quiet,
        limit_seconds=args.limit,
    )
    from staticconsumer.testing import EmbeddedKafka

    with EmbeddedKafka(args.kafka_version) as kafka:
        print(f"Kafka {kafka.version} at {kafka.bootstrap_servers}", flush=True)
        sizes = asyncio.run(measure(args, kafka, settings))
    if args.append and args.out.exists():
        earlier = msgspec.json.decode(args.out.read_bytes(), type=Report)
        report = Report(NAME, [*earlier.sizes, *sizes])
    else:
        report = Report(NAME, sizes)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(msgspec.json.format(msgspec.json.encode(report), indent=2) + b"\n")
    plotted = plot(report, args.out.with_suffix(".png"))
    print(f"wrote {args.out}" + (f" and {args.out.with_suffix('.png')}" if plotted else ""))
    for size in sizes:
        for summary in size.summaries:
            if summary.settle_seconds is not None:
                print(
                    f"{size_label(size)} {summary.mode} {summary.event}: settle median "
                    f"{summary.settle_seconds.median:.2f} s, paused partitions median "
                    f"{summary.paused_partitions.median if summary.paused_partitions else '-'}"
                )
        for target in size.targets:
            verdict = "MET" if target.met else "NOT MET"
            print(f"{size_label(size)} {verdict}: {target.target} ({target.detail})")
    return 0 if all(not r.error for s in sizes for r in s.runs) else 1


if __name__ == "__main__":
    sys.exit(main())

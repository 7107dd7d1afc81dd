"""Rolling bounce of a consumer group, one process per member, whatever the client.

A Kubernetes rolling update restarts every pod of a StatefulSet in turn. Whether the group notices is
the point of static membership, so this module measures it the same way for every client: each member
runs in its own process and prints the same JSON-line events (``e``: started, assigned, revoked, lost,
first_record, stopped, and the restart timeline steps; ``t``: wall clock), and the orchestrator folds
them into figures. ``benchmarks/rolling_bounce.py`` drives it.

Modes: ``staticconsumer-static``, ``staticconsumer-dynamic``, ``aiokafka-static`` (aiokafka 0.14 with
``group_instance_id``), ``aiokafka-dynamic`` and ``java-static`` (Kafka's own KafkaConsumer with
``group.instance.id``, from the Java oracle module); for synchronous code, ``staticconsumer-sync-static``
(``staticconsumer.sync.StaticConsumer``) and ``kafka-python-static`` (kafka-python 3.0's KafkaConsumer
with ``group_instance_id``); confluent-kafka 2.16 (librdkafka), static: ``confluent-static``
(``confluent_kafka.aio.AIOConsumer`` with ``group.instance.id``) and ``confluent-sync-static`` (its blocking
``Consumer``). Every classic mode uses the eager range assignor, so they differ only in membership.
Three more modes run the consumer protocol (KIP-848, Kafka 4.0+): ``staticconsumer-consumer``,
``java-consumer`` and ``confluent-consumer`` (the AIOConsumer) (``group_protocol=consumer`` /
``group.protocol=consumer``, static): the broker assigns
(its default server-side assignor) and owns the session timeout and heartbeat interval, so
``session_ms`` and ``heartbeat_ms`` do not apply to them.

Member processes import only their own client: the Python ones run ``staticconsumer/_bounce_member.py``
by path (so an aiokafka, kafka-python or confluent-kafka member never imports ``staticconsumer``), the
Java one is the oracle module's PeerConsumer. Each reports the steps of its restart (:data:`TIMELINE`)
through its client's own hooks.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Event = dict[str, Any]
Partition = tuple[str, int]

PYTHON_CLIENTS = (
    "staticconsumer",
    "aiokafka",
    "staticconsumer-sync",
    "kafka-python",
    "confluent-aio",
    "confluent",
)
"""Each one a ``--client`` of ``_bounce_member.py``."""

CLIENTS = (*PYTHON_CLIENTS, "java")

THIRD_PARTY = {
    "kafka-python": ("kafka", "kafka-python==3.0.12"),
    "confluent-aio": ("confluent_kafka", "confluent-kafka==2.16.1"),
    "confluent": ("confluent_kafka", "confluent-kafka==2.16.1"),
}
"""Python clients that are not dependencies of the package (the ``dev`` extra pins them): client ->
(module the member imports, requirement). A missing one is said before any member process starts."""


@dataclass(frozen=True)
class Mode:
    """A client, whether its members carry an instance id, and the group protocol they speak."""

    name: str
    client: str
    static: bool
    group_protocol: str = "classic"
    """``classic`` (JoinGroup/SyncGroup, range) or ``consumer`` (KIP-848: the broker assigns)."""


MODES: dict[str, Mode] = {
    mode.name: mode
    for mode in (
        Mode("staticconsumer-static", "staticconsumer", True),
        Mode("staticconsumer-dynamic", "staticconsumer", False),
        Mode("aiokafka-static", "aiokafka", True),
        Mode("aiokafka-dynamic", "aiokafka", False),
        Mode("java-static", "java", True),
        Mode("staticconsumer-consumer", "staticconsumer", True, "consumer"),
        Mode("java-consumer", "java", True, "consumer"),
        Mode("staticconsumer-sync-static", "staticconsumer-sync", True),
        Mode("kafka-python-static", "kafka-python", True),
        Mode("confluent-static", "confluent-aio", True),
        Mode("confluent-consumer", "confluent-aio", True, "consumer"),
        Mode("confluent-sync-static", "confluent", True),
    )
}


@dataclass(frozen=True)
class BounceSettings:
    """One rolling bounce: group size, topic size, timeouts, and how long to wait for what."""

    members: int = 3
    partitions_per_member: int = 4
    session_ms: int = 30_000
    """Long enough that a JVM started on a busy machine is back in time (a Java restart took 9-11 s
    on 2 loaded cores): every restart must be within the session timeout, whatever the client."""
    heartbeat_ms: int = 1_000
    produce_per_second: int = 200
    settle_within: float = 60.0
    grace: float = 2.0
    """Seconds to watch after each restart settled, so late revokes and rebalances are counted."""
    kafka_version: str | None = None
    """For the Java client: kafka-clients at the broker's version."""

    @property
    def partitions(self) -> int:
        return self.members * self.partitions_per_member


TIMELINE = ("imported", "started", "coordinator", "joined", "synced", "offsets", "first_record")
"""A restart's steps, each reported once by the new member process (seconds from its spawn):
client imported (JVM: KafkaConsumer class loaded), client started, group coordinator found, JoinGroup
answered with a generation, SyncGroup answered, committed offsets known, first record consumed."""

MEMBER_SCRIPT = Path(__file__).with_name("_bounce_member.py")

BYTECODE_CACHE = Path(tempfile.gettempdir()) / "staticconsumer-bounce-pycache"
"""Where Python members keep compiled bytecode (``PYTHONPYCACHEPREFIX``), outside the checkout.

An installed application imports compiled bytecode (pip compiles a wheel's modules); a checkout run
with ``PYTHONDONTWRITEBYTECODE=1`` compiles this repository's modules from source at every start,
while aiokafka's come compiled from site-packages. Members therefore always run with this cache,
warmed before the first measured start (:func:`warm_bytecode`), so every client imports bytecode."""


def member_environment() -> dict[str, str]:
    """The environment of a Python member: this checkout importable, bytecode cached as installed."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join(
        [str(MEMBER_SCRIPT.parents[1]), *filter(None, [env.get("PYTHONPATH")])]
    )
    env["PYTHONPYCACHEPREFIX"] = str(BYTECODE_CACHE)
    return env


def warm_bytecode(clients: Iterable[str] = ("staticconsumer", "aiokafka")) -> None:
    """Import each Python client once in a throwaway member, so every module its members import
    (standard library included) is compiled into the cache before anything is timed. A bounce warms
    its mode's client; the default pair is what benchmarks/join_trace.py compares."""
    for client in clients:
        subprocess.run(
            [sys.executable, str(MEMBER_SCRIPT), f"--client={client}", "--list-imports"],
            env=member_environment(),
            capture_output=True,
            check=True,
        )


# -- members as seen by the orchestrator ----------------------------------------------------------


@dataclass
class Member:
    """One member process: its slot in the group, when it was spawned, what it reported."""

    index: int
    spawned_at: float
    events: list[Event]
    stop: Callable[[], None]
    """Ask it to stop as a pod is stopped, and wait until it has exited."""
    stop_requested_at: float | None = None

    def first(self, event: str) -> Event | None:
        return next((e for e in list(self.events) if e["e"] == event), None)

    def owned(self) -> set[Partition]:
        """What it owns now, folding its callbacks (eager and cooperative alike)."""
        return _fold(self.events, until=None)


def _fold(events: Iterable[Event], until: float | None) -> set[Partition]:
    owned: set[Partition] = set()
    for event in list(events):
        if until is not None and event["t"] > until:
            break
        owned = _apply(owned, event)
    return owned


def _apply(owned: set[Partition], event: Event) -> set[Partition]:
    """One callback's effect: eager members are assigned everything anew after revoking everything,
    cooperative ones are told only what is added or removed; both fold the same way."""
    changed = {(str(topic), int(partition)) for topic, partition in event.get("partitions", [])}
    if event["e"] == "assigned":
        return owned | changed
    if event["e"] in ("revoked", "lost"):
        return owned - changed
    if event["e"] == "stopped":
        return set()
    return owned


def require_client(mode: Mode) -> None:
    """Fail at once, by name, when the mode's client library is not installed: its member processes
    would die at their first import, and the bounce would only time out waiting for them."""
    needed = THIRD_PARTY.get(mode.client)
    if needed is None or importlib.util.find_spec(needed[0]) is not None:
        return
    from staticconsumer.testing.errors import ClientNotInstalledError

    raise ClientNotInstalledError(
        f"mode {mode.name} runs {needed[1]}, which is not installed: pip install '{needed[1]}' "
        "(or the dev extra)"
    )


def _python_member(
    mode: Mode, index: int, bootstrap: str, topic: str, group: str, s: BounceSettings
) -> Member:
    command = [
        sys.executable,
        str(MEMBER_SCRIPT),  # by path: no import of the staticconsumer package around the member
        f"--client={mode.client}",
        f"--bootstrap={bootstrap}",
        f"--topic={topic}",
        f"--group={group}",
        f"--session-ms={s.session_ms}",
        f"--heartbeat-ms={s.heartbeat_ms}",
    ]
    if mode.static:
        command.append(f"--instance=member-{index}")
    if mode.group_protocol != "classic":
        command.append(f"--group-protocol={mode.group_protocol}")
    env = member_environment()
    spawned_at = time.time()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env)
    events: list[Event] = []

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            with contextlib.suppress(json.JSONDecodeError):
                events.append(json.loads(line))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()

    def stop() -> None:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        reader.join(timeout=5)

    return Member(index, spawned_at, events, stop)


def _java_member(mode: Mode, index: int, bootstrap: str, topic: str, group: str, s: BounceSettings) -> Member:
    try:  # the Java oracle is test code: a checkout of the repository has it, an installed package not
        from tests.interop.oracle import JavaPeerConsumer
    except ModuleNotFoundError as missing:
        from staticconsumer.testing.errors import OracleError

        raise OracleError(
            f"mode {mode.name} runs Kafka's own consumer from the Java oracle (tests/interop/oracle.py), "
            "which only a checkout of the repository has: run from its root"
        ) from missing

    options: dict[str, str | int] = {
        "bootstrap": bootstrap,
        "group": group,
        "topics": topic,
        "assignor": "range",
        "session_ms": s.session_ms,
        "heartbeat_ms": s.heartbeat_ms,
        "auto_offset_reset": "latest",
        "commit": "auto",
        "timeline": "true",
    }
    if mode.group_protocol != "classic":
        # KIP-848: Java refuses client-side assignors and the session settings under this protocol
        for classic_only in ("assignor", "session_ms", "heartbeat_ms"):
            del options[classic_only]
        options["protocol"] = mode.group_protocol
    if mode.static:
        options["instance"] = f"member-{index}"
    spawned_at = time.time()
    peer = JavaPeerConsumer.start(s.kafka_version, **options)

    def stop() -> None:
        peer.stop()

    return Member(index, spawned_at, peer.events, stop)


SPAWNERS: dict[str, Callable[[Mode, int, str, str, str, BounceSettings], Member]] = {
    **{client: _python_member for client in PYTHON_CLIENTS},
    "java": _java_member,
}
"""How each client's member process is started; add a client by adding a spawner."""


# -- the figures ----------------------------------------------------------------------------------


@dataclass
class Restart:
    index: int
    seconds_to_first_record: float
    """From the new process's start (spawn) to its first record."""
    seconds_to_started: float
    """From spawn to the client being constructed and started (the Java member reports before its
    first poll): mostly interpreter or JVM start and imports."""
    seconds_to_assigned: float
    """From spawn to its first partitions assignment."""
    seconds_away: float
    """From the old process being asked to stop to the new one's assignment: must stay below the
    session timeout, or the broker removes the static member and the group rebalances anyway."""
    revoked_from_others: int
    """Partitions revoked from or lost by members that were not restarting, during this restart."""
    timeline: dict[str, float] = field(default_factory=dict)
    """Seconds from spawn to each :data:`TIMELINE` step the new process reported."""


@dataclass
class BounceResult:
    mode: str
    members: int
    partitions: int
    session_ms: int
    start_generation: int
    generations: list[int]
    """Generations seen after the group first settled, in order."""
    restarts: list[Restart] = field(default_factory=list)
    window_seconds: float = 0.0
    unowned_partition_seconds: float = 0.0
    """Sum over partitions of the time no live member owned them, from the first stop to the end."""

    @property
    def rebalances(self) -> int:
        return len(self.generations)

    @property
    def revoked_from_others(self) -> int:
        return sum(r.revoked_from_others for r in self.restarts)

    @property
    def median_restart_seconds(self) -> float:
        return statistics.median(r.seconds_to_first_record for r in self.restarts)


def unowned_partition_seconds(members: list[Member], partitions: int, start: float, end: float) -> float:
    """Integrate, over [start, end], the partitions that no live member owns.

    A member stops counting as an owner when it is asked to stop (a process shutting down consumes
    nothing, whatever the broker still believes); a partition owned twice counts once.
    """
    changes: list[tuple[float, int, Event]] = []
    for slot, member in enumerate(members):
        for event in list(member.events):
            if member.stop_requested_at is not None and event["t"] >= member.stop_requested_at:
                break
            changes.append((float(event["t"]), slot, event))
        if member.stop_requested_at is not None:
            changes.append((member.stop_requested_at, slot, {"e": "stopped", "t": member.stop_requested_at}))
    changes.sort(key=lambda change: change[0])
    owned: list[set[Partition]] = [set() for _ in members]
    total = 0.0
    last = start

    def unowned() -> int:
        union: set[Partition] = set()
        for each in owned:
            union |= each
        return partitions - len(union)

    for moment, slot, event in changes:
        if moment > end:
            break
        if moment > last:
            total += unowned() * (moment - last)
            last = moment
        owned[slot] = _apply(owned[slot], event)
    if end > last:
        total += unowned() * (end - last)
    return total


# -- the orchestrator -----------------------------------------------------------------------------


async def _wait_for(check: Callable[[], bool], within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"rolling bounce: not within {within:.0f}s: {what}")
        await asyncio.sleep(0.05)


async def _produce_steadily(bootstrap: str, topic: str, per_second: int, stop: asyncio.Event) -> int:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    await producer.start()
    sent = 0
    began = time.monotonic()
    try:
        while not stop.is_set():
            await producer.send(topic, str(time.time()).encode(), key=f"k{sent}".encode())
            sent += 1
            # Paced against the start, so a slow loop catches up instead of drifting.
            await asyncio.sleep(max(0.0, began + sent / per_second - time.monotonic()))
    finally:
        await producer.stop()
    return sent


async def _until_reconciled(bootstrap: str, group: str, within: float) -> None:
    """Consumer protocol: until the broker says every member reached its target assignment. The members'
    own reports can look settled before that: a newcomer's first assignment is often empty while an
    owner has yet to give partitions up, at its next heartbeat (the broker's interval, 5 s by default)."""
    from staticconsumer.admin import GroupAdmin

    deadline = time.monotonic() + within
    async with GroupAdmin(bootstrap_servers=bootstrap) as admin:
        while True:
            described = await admin.describe_group(group)
            if described.state == "Stable" and all(
                m.assignment == m.target_assignment and m.member_epoch != -2 for m in described.members
            ):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"rolling bounce: group {group} not reconciled within {within:.0f}s")
            await asyncio.sleep(0.2)


def _settled(members: list[Member], partitions: int) -> bool:
    """Every member has been assigned, and every partition has exactly one owner."""
    owned = [m.owned() for m in members]
    if any(m.first("assigned") is None for m in members):
        return False
    union: set[Partition] = set()
    for each in owned:
        union |= each
    return len(union) == partitions and sum(len(each) for each in owned) == partitions


class _Group:
    """One mode's group during a bounce: its member processes, its producer, its figures so far.
    :func:`bounce` drives one; :func:`paired_bounce` drives two at once, restarting them in turn."""

    def __init__(
        self,
        mode: Mode,
        bootstrap: str,
        topic: str,
        group: str,
        settings: BounceSettings,
        say: Callable[[str], None],
    ) -> None:
        """An unknown or missing client fails here, before anything starts."""
        self._spawn = SPAWNERS[mode.client]
        require_client(mode)
        self.mode, self.bootstrap, self.topic, self.group = mode, bootstrap, topic, group
        self.settings, self.say = settings, say
        self.members: list[Member] = []
        self.everyone: list[Member] = []
        self.seen_before: set[int] = set()
        self.window_start = 0.0
        self.result = BounceResult(
            mode.name, settings.members, settings.partitions, settings.session_ms, 0, []
        )
        self._stop_producing = asyncio.Event()
        self._producing: asyncio.Task[int] | None = None

    async def _start(self, index: int) -> Member:
        loop = asyncio.get_running_loop()
        s = self.settings
        return await loop.run_in_executor(
            None, self._spawn, self.mode, index, self.bootstrap, self.topic, self.group, s
        )

    @staticmethod
    async def _stop(member: Member) -> None:
        member.stop_requested_at = time.time()
        await asyncio.get_running_loop().run_in_executor(None, member.stop)

    async def _settle(self, what: str) -> None:
        s = self.settings
        await _wait_for(lambda: _settled(self.members, s.partitions), s.settle_within, what)
        if self.mode.group_protocol == "consumer":
            await _until_reconciled(self.bootstrap, self.group, s.settle_within)

    async def open(self) -> None:
        """Start the producer and every member, and wait until the group has settled."""
        if self.mode.client in PYTHON_CLIENTS:
            await asyncio.get_running_loop().run_in_executor(None, warm_bytecode, (self.mode.client,))
        s = self.settings
        self._producing = asyncio.create_task(
            _produce_steadily(self.bootstrap, self.topic, s.produce_per_second, self._stop_producing)
        )
        for index in range(s.members):
            self.members.append(await self._start(index))
        self.everyone = list(self.members)
        await _wait_for(
            lambda: _settled(self.members, s.partitions), s.settle_within, f"{self.mode.name} to settle"
        )
        await asyncio.sleep(s.grace)
        await self._settle(f"{self.mode.name} to settle")
        self.seen_before = _generations(self.everyone)
        self.result.start_generation = max(self.seen_before)

    def begin(self) -> None:
        """The bounce window opens: restarts from now on are counted."""
        self.window_start = time.time()

    async def restart(self, index: int) -> Restart:
        """Stop member ``index``, start its replacement, wait until it consumes and the group has settled
        again, watch for the grace period, and return the restart's figures."""
        s, name = self.settings, self.mode.name
        old = self.members[index]
        await self._stop(old)
        new = await self._start(index)
        self.members[index] = new
        self.everyone.append(new)
        await _wait_for(
            lambda: new.first("first_record") is not None,
            s.settle_within,
            f"{name}: restarted member {index}'s first record",
        )
        await self._settle(f"{name} to settle after restart {index}")
        await asyncio.sleep(s.grace)
        first_record = new.first("first_record")
        assert first_record is not None
        restart_ended = time.time()
        others = [m for m in self.everyone if m.index != index and m.stop_requested_at is None]
        stopped_at = old.stop_requested_at or self.window_start
        revoked = sum(
            int(e.get("n", 0))
            for m in others
            for e in list(m.events)
            if e["e"] in ("revoked", "lost") and stopped_at <= e["t"] <= restart_ended
        )
        seconds = float(first_record["t"]) - new.spawned_at
        started, assigned = new.first("started"), new.first("assigned")
        assert started is not None
        assert assigned is not None
        restart = Restart(
            index,
            seconds,
            float(started["t"]) - new.spawned_at,
            float(assigned["t"]) - new.spawned_at,
            float(assigned["t"]) - stopped_at,
            revoked,
            timeline(new),
        )
        self.result.restarts.append(restart)
        self.say(f"  {name} restart {index}: first record {seconds:.2f}s, {revoked} revoked from others")
        return restart

    def end(self) -> BounceResult:
        """The bounce window closes: fold the generations and unowned partition-seconds."""
        window_end = time.time()
        result = self.result
        result.generations = sorted(g for g in _generations(self.everyone) if g not in self.seen_before)
        result.window_seconds = window_end - self.window_start
        result.unowned_partition_seconds = unowned_partition_seconds(
            self.everyone, self.settings.partitions, self.window_start, window_end
        )
        return result

    async def close(self) -> None:
        """Stop the producer and every live member (whatever happened before)."""
        self._stop_producing.set()
        if self._producing is not None:
            await self._producing
        await asyncio.gather(*(self._stop(m) for m in self.members if m.stop_requested_at is None))


async def bounce(
    mode: Mode,
    bootstrap: str,
    topic: str,
    group: str,
    settings: BounceSettings,
    say: Callable[[str], None] = lambda line: None,
) -> BounceResult:
    """Start the group, let it settle, restart every member in turn (each back within the session
    timeout), and fold what the members reported into the figures."""
    group_ = _Group(mode, bootstrap, topic, group, settings, say)
    try:
        await group_.open()
        group_.begin()
        for index in range(settings.members):
            await group_.restart(index)
        return group_.end()
    finally:
        await group_.close()


def pair_order(index: int) -> tuple[int, int]:
    """Which of two groups restarts first at restart ``index``: alternating (A B, B A, A B, ...), so
    neither side always restarts right after the other's restart settled."""
    return (0, 1) if index % 2 == 0 else (1, 0)


async def paired_bounce(
    modes: tuple[Mode, Mode],
    bootstrap: str,
    topics: tuple[str, str],
    settings: BounceSettings,
    say: Callable[[str], None] = lambda line: None,
) -> tuple[BounceResult, BounceResult]:
    """Two groups live at once, each on its own topic (its group named after it), bounced together:
    member i of one, then member i of the other (the order alternating per :func:`pair_order`), so
    each restart has a neighbour of the other mode measured on the same machine state a few seconds
    apart. Each group's figures are those :func:`bounce` gives; restarts pair by index."""
    groups = (
        _Group(modes[0], bootstrap, topics[0], topics[0], settings, say),
        _Group(modes[1], bootstrap, topics[1], topics[1], settings, say),
    )
    try:
        for each in groups:
            await each.open()
        for each in groups:
            each.begin()
        for index in range(settings.members):
            for side in pair_order(index):
                await groups[side].restart(index)
        return groups[0].end(), groups[1].end()
    finally:
        for each in groups:
            await each.close()


def timeline(member: Member) -> dict[str, float]:
    """Seconds from the member's spawn to each timeline step it reported (its first of each)."""
    steps: dict[str, float] = {}
    for step in TIMELINE:
        event = member.first(step)
        if event is not None:
            steps[step] = float(event["t"]) - member.spawned_at
    return steps


def _generations(members: Iterable[Member]) -> set[int]:
    return {int(e["gen"]) for m in members for e in list(m.events) if e["e"] == "assigned"}

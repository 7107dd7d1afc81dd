"""Fleet scale (issue 27): N static members in one group, a rolling bounce of every member, and a broker
restart under the whole fleet, on one embedded broker.

The members live in a few worker processes (``--processes``; a StatefulSet's pods, packed), each running
its share of StaticConsumers on one event loop, with auto-commit off so a restarted member reads its
partitions from the start and its first record comes as soon as it holds them again. Two groups run at
once in the SAME worker processes, each with its own topic (2 partitions per member, pre-filled): the
fleet (``--members``) and a small group (``--small``, 3 by default, spread one per worker). So a small
member shares its event loop and the cores with the fleet's members exactly as a fleet member does, and
the comparison of the two is one of group size only, not of CPU packing (until 5f32430 the small group
ran alone, one member per process: the ratio mixed group size with 100 idle members per loop).

* rolling bounce: every fleet member in turn is stopped (no LeaveGroup) and started again with the same
  group.instance.id, the next once the last has its first record (well within the session timeout);
  between them, one restart of a small-group member in turn (``--small-restarts`` in all, spread evenly
  over the fleet's bounce), so both groups' restarts are measured on the same loops, under the same
  load, at the same time. Counted per group: rebalances (generations handed out after the groups
  settled), partitions revoked from members that were not the one restarting, and each restart's
  seconds from its start() to its first record;
* broker restart: the broker's JVM is shut down for ``--down`` seconds and restarted on the same port
  and data (``EmbeddedKafka.shut_down``/``restart``) under both groups. Its return is the moment it
  ANSWERS again (an ApiVersions request answered, probed every 50 ms): its port accepts TCP connections
  seconds earlier (the kernel's backlog, before the broker serves them) and ``restart()`` returns
  seconds later (topic created, group coordinators loaded); both are recorded too. Counted:
  connection attempts per consumer after the first 5 s of the outage (every ``create_connection`` to
  the broker's port in each worker, divided by its members), each member's seconds from the return to
  its connection state being ``connected`` again and to its first record written after the return, and
  whether every record written before the stop and after the return was consumed. The state's change is
  taken as it happens (the member's monitor), not when the member's loop next reads it.

Targets: 0 rebalances, 0 partitions revoked from members that did not restart, restart-to-first-record
median of the fleet within 1.2x of the small group's; attempts <= 2 per second per consumer per broker
after 5 s, every member back within 2 s of the return, nothing lost. The machine's load is recorded
(``environment``).

With ``--group-protocol consumer`` both groups use KIP-848's protocol (ConsumerGroupHeartbeat; the broker
assigns and writes records per member), where the classic protocol's static rejoin makes the coordinator
write the whole group's assignment: the same bounce under both tells the broker's share of the growth
with N from ours.

Run: .venv/bin/python -m benchmarks.fleet [--members 30] [--processes 3] [--down 20] [--group-protocol P]
Writes benchmarks/results/fleet_<members>.json, fleet_<members>_consumer.json for KIP-848 (``Report``).
Development only: ``--bounce-limit K`` restarts only the first K fleet members, ``--trace`` adds each
restart's requests per API and each member's outage/recovery as its monitor sees it, ``--events FILE``
keeps every worker event; ``--timeline FILE`` then prints, for the members slowest back after the broker
restart, each connect and request with its outcome, the worker loop's lateness and when the monitor
flipped (``--slowest K``). ``--oracle K`` (at the end, outside every counted figure) times K static rejoins
per group from a bare aiokafka client in the quiet parent: the broker's JoinGroup/SyncGroup time at each
N without our consumer or a loop shared with 100 members around it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import statistics
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from benchmarks.common import Environment, Spread, environment, spread, write_json
from staticconsumer.protocol.api_keys import API_NAMES
from staticconsumer.testing import BrokerSettings, EmbeddedKafka

NAME = "fleet"
SESSION_MS = 30_000
"""Outlives a restart of a member and, counted from the coordinator's reload, of the broker."""
PREFILL = 5
"""Records per partition before the members start."""
SETTLE_S = 5.0
"""The outage's first seconds, not counted against the connection attempts (the backoff grows)."""


# -- the worker process: its share of the members -------------------------------------------------------


_EMIT_LOCK = threading.Lock()
TRACED_OUT = {1: "Fetch", 12: "Heartbeat"}
"""Requests the idle members send all along: not part of any one restart, left out of ``--trace``."""


def _emit(**event: Any) -> None:
    line = json.dumps(event) + "\n"
    with _EMIT_LOCK:  # the membership threads emit too (--trace)
        sys.stdout.write(line)
        sys.stdout.flush()


_TRACED_MONITORS: dict[int, str] = {}
"""``--trace``: each member's connection monitor (by id) -> its instance id, to name whose request it was."""


def _traced_member() -> tuple[str | None, str]:
    """The member whose client runs here (its monitor owns the context: the membership thread's loop and
    the fetcher's tasks alike), and which client: ``m`` the membership thread's, ``a`` the fetcher's."""
    from staticconsumer.connection import monitor

    owner = monitor._OWNER.get()
    client = "m" if threading.current_thread().name.startswith("staticconsumer-membership") else "a"
    return (_TRACED_MONITORS.get(id(owner)) if owner is not None else None), client


def _trace() -> None:
    """Every answered request but the idle ones (fetch long-polls, heartbeats), from any thread, and every
    connect and failed request with its member and client (the broker-restart timeline, ``--timeline``)."""
    from staticconsumer import _aiokafka

    def on_request(api: int, version: int | None, port: int, sent: float, took: float) -> None:
        if api not in TRACED_OUT:
            m, c = _traced_member()
            _emit(ev="req", api=API_NAMES.get(api, str(api)), took=took, t=sent, m=m, c=c)

    def on_connect(port: int, began: float, took: float) -> None:
        m, c = _traced_member()
        _emit(ev="req", api="connect", took=took, t=began, m=m, c=c)

    def on_error(api: int | None, port: int, sent: float, error: str) -> None:
        m, c = _traced_member()
        name = "connect" if api is None else API_NAMES.get(api, str(api))
        _emit(ev="err", api=name, err=error, took=time.time() - sent, t=sent, m=m, c=c)

    _aiokafka.trace_wire(on_request, on_connect, on_error=on_error)
    _trace_backoff()


def _trace_backoff() -> None:
    """``--trace``: each connection attempt a reconnect backoff let start (``begin``), how long after its
    wait had ended, how many asks it refused since the last one and when the last of them came: whether a
    late reconnect waited on the backoff or on nobody asking."""
    from staticconsumer.connection import reconnect

    original = reconnect.ReconnectBackoff.begin
    refused: dict[tuple[int, str], tuple[int, float]] = {}

    def begin(self: reconnect.ReconnectBackoff, key: Any, now: float) -> bool:
        due = self._not_before.get(key)
        allowed = original(self, key, now)
        if self.failures(key) == 0 and key not in self._not_before:
            return allowed
        m, c = _traced_member()
        wall = now + time.time() - time.monotonic()
        count, _ = refused.get((id(self), c), (0, 0.0))
        if not allowed:
            refused[(id(self), c)] = (count + 1, wall)
            return False
        last = refused.pop((id(self), c), (0, 0.0))[1]
        late = None if due is None else now - due  # after its wait ended
        _emit(ev="begin", m=m, c=c, t=wall, refused=count, last_refused=last, late=late)
        return True

    reconnect.ReconnectBackoff.begin = begin  # type: ignore[method-assign]


def _count_connects(port: int) -> list[float]:
    """Every create_connection to ``port`` from any event loop of this process, with its wall time."""
    times: list[float] = []
    original = asyncio.base_events.BaseEventLoop.create_connection

    async def create_connection(loop: Any, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("port", args[2] if len(args) > 2 else None) == port:
            times.append(time.time())
        return await original(loop, *args, **kwargs)

    asyncio.base_events.BaseEventLoop.create_connection = create_connection  # type: ignore[method-assign]
    return times


class _Member:
    def __init__(self, instance: str, group: str, topic: str, args: argparse.Namespace) -> None:
        self.instance = instance
        self.group = group
        self.topic = topic
        self.args = args
        self.stopping = False
        self.task: asyncio.Task[None] | None = None

    def start(self, restart: bool) -> None:
        self.stopping = False
        self.task = asyncio.create_task(self.run(restart))
        self.task.add_done_callback(self._failed)

    def _failed(self, task: asyncio.Task[None]) -> None:
        """A member that cannot start says why (stderr) instead of the run waiting for it in silence."""
        if not task.cancelled() and task.exception() is not None:
            logging.error("member %s failed", self.instance, exc_info=task.exception())

    async def stop(self) -> None:
        self.stopping = True
        if self.task is not None:
            await self.task

    async def run(self, restart: bool) -> None:
        from staticconsumer import StaticConsumer

        instance, group = self.instance, self.group
        consumer: Any = None

        class Listener:
            def on_partitions_assigned(self, assigned: Any) -> None:
                gen = consumer.generation if consumer is not None else -1
                _emit(ev="assigned", m=instance, g=group, n=len(assigned), gen=gen, t=time.time())

            def on_partitions_revoked(self, revoked: Any) -> None:
                _emit(ev="revoked", m=instance, n=len(revoked), t=time.time())

            def on_partitions_lost(self, lost: Any) -> None:
                _emit(ev="lost", m=instance, n=len(lost), t=time.time())

        # KIP-848: the broker's group.consumer.session.timeout.ms (45 s) and heartbeat interval apply
        classic = self.args.group_protocol == "classic"
        timeouts = {"session_timeout_ms": SESSION_MS, "heartbeat_interval_ms": 3000} if classic else {}
        began = time.time()
        consumer = StaticConsumer(
            self.topic,
            bootstrap_servers=self.args.bootstrap,
            group_id=group,
            group_instance_id=instance,
            **timeouts,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            listener=Listener(),
            group_protocol=self.args.group_protocol,
        )
        await consumer.start()
        _emit(ev="started", m=instance, restart=restart, t=time.time(), since=time.time() - began)
        _watch_state(consumer, instance)
        if self.args.trace:
            _trace_monitor(consumer, instance)
        first, state = True, ""
        try:
            while not self.stopping:
                batch = await consumer.getmany(timeout_ms=200)
                now = consumer.connection_state.value
                if now != state:
                    state = now
                    _emit(ev="state", m=instance, s=now, t=time.time())
                for records in batch.values():
                    if first and records:
                        first = False
                        _emit(
                            ev="first", m=instance, restart=restart, t=time.time(), since=time.time() - began
                        )
                    keys = [r.key.decode() for r in records if not r.key.startswith(b"pre")]
                    if keys:
                        _emit(ev="keys", m=instance, keys=keys, t=time.time())
        finally:
            await consumer.stop()


def _watch_state(consumer: Any, instance: str) -> None:
    """Each change of the member's connection state at the moment it happens (``flip``), on whichever
    thread its monitor changed it: the loop below reads ``connection_state`` only between two
    ``getmany(timeout_ms=200)``, so up to 0.2 s plus the loop's lag later (0.2-0.8 s after a broker's
    return at N=300, issue 27), which the figure should not count."""
    monitor = consumer._monitor

    def flipped(state: Any) -> None:
        _emit(ev="flip", m=instance, s=state.value, t=time.time())

    monitor._on_change = flipped


def _trace_monitor(consumer: Any, instance: str) -> None:
    """``--trace``: this member's outage opening and ending as its connection monitor sees them, and each
    answer that could end one (``answered``: the node, when its request was sent), with wall times."""
    from staticconsumer import _aiokafka

    monitor = consumer._monitor
    _TRACED_MONITORS[id(monitor)] = instance
    failed, recovered, answered = monitor.failed, monitor.recovered, monitor.answered
    offset = time.time() - time.monotonic()

    def on_failed(node_id: int, address: str, cause: str, *, attempt: bool = False) -> None:
        if not monitor.outages:
            _emit(ev="outage", m=instance, cause=cause, t=time.time())
        failed(node_id, address, cause, attempt=attempt)

    def on_recovered(address: str) -> None:
        if monitor.outages:
            _emit(ev="recovered", m=instance, t=time.time())
        recovered(address)

    def on_answered(node_id: int, sent_at: float) -> None:
        if monitor.outages:
            _emit(ev="answered", m=instance, sent=sent_at + offset, t=time.time())
        answered(node_id, sent_at)

    monitor.failed, monitor.recovered, monitor.answered = on_failed, on_recovered, on_answered
    for client in list(monitor._clients):
        _aiokafka.report_answers(client, monitor.answered)


async def _watch_lag(every: float = 0.05, threshold: float = 0.1) -> None:
    """``--trace``: each time this worker's event loop ran a turn ``threshold`` s or more late (CPU: its
    hundred members' work, or the machine's), so a slow answer can be told from a busy loop."""
    while True:
        asked = time.time()
        await asyncio.sleep(every)
        late = time.time() - asked - every
        if late >= threshold:
            _emit(ev="lag", late=late, t=asked + every)


async def worker(args: argparse.Namespace) -> None:
    logging.basicConfig(level=logging.WARNING)
    connects = _count_connects(int(args.bootstrap.rpartition(":")[2]))
    lag: asyncio.Task[None] | None = None
    if args.trace:
        _trace()
        lag = asyncio.create_task(_watch_lag())
    members = {
        instance: _Member(instance, group, topic, args)
        for share in args.spec.split(";")
        for group, topic, instances in [share.split(":")]
        for instance in instances.split(",")
    }
    for member in members.values():
        member.start(restart=False)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := (await reader.readline()).decode().strip():
        command, *rest = line.split()
        if command == "restart":
            member = members[rest[0]]
            _emit(ev="stopping", m=rest[0], t=time.time())
            await member.stop()
            member.start(restart=True)
        elif command == "stop":
            await members[rest[0]].stop()
            _emit(ev="stopped", m=rest[0], t=time.time())
        elif command == "connects":
            since, until = float(rest[0]), float(rest[1])
            _emit(ev="connects", n=sum(since <= t < until for t in connects), members=len(members))
        elif command == "quit":
            break
    await asyncio.gather(*(m.stop() for m in members.values()), return_exceptions=True)
    if lag is not None:
        lag.cancel()
    _emit(ev="quit")


# -- the parent: sizes, bounce, broker restart ---------------------------------------------------------


@dataclass
class _Worker:
    process: asyncio.subprocess.Process
    instances: list[str]
    events: list[dict[str, Any]] = field(default_factory=list)
    reader: asyncio.Task[None] | None = None

    async def read(self) -> None:
        assert self.process.stdout is not None
        while line := await self.process.stdout.readline():
            with contextlib.suppress(ValueError):
                self.events.append(json.loads(line))

    async def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode() + b"\n")
        await self.process.stdin.drain()


class Fleet:
    def __init__(self, workers: list[_Worker]) -> None:
        self.workers = workers
        self.of = {instance: w for w in workers for instance in w.instances}
        self.marks: dict[str, float] = {}
        """The broker restart's moments (wall times): ``stopped``, ``accepting``, ``answering``, ``ready``."""

    def events(self, kind: str, since: float = 0.0) -> list[dict[str, Any]]:
        return [e for w in self.workers for e in w.events if e.get("ev") == kind and e.get("t", 0) >= since]

    async def until(self, check: Any, within: float, what: str) -> None:
        deadline = time.monotonic() + within
        while not check():
            if time.monotonic() > deadline:
                raise TimeoutError(f"not within {within:.0f} s: {what}")
            await asyncio.sleep(0.1)

    def keys(self, since: float = 0.0) -> set[str]:
        return {k for e in self.events("keys", since) for k in e["keys"]}


class _Group(msgspec.Struct):
    """One group of the run: its members' instance ids, its own topic."""

    name: str
    topic: str
    instances: list[str]


async def _spawn(args: argparse.Namespace, groups: list[_Group], processes: int) -> Fleet:
    """Worker ``i`` runs every group's members ``i, i + processes, ...``: each group spread evenly."""
    workers = []
    for index in range(processes):
        shares = [(g, g.instances[index::processes]) for g in groups]
        spec = ";".join(f"{g.name}:{g.topic}:{','.join(share)}" for g, share in shares if share)
        if not spec:
            continue
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "benchmarks.fleet",
            "--worker",
            "--bootstrap",
            args.bootstrap,
            "--spec",
            spec,
            *(["--trace"] if args.trace else []),
            "--group-protocol",
            args.group_protocol,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        w = _Worker(process, [i for _, share in shares for i in share])
        w.reader = asyncio.create_task(w.read())
        workers.append(w)
    return Fleet(workers)


async def _quit(fleet: Fleet) -> None:
    for w in fleet.workers:
        with contextlib.suppress(Exception):
            await w.send("quit")
    for w in fleet.workers:
        try:
            await asyncio.wait_for(w.process.wait(), 60)
        except TimeoutError:
            w.process.kill()
            await w.process.wait()


async def _produce(
    bootstrap: str, topic: str, partitions: int, prefix: str, per_partition: int = 1
) -> dict[str, float]:
    """Write the records; when each was acknowledged (written), by key."""
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    await producer.start()
    acknowledged: dict[str, float] = {}

    def done(key: str, sent: asyncio.Future[Any]) -> None:
        if not sent.cancelled() and sent.exception() is None:
            acknowledged[key] = time.time()

    wanted = [(p, f"{prefix}-{p}-{i}") for p in range(partitions) for i in range(per_partition)]
    deadline = time.monotonic() + 120
    try:
        while missing := [(p, key) for p, key in wanted if key not in acknowledged]:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(missing)} records not acknowledged within 120 s")
            sends = []
            for p, key in missing:  # right after a broker restart, partitions wait for their leaders
                sent = await producer.send(topic, b"v", key=key.encode(), partition=p)
                sent.add_done_callback(lambda f, k=key: done(k, f))
                sends.append(sent)
            await asyncio.gather(*sends, return_exceptions=True)
            if len(acknowledged) < len(wanted):
                await asyncio.sleep(0.5)
    finally:
        await producer.stop()
    return acknowledged


async def _accepting(port: int, restarted: asyncio.Future[Any]) -> float:
    """When the restarting broker's port first accepts a TCP connection: the kernel completes handshakes
    into the listen backlog before the broker serves them, so this is not yet its return."""
    while not restarted.done():
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.05)
            continue
        writer.close()
        return time.time()
    return time.time()


async def _answering(port: int, restarted: asyncio.Future[Any]) -> float:
    """When the restarting broker first answers a request (ApiVersions, what every client sends first on
    a new connection): its return, as its clients see it. A probe sent early is answered as soon as the
    broker serves its backlog."""
    from aiokafka.conn import create_conn

    while not restarted.done():
        try:
            conn = await create_conn("127.0.0.1", port, request_timeout_ms=5000)
        except Exception:
            await asyncio.sleep(0.05)
            continue
        answered = time.time()
        conn.close()
        return answered
    return time.time()


class Bounce(msgspec.Struct):
    members: int
    partitions: int
    processes: int
    settle_seconds: float
    """From the first member's start to both groups having stopped changing."""
    rebalances: int
    revoked_from_others: int
    restart_to_first_record: Spread
    restart_to_started: Spread
    oracle_join_group: Spread | None = None
    """With ``--oracle``: a static rejoin's JoinGroup in flight, sent by a bare aiokafka client from the
    quiet parent process for a stopped member (its instance id, its metadata read with DescribeGroups):
    the broker's time without our consumer or a busy loop around it."""
    oracle_sync_group: Spread | None = None
    """With ``--oracle``: that rejoin's SyncGroup in flight (the member's assignment handed back)."""
    requests_per_restart: dict[str, float] = {}
    """With ``--trace``: per API, the median over restarts of its summed seconds in flight during one
    restart (start() to first record), in the restarting member's process (the idle members' fetches and
    heartbeats left out); ``<API> count``: how many were sent."""


class BrokerRestart(msgspec.Struct):
    members: int
    """Every member of both groups."""
    down_seconds: float
    """The stop until the broker answered a request again (its return)."""
    restart_seconds: float
    """The broker's JVM start until ``restart()`` returned (topic created, coordinators loaded)."""
    connects_per_consumer_per_second: Spread
    """After the first 5 s of the outage, per worker process: its connection attempts / its members /
    seconds (one broker)."""
    reconnected_after_return: Spread
    """Per member: the broker answering again -> its connection state turning ``connected`` (the monitor's
    change, as it happens; until this commit the state as the member's loop read it next, below)."""
    first_record_after_return: Spread
    """Per member: a record written to each partition once the broker was ready, from its
    acknowledgement to the member receiving it (the quickest of the member's partitions)."""
    members_back_within_2s: int
    lost: int
    rebalances: int
    revoked: int
    accepting_to_answering_seconds: float = float("nan")
    """The port accepting TCP connections again -> the broker answering (the old benchmark's "return" was
    the former)."""
    answering_to_ready_seconds: float = float("nan")
    """The broker answering -> ``EmbeddedKafka.restart()`` returning."""
    reconnected_after_accepting: Spread | None = None
    """Per member, as ``reconnected_after_return`` but from the port accepting TCP connections again."""
    reconnected_after_ready: Spread | None = None
    """Per member, as ``reconnected_after_return`` but from ``restart()`` returning (below 0: before)."""
    reconnected_after_return_sampled: Spread | None = None
    """Per member: the broker answering again -> the member's loop reading ``connected`` after a
    ``getmany(timeout_ms=200)`` (up to 0.2 s plus the loop's lag after the change: the old figure)."""


class Report(msgspec.Struct):
    benchmark: str
    environment: Environment
    bounces: list[Bounce]
    """The small group's, then the fleet's: run at the same time in the same worker processes."""
    broker_restart: BrokerRestart | None
    ratio_first_record: float
    """Restart-to-first-record median of the fleet over the small group's."""
    targets: dict[str, bool]
    group_protocol: str = "classic"
    """``classic`` (JoinGroup/SyncGroup: on a static member's rejoin the coordinator writes the whole
    group's assignment) or ``consumer`` (KIP-848, ConsumerGroupHeartbeat: records per member)."""
    listen_backlog: int | None = None
    """The broker's ``socket.listen.backlog.size`` when ``--listen-backlog`` set it (None: Kafka's 50). A
    fleet reconnecting at a broker's return overflows 50 and the kernel drops the excess SYNs (resent
    after 1 s, then 3 s); docs/connection.md advises raising it on brokers serving a fleet."""
    comparison: str = "separate runs"
    """How the two sizes were compared: ``same processes, interleaved`` (each small member shares a worker
    and its loop with a share of the fleet, its restarts between the fleet's), or ``separate runs`` (before:
    the small group ran alone, one member per process)."""


async def _settled(fleet: Fleet, members: int, within: float) -> None:
    """Every member started and has had its first record, and no assignment for 3 s."""

    def quiet() -> bool:
        started = {e["m"] for e in fleet.events("started")}
        first = {e["m"] for e in fleet.events("first")}
        assigned = fleet.events("assigned")
        last = max((e["t"] for e in assigned), default=time.time())
        return len(started) == members and len(first) == members and time.time() - last > 3

    await fleet.until(quiet, within, f"{members} members started, reading and settled")


def _generations_after(fleet: Fleet, since: float) -> set[tuple[str, int]]:
    return {(e["g"], e["gen"]) for e in fleet.events("assigned", since)}


def _schedule(large: list[str], small: list[str], small_restarts: int) -> list[str]:
    """The fleet's members in turn, with ``small_restarts`` restarts of the small group's members (each in
    turn) spread evenly between them."""
    order: list[str] = []
    due = 0.0
    every = len(large) / max(small_restarts, 1)
    done = 0
    for index, instance in enumerate(large):
        order.append(instance)
        while done < small_restarts and index + 1 >= due + every:
            order.append(small[done % len(small)])
            done += 1
            due += every
    order += [small[k % len(small)] for k in range(done, small_restarts)]
    return order


async def _restart_one(fleet: Fleet, instance: str) -> tuple[float, float]:
    asked = time.time()
    await fleet.of[instance].send(f"restart {instance}")
    await fleet.until(
        lambda: any(e["m"] == instance and e["restart"] for e in fleet.events("first", asked)),
        60,
        f"{instance} reading again after its restart",
    )
    return asked, time.time()


async def run(args: argparse.Namespace, kafka: EmbeddedKafka) -> tuple[Bounce, Bounce, BrokerRestart | None]:
    suffix = uuid.uuid4().hex[:6]
    groups = [
        _Group(f"fleet-{size}-{suffix}", f"fleet-{size}-{suffix}", [f"{prefix}-{i:03d}" for i in range(size)])
        for size, prefix in ((args.small, "s"), (args.members, "m"))
    ]
    for g in groups:
        await asyncio.to_thread(kafka.create_topic, g.topic, 2 * len(g.instances))
        await _produce(kafka.bootstrap_servers, g.topic, 2 * len(g.instances), "pre", PREFILL)
    small, large = groups
    total = len(small.instances) + len(large.instances)
    began = time.time()
    fleet = await _spawn(args, groups, args.processes)
    try:
        await _settled(fleet, total, within=120 + total * 2)
        settled = time.time()
        generations = _generations_after(fleet, 0)
        print(
            f"{total} members settled in {settled - began:.1f} s, generations {sorted(generations)}",
            flush=True,
        )
        windows: dict[str, list[tuple[float, float]]] = {}
        bounced = large.instances[: args.bounce_limit] if args.bounce_limit is not None else large.instances
        for instance in _schedule(bounced, small.instances, args.small_restarts):
            windows.setdefault(instance, []).append(await _restart_one(fleet, instance))
        await asyncio.sleep(3)
        new_generations = _generations_after(fleet, settled) - generations
        bounces = []
        for g in groups:
            mine = set(g.instances)
            revoked = sum(
                e["n"]
                for kind in ("revoked", "lost")
                for e in fleet.events(kind, settled)
                if e["m"] in mine and not any(a <= e["t"] <= b for a, b in windows.get(e["m"], []))
            )
            result = Bounce(
                members=len(g.instances),
                partitions=2 * len(g.instances),
                processes=len(fleet.workers),
                settle_seconds=settled - began,
                rebalances=sum(1 for name, _ in new_generations if name == g.name),
                revoked_from_others=revoked,
                restart_to_first_record=spread(
                    [e["since"] for e in fleet.events("first", settled) if e["restart"] and e["m"] in mine]
                    or [float("nan")]  # --bounce-limit 0 --small-restarts 0: the broker restart only
                ),
                restart_to_started=spread(
                    [e["since"] for e in fleet.events("started", settled) if e["restart"] and e["m"] in mine]
                    or [float("nan")]
                ),
            )
            if args.trace:
                result.requests_per_restart = _per_api(fleet, windows, mine)
            bounces.append(result)
            print(
                f"N={result.members}: bounce rebalances {result.rebalances}, revoked from others {revoked}, "
                f"first record median {result.restart_to_first_record.median:.3f} s "
                f"({result.restart_to_first_record.runs} restarts)",
                flush=True,
            )
        outage = await _broker_restart(args, kafka, fleet, groups) if not args.no_broker_restart else None
        if args.oracle:
            for g, bounce in zip(groups, bounces, strict=True):
                join, sync = await _oracle(args, fleet, g, args.oracle)
                bounce.oracle_join_group, bounce.oracle_sync_group = join, sync
                print(
                    f"oracle N={len(g.instances)}: JoinGroup {join.median * 1000:.1f} ms, "
                    f"SyncGroup {sync.median * 1000:.1f} ms",
                    flush=True,
                )
        return bounces[0], bounces[1], outage
    finally:
        await _quit(fleet)
        if args.events:
            lines = [json.dumps({"ev": "broker", **fleet.marks, "w": -1}) + "\n"] + [
                json.dumps({**e, "w": index}) + "\n"
                for index, w in enumerate(fleet.workers)
                for e in w.events
            ]
            await asyncio.to_thread(Path(args.events).write_text, "".join(lines))


async def _oracle(args: argparse.Namespace, fleet: Fleet, g: _Group, rounds: int) -> tuple[Spread, Spread]:
    """Static rejoins timed by a bare aiokafka client in this (quiet) process: for ``rounds`` members of
    ``g`` in turn, stop the member (no LeaveGroup), send its JoinGroup (same instance id, same protocol
    metadata as DescribeGroups shows for its client id, so no rebalance) and SyncGroup, then start the
    member again (it takes its instance id back). A round that turned out to be the leader's is left out
    (a static leader's rejoin below JoinGroup v9 may rebalance)."""
    from aiokafka import AIOKafkaClient
    from aiokafka.protocol.admin import DescribeGroupsRequest
    from aiokafka.protocol.group import JoinGroupRequest, SyncGroupRequest

    client = AIOKafkaClient(bootstrap_servers=args.bootstrap)
    await client.bootstrap()
    joins: list[float] = []
    syncs: list[float] = []
    try:
        node = await client.coordinator_lookup(0, g.name)
        for k in range(rounds):
            instance = g.instances[(k * 7 + 1) % len(g.instances)]
            described = (await client.send(node, DescribeGroupsRequest([g.name]))).groups[0]
            protocol, members = described[4], {m[1]: m[3] for m in described[5]}
            metadata = members[f"consumer-{g.name}-{instance}"]
            asked = time.time()
            await fleet.of[instance].send(f"stop {instance}")
            await fleet.until(
                lambda m=instance, a=asked: any(e["m"] == m for e in fleet.events("stopped", a)),
                30,
                f"{instance} stopped",
            )
            began = time.perf_counter()
            join = await client.send(
                node,
                JoinGroupRequest(
                    g.name, SESSION_MS, SESSION_MS, "", instance, "consumer", [(protocol, metadata)]
                ),
            )
            joined = time.perf_counter()
            sync = await client.send(
                node, SyncGroupRequest(g.name, join.generation_id, join.member_id, instance, [])
            )
            synced = time.perf_counter()
            if join.error_code or sync.error_code:
                raise RuntimeError(
                    f"oracle rejoin of {instance}: errors {join.error_code}, {sync.error_code}"
                )
            if join.leader_id != join.member_id:
                joins.append(joined - began)
                syncs.append(synced - joined)
            await _restart_one(fleet, instance)
    finally:
        await client.close()
    return spread(joins or [float("nan")]), spread(syncs or [float("nan")])


def _per_api(fleet: Fleet, windows: dict[str, list[tuple[float, float]]], mine: set[str]) -> dict[str, float]:
    per_api: dict[str, list[float]] = {}
    restarts = 0
    for instance, spans in windows.items():
        if instance not in mine:
            continue
        requests = [e for e in fleet.of[instance].events if e.get("ev") == "req"]
        for began, ended in spans:
            summed: dict[str, float] = {}
            for e in requests:
                if began <= e["t"] <= ended:
                    summed[e["api"]] = summed.get(e["api"], 0.0) + e["took"]
                    summed[f"{e['api']} count"] = summed.get(f"{e['api']} count", 0.0) + 1
            for api, took in summed.items():
                per_api.setdefault(api, []).append(took)
            restarts += 1
    medians = {api: statistics.median(took) for api, took in sorted(per_api.items())}
    # The medians above are over the restarts that sent the API at all: say how many did, and the mean
    # count over every restart (an API sent in a few restarts only shows there, not in the medians).
    for api, counts in sorted(per_api.items()):
        if api.endswith(" count"):
            medians[f"{api[: -len(' count')]} restarts"] = float(len(counts))
            medians[f"{api[: -len(' count')]} mean"] = sum(counts) / restarts if restarts else 0.0
    return medians


def _listen_overflows() -> int:
    """The kernel's count of connections its listen queues dropped (every port of the machine: other
    brokers' too): SYNs dropped at a full queue are sent again only 1 s later."""
    with contextlib.suppress(OSError, ValueError, StopIteration):
        head, values = [line.split() for line in Path("/proc/net/netstat").read_text().splitlines()[:2]]
        return int(values[head.index("ListenOverflows")])
    return -1


async def _broker_restart(
    args: argparse.Namespace, kafka: EmbeddedKafka, fleet: Fleet, groups: list[_Group]
) -> BrokerRestart:
    before = time.time()
    members = sum(len(g.instances) for g in groups)
    generations = _generations_after(fleet, 0)
    mid: set[str] = set()
    for n, g in enumerate(groups):
        partitions = 2 * len(g.instances)
        await _produce(kafka.bootstrap_servers, g.topic, partitions, f"mid{n}")
        mid |= {f"mid{n}-{p}-0" for p in range(partitions)}
    await fleet.until(lambda: mid <= fleet.keys(before), 60, "records written before the stop consumed")
    stopped = time.time()
    overflows = _listen_overflows()
    await asyncio.to_thread(kafka.shut_down)
    await asyncio.sleep(max(0.0, args.down - (time.time() - stopped)))
    restarting = time.time()
    restarted = asyncio.ensure_future(asyncio.to_thread(kafka.restart))
    accepting, answering = await asyncio.gather(
        _accepting(kafka.port, restarted), _answering(kafka.port, restarted)
    )
    await restarted
    ready = time.time()
    fleet.marks.update(stopped=stopped, accepting=accepting, answering=answering, ready=ready)
    print(
        f"broker down {answering - stopped:.1f} s: its port accepting {accepting - restarting:.1f} s after "
        f"its start, answering {answering - accepting:.1f} s later, restart() returned "
        f"{ready - answering:.1f} s after that",
        flush=True,
    )
    written: dict[str, float] = {}
    late: set[str] = set()
    for n, g in enumerate(groups):
        partitions = 2 * len(g.instances)
        written |= await _produce(kafka.bootstrap_servers, g.topic, partitions, f"late{n}")
        late |= {f"late{n}-{p}-0" for p in range(partitions)}
    await fleet.until(lambda: late <= fleet.keys(ready), 120, "records written after the return consumed")
    fleet.marks["listen_overflows"] = _listen_overflows() - overflows
    await asyncio.sleep(2)
    for w in fleet.workers:
        await w.send(f"connects {stopped + SETTLE_S} {restarting}")
    counts = [[e for e in w.events if e.get("ev") == "connects"] for w in fleet.workers]
    await fleet.until(lambda: all(c for c in counts) or _refresh(fleet, counts), 30, "connection counts")
    seconds = restarting - stopped - SETTLE_S
    rates = [c[-1]["n"] / c[-1]["members"] / seconds for c in counts]
    connected: dict[str, float] = {}
    for e in fleet.events("flip", stopped):
        if e["s"] == "connected":
            connected.setdefault(e["m"], e["t"])
    sampled: dict[str, float] = {}
    for e in fleet.events("state", stopped):
        if e["s"] == "connected":
            sampled.setdefault(e["m"], e["t"])
    first_late: dict[str, float] = {}
    for e in fleet.events("keys", ready):
        for k in e["keys"]:
            if k in written:
                first_late[e["m"]] = min(first_late.get(e["m"], 99.0), e["t"] - written[k])
    back = sum(
        1
        for i in fleet.of
        if i in connected and connected[i] - answering <= 2.0 and first_late.get(i, 0.0) <= 2.0
    )
    seen = fleet.keys(before)

    def since(moment: float) -> Spread:
        return spread([t - moment for t in connected.values()] or [float("nan")])

    result = BrokerRestart(
        members=members,
        down_seconds=answering - stopped,
        restart_seconds=ready - restarting,
        connects_per_consumer_per_second=spread(rates),
        reconnected_after_return=since(answering),
        first_record_after_return=spread(list(first_late.values()) or [float("nan")]),
        members_back_within_2s=back,
        lost=len((mid | late) - seen),
        rebalances=len(_generations_after(fleet, stopped) - generations),
        revoked=sum(e["n"] for kind in ("revoked", "lost") for e in fleet.events(kind, stopped)),
        accepting_to_answering_seconds=answering - accepting,
        answering_to_ready_seconds=ready - answering,
        reconnected_after_accepting=since(accepting),
        reconnected_after_ready=since(ready),
        reconnected_after_return_sampled=spread([t - answering for t in sampled.values()] or [float("nan")]),
    )
    print(
        f"broker restart: connected after the return {_brief(result.reconnected_after_return)}, after the "
        f"port accepted {_brief(since(accepting))}, after restart() returned {_brief(since(ready))}; "
        f"first record {_brief(result.first_record_after_return)}; back within 2 s {back} of {members}; "
        f"connects/consumer/s {_brief(result.connects_per_consumer_per_second)}; lost {result.lost}",
        flush=True,
    )
    return result


def _brief(s: Spread) -> str:
    return f"median {s.median:.2f} s (p75 {s.p75:.2f}, max {s.max:.2f})"


def _refresh(fleet: Fleet, counts: list[list[dict[str, Any]]]) -> bool:
    for w, c in zip(fleet.workers, counts, strict=True):
        c[:] = [e for e in w.events if e.get("ev") == "connects"]
    return all(counts)


def timeline(path: str, slowest: int) -> None:
    """``--timeline FILE``: from a ``--trace --events FILE`` run, what the members slowest to read
    ``connected`` after the broker's return did meanwhile: each connect attempt and request (by client:
    ``m`` the membership thread's, ``a`` the fetcher's) with its outcome, each answer the monitor was told
    of, its outage ending (``recovered``) and the state the member read, in seconds from the return."""
    events = [json.loads(line) for line in Path(path).read_text().splitlines()]
    marks = next((e for e in events if e["ev"] == "broker"), None)
    if marks is None or "answering" not in marks:
        raise SystemExit(f"{path}: no broker restart recorded (run with --trace --events)")
    answering = marks["answering"]
    connected: dict[str, float] = {}
    kind = "flip" if any(e["ev"] == "flip" for e in events) else "state"  # runs before flips were kept
    for e in events:
        if e["ev"] == kind and e["s"] == "connected" and e["t"] >= marks["stopped"]:
            connected.setdefault(e["m"], e["t"])
    late = sorted(connected, key=lambda m: connected[m], reverse=True)[:slowest]
    print(
        f"return at 0; port accepting {marks['accepting'] - answering:+.2f} s, restart() returned "
        f"{marks['ready'] - answering:+.2f} s; connections dropped by the machine's listen queues from "
        f"the stop to the records after the return consumed: {marks.get('listen_overflows')}; "
        f"{slowest} slowest of {len(connected)} members"
    )
    for member in late:
        worker = next(e["w"] for e in events if e.get("m") == member)
        print(f"\n{member} (worker {worker}): connected {connected[member] - answering:+.3f} s")
        mine = [
            e
            for e in events
            if (e.get("m") == member or (e["ev"] == "lag" and e["w"] == worker))
            and e["ev"] in ("req", "err", "answered", "recovered", "state", "flip", "lag", "begin")
            and answering - 3 <= e["t"] + e.get("took", 0)
            and e["t"] <= connected[member] + 0.1
        ]
        for e in sorted(mine, key=lambda e: e["t"]):
            at = e["t"] - answering
            if e["ev"] in ("req", "err"):
                what = "FAILED " + e["err"] if e["ev"] == "err" else "done"
                print(f"  {at:+8.3f} {e['c']} {e['api']:<16} {what} after {e['took']:.3f} s")
            elif e["ev"] == "answered":
                print(f"  {at:+8.3f}   answer to a request sent at {e['sent'] - answering:+.3f}")
            elif e["ev"] == "begin":
                last = f", the last {e['last_refused'] - answering:+.3f}" if e["refused"] else ""
                after = f", {e['late']:.3f} s after its wait ended" if e.get("late") is not None else ""
                refused = f"{e['refused']} asks refused{last}{after}"
                print(f"  {at:+8.3f} {e['c']} backoff lets a connect start ({refused})")
            elif e["ev"] == "lag":
                print(f"  {at:+8.3f}   the worker's loop ran {e['late']:.3f} s late")
            else:
                print(f"  {at:+8.3f}   {e['ev']} {e.get('s', '')}")


async def parent(args: argparse.Namespace) -> None:
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("aiokafka").setLevel(logging.ERROR)  # the prefill's NotLeader retries on new topics
    extra = {} if args.listen_backlog is None else {"socket.listen.backlog.size": str(args.listen_backlog)}
    with EmbeddedKafka(settings=BrokerSettings(extra=extra)) as kafka:
        args.bootstrap = kafka.bootstrap_servers
        env = environment(kafka.version, dirty_paths=("staticconsumer", "benchmarks/fleet.py"))
        small, large, outage = await run(args, kafka)
    ratio = large.restart_to_first_record.median / small.restart_to_first_record.median
    targets = {
        "no_rebalance": small.rebalances == 0 and large.rebalances == 0,
        "none_revoked_from_others": small.revoked_from_others == 0 and large.revoked_from_others == 0,
        "first_record_within_1.2x": ratio <= 1.2,
    }
    if outage is not None:
        targets["connects_at_most_2_per_second"] = outage.connects_per_consumer_per_second.max <= 2.0
        targets["every_member_back_within_2s"] = outage.members_back_within_2s == outage.members
        targets["nothing_lost"] = outage.lost == 0
    report = Report(
        NAME,
        env,
        [small, large],
        outage,
        ratio,
        targets,
        group_protocol=args.group_protocol,
        listen_backlog=args.listen_backlog,
        comparison="same processes, interleaved",
    )
    suffix = "" if args.group_protocol == "classic" else f"_{args.group_protocol}"
    if args.listen_backlog is not None:
        suffix += f"_backlog{args.listen_backlog}"
    path = write_json(report, f"{NAME}_{args.members}{suffix}")
    print(f"ratio {ratio:.2f}; targets {targets}: {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--members", type=int, default=30)
    parser.add_argument("--small", type=int, default=3)
    parser.add_argument("--small-restarts", type=int, default=30)
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--down", type=float, default=20.0)
    parser.add_argument("--no-broker-restart", action="store_true")
    parser.add_argument(
        "--group-protocol",
        choices=("classic", "consumer"),
        default="classic",
        help="consumer: KIP-848 (results in fleet_<members>_consumer.json)",
    )
    parser.add_argument(
        "--listen-backlog",
        type=int,
        help="the broker's socket.listen.backlog.size (Kafka's default 50); results in "
        "fleet_<members>[_consumer]_backlog<N>.json",
    )
    parser.add_argument(
        "--trace", action="store_true", help="time each restart's requests per API (not for the figures)"
    )
    parser.add_argument(
        "--bounce-limit",
        type=int,
        help="restart only the fleet's first K members (development, not figures; 0 with --small-restarts 0: "
        "the broker restart only)",
    )
    parser.add_argument(
        "--oracle",
        type=int,
        default=0,
        help="after all else, time K static rejoins per group from a bare client",
    )
    parser.add_argument("--events", help="write every worker event to this file (JSON lines)")
    parser.add_argument(
        "--timeline",
        metavar="FILE",
        help="print what the members slowest back after the broker restart did (a --trace --events FILE)",
    )
    parser.add_argument("--slowest", type=int, default=5, help="--timeline: how many members")
    parser.add_argument("--worker", action="store_true")
    parser.add_argument("--bootstrap")
    parser.add_argument("--spec", help="worker: group:topic:instance,instance;group:topic:...")
    args = parser.parse_args()
    if args.oracle and args.group_protocol != "classic":
        parser.error("--oracle times the classic JoinGroup/SyncGroup: use it with --group-protocol classic")
    if args.timeline:
        timeline(args.timeline, args.slowest)
        return
    asyncio.run(worker(args) if args.worker else parent(args))


if __name__ == "__main__":
    main()

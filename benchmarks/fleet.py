"""Fleet scale (issue 27): N static members in one group, a rolling bounce of every member, and a broker
restart under the whole fleet, on one embedded broker.

The members live in a few worker processes (``--processes``; a StatefulSet's pods, packed), each running
its share of StaticConsumers on one event loop, with auto-commit off so a restarted member reads its
partitions from the start and its first record comes as soon as it holds them again. The topic has
2N partitions, pre-filled. Each size (``--small``, 3 by default, and ``--members``) runs in the same
run, each with its own group and topic:

* rolling bounce: every member in turn is stopped (no LeaveGroup) and started again with the same
  group.instance.id, the next one once the last has its first record (well within the session timeout).
  Counted: rebalances (generations handed out after the group settled), partitions revoked from members
  that were not the one restarting, and each restart's seconds from its start() to its first record;
* broker restart (the largest size only): the broker's JVM is shut down for ``--down`` seconds and
  restarted on the same port and data (``EmbeddedKafka.shut_down``/``restart``). Counted: connection
  attempts per consumer after the first 5 s of the outage (every ``create_connection`` to the broker's
  port in each worker, divided by its members), each member's seconds from the broker's return to
  its connection state being ``connected`` again and to its first record written after the return, and
  whether every record written before the stop and after the return was consumed.

Targets: 0 rebalances, 0 partitions revoked from members that did not restart, restart-to-first-record
median at N within 1.2x of N=3; attempts <= 2 per second per consumer per broker after 5 s, every member
back within 2 s of the return, nothing lost. The machine's load is recorded (``environment``).

Run: .venv/bin/python -m benchmarks.fleet [--members 30] [--processes 3] [--down 20]
Writes benchmarks/results/fleet_<members>.json (schema: ``Report``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import sys
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import msgspec

from benchmarks.common import Environment, Spread, environment, spread, write_json
from staticconsumer.testing import EmbeddedKafka

NAME = "fleet"
SESSION_MS = 30_000
"""Outlives a restart of a member and, counted from the coordinator's reload, of the broker."""
PREFILL = 5
"""Records per partition before the members start."""
SETTLE_S = 5.0
"""The outage's first seconds, not counted against the connection attempts (the backoff grows)."""


# -- the worker process: its share of the members -------------------------------------------------------


def _emit(**event: Any) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


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
    def __init__(self, instance: str, args: argparse.Namespace) -> None:
        self.instance = instance
        self.args = args
        self.stopping = False
        self.task: asyncio.Task[None] | None = None

    def start(self, restart: bool) -> None:
        self.stopping = False
        self.task = asyncio.create_task(self.run(restart))

    async def stop(self) -> None:
        self.stopping = True
        if self.task is not None:
            await self.task

    async def run(self, restart: bool) -> None:
        from staticconsumer import StaticConsumer

        instance = self.instance
        consumer: Any = None

        class Listener:
            def on_partitions_assigned(self, assigned: Any) -> None:
                gen = consumer.generation if consumer is not None else -1
                _emit(ev="assigned", m=instance, n=len(assigned), gen=gen, t=time.time())

            def on_partitions_revoked(self, revoked: Any) -> None:
                _emit(ev="revoked", m=instance, n=len(revoked), t=time.time())

            def on_partitions_lost(self, lost: Any) -> None:
                _emit(ev="lost", m=instance, n=len(lost), t=time.time())

        began = time.time()
        consumer = StaticConsumer(
            self.args.topic,
            bootstrap_servers=self.args.bootstrap,
            group_id=self.args.group,
            group_instance_id=instance,
            session_timeout_ms=SESSION_MS,
            heartbeat_interval_ms=3000,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            listener=Listener(),
        )
        await consumer.start()
        _emit(ev="started", m=instance, restart=restart, t=time.time(), since=time.time() - began)
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


async def worker(args: argparse.Namespace) -> None:
    logging.basicConfig(level=logging.WARNING)
    connects = _count_connects(int(args.bootstrap.rpartition(":")[2]))
    members = {instance: _Member(instance, args) for instance in args.instances.split(",")}
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
        elif command == "connects":
            since, until = float(rest[0]), float(rest[1])
            _emit(ev="connects", n=sum(since <= t < until for t in connects), members=len(members))
        elif command == "quit":
            break
    await asyncio.gather(*(m.stop() for m in members.values()), return_exceptions=True)
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


async def _spawn(
    args: argparse.Namespace, topic: str, group: str, instances: list[str], processes: int
) -> Fleet:
    shares = [instances[i::processes] for i in range(processes)]
    workers = []
    for share in shares:
        if not share:
            continue
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "benchmarks.fleet",
            "--worker",
            "--bootstrap",
            args.bootstrap,
            "--topic",
            topic,
            "--group",
            group,
            "--instances",
            ",".join(share),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        w = _Worker(process, share)
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


async def _listening(port: int, restarted: asyncio.Future[Any]) -> float:
    """When the restarting broker's port first accepts a connection (its return, as clients see it)."""
    while not restarted.done():
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.05)
            continue
        writer.close()
        return time.time()
    return time.time()


class Bounce(msgspec.Struct):
    members: int
    partitions: int
    processes: int
    settle_seconds: float
    """From the first member's start to a group that has stopped changing."""
    rebalances: int
    revoked_from_others: int
    restart_to_first_record: Spread
    restart_to_started: Spread


class BrokerRestart(msgspec.Struct):
    members: int
    down_seconds: float
    """The stop until the port accepted connections again."""
    restart_seconds: float
    """The broker's JVM start until it was ready (topic created, coordinators loaded)."""
    connects_per_consumer_per_second: Spread
    """After the first 5 s of the outage, per worker process: its connection attempts / its members /
    seconds (one broker)."""
    reconnected_after_return: Spread
    """Per member: the broker's port accepting connections again -> its connection state ``connected``."""
    first_record_after_return: Spread
    """Per member: a record written to each partition once the broker was ready, from its
    acknowledgement to the member receiving it (the quickest of the member's partitions)."""
    members_back_within_2s: int
    lost: int
    rebalances: int
    revoked: int


class Report(msgspec.Struct):
    benchmark: str
    environment: Environment
    bounces: list[Bounce]
    broker_restart: BrokerRestart | None
    ratio_first_record: float
    """Restart-to-first-record median at the largest size over the smallest's."""
    targets: dict[str, bool]


async def _settled(fleet: Fleet, members: int, within: float) -> None:
    """Every member started and has had its first record, and no assignment for 3 s."""

    def quiet() -> bool:
        started = {e["m"] for e in fleet.events("started")}
        first = {e["m"] for e in fleet.events("first")}
        assigned = fleet.events("assigned")
        last = max((e["t"] for e in assigned), default=time.time())
        return len(started) == members and len(first) == members and time.time() - last > 3

    await fleet.until(quiet, within, f"{members} members started, reading and settled")


def _generation_after(fleet: Fleet, since: float) -> set[int]:
    return {e["gen"] for e in fleet.events("assigned", since)}


async def bounce(args: argparse.Namespace, kafka: EmbeddedKafka, members: int, restart_broker: bool) -> Any:
    suffix = uuid.uuid4().hex[:6]
    topic, group = f"fleet-{members}-{suffix}", f"fleet-{members}-{suffix}"
    partitions = 2 * members
    await asyncio.to_thread(kafka.create_topic, topic, partitions)
    await _produce(kafka.bootstrap_servers, topic, partitions, "pre", PREFILL)
    instances = [f"m-{i:03d}" for i in range(members)]
    began = time.time()
    fleet = await _spawn(args, topic, group, instances, min(args.processes, members))
    try:
        await _settled(fleet, members, within=120 + members * 2)
        settled = time.time()
        generations = _generation_after(fleet, 0)
        print(
            f"N={members}: settled in {settled - began:.1f} s, generations {sorted(generations)}", flush=True
        )
        windows: dict[str, tuple[float, float]] = {}
        for instance in instances:
            asked = time.time()
            await fleet.of[instance].send(f"restart {instance}")
            await fleet.until(
                lambda i=instance, a=asked: any(
                    e["m"] == i and e["restart"] for e in fleet.events("first", a)
                ),
                60,
                f"{instance} reading again after its restart",
            )
            windows[instance] = (asked, time.time())
        await asyncio.sleep(3)
        firsts = [e["since"] for e in fleet.events("first", settled) if e["restart"]]
        starts = [e["since"] for e in fleet.events("started", settled) if e["restart"]]
        new_generations = _generation_after(fleet, settled) - generations
        revoked = sum(
            e["n"]
            for kind in ("revoked", "lost")
            for e in fleet.events(kind, settled)
            if not (windows[e["m"]][0] <= e["t"] <= windows[e["m"]][1])
        )
        result = Bounce(
            members=members,
            partitions=partitions,
            processes=len(fleet.workers),
            settle_seconds=settled - began,
            rebalances=len(new_generations),
            revoked_from_others=revoked,
            restart_to_first_record=spread(firsts),
            restart_to_started=spread(starts),
        )
        print(
            f"N={members}: bounce rebalances {result.rebalances}, revoked from others {revoked}, "
            f"first record "
            f"median {result.restart_to_first_record.median:.2f} s",
            flush=True,
        )
        outage = (
            await _broker_restart(args, kafka, fleet, topic, partitions, members) if restart_broker else None
        )
        return result, outage
    finally:
        await _quit(fleet)


async def _broker_restart(
    args: argparse.Namespace, kafka: EmbeddedKafka, fleet: Fleet, topic: str, partitions: int, members: int
) -> BrokerRestart:
    before = time.time()
    generations = _generation_after(fleet, 0)
    await _produce(kafka.bootstrap_servers, topic, partitions, "mid")
    mid = {f"mid-{p}-0" for p in range(partitions)}
    await fleet.until(lambda: mid <= fleet.keys(before), 60, "records written before the stop consumed")
    stopped = time.time()
    await asyncio.to_thread(kafka.shut_down)
    await asyncio.sleep(max(0.0, args.down - (time.time() - stopped)))
    restarting = time.time()
    restarted = asyncio.ensure_future(asyncio.to_thread(kafka.restart))
    listening = await _listening(kafka.port, restarted)
    await restarted
    ready = time.time()
    print(
        f"broker down {listening - stopped:.1f} s, listening {listening - restarting:.1f} s after its start, "
        f"ready after {ready - restarting:.1f} s",
        flush=True,
    )
    written = await _produce(kafka.bootstrap_servers, topic, partitions, "late")
    late = {f"late-{p}-0" for p in range(partitions)}
    await fleet.until(lambda: late <= fleet.keys(ready), 120, "records written after the return consumed")
    await asyncio.sleep(2)
    for w in fleet.workers:
        await w.send(f"connects {stopped + SETTLE_S} {restarting}")
    counts = [[e for e in w.events if e.get("ev") == "connects"] for w in fleet.workers]
    await fleet.until(lambda: all(c for c in counts) or _refresh(fleet, counts), 30, "connection counts")
    seconds = restarting - stopped - SETTLE_S
    rates = [c[-1]["n"] / c[-1]["members"] / seconds for c in counts]
    connected = {}
    for e in fleet.events("state", stopped):
        if e["s"] == "connected":
            connected.setdefault(e["m"], e["t"] - listening)
    first_late: dict[str, float] = {}
    for e in fleet.events("keys", ready):
        for k in e["keys"]:
            if k in written:
                first_late[e["m"]] = min(first_late.get(e["m"], 99.0), e["t"] - written[k])
    back = sum(
        1
        for i in fleet.of
        if connected.get(i, 99) <= 2.0 and first_late.get(i, 0.0) <= 2.0 and i in connected
    )
    seen = fleet.keys(before)
    result = BrokerRestart(
        members=members,
        down_seconds=listening - stopped,
        restart_seconds=ready - restarting,
        connects_per_consumer_per_second=spread(rates),
        reconnected_after_return=spread(list(connected.values()) or [float("nan")]),
        first_record_after_return=spread(list(first_late.values()) or [float("nan")]),
        members_back_within_2s=back,
        lost=len((mid | late) - seen),
        rebalances=len(_generation_after(fleet, stopped) - generations),
        revoked=sum(e["n"] for kind in ("revoked", "lost") for e in fleet.events(kind, stopped)),
    )
    print(f"broker restart: {result}", flush=True)
    return result


def _refresh(fleet: Fleet, counts: list[list[dict[str, Any]]]) -> bool:
    for w, c in zip(fleet.workers, counts, strict=True):
        c[:] = [e for e in w.events if e.get("ev") == "connects"]
    return all(counts)


async def parent(args: argparse.Namespace) -> None:
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("aiokafka").setLevel(logging.ERROR)  # the prefill's NotLeader retries on new topics
    with EmbeddedKafka() as kafka:
        args.bootstrap = kafka.bootstrap_servers
        env = environment(kafka.version, dirty_paths=("staticconsumer", "benchmarks/fleet.py"))
        small, _ = await bounce(args, kafka, args.small, restart_broker=False)
        large, outage = await bounce(args, kafka, args.members, restart_broker=not args.no_broker_restart)
    ratio = large.restart_to_first_record.median / small.restart_to_first_record.median
    targets = {
        "no_rebalance": small.rebalances == 0 and large.rebalances == 0,
        "none_revoked_from_others": small.revoked_from_others == 0 and large.revoked_from_others == 0,
        "first_record_within_1.2x": ratio <= 1.2,
    }
    if outage is not None:
        targets["connects_at_most_2_per_second"] = outage.connects_per_consumer_per_second.max <= 2.0
        targets["every_member_back_within_2s"] = outage.members_back_within_2s == args.members
        targets["nothing_lost"] = outage.lost == 0
    report = Report(NAME, env, [small, large], outage, ratio, targets)
    path = write_json(report, f"{NAME}_{args.members}")
    print(f"ratio {ratio:.2f}; targets {targets}: {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--members", type=int, default=30)
    parser.add_argument("--small", type=int, default=3)
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--down", type=float, default=20.0)
    parser.add_argument("--no-broker-restart", action="store_true")
    parser.add_argument("--worker", action="store_true")
    parser.add_argument("--bootstrap")
    parser.add_argument("--topic")
    parser.add_argument("--group")
    parser.add_argument("--instances")
    args = parser.parse_args()
    asyncio.run(worker(args) if args.worker else parent(args))


if __name__ == "__main__":
    main()

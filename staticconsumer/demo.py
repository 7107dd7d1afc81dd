"""The main job: a rolling bounce on an embedded broker, static membership against dynamic.

Three consumers run in separate processes on one topic while a producer writes steadily. Each is
stopped and restarted in turn, as a Kubernetes rolling update does. With static membership the group
should not rebalance at all; with dynamic membership every restart costs about two rebalances. The demo
prints, per mode, the rebalances (generation changes), the partitions revoked from members that did
not restart, and each restart's time from process start to first record; it ends with what each mode
bought and paid: partitions moved, records processed twice, and how long records waited end to end
(a static member's partitions wait for it while it restarts, which the analysis counts as unowned).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaProducer

from staticconsumer.consumer import ConsumerRebalanceListener, StaticConsumer
from staticconsumer.membership import TopicPartition
from staticconsumer.testing import EmbeddedKafka

MEMBERS = 3
PARTITIONS_PER_MEMBER = 4
SESSION_TIMEOUT_MS = 10_000
HEARTBEAT_INTERVAL_MS = 1_000
PRODUCE_PER_SECOND = 200


# -- one member process ----------------------------------------------------------------------------


def _say(event: str, **fields: Any) -> None:
    print(json.dumps({"e": event, "t": time.time(), **fields}), flush=True)


class _Reporter(ConsumerRebalanceListener):
    def __init__(self, consumer_ref: list[StaticConsumer]) -> None:
        self._consumer = consumer_ref

    def on_partitions_assigned(self, assigned: frozenset[TopicPartition]) -> None:
        _say("assigned", n=len(assigned), gen=self._consumer[0].generation, partitions=sorted(assigned))

    def on_partitions_revoked(self, revoked: frozenset[TopicPartition]) -> None:
        _say("revoked", n=len(revoked), partitions=sorted(revoked))

    def on_partitions_lost(self, lost: frozenset[TopicPartition]) -> None:
        _say("lost", n=len(lost), partitions=sorted(lost))


async def run_member(
    bootstrap: str, topic: str, group: str, instance: str | None, event_log: str | None = None
) -> int:
    """Consume until SIGTERM, then stop the way a pod does (static: no LeaveGroup)."""
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    stopping = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopping.set)
    holder: list[StaticConsumer] = []
    consumer = StaticConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        group_instance_id=instance,
        session_timeout_ms=SESSION_TIMEOUT_MS,
        heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
        auto_commit_interval_ms=1000,
        auto_offset_reset="latest",
        listener=_Reporter(holder),
        event_log_path=event_log,
    )
    holder.append(consumer)
    await consumer.start()
    _say("started")
    first = True
    while not stopping.is_set():
        batch = await consumer.getmany(timeout_ms=200)
        if first and batch:
            first = False
            _say("first_record", gen=consumer.generation)
        if batch:
            _say("batch", **_processed(batch, time.time()))
    await consumer.stop()
    _say("stopped")
    return 0


def _processed(batch: dict[TopicPartition, list[Any]], now: float) -> dict[str, Any]:
    """What a batch processed: each partition's offsets, and the longest a record waited since it was
    produced (the producer writes its send time as the value; one machine, one clock)."""
    delays = [now - float(r.value) for records in batch.values() for r in records if r.value]
    return {
        "offsets": [[tp.topic, tp.partition, [r.offset for r in records]] for tp, records in batch.items()],
        "delay": max(delays, default=0.0),
    }


# -- the orchestrator ------------------------------------------------------------------------------


@dataclass
class Member:
    index: int
    process: subprocess.Popen[str]
    spawned_at: float
    events: list[dict[str, Any]] = field(default_factory=list)

    def first(self, event: str) -> dict[str, Any] | None:
        return next((e for e in self.events if e["e"] == event), None)


@dataclass
class ModeResult:
    mode: str
    rebalances: int
    revoked_from_others: int
    restart_to_first_record: list[float]
    start_generation: int = -1
    members: list[Member] = field(default_factory=list)
    """Every member process of the run with the JSON events it printed (the test's direct view)."""
    bounce: tuple[float, float] = (0.0, 0.0)
    """Wall-clock start (the first stop) and end (the group settled after the last restart)."""

    def batches(self) -> list[tuple[float, dict[str, Any]]]:
        """Every batch any member process processed, with its time, oldest first."""
        return sorted((e["t"], e) for m in self.members for e in m.events if e["e"] == "batch")

    @property
    def processed_twice(self) -> int:
        """Records processed more than once (by any process): a partition that moved on before its
        last owner committed is read again from the committed offset by the next."""
        seen: dict[tuple[str, int], set[int]] = {}
        total = 0
        for _, batch in self.batches():
            for topic, partition, offsets in batch["offsets"]:
                seen.setdefault((topic, partition), set()).update(offsets)
                total += len(offsets)
        return total - sum(len(offsets) for offsets in seen.values())

    @property
    def moved(self) -> int:
        """Assignments during the bounce that gave a partition to another member (by its index: a
        restarted static member is the same member) than the one that had it before."""
        owner: dict[tuple[str, int], int] = {}
        moved = 0
        start = self.bounce[0]
        assigned = sorted(
            (e["t"], m.index, e) for m in self.members for e in m.events if e["e"] == "assigned"
        )
        for t, index, event in assigned:
            for topic, partition in event["partitions"]:
                before = owner.get((topic, partition))
                if t >= start and before is not None and before != index:
                    moved += 1
                owner[(topic, partition)] = index
        return moved

    @property
    def longest_delay(self) -> float:
        """The longest any record waited end to end (produced to processed) during the bounce."""
        start, end = self.bounce
        return max((b["delay"] for t, b in self.batches() if start <= t <= end), default=0.0)

    @property
    def median_restart(self) -> float:
        return (
            statistics.median(self.restart_to_first_record) if self.restart_to_first_record else float("nan")
        )


def _spawn(
    index: int, bootstrap: str, topic: str, group: str, static: bool, event_log: str | None = None
) -> Member:
    command = [sys.executable, "-m", "staticconsumer.demo", "member", bootstrap, topic, group]
    if static:
        command.append(f"demo-{index}")
    if event_log is not None:
        command += ["--event-log", event_log]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    member = Member(index, process, time.time())

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            with contextlib.suppress(json.JSONDecodeError):
                member.events.append(json.loads(line))

    threading.Thread(target=read, daemon=True).start()
    return member


async def _wait_for(check: Any, within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"demo: not within {within:.0f}s: {what}")
        await asyncio.sleep(0.1)


async def _produce_steadily(bootstrap: str, topic: str, stop: asyncio.Event) -> int:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    await producer.start()
    sent = 0
    try:
        while not stop.is_set():
            await producer.send(topic, str(time.time()).encode(), key=f"k{sent}".encode())
            sent += 1
            await asyncio.sleep(1 / PRODUCE_PER_SECOND)
    finally:
        await producer.stop()
    return sent


def _generations(members: list[Member]) -> set[int]:
    return {e["gen"] for m in members for e in m.events if e["e"] == "assigned"}


async def run_mode(
    kafka: EmbeddedKafka, static: bool, event_log_dir: Path | None = None, name: str | None = None
) -> ModeResult:
    """One rolling bounce; with ``event_log_dir`` each member process writes its event log there.

    ``name`` (default ``demo-<mode>``) is the topic and the group, so tests sharing a broker don't collide.
    """
    mode = "static" if static else "dynamic"
    event_log = None if event_log_dir is None else str(event_log_dir / "{instance}-{session}.jsonl")
    topic = group = name or f"demo-{mode}"
    kafka.create_topic(topic, MEMBERS * PARTITIONS_PER_MEMBER)
    bootstrap = kafka.bootstrap_servers
    stop_producing = asyncio.Event()
    producing = asyncio.create_task(_produce_steadily(bootstrap, topic, stop_producing))
    members = [_spawn(i, bootstrap, topic, group, static, event_log) for i in range(MEMBERS)]
    everyone: list[Member] = list(members)
    try:

        def settled() -> bool:
            latest = [
                next((e for e in reversed(m.events) if e["e"] in ("assigned", "revoked")), None)
                for m in members
            ]
            gens = {e["gen"] for e in latest if e is not None and e["e"] == "assigned"}
            return (
                all(e is not None and e["e"] == "assigned" for e in latest)
                and len(gens) == 1
                and sum(e["n"] for e in latest if e is not None) == MEMBERS * PARTITIONS_PER_MEMBER
            )

        await _wait_for(settled, 60, f"{mode} group to settle")
        start_generation = max(_generations(members))
        print(f"  {mode}: {MEMBERS} members stable in generation {start_generation}; bouncing each in turn")
        bounce_started = time.time()
        restart_times: list[float] = []
        revoked_from_others = 0
        for index in range(MEMBERS):
            others = [m for m in members if m.index != index]
            revokes_before = sum(1 for m in others for e in m.events if e["e"] in ("revoked", "lost"))
            old = members[index]
            old.process.send_signal(signal.SIGTERM)
            await asyncio.get_running_loop().run_in_executor(None, old.process.wait)
            new = _spawn(index, bootstrap, topic, group, static, event_log)
            members[index] = new
            everyone.append(new)
            await _wait_for(
                lambda new=new: new.first("first_record") is not None, 60, "restarted member's record"
            )
            first_record = new.first("first_record")
            assert first_record is not None
            restart_times.append(first_record["t"] - new.spawned_at)
            await _wait_for(settled, 60, f"{mode} group to settle after restart {index}")
            await asyncio.sleep(1.5)  # let late revokes or rebalances show before the next restart
            revoked_from_others += sum(
                1 for m in others for e in m.events if e["e"] in ("revoked", "lost")
            ) - (revokes_before)
            print(f"    restart {index}: first record {restart_times[-1]:.2f}s after process start")
        rebalances = len({g for g in _generations(everyone) if g > start_generation})
        return ModeResult(
            mode,
            rebalances,
            revoked_from_others,
            restart_times,
            start_generation,
            everyone,
            (bounce_started, time.time()),
        )
    finally:
        stop_producing.set()
        await producing
        for member in members:
            if member.process.poll() is None:
                member.process.send_signal(signal.SIGTERM)
        for member in members:
            try:
                member.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                member.process.kill()


def run_demo(version: str | None = None) -> int:
    """Run both modes on one embedded broker and print the comparison."""
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    print(f"Starting an embedded Kafka broker ({version or 'default version'}) on loopback ...")
    with EmbeddedKafka(version) as kafka:
        print(f"Kafka {kafka.version} ready at {kafka.bootstrap_servers} in {kafka.start_seconds:.1f}s")
        print(
            f"Rolling bounce: {MEMBERS} consumer processes, {MEMBERS * PARTITIONS_PER_MEMBER} partitions, "
            f"{PRODUCE_PER_SECOND} records/s, session timeout {SESSION_TIMEOUT_MS / 1000:.0f}s"
        )
        logs = Path(tempfile.mkdtemp(prefix="staticconsumer-demo-"))
        results = [
            asyncio.run(run_mode(kafka, static=True, event_log_dir=logs / "static")),
            asyncio.run(run_mode(kafka, static=False, event_log_dir=logs / "dynamic")),
        ]
    print()
    print(f"{'membership':<12}{'rebalances':>12}{'revoked from others':>22}{'median restart->record':>25}")
    for r in results:
        print(f"{r.mode:<12}{r.rebalances:>12}{r.revoked_from_others:>22}{r.median_restart:>24.2f}s")
    static, dynamic = results
    ok = static.rebalances == 0 and static.revoked_from_others == 0
    print()
    print(
        "Static membership held: no rebalance during the rolling bounce."
        if ok
        else "Static membership did NOT hold: see the rebalances above."
    )
    print(f"Dynamic membership for contrast: {dynamic.rebalances} rebalances for {MEMBERS} restarts.")
    unowned = _analyze_event_logs(logs)
    print()
    print("\n".join(tradeoffs(results, unowned)))
    return 0 if ok else 1


def tradeoffs(results: list[ModeResult], unowned: dict[str, float] | None = None) -> list[str]:
    """What each mode bought and what it paid, in one line each, so neither figure reads alone.

    ``unowned`` is the analysis's unowned partition-seconds per mode: static's is the larger, because
    a restarting member's partitions wait for it instead of moving; that wait is what static buys
    the rest with, and the session timeout bounds it (a member gone longer is evicted).
    """
    timeout = SESSION_TIMEOUT_MS / 1000
    lines = [f"What each mode bought and paid over the {MEMBERS} restarts:"]
    for r in results:
        waited = f"unowned {unowned[r.mode]:.1f} partition-s, " if unowned and r.mode in unowned else ""
        moved = (
            f"{r.moved} partitions moved, {r.revoked_from_others} revoked from members that did not "
            f"restart, {r.processed_twice} records processed twice"
        )
        if r.mode == "static" and not r.rebalances:
            paid = (
                f"paid: each restarting member's {PARTITIONS_PER_MEMBER} partitions waited for it "
                f"(median restart {r.median_restart:.1f}s; the {timeout:.0f}s session timeout bounds the "
                f"wait), {waited}records delayed up to {r.longest_delay:.1f}s end to end"
            )
        elif r.mode == "static":
            slow = sum(1 for took in r.restart_to_first_record if took > timeout)
            paid = (
                f"paid: each restarting member's {PARTITIONS_PER_MEMBER} partitions waited for it up to "
                f"the {timeout:.0f}s session timeout; {slow} of {len(r.restart_to_first_record)} restarts "
                f"took longer to their first record (median {r.median_restart:.1f}s: a loaded machine?) "
                f"and the group rebalanced {r.rebalances} times (a member gone past the timeout is "
                f"evicted), {waited}records delayed up to {r.longest_delay:.1f}s end to end"
            )
        else:
            paid = (
                f"paid: {r.rebalances} rebalances stopped every member while the partitions moved "
                f"there and back, {waited}records delayed up to {r.longest_delay:.1f}s end to end"
            )
        lines.append(f"  {r.mode:<8} {moved}; {paid}")
    return lines


def _analyze_event_logs(logs: Path) -> dict[str, float] | None:
    """End with the fleet analysis over the members' event logs; a missing PySpark is explained, not fatal.

    Returns each mode's unowned partition-seconds as the analysis found them (None without one).
    """
    from staticconsumer.analytics import INSTALL_HINT, pyspark_available

    print()
    print(f"Membership event logs of every member process: {logs}")
    if not pyspark_available():
        print(f"Skipping the Spark analysis of these logs: {INSTALL_HINT}")
        return None
    from staticconsumer.analytics.run import analyze
    from staticconsumer.analytics.session import spark_session

    modes = [logs / "static", logs / "dynamic"]
    print(f"Analysing them with Spark (local[*]): staticconsumer analyze {' '.join(map(str, modes))}")
    unowned: dict[str, float] | None = None
    try:
        spark = spark_session()
        try:
            analysis = analyze(modes, logs / "analysis", spark=spark)
            print(analysis.text())
            print("(A deploy window includes each group's first start, so its first generations count too.)")
            unowned = {
                group.removeprefix("demo-"): analysis.totals(group)["unowned_partition_seconds"]
                for group in analysis.groups()
            }
        finally:
            spark.stop()
    except Exception as error:  # the demo's verdict above stands; say why the analysis is missing
        print(f"The analysis failed ({type(error).__name__}: {error}); the logs are kept for a rerun.")
    return unowned


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m staticconsumer.demo")
    commands = parser.add_subparsers(dest="command", required=True)
    member = commands.add_parser("member", help="(internal) one consumer process of the demo")
    member.add_argument("bootstrap")
    member.add_argument("topic")
    member.add_argument("group")
    member.add_argument("instance", nargs="?", default=None)
    member.add_argument("--event-log", default=None, help="event log path (staticconsumer.event.log.path)")
    run = commands.add_parser("run")
    run.add_argument("--kafka-version", default=None)
    args = parser.parse_args(argv)
    if args.command == "member":
        return asyncio.run(run_member(args.bootstrap, args.topic, args.group, args.instance, args.event_log))
    return run_demo(args.kafka_version)


if __name__ == "__main__":
    sys.exit(main())

"""KIP-814's scenario, side by side: restart the group's leader, then add partitions.

A static leader that comes back within the session timeout is replaced in place. Whether the group
then notices partitions added to a subscribed topic depends on whether the returning leader knows it
leads (JoinGroup v9 SkipAssignment) and still watches metadata. Per client, per run: seconds from the
partition increase to the first record consumed from a new partition, or "not consumed" within the
time limit. Both clients re-read metadata every --refresh-ms.

Run: .venv/bin/python -m benchmarks.leader_restart_growth [--runs 5] [--kafka-version 4.3.1]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any

import msgspec
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from benchmarks.common import Environment, Spread, environment, spread, write_json
from staticconsumer import StaticConsumer
from staticconsumer.testing import EmbeddedKafka
from tests.interop.oracle import JavaPeerConsumer

SESSION_MS = 10_000
HEARTBEAT_MS = 1_000


class Run(msgspec.Struct):
    seconds_to_new_partition: float | None
    """None: no record from a new partition within the limit."""
    leader_kept_generation: bool


class ClientResult(msgspec.Struct):
    client: str
    runs: list[Run]
    consumed_runs: int
    seconds: Spread | None
    """Over the runs that consumed the new partitions."""


class Report(msgspec.Struct):
    benchmark: str
    refresh_ms: int
    limit_seconds: float
    environment: Environment
    clients: list[ClientResult]
    notes: list[str]


class Member:
    """One group member, whatever the client: start, poll, stop, and what it knows of the group."""

    def __init__(
        self,
        start: Callable[[], Awaitable[None]],
        poll: Callable[[], Awaitable[list[Any]]],
        stop: Callable[[], Awaitable[None]],
        generation: Callable[[], int],
    ) -> None:
        self.start, self.poll, self.stop, self.generation = start, poll, stop, generation


def _poller(consumer: Any) -> Callable[[], Awaitable[list[Any]]]:
    """Both clients share aiokafka's getmany shape: records by partition."""

    async def poll() -> list[Any]:
        batch = await consumer.getmany(timeout_ms=100)
        return [r for rows in batch.values() for r in rows]

    return poll


def ours(bootstrap: str, topic: str, group: str, instance: str, refresh_ms: int) -> Member:
    consumer = StaticConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        group_instance_id=instance,
        session_timeout_ms=SESSION_MS,
        heartbeat_interval_ms=HEARTBEAT_MS,
        metadata_max_age_ms=refresh_ms,
        auto_offset_reset="earliest",
    )
    return Member(consumer.start, _poller(consumer), consumer.stop, lambda: consumer.generation)


def aiokafka_static(bootstrap: str, topic: str, group: str, instance: str, refresh_ms: int) -> Member:
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        group_instance_id=instance,
        session_timeout_ms=SESSION_MS,
        heartbeat_interval_ms=HEARTBEAT_MS,
        metadata_max_age_ms=refresh_ms,
        auto_offset_reset="earliest",
    )

    def generation() -> int:
        coordinator = getattr(consumer, "_coordinator", None)
        return int(getattr(coordinator, "generation", -1)) if coordinator is not None else -1

    return Member(consumer.start, _poller(consumer), consumer.stop, generation)


def java_static(bootstrap: str, topic: str, group: str, instance: str, refresh_ms: int) -> Member:
    """Java's KafkaConsumer (kafka-clients at the broker's version) in its own JVM: the reference."""
    peer: list[JavaPeerConsumer] = []
    read = [0]

    async def start() -> None:
        peer.append(
            await asyncio.get_running_loop().run_in_executor(
                None,
                lambda: JavaPeerConsumer.start(
                    KAFKA_VERSION[0],
                    bootstrap=bootstrap,
                    group=group,
                    topics=topic,
                    instance=instance,
                    assignor="range",
                    session_ms=SESSION_MS,
                    heartbeat_ms=HEARTBEAT_MS,
                    metadata_max_age_ms=refresh_ms,
                    auto_offset_reset="earliest",
                ),
            )
        )

    async def poll() -> list[Any]:
        await asyncio.sleep(0.1)
        events = peer[0].events[read[0] :]
        read[0] += len(events)
        return [
            SimpleNamespace(partition=partition)
            for event in events
            if event["e"] == "records"
            for _topic, partition, _count in event["by"]
        ]

    async def stop() -> None:
        await asyncio.get_running_loop().run_in_executor(None, peer[0].stop)

    def generation() -> int:
        last = peer[0].last("assigned") if peer else None
        return int(last["gen"]) if last is not None else -1

    return Member(start, poll, stop, generation)


KAFKA_VERSION: list[str | None] = [None]
"""The broker's version, for the Java client's kafka-clients (set once the broker is up)."""

CLIENTS: dict[str, Callable[[str, str, str, str, int], Member]] = {
    "staticconsumer": ours,
    "aiokafka-0.14-static": aiokafka_static,
    "java-static": java_static,
}


async def one_run(
    kafka: EmbeddedKafka, make: Callable[[str, str, str, str, int], Member], refresh_ms: int, limit: float
) -> Run:
    topic, group = f"growth-{uuid.uuid4().hex[:8]}", f"growth-{uuid.uuid4().hex[:8]}"
    kafka.create_topic(topic, 4)
    bootstrap = kafka.bootstrap_servers
    leader = make(bootstrap, topic, group, "leader", refresh_ms)
    await leader.start()
    await _until_joined(leader, 60.0)  # join alone first, so it leads
    follower = make(bootstrap, topic, group, "follower", refresh_ms)
    await follower.start()
    await _poll_both(leader, follower, 8.0)
    generation = follower.generation()
    await leader.stop()
    leader = make(bootstrap, topic, group, "leader", refresh_ms)
    await leader.start()
    await _poll_both(leader, follower, 3.0)
    kept = follower.generation() == generation
    grown = time.monotonic()
    await _grow(bootstrap, topic)
    found: float | None = None
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        while time.monotonic() - grown < limit and found is None:
            for partition in (4, 5):
                await producer.send(topic, b"x", partition=partition)
            for member in (leader, follower):
                if any(r.partition >= 4 for r in await member.poll()):
                    found = time.monotonic() - grown
                    break
    finally:
        await producer.stop()
        for member in (leader, follower):
            with contextlib.suppress(Exception):
                await member.stop()
    return Run(found, kept)


async def _grow(bootstrap: str, topic: str) -> None:
    from staticconsumer.testing.broker import add_partitions

    await add_partitions(bootstrap, topic, 6)


async def _until_joined(member: Member, within: float) -> None:
    end = time.monotonic() + within
    while member.generation() < 1 and time.monotonic() < end:
        await member.poll()


async def _poll_both(a: Member, b: Member, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        await a.poll()
        await b.poll()


def summarise(client: str, runs: list[Run]) -> ClientResult:
    times = [r.seconds_to_new_partition for r in runs if r.seconds_to_new_partition is not None]
    return ClientResult(client, runs, len(times), spread(times) if times else None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--refresh-ms", type=int, default=5000)
    parser.add_argument("--limit", type=float, default=30.0, help="seconds to wait for a new partition")
    parser.add_argument("--kafka-version", default=None)
    args = parser.parse_args(argv)
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    with EmbeddedKafka(args.kafka_version) as kafka:
        KAFKA_VERSION[0] = kafka.version
        results: dict[str, list[Run]] = {name: [] for name in CLIENTS}
        for run in range(args.runs):  # interleaved, so both clients see the same machine conditions
            for name, make in CLIENTS.items():
                outcome = asyncio.run(one_run(kafka, make, args.refresh_ms, args.limit))
                results[name].append(outcome)
                shown = (
                    "not consumed"
                    if outcome.seconds_to_new_partition is None
                    else (f"{outcome.seconds_to_new_partition:.2f}s")
                )
                print(
                    f"run {run + 1} {name}: {shown} (generation kept on leader restart: "
                    f"{outcome.leader_kept_generation})",
                    flush=True,
                )
        clients = [summarise(name, runs) for name, runs in results.items()]
        notes = []
        for client in clients:
            if client.seconds is None:
                notes.append(
                    f"{client.client}: new partitions never consumed within {args.limit:.0f}s "
                    f"in {len(client.runs)} runs"
                )
            else:
                notes.append(
                    f"{client.client}: consumed in {client.consumed_runs}/{len(client.runs)} runs, "
                    f"median {client.seconds.median:.2f}s "
                    f"(limit target 2 x refresh = {2 * args.refresh_ms / 1000:.0f}s)"
                )
        report = Report(
            "leader_restart_growth", args.refresh_ms, args.limit, environment(kafka.version), clients, notes
        )
    path = write_json(report, "leader_restart_growth")
    print("\n".join(notes))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Idle CPU per member: N idle static members of StaticConsumer against N aiokafka group consumers.

Issue 27: an idle member cost about 7.8 ms of CPU per wall second against aiokafka's 3.9, so fifty
consumers in one process used 0.4 of a core doing nothing. Each run is one child process holding N
consumers of one variant, all in one fresh group over a topic of N partitions (one partition each), no
records. Once every consumer has its partition, each keeps calling ``getmany(timeout_ms=1000)`` as an
idle application does, and the child measures ``time.process_time()`` (all its threads) over the window:
CPU seconds per wall second, divided by N. Variants alternate within each repeat (order rotating), so
the shared machine's noise hits both alike.

* ``staticconsumer``: StaticConsumer with a group_instance_id, defaults otherwise;
* ``aiokafka``: AIOKafkaConsumer in the group (dynamic membership, aiokafka's defaults).

Target: StaticConsumer's median per member at or below aiokafka's.

Run: .venv/bin/python -m benchmarks.idle_cpu [--members 10] [--seconds 30] [--repeats 3]
Writes benchmarks/results/idle_cpu.json (schema: ``Report``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import subprocess
import sys
import time
import uuid
from typing import Any

import msgspec

from benchmarks.common import Environment, Spread, environment, spread, write_json
from staticconsumer.testing import EmbeddedKafka

NAME = "idle_cpu"
VARIANTS = ("staticconsumer", "aiokafka")


class Variant(msgspec.Struct):
    variant: str
    cpu_ms_per_member_second: Spread
    """CPU milliseconds per member per wall second, one sample per run."""


class Report(msgspec.Struct):
    benchmark: str
    members: int
    seconds: float
    environment: Environment
    variants: list[Variant]
    ratio: float
    """StaticConsumer's median over aiokafka's: at most 1.0 meets the target."""
    target_met: bool


async def _consumers(variant: str, bootstrap: str, topic: str, group: str, members: int) -> list[Any]:
    if variant == "staticconsumer":
        from staticconsumer import StaticConsumer

        return [
            StaticConsumer(topic, bootstrap_servers=bootstrap, group_id=group, group_instance_id=f"idle-{i}")
            for i in range(members)
        ]
    from aiokafka import AIOKafkaConsumer

    return [AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group) for _ in range(members)]


async def _idle(consumer: Any, until: float) -> None:
    while time.monotonic() < until:
        await consumer.getmany(timeout_ms=1000)


async def child(variant: str, bootstrap: str, topic: str, members: int, seconds: float) -> dict[str, float]:
    """One run: start every consumer, wait until each holds its partition, then measure the idle window."""
    consumers = await _consumers(variant, bootstrap, topic, f"idle-{variant}-{uuid.uuid4().hex[:6]}", members)
    await asyncio.gather(*(c.start() for c in consumers))
    try:
        deadline = time.monotonic() + 120
        while not all(len(c.assignment()) == 1 for c in consumers):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{variant}: not every consumer got its partition within 120 s")
            await asyncio.gather(*(c.getmany(timeout_ms=200) for c in consumers))
        settle = time.monotonic() + 3  # let the last joins' requests and commits die down
        await asyncio.gather(*(_idle(c, settle) for c in consumers))
        cpu0, wall0 = time.process_time(), time.monotonic()
        await asyncio.gather(*(_idle(c, wall0 + seconds) for c in consumers))
        cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
    finally:
        await asyncio.gather(*(c.stop() for c in consumers), return_exceptions=True)
    return {"cpu_s": cpu, "wall_s": wall, "ms_per_member_second": cpu / wall / members * 1000}


def _run_child(variant: str, bootstrap: str, topic: str, members: int, seconds: float) -> float:
    command = [sys.executable, "-m", "benchmarks.idle_cpu", "--child", variant, "--bootstrap", bootstrap]
    command += ["--topic", topic, "--members", str(members), "--seconds", str(seconds)]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=seconds + 300)
    if done.returncode != 0:
        raise RuntimeError(f"{variant} run failed ({done.returncode}):\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"{variant}: {result}", flush=True)
    return float(result["ms_per_member_second"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--members", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", choices=VARIANTS)
    parser.add_argument("--bootstrap")
    parser.add_argument("--topic")
    parser.add_argument("--name", default=NAME, help="result file name (without .json)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.child:
        result = asyncio.run(child(args.child, args.bootstrap, args.topic, args.members, args.seconds))
        print(json.dumps(result))
        return
    samples: dict[str, list[float]] = {v: [] for v in VARIANTS}
    with EmbeddedKafka() as kafka:
        env = environment(kafka.version, dirty_paths=("staticconsumer", "benchmarks/idle_cpu.py"))
        topic = f"idle-{uuid.uuid4().hex[:6]}"
        kafka.create_topic(topic, args.members)
        for repeat in range(args.repeats):
            order = VARIANTS if repeat % 2 == 0 else VARIANTS[::-1]
            for variant in order:
                samples[variant].append(
                    _run_child(variant, kafka.bootstrap_servers, topic, args.members, args.seconds)
                )
    spreads = {v: spread(s) for v, s in samples.items()}
    ratio = spreads["staticconsumer"].median / spreads["aiokafka"].median
    report = Report(
        benchmark=NAME,
        members=args.members,
        seconds=args.seconds,
        environment=env,
        variants=[Variant(v, spreads[v]) for v in VARIANTS],
        ratio=ratio,
        target_met=ratio <= 1.0,
    )
    path = write_json(report, args.name)
    print(f"ratio {ratio:.2f} (target <= 1.0): {path}")


if __name__ == "__main__":
    main()

"""Idle CPU per member: N idle static members of StaticConsumer against N aiokafka group consumers.

Issue 27: an idle member cost about 7.8 ms of CPU per wall second against aiokafka's 3.9, so fifty
consumers in one process used 0.4 of a core doing nothing. Each run is one child process holding N
consumers of one variant, all in one fresh group over a topic of N partitions (one partition each), no
records. Once every consumer has its partition, each keeps calling ``getmany(timeout_ms=1000)`` as an
idle application does, and the child measures ``time.process_time()`` (all its threads) over the window:
CPU seconds per wall second, divided by N. Variants alternate within each repeat (order rotating), so
the shared machine's noise hits both alike.

* ``staticconsumer``: StaticConsumer with a group_instance_id, defaults otherwise;
* ``aiokafka``: AIOKafkaConsumer in the group (dynamic membership, aiokafka's defaults);
* ``staticconsumer@base`` (with ``--base PATH``): StaticConsumer of another checkout (a ``git worktree``
  of the base revision), its children run with that tree first on ``PYTHONPATH``, so a change is
  measured side by side with what it changes, under the same load.

Each run also splits its CPU by thread (Linux: ``/proc/self/task/*/schedstat``): the application's loop
(the main thread), the membership thread(s), the rest (the fetcher's and the executor's helpers).

Target: StaticConsumer's median per member at or below aiokafka's.

Run: .venv/bin/python -m benchmarks.idle_cpu [--members 10] [--seconds 30] [--repeats 3] [--base PATH]
Writes benchmarks/results/idle_cpu.json (schema: ``Report``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import msgspec

from benchmarks.common import Environment, Spread, environment, spread, write_json
from staticconsumer.testing import EmbeddedKafka

NAME = "idle_cpu"
VARIANTS = ("staticconsumer", "aiokafka")
BASE = "staticconsumer@base"


class Variant(msgspec.Struct):
    variant: str
    cpu_ms_per_member_second: Spread
    """CPU milliseconds per member per wall second, one sample per run."""
    threads: dict[str, Spread] = {}
    """The same by thread: ``application`` (its loop), ``membership``, ``other``."""


class Report(msgspec.Struct):
    benchmark: str
    members: int
    seconds: float
    environment: Environment
    variants: list[Variant]
    ratio: float
    """StaticConsumer's median over aiokafka's: at most 1.0 meets the target."""
    target_met: bool
    base_ratio: float | None = None
    """With ``--base``: the base tree's StaticConsumer median over aiokafka's, from the same runs."""


async def _consumers(variant: str, bootstrap: str, topic: str, group: str, members: int) -> list[Any]:
    if variant == "staticconsumer":
        from staticconsumer import StaticConsumer

        return [
            StaticConsumer(topic, bootstrap_servers=bootstrap, group_id=group, group_instance_id=f"idle-{i}")
            for i in range(members)
        ]
    from aiokafka import AIOKafkaConsumer

    return [AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group) for _ in range(members)]


def _thread_seconds() -> dict[str, float]:
    """CPU seconds of this process's threads so far, by role (empty where /proc has no schedstat)."""
    names = {t.native_id: t.name for t in threading.enumerate()}
    seconds: dict[str, float] = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            nanoseconds = int(Path(f"/proc/self/task/{tid}/schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        name = names.get(int(tid), "")
        role = (
            "application"
            if name == "MainThread"
            else "membership"
            if name.startswith("staticconsumer-membership")
            else "other"
        )
        seconds[role] = seconds.get(role, 0.0) + nanoseconds / 1e9
    return seconds


async def _idle(consumer: Any, until: float) -> None:
    while time.monotonic() < until:
        await consumer.getmany(timeout_ms=1000)


async def child(variant: str, bootstrap: str, topic: str, members: int, seconds: float) -> dict[str, Any]:
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
        threads0, cpu0, wall0 = _thread_seconds(), time.process_time(), time.monotonic()
        await asyncio.gather(*(_idle(c, wall0 + seconds) for c in consumers))
        cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
        threads = _thread_seconds()  # a thread that ended in the window is missing from both readings
    finally:
        await asyncio.gather(*(c.stop() for c in consumers), return_exceptions=True)
    by_thread = {
        role: (spent - threads0.get(role, 0.0)) / wall / members * 1000 for role, spent in threads.items()
    }
    return {
        "cpu_s": cpu,
        "wall_s": wall,
        "ms_per_member_second": cpu / wall / members * 1000,
        "threads_ms_per_member_second": by_thread,
    }


def _run_child(
    variant: str, bootstrap: str, topic: str, members: int, seconds: float, base: str | None
) -> dict[str, Any]:
    """One child process; ``staticconsumer@base`` runs the base tree's code (and its benchmark)."""
    tree = base if variant == BASE and base is not None else None
    child = "staticconsumer" if variant == BASE else variant
    command = [sys.executable, "-m", "benchmarks.idle_cpu", "--child", child, "--bootstrap", bootstrap]
    command += ["--topic", topic, "--members", str(members), "--seconds", str(seconds)]
    env = dict(os.environ, PYTHONPATH=tree) if tree is not None else None
    done = subprocess.run(
        command, capture_output=True, text=True, check=False, timeout=seconds + 300, env=env, cwd=tree
    )
    if done.returncode != 0:
        raise RuntimeError(f"{variant} run failed ({done.returncode}):\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"{variant} (load {os.getloadavg()[0]:.1f}): {result}", flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--members", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", choices=VARIANTS)
    parser.add_argument("--bootstrap")
    parser.add_argument("--topic")
    parser.add_argument("--name", default=NAME, help="result file name (without .json)")
    parser.add_argument("--base", help="another checkout whose StaticConsumer runs beside (a worktree)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.child:
        result = asyncio.run(child(args.child, args.bootstrap, args.topic, args.members, args.seconds))
        print(json.dumps(result))
        return
    variants = (*VARIANTS, BASE) if args.base else VARIANTS
    samples: dict[str, list[float]] = {v: [] for v in variants}
    by_thread: dict[str, dict[str, list[float]]] = {v: {} for v in variants}
    with EmbeddedKafka() as kafka:
        env = environment(kafka.version, dirty_paths=("staticconsumer", "benchmarks/idle_cpu.py"))
        topic = f"idle-{uuid.uuid4().hex[:6]}"
        kafka.create_topic(topic, args.members)
        for repeat in range(args.repeats):
            order = variants if repeat % 2 == 0 else variants[::-1]
            for variant in order:
                result = _run_child(
                    variant, kafka.bootstrap_servers, topic, args.members, args.seconds, args.base
                )
                samples[variant].append(float(result["ms_per_member_second"]))
                for role, value in result.get("threads_ms_per_member_second", {}).items():
                    by_thread[variant].setdefault(role, []).append(float(value))
    spreads = {v: spread(s) for v, s in samples.items()}
    ratio = spreads["staticconsumer"].median / spreads["aiokafka"].median
    report = Report(
        benchmark=NAME,
        members=args.members,
        seconds=args.seconds,
        environment=env,
        variants=[Variant(v, spreads[v], {r: spread(s) for r, s in by_thread[v].items()}) for v in variants],
        ratio=ratio,
        target_met=ratio <= 1.0,
        base_ratio=spreads[BASE].median / spreads["aiokafka"].median if args.base else None,
    )
    path = write_json(report, args.name)
    base = f", base tree {report.base_ratio:.2f}" if report.base_ratio is not None else ""
    print(f"ratio {ratio:.2f} (target <= 1.0){base}: {path}")


if __name__ == "__main__":
    main()

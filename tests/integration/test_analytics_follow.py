"""``staticconsumer analyze --follow``: a real rolling bounce's event log topic, analysed while it happens.

Three dynamic members on the real broker, restarted one after another (each restart is a LeaveGroup and
a join: rebalances), write their event log to a topic with the Kafka sink; the command follows that
topic with Spark Structured Streaming and Spark's Kafka source. It must flag the rebalance storm before
the bounce is over, and its per-group table must end equal to what the bounce did: the rebalances after
the group formed (the demo's count), every start and stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from staticconsumer.consumer import StaticConsumer
from staticconsumer.eventlog import decode_line, schema
from staticconsumer.testing import EmbeddedKafka

from .support import FAST

pytestmark = pytest.mark.kafka

MEMBERS = 3
PARTITIONS = 6
RESTART_PAUSE = 10.0
"""Seconds between restarts, as a rollout waits for readiness: the bounce lasts 25 s past its first
rebalance at least, and the storm must be flagged within that (a warm micro-batch takes 1 to 2 s on a
quiet machine; the first ones, which compile the query, took 20 s at a load average of 10, so the roll
starts once the follower has processed the formation)."""


class Lines:
    """A process's stdout lines with the time each arrived, read by a thread."""

    def __init__(self, stream: Any) -> None:
        self.seen: list[tuple[float, str]] = []
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: Any) -> None:
        for line in stream:
            self.seen.append((time.monotonic(), line.rstrip("\n")))

    def first(self, predicate: Callable[[str], bool]) -> tuple[float, str] | None:
        return next(((t, line) for t, line in list(self.seen) if predicate(line)), None)


async def _wait(condition: Callable[[], bool], within: float, what: str, why: Callable[[], str]) -> None:
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {within:.0f}s\n{why()}")
        await asyncio.sleep(0.5)


def _group_totals(live: Path, group: str) -> dict[str, Any] | None:
    try:
        snapshot = json.loads(live.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return next((g for g in snapshot["groups"] if g["group"] == group), None)


def _formation_seen(live: Path, group: str) -> bool:
    """The follower's table has every member's start and a generation: it processed the formation."""
    totals = _group_totals(live, group)
    return totals is not None and totals["starts"] == MEMBERS and totals["generations"] >= 1


class Bounce:
    """Three dynamic members of one group on the real broker, kept polling; each restarted in turn.

    Every member writes its event log to ``log_topic`` (the Kafka sink), as a deployment would."""

    def __init__(self, bootstrap: str, topic: str, group: str, log_topic: str, files: Path) -> None:
        self.options = {
            "bootstrap_servers": bootstrap,
            "group_id": group,
            "event_log_topic": log_topic,
            "event_log_path": str(files / "{session}.jsonl"),
            **FAST,
        }
        self.topic = topic
        self.members: list[StaticConsumer] = []
        self.generations: set[int] = set()
        self._polling: asyncio.Task[None] | None = None

    async def _poll(self) -> None:
        while True:
            for member in list(self.members):
                with contextlib.suppress(Exception):  # a member being stopped right now
                    await member.getmany(timeout_ms=50)
                    if member.generation > 0:
                        self.generations.add(member.generation)
            await asyncio.sleep(0.05)

    async def new_member(self) -> StaticConsumer:
        member = StaticConsumer(self.topic, **self.options)  # type: ignore[arg-type]
        await member.start()
        return member

    def settled(self) -> bool:
        owned = [len(m.assignment()) for m in self.members]
        return all(owned) and sum(owned) == PARTITIONS and len({m.generation for m in self.members}) == 1

    async def form(self) -> int:
        self._polling = asyncio.create_task(self._poll())
        for _ in range(MEMBERS):
            self.members.append(await self.new_member())
        await _wait(self.settled, 60, "the group formed", lambda: "")
        return self.members[0].generation

    async def roll(self) -> None:
        for index in range(MEMBERS):
            await self.members[index].stop()
            self.members[index] = await self.new_member()
            await _wait(self.settled, 60, f"the group settled after restart {index}", lambda: "")
            await asyncio.sleep(RESTART_PAUSE)

    async def stop(self) -> None:
        for member in self.members:
            await member.stop()
        self.members = []
        if self._polling is not None:
            self._polling.cancel()


def logged_rebalances(files: Path, group: str) -> int:
    """Rebalances after the group formed, from the members' own files: generations synced after the
    group's first departure (the definition docs/analytics.md gives, computed without Spark)."""
    records = [decode_line(line) for path in files.glob("*.jsonl") for line in path.read_bytes().splitlines()]
    departures = [
        r.ts
        for r in records
        if isinstance(r, schema.Stopped | schema.Leaving | schema.Fenced | schema.Failed)
        or (isinstance(r, schema.Revoked) and r.reason == "stop")
    ]
    first_sync: dict[int, float] = {}
    for r in records:
        if isinstance(r, schema.Synced) and r.group == group:
            first_sync[r.generation] = min(r.ts, first_sync.get(r.generation, r.ts))
    return sum(1 for ts in first_sync.values() if departures and ts > min(departures))


async def test_follow_flags_the_storm_of_a_real_dynamic_bounce_while_it_happens(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str, tmp_path: Path
) -> None:
    log_topic = create_topic(f"{unique_group}-membership", partitions=2)
    topic = create_topic(f"{unique_group}-orders", partitions=PARTITIONS)
    out, stderr_path = tmp_path / "live", tmp_path / "follow.stderr"
    with stderr_path.open("w") as stderr:
        follower = subprocess.Popen(  # noqa: ASYNC220 - a long-lived process, read by a thread
            [
                sys.executable,
                "-m",
                "staticconsumer.cli",
                "analyze",
                "--follow",
                log_topic,
                "--bootstrap-servers",
                kafka_broker.bootstrap_servers,
                "--master",
                "local[2]",
                "--storm-rebalances",
                "1",
                "--storm-seconds",
                "120",
                "--watermark",
                "60",
                "--trigger",
                "1",
                "--out",
                str(out),
            ],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    assert follower.stdout is not None
    lines = Lines(follower.stdout)

    def why() -> str:
        shown = "\n".join(line for _, line in lines.seen[-15:])
        live = (out / "live.json").read_text() if (out / "live.json").exists() else "no live.json"
        return f"stdout tail:\n{shown}\n{live}\nstderr tail:\n{stderr_path.read_text()[-2500:]}"

    files = tmp_path / "files"
    bounce = Bounce(kafka_broker.bootstrap_servers, topic, unique_group, log_topic, files)
    try:
        await _wait(lambda: "following topic" in stderr_path.read_text(), 300, "the query started", why)
        formed = await bounce.form()
        # A deploy meets a follower that has been running: the roll starts once the follower has
        # processed the group's formation (its first micro-batches compile the query and warm the JVM,
        # which took tens of seconds on a loaded CI machine and is no part of flagging a storm).
        formed_at = time.monotonic()
        await _wait(
            lambda: _formation_seen(out / "live.json", unique_group),
            300,
            "the follower saw the group form",
            why,
        )
        warm_up = time.monotonic() - formed_at
        await bounce.roll()
        bounce_over = time.monotonic()
        during_roll = len({g for g in bounce.generations if g > formed})
        await bounce.stop()
        assert during_roll >= 2, "a dynamic rolling bounce rebalances on every restart"
        # The roll's and the final stops' generations that members synced into (a generation the
        # coordinator started but nobody synced into, seen by polling, is no rebalance in the log).
        rebalances = logged_rebalances(files, unique_group)
        assert rebalances >= 2

        def caught_up() -> bool:
            totals = _group_totals(out / "live.json", unique_group)
            return (
                totals is not None
                and totals["rebalances_after_formation"] == rebalances
                and totals["starts"] == totals["stops"] == 2 * MEMBERS
            )

        await _wait(caught_up, 300, "the live table caught up with the bounce", why)
        storm = lines.first(lambda line: line.startswith(f"STORM group {unique_group}:"))
        assert storm is not None, why()
        late = storm[0] - bounce_over
        assert late < 0, (
            f"the storm was flagged {late:.1f}s after the bounce was over, not while it went on "
            f"(the follower saw the formation {warm_up:.1f}s after it)"
        )
        assert "(more than 1 in 120 s)" in storm[1]
        totals = _group_totals(out / "live.json", unique_group)
        assert totals is not None
        assert totals["storms"] >= 1
        assert totals["formation_generations"] >= 1
        assert lines.first(
            lambda line: line.startswith(f"live {unique_group}: {rebalances} rebalances after")
        )
    finally:
        await bounce.stop()
        follower.send_signal(signal.SIGINT)
        try:
            code = await asyncio.get_running_loop().run_in_executor(None, lambda: follower.wait(timeout=120))
        except subprocess.TimeoutExpired:
            follower.kill()
            raise
    assert code == 0, why()
    await asyncio.sleep(0.5)  # the reader thread takes the last line
    assert lines.seen[-1][1].startswith(f"stopped following {log_topic}:")

"""``staticconsumer analyze --follow``: a real rolling bounce's event log topic, analysed while it happens.

The member processes of a dynamic rolling bounce (the demo's, on the real broker) write their event log
to a topic; the command follows that topic with Spark Structured Streaming and Spark's Kafka source. It
must flag the rebalance storm before the bounce is over, and its per-group table must end equal to what
the bounce did: the rebalances after the group formed (the demo's count), every start and stop.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from staticconsumer.demo import MEMBERS, run_mode
from staticconsumer.testing import EmbeddedKafka

pytestmark = pytest.mark.kafka


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


def _wait(condition: Callable[[], bool], within: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {within:.0f}s; stderr tail:\n{log.read_text()[-3000:]}")
        time.sleep(0.5)


def _group_totals(live: Path, group: str) -> dict[str, Any] | None:
    try:
        snapshot = json.loads(live.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return next((g for g in snapshot["groups"] if g["group"] == group), None)


def test_follow_flags_the_storm_of_a_real_dynamic_bounce_while_it_happens(
    kafka_broker: EmbeddedKafka,
    create_topic: Callable[..., str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    log_topic = create_topic(partitions=2)
    group = f"follow-dynamic-{uuid.uuid4().hex[:6]}"
    out, stderr_path = tmp_path / "live", tmp_path / "follow.stderr"
    with stderr_path.open("w") as stderr:
        follower = subprocess.Popen(
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
                "30",
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
    try:
        _wait(
            lambda: "following topic" in stderr_path.read_text(),
            300,
            "the streaming queries started",
            stderr_path,
        )
        # Every member process writes its event log to the topic too (settings come from the environment).
        monkeypatch.setenv("KAFKA_STATICCONSUMER_EVENT_LOG_TOPIC", log_topic)
        result = asyncio.run(
            run_mode(kafka_broker, static=False, event_log_dir=tmp_path / "files", name=group)
        )
        bounce_over = time.monotonic()
        assert result.rebalances >= 2, "a dynamic rolling bounce rebalances on every restart"

        def caught_up() -> bool:
            totals = _group_totals(out / "live.json", group)
            return (
                totals is not None
                and totals["rebalances_after_formation"] == result.rebalances
                and totals["starts"] == totals["stops"] == 2 * MEMBERS
            )

        _wait(caught_up, 300, "the live table caught up with the bounce", stderr_path)
        storm = lines.first(lambda line: line.startswith(f"STORM group {group}:"))
        assert storm is not None, "\n".join(line for _, line in lines.seen[-20:])
        assert storm[0] < bounce_over, "the storm was flagged while the bounce was still going on"
        assert "(more than 1 in 120 s)" in storm[1]
        totals = _group_totals(out / "live.json", group)
        assert totals is not None
        assert totals["storms"] >= 1
        assert totals["formation_generations"] >= 1
        assert lines.first(
            lambda line: line.startswith(f"live {group}: {result.rebalances} rebalances after")
        )
    finally:
        follower.send_signal(signal.SIGINT)
        try:
            code = follower.wait(timeout=120)
        except subprocess.TimeoutExpired:
            follower.kill()
            raise
    assert code == 0, stderr_path.read_text()[-3000:]
    time.sleep(0.5)  # the reader thread takes the last line
    assert lines.seen[-1][1].startswith(f"stopped following {log_topic}:")

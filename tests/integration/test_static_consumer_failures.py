"""Fencing, poll timeouts and liveness against the real broker."""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from staticconsumer.consumer import StaticConsumer
from staticconsumer.testing import EmbeddedKafka

from .support import (
    FAST,
    RecordingListener,
    RequestRecorder,
    committed_offsets,
    consume,
    eventually,
    produce,
    until_assigned,
)

pytestmark = pytest.mark.kafka

MEMBER = Path(__file__).with_name("member_process.py")


class MemberProcess:
    """A StaticConsumer in a child process; its JSON-lines report is read on a thread."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(MEMBER), *args], stdout=subprocess.PIPE, text=True, cwd=Path.cwd()
        )
        self.events: list[dict[str, Any]] = []
        self._reader = asyncio.get_running_loop().run_in_executor(None, self._read)

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            try:
                self.events.append(json.loads(line))
            except json.JSONDecodeError:
                self.events.append({"event": "unreadable", "line": line})

    def first(self, event: str) -> dict[str, Any] | None:
        return next((e for e in self.events if e["event"] == event), None)

    def all(self, event: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["event"] == event]

    async def finish(self, within: float = 30) -> int:
        code = await asyncio.wait_for(
            asyncio.get_running_loop().run_in_executor(None, self.process.wait), within
        )
        await self._reader
        return code

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()


@pytest.mark.both_versions
async def test_duplicate_instance_in_another_process_fences_the_first_for_good(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=2)
    bootstrap = kafka_broker.bootstrap_servers
    await produce(bootstrap, topic, 20)
    first = MemberProcess(
        "--bootstrap", bootstrap, "--topic", topic, "--group", unique_group, "--instance", "dup"
    )
    try:
        await eventually(
            lambda: len(first.all("committed")) > 0,
            30,
            "the first process consumes and commits",
            lambda: f"its report: {first.events}",
        )
        listener = RecordingListener()
        second = StaticConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=unique_group,
            group_instance_id="dup",
            listener=listener,
            **FAST,
        )
        async with second:
            await until_assigned(second)
            joined_at = time.time()
            assert await first.finish() == 3, first.events
            fenced = first.first("fenced")
            assert fenced is not None
            delay = fenced["t"] - joined_at
            assert delay <= 1.0 + 1.0, f"fenced {delay:.2f}s after the second joined (heartbeat 1 s)"
            message = fenced["message"]
            assert unique_group in message
            assert "'dup'" in message
            assert "same group.instance.id" in message, "first usual cause: a duplicate process"
            assert "session.timeout.ms" in message, "second usual cause: away longer than the session"
            print(f"fenced {delay:.3f}s after the duplicate joined")
            assert [e["call"] for e in first.all("fenced_again")] == ["getmany", "commit", "getone"]
            assert first.first("lost") is not None, "the fenced member's lost callback ran"
            late_commits = [
                e for e in first.all("sent") if e["api"] == "OffsetCommitRequest" and e["t"] > fenced["t"]
            ]
            assert late_commits == [], "no commit after fencing"
            assert not [e for e in first.all("sent") if e["api"] == "LeaveGroupRequest"]

            # The second keeps consuming and committing.
            await produce(bootstrap, topic, 10, start=20)
            records = await consume(second, 10)
            await second.commit()
            assert {r.value for r in records} == {f"v{i}".encode() for i in range(20, 30)}, (
                "the replacement resumes exactly where the fenced member's last commit left off"
            )
            committed = await committed_offsets(bootstrap, unique_group)
            assert sum(committed.values()) == 30
    finally:
        first.kill()


async def test_static_member_that_stops_polling_drops_its_id_locally_and_replaces_itself(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=2)
    bootstrap = kafka_broker.bootstrap_servers
    listener = RecordingListener()
    wire = RequestRecorder()
    consumer = StaticConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=unique_group,
        group_instance_id="slow",
        listener=listener,
        request_hook=wire,
        max_poll_interval_ms=2000,
        **FAST,
    )
    async with consumer:
        await until_assigned(consumer)
        generation, owned, old_member_id = consumer.generation, consumer.assignment(), consumer.member_id
        await asyncio.sleep(3.5)  # the application is "stuck" past max.poll.interval.ms
        assert "lost" in listener.kinds(), listener.kinds()
        assert not consumer.assignment()
        assert not wire.of("LeaveGroupRequest"), "a static member never leaves on poll timeout"
        joins_before = len(wire.of("JoinGroupRequest"))
        await until_assigned(consumer)
        rejoin = wire.of("JoinGroupRequest")[joins_before]
        assert rejoin.message.member_id == "", "rejoins as its own replacement"
        assert rejoin.message.group_instance_id == "slow"
        assert consumer.assignment() == owned
        assert consumer.member_id != old_member_id
        assert consumer.generation == generation, "replacing itself in a stable group needs no rebalance"


async def test_heartbeats_flow_every_interval_while_the_application_is_busy(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic()
    wire = RequestRecorder()
    consumer = StaticConsumer(
        topic,
        bootstrap_servers=kafka_broker.bootstrap_servers,
        group_id=unique_group,
        group_instance_id="beat",
        request_hook=wire,
        **FAST,
    )
    async with consumer:
        await until_assigned(consumer)
        before = len(wire.of("HeartbeatRequest"))
        await asyncio.sleep(4.2)  # no polling: heartbeats must not depend on the application
        beats = wire.of("HeartbeatRequest")[before:]
    assert 3 <= len(beats) <= 5, [round(b.at, 2) for b in beats]
    gaps = [b.at - a.at for a, b in itertools.pairwise(beats)]
    assert all(0.8 <= gap <= 1.3 for gap in gaps), gaps


@pytest.mark.both_versions
async def test_member_removed_by_an_operator_gets_unknown_member_id_and_rejoins(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    """An admin LeaveGroup naming the instance id removes the member; its next heartbeat answers
    UNKNOWN_MEMBER_ID, it reports its partitions lost and rejoins with a fresh member id."""
    from staticconsumer.protocol import LeaveGroupRequest, LeaveGroupResponse, MemberIdentity

    from .support import to_coordinator

    topic = create_topic(partitions=2)
    bootstrap = kafka_broker.bootstrap_servers
    listener = RecordingListener()
    wire = RequestRecorder()
    consumer = StaticConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=unique_group,
        group_instance_id="removed",
        listener=listener,
        request_hook=wire,
        **FAST,
    )
    async with consumer:
        await until_assigned(consumer)
        old_member, generation = consumer.member_id, consumer.generation
        left = await to_coordinator(
            bootstrap,
            unique_group,
            LeaveGroupRequest(
                group_id=unique_group, members=[MemberIdentity(member_id="", group_instance_id="removed")]
            ),
        )
        assert isinstance(left, LeaveGroupResponse)
        assert left.members[0].error_code == 0

        async def back() -> bool:
            await consumer.getmany(timeout_ms=100)
            return bool(consumer.assignment()) and consumer.member_id not in ("", old_member)

        await eventually(back, 20, "the member rejoins after UNKNOWN_MEMBER_ID")
        assert "lost" in listener.kinds(), "membership lost: partitions reported lost, not revoked"
        rejoin = [s for s in wire.of("JoinGroupRequest") if s.at > 0][-1]
        assert rejoin.message.member_id == ""
        assert rejoin.message.group_instance_id == "removed"
        assert consumer.generation > generation

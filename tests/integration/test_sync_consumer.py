"""The synchronous StaticConsumer against a real broker: a worker that blocks keeps its membership,
listener errors reach poll(), Ctrl-C stops cleanly, a rolling bounce does not rebalance, and a
kafka-python 3.0 group moves to it pod by pod (issue 28)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from staticconsumer.membership import TopicPartition
from staticconsumer.sync import StaticConsumer
from staticconsumer.testing import EmbeddedKafka
from tests.integration.support import committed_offsets, produce

MEMBER = Path(__file__).with_name("sync_member_process.py")
SESSION_MS = 2000
"""Small session timeout (the embedded broker's group.min.session.timeout.ms is 500 ms)."""
RESTART_SESSION_MS = 10000
"""For members in child processes: a static member must be back within its session timeout, and a new
Python process on a busy CI machine takes seconds to import and join."""

pytestmark = pytest.mark.kafka


class Seen:
    """kafka-python's listener shape, recording each call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, frozenset[TopicPartition]]] = []

    def on_partitions_assigned(self, assigned: frozenset[TopicPartition]) -> None:
        self.calls.append(("assigned", frozenset(assigned)))

    def on_partitions_revoked(self, revoked: frozenset[TopicPartition]) -> None:
        self.calls.append(("revoked", frozenset(revoked)))


def test_sleeping_three_session_timeouts_in_the_loop_keeps_member_id_and_partitions(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=2)
    asyncio.run(produce(kafka_broker.bootstrap_servers, topic, 4))
    seen = Seen()
    with StaticConsumer(
        topic,
        listener=seen,
        bootstrap_servers=kafka_broker.bootstrap_servers,
        group_id=unique_group,
        group_instance_id="worker-0",
        session_timeout_ms=SESSION_MS,
        heartbeat_interval_ms=500,
        auto_offset_reset="earliest",
    ) as consumer:
        member, generation = consumer.member_id, consumer.generation
        owned = consumer.assignment()
        assert owned == {TopicPartition(topic, 0), TopicPartition(topic, 1)}
        got = 0
        while got < 4:
            got += sum(len(rows) for rows in consumer.poll(timeout_ms=1000).values())
        consumer.commit()
        time.sleep(3 * SESSION_MS / 1000)  # the worker blocks: no poll, no heartbeat from this thread
        asyncio.run(produce(kafka_broker.bootstrap_servers, topic, 2, start=4))
        later = 0
        deadline = time.monotonic() + 10
        while later < 2 and time.monotonic() < deadline:
            later += sum(len(rows) for rows in consumer.poll(timeout_ms=1000).values())
        assert later == 2
        assert (consumer.member_id, consumer.generation) == (member, generation)
        assert consumer.assignment() == owned
    # The eager first join revokes nothing; the only revoke of owned partitions is close()'s own.
    assert [call for call in seen.calls if call[1]] == [("assigned", owned), ("revoked", owned)]


def test_an_exception_in_a_listener_reaches_the_caller_of_poll(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=1)

    class Refuses:
        def on_partitions_assigned(self, assigned: frozenset[TopicPartition]) -> None:
            raise LookupError(f"no state store for {sorted(assigned)}")

    with StaticConsumer(
        bootstrap_servers=kafka_broker.bootstrap_servers,
        group_id=unique_group,
        group_instance_id="worker-0",
        session_timeout_ms=SESSION_MS,
        heartbeat_interval_ms=500,
    ) as consumer:
        consumer.subscribe([topic], listener=Refuses())

        def poll_for_20_s() -> None:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                consumer.poll(timeout_ms=500)

        with pytest.raises(LookupError, match="no state store"):
            poll_for_20_s()
        assert consumer.poll(timeout_ms=0) == {}  # raised once; the consumer goes on


def test_iteration_stops_after_consumer_timeout_ms_and_commits_what_it_returned(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=1)
    asyncio.run(produce(kafka_broker.bootstrap_servers, topic, 5))
    sigterm = signal.getsignal(signal.SIGTERM)
    with StaticConsumer(
        topic,
        bootstrap_servers=kafka_broker.bootstrap_servers,
        group_id=unique_group,
        group_instance_id="worker-0",
        session_timeout_ms=SESSION_MS,
        heartbeat_interval_ms=500,
        auto_offset_reset="earliest",
        consumer_timeout_ms=1500,
        enable_auto_commit=False,
        value_deserializer=bytes.decode,  # kafka-python's keyword, as in the async consumer
    ) as consumer:
        values = [record.value for record in consumer]
        assert values == [f"v{i}" for i in range(5)]
        done: list[tuple[Any, BaseException | None]] = []
        future = consumer.commit_async(callback=lambda offsets, error: done.append((offsets, error)))
        future.result(timeout=10)
        consumer.poll(timeout_ms=0)  # runs the callback, in this thread
        assert done == [(None, None)]
        assert consumer.committed(TopicPartition(topic, 0)) == 5
    assert asyncio.run(committed_offsets(kafka_broker.bootstrap_servers, unique_group)) == {
        TopicPartition(topic, 0): 5
    }
    assert signal.getsignal(signal.SIGTERM) is sigterm  # close() gave SIGTERM back


class Member:
    """A child process running sync_member_process.py; its JSON lines read on a thread."""

    def __init__(self, bootstrap: str, topic: str, group: str, instance: str, client: str = "ours") -> None:
        self.events: list[dict[str, Any]] = []
        self.process = subprocess.Popen(
            [
                sys.executable,
                str(MEMBER),
                "--bootstrap",
                bootstrap,
                "--topic",
                topic,
                "--group",
                group,
                "--instance",
                instance,
                "--client",
                client,
                "--session-ms",
                str(RESTART_SESSION_MS),
                "--poll-ms",
                "500" if client == "kafka-python" else "60000",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.events.append(json.loads(line))

    def wait_for(self, event: str, seconds: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for seen in self.events:
                if seen["event"] == event:
                    return seen
            if self.process.poll() is not None and not self._reader.is_alive():
                break
            time.sleep(0.05)
        stderr = self.process.stderr.read() if self.process.stderr and self.process.poll() is not None else ""
        raise AssertionError(f"no {event!r} from the member: {self.events} {stderr[-3000:]}")

    def stop(self, how: signal.Signals = signal.SIGINT) -> int:
        self.process.send_signal(how)
        code = self.process.wait(timeout=60)
        self._reader.join(timeout=5)
        return code

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def members() -> Iterator[list[Member]]:
    started: list[Member] = []
    yield started
    for member in started:
        member.kill()


def test_ctrl_c_during_poll_leaves_no_thread_and_sends_no_leave_group(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str, members: list[Member]
) -> None:
    topic = create_topic(partitions=1)
    member = Member(kafka_broker.bootstrap_servers, topic, unique_group, "worker-0")
    members.append(member)
    member.wait_for("started")
    time.sleep(0.5)  # inside poll(timeout_ms=60000) on an empty topic
    began = time.monotonic()
    assert member.stop(signal.SIGINT) == 0
    assert time.monotonic() - began < 15
    ended = member.wait_for("interrupted")
    assert ended["threads"] == ["MainThread"]
    assert not [e for e in member.events if e.get("api") == "LeaveGroupRequest"]


def test_sigterm_during_poll_stops_the_same_way(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str, members: list[Member]
) -> None:
    topic = create_topic(partitions=1)
    member = Member(kafka_broker.bootstrap_servers, topic, unique_group, "worker-0")
    members.append(member)
    member.wait_for("started")
    time.sleep(0.5)
    assert member.stop(signal.SIGTERM) == 0
    assert member.wait_for("terminated")["threads"] == ["MainThread"]
    assert not [e for e in member.events if e.get("api") == "LeaveGroupRequest"]


def test_a_rolling_bounce_of_three_sync_static_members_causes_no_rebalance(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str, members: list[Member]
) -> None:
    topic = create_topic(partitions=6)
    bootstrap = kafka_broker.bootstrap_servers
    pods = [f"pod-{i}" for i in range(3)]
    for pod in pods:
        members.append(Member(bootstrap, topic, unique_group, pod))
        members[-1].wait_for("started")
    # Each start above rebalanced the group; the last one's start returned once all three had synced.
    generation = members[-1].wait_for("started")["generation"]
    owned = {pod: _assigned_last(m) for pod, m in zip(pods, members, strict=True)}
    assert sorted(tp for parts in owned.values() for tp in parts) == sorted([topic, p] for p in range(6))
    for i, pod in enumerate(pods):
        revokes = [_revokes(m) for m in members]
        assert members[i].stop(signal.SIGTERM) == 0
        members[i] = Member(bootstrap, topic, unique_group, pod)
        assert members[i].wait_for("started")["generation"] == generation
        assert _assigned_last(members[i]) == owned[pod]
        # The others were not rebalanced meanwhile (the new process had revoked nothing yet).
        assert [_revokes(m) for j, m in enumerate(members) if j != i] == [
            n for j, n in enumerate(revokes) if j != i
        ]
    asyncio.run(produce(bootstrap, topic, 12))
    for m in members:
        m.wait_for("records", 30)
    assert [_revokes(m) for m in members] == [0, 0, 0]


def _assigned_last(member: Member) -> list[list[Any]]:
    return [e for e in member.events if e["event"] == "assigned"][-1]["partitions"]


def _revokes(member: Member) -> int:
    """Revokes of owned partitions (an eager first join revokes nothing, and says so)."""
    return sum(1 for e in member.events if e["event"] == "revoked" and e["partitions"])


def test_a_kafka_python_group_moves_to_the_sync_consumer_pod_by_pod(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str, members: list[Member]
) -> None:
    topic = create_topic(partitions=6)
    bootstrap = kafka_broker.bootstrap_servers
    pods = [f"pod-{i}" for i in range(3)]
    for pod in pods:
        members.append(Member(bootstrap, topic, unique_group, pod, client="kafka-python"))
    for m in members:
        m.wait_for("assigned")
    everyone = list(members)
    asyncio.run(produce(bootstrap, topic, 6, prefix="a"))
    for i, pod in enumerate(pods):
        assert members[i].stop(signal.SIGINT) == 0
        members[i] = Member(bootstrap, topic, unique_group, pod)
        everyone.append(members[i])
        members[i].wait_for("started")
        asyncio.run(produce(bootstrap, topic, 6, prefix="b", start=6 * (i + 1)))
    seen: set[str] = set()
    deadline = time.monotonic() + 60
    wanted = {f"v{i}" for i in range(24)}
    while not wanted <= seen and time.monotonic() < deadline:
        seen = {v for m in everyone for e in m.events if e["event"] == "records" for v in e["values"]}
        time.sleep(0.2)
    assert wanted <= seen
    for m in members:
        assert m.process.poll() is None, m.events  # an error would have ended the process
    for m in members:
        assert m.stop(signal.SIGINT) == 0


@pytest.mark.parametrize("seek_back", [True, False], ids=["unread", "without-unread"])
def test_records_taken_by_an_interrupted_poll_are_not_committed_by_the_close(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str, seek_back: bool
) -> None:
    """The race Ctrl-C can hit: the fetch finished (records count as consumed) just as the signal came.
    Without seeking back (the control case), auto-commit at close would commit records nobody handled."""
    topic = create_topic(partitions=1)
    asyncio.run(produce(kafka_broker.bootstrap_servers, topic, 3))
    consumer = StaticConsumer(
        topic,
        bootstrap_servers=kafka_broker.bootstrap_servers,
        group_id=unique_group,
        group_instance_id="worker-0",
        session_timeout_ms=SESSION_MS,
        heartbeat_interval_ms=500,
        auto_offset_reset="earliest",
        enable_auto_commit=True,
    )

    async def fetch_then_interrupted() -> Any:
        records = await consumer._consumer.getmany(timeout_ms=10000)
        os.kill(os.getpid(), signal.SIGINT)  # reaches the main thread, waiting for this call
        time.sleep(0.3)  # noqa: ASYNC251 (no await on purpose: the call ends after the signal)
        return records

    with pytest.raises(KeyboardInterrupt):
        consumer._blocking(fetch_then_interrupted, unread=consumer._unread_batch if seek_back else None)
    assert [t.name for t in threading.enumerate() if t.name == "staticconsumer-sync"] == []
    committed = asyncio.run(committed_offsets(kafka_broker.bootstrap_servers, unique_group))
    assert committed.get(TopicPartition(topic, 0), 0) == (0 if seek_back else 3)

"""Membership runs on its own thread: an application that blocks its event loop keeps its place.

Before issue 16 the membership driver was a task on the application's loop, so synchronous work between
polls delayed heartbeats and got members evicted. These tests block the loop for real (time.sleep and
busy CPU) against a real broker.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import pytest

import assignors as assignor_lib
from staticconsumer.consumer import StaticConsumer
from staticconsumer.errors import AssignorError
from staticconsumer.membership import MemberView, actions, events
from staticconsumer.testing import EmbeddedKafka

from .support import FAST, RecordingListener, consume, eventually, produce

pytestmark = pytest.mark.kafka


def block_the_event_loop(seconds: float) -> None:
    """What a synchronous call does to an asyncio application: no poll, no task, nothing runs."""
    time.sleep(seconds)


def _member(topic: str, bootstrap: str, group: str, instance: str, **overrides: object) -> StaticConsumer:
    settings = {**FAST, **overrides}
    return StaticConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        group_instance_id=instance,
        listener=RecordingListener(),
        **settings,
    )


def _listener(member: StaticConsumer) -> RecordingListener:
    listener = member._partitions.listener
    assert isinstance(listener, RecordingListener)
    return listener


async def _settled(members: Sequence[StaticConsumer], partitions: int, within: float = 60) -> None:
    async def owned() -> bool:
        for member in members:
            await member.getmany(timeout_ms=50)
        generations = {m.generation for m in members}
        total = sum(len(m.assignment()) for m in members)
        return total == partitions and len(generations) == 1 and -1 not in generations

    await eventually(owned, within, f"{len(members)} members own all {partitions} partitions, one generation")


# Not both_versions: heartbeats come from the membership thread whatever coordinator answers them, and a
# session is kept alive by heartbeats alike on 3.9's coordinator and 4.x's (docs/testing.md).
async def test_a_loop_blocked_for_three_session_timeouts_keeps_its_member_id_generation_and_partitions(
    kafka_broker: EmbeddedKafka, unique_topic: str, unique_group: str
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    kafka_broker.create_topic(unique_topic, 4)
    session_ms = 6000
    blocked = _member(unique_topic, bootstrap, unique_group, "blocked", max_poll_interval_ms=60_000)
    other = _member(unique_topic, bootstrap, unique_group, "other", max_poll_interval_ms=60_000)
    async with blocked, other:
        await _settled([blocked, other], 4)
        before = (blocked.member_id, blocked.generation, blocked.assignment())
        other_before = (other.member_id, other.generation, other.assignment())
        callbacks_before = len(_listener(blocked).events)
        block_the_event_loop(3 * session_ms / 1000)
        await produce(bootstrap, unique_topic, 8)
        await consume(blocked, 1, within=20)
        assert (blocked.member_id, blocked.generation, blocked.assignment()) == before
        assert (other.member_id, other.generation, other.assignment()) == other_before, "no rebalance"
        assert _listener(blocked).events[callbacks_before:] == [], "nothing revoked, lost or assigned"


async def test_a_loop_blocked_past_max_poll_interval_loses_its_partitions_and_comes_back(
    kafka_broker: EmbeddedKafka, unique_topic: str, unique_group: str
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    kafka_broker.create_topic(unique_topic, 2)
    stuck = _member(unique_topic, bootstrap, unique_group, "stuck", max_poll_interval_ms=3000)
    async with stuck:
        await _settled([stuck], 2)
        first_member_id = stuck.member_id
        block_the_event_loop(5)  # longer than max.poll.interval.ms: the application is stuck, not busy
        listener = _listener(stuck)
        await eventually(lambda: "lost" in listener.kinds(), 20, "the stuck member's partitions are lost")
        await _settled([stuck], 2)
        assert stuck.member_id != first_member_id, "it rejoined as its own replacement"
        assert listener.kinds()[:3] == ["revoked", "assigned", "lost"], (
            "lost, never revoked (not committed); the first revoke is the eager first join's, of nothing"
        )


TWELVE_SESSION_MS = 4000
"""Short enough that the busy minute is a few session timeouts, long enough for twelve membership threads
sharing the GIL with a spinning loop on a loaded two-core machine (heartbeats every second)."""

TWELVE_SESSION_TIMEOUTS = 6
"""How many session timeouts the loop stays busy: a member whose heartbeats stalled would have been
evicted several times over."""


async def test_twelve_members_in_one_process_with_600_ms_of_cpu_per_batch_are_not_evicted(
    kafka_broker: EmbeddedKafka, unique_topic: str, unique_group: str
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    kafka_broker.create_topic(unique_topic, 24)
    members = [
        _member(unique_topic, bootstrap, unique_group, f"worker-{i}", session_timeout_ms=TWELVE_SESSION_MS)
        for i in range(12)
    ]
    await asyncio.gather(*(member.start() for member in members))
    try:
        await _settled(members, 24, within=120)
        identities = [(m.member_id, m.generation, m.assignment()) for m in members]
        seen = [len(_listener(m).events) for m in members]
        produced = asyncio.ensure_future(produce(bootstrap, unique_topic, 2400))
        deadline = time.monotonic() + TWELVE_SESSION_TIMEOUTS * TWELVE_SESSION_MS / 1000
        last_poll: dict[int, float] = {}
        longest_gap = 0.0
        rounds = 0
        while rounds < 2 or time.monotonic() < deadline:  # two rounds at least: a gap between two polls
            rounds += 1
            for i, member in enumerate(members):
                await member.getmany(timeout_ms=0, max_records=50)
                now = time.monotonic()
                longest_gap = max(longest_gap, now - last_poll.get(i, now))
                last_poll[i] = now
                busy_until = time.thread_time() + 0.6
                while time.thread_time() < busy_until:  # 600 ms of CPU, holding the event loop
                    pass
        await produced
        assert longest_gap > 7.0, "each member's loop was held for 12 x 600 ms between two of its polls"
        assert longest_gap > TWELVE_SESSION_MS / 1000, "longer than a session timeout without a poll"
        assert [(m.member_id, m.generation, m.assignment()) for m in members] == identities, "nobody evicted"
        for member, before in zip(members, seen, strict=True):
            assert _listener(member).events[before:] == [], "no callback at all once the group had formed"
    finally:
        await asyncio.gather(*(member.stop() for member in members))


class _FailingTwice(assignor_lib.Assignor):
    """Raises on its first two plans, then assigns like range: a leader must survive a broken assignor."""

    name = "failing-twice"
    calls: ClassVar[int] = 0

    def assign(
        self, members: Sequence[assignor_lib.Member], topics: Mapping[str, assignor_lib.TopicInfo]
    ) -> assignor_lib.GroupAssignment:
        type(self).calls += 1
        if type(self).calls <= 2:
            raise RuntimeError(f"planned failure {type(self).calls}")
        return assignor_lib.create("range").assign(members, topics)


class _AssignmentFailures:
    """An observer keeping the errors of the leader's failed assignments."""

    def __init__(self) -> None:
        self.errors: list[Exception] = []

    def observe(self, event: events.Event, produced: Sequence[actions.Action], machine: MemberView) -> None:
        if isinstance(event, events.AssignmentFailed):
            self.errors.append(event.error)


async def test_an_assignor_that_raises_is_a_typed_error_and_the_group_keeps_working(
    kafka_broker: EmbeddedKafka, unique_topic: str, unique_group: str
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    kafka_broker.create_topic(unique_topic, 2)
    _FailingTwice.calls = 0
    failures = _AssignmentFailures()
    member = StaticConsumer(
        unique_topic,
        bootstrap_servers=bootstrap,
        group_id=unique_group,
        group_instance_id="leader",
        observers=[failures],
        **FAST,
    )
    member._assignors = [_FailingTwice()]
    async with member:
        await produce(bootstrap, unique_topic, 4)
        records = await consume(member, 4, within=30)
        assert len(records) == 4, "the third plan was used; the application never saw the failures"
    assert _FailingTwice.calls == 3
    assert len(failures.errors) == 2
    for error in failures.errors:
        assert isinstance(error, AssignorError)
        assert error.assignor == "failing-twice"
        assert isinstance(error.__cause__, RuntimeError)
        assert "failing-twice" in str(error)


async def test_the_join_sends_on_the_probe_connection_when_the_probe_reached_the_coordinator(
    kafka_broker: EmbeddedKafka,
    create_topic: Callable[..., str],
    unique_group: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A restarting member's probe names its coordinator; when the probe's broker is that coordinator,
    the probe's connection becomes the join's, so the JoinGroup waits for no connection (TCP, ApiVersions)
    of its own (issue 26: 3-15 ms of a restart at N=12); the member joins and consumes over it."""
    from staticconsumer import _aiokafka

    kept: list[Any] = []
    opened: list[int] = []
    probe_broker = _aiokafka.probe_broker
    open_early = _aiokafka.open_early

    async def recording_probe(*args: Any, **kwargs: Any) -> Any:
        outcome = await probe_broker(*args, **kwargs)
        kept.append(getattr(outcome, "connection", None))
        return outcome

    async def recording_open_early(client: object, node_id: int, **kwargs: Any) -> None:
        opened.append(node_id)
        await open_early(client, node_id, **kwargs)

    topic = create_topic(partitions=2)
    first = _member(topic, kafka_broker.bootstrap_servers, unique_group, "kept-0")
    await first.start()  # the group and its coordinator exist: what a restart finds
    await first.stop()
    monkeypatch.setattr(_aiokafka, "probe_broker", recording_probe)
    monkeypatch.setattr(_aiokafka, "open_early", recording_open_early)
    member = _member(topic, kafka_broker.bootstrap_servers, unique_group, "kept-0")
    await member.start()
    try:
        assert len(kept) == 1, kept
        assert kept[0] is not None, "the probe kept no connection"
        assert opened == [], "the join opened a connection of its own"
        assert member._membership is not None
        client = member._membership._client
        connections = [c for conns in _aiokafka.live_connections(client).values() for c in conns]
        assert kept[0] in connections
        assert kept[0].connected()
        await produce(kafka_broker.bootstrap_servers, topic, 4)
        assert len(await consume(member, 4, within=30)) == 4
    finally:
        await member.stop()
    assert not kept[0].connected(), "the membership client closes the connection it took"


async def test_the_join_connection_opens_as_soon_as_the_probe_names_the_coordinator(
    kafka_broker: EmbeddedKafka,
    create_topic: Callable[..., str],
    unique_group: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A restarting member's probe names its coordinator, and when its connection cannot be the join's
    (here: refused), that answer opens the join's connection at once, while the start's preload and
    access check still run, not after them (issue 26: ~3-9 ms of a restart's wall); it is opened once,
    the member joins over it, and the probe's connection is closed."""
    from staticconsumer import _aiokafka, connection

    steps: list[tuple[str, int | None]] = []
    kept: list[Any] = []
    open_early = _aiokafka.open_early
    check_access = connection.check_access

    def refusing_adopt(client: object, answer: Any, node_id: int) -> bool:
        kept.append(answer.connection)
        return False

    async def recording_open_early(client: object, node_id: int, **kwargs: Any) -> None:
        steps.append(("open_early", node_id))
        await open_early(client, node_id, **kwargs)

    async def recording_check_access(*args: Any, **kwargs: Any) -> Any:
        steps.append(("check_access", None))
        return await check_access(*args, **kwargs)

    topic = create_topic(partitions=2)
    first = _member(topic, kafka_broker.bootstrap_servers, unique_group, "early-0")
    await first.start()  # the group and its coordinator exist: what a restart finds
    await first.stop()
    monkeypatch.setattr(_aiokafka, "open_early", recording_open_early)
    monkeypatch.setattr(_aiokafka, "adopt_connection", refusing_adopt)
    monkeypatch.setattr(connection, "check_access", recording_check_access)
    member = _member(topic, kafka_broker.bootstrap_servers, unique_group, "early-0")
    await member.start()
    try:
        assert [step for step, _ in steps] == ["open_early", "check_access"], steps
        assert len(kept) == 1, kept
        assert kept[0] is not None, "the probe kept no connection"
        assert not kept[0].connected(), "the probe's connection, not handed on, is closed"
        await _settled([member], 2)
    finally:
        await member.stop()

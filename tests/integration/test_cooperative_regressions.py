"""The cooperative defects the Java client had, reproduced on real brokers where a broker can show them.

* KAFKA-14016 / KAFKA-14639: a SyncGroup answered REBALANCE_IN_PROGRESS (a member joined while the leader
  was still computing) must neither reset the generation (which made Java give everything up) nor let a
  partition be revoked from one member and given to another in the same round: members keep fetching
  what they own, revoke only what the final plan moves, and no partition ever has two holders.
* KAFKA-12984: a member never claims partitions of a generation it lost. A static member past
  max.poll.interval drops its generation and reports its partitions lost; its next JoinGroup claims
  nothing, at generation -1, and it gets its partitions back as a static replacement.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar

import pytest

import assignors
from assignors import CooperativeStickyAssignor, GroupAssignment, Member, TopicInfo
from staticconsumer.consumer import StaticConsumer
from staticconsumer.errors import ErrorCode
from staticconsumer.membership import actions, events
from staticconsumer.protocol import JoinGroupRequest, Subscription
from staticconsumer.testing import EmbeddedKafka
from staticconsumer.testing.ledger import Ledger

from .cooperative_support import Member as Recorded
from .cooperative_support import OwnershipSampler, until_settled
from .support import FAST, RecordingListener, RequestRecorder, eventually, produce, until_assigned

pytestmark = [pytest.mark.kafka, pytest.mark.both_versions]


class SlowCooperativeSticky(CooperativeStickyAssignor):
    """Cooperative-sticky that, when armed, takes ``delay`` seconds (once): a leader still computing."""

    name = "test-slow-cooperative-sticky"
    delay: ClassVar[float] = 0.0
    computing: ClassVar[threading.Event] = threading.Event()

    def assign(self, members: Sequence[Member], topics: Mapping[str, TopicInfo]) -> GroupAssignment:
        delay, SlowCooperativeSticky.delay = SlowCooperativeSticky.delay, 0.0
        if delay:
            SlowCooperativeSticky.computing.set()
            time.sleep(delay)  # blocks this leader's membership thread, as a heavy assignor would
        return super().assign(members, topics)


@pytest.fixture
def slow_assignor() -> Iterator[str]:
    assignors.register(SlowCooperativeSticky)
    SlowCooperativeSticky.computing.clear()
    try:
        yield SlowCooperativeSticky.name
    finally:
        SlowCooperativeSticky.delay = 0.0
        assignors._REGISTRY.pop(SlowCooperativeSticky.name, None)


class SyncErrors:
    """A membership observer that keeps every SyncGroup error code this member was answered."""

    def __init__(self) -> None:
        self.codes: list[int] = []

    def observe(self, event: events.Event, produced: Sequence[actions.Action], machine: Any) -> None:
        if isinstance(event, events.SyncGroupResponse) and event.error_code != ErrorCode.NONE:
            self.codes.append(event.error_code)


async def test_kafka_14016_and_14639_sync_rebalance_in_progress_revokes_only_what_the_plan_moves(
    kafka_broker: EmbeddedKafka, unique_topic: str, unique_group: str, slow_assignor: str
) -> None:
    kafka_broker.create_topic(unique_topic, 8)
    bootstrap = kafka_broker.bootstrap_servers
    expected = {(unique_topic, p) for p in range(8)}
    ledger = Ledger()
    observers = {name: SyncErrors() for name in ("a", "b", "c", "d")}

    def member(name: str) -> Recorded:
        return Recorded(
            bootstrap,
            unique_group,
            unique_topic,
            name,
            ledger,
            assignors=[slow_assignor],
            observers=[observers[name]],
        )

    members = [member("a"), member("b")]
    sampler = OwnershipSampler({})
    try:
        for m in members:
            await m.start()  # "a" joins first and leads
        before = await until_settled(members, expected, within=60)
        assert members[0].consumer.is_leader
        sampler.members = {m.instance: m for m in members}
        sampler.start()

        SlowCooperativeSticky.delay = 3.0
        started_at = time.monotonic()
        c, d = member("c"), member("d")
        members += [c, d]
        sampler.members = {m.instance: m for m in members}  # sampled from the start (nothing owned yet)
        # start() returns once the member's first assignment is in (as aiokafka's), so both start as
        # tasks: "d" must join while the rebalance "c" caused is still being computed.
        c_started = asyncio.ensure_future(c.start())
        await asyncio.to_thread(SlowCooperativeSticky.computing.wait, 60)
        await asyncio.sleep(0.5)  # "b" and "c" have sent their SyncGroup and wait for the leader's
        d_started = asyncio.ensure_future(d.start())  # a join while the group completes its rebalance
        await asyncio.wait_for(asyncio.gather(c_started, d_started), 90)
        after = await until_settled(members, expected, within=90)
        await sampler.stop()

        answered = [
            name for name in ("a", "b", "c") if ErrorCode.REBALANCE_IN_PROGRESS in observers[name].codes
        ]
        assert answered, "the scenario needs a SyncGroup answered REBALANCE_IN_PROGRESS"
        for m in members[:2]:
            assert not m.listener.since(started_at, "lost"), f"{m.instance} lost nothing (KAFKA-14016)"
            revoked = m.listener.since(started_at, "revoked")
            assert revoked == before[m.instance] - after[m.instance], (
                f"{m.instance} revoked exactly what the final plan moved"
            )
            kept = before[m.instance] & after[m.instance]
            assert not m.stopped(kept, started_at, time.monotonic()), (
                f"{m.instance} kept fetching what it kept"
            )
        double = sampler.double_owned()
        assert not double, f"revoked and reassigned in one round (KAFKA-14639): {double[:5]}"
    finally:
        await sampler.stop()
        for m in members:
            await m.stop()


async def test_kafka_12984_a_member_that_lost_its_generation_claims_nothing_when_it_rejoins(
    kafka_broker: EmbeddedKafka, unique_topic: str, unique_group: str
) -> None:
    kafka_broker.create_topic(unique_topic, 4)
    bootstrap = kafka_broker.bootstrap_servers
    options = {**FAST, "assignors": ["cooperative-sticky"]}
    listener = RecordingListener()
    wire = RequestRecorder()
    stuck = StaticConsumer(
        unique_topic,
        bootstrap_servers=bootstrap,
        group_id=unique_group,
        group_instance_id="stuck",
        listener=listener,
        request_hook=wire,
        max_poll_interval_ms=3000,
        **options,
    )
    other = StaticConsumer(
        unique_topic, bootstrap_servers=bootstrap, group_id=unique_group, group_instance_id="other", **options
    )
    async with stuck, other:

        async def both_own() -> bool:
            await stuck.getmany(timeout_ms=100)
            await other.getmany(timeout_ms=100)
            return (
                bool(stuck.assignment()) and bool(other.assignment()) and stuck.generation == other.generation
            )

        await eventually(both_own, 60, "both members own partitions")
        owned, generation = stuck.assignment(), stuck.generation
        await produce(bootstrap, unique_topic, 40)
        joins_before = len(wire.of("JoinGroupRequest"))

        async def other_polls(seconds: float) -> None:
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                await other.getmany(timeout_ms=100)

        await other_polls(5.0)  # "stuck" does not poll for longer than max.poll.interval.ms
        assert [kind for kind, _, _ in listener.events][-1] == "lost", "lost, never revoked"
        assert listener.events[-1][1] == owned

        await until_assigned(stuck)
        rejoin = wire.of("JoinGroupRequest")[joins_before:][0].message
        assert isinstance(rejoin, JoinGroupRequest)
        assert rejoin.member_id == "", "it dropped the member id it lost"
        subscription = Subscription.decode(rejoin.protocols[0].metadata)
        assert subscription.owned_partitions == [], "no claim on partitions of a lost generation"
        assert subscription.generation_id == -1
        assert stuck.assignment() == owned, "a static replacement gets its partitions back"
        assert stuck.generation == generation, "in place: no rebalance"

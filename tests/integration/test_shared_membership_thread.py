"""Every consumer of a process runs its membership on one shared membership thread (issue 27: idle CPU).

What sharing must not cost: one consumer's stop() or fatal failure ends its own run only, while the
other keeps heartbeating (same member id, same generation) and consuming; the thread ends after the last.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from staticconsumer.connection.monitor import _NoiseFilter
from staticconsumer.consumer import StaticConsumer
from staticconsumer.errors import FencedInstanceIdError
from staticconsumer.runtime import loop_thread
from staticconsumer.testing import EmbeddedKafka

from .support import FAST, consume, eventually, poll_until_it_raises, produce, take_over_instance_id

pytestmark = pytest.mark.kafka


class _Requests:
    """The group requests a consumer sent: when, and on which thread."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, float, int]] = []

    def __call__(self, api: str, version: int, message: Any) -> None:
        self.sent.append((api, time.monotonic(), threading.get_ident()))

    def heartbeats_since(self, since: float) -> int:
        return sum(1 for api, at, _ in self.sent if api == "HeartbeatRequest" and at >= since)

    def threads(self) -> set[int]:
        return {thread for _, _, thread in self.sent}


def _member(bootstrap: str, topic: str, group: str, instance: str, requests: _Requests) -> StaticConsumer:
    return StaticConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        group_instance_id=instance,
        request_hook=requests,
        **FAST,
    )


async def _thread_ended() -> None:
    await eventually(lambda: not loop_thread.thread_alive(), 10, "the shared membership thread ended")


async def _keeps_its_place(member: StaticConsumer, requests: _Requests, bootstrap: str, topic: str) -> None:
    """Over four heartbeat intervals: heartbeats go on, no rebalance, new records arrive."""
    identity = (member.member_id, member.generation, member.assignment())
    since = time.monotonic()
    await produce(bootstrap, topic, 3, prefix="after")
    await consume(member, 3, within=20)
    while time.monotonic() - since < 4.0:
        await member.getmany(timeout_ms=200)
    assert requests.heartbeats_since(since) >= 3
    assert (member.member_id, member.generation, member.assignment()) == identity


async def _two_topics(kafka_broker: EmbeddedKafka, topic: str, records: tuple[int, int]) -> str:
    """``topic`` and another of one partition each, with ``records`` produced to them; the other's name."""
    other = f"{topic}-b"
    for name, count in zip((topic, other), records, strict=True):
        kafka_broker.create_topic(name, 1)
        if count:
            await produce(kafka_broker.bootstrap_servers, name, count)
    return other


async def test_two_consumers_share_the_membership_thread_and_one_stop_leaves_the_other_heartbeating(
    kafka_broker: EmbeddedKafka, unique_topic: str, unique_group: str
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    other_topic = await _two_topics(kafka_broker, unique_topic, (2, 2))
    first_requests, second_requests = _Requests(), _Requests()
    first = _member(bootstrap, unique_topic, unique_group, "first", first_requests)
    second = _member(bootstrap, other_topic, f"{unique_group}-b", "second", second_requests)
    await asyncio.gather(first.start(), second.start())
    try:
        await asyncio.gather(consume(first, 2), consume(second, 2))
        shared = first_requests.threads() | second_requests.threads()
        assert len(shared) == 1, "both consumers' group requests went out from one thread"
        assert shared != {threading.get_ident()}, "...which is not the application's"
        assert loop_thread.thread_alive()

        await first.stop()
        assert loop_thread.thread_alive(), "the other consumer's run keeps the thread"
        await _keeps_its_place(second, second_requests, bootstrap, other_topic)
    finally:
        await asyncio.gather(first.stop(), second.stop())
    await _thread_ended()


async def test_one_consumers_fatal_failure_ends_its_own_run_only(
    kafka_broker: EmbeddedKafka, unique_topic: str, unique_group: str
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    other_topic = await _two_topics(kafka_broker, unique_topic, (0, 2))
    fenced_requests, second_requests = _Requests(), _Requests()
    fenced = _member(bootstrap, unique_topic, unique_group, "fenced", fenced_requests)
    second = _member(bootstrap, other_topic, f"{unique_group}-b", "second", second_requests)
    await asyncio.gather(fenced.start(), second.start())
    # Another process takes the first one's instance id (a JoinGroup with it and no member id): the
    # broker replaces the member, whose next heartbeat is answered FENCED_INSTANCE_ID, a fatal error.
    takeover = take_over_instance_id(bootstrap, unique_group, "fenced", unique_topic)
    try:
        await consume(second, 2)
        with pytest.raises(FencedInstanceIdError):
            await poll_until_it_raises(fenced)
        assert loop_thread.thread_alive()
        await _keeps_its_place(second, second_requests, bootstrap, other_topic)
    finally:
        takeover.cancel()
        await asyncio.gather(takeover, return_exceptions=True)
        await asyncio.gather(fenced.stop(), second.stop(), return_exceptions=True)
    await _thread_ended()


async def test_a_consumer_whose_application_loop_closed_without_stop_is_ended_and_the_other_runs_on(
    kafka_broker: EmbeddedKafka, unique_topic: str, unique_group: str
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    other_topic = await _two_topics(kafka_broker, unique_topic, (1, 2))
    second_requests = _Requests()
    second = _member(bootstrap, other_topic, f"{unique_group}-b", "second", second_requests)
    orphan = _member(bootstrap, unique_topic, unique_group, "orphan", _Requests())

    async def exits_without_stop() -> None:
        await orphan.start()
        await consume(orphan, 1)

    await second.start()
    try:
        # Another thread's application: asyncio.run closes its loop, and nothing calls stop().
        await asyncio.to_thread(asyncio.run, exits_without_stop())
        membership = orphan._membership
        assert membership is not None
        await eventually(membership._done.done, 15, "the orphan's membership run ended by itself")
        monitor = orphan._monitor
        assert monitor is not None
        assert monitor not in _NoiseFilter._monitors, "no stop() will come: its log filter must go with it"
        assert loop_thread.thread_alive()
        await _keeps_its_place(second, second_requests, bootstrap, other_topic)
    finally:
        await second.stop()
    await _thread_ended()

"""An idle member's application loop fires no timer of the fetcher during its long polls (issue 27: idle
CPU). aiokafka's fetch routine looks again every ``consumer_timeout_ms`` (200 ms) when no event came; at
a 500 ms long poll that was 4 of its 6 wake-ups a second for nothing. StaticConsumer gives its fetcher
twice the long poll instead, unless the application passes ``consumer_timeout_ms``; every event that can
make a fetch due still wakes it at once, so records arrive as soon as the broker answers."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest

from staticconsumer.consumer import StaticConsumer
from staticconsumer.testing import EmbeddedKafka

from .support import FAST, consume, produce, until_assigned

pytestmark = pytest.mark.kafka

IDLE_S = 3.0


class _Timers:
    """Timers that fire on one event loop (``loop.call_later``/``call_at`` callbacks, timeouts included)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, loop: asyncio.AbstractEventLoop) -> None:
        self.fired = 0
        run = asyncio.TimerHandle._run

        def counted(handle: asyncio.TimerHandle) -> None:
            if handle._loop is loop:  # type: ignore[attr-defined]
                self.fired += 1
            run(handle)

        monkeypatch.setattr(asyncio.TimerHandle, "_run", counted)


async def _timers_per_second_idle(consumer: StaticConsumer, monkeypatch: pytest.MonkeyPatch) -> float:
    """Timers fired per second on the application's loop while ``consumer`` polls an empty partition
    as an idle application does (``getmany(timeout_ms=1000)``: itself one timer a second)."""
    timers = _Timers(monkeypatch, asyncio.get_running_loop())
    began = time.monotonic()
    while time.monotonic() - began < IDLE_S:
        assert await consumer.getmany(timeout_ms=1000) == {}
    return timers.fired / (time.monotonic() - began)


async def _settled(consumer: StaticConsumer) -> None:
    """Assigned, its position read, its first fetches sent."""
    await until_assigned(consumer)
    for _ in range(2):
        assert await consumer.getmany(timeout_ms=500) == {}


def _member(kafka: EmbeddedKafka, topic: str, group: str, **options: Any) -> StaticConsumer:
    return StaticConsumer(
        topic,
        bootstrap_servers=kafka.bootstrap_servers,
        group_id=group,
        group_instance_id="idle-0",
        **FAST,
        **options,
    )


@pytest.mark.parametrize(
    ("options", "fewest", "most"),
    [
        # getmany's own timeout (1/s) and the connection monitor's tick (every few seconds)
        ({}, 0.0, 1.7),
        # the application's consumer_timeout_ms wins: aiokafka's 200 ms look-again adds 4 a second
        ({"consumer_timeout_ms": 200}, 4.0, 6.0),
    ],
)
async def test_an_idle_member_fires_no_fetcher_timer_during_its_long_polls_and_records_still_come_at_once(
    kafka_broker: EmbeddedKafka,
    create_topic: Callable[..., str],
    unique_group: str,
    monkeypatch: pytest.MonkeyPatch,
    options: dict[str, Any],
    fewest: float,
    most: float,
) -> None:
    topic = create_topic(partitions=1)
    consumer = _member(kafka_broker, topic, unique_group, **options)
    await consumer.start()
    try:
        await _settled(consumer)
        fired = await _timers_per_second_idle(consumer, monkeypatch)
        assert fewest <= fired <= most, f"{fired:.2f} timers a second on the idle member's loop"
        await produce(kafka_broker.bootstrap_servers, topic, 1)
        produced = time.monotonic()
        assert len(await consume(consumer, 1)) == 1
        assert time.monotonic() - produced < 0.5, "the long poll answers as soon as the record is there"
    finally:
        await consumer.stop()

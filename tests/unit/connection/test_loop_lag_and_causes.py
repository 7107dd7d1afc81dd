"""Faults that repeat at every retry are one WARNING per cause per minute with a count, and a request that
timed out because the application blocked its own loop is named as that, not as an unreachable broker.
Clocks are inputs; aiokafka's records are logged exactly as aiokafka 0.14 words them."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiokafka.errors import RequestTimedOutError

from staticconsumer.connection import CauseLog, ConnectionMonitor, ConnectionState


@dataclass
class Broker:
    nodeId: int  # aiokafka BrokerMetadata field name
    host: str
    port: int


@dataclass
class Cluster:
    known: list[Broker]

    def brokers(self) -> list[Broker]:
        return self.known


@dataclass
class Client:
    """Only what ``staticconsumer._aiokafka`` reads of an AIOKafkaClient: brokers and connections."""

    cluster: Cluster
    _conns: dict[tuple[int, Any], Any] = field(default_factory=dict)


LOG = "staticconsumer.test.causes"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _records(caplog: pytest.LogCaptureFixture, name: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == name]


def test_one_record_per_cause_per_minute_with_the_count(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    causes = CauseLog(logging.getLogger(LOG), clock=clock)
    for _ in range(23):  # the run: 23 retries, each garbled alike
        causes.warning(("b:9092", "DecodeError"), "broker %s sent garbage (%s)", "b:9092", "DecodeError")
        clock.now += 1.0
    (first,) = _records(caplog, LOG)
    assert first.startswith("broker b:9092 sent garbage (DecodeError)")
    assert "logged at most once every 60 s" in first
    assert causes.pending(("b:9092", "DecodeError")) == 22
    clock.now = 1060.0
    assert causes.warning(("b:9092", "DecodeError"), "broker %s sent garbage (%s)", "b:9092", "DecodeError")
    second = _records(caplog, LOG)[-1]
    assert second == "broker b:9092 sent garbage (DecodeError) (23 times in the last 60 s)"
    assert causes.pending(("b:9092", "DecodeError")) == 0


def test_another_broker_or_cause_is_its_own_first_record(caplog: pytest.LogCaptureFixture) -> None:
    causes = CauseLog(logging.getLogger(LOG), clock=Clock())
    assert causes.warning(("a:1", "DecodeError"), "a")
    assert causes.warning(("b:1", "DecodeError"), "b")
    assert causes.warning(("a:1", "oversized"), "c")
    assert not causes.warning(("a:1", "DecodeError"), "a")
    assert len(_records(caplog, LOG)) == 3


@pytest.fixture
def monitor_and_clock() -> Iterator[tuple[ConnectionMonitor, Clock]]:
    clock = Clock()
    monitor = ConnectionMonitor("group 'g'", clock=clock)
    monitor.watch(Client(Cluster([Broker(1, "10.0.0.1", 9092)])))
    monitor.install()
    yield monitor, clock
    monitor.close()


def _fetch_timed_out() -> None:
    logging.getLogger("aiokafka.consumer.fetcher").error(
        "Failed fetch messages from %s: %s", 1, RequestTimedOutError()
    )


async def test_a_timeout_on_a_blocked_loop_names_the_loop_not_the_broker(
    monitor_and_clock: tuple[ConnectionMonitor, Clock], caplog: pytest.LogCaptureFixture
) -> None:
    monitor, clock = monitor_and_clock
    loop = asyncio.get_running_loop()
    monitor._tick(loop, 0.5)
    clock.now += 31.0  # the application held the loop past request.timeout.ms
    for _ in range(5):
        _fetch_timed_out()  # the timed-out fetch reports before the monitor's next tick
    monitor._tick(loop, 0.5)
    _fetch_timed_out()  # ... or after it
    assert monitor.state is ConnectionState.CONNECTED
    assert not monitor.outages
    (said,) = _records(caplog, "staticconsumer.connection.monitor")
    assert "timed out because the application blocked its event loop for 30.5 s" in said
    assert "Kafka broker 10.0.0.1:9092 (node 1)" in said
    assert "unreachable:" not in said
    assert not [r for r in caplog.records if r.name.startswith("aiokafka")], "folded, not passed on"


async def test_a_timeout_on_a_loop_that_ran_is_an_outage(
    monitor_and_clock: tuple[ConnectionMonitor, Clock], caplog: pytest.LogCaptureFixture
) -> None:
    monitor, clock = monitor_and_clock
    loop = asyncio.get_running_loop()
    for _ in range(10):
        monitor._tick(loop, 0.5)
        clock.now += 0.5
    clock.now += 0.4  # a lag under the threshold: a busy loop, not a blocked one
    monitor._tick(loop, 0.5)
    for _ in range(10):  # ticking on time since
        clock.now += 0.5
        monitor._tick(loop, 0.5)
    _fetch_timed_out()
    assert monitor.state is ConnectionState.DISCONNECTED
    (said,) = _records(caplog, "staticconsumer.connection.monitor")
    assert "Kafka broker 10.0.0.1:9092 (node 1) is unreachable" in said

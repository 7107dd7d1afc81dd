"""A running StaticConsumer whose broker goes away and comes back: one WARNING when it becomes
unreachable instead of aiokafka's ERROR flood, ``connection_state`` says so, getmany goes on returning
nothing without raising, and one WARNING when the broker is back. Against a real broker stopped and
started again on the same port."""

from __future__ import annotations

import logging
import time

import pytest

from staticconsumer.connection import ConnectionState
from staticconsumer.consumer import StaticConsumer
from staticconsumer.testing import EmbeddedKafka

from .support import FAST, consume, eventually, produce

pytestmark = pytest.mark.kafka

MONITOR = "staticconsumer.connection.monitor"


def _monitor_says(records: list[logging.LogRecord], text: str) -> list[str]:
    return [r.getMessage() for r in records if r.name == MONITOR and text in r.getMessage()]


async def test_a_broker_that_goes_away_is_one_warning_and_its_return_one_more(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    kafka = EmbeddedKafka().start()
    restarted: EmbeddedKafka | None = None
    try:
        kafka.create_topic("orders", 2)
        await produce(kafka.bootstrap_servers, "orders", 4)
        consumer = StaticConsumer(
            "orders",
            bootstrap_servers=kafka.bootstrap_servers,
            group_id="orders",
            group_instance_id="orders-0",
            request_timeout_ms=3000,
            **FAST,
        )
        await consumer.start()
        try:
            assert len(await consume(consumer, 4)) == 4
            assert consumer.connection_state is ConnectionState.CONNECTED
            port = kafka.port
            caplog.clear()
            kafka.stop()
            deadline = time.monotonic() + 8
            while time.monotonic() < deadline:
                assert await consumer.getmany(timeout_ms=200) == {}

            assert consumer.connection_state is ConnectionState.DISCONNECTED
            unreachable = _monitor_says(caplog.records, "is unreachable")
            assert len(unreachable) == 1, unreachable
            assert f"group 'orders': Kafka broker 127.0.0.1:{port} (node 1) is unreachable" in unreachable[0]
            floods = [
                r for r in caplog.records if r.name.startswith("aiokafka") and r.levelno >= logging.ERROR
            ]
            assert not floods, [r.getMessage() for r in floods[:5]]
            loud = [r for r in caplog.records if r.levelno >= logging.WARNING and r.name != MONITOR]
            assert not loud, [f"{r.name}: {r.getMessage()}" for r in loud[:5]]

            restarted = EmbeddedKafka(port=port).start()  # a new cluster on the same address
            restarted.create_topic("orders", 2)
            await produce(restarted.bootstrap_servers, "orders", 2, start=100)
            await eventually(
                lambda: consumer.connection_state is ConnectionState.CONNECTED,
                60,
                "the broker's return noticed",
            )
            # Consuming again: both new records, nothing else. The swapped-in cluster does not know the
            # member, so it may rejoin after it already read a record (the position could not be
            # committed anywhere): that record comes again, as at-least-once allows.
            keys: list[bytes] = []
            deadline = time.monotonic() + 90
            while {b"k100", b"k101"} - set(keys):
                assert time.monotonic() < deadline, f"consuming again: got {keys} within 90 s"
                for rows in (await consumer.getmany(timeout_ms=500)).values():
                    keys.extend(record.key for record in rows)
            assert set(keys) == {b"k100", b"k101"}, keys
            back = _monitor_says(caplog.records, "is reachable again")
            assert len(back) == 1, back
            assert "connection state connected" in back[0]
            assert len(_monitor_says(caplog.records, "is unreachable")) == 1
        finally:
            await consumer.stop()
    finally:
        kafka.stop()
        if restarted is not None:
            restarted.stop()

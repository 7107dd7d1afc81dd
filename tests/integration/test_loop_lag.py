"""An application that blocks its own event loop longer than request.timeout.ms makes the fetch in flight
time out although the broker answered in time: that is named as the loop's lag, once, not as "Kafka broker
... is unreachable" (issue 27). Against a real broker."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import pytest

from staticconsumer.connection import ConnectionState
from staticconsumer.consumer import StaticConsumer
from staticconsumer.testing import EmbeddedKafka

from .support import FAST, consume, produce

pytestmark = pytest.mark.kafka

MONITOR = "staticconsumer.connection.monitor"


async def test_a_blocked_application_loop_is_named_not_the_broker(
    kafka_broker: EmbeddedKafka,
    create_topic: Callable[..., str],
    unique_group: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    topic = create_topic(partitions=1)
    await produce(kafka_broker.bootstrap_servers, topic, 5)
    consumer = StaticConsumer(
        topic,
        bootstrap_servers=kafka_broker.bootstrap_servers,
        group_id=unique_group,
        group_instance_id="lag-0",
        request_timeout_ms=2000,
        fetch_max_wait_ms=1000,  # a fetch is always waiting at the broker, well within the timeout
        **FAST,
    )
    await consumer.start()
    try:
        assert len(await consume(consumer, 5)) == 5
        caplog.clear()
        for _ in range(3):
            await consumer.getmany(timeout_ms=300)  # a fetch in flight now
            time.sleep(3.5)  # noqa: ASYNC251 - the application blocks its loop past request.timeout.ms
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            await consumer.getmany(timeout_ms=200)
        await produce(kafka_broker.bootstrap_servers, topic, 2, start=100)
        assert len(await consume(consumer, 2)) == 2, "fetching goes on"
        assert consumer.connection_state is ConnectionState.CONNECTED
    finally:
        await consumer.stop()
    ours = [r for r in caplog.records if r.name == MONITOR and r.levelno >= logging.WARNING]
    assert not [r for r in ours if "is unreachable" in r.getMessage()], [r.getMessage() for r in ours]
    lag = [r.getMessage() for r in ours if "blocked its event loop" in r.getMessage()]
    assert len(lag) == 1, f"one record per cause per minute: {lag}"
    assert f"Kafka broker 127.0.0.1:{kafka_broker.port} (node 1)" in lag[0]
    assert "the loop's lag" in lag[0]

"""A broker that goes away under a running fetcher: aiokafka's ERROR flood (about 40 lines a second)
becomes one WARNING, the state says DISCONNECTED, and the broker coming back is one more WARNING; the
subscribed topic missing from the new cluster's metadata (aiokafka: ~100 ERROR lines a second) is one
WARNING, and its return one more. Against a real broker stopped and started again on the same port."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from staticconsumer import _aiokafka
from staticconsumer.connection import ConnectionMonitor, ConnectionState, bootstrap
from staticconsumer.settings import Settings
from staticconsumer.testing import EmbeddedKafka

pytestmark = pytest.mark.kafka

FLOOD = ("Unable connect to node", "Unable to update metadata", "Failed fetch messages")


def _flood(records: list[logging.LogRecord]) -> list[logging.LogRecord]:
    return [r for r in records if r.name.startswith("aiokafka") and r.getMessage().startswith(FLOOD)]


async def _poll(fetcher: AIOKafkaConsumer, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        await fetcher.getmany(timeout_ms=100)


async def test_an_outage_is_one_warning_and_the_recovery_one_more(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    kafka = EmbeddedKafka().start()
    restarted: EmbeddedKafka | None = None
    states: list[ConnectionState] = []
    monitor = ConnectionMonitor("group 'orders'", on_change=states.append)
    try:
        kafka.create_topic("orders", 2)
        settings = Settings.from_env({}, bootstrap_servers=kafka.bootstrap_servers, group_id="orders")
        client = _aiokafka.new_client(**settings.aiokafka_client_kwargs())
        await bootstrap(client, settings)
        fetcher = AIOKafkaConsumer(
            bootstrap_servers=kafka.bootstrap_servers, group_id=None, request_timeout_ms=3000
        )
        await fetcher.start()
        fetcher.assign([TopicPartition("orders", 0), TopicPartition("orders", 1)])
        await fetcher.getmany(timeout_ms=500)
        monitor.watch(client)
        monitor.watch(_aiokafka.fetcher_client(fetcher))
        monitor.watch_topics({"orders"})
        monitor.install()
        watching = asyncio.create_task(monitor.run(_aiokafka.fetcher_client(fetcher)))
        try:
            port = kafka.port
            caplog.clear()
            kafka.stop()
            await _poll(fetcher, 5)

            assert monitor.state is ConnectionState.DISCONNECTED
            (outage,) = monitor.outages.values()
            assert outage.address == f"127.0.0.1:{port}"
            assert outage.suppressed >= 20, "the flood happened and was folded"
            assert not _flood(caplog.records), "aiokafka's repeats must not reach the handlers"
            warnings = [r for r in caplog.records if r.name == "staticconsumer.connection.monitor"]
            assert len(warnings) == 1
            assert warnings[0].levelno == logging.WARNING
            assert f"Kafka broker 127.0.0.1:{port} (node 1) is unreachable" in warnings[0].getMessage()
            assert "connection state disconnected" in warnings[0].getMessage()

            caplog.clear()
            restarted = EmbeddedKafka(port=port).start()  # a new cluster: the topic is gone
            deadline = time.monotonic() + 60
            while monitor.state is not ConnectionState.CONNECTED or not monitor.lost_topics:
                assert time.monotonic() < deadline, "the recovery and the lost topic were not noticed"
                await _poll(fetcher, 0.5)
            await _poll(fetcher, 1)
            restarted.create_topic("orders", 2)
            while monitor.lost_topics:
                assert time.monotonic() < deadline, "the topic's return was not noticed"
                await _poll(fetcher, 0.5)

            ours = [r.getMessage() for r in caplog.records if r.name == "staticconsumer.connection.monitor"]
            assert len(ours) == 3, ours
            recovered = next(m for m in ours if "reachable again" in m)
            assert f"Kafka broker 127.0.0.1:{port} (node 1) is reachable again after" in recovered
            assert "connection state connected" in recovered
            assert sum("topic 'orders' is missing from the cluster metadata" in m for m in ours) == 1
            assert sum("topic 'orders' is back in the cluster metadata" in m for m in ours) == 1
            assert not [
                r for r in caplog.records if r.getMessage() == "Topic orders not found in cluster metadata"
            ]
            assert states == [ConnectionState.DISCONNECTED, ConnectionState.CONNECTED]
            assert not monitor.outages
        finally:
            watching.cancel()
            with pytest.raises(asyncio.CancelledError):
                await watching
            monitor.close()
            await fetcher.stop()
            await client.close()
        caplog.clear()
        logging.getLogger("aiokafka").error("Unable connect to node with id %s: %s", 1, "after close")
        assert _flood(caplog.records), "once closed, the monitor folds nothing"
    finally:
        monitor.close()
        kafka.stop()
        if restarted is not None:
            restarted.stop()

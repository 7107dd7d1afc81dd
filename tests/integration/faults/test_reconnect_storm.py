"""Issue 27 from outside, against the suite's 3-node cluster: a consumer cut off from every broker makes
no reconnect storm (its connection attempts, counted at the proxies, stay under 2 a second per broker
after the first 5 s), resumes within 2 s of the brokers' return and loses nothing; a broker that answers
garbage is one WARNING per cause per minute naming it, never a traceback per retry.

The outage is modelled by the proxies refusing every connection of the consumer (what a stopped broker
looks like to it), so the brokers stay up for the producer on their internal listeners, and for the
group: the member's session outlives the outage, as a static member's does across a restart.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import Any

import pytest

from staticconsumer.consumer import StaticConsumer
from staticconsumer.testing.cluster import EmbeddedKafkaCluster
from staticconsumer.testing.proxy import ResponseFrame

from ..support import consume, produce

pytestmark = [pytest.mark.kafka, pytest.mark.faults]

OUTAGE_S = 10.0
SETTLE_S = 5.0
"""The target counts attempts after the first 5 s: the backoff reaches its ceiling within ~1.5 s."""


def _names(prefix: str) -> tuple[str, str]:
    suffix = uuid.uuid4().hex[:6]
    return f"{prefix}-{suffix}", f"{prefix}-{suffix}"


async def _poll(consumer: StaticConsumer, seconds: float, keys: list[bytes]) -> None:
    """The application keeps calling getmany, as it would through an outage."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for rows in (await consumer.getmany(timeout_ms=100)).values():
            keys.extend(record.key for record in rows)


async def test_an_outage_is_no_reconnect_storm_and_the_consumer_resumes_at_once(
    cluster: EmbeddedKafkaCluster, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    topic, group = _names("storm")
    await asyncio.to_thread(cluster.create_topic, topic, 3)
    await produce(cluster.internal_bootstrap_servers, topic, 30)
    consumer = StaticConsumer(
        topic,
        bootstrap_servers=cluster.bootstrap_servers,
        group_id=group,
        group_instance_id="storm-0",
        session_timeout_ms=45_000,  # outlives the outage: the member keeps its partitions
        heartbeat_interval_ms=1000,
        request_timeout_ms=5000,
        auto_offset_reset="earliest",
    )
    await consumer.start()
    proxies = cluster.proxies
    try:
        keys = [record.key for record in await consume(consumer, 30)]
        for proxy in proxies:
            proxy.reset()  # every connection of the consumer refused, as by a stopped broker
        cut = time.monotonic()
        await _poll(consumer, SETTLE_S, keys)
        counted_from = [len(proxy.closed_connections) for proxy in proxies]
        settled = time.monotonic()
        await produce(cluster.internal_bootstrap_servers, topic, 20, prefix="late")  # written meanwhile
        await _poll(consumer, OUTAGE_S - (time.monotonic() - cut), keys)
        attempts = [len(proxy.closed_connections) - n for proxy, n in zip(proxies, counted_from, strict=True)]
        rates = [count / (time.monotonic() - settled) for count in attempts]
        print(f"attempts per broker after {SETTLE_S} s: {attempts}, per second {rates}")
        assert max(rates) <= 2.0, f"connection attempts per second per broker after {SETTLE_S} s: {rates}"
        assert sum(attempts) > 0, "the consumer kept trying (else the count proves nothing)"
        assert not [k for k in keys if k.startswith(b"late")], "nothing could be fetched through the outage"

        for proxy in proxies:
            proxy.heal()
        returned = time.monotonic()
        while not [k for k in keys if k.startswith(b"late")]:
            assert time.monotonic() - returned < 10, "the consumer did not resume within 10 s"
            await _poll(consumer, 0.05, keys)
        resumed_after = time.monotonic() - returned
        print(f"first record {resumed_after:.2f} s after the return")
        assert resumed_after <= 2.0, f"first record {resumed_after:.2f} s after the brokers' return"
        deadline = time.monotonic() + 30
        wanted = {f"k{i}".encode() for i in range(30)} | {f"late{i}".encode() for i in range(20)}
        while wanted - set(keys):
            assert time.monotonic() < deadline, f"lost: {sorted(wanted - set(keys))}"
            await _poll(consumer, 0.2, keys)
    finally:
        for proxy in proxies:
            proxy.heal()
        await consumer.stop()

    monitor = [r for r in caplog.records if r.name == "staticconsumer.connection.monitor"]
    started = [r for r in monitor if "is unreachable" in r.getMessage()]
    ended = [r for r in monitor if "is reachable again" in r.getMessage()]
    assert len(started) <= 3, "one WARNING per broker at most as the outage starts"
    assert all(r.levelno == logging.WARNING for r in started)
    assert ended, "the outage's end is reported"
    assert all(r.levelno == logging.INFO and "failed connection attempts" in r.getMessage() for r in ended)
    assert not [r for r in caplog.records if r.exc_info], "no traceback"
    retries = [
        r
        for r in caplog.records
        if r.levelno >= logging.INFO and "request" in r.getMessage() and "failed (" in r.getMessage()
    ]
    assert not retries, (
        f"no line per failed request at INFO or above: {[r.getMessage() for r in retries][:3]}"
    )


def _garble(client_id: str, api_key: int) -> Any:
    """A hook answering ``client_id``'s ``api_key`` requests with the right correlation id and garbage."""

    def hook(frame: ResponseFrame) -> bytes | None:
        if frame.client_id != client_id or frame.api_key != api_key:
            return None
        return frame.payload[:4] + b"\xff" * 64

    return hook


async def test_a_garbling_broker_is_one_warning_per_cause_naming_it(
    cluster: EmbeddedKafkaCluster, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    caplog.set_level(logging.DEBUG, logger="staticconsumer.runtime")  # each failed request, to count retries
    topic, group = _names("garble")
    await asyncio.to_thread(cluster.create_topic, topic, 3)
    await produce(cluster.internal_bootstrap_servers, topic, 10)
    consumer = StaticConsumer(
        topic,
        bootstrap_servers=cluster.bootstrap_servers,
        group_id=group,
        group_instance_id="garble-0",
        client_id=f"garble-{uuid.uuid4().hex[:6]}",
        session_timeout_ms=30_000,
        heartbeat_interval_ms=1000,
        auto_offset_reset="earliest",
    )
    await consumer.start()
    try:
        keys = [record.key for record in await consume(consumer, 10)]
        caplog.clear()
        hook = _garble(consumer.settings.effective_client_id, 12)  # the coordinator answers garbage
        for proxy in cluster.proxies:
            proxy.on_response(hook)
        await _poll(consumer, 8.0, keys)  # a retry at every heartbeat and coordinator lookup
        for proxy in cluster.proxies:
            proxy.clear_response_hooks()
        await produce(cluster.internal_bootstrap_servers, topic, 5, start=100)
        deadline = time.monotonic() + 30
        while {f"k{i}".encode() for i in range(100, 105)} - set(keys):
            assert time.monotonic() < deadline, "the consumer did not read on once the answers were sound"
            await _poll(consumer, 0.2, keys)
    finally:
        for proxy in cluster.proxies:
            proxy.clear_response_hooks()
        await consumer.stop()

    retries = [r for r in caplog.records if "failed" in r.getMessage() and "Error" in r.getMessage()]
    assert len(retries) >= 3, "the garbage was met at several retries (else one record proves nothing)"
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING]
    unreadable = [r.getMessage() for r in loud if "could not be read" in r.getMessage()]
    assert unreadable, "the garbage is reported"
    brokers = {node.address for node in cluster.nodes.values()}
    for message in unreadable:
        assert any(f"Kafka broker {address} sent a response" in message for address in brokers), message
    causes = [(m.split(" sent a response")[0], m.split("(")[1].split(":")[0]) for m in unreadable]
    assert len(causes) == len(set(causes)), f"one record per broker and cause within the minute: {unreadable}"
    assert not [r for r in caplog.records if r.exc_info], "no traceback per retry"
    others = [r for r in loud if "could not be read" not in r.getMessage()]
    assert not others, [f"{r.name}: {r.getMessage()}" for r in others]

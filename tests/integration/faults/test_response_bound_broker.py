"""A response that claims 2 GiB, streamed by the proxy in place of a real broker's answer: every
connection the SDK reads from refuses it unread, closes, and says so with ResponseTooLargeError."""

from __future__ import annotations

import asyncio
import gc
import uuid
from typing import Any

import msgspec
import pytest
from aiokafka.structs import TopicPartition as KafkaTopicPartition

from staticconsumer import _aiokafka
from staticconsumer import protocol as p
from staticconsumer.admin import GroupAdmin
from staticconsumer.consumer import StaticConsumer
from staticconsumer.errors import InconsistentGroupProtocolError, ResponseTooLargeError
from staticconsumer.testing.cluster import EmbeddedKafkaCluster
from staticconsumer.testing.memory import RssWatch
from staticconsumer.testing.proxy import FaultProxy, ResponseFrame, StreamedFrame, wait_for_async

from ..support import FAST, produce, until_assigned

pytestmark = [pytest.mark.kafka, pytest.mark.faults]

MB = 1024 * 1024
STREAM = StreamedFrame(bytes_per_second=128 * MB, chunk_bytes=MB)
"""Fast enough that a reader without a bound would pass 64 MB within the first second."""


def _stream_for(cluster: EmbeddedKafkaCluster, api_key: int, client_id: str, *, once: bool = False) -> None:
    """Every proxy answers ``client_id``'s ``api_key`` requests with a 2 GiB claim (once: only the first)."""
    fired: list[int] = []

    def hook(frame: ResponseFrame) -> StreamedFrame | None:
        if frame.api_key != api_key or frame.client_id != client_id or (once and fired):
            return None
        fired.append(frame.correlation_id)
        return STREAM

    for proxy in cluster.proxies:
        proxy.on_response(hook)


def _closed_by_client(proxies: list[FaultProxy], client_id: str) -> list[int]:
    """Bytes the proxies had sent into connections of ``client_id`` that the client itself closed."""
    return [
        closed.bytes_to_client
        for proxy in proxies
        for closed in proxy.closed_connections
        if closed.client_id == client_id and closed.ended_by == "client"
    ]


async def test_the_group_client_refuses_an_oversized_join_response(cluster: EmbeddedKafkaCluster) -> None:
    client_id = f"bound-group-{uuid.uuid4().hex[:6]}"
    client = _aiokafka.new_client(bootstrap_servers=cluster.bootstrap_servers, client_id=client_id)
    await client.bootstrap()
    try:
        group = f"bound-{uuid.uuid4().hex[:6]}"
        coordinator = await asyncio.to_thread(cluster.find_coordinator, group)
        _stream_for(cluster, p.JoinGroupResponse.API_KEY, client_id)
        join = p.JoinGroupRequest(
            group_id=group,
            session_timeout_ms=10_000,
            rebalance_timeout_ms=10_000,
            group_instance_id="bound-0",
            protocol_type="consumer",
            protocols=[p.JoinGroupRequestProtocol("range", b"")],
        )
        gc.collect()
        with RssWatch() as rss:
            with pytest.raises(ResponseTooLargeError) as caught:
                await _aiokafka.send(client, coordinator, join)
            await asyncio.sleep(1.0)
        assert caught.value.api == "JoinGroup"
        assert caught.value.limit == _aiokafka.GROUP_RESPONSE_MAX_BYTES
        assert caught.value.broker == cluster.node(coordinator).address
        assert rss.growth < 64 * MB, f"RSS grew {rss.growth / MB:.0f} MB"
        await wait_for_async(lambda: _closed_by_client(cluster.proxies, client_id), 5, "connection closed")
        assert max(_closed_by_client(cluster.proxies, client_id)) < 16 * MB
        for proxy in cluster.proxies:
            proxy.clear_response_hooks()
        answered = await _aiokafka.send(client, coordinator, join)  # a fresh connection works again
        assert isinstance(answered.response, p.JoinGroupResponse)
    finally:
        await client.close()


async def test_the_admin_raises_the_typed_error_at_once_instead_of_retrying(
    cluster: EmbeddedKafkaCluster,
) -> None:
    client_id = f"bound-admin-{uuid.uuid4().hex[:6]}"
    _stream_for(cluster, p.DescribeGroupsResponse.API_KEY, client_id)
    async with GroupAdmin(bootstrap_servers=cluster.bootstrap_servers, client_id=client_id) as admin:
        with RssWatch() as rss, pytest.raises(ResponseTooLargeError) as caught:
            await asyncio.wait_for(admin.describe_group("any-group"), 20)
    assert caught.value.api == "DescribeGroups"
    assert "KAFKA_RECEIVE_MESSAGE_MAX_BYTES" in str(caught.value)
    assert rss.growth < 64 * MB


async def _until_error(fetcher: Any, rows: list[Any]) -> ResponseTooLargeError:
    """getmany until it raises; rows fetched before (an answer already on its way) go into ``rows``."""
    for _ in range(50):
        try:
            batch = await fetcher.getmany(timeout_ms=500)
        except ResponseTooLargeError as error:
            return error
        rows += [row for part in batch.values() for row in part]
    raise AssertionError("getmany never raised ResponseTooLargeError")


async def test_the_fetcher_raises_an_oversized_fetch_from_getmany(cluster: EmbeddedKafkaCluster) -> None:
    topic = f"bound-fetch-{uuid.uuid4().hex[:6]}"
    await asyncio.to_thread(cluster.create_topic, topic, 1)
    await produce(cluster.internal_bootstrap_servers, topic, 5)
    client_id = f"bound-fetch-{uuid.uuid4().hex[:6]}"
    fetcher = _aiokafka.new_fetcher(
        bootstrap_servers=cluster.bootstrap_servers,
        client_id=client_id,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        fetch_max_bytes=4 * MB,
    )
    await fetcher.start()
    try:
        fetcher.assign([KafkaTopicPartition(topic, 0)])
        first = await fetcher.getmany(timeout_ms=10_000)
        assert sum(len(rows) for rows in first.values()) == 5
        _stream_for(cluster, 1, client_id)  # Fetch
        await produce(cluster.internal_bootstrap_servers, topic, 5, start=5)
        rows: list[Any] = []
        gc.collect()
        with RssWatch() as rss:
            caught = await _until_error(fetcher, rows)
            await asyncio.sleep(1.0)
        assert caught.api == "Fetch"
        assert caught.limit == 5 * MB, "fetch.max.bytes + 1 MiB"
        assert rss.growth < 64 * MB, f"RSS grew {rss.growth / MB:.0f} MB"
        assert _closed_by_client(cluster.proxies, client_id)
        for proxy in cluster.proxies:
            proxy.clear_response_hooks()
        for _ in range(40):
            try:
                batch = await fetcher.getmany(timeout_ms=500)
            except ResponseTooLargeError:
                continue  # raised once more for a fetch that was answered before the hooks went
            rows += [row for part in batch.values() for row in part]
            if len(rows) >= 5:
                break
        assert len(rows) == 5, "the fetcher did not recover once the peer behaved"
    finally:
        await fetcher.stop()


async def test_a_static_consumer_survives_an_oversized_join_response_without_buffering_it(
    cluster: EmbeddedKafkaCluster,
) -> None:
    topic = f"bound-consumer-{uuid.uuid4().hex[:6]}"
    await asyncio.to_thread(cluster.create_topic, topic, 2)
    group = f"bound-consumer-{uuid.uuid4().hex[:6]}"
    consumer = StaticConsumer(
        topic,
        bootstrap_servers=cluster.bootstrap_servers,
        group_id=group,
        group_instance_id="bound-0",
        **{**FAST, "session_timeout_ms": 10_000},
    )
    client_id = consumer.settings.effective_client_id
    _stream_for(cluster, p.JoinGroupResponse.API_KEY, client_id, once=True)
    gc.collect()
    with RssWatch() as rss:
        await consumer.start()
        try:
            await until_assigned(consumer, within=60)
        finally:
            await consumer.stop()
    assert rss.growth < 64 * MB, f"RSS grew {rss.growth / MB:.0f} MB"
    streamed = _closed_by_client(cluster.proxies, client_id)
    assert streamed, "the oversized JoinGroup answer was never sent or its connection never closed"
    assert max(streamed) < 16 * MB


async def test_a_static_consumer_raises_an_oversized_fetch_and_then_reads_on(
    cluster: EmbeddedKafkaCluster,
) -> None:
    topic = f"bound-consumer-fetch-{uuid.uuid4().hex[:6]}"
    await asyncio.to_thread(cluster.create_topic, topic, 1)
    await produce(cluster.internal_bootstrap_servers, topic, 5)
    consumer = StaticConsumer(
        topic,
        bootstrap_servers=cluster.bootstrap_servers,
        group_id=f"bound-consumer-fetch-{uuid.uuid4().hex[:6]}",
        group_instance_id="fetch-0",
        fetch_max_bytes=4 * MB,
        **{**FAST, "session_timeout_ms": 10_000},
    )
    async with consumer:
        rows: list[Any] = []
        while len(rows) < 5:
            batch = await consumer.getmany(timeout_ms=1000)
            rows += [row for part in batch.values() for row in part]
        _stream_for(cluster, 1, consumer.settings.effective_client_id)  # Fetch
        await produce(cluster.internal_bootstrap_servers, topic, 5, start=5)
        gc.collect()
        with RssWatch() as rss:
            caught = await _until_error(consumer, rows)
            await asyncio.sleep(1.0)
        assert caught.api == "Fetch"
        assert caught.limit == 5 * MB, "fetch.max.bytes + 1 MiB"
        assert rss.growth < 64 * MB, f"RSS grew {rss.growth / MB:.0f} MB"
        for proxy in cluster.proxies:
            proxy.clear_response_hooks()
        for _ in range(40):
            try:
                batch = await consumer.getmany(timeout_ms=500)
            except ResponseTooLargeError:
                continue  # a fetch answered before the hooks went
            rows += [row for part in batch.values() for row in part]
            if len(rows) >= 10:
                break
        assert [row.offset for row in rows] == list(range(10)), "nothing skipped, nothing twice"


async def test_a_coordinator_naming_a_protocol_never_offered_is_a_typed_error(
    cluster: EmbeddedKafkaCluster,
) -> None:
    """The coordinator's JoinGroup answer names an assignor this member never offered (rewritten by the
    proxy): a typed InconsistentGroupProtocolError naming both, from every later call; no KeyError."""
    topic = f"bound-protocol-{uuid.uuid4().hex[:6]}"
    await asyncio.to_thread(cluster.create_topic, topic, 2)
    consumer = StaticConsumer(
        topic,
        bootstrap_servers=cluster.bootstrap_servers,
        group_id=f"bound-protocol-{uuid.uuid4().hex[:6]}",
        group_instance_id="protocol-0",
        **{**FAST, "session_timeout_ms": 10_000},
    )
    client_id = consumer.settings.effective_client_id

    def rename_protocol(frame: ResponseFrame) -> bytes | None:
        if frame.api_key != p.JoinGroupResponse.API_KEY or frame.client_id != client_id:
            return None
        joined = frame.decode()
        assert isinstance(joined, p.JoinGroupResponse)
        if not joined.protocol_name:
            return None  # MEMBER_ID_REQUIRED or an error: nothing chosen yet
        return frame.encode(msgspec.structs.replace(joined, protocol_name="never-offered"))

    for proxy in cluster.proxies:
        proxy.on_response(rename_protocol)
    gc.collect()
    try:
        with RssWatch() as rss:
            # start() waits for the first join, as aiokafka's does: the verdict is raised from it.
            with pytest.raises(InconsistentGroupProtocolError) as caught:
                await consumer.start()
            message = str(caught.value)
            assert "'never-offered'" in message
            assert "range" in message
            assert "cooperative-sticky" in message, "the offered protocols are named"
            with pytest.raises(InconsistentGroupProtocolError):
                await consumer.commit()
        assert rss.growth < 64 * MB, f"RSS grew {rss.growth / MB:.0f} MB"
    finally:
        for proxy in cluster.proxies:
            proxy.clear_response_hooks()

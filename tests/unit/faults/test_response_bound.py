"""Responses are bounded before they are buffered: a frame over the limit is refused unread.

Against a scripted peer behind the fault proxy; the same checks against a real broker are in
tests/integration/faults/test_response_bound_broker.py.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator

import aiokafka.client
import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.conn import AIOKafkaConnection
from scripted_broker import ScriptedBroker

from staticconsumer import _aiokafka
from staticconsumer import protocol as p
from staticconsumer.errors import ResponseTooLargeError, SettingsError
from staticconsumer.settings import Settings
from staticconsumer.testing.memory import RssWatch
from staticconsumer.testing.proxy import FaultProxy, ResponseFrame, StreamedFrame

MB = 1024 * 1024
FAST_STREAM = StreamedFrame(bytes_per_second=256 * MB, chunk_bytes=MB)


@pytest.fixture
async def broker() -> AsyncIterator[ScriptedBroker]:
    scripted = await ScriptedBroker().start()
    yield scripted
    await scripted.close()


@pytest.fixture
async def proxy(broker: ScriptedBroker) -> AsyncIterator[FaultProxy]:
    started = FaultProxy("127.0.0.1", broker.port).start()
    yield started
    started.close()


def _stream_instead_of(api_key: int, stream: StreamedFrame = FAST_STREAM) -> object:
    def hook(frame: ResponseFrame) -> StreamedFrame | None:
        return stream if frame.api_key == api_key else None

    return hook


async def test_a_2_gib_claim_is_refused_typed_the_connection_closed_and_nothing_buffered(
    proxy: FaultProxy,
) -> None:
    proxy.on_response(_stream_instead_of(p.FindCoordinatorResponse.API_KEY))  # type: ignore[arg-type]
    conn = await _aiokafka.open_connection("127.0.0.1", proxy.port, max_response_bytes=MB)
    gc.collect()
    with RssWatch() as rss:
        with pytest.raises(ResponseTooLargeError) as caught:
            await _aiokafka.send_on_connection(conn, p.FindCoordinatorRequest(key="g"), max_version=2)
        await asyncio.sleep(0.5)  # the proxy would keep streaming at 256 MB/s into a reader that reads on
    error = caught.value
    assert (error.size, error.limit, error.api) == (2**31 - 1, MB, "FindCoordinator")
    assert error.broker == f"127.0.0.1:{proxy.port}"
    assert "receive.message.max.bytes" in str(error)
    assert "KAFKA_RECEIVE_MESSAGE_MAX_BYTES" in str(error)
    assert not conn.connected()
    assert rss.growth < 64 * MB, f"RSS grew {rss.growth / MB:.0f} MB"
    await asyncio.sleep(0.2)
    assert proxy.closed_connections
    assert proxy.closed_connections[-1].ended_by == "client"


async def test_aiokafkas_own_reader_buffers_such_a_frame_which_is_why_the_bound_exists(
    proxy: FaultProxy,
) -> None:
    """The canary: if this ever fails, aiokafka bounds frames itself and ours may go."""
    proxy.on_response(
        _stream_instead_of(  # type: ignore[arg-type]
            p.FindCoordinatorResponse.API_KEY, StreamedFrame(bytes_per_second=256 * MB, chunk_bytes=MB)
        )
    )
    conn = await aiokafka.client.create_conn("127.0.0.1", proxy.port, request_timeout_ms=1500)
    assert type(conn) is AIOKafkaConnection, "a plain aiokafka client must get aiokafka's own connection"
    gc.collect()
    with RssWatch() as rss, pytest.raises(TimeoutError):
        await _aiokafka.send_on_connection(conn, p.FindCoordinatorRequest(key="g"), max_version=2)
    conn.close()
    assert rss.growth > 64 * MB, f"aiokafka buffered only {rss.growth / MB:.0f} MB in 1.5 s"


async def test_frames_within_the_limit_pass_and_the_connection_stays_usable(proxy: FaultProxy) -> None:
    conn = await _aiokafka.open_connection("127.0.0.1", proxy.port, max_response_bytes=1024)
    for _ in range(3):
        exchange = await _aiokafka.send_on_connection(conn, p.FindCoordinatorRequest(key="g"), max_version=2)
        assert exchange.response_as(p.FindCoordinatorResponse).node_id == 1
    assert conn.connected()
    conn.close()


async def test_the_oversized_error_fails_only_its_request_others_see_the_connection_close(
    proxy: FaultProxy,
) -> None:
    proxy.on_response(_stream_instead_of(p.JoinGroupResponse.API_KEY))  # type: ignore[arg-type]
    conn = await _aiokafka.open_connection("127.0.0.1", proxy.port, max_response_bytes=MB)
    join = p.JoinGroupRequest(group_id="g", session_timeout_ms=6000, protocol_type="consumer")
    first = asyncio.ensure_future(_aiokafka.send_on_connection(conn, join, max_version=5))
    second = asyncio.ensure_future(_aiokafka.send_on_connection(conn, p.HeartbeatRequest(group_id="g")))
    results = await asyncio.gather(first, second, return_exceptions=True)
    assert isinstance(results[0], ResponseTooLargeError)
    assert results[0].api == "JoinGroup"
    assert not isinstance(results[1], ResponseTooLargeError)
    from aiokafka.errors import KafkaConnectionError

    assert isinstance(results[1], KafkaConnectionError)


def test_the_error_is_also_a_connection_error_to_aiokafkas_own_retry_loops() -> None:
    from aiokafka.errors import KafkaConnectionError

    error = _aiokafka._oversized_error_class()(2**31 - 1, MB, "127.0.0.1:9092", "Metadata", "x.y")
    assert isinstance(error, ResponseTooLargeError)
    assert isinstance(error, KafkaConnectionError)
    assert str(error).startswith("the Metadata response from broker 127.0.0.1:9092 claims 2147483647 bytes")
    assert type(error).__name__ == "ResponseTooLargeError"


def test_default_limits_follow_fetch_max_bytes_and_the_group_ceiling() -> None:
    base = Settings(bootstrap_servers=("k:9092",), group_id="g")
    assert base.response_limits() == (100 * MB, 50 * MB + MB)
    bigger_partitions = Settings(
        bootstrap_servers=("k:9092",), group_id="g", fetch_max_bytes=MB, max_partition_fetch_bytes=8 * MB
    )
    assert bigger_partitions.response_limits()[1] == 9 * MB
    fixed = Settings(bootstrap_servers=("k:9092",), group_id="g", receive_message_max_bytes=200 * MB)
    assert fixed.response_limits() == (200 * MB, 200 * MB)


def test_a_limit_below_a_full_fetch_is_a_settings_error() -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env(
            {
                "KAFKA_BOOTSTRAP_SERVERS": "k:9092",
                "KAFKA_GROUP_ID": "g",
                "KAFKA_RECEIVE_MESSAGE_MAX_BYTES": "1000000",
            }
        )
    assert "KAFKA_RECEIVE_MESSAGE_MAX_BYTES='1000000'" in str(caught.value)
    assert str(50 * MB + 512) in str(caught.value)


async def test_the_fetcher_keeps_aiokafkas_client_configuration_on_a_bounded_client() -> None:
    kwargs = Settings(bootstrap_servers=("k:9092",), group_id="g", client_id="c-1").aiokafka_client_kwargs()
    ours = _aiokafka.new_fetcher(**kwargs, fetch_max_bytes=4 * MB)
    theirs = AIOKafkaConsumer(**kwargs, fetch_max_bytes=4 * MB)
    assert ours._client.max_response_bytes == 5 * MB
    skip = {
        "_loop",
        "_md_update_waiter",
        "cluster",
        "_get_conn_lock_value",
        "max_response_bytes",
        "on_oversized",
        "reconnect_backoff",  # ours alone: Java's reconnect backoff (tests/unit/connection)
        "on_answered",  # ours alone: tells the connection monitor a broker answers again
        "brokers_only",  # ours alone: the membership's client refreshes no topic (tests/integration)
    }
    mine = {k: v for k, v in vars(ours._client).items() if k not in skip}
    assert mine == {k: v for k, v in vars(theirs._client).items() if k not in skip}
    assert _aiokafka.new_client(**kwargs).max_response_bytes == _aiokafka.GROUP_RESPONSE_MAX_BYTES

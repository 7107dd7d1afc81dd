"""The fault proxy, in front of a scripted peer: each fault does what it promises, and heals."""

from __future__ import annotations

import asyncio
import struct
import time
from collections.abc import AsyncIterator

import msgspec
import pytest
from scripted_broker import RawClient, ScriptedBroker

from staticconsumer import protocol as p
from staticconsumer.testing.proxy import FaultProxy, ResponseFrame, StreamedFrame, wait_for_async

FIND = p.FindCoordinatorRequest(key="g")
JOIN = p.JoinGroupRequest(
    group_id="g",
    session_timeout_ms=6000,
    rebalance_timeout_ms=6000,
    group_instance_id="pod-0",
    protocol_type="consumer",
    protocols=[p.JoinGroupRequestProtocol("range", b"")],
)


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


async def _round_trip(client: RawClient) -> p.FindCoordinatorResponse:
    await client.send(FIND, 2)
    response = await client.receive(p.FindCoordinatorResponse, 2)
    assert isinstance(response, p.FindCoordinatorResponse)
    return response


async def _first_byte_of_a_new_connection(port: int) -> bytes:
    client = await RawClient.connect(port)
    await client.send(FIND, 2)
    return await client.reader.readexactly(1)


async def test_without_faults_frames_pass_unchanged(proxy: FaultProxy, broker: ScriptedBroker) -> None:
    client = await RawClient.connect(proxy.port, "member-a")
    assert (await _round_trip(client)).node_id == 1
    assert broker.received == [("member-a", FIND)]
    await wait_for_async(lambda: proxy.client_ids() == {"member-a"}, 2, "client id learnt")
    client.close()


async def test_blackhole_holds_bytes_both_ways_until_healed(
    proxy: FaultProxy, broker: ScriptedBroker
) -> None:
    client = await RawClient.connect(proxy.port)
    await _round_trip(client)
    proxy.blackhole()
    await client.send(FIND, 2)
    with pytest.raises(TimeoutError):
        await client.receive(p.FindCoordinatorResponse, 2, within=0.7)
    assert len(broker.received) == 1, "a blackholed request reached the broker"
    proxy.heal()
    response = await client.receive(p.FindCoordinatorResponse, 2)
    assert isinstance(response, p.FindCoordinatorResponse), "held bytes were lost, not delivered on heal"
    client.close()


async def test_blackhole_accepts_new_connections_but_never_connects_them(
    proxy: FaultProxy, broker: ScriptedBroker
) -> None:
    proxy.blackhole()
    client = await RawClient.connect(proxy.port)
    await client.send(FIND, 2)
    await asyncio.sleep(0.7)
    assert broker.connections == 0
    proxy.heal()
    assert (await client.receive(p.FindCoordinatorResponse, 2)).node_id == 1  # type: ignore[attr-defined]
    client.close()


async def test_blackhole_of_one_client_id_leaves_the_others_alone(
    proxy: FaultProxy, broker: ScriptedBroker
) -> None:
    cut, other = await RawClient.connect(proxy.port, "cut-off"), await RawClient.connect(proxy.port, "other")
    await _round_trip(cut)
    await _round_trip(other)
    proxy.blackhole(client_id="cut-off")
    await cut.send(FIND, 2)
    assert (await _round_trip(other)).node_id == 1
    with pytest.raises(TimeoutError):
        await cut.receive(p.FindCoordinatorResponse, 2, within=0.5)
    late = await RawClient.connect(proxy.port, "cut-off")  # a reconnect is held too, once it names itself
    await late.send(FIND, 2)
    with pytest.raises(TimeoutError):
        await late.receive(p.FindCoordinatorResponse, 2, within=0.5)
    proxy.heal()
    await cut.receive(p.FindCoordinatorResponse, 2)
    await late.receive(p.FindCoordinatorResponse, 2)
    for client in (cut, other, late):
        client.close()


async def test_reset_sends_rst_to_existing_and_new_connections(proxy: FaultProxy) -> None:
    client = await RawClient.connect(proxy.port)
    await _round_trip(client)
    proxy.reset()
    with pytest.raises(ConnectionResetError):
        await client.reader.readexactly(1)
    with pytest.raises((ConnectionError, asyncio.IncompleteReadError)):
        await _first_byte_of_a_new_connection(proxy.port)
    proxy.heal()
    healed = await RawClient.connect(proxy.port)
    assert (await _round_trip(healed)).node_id == 1
    assert any(closed.ended_by == "proxy" for closed in proxy.closed_connections)
    healed.close()


async def test_latency_delays_each_direction(proxy: FaultProxy) -> None:
    client = await RawClient.connect(proxy.port)
    await _round_trip(client)
    proxy.latency(to_broker_ms=200, to_client_ms=300)
    started = time.monotonic()
    await _round_trip(client)
    assert time.monotonic() - started >= 0.5
    proxy.heal()
    started = time.monotonic()
    await _round_trip(client)
    assert time.monotonic() - started < 0.4
    client.close()


async def test_a_hook_rewrites_one_api_by_correlation_id_and_leaves_others(proxy: FaultProxy) -> None:
    seen: list[tuple[int, int]] = []

    def rename_protocol(frame: ResponseFrame) -> bytes | None:
        seen.append((frame.api_key, frame.api_version))
        if frame.api_key != p.JoinGroupResponse.API_KEY:
            return None
        joined = frame.decode()
        assert isinstance(joined, p.JoinGroupResponse)
        return frame.encode(msgspec.structs.replace(joined, protocol_name="never-offered"))

    proxy.on_response(rename_protocol)
    client = await RawClient.connect(proxy.port)
    await client.send(JOIN, 7)
    await client.send(FIND, 2)
    joined = await client.receive(p.JoinGroupResponse, 7)
    found = await client.receive(p.FindCoordinatorResponse, 2)
    assert isinstance(joined, p.JoinGroupResponse)
    assert joined.protocol_name == "never-offered"
    assert joined.member_id == "m-1", "the rest of the response must survive the rewrite"
    assert isinstance(found, p.FindCoordinatorResponse)
    assert found.node_id == 1
    assert seen == [(11, 7), (10, 2)]
    proxy.clear_response_hooks()
    await client.send(JOIN, 7)
    again = await client.receive(p.JoinGroupResponse, 7)
    assert isinstance(again, p.JoinGroupResponse)
    assert again.protocol_name == "range"
    client.close()


async def test_a_streamed_frame_claims_its_size_and_trickles_until_the_client_leaves(
    proxy: FaultProxy,
) -> None:
    proxy.on_response(lambda frame: StreamedFrame(bytes_per_second=256 * 1024, chunk_bytes=16 * 1024))
    client = await RawClient.connect(proxy.port)
    await client.send(FIND, 2)
    (claimed,) = struct.unpack(">i", await asyncio.wait_for(client.reader.readexactly(4), 5))
    assert claimed == 2**31 - 1
    started = time.monotonic()
    received = len(await asyncio.wait_for(client.reader.readexactly(128 * 1024), 5))
    assert received == 128 * 1024
    assert time.monotonic() - started >= 0.3, "not trickled"
    client.close()
    await wait_for_async(lambda: bool(proxy.closed_connections), 5, "the proxy noticed the client leave")
    closed = proxy.closed_connections[-1]
    assert closed.ended_by == "client"
    assert closed.bytes_to_client < 2 * 1024 * 1024, "kept streaming after the client left"


async def test_a_hook_that_raises_is_recorded_and_the_frame_passes(proxy: FaultProxy) -> None:
    def broken(frame: ResponseFrame) -> bytes | None:
        raise RuntimeError("bug in a test's hook")

    proxy.on_response(broken)
    client = await RawClient.connect(proxy.port)
    assert (await _round_trip(client)).node_id == 1
    assert [str(e) for e in proxy.hook_errors] == ["bug in a test's hook"]
    client.close()


async def test_a_refused_upstream_resets_the_client(broker: ScriptedBroker) -> None:
    with FaultProxy("127.0.0.1", broker.port) as proxy:
        await broker.close()
        proxy.retarget("127.0.0.1", 1)  # nothing listens on port 1
        with pytest.raises((ConnectionError, asyncio.IncompleteReadError)):
            await _first_byte_of_a_new_connection(proxy.port)

"""The aiokafka bridge over a real AIOKafkaConnection, talking to a scripted in-process broker.

The fake broker answers aiokafka's ApiVersions v0 handshake with chosen ranges, decodes whatever
arrives with our codec (header v1/v2 by version) and answers with our encoder (response header
v0/v1), so the whole path through aiokafka's connection is exercised without a JVM.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import pytest
from aiokafka.conn import create_conn
from aiokafka.errors import RequestTimedOutError

from staticconsumer import _aiokafka as bridge
from staticconsumer import protocol as p
from staticconsumer.errors import DecodeError, NoCommonApiVersionError, UnsupportedVersionForFieldError
from staticconsumer.protocol import APIS_BY_KEY, Message

Responder = Callable[[Message, int], Message | bytes]


@dataclass
class FakeBroker:
    ranges: dict[int, tuple[int, int]]
    respond: Responder
    received: list[tuple[int, int, p.RequestHeader, Message]] = field(default_factory=list)
    port: int = 0
    delay_s: float = 0.0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                frame = await reader.readexactly(size)
                api_key, version, correlation_id = struct.unpack_from(">hhi", frame)
                if api_key == 18:  # ApiVersions v0: error code, then (key, min, max) triples
                    body = struct.pack(">ihi", correlation_id, 0, len(self.ranges)) + b"".join(
                        struct.pack(">hhh", key, low, high) for key, (low, high) in self.ranges.items()
                    )
                    writer.write(p.frame(body))
                    continue
                spec = APIS_BY_KEY[api_key]
                header, offset = p.decode_request_header(frame, version >= spec.flexible_from)
                message = spec.request.decode(frame, version, offset)
                self.received.append((api_key, version, header, message))
                if self.delay_s:
                    await asyncio.sleep(self.delay_s)
                answer = self.respond(message, version)
                if isinstance(answer, bytes):  # a deliberately broken body
                    head = struct.pack(">i", correlation_id) + (
                        b"\x00" if version >= spec.flexible_from else b""
                    )
                    writer.write(p.frame(head + answer))
                else:
                    writer.write(p.frame(p.encode_response(answer, version, correlation_id)))
        except asyncio.IncompleteReadError:
            pass
        finally:
            writer.close()


def _echo_responder(message: Message, version: int) -> Message | bytes:
    if isinstance(message, p.JoinGroupRequest):
        return p.JoinGroupResponse(
            0,
            0,
            1,
            "consumer",
            "range",
            "pod-0-x",
            version >= 9,
            "pod-0-x",
            [p.JoinGroupResponseMember("pod-0-x", message.group_instance_id, b"meta")],
        )
    if isinstance(message, p.HeartbeatRequest):
        return p.HeartbeatResponse(0, 82)
    if isinstance(message, p.OffsetCommitRequest):
        return p.OffsetCommitResponse(
            0,
            [
                p.OffsetCommitResponseTopic(t.name, [p.OffsetCommitResponsePartition(0, 0)])
                for t in message.topics
            ],
        )
    if isinstance(message, p.DescribeGroupsRequest):
        return p.DescribeGroupsResponse(0, [p.DescribedGroup(0, g) for g in message.groups])
    if isinstance(message, p.SyncGroupRequest):
        return b"\x7f\xff\xff\xff"  # garbage: a throttle time, then nothing
    raise AssertionError(f"unexpected {message!r}")


@pytest.fixture
async def broker() -> AsyncIterator[FakeBroker]:
    fake = FakeBroker(
        ranges={11: (0, 9), 12: (0, 4), 8: (2, 10), 14: (0, 5), 13: (0, 5), 15: (0, 6)},
        respond=_echo_responder,
    )
    server = await asyncio.start_server(fake.handle, "127.0.0.1", 0)
    fake.port = server.sockets[0].getsockname()[1]
    async with server:
        yield fake
        server.close()


async def test_highest_common_version_and_flexible_headers(broker: FakeBroker) -> None:
    conn = await create_conn("127.0.0.1", broker.port, client_id="static-client")
    try:
        assert bridge.connection_versions(conn)[11] == (0, 9)
        request = p.JoinGroupRequest(
            "g", 45000, 300000, "", "pod-0", "consumer", [p.JoinGroupRequestProtocol("range", b"m")], "why"
        )
        exchange = await bridge.send_on_connection(conn, request)
        assert exchange.version == 9
        response = exchange.response_as(p.JoinGroupResponse)
        assert response.skip_assignment is True
        assert response.members[0].group_instance_id == "pod-0"
        api_key, version, header, seen = broker.received[-1]
        assert (api_key, version, header.client_id) == (11, 9, "static-client")
        assert seen == request
        # OffsetCommit: broker offers v10 (topic ids), we stop at v9
        commit = p.OffsetCommitRequest(
            "g",
            1,
            "m",
            "pod-0",
            topics=[p.OffsetCommitRequestTopic("t", [p.OffsetCommitRequestPartition(0, 5)])],
        )
        exchange = await bridge.send_on_connection(conn, commit)
        assert exchange.version == 9
        assert exchange.response_as(p.OffsetCommitResponse).topics[0].name == "t"
        # a typed broker error travels as data; the caller maps it
        heartbeat = await bridge.send_on_connection(conn, p.HeartbeatRequest("g", 1, "m", "pod-0"))
        assert (heartbeat.version, heartbeat.response_as(p.HeartbeatResponse).error_code) == (4, 82)
        # a cap keeps us on an older version (classic header v1 / response header v0)
        capped = await bridge.send_on_connection(
            conn, p.HeartbeatRequest("g", 1, "m", "pod-0"), max_version=3
        )
        assert capped.version == 3
        assert broker.received[-1][1] == 3
        with pytest.raises(TypeError):
            capped.response_as(p.JoinGroupResponse)
    finally:
        conn.close()


async def test_old_broker_refuses_instance_id_before_sending(broker: FakeBroker) -> None:
    broker.ranges[11] = (0, 4)
    conn = await create_conn("127.0.0.1", broker.port)
    try:
        with pytest.raises(UnsupportedVersionForFieldError) as info:
            await bridge.send_on_connection(conn, p.JoinGroupRequest("g", 45000, group_instance_id="pod-0"))
        assert (info.value.version, info.value.min_version) == (4, 5)
        assert broker.received == []
        dynamic = await bridge.send_on_connection(
            conn, p.JoinGroupRequest("g", 45000, protocol_type="consumer")
        )
        assert dynamic.version == 4
    finally:
        conn.close()


async def test_missing_api_and_bad_body(broker: FakeBroker) -> None:
    conn = await create_conn("127.0.0.1", broker.port)
    try:
        with pytest.raises(NoCommonApiVersionError):
            await bridge.send_on_connection(conn, p.FindCoordinatorRequest("g"))
        with pytest.raises(DecodeError):
            await bridge.send_on_connection(conn, p.SyncGroupRequest("g", 1, "m"))
        # the frame was consumed whole: the connection still works
        assert conn.connected()
        ok = await bridge.send_on_connection(conn, p.HeartbeatRequest("g", 1, "m"))
        assert ok.version == 4
    finally:
        conn.close()


async def test_per_request_timeout(broker: FakeBroker) -> None:
    """A long JoinGroup gets its own timeout; other requests keep the connection's."""
    broker.delay_s = 0.4
    conn = await create_conn("127.0.0.1", broker.port, request_timeout_ms=150)
    try:
        with pytest.raises(asyncio.TimeoutError):
            await bridge.send_on_connection(conn, p.DescribeGroupsRequest(["g"]))
    finally:
        conn.close()
    conn = await create_conn("127.0.0.1", broker.port, request_timeout_ms=150)
    try:
        slow = await bridge.send_on_connection(conn, p.DescribeGroupsRequest(["g"]), timeout_ms=5000)
        assert slow.response_as(p.DescribeGroupsResponse).groups[0].group_id == "g"
        # the override was for that request only: the next one has the connection's 150 ms again
        with pytest.raises(asyncio.TimeoutError):
            await bridge.send_on_connection(conn, p.DescribeGroupsRequest(["g"]))
    finally:
        conn.close()
    conn = await create_conn("127.0.0.1", broker.port)
    try:
        with pytest.raises(RequestTimedOutError):
            await bridge.send_on_connection(conn, p.DescribeGroupsRequest(["g"]), timeout_ms=50)
        assert not conn.connected()
    finally:
        conn.close()


def test_pick_version() -> None:
    spec = p.APIS["OffsetCommit"]
    assert bridge.pick_version(spec, (2, 10)) == 9
    assert bridge.pick_version(spec, (0, 7)) == 7
    assert bridge.pick_version(spec, (0, 9), max_version=8) == 8
    with pytest.raises(NoCommonApiVersionError):
        bridge.pick_version(spec, (0, 1))
    with pytest.raises(NoCommonApiVersionError):
        bridge.pick_version(spec, (10, 12))
    with pytest.raises(NoCommonApiVersionError):
        bridge.pick_version(spec, None)
    assert bridge.negotiated_version({11: (0, 9)}, p.JoinGroupRequest) == 9
    with pytest.raises(TypeError):
        bridge.ProtocolRequest(p.JoinGroupResponse())

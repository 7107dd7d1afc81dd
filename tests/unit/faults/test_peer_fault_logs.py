"""A peer that answers garbage or claims a 2 GiB frame fails every retry alike: one WARNING per broker and
cause (then at most one a minute, with a count), never a traceback, and the failure is marked as the
broker's answer rather than as an unreachable broker. Against a scripted peer behind the fault proxy."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest
from aiokafka.errors import KafkaConnectionError
from scripted_broker import ScriptedBroker

from staticconsumer import _aiokafka
from staticconsumer import protocol as p
from staticconsumer.errors import ResponseTooLargeError
from staticconsumer.testing.proxy import FaultProxy, ResponseFrame, StreamedFrame

MB = 1024 * 1024


@pytest.fixture
async def proxy() -> AsyncIterator[FaultProxy]:
    scripted = await ScriptedBroker().start()
    started = FaultProxy("127.0.0.1", scripted.port).start()
    yield started
    started.close()
    await scripted.close()


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


async def test_oversized_frames_are_one_warning_naming_the_broker(
    proxy: FaultProxy, caplog: pytest.LogCaptureFixture
) -> None:
    proxy.on_response(
        lambda frame: (
            StreamedFrame(bytes_per_second=256 * MB, chunk_bytes=MB)
            if frame.api_key == p.FindCoordinatorResponse.API_KEY
            else None
        )
    )
    for _ in range(4):  # four retries, each on a new connection
        conn = await _aiokafka.open_connection("127.0.0.1", proxy.port, max_response_bytes=MB)
        with pytest.raises(ResponseTooLargeError) as caught:
            await _aiokafka.send_on_connection(conn, p.FindCoordinatorRequest(key="g"), max_version=2)
        assert _aiokafka.is_peer_fault(caught.value)
    (said,) = _warnings(caplog)
    assert said.startswith(f"Kafka broker 127.0.0.1:{proxy.port} sent an oversized response")
    assert "claims 2147483647 bytes" in said
    assert "logged at most once every 60 s" in said
    assert not [r for r in caplog.records if r.exc_info]


async def test_an_unreadable_response_is_one_warning_and_no_traceback(
    proxy: FaultProxy, caplog: pytest.LogCaptureFixture
) -> None:
    def garble(frame: ResponseFrame) -> bytes | None:
        if frame.api_key != p.FindCoordinatorResponse.API_KEY:
            return None
        return frame.payload[:4] + b"\xff" * 64  # its correlation id, then a header that cannot parse

    proxy.on_response(garble)
    errors = []
    for _ in range(5):
        conn = await _aiokafka.open_connection("127.0.0.1", proxy.port)
        with pytest.raises(KafkaConnectionError) as caught:
            await _aiokafka.send_on_connection(conn, p.FindCoordinatorRequest(key="g"), max_version=3)
        errors.append(caught.value)
    assert all(_aiokafka.is_peer_fault(error) for error in errors), "the broker answered: no outage"
    (said,) = _warnings(caplog)
    assert said.startswith(f"Kafka broker 127.0.0.1:{proxy.port} sent a response that could not be read")
    assert "DecodeError" in said
    assert not [r for r in caplog.records if r.exc_info], "aiokafka printed a traceback per retry"
    assert not [r for r in caplog.records if "Unexpected exception" in r.getMessage()]


def test_a_dropped_or_refused_connection_is_no_peer_fault() -> None:
    dropped = KafkaConnectionError("Connection at 10.0.0.1:9092 closed")
    assert not _aiokafka.is_peer_fault(dropped)
    dropped.__cause__ = ConnectionResetError(104, "reset by peer")
    assert not _aiokafka.is_peer_fault(dropped)
    garbled = KafkaConnectionError("Connection at 10.0.0.1:9092 closed")
    garbled.__cause__ = ValueError("not a response")
    assert _aiokafka.is_peer_fault(garbled)

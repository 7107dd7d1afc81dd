"""``_aiokafka.trace_wire`` (the bounce member's ``--trace``): every request over an aiokafka connection and
every connection attempt is reported with its port, api key and version. The process-wide patches are
undone after each test (monkeypatch holds the originals)."""

from __future__ import annotations

import socket
from typing import Any

import aiokafka.client
import aiokafka.conn
import aiokafka.errors
import pytest
from aiokafka.conn import AIOKafkaConnection

from staticconsumer import _aiokafka


@pytest.fixture
def traced(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[tuple[Any, ...]]]:
    for owner, name in (
        (AIOKafkaConnection, "send"),
        (AIOKafkaConnection, "connect"),
    ):
        monkeypatch.setattr(owner, name, getattr(owner, name))
    seen: dict[str, list[tuple[Any, ...]]] = {"request": [], "connect": []}
    return seen


class _Request:
    API_KEY = 11

    def prepare(self, versions: dict[int, tuple[int, int]]) -> Any:
        prepared = type("Prepared", (), {"API_VERSION": versions[self.API_KEY][1]})
        return prepared()


async def test_a_request_is_reported_with_its_api_version_and_broker_port(
    traced: dict[str, list[tuple[Any, ...]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def answer() -> str:
        return "answer"

    def send(self: Any, request: Any, expect_response: bool = True) -> Any:
        request.prepare({11: (0, 9)})  # as aiokafka's send does with the connection's versions
        return answer()

    monkeypatch.setattr(AIOKafkaConnection, "send", send)
    _aiokafka.trace_wire(lambda *a: traced["request"].append(a), lambda *a: traced["connect"].append(a))
    conn = AIOKafkaConnection("127.0.0.1", 9092)
    assert await conn.send(_Request()) == "answer"
    ((api, version, port, sent, took),) = traced["request"]
    assert (api, version, port) == (11, 9, 9092)
    assert sent > 0
    assert took >= 0


async def test_a_connection_attempt_is_reported_even_when_it_fails(
    traced: dict[str, list[tuple[Any, ...]]],
) -> None:
    _aiokafka.trace_wire(lambda *a: traced["request"].append(a), lambda *a: traced["connect"].append(a))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again at once: nothing listens there
    with pytest.raises((OSError, aiokafka.errors.KafkaConnectionError)):
        await aiokafka.client.create_conn("127.0.0.1", port)
    ((reported, began, took),) = traced["connect"]
    assert reported == port
    assert began > 0
    assert took >= 0
    assert traced["request"] == []

"""The Kafka sink's bounded buffer without a broker: writes never wait, overflow is counted."""

from __future__ import annotations

import socket
import time

from staticconsumer.eventlog import KafkaSink


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_full_buffer_drops_and_counts_without_waiting() -> None:
    sink = KafkaSink(
        "membership",
        {"bootstrap_servers": f"127.0.0.1:{_closed_port()}", "request_timeout_ms": 1000},
        capacity=5,
        close_timeout=0.5,
    )
    started = time.perf_counter()
    for _ in range(10_000):
        sink.write(b'{"type":"joining"}\n', b"orders")
    assert time.perf_counter() - started < 1.0, "10,000 writes to an unreachable broker must not wait"
    assert (sink.queued, sink.dropped) == (5, 9_995)
    await sink.aclose()
    assert (sink.dropped, sink.sent) == (10_000, 0), "records still queued at close are counted, not lost"
    sink.write(b"{}\n", b"orders")
    assert sink.dropped == 10_001, "a write after close is counted too"

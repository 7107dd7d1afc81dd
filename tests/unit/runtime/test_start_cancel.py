"""start() is cancellable while the membership thread bootstraps: against a server that accepts and never
answers, a start cancelled after half a second returns at once (not after request.timeout.ms), the thread
ends, and the cancel is not reported as a failure."""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from staticconsumer import StaticConsumer


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A listener that takes connections and never answers (a hung broker, or the wrong port)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    try:
        yield f"127.0.0.1:{server.getsockname()[1]}"
    finally:
        server.close()


def _membership_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("staticconsumer-membership-cancel")]


@pytest.mark.parametrize("how", ["wait_for", "task.cancel"])
async def test_a_start_cancelled_during_bootstrap_ends_at_once(
    silent_server: str, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    consumer = StaticConsumer(
        "t",
        bootstrap_servers=silent_server,
        group_id=f"cancel-{how}",
        group_instance_id="i-0",
        request_timeout_ms=20_000,
    )
    started = time.monotonic()
    if how == "wait_for":
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(consumer.start(), 0.5)
    else:
        task = asyncio.create_task(consumer.start())
        await asyncio.sleep(0.5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    took = time.monotonic() - started
    assert took < 5, f"start() took {took:.1f} s to give up after a cancel (request.timeout.ms is 20 s)"
    await consumer.stop()
    deadline = time.monotonic() + 5
    while _membership_threads():
        assert time.monotonic() < deadline, "the membership thread still runs"
        await asyncio.sleep(0.05)
    failures = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not failures, [r.getMessage() for r in failures]

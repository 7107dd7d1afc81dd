"""A TCP connect pending after the broker answered another consumer is given up and made again (issue 27).

The connects are futures the test completes; the clock is an input, so nothing waits the 0.2 s bound."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator

import pytest

from staticconsumer._aiokafka import _connect_retrying
from staticconsumer.connection.reconnect import ABANDON_RETRIES, ReconnectBackoff

KEY = "returning:9092"


def _backoffs() -> tuple[ReconnectBackoff, ReconnectBackoff]:
    """A consumer that failed (``told``) and another one that will bring the news."""
    told = ReconnectBackoff(50, 1000, jitter=lambda: 1.0, stagger=lambda: 0.0)
    news = ReconnectBackoff(50, 1000, jitter=lambda: 1.0)
    for backoff in (told, news):
        for step in range(8):
            assert backoff.begin(KEY, step)
            backoff.failed(KEY, step)
    return told, news


class Connects:
    """Each call a connect that stays pending until the test settles it."""

    def __init__(self) -> None:
        self.made: list[asyncio.Future[str]] = []

    def __call__(self) -> asyncio.Future[str]:
        self.made.append(asyncio.get_running_loop().create_future())
        return self.made[-1]


def _clock(times: Iterator[float]) -> Callable[[], float]:
    last = [0.0]

    def clock() -> float:
        last[0] = next(times, last[0])
        return last[0]

    return clock


async def _until(condition: Callable[[], bool]) -> None:
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("never happened")


async def test_a_connect_pending_when_the_news_comes_is_made_again_and_the_new_one_counts() -> None:
    told, news = _backoffs()
    connects = Connects()
    # the attempt begins at 10.0; by the news's look (10.5) it has been pending past 10.0 + 0.2
    clock = _clock(iter([10.0, 10.5]))
    task = asyncio.create_task(_connect_retrying(connects, told, KEY, clock=clock, stagger=lambda: 0.0))
    await _until(lambda: len(connects.made) == 1)
    for _ in range(5):
        await asyncio.sleep(0)
    assert not task.done(), "nobody reached the broker yet: the connect is left to the kernel"
    # the news comes from another consumer's thread (a membership thread's loop)
    teller = threading.Thread(target=news.connected, args=(KEY, 10.0, 0.0005))
    teller.start()
    teller.join()
    await _until(lambda: len(connects.made) == 2)
    assert connects.made[0].cancelled(), "the pending connect is given up"
    connects.made[1].set_result("transport")
    assert await task == "transport"


async def test_without_news_the_connect_is_awaited_as_it_is() -> None:
    told, _ = _backoffs()
    connects = Connects()
    task = asyncio.create_task(_connect_retrying(connects, told, KEY, stagger=lambda: 0.0))
    await _until(lambda: len(connects.made) == 1)
    connects.made[0].set_exception(ConnectionRefusedError(111, "refused"))
    with pytest.raises(ConnectionRefusedError):
        await task
    assert len(connects.made) == 1


async def test_a_connect_within_its_bound_is_not_cut_short() -> None:
    told, news = _backoffs()
    news.connected(KEY, 10.0, 0.0005)
    connects = Connects()
    clock = _clock(iter([10.0, 10.05]))  # 50 ms in: within the 0.2 s bound
    task = asyncio.create_task(_connect_retrying(connects, told, KEY, clock=clock, stagger=lambda: 0.0))
    await _until(lambda: len(connects.made) == 1)
    connects.made[0].set_result("transport")
    assert await task == "transport"
    assert len(connects.made) == 1


async def test_after_the_retries_the_last_connect_is_left_to_the_kernel() -> None:
    """Connects per attempt stay bounded: 1 + ABANDON_RETRIES, then no more cutting short."""
    told, news = _backoffs()
    news.connected(KEY, 0.0, 0.0005)
    connects = Connects()
    clock = _clock(iter([10.0 * n for n in range(1, 100)]))  # every look: long past any bound
    task = asyncio.create_task(_connect_retrying(connects, told, KEY, clock=clock, stagger=lambda: 0.0))
    await _until(lambda: len(connects.made) == ABANDON_RETRIES + 1)
    for _ in range(20):
        await asyncio.sleep(0)
    assert len(connects.made) == ABANDON_RETRIES + 1
    assert all(made.cancelled() for made in connects.made[:-1])
    connects.made[-1].set_result("transport")
    assert await task == "transport"


async def test_a_cancelled_caller_cancels_its_connect() -> None:
    """aiokafka's own connect timeout cancels the wait: the connect under it must not live on."""
    told, _ = _backoffs()
    connects = Connects()
    task = asyncio.create_task(_connect_retrying(connects, told, KEY, stagger=lambda: 0.0))
    await _until(lambda: len(connects.made) == 1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await _until(lambda: connects.made[0].cancelled())


async def test_the_connection_that_worked_carries_the_callers_protocol() -> None:
    """A given-up try must not close aiokafka's protocol (one per connect): each try has its own, and the
    one that worked hands its transport to the caller's protocol, which then talks to the server."""
    from staticconsumer._aiokafka import _ConnectGuard, _RetryingLoop

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(await reader.readexactly(4))
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    told, news = _backoffs()
    news.connected(KEY, 0.0, 0.0005)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    protocol = asyncio.StreamReaderProtocol(reader)
    try:
        guard = _ConnectGuard(told, KEY)
        transport, got = await _RetryingLoop(loop, guard).create_connection(
            lambda: protocol, "127.0.0.1", port
        )
        assert got is protocol
        assert 0 < guard.tcp_s < 5, "the TCP connect's own time, for the news it may carry"
        assert isinstance(transport, asyncio.WriteTransport)
        transport.write(b"ping")
        assert await asyncio.wait_for(reader.readexactly(4), 5) == b"ping"
        transport.close()
    finally:
        server.close()
        await server.wait_closed()


def test_news_for_a_closed_loop_does_not_fail_the_teller() -> None:
    """A consumer whose loop closed under a pending connect leaves its watcher behind: another
    consumer's good connect must still go through."""
    import functools

    from staticconsumer._aiokafka import _tell

    told, news = _backoffs()
    closed = asyncio.new_event_loop()
    closed.close()
    told.watch(KEY, functools.partial(_tell, closed, asyncio.Event()))
    news.connected(KEY, 10.0, 0.001)
    assert told.abandon_after(KEY, 10.0, 0) == 10.2

"""The process's one membership thread: runs share it, end alone, and take their leftovers with them."""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading
import time

import pytest

from staticconsumer.runtime import loop_thread

WHO: contextvars.ContextVar[str] = contextvars.ContextVar("who", default="nobody")


def _wait_until(check: object, within: float = 5.0) -> None:
    deadline = time.monotonic() + within
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


def test_runs_share_one_thread_which_ends_after_the_last_run() -> None:
    threads: list[threading.Thread] = []
    release = threading.Event()

    async def run() -> None:
        threads.append(threading.current_thread())
        await asyncio.to_thread(release.wait)

    first = loop_thread.submit(run)
    second = loop_thread.submit(run)
    _wait_until(lambda: len(threads) == 2)
    assert threads[0] is threads[1] is not threading.current_thread()
    assert threads[0].name == loop_thread.THREAD_NAME
    release.set()
    first.result(5)
    second.result(5)
    _wait_until(lambda: not threads[0].is_alive())
    assert not loop_thread.thread_alive()

    later: list[threading.Thread] = []

    async def again() -> None:
        later.append(threading.current_thread())

    loop_thread.submit(again).result(5)
    assert later[0] is not threads[0], "a run after the last one ended gets a new thread"


def test_only_the_last_runs_future_names_the_thread_which_joining_ends() -> None:
    """A consumer closed last leaves no thread behind (a Ctrl-C'd sync consumer's process lists only its
    main thread): the last run's future names the ending thread, which join_if_last waits for."""
    first_may_end, second_may_end = threading.Event(), threading.Event()

    async def waits_for(event: threading.Event) -> None:
        await asyncio.to_thread(event.wait)

    first = loop_thread.submit(lambda: waits_for(first_may_end))
    second = loop_thread.submit(lambda: waits_for(second_may_end))
    _wait_until(loop_thread.thread_alive)
    first_may_end.set()
    assert first.result(5) is None, "another run still holds the thread"
    second_may_end.set()
    ended = second.result(5)
    assert ended is not None
    assert ended.name == loop_thread.THREAD_NAME
    asyncio.run(loop_thread.join_if_last(ended, 5))
    assert not ended.is_alive()
    assert loop_thread.THREAD_NAME not in {t.name for t in threading.enumerate()}


def test_a_failing_or_cancelled_run_ends_alone(caplog: pytest.LogCaptureFixture) -> None:
    steps = 0
    stop = threading.Event()
    cancelled = threading.Event()
    task: list[asyncio.Task[None]] = []

    async def steady() -> None:
        nonlocal steps
        while not stop.is_set():
            steps += 1
            await asyncio.sleep(0.01)

    async def failing() -> None:
        await asyncio.sleep(0.02)
        raise RuntimeError("boom")

    async def cancellable() -> None:
        current = asyncio.current_task()
        assert current is not None
        task.append(current)
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    running = loop_thread.submit(steady)
    loop_thread.submit(failing).result(5)
    assert "a membership run failed" in caplog.text
    ended = loop_thread.submit(cancellable)
    _wait_until(lambda: bool(task))
    task[0].get_loop().call_soon_threadsafe(task[0].cancel)
    ended.result(5)
    assert cancelled.is_set()
    before = steps
    _wait_until(lambda: steps > before + 3)
    assert not running.done()
    stop.set()
    running.result(5)


def test_a_runs_leftover_tasks_are_reaped_at_its_end_and_context_stays_its_own() -> None:
    leftover_cancelled = threading.Event()
    seen: dict[str, str] = {}
    other_stop = threading.Event()
    kept: list[asyncio.Future[None]] = []

    async def linger() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            leftover_cancelled.set()
            raise

    async def leaves_a_task() -> None:
        WHO.set("leaver")
        kept.append(asyncio.ensure_future(linger()))  # never awaited, never cancelled by the run itself
        await asyncio.sleep(0)

    async def other() -> None:
        seen["other"] = WHO.get()
        await asyncio.to_thread(other_stop.wait)

    WHO.set("application")
    running = loop_thread.submit(other)
    loop_thread.submit(leaves_a_task).result(5)
    assert leftover_cancelled.is_set()
    assert seen["other"] == "nobody", "neither the application's context nor another run's"
    assert not running.done()
    other_stop.set()
    running.result(5)


def test_a_forked_child_starts_a_thread_of_its_own() -> None:
    hold = threading.Event()

    async def held() -> None:
        await asyncio.to_thread(hold.wait)

    async def nothing() -> None:
        return None

    running = loop_thread.submit(held)
    _wait_until(loop_thread.thread_alive)
    child = os.fork()
    if child == 0:  # the parent's thread does not exist here: a run must not be posted to its loop
        code = 1
        try:
            loop_thread.submit(nothing).result(5)
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)
    hold.set()
    running.result(5)
    assert os.waitstatus_to_exitcode(status) == 0

"""The one process-wide membership loop thread: every consumer's membership runs as a task on it.

A thread and an event loop per consumer cost an idle member its own loop turns, thread wake-ups and GIL
handoffs beside its heartbeats (issue 27: idle CPU per member above aiokafka's, whose members all share
the application's loop). The thread starts with the first consumer's membership and ends when the last
one's run has finished; a consumer started later gets a new thread then.

Each consumer's run is a task of its own, in a context of its own (``contextvars``), so one run's failure
or cancellation ends that run only. What a run left behind (tasks its clients spawned and did not reap)
is cancelled when the run ends, as ``asyncio.run`` does for a loop of its own: tasks are counted to the
run whose context created them (:data:`_RUN`, read by the loop's task factory).

Nothing on this loop may block: an application blocking its own loop never reaches it, but one member's
CPU-heavy step would delay every other member's heartbeats. The heaviest one, a leader's assignment, runs on a
worker thread: the built-in assignors take ~1-2 ms at 300 members x 600 partitions, but a user's own
assignor may take seconds (a slow one blocked every consumer of the process here, which the
cooperative regression test of a leader still computing caught).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import logging
import os
import threading
from collections.abc import Callable, Coroutine, Generator
from typing import Any

log = logging.getLogger("staticconsumer.runtime")

THREAD_NAME = "staticconsumer-membership"

_RUN: contextvars.ContextVar[set[asyncio.Task[Any]] | None] = contextvars.ContextVar(
    "staticconsumer_membership_run", default=None
)
"""The tasks of the run whose context is current (None outside any run)."""


class _Shared:
    """One loop on one daemon thread, alive while it has runs."""

    def __init__(self) -> None:
        self.runs = 0
        """Runs submitted and not yet finished (guarded by ``_lock``)."""
        self.loop = asyncio.new_event_loop()
        self.loop.set_task_factory(_task_factory)
        started: concurrent.futures.Future[None] = concurrent.futures.Future()
        self.thread = threading.Thread(target=self._main, args=(started,), name=THREAD_NAME, daemon=True)
        self.thread.start()
        started.result()

    def _main(self, started: concurrent.futures.Future[None]) -> None:
        loop = self.loop
        asyncio.set_event_loop(loop)
        loop.call_soon(started.set_result, None)
        try:
            loop.run_forever()
        finally:
            try:
                _cancel_all(loop)
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.run_until_complete(loop.shutdown_default_executor())
            finally:
                asyncio.set_event_loop(None)
                loop.close()


def _task_factory(
    loop: asyncio.AbstractEventLoop,
    coro: Coroutine[Any, Any, Any] | Generator[Any, None, Any],
    /,
    **kwargs: Any,
) -> asyncio.Task[Any]:
    """Count each task to the run that created it, so the run's end can reap what it left behind."""
    task: asyncio.Task[Any] = asyncio.Task(coro, loop=loop, **kwargs)
    run = kwargs["context"].get(_RUN) if kwargs.get("context") is not None else _RUN.get()
    if run is not None:
        run.add(task)
        task.add_done_callback(run.discard)
    return task


def _cancel_all(loop: asyncio.AbstractEventLoop) -> None:
    tasks = asyncio.all_tasks(loop)
    for task in tasks:
        task.cancel()
    if tasks:
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))


_lock = threading.Lock()
_shared: _Shared | None = None


Finished = concurrent.futures.Future[threading.Thread | None]
"""Set when a run has ended: to the thread to join when it was the thread's last run, else None."""


def submit(main: Callable[[], Coroutine[Any, Any, None]]) -> Finished:
    """Run ``main()`` as a task of its own, in a context of its own, on the shared loop thread (started
    if none runs). The future is set once the run has ended and every task it created has finished;
    ``main`` must report its own errors (one that escapes it is logged here). Its value is the thread,
    when this run was its last one and it is ending, for the caller to join (:func:`join_if_last`): a
    consumer closed last leaves no thread behind, as one with a thread of its own did."""
    global _shared
    with _lock:
        shared = _shared
        if shared is None:
            shared = _shared = _Shared()
        shared.runs += 1
    finished: Finished = concurrent.futures.Future()
    context = contextvars.Context()  # the application's context variables stay on its side, as on a thread
    context.run(_RUN.set, set())
    shared.loop.call_soon_threadsafe(_start, shared, main, finished, context)
    return finished


def _start(
    shared: _Shared,
    main: Callable[[], Coroutine[Any, Any, None]],
    finished: Finished,
    context: contextvars.Context,
) -> None:
    shared.loop.create_task(_run(shared, main, finished), context=context)


async def _run(
    shared: _Shared,
    main: Callable[[], Coroutine[Any, Any, None]],
    finished: Finished,
) -> None:
    try:
        try:
            await main()
        except asyncio.CancelledError:
            pass  # cancelled: its own end, nothing to report
        except BaseException:  # one run's end must never end the thread's loop
            log.exception("a membership run failed")
        run = _RUN.get()
        current = asyncio.current_task()
        left = [task for task in run or () if task is not current and not task.done()]
        for task in left:  # what its clients spawned and never reaped, as asyncio.run cancels them
            task.cancel()
        if left:
            await asyncio.gather(*left, return_exceptions=True)
    finally:
        last = _release(shared)
        if not finished.done():
            finished.set_result(shared.thread if last else None)


def _release(shared: _Shared) -> bool:
    """One run ended: the last one stops the loop (a consumer started after that gets a new thread);
    whether it was the last."""
    global _shared
    with _lock:
        shared.runs -= 1
        if shared.runs > 0:
            return False
        if _shared is shared:
            _shared = None
    shared.loop.call_soon(shared.loop.stop)
    return True


async def join_if_last(ended: threading.Thread | None, within_seconds: float) -> None:
    """Wait (without blocking the caller's loop) for the thread a run's future named, if any: the last
    run's thread then ends within moments (its loop stops, leftovers are cancelled, its executor shut)."""
    if ended is not None and ended is not threading.current_thread():
        await asyncio.to_thread(ended.join, within_seconds)


def _forget_after_fork() -> None:
    """A forked child has no such thread: its first consumer starts its own."""
    global _lock, _shared
    _lock = threading.Lock()
    _shared = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


def thread_alive() -> bool:
    """Whether the shared membership thread runs (tests, diagnostics)."""
    with _lock:
        shared = _shared
    return shared is not None and shared.thread.is_alive()

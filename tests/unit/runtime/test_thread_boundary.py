"""The thread boundary's rule for shared state (runtime/thread.py): the Subscription is one frozen value
swapped whole, so a reader on the other thread never sees half of a replace; the cache of explained errors,
written by both threads, gives one exception per error and stays small."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import assignors
from staticconsumer.errors import InvalidSessionTimeoutError
from staticconsumer.runtime import Subscription
from staticconsumer.runtime.thread import EXPLAINED_KEPT, MembershipThread
from staticconsumer.settings import Settings


@pytest.fixture
def fast_switching() -> Iterator[None]:
    """Switch threads as often as CPython allows, so a torn read has every chance to show."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


@pytest.mark.usefixtures("fast_switching")
def test_a_reader_never_sees_half_of_a_replace() -> None:
    subscription = Subscription({"orders"})
    stop = threading.Event()

    def flip() -> None:
        while not stop.is_set():
            subscription.replace(pattern="orders-.*")
            subscription.replace({"orders"})

    writer = threading.Thread(target=flip)
    writer.start()
    seen: set[tuple[frozenset[str], bool]] = set()
    try:
        for _ in range(200_000):
            seen.add((subscription.named, subscription.is_empty))
    finally:
        stop.set()
        writer.join()
    assert seen <= {(frozenset({"orders"}), False), (frozenset(), False)}
    assert len(seen) == 2, "the reader saw both subscriptions (else the check proves nothing)"


def test_a_pattern_refresh_keeps_its_names_and_pattern_together() -> None:
    subscription = Subscription(pattern="orders-.*")
    assert subscription.refresh(["orders-eu", "orders-us", "payments"]) == (
        frozenset({"orders-eu", "orders-us"}),
        frozenset(),
    )
    assert subscription.refresh(["orders-eu"]) == (frozenset(), frozenset({"orders-us"}))
    assert subscription.topics == {"orders-eu"}
    assert subscription.named == frozenset()
    subscription.replace({"payments"})
    assert subscription.topics == subscription.named == {"payments"}
    assert subscription.pattern is None


def _thread() -> MembershipThread:
    settings = Settings(bootstrap_servers=("127.0.0.1:9",), group_id="g", group_instance_id="i-0")
    owner: Any = object()
    chosen = [assignors.create(name) for name in settings.assignors]
    return MembershipThread(
        settings=settings, owner=owner, assignors=chosen, subscription=Subscription({"t"})
    )


def test_one_error_explained_on_both_threads_is_one_exception() -> None:
    membership = _thread()
    error = InvalidSessionTimeoutError("refused")
    results: list[Exception] = []
    barrier = threading.Barrier(4)

    def explain() -> None:
        barrier.wait()
        results.append(membership._explain(error))

    workers = [threading.Thread(target=explain) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert all(result is results[0] for result in results)
    assert results[0] is not error
    assert "session_timeout_ms" in str(results[0])


def test_the_explained_errors_kept_stay_few() -> None:
    membership = _thread()
    errors = [InvalidSessionTimeoutError(f"refused {n}") for n in range(EXPLAINED_KEPT * 4)]
    explained = [membership._explain(error) for error in errors]
    assert len(membership._explained) == EXPLAINED_KEPT
    assert membership._explain(errors[-1]) is explained[-1], "the newest are kept"


class _StopRecorder:
    def __init__(self) -> None:
        self.stops: list[bool] = []

    def stop(self, leave_group: bool) -> None:
        self.stops.append(leave_group)


def test_a_step_after_the_application_loop_closed_stops_the_membership_once() -> None:
    """An idle member's thread has no timer of its own for this while the machine runs: its steps (a
    heartbeat at the latest) notice an application that exited without stop()."""
    membership = _thread()
    recorder = _StopRecorder()
    membership._membership = recorder  # type: ignore[assignment]
    membership._running = True
    membership._polled_at = 12.5
    app_loop = asyncio.new_event_loop()
    membership._app_loop = app_loop
    assert membership._at_step() == 12.5
    assert recorder.stops == [], "a running application loop is no orphan"
    app_loop.close()
    assert membership._at_step() == 12.5
    assert membership._at_step() == 12.5
    assert recorder.stops == [False], "stopped once, without leaving (static membership is kept)"

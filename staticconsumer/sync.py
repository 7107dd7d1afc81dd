"""StaticConsumer for synchronous code, with kafka-python 3.0's ``KafkaConsumer`` shape.

The asyncio ``staticconsumer.StaticConsumer`` runs on an event loop in a thread of its own, started with
anyio's blocking portal; each method here is a blocking call into that loop, so exceptions (and
cancellation, on Ctrl-C) cross between the two. Heartbeats stay on the consumer's membership thread: a
worker that blocks for minutes between polls keeps its membership, within ``max_poll_interval_ms``.
anyio is imported by this module only, so ``import staticconsumer`` does not pay for it.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import math
import signal
import threading
import time
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from anyio.from_thread import BlockingPortal, start_blocking_portal

from staticconsumer import _inputs
from staticconsumer.connection import ConnectionState
from staticconsumer.consumer import StaticConsumer as AsyncStaticConsumer
from staticconsumer.errors import ConfigurationError, ConsumerStoppedError
from staticconsumer.listener import ConsumerRebalanceListener
from staticconsumer.membership import TopicPartition
from staticconsumer.settings import Settings

__all__ = ["StaticConsumer", "TopicPartition"]

T = TypeVar("T")

Records = dict[TopicPartition, list[Any]]
CommitCallback = Callable[[Mapping[Any, Any] | None, BaseException | None], object]

KAFKA_PYTHON_ASSIGNORS = "kafka.coordinator.assignors."
"""Where kafka-python defines its assignor classes; each has a protocol name (``name``) that one of ours
shares, wire format included, so ``partition_assignment_strategy=`` classes become ``assignors=``."""

ITERATION_WAIT_MS = 1000
"""How long one round trip into the loop waits for a record while iterating without a timeout."""


class StaticConsumer:
    """A blocking consumer with static group membership: kafka-python's ``KafkaConsumer`` calls.

    ``StaticConsumer("orders", bootstrap_servers="k:9092", group_id="billing",
    group_instance_id="billing-0")`` connects and joins (as kafka-python's constructor connects); every
    setting of the async consumer is a keyword here too. ``consumer_timeout_ms`` is kafka-python's: how
    long iteration waits for a record before it stops (forever by default). ``partition_assignment_strategy``
    takes kafka-python's assignor classes or protocol names. ``listener`` (or ``subscribe(listener=)``) is
    an object with plain ``on_partitions_revoked``/``on_partitions_assigned`` (and optionally
    ``on_partitions_lost``) methods; one that raises makes the next ``poll()``/``next()`` raise it.

    ``handle_sigterm`` (on by default, main thread only, when SIGTERM has no handler yet) makes SIGTERM
    raise ``SystemExit(143)`` as Ctrl-C raises KeyboardInterrupt: either one during a blocking ``poll()``
    or iteration closes the consumer (a static member sends no LeaveGroup) before it propagates.
    """

    def __init__(
        self,
        *topics: str,
        consumer_timeout_ms: float = math.inf,
        handle_sigterm: bool = True,
        listener: Any = None,
        **configs: Any,
    ) -> None:
        options = _kafka_python_options(configs)
        wrapped = None if listener is None else _Listener(self, listener)
        self._open(
            lambda: AsyncStaticConsumer(*topics, listener=wrapped, **options),
            consumer_timeout_ms,
            handle_sigterm,
        )

    @classmethod
    def from_env(
        cls,
        *topics: str,
        consumer_timeout_ms: float = math.inf,
        handle_sigterm: bool = True,
        listener: Any = None,
        **overrides: Any,
    ) -> StaticConsumer:
        """Settings from ``KAFKA_*`` environment variables, as ``staticconsumer.StaticConsumer.from_env``
        (``prefix=``, ``environ=``, ``pattern=`` and keyword overrides included)."""
        self = cls.__new__(cls)
        options = _kafka_python_options(overrides)
        wrapped = None if listener is None else _Listener(self, listener)
        self._open(
            lambda: AsyncStaticConsumer.from_env(*topics, listener=wrapped, **options),
            consumer_timeout_ms,
            handle_sigterm,
        )
        return self

    def _open(
        self, build: Callable[[], AsyncStaticConsumer], consumer_timeout_ms: float, handle_sigterm: bool
    ) -> None:
        if not isinstance(consumer_timeout_ms, (int, float)) or consumer_timeout_ms < 0:
            raise ConfigurationError(
                f"consumer_timeout_ms must be a number of milliseconds >= 0, not {consumer_timeout_ms!r}"
            )
        self._iteration_timeout = consumer_timeout_ms / 1000
        self._listener_error: BaseException | None = None
        self._commits_done: collections.deque[tuple[concurrent.futures.Future[None], Any, Any]] = (
            collections.deque()
        )
        self._closed = False
        self._previous_sigterm: Any = None
        self._stack = contextlib.ExitStack()
        self._portal: BlockingPortal = self._stack.enter_context(
            start_blocking_portal(name="staticconsumer-sync")
        )
        try:
            self._consumer: AsyncStaticConsumer = self._portal.call(_built, build)
            if handle_sigterm:  # before joining: SIGTERM while the constructor waits closes cleanly too
                self._take_sigterm()
            self._blocking(self._consumer.start)
        except BaseException:
            self._closed = True
            self._stack.close()
            self._give_back_sigterm()
            raise

    # -- the bridge -----------------------------------------------------------------------------

    def _blocking(
        self, call: Callable[..., Any], *args: Any, unread: Callable[[Any], None] | None = None
    ) -> Any:
        """Run ``call(*args)`` (a coroutine function) on the loop and wait for it.

        Ctrl-C or SIGTERM while waiting cancels it and closes the consumer without a LeaveGroup, then
        propagates. Records the call returned that the caller will never see (it finished just as the
        signal came) are handed to ``unread``, which seeks back to them so close() does not commit them.
        """
        if self._closed:
            raise ConsumerStoppedError("the consumer is closed")
        ended = threading.Event()
        outcome: list[Any] = []

        async def run() -> Any:
            try:
                result = await call(*args)
                outcome.append(result)  # no await between the two: a cancel lands before or not at all
                return result
            finally:
                ended.set()

        future = self._portal.start_task_soon(run)
        try:
            return future.result()
        except (KeyboardInterrupt, SystemExit):
            future.cancel()
            ended.wait(self.settings.request_timeout_ms / 1000)
            if outcome and unread is not None:
                with contextlib.suppress(Exception):  # revoked meanwhile: read again by its next owner
                    self._portal.call(unread, outcome[0])
            self.close()
            raise

    def _on_loop(self, call: Callable[..., T], *args: Any) -> T:
        """Run a plain method of the async consumer on its loop (it is not thread-safe)."""
        if self._closed:
            raise ConsumerStoppedError("the consumer is closed")
        return self._portal.call(call, *args)

    def _raise_listener_error(self) -> None:
        error, self._listener_error = self._listener_error, None
        if error is not None:
            raise error

    def _take_sigterm(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
            return  # the application (Celery, gunicorn...) handles it
        self._previous_sigterm = signal.signal(signal.SIGTERM, _exit_on_sigterm)

    def _give_back_sigterm(self) -> None:
        if self._previous_sigterm is not None and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self._previous_sigterm)
            self._previous_sigterm = None

    # -- lifecycle ------------------------------------------------------------------------------

    def __enter__(self) -> StaticConsumer:
        return self

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        self.close()

    def close(self, *, leave_group: bool = False) -> None:
        """Commit (with auto-commit), stop, and end the loop's thread. A static member sends no
        LeaveGroup unless ``leave_group`` (scale-down: this instance will not come back)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._portal.call(self._consumer.stop, leave_group)
        finally:
            self._stack.close()
            self._give_back_sigterm()
            self._run_commit_callbacks()

    # -- records --------------------------------------------------------------------------------

    def poll(
        self, timeout_ms: int = 0, max_records: int | None = None, update_offsets: bool = True
    ) -> Records:
        """``{TopicPartition: [records]}`` from owned partitions, waiting up to ``timeout_ms``.

        Raises what a rebalance listener raised since the last call, and the consumer's errors.
        ``update_offsets`` is kafka-python's and must stay True: returned records always count as
        consumed for ``commit()``.
        """
        if not update_offsets:
            raise ConfigurationError(
                "poll(update_offsets=False) is not supported: records returned count as consumed"
            )
        self._run_commit_callbacks()
        try:
            records: Records = self._blocking(
                _getmany, self._consumer, timeout_ms, max_records, unread=self._unread_batch
            )
        finally:
            self._raise_listener_error()
        self._run_commit_callbacks()
        return records

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        """The next record; StopIteration after ``consumer_timeout_ms`` without one, or once closed."""
        if self._closed:
            raise StopIteration
        self._run_commit_callbacks()
        try:
            record = self._blocking(
                _next_record, self._consumer, self._iteration_timeout, unread=self._unread_record
            )
        except ConsumerStoppedError:
            if self._closed:
                raise StopIteration from None
            raise
        finally:
            self._raise_listener_error()
        if record is None:
            raise StopIteration
        return record

    def _unread_batch(self, records: Records) -> None:
        for tp, rows in records.items():
            if rows:
                self._consumer.seek(tp, rows[0].offset)

    def _unread_record(self, record: Any) -> None:
        if record is not None:
            self._consumer.seek(TopicPartition(record.topic, record.partition), record.offset)

    def processing(self, record: Any) -> Any:
        """``with consumer.processing(record):`` runs the block in the record's ``process`` span."""
        return self._consumer.processing(record)

    # -- offsets --------------------------------------------------------------------------------

    def commit(self, offsets: Mapping[Any, Any] | None = None) -> None:
        """Commit ``offsets`` (next offset to read per partition), or the positions of every record
        returned so far; blocks until the coordinator answers."""
        self._blocking(self._consumer.commit, offsets)
        self._run_commit_callbacks()

    def commit_async(
        self, offsets: Mapping[Any, Any] | None = None, callback: CommitCallback | None = None
    ) -> concurrent.futures.Future[None]:
        """Commit without waiting; returns a future. ``callback(offsets, error_or_None)`` runs in the
        caller's thread, at the next ``poll()``, ``next()``, ``commit()`` or ``close()`` after it is done
        (as kafka-python runs it from poll)."""
        if self._closed:
            raise ConsumerStoppedError("the consumer is closed")
        future: concurrent.futures.Future[None] = self._portal.start_task_soon(self._consumer.commit, offsets)
        if callback is not None:
            self._commits_done.append((future, offsets, callback))
        return future

    def _run_commit_callbacks(self) -> None:
        waiting = self._commits_done
        for _ in range(len(waiting)):
            future, offsets, callback = waiting.popleft()
            if not future.done() and not self._closed:
                waiting.append((future, offsets, callback))
                continue
            error = future.exception() if not future.cancelled() else ConsumerStoppedError("commit cancelled")
            callback(offsets, error)

    def committed(self, partition: TopicPartition) -> int | None:
        """The group's committed offset of ``partition``; None when none was committed."""
        result: int | None = self._blocking(self._consumer.committed, partition)
        return result

    def position(self, partition: TopicPartition) -> int:
        """The offset of the next record ``poll()`` returns from ``partition`` (owned)."""
        result: int = self._blocking(self._consumer.position, partition)
        return result

    def highwater(self, partition: TopicPartition) -> int | None:
        return self._on_loop(self._consumer.highwater, partition)

    def beginning_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        result: dict[TopicPartition, int] = self._blocking(self._consumer.beginning_offsets, partitions)
        return result

    def end_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        result: dict[TopicPartition, int] = self._blocking(self._consumer.end_offsets, partitions)
        return result

    def offsets_for_times(self, timestamps: Mapping[TopicPartition, int]) -> dict[TopicPartition, Any]:
        result: dict[TopicPartition, Any] = self._blocking(self._consumer.offsets_for_times, timestamps)
        return result

    def seek(self, partition: TopicPartition, offset: int) -> None:
        self._on_loop(self._consumer.seek, partition, offset)

    def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        self._blocking(self._consumer.seek_to_beginning, *partitions)

    def seek_to_end(self, *partitions: TopicPartition) -> None:
        self._blocking(self._consumer.seek_to_end, *partitions)

    def seek_to_committed(self, *partitions: TopicPartition) -> dict[TopicPartition, int | None]:
        result: dict[TopicPartition, int | None] = self._blocking(
            self._consumer.seek_to_committed, *partitions
        )
        return result

    def pause(self, *partitions: TopicPartition) -> None:
        self._on_loop(self._consumer.pause, *partitions)

    def resume(self, *partitions: TopicPartition) -> None:
        self._on_loop(self._consumer.resume, *partitions)

    def paused(self) -> frozenset[TopicPartition]:
        return self._on_loop(self._consumer.paused)

    # -- subscription and metadata ----------------------------------------------------------------

    def subscribe(
        self, topics: Sequence[str] | frozenset[str] = (), pattern: str | None = None, listener: Any = None
    ) -> None:
        """Subscribe to ``topics`` or a regex ``pattern``, with ``listener`` (plain methods) or none."""
        wrapped = None if listener is None else _Listener(self, listener)
        self._on_loop(self._consumer.subscribe, topics, pattern, wrapped)

    def unsubscribe(self) -> None:
        """Subscribe to nothing; a static member stays in its group (no LeaveGroup)."""
        self._on_loop(self._consumer.unsubscribe)

    def subscription(self) -> frozenset[str]:
        return self._on_loop(self._consumer.subscription)

    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions this member owns now."""
        return self._on_loop(self._consumer.assignment)

    def topics(self) -> set[str]:
        result: set[str] = self._blocking(self._consumer.topics)
        return result

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        return self._on_loop(self._consumer.partitions_for_topic, topic)

    @property
    def settings(self) -> Settings:
        return self._consumer.settings

    @property
    def member_id(self) -> str:
        return self._consumer.member_id

    @property
    def generation(self) -> int:
        return self._consumer.generation

    @property
    def is_leader(self) -> bool:
        return self._consumer.is_leader

    @property
    def connection_state(self) -> ConnectionState:
        return self._consumer.connection_state


class _Listener(ConsumerRebalanceListener):
    """Runs the application's plain listener methods on the loop, keeping what they raise for the
    caller of ``poll()`` (the async consumer logs a listener's error and goes on, as Java does)."""

    def __init__(self, owner: StaticConsumer, listener: Any) -> None:
        _inputs.listener(listener)  # a clear TypeError naming what was given instead
        self._owner = owner
        self._listener = listener

    def on_partitions_revoked(self, revoked: frozenset[TopicPartition]) -> None:
        self._call("on_partitions_revoked", revoked)

    def on_partitions_assigned(self, assigned: frozenset[TopicPartition]) -> None:
        self._call("on_partitions_assigned", assigned)

    def on_partitions_lost(self, lost: frozenset[TopicPartition]) -> None:
        """kafka-python's listeners have no ``on_partitions_lost``: theirs get a revoke, as in Java."""
        has_lost = callable(getattr(self._listener, "on_partitions_lost", None))
        self._call("on_partitions_lost" if has_lost else "on_partitions_revoked", lost)

    def _call(self, name: str, partitions: frozenset[TopicPartition]) -> None:
        method = getattr(self._listener, name, None)
        if method is None:
            return
        try:
            method(partitions)
        except Exception as error:
            if self._owner._listener_error is None:  # the first one is the cause
                self._owner._listener_error = error
            raise


def _built(build: Callable[[], AsyncStaticConsumer]) -> AsyncStaticConsumer:
    """The async consumer, built on the loop it will run on."""
    return build()


async def _getmany(consumer: AsyncStaticConsumer, timeout_ms: int, max_records: int | None) -> Records:
    return await consumer.getmany(timeout_ms=timeout_ms, max_records=max_records)


async def _next_record(consumer: AsyncStaticConsumer, seconds: float) -> Any:
    """One record, or None after ``seconds`` without one. Taken with ``getmany(max_records=1)``
    so no record is ever held here: one returned counts as consumed, and no other one does."""
    deadline = time.monotonic() + seconds
    while True:
        remaining = deadline - time.monotonic()
        wait = ITERATION_WAIT_MS if math.isinf(remaining) else int(min(ITERATION_WAIT_MS, remaining * 1000))
        wait = max(0, wait)
        batch = await consumer.getmany(timeout_ms=wait, max_records=1)
        for records in batch.values():
            if records:
                return records[0]
        if remaining <= 0 or time.monotonic() >= deadline:
            return None


def _exit_on_sigterm(signum: int, frame: types.FrameType | None) -> None:
    """SIGTERM as an exception, so a blocking poll() or loop body unwinds and closes the consumer."""
    raise SystemExit(128 + signum)


def _kafka_python_options(configs: Mapping[str, Any]) -> dict[str, Any]:
    """``configs`` with kafka-python's assignor classes replaced by their protocol names."""
    options = dict(configs)
    strategy = options.get("partition_assignment_strategy")
    if strategy is None:
        return options
    entries = strategy if isinstance(strategy, (tuple, list)) else (strategy,)
    names: list[Any] = []
    for entry in entries:
        module = getattr(entry, "__module__", "")
        name = getattr(entry, "name", None)
        if isinstance(module, str) and module.startswith(KAFKA_PYTHON_ASSIGNORS) and isinstance(name, str):
            names.append(name)
        else:
            names.append(entry)  # a name, or aiokafka's class: the async consumer judges it
    options["partition_assignment_strategy"] = tuple(names)
    return options

"""Record telemetry that imports OpenTelemetry only once the process uses it (issue 18).

A consumer built before anything imported OpenTelemetry holds a ``DeferredRecordTracer``: it costs
what a ``RecordTracer`` without an SDK costs (nothing per record), and at the first ``getmany`` /
``getone`` / ``processing`` after OpenTelemetry's API was imported (an SDK installed after the
consumer was built) it builds the ``RecordTracer`` and hands every call to it, so process spans,
poll spans, record metrics and the lag gauge start then, as they would have with an eager tracer.

``RecordLoop`` (an ``async for`` iterator that tells the tracer when it is left) lives here too: it
needs nothing from OpenTelemetry, and the deferred tracer hands it out before any tracer exists.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span

    from .records import ProcessingBlock, RecordTracer

T = TypeVar("T")

OPENTELEMETRY_API = ("opentelemetry.trace", "opentelemetry.metrics")
"""Imported by any SDK setup, instrumentation or application span: before one of them is, no span or
metric can be recorded anywhere in the process."""


def api_imported() -> bool:
    """Whether OpenTelemetry's trace or metrics API has been imported by anyone (two dict lookups)."""
    modules = sys.modules
    return OPENTELEMETRY_API[0] in modules or OPENTELEMETRY_API[1] in modules


def caller_context() -> Context | None:
    """The context to parent a span the application caused (a ``commit()``), if a span is current;
    None without importing anything while OpenTelemetry's context API was never imported."""
    if "opentelemetry.context" not in sys.modules:
        return None
    from .records import caller_context as current

    return current()


class _LoopTracer(Protocol):
    """What a ``RecordLoop`` calls: ``RecordTracer`` or ``DeferredRecordTracer``."""

    per_record: bool

    def delivered(self, record: Any) -> None: ...

    def loop_left(self) -> None: ...


class RecordLoop(Generic[T]):
    """The iterator of one ``async for`` over records from ``anext`` (``tracer.loop(anext)``; the
    consumer's own is ``_partitions.RecordIteration``, which reads its buffer directly).

    The loop object exists so that leaving the loop is
    noticed: the ``async for`` statement holds the only reference, so when the loop is left by
    ``break``, ``return`` or an exception, CPython drops it at once and ``__del__`` tells the tracer.
    (Other interpreters drop it at their next collection; ``requested()`` and ``close()`` end the
    span in any case.)
    """

    __slots__ = ("_next", "_tracer")

    def __init__(self, tracer: _LoopTracer, anext: Callable[[], Awaitable[T]]) -> None:
        self._tracer = tracer
        self._next = anext

    def __aiter__(self) -> RecordLoop[T]:
        return self

    async def __anext__(self) -> T:
        return await self._next()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self._tracer.loop_left()


class NoProcessing:
    """``processing(record)`` while no tracer exists: a ``with`` block that records nothing."""

    __slots__ = ()

    def __enter__(self) -> Span:
        from opentelemetry import trace  # the caller asked for a span object: the API has one

        return trace.INVALID_SPAN

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        return None


NO_PROCESSING = NoProcessing()


class DeferredRecordTracer:
    """A ``RecordTracer`` that comes into being when OpenTelemetry's API is first imported.

    Takes ``RecordTracer``'s keyword arguments. ``per_record`` mirrors the built tracer's after each
    call that may change it (``requested``, ``polled``, ``processing``), so the consumer's per-record
    path reads one attribute, as it does on a ``RecordTracer``.
    """

    def __init__(self, *, in_use: Callable[[], bool] = api_imported, **options: Any) -> None:
        self._options = options
        self._in_use = in_use
        self.tracer: RecordTracer | None = None
        self.per_record = False

    def _built(self) -> RecordTracer | None:
        tracer = self.tracer
        if tracer is None and self._in_use():
            from .records import RecordTracer

            tracer = self.tracer = RecordTracer(**self._options)
        return tracer

    def requested(self) -> int:
        tracer = self._built()
        if tracer is None:
            return time.time_ns()
        started = tracer.requested()
        self.per_record = tracer.per_record
        return started

    def polled(self, records: Mapping[Any, Sequence[Any]], started_ns: int) -> None:
        tracer = self.tracer
        if tracer is not None:
            tracer.polled(records, started_ns)
            self.per_record = tracer.per_record

    def delivered(self, record: Any) -> None:
        tracer = self.tracer
        if tracer is not None:
            tracer.delivered(record)

    def end(self, error: BaseException | None = None) -> None:
        tracer = self.tracer
        if tracer is not None:
            tracer.end(error)

    def loop(self, anext: Callable[[], Awaitable[T]]) -> RecordLoop[T]:
        return RecordLoop(self, anext)

    def loop_left(self) -> None:
        tracer = self.tracer
        if tracer is not None:
            tracer.loop_left()

    def close(self, error: BaseException | None = None) -> None:
        tracer = self.tracer
        if tracer is not None:
            tracer.close(error)

    def processing(self, record: Any) -> ProcessingBlock | NoProcessing:
        tracer = self._built()
        if tracer is None:
            return NO_PROCESSING
        block = tracer.processing(record)
        self.per_record = tracer.per_record
        return block

"""OpenTelemetry traces and metrics of group membership and of records (opentelemetry-api only).

``StaticConsumer`` attaches a ``TelemetryObserver`` (membership) and a ``RecordTracer`` (records) by
default; both report to the global tracer and meter providers, which do nothing until the application
installs the OpenTelemetry SDK. See docs/telemetry.md for every span, attribute and metric.

Nothing here imports OpenTelemetry until it is used: a process that never touches OpenTelemetry
(no SDK, no ``OTEL_*`` configuration) does not pay for its import at start (issue 18). The names
below load their modules on first access.

The deferred record tracer and the fetcher without instrumentation are defined here too (they were the
modules ``telemetry.deferred`` and ``telemetry.fetcher``): every ``import staticconsumer`` loads them,
and a module costs a finder lookup, a stat and an unmarshal (issue 26).
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import os
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from aiokafka import AIOKafkaConsumer

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span

    from staticconsumer.membership import MembershipObserver, MemberView
    from staticconsumer.membership.actions import Action
    from staticconsumer.membership.events import Event

    from . import attributes
    from .instruments import partition_lag
    from .observer import TelemetryObserver, error_type_of, error_type_of_code
    from .records import ProcessingBlock, ProcessParent, RecordTracer


# -- Deferred record telemetry (was telemetry.deferred) ---------------------------------------------------
#
# Record telemetry that imports OpenTelemetry only once the process uses it (issue 18).
#
# A consumer built before anything imported OpenTelemetry holds a ``DeferredRecordTracer``: it costs
# what a ``RecordTracer`` without an SDK costs (nothing per record), and at the first ``getmany`` /
# ``getone`` / ``processing`` after OpenTelemetry's API was imported (an SDK installed after the
# consumer was built) it builds the ``RecordTracer`` and hands every call to it, so process spans,
# poll spans, record metrics and the lag gauge start then, as they would have with an eager tracer.
#
# ``RecordLoop`` (an ``async for`` iterator that tells the tracer when it is left) lives here too: it
# needs nothing from OpenTelemetry, and the deferred tracer hands it out before any tracer exists.

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


if TYPE_CHECKING:  # a Protocol only type checkers read: no class to build at import (issue 26)

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


# -- The consumer's internal fetcher, out of reach of third-party aiokafka instrumentation (was
# telemetry.fetcher) ------------------------------------------------------------------------------------
#
# The consumer's internal fetcher, out of reach of third-party aiokafka instrumentation.
#
# ``StaticConsumer`` fetches records with an ``AIOKafkaConsumer`` that has no group. An aiokafka
# instrumentation (opentelemetry-instrumentation-aiokafka) wraps ``AIOKafkaConsumer.getone`` and
# ``getmany`` on the class (with wrapt), so it would trace that internal fetcher too: ``receive`` spans
# that end before the application sees the record, parented to the producer, without the group, beside
# the consumer's own ``poll``/``process`` spans. Its wrappers do not honour OpenTelemetry's
# suppress-instrumentation context key (and the SDK's tracer does not check it either), so the fetcher
# is instead an ``AIOKafkaConsumer`` subclass whose ``getone``/``getmany`` are aiokafka's own functions,
# unwrapped: wrapping the base class later does not reach them (the subclass's attributes shadow it),
# and wrappers applied before this module was imported are peeled off (they keep the original under
# ``__wrapped__``, as wrapt and functools.wraps do). The application's own AIOKafkaConsumer and
# AIOKafkaProducer objects stay instrumented.

_FETCH_METHODS = ("getone", "getmany")


def original(cls: type, name: str) -> Any:
    """The function ``cls`` defines as ``name``, without any ``__wrapped__`` layers put around it."""
    for klass in cls.__mro__:
        if name in vars(klass):
            return inspect.unwrap(vars(klass)[name])
    raise AttributeError(f"{cls.__qualname__} has no {name}")


def _uninstrumented(base: type[AIOKafkaConsumer]) -> type[AIOKafkaConsumer]:
    namespace: dict[str, Any] = {name: original(base, name) for name in _FETCH_METHODS}
    namespace["__doc__"] = "AIOKafkaConsumer whose fetch methods no instrumentation wraps (see this module)."
    namespace["__module__"] = __name__
    return type(f"Uninstrumented{base.__name__}", (base,), namespace)


_made: dict[type[Any], type[AIOKafkaConsumer]] = {}


def uninstrumented(base: type[AIOKafkaConsumer]) -> type[AIOKafkaConsumer]:
    """A subclass of an ``AIOKafkaConsumer`` class whose fetch methods are aiokafka's own, unwrapped;
    made once per base class."""
    found = _made.get(base)
    if found is None:
        found = _made[base] = _uninstrumented(base)
    return found


UninstrumentedFetcher: type[AIOKafkaConsumer] = uninstrumented(AIOKafkaConsumer)
"""Construct a fetcher from this class instead of ``AIOKafkaConsumer`` (same arguments). StaticConsumer
builds ``uninstrumented`` of its bounded-response consumer class (``staticconsumer._aiokafka``)."""


def is_wrapped(cls: type, name: str) -> bool:
    """Whether ``cls.name`` as seen through the class is a wrapper around another function."""
    for klass in cls.__mro__:
        if name in vars(klass):
            return hasattr(vars(klass)[name], "__wrapped__")
    return False


_LAZY = {
    "attributes": ".attributes",
    "partition_lag": ".instruments",
    "TelemetryObserver": ".observer",
    "error_type_of": ".observer",
    "error_type_of_code": ".observer",
    "ProcessParent": ".records",
    "RecordTracer": ".records",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    loaded = importlib.import_module(module, __name__)
    value = loaded if module == f".{name}" else getattr(loaded, name)
    globals()[name] = value
    return value


def opentelemetry_in_use() -> bool:
    """Whether this process uses OpenTelemetry: its API is imported (an SDK installed, an instrumented
    library, the application's own spans), or ``OTEL_*`` variables configure it."""
    return api_imported() or any(key.startswith("OTEL_") for key in os.environ)


class DeferredTelemetryObserver:
    """A ``TelemetryObserver`` that comes into being when OpenTelemetry is first used in the process.

    Until then every span and metric would go to the API's no-op providers, so nothing is lost by not
    importing it; from the first membership step after OpenTelemetry is imported (an SDK installed
    after the consumer was built), ``observer`` reports as a ``TelemetryObserver`` built then would.
    Each step looks only at the imported modules (two dict lookups): ``OTEL_*`` variables were read when
    the consumer was built, and scanning the environment at every step cost more than the step.
    """

    def __init__(self, *, client_id: str | None) -> None:
        self._client_id = client_id
        self.observer: TelemetryObserver | None = None

    def observe(self, event: Event, produced: Sequence[Action], view: MemberView) -> None:
        observer = self.observer
        if observer is None:
            if not api_imported():
                return
            from .observer import TelemetryObserver

            observer = self.observer = TelemetryObserver(client_id=self._client_id)
        observer.observe(event, produced, view)


def telemetry_observers(
    telemetry: bool | MembershipObserver, *, client_id: str | None
) -> tuple[MembershipObserver, ...]:
    """What ``StaticConsumer(telemetry=...)`` means: on by default, off with False, or your own observer.

    On by default means a ``TelemetryObserver`` when OpenTelemetry is in use already, else a
    :class:`DeferredTelemetryObserver` that builds one once it is.
    """
    if telemetry is True:
        if opentelemetry_in_use():
            from .observer import TelemetryObserver

            return (TelemetryObserver(client_id=client_id),)
        return (DeferredTelemetryObserver(client_id=client_id),)
    if telemetry is False:
        return ()
    return (telemetry,)


def record_tracer(
    telemetry: bool | MembershipObserver, **options: Any
) -> RecordTracer | DeferredRecordTracer | None:
    """What ``StaticConsumer(telemetry=...)`` means for records (``options``: ``RecordTracer``'s).

    None with False; a ``TelemetryObserver`` given as ``telemetry`` lends its providers, any other
    observer leaves them global. A ``RecordTracer`` when OpenTelemetry is in use already, else a
    :class:`DeferredRecordTracer` that builds one once it is.
    """
    if telemetry is False:
        return None
    observer_module = sys.modules.get(f"{__name__}.observer")  # a TelemetryObserver imported it
    if observer_module is not None and isinstance(telemetry, observer_module.TelemetryObserver):
        options = {
            **options,
            "tracer_provider": telemetry.tracer_provider,
            "meter_provider": telemetry.meter_provider,
        }
    if opentelemetry_in_use():
        from .records import RecordTracer

        return RecordTracer(**options)
    return DeferredRecordTracer(**options)


__all__ = [
    "DeferredRecordTracer",
    "DeferredTelemetryObserver",
    "ProcessParent",
    "RecordLoop",
    "RecordTracer",
    "TelemetryObserver",
    "attributes",
    "caller_context",
    "error_type_of",
    "error_type_of_code",
    "opentelemetry_in_use",
    "partition_lag",
    "record_tracer",
    "telemetry_observers",
]

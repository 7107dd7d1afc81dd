"""OpenTelemetry for every record: ``poll`` spans, ``process`` spans linked to the producer, record metrics.

Follows the messaging semantic conventions for Kafka (``attributes.SEMCONV_VERSION``):

- ``getmany`` is a pull: one ``poll {topic}`` CLIENT span per call that returned records, from the
  call to its return, with a link to the producer context of each record (the conventions' "Receive"
  span). Polls that return nothing record no span.
- ``getone`` / ``async for`` hand one record at a time to code the consumer does not see: one
  ``process {topic}`` CONSUMER span per record, current while the application handles the record.
  It starts when the record is handed over and ends when the application asks for the next record,
  leaves the ``async for`` loop, or stops the consumer; an exception that leaves the loop body is
  recorded on it (see ``RecordTracer`` for how, since ``async for`` never tells its iterator).
- ``processing(record)`` gives a ``getmany`` user the same span around their own handling.

The producer's context is read from the record headers with the globally configured propagator (W3C
``traceparent`` by default). ``ProcessParent`` says whether a process span is its child or only links
to it. All of this costs one type check per call until the application installs an OpenTelemetry SDK.
"""

from __future__ import annotations

import asyncio
import enum
import math
import os
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextvars import Token
from dataclasses import dataclass
from typing import Any, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import metrics, propagate, trace
from opentelemetry.context import Context
from opentelemetry.metrics import MeterProvider
from opentelemetry.propagators.textmap import Getter, TextMapPropagator
from opentelemetry.trace import Link, Span, SpanContext, SpanKind, Status, StatusCode, TracerProvider
from opentelemetry.util.types import AttributeValue

from staticconsumer.errors import BrokerError
from staticconsumer.telemetry import RecordLoop

from . import attributes as a
from .instruments import LagCallback, instruments_for, version
from .sampling import GENERIC, is_default_w3c, read_w3c

Attributes = dict[str, AttributeValue]
Record = Any
"""An aiokafka ``ConsumerRecord`` (topic, partition, offset, key, value, headers)."""
T = TypeVar("T")

DEFAULT_KEY_MAX_LENGTH = 64
"""Longer keys are not recorded: a span attribute is no place for payload-sized data."""
_RECHECK_SECONDS = 1.0
"""How soon a consumer notices an SDK installed after it was created."""
DEFAULT_MAX_LINKS = 128
"""The SDK's default link limit (``OTEL_SPAN_LINK_COUNT_LIMIT``): links past it would be dropped anyway."""

_OFFSET = a.MESSAGING_KAFKA_OFFSET
_KEY = a.MESSAGING_KAFKA_MESSAGE_KEY
_TOMBSTONE = a.MESSAGING_KAFKA_MESSAGE_TOMBSTONE
_CONSUMER = SpanKind.CONSUMER
"""Read once per record: module constants, not attribute lookups."""
_SILENT_TRACER_PROVIDERS = (trace.ProxyTracerProvider, trace.NoOpTracerProvider)
_SILENT_METER_PROVIDERS = frozenset({"_ProxyMeterProvider", "NoOpMeterProvider"})


class ProcessParent(enum.Enum):
    """What a ``process`` span's parent is. Whatever the choice, it links to the producer context.

    The conventions correlate producer and consumer by links, allow the producer context as the parent
    of a single-message process span, and advise against that by default when processing happens
    inside another span. ``AUTO`` does exactly that.
    """

    AUTO = "auto"
    """The producer context when no span is current (the usual ``async for`` loop, so the handler's
    spans and logs join the producer's trace); else the current span."""
    PRODUCER = "producer"
    """Always the producer context (when the record carries one); a current span becomes a link."""
    CURRENT = "current"
    """Never the producer context: the current span, or a new trace. Links only."""


class KafkaHeadersGetter(Getter[Sequence[tuple[str, bytes | None]]]):
    """Reads propagation fields from record headers: a sequence of (str, bytes) pairs, as aiokafka gives."""

    def get(self, carrier: Sequence[tuple[str, bytes | None]], key: str) -> list[str] | None:
        values = [v.decode("utf-8", "replace") for k, v in carrier if k == key and v is not None]
        return values or None

    def keys(self, carrier: Sequence[tuple[str, bytes | None]]) -> list[str]:
        return [k for k, _ in carrier]


HEADERS_GETTER = KafkaHeadersGetter()


def error_type(error: BaseException) -> str:
    """``error.type``: Kafka's error name when the broker said it, else the exception's qualified class."""
    if isinstance(error, BrokerError):
        return error.error_name
    cls = type(error)
    return f"{cls.__module__}.{cls.__qualname__}"


def message_key(key: object, max_length: int = DEFAULT_KEY_MAX_LENGTH) -> str | None:
    """The key as the conventions want it, or None when it has no canonical, short, printable form.

    A str, UTF-8 bytes or an int qualify; binary keys, long keys and other types are not recorded.
    """
    if key is None or max_length <= 0:
        return None
    if type(key) is bytes or isinstance(key, bytes | bytearray | memoryview):  # aiokafka's: bytes
        raw = key if type(key) is bytes else bytes(key)  # no copy of bytes
        if len(raw) > 4 * max_length:
            return None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return None
    elif isinstance(key, str):
        text = key
    elif isinstance(key, int) and not isinstance(key, bool):
        text = str(key)
    else:
        return None
    if len(text) > max_length or not text.isprintable():
        return None
    return text


def server_of(bootstrap_servers: str | Sequence[str]) -> tuple[str, int] | None:
    """``server.address`` and ``server.port`` of the first bootstrap server, as configured (no DNS)."""
    entries = [bootstrap_servers] if isinstance(bootstrap_servers, str) else list(bootstrap_servers)
    first = next((e.strip() for entry in entries for e in entry.split(",") if e.strip()), None)
    if first is None:
        return None
    first = first.split("://", 1)[-1]
    if first.startswith("["):  # [v6 address]:port
        host, _, rest = first[1:].partition("]")
        port = rest.lstrip(":")
    elif first.count(":") == 1:
        host, _, port = first.partition(":")
    else:
        host, port = first, ""
    try:
        return host, int(port) if port else 9092
    except ValueError:
        return host, 9092


def caller_context() -> Context | None:
    """The context to parent a span the application caused (a ``commit()``), if a span is current."""
    current = otel_context.get_current()
    return current if trace.get_current_span(current).get_span_context().is_valid else None


def _current_task() -> asyncio.Task[Any] | None:
    try:
        return asyncio.current_task()
    except RuntimeError:  # no running event loop
        return None


def _max_links() -> int:
    try:
        return max(0, int(os.environ.get("OTEL_SPAN_LINK_COUNT_LIMIT", DEFAULT_MAX_LINKS)))
    except ValueError:
        return DEFAULT_MAX_LINKS


@dataclass(slots=True)
class _Processing:
    """One record being processed: its span, the attach token of the span's context, the task that
    attached it (only that task can detach it), and what the duration metric needs."""

    record: Record
    span: Span
    token: Token[Context] | None
    task: asyncio.Task[Any] | None
    started_ns: int
    metric_attributes: Attributes


@dataclass(slots=True)
class _PartitionAttributes:
    """Attribute dicts that only depend on the partition, built once per partition, and its counts of
    consumed records (read by an observable counter: one integer addition per record, where a
    counter's add would cost an SDK measurement)."""

    topic: str
    partition: int
    process_name: str
    process_span: Attributes
    process_metric: Attributes
    poll_metric: Attributes
    link_one_topic: Attributes
    link_many_topics: Attributes
    polled: int = 0
    delivered: int = 0


class RecordTracer:
    """Per-record spans and metrics of one consumer. All methods run on the consumer's event loop.

    ``StaticConsumer`` makes these calls (see docs/telemetry.md for what the user sees); its
    ``telemetry_key_max_length`` setting is ``key_max_length`` here:

    - ``started = requested()`` first thing in ``getmany``/``getone`` (so in ``__anext__`` too): the
      application asks for more records, so the previous record's process span ends here.
    - ``polled(records, started)`` when ``getmany`` returns: poll span, consumed counter, duration.
    - ``delivered(record)`` when ``getone`` returns a record: counts it and opens its process span,
      current in the caller's context from here on (``async for`` runs the body in that context).
    - ``__aiter__`` returns ``loop(self.__anext__)``: leaving the loop (``break``, ``return``, an
      exception) drops that object, whose finalizer calls ``loop_left()``: the record's context is
      detached at once, and its span ends on the next turn of the event loop unless ``close(error)``
      ends it first with the exception that left the loop body.
    - ``close(error)`` in ``__aexit__`` (with the exception that left the ``async with`` block) and
      at the start of ``stop()`` (with ``sys.exc_info()[1]``: inside a ``finally:`` or ``except:``
      that is the exception on its way out of the loop). Also stops the lag gauge reading.

    How an exception from the loop body is seen: ``async for`` tells the iterator nothing, but the
    exception passes the consumer on its way out in the usual loop shapes, ``async with consumer:``
    (``__aexit__``) and ``try: ... finally: await consumer.stop()`` (``stop()`` reads the exception
    being handled). Elsewhere (caught and swallowed around the loop) the span ends without it, and
    ``with consumer.processing(record):`` inside the loop body records it for certain.
    """

    def __init__(
        self,
        *,
        group_id: str,
        client_id: str | None = None,
        group_instance_id: str | None = None,
        bootstrap_servers: str | Sequence[str] = (),
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        propagator: TextMapPropagator | None = None,
        process_parent: ProcessParent = ProcessParent.AUTO,
        key_max_length: int = DEFAULT_KEY_MAX_LENGTH,
        max_links: int | None = None,
        lag: LagCallback | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._tracer_provider = tracer_provider
        self._meter_provider = meter_provider
        self._tracer = trace.get_tracer(a.SCOPE, version(), tracer_provider=tracer_provider)
        self._instruments = instruments_for(meter_provider)
        self._propagator = propagator
        self._w3c_checked: TextMapPropagator | None = None
        self._w3c = False
        self._process_parent = process_parent
        self._always_producer = process_parent is ProcessParent.PRODUCER
        self._producer_unless_current = process_parent is ProcessParent.AUTO
        self._key_max_length = key_max_length
        self._max_links = _max_links() if max_links is None else max_links
        identity: Attributes = {
            a.MESSAGING_SYSTEM: a.MESSAGING_SYSTEM_KAFKA,
            a.MESSAGING_CONSUMER_GROUP_NAME: group_id,
        }
        if client_id:
            identity[a.MESSAGING_CLIENT_ID] = client_id
        if group_instance_id is not None:
            identity[a.GROUP_INSTANCE_ID] = group_instance_id
        self.identity = identity
        server: Attributes = {}
        found = server_of(bootstrap_servers)
        if found is not None:
            server = {a.SERVER_ADDRESS: found[0], a.SERVER_PORT: found[1]}
        self._poll_span_base: Attributes = {
            **identity,
            a.MESSAGING_OPERATION_NAME: a.OPERATION_POLL,
            a.MESSAGING_OPERATION_TYPE: a.OPERATION_TYPE_RECEIVE,
            **server,
        }
        self._poll_metric_base: Attributes = {
            **identity,
            a.MESSAGING_OPERATION_NAME: a.OPERATION_POLL,
            **server,
        }
        self._partitions: dict[tuple[str, int], _PartitionAttributes] = {}
        self._last_partition: _PartitionAttributes | None = None
        """The partition of the last record started: ``async for`` drains one partition at a time."""
        self._ambient_of: Context | None = None
        self._ambient = trace.INVALID_SPAN_CONTEXT
        """The span context current in ``_ambient_of`` (contexts are immutable: asked once per context,
        not per record; the loop's context is the same object record after record)."""
        self._poll_durations: dict[str | None, Attributes] = {}
        self._open: _Processing | None = None
        self._lag = lag
        self._clock = clock
        self._tracing_on = self._metering_on = False
        self.per_record = False
        """Whether ``delivered`` has anything to do (an SDK listens), as the last look found: the
        consumer's per-record path reads this instead of making the call."""
        self._recheck_at = -math.inf
        self._refresh()
        self._instruments.watch(self)

    # -- is anyone listening? ---------------------------------------------------------------------

    def tracing(self) -> bool:
        """False while spans would go nowhere (no SDK installed): then no per-record work is done."""
        if self._recheck_at != math.inf:
            self._refresh()
        return self._tracing_on

    def metering(self) -> bool:
        """False while measurements would go nowhere (no SDK installed)."""
        if self._recheck_at != math.inf:
            self._refresh()
        return self._metering_on

    def _refresh(self) -> None:
        """Look whether an SDK is installed, at most once a second while one is missing.

        Reading the global providers costs an environment lookup each, too much for every record; the
        global providers can only be set once, so once both are there nothing is looked at again.
        """
        now = self._clock()
        if now < self._recheck_at:
            return
        tracer_provider = self._tracer_provider or trace.get_tracer_provider()
        self._tracing_on = not isinstance(tracer_provider, _SILENT_TRACER_PROVIDERS)
        meter_provider = self._meter_provider or metrics.get_meter_provider()
        self._metering_on = type(meter_provider).__name__ not in _SILENT_METER_PROVIDERS
        self.per_record = self._tracing_on or self._metering_on  # once on, never off again
        settled = (self._tracing_on or self._tracer_provider is not None) and (
            self._metering_on or self._meter_provider is not None
        )
        self._recheck_at = math.inf if settled else now + _RECHECK_SECONDS

    # -- the calls the consumer makes ---------------------------------------------------------------

    def requested(self) -> int:
        """The application asks for records: the record it held is done. Returns the time (ns).

        Also where the tracer looks whether an SDK was installed since (at most once a second), for
        ``delivered`` to read the answer without looking: the consumer calls this at least every
        few milliseconds while it hands records over."""
        if self._open is not None:
            self.end()
        if self._recheck_at != math.inf:
            self._refresh()
        return time.time_ns()

    def polled(self, records: Mapping[Any, Sequence[Record]], started_ns: int) -> None:
        """``getmany`` returns ``records`` (partition -> records), asked for at ``started_ns``."""
        if not records:
            return
        tracing, metering = self.tracing(), self.metering()
        if not (tracing or metering):
            return
        now = time.time_ns()
        topics = {tp.topic for tp in records}
        topic = next(iter(topics)) if len(topics) == 1 else None
        if metering:
            for tp, rows in records.items():
                self._partition(tp.topic, tp.partition).polled += len(rows)
            self._instruments.operation_duration.record(
                max(0, now - started_ns) / 1e9, self._poll_duration_attributes(topic)
            )
        if tracing:
            attrs: Attributes = {
                **self._poll_span_base,
                a.MESSAGING_BATCH_MESSAGE_COUNT: sum(len(rows) for rows in records.values()),
            }
            if topic is not None:
                attrs[a.MESSAGING_DESTINATION_NAME] = topic
                if len(records) == 1:
                    attrs[a.MESSAGING_DESTINATION_PARTITION_ID] = str(next(iter(records)).partition)
            span = self._tracer.start_span(
                a.span_name(a.OPERATION_POLL, topic),
                kind=SpanKind.CLIENT,
                attributes=attrs,
                links=self._links(records, one_topic=topic is not None),
                start_time=started_ns,
            )
            span.end(end_time=now)

    def delivered(self, record: Record) -> None:
        """``getone`` hands ``record`` over: count it, open its process span, make it current.

        The per-record call: without an SDK (as ``requested`` last found) it costs two attribute
        reads."""
        # The task is asked for once for both: ending the previous record's span detaches its context
        # in the task that attached it, and the new one is attached in this task (a context is
        # attached only while tracing, and tracing, once on, stays on).
        task = _current_task() if self._tracing_on else None
        processing = self._open
        if processing is not None:
            self._open = None
            self._finish_in(processing, None, task)
        if self._tracing_on or self._metering_on:
            self._open = self._start(record, True, task)

    def end(self, error: BaseException | None = None) -> None:
        """End the open process span, recording ``error`` if it is an ``Exception``."""
        processing, self._open = self._open, None
        if processing is not None:
            self._finish(processing, error)

    def loop(self, anext: Callable[[], Awaitable[T]]) -> RecordLoop[T]:
        """An ``async for`` iterator of the records ``anext`` returns; ``loop_left()`` when dropped (the
        consumer's own is ``RecordIteration``, which reads its buffer directly)."""
        return RecordLoop(self, anext)

    def loop_left(self) -> None:
        """The ``async for`` loop was left: detach the record's context now, end its span soon."""
        processing = self._open
        if processing is None or processing.task is not _current_task():
            return
        self._detach(processing)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.end()
            return
        # One turn of grace: an exception leaving the loop body reaches __aexit__ or stop() first.
        loop.call_soon(self._end_if_open, processing)

    def close(self, error: BaseException | None = None) -> None:
        """The consumer stops: end the open span (with the exception leaving the loop, if any)."""
        self.end(error)
        self._instruments.unwatch(self)
        self._ambient_of, self._ambient = None, trace.INVALID_SPAN_CONTEXT  # hold no caller's span

    def processing(self, record: Record) -> ProcessingBlock:
        """The record's process span, current inside the ``with`` block; an exception leaving the
        block is recorded on it (and goes on).

        For ``getmany`` users (a new span per block). Inside ``async for`` it takes over the span the
        loop opened for that same record, so the loop body's exceptions are recorded for certain.
        """
        if self._open is None and not (self.tracing() or self.metering()):
            return _NOTHING_TO_PROCESS
        return ProcessingBlock(self, record)

    def _begin_block(self, record: Record) -> _Processing:
        if self._open is not None and self._open.record is record:
            processing, self._open = self._open, None
            return processing
        return self._start(record)

    # -- what the observable instruments read (on the SDK's export thread) -------------------------

    @property
    def lag_identity(self) -> Attributes:
        return self.identity

    def current_lag(self) -> Mapping[Any, int]:
        return self._lag() if self._lag is not None else {}

    def consumed(self) -> list[tuple[int, Attributes]]:
        """Records handed to the application so far, per partition and delivering operation."""
        out = []
        for where in list(self._partitions.values()):
            if where.polled:
                out.append((where.polled, where.poll_metric))
            if where.delivered:
                out.append((where.delivered, where.process_metric))
        return out

    # -- inside -------------------------------------------------------------------------------------

    def _partition(self, topic: str, partition: int) -> _PartitionAttributes:
        found = self._partitions.get((topic, partition))
        if found is None:
            where: Attributes = {
                a.MESSAGING_DESTINATION_NAME: topic,
                a.MESSAGING_DESTINATION_PARTITION_ID: str(partition),
            }
            found = _PartitionAttributes(
                topic=topic,
                partition=partition,
                process_name=a.span_name(a.OPERATION_PROCESS, topic),
                process_span={
                    **self.identity,
                    a.MESSAGING_OPERATION_NAME: a.OPERATION_PROCESS,
                    a.MESSAGING_OPERATION_TYPE: a.OPERATION_TYPE_PROCESS,
                    **where,
                },
                process_metric={**self.identity, a.MESSAGING_OPERATION_NAME: a.OPERATION_PROCESS, **where},
                poll_metric={**self._poll_metric_base, **where},
                link_one_topic={a.MESSAGING_DESTINATION_PARTITION_ID: str(partition)},
                link_many_topics=dict(where),
            )
            self._partitions[(topic, partition)] = found
        return found

    def _poll_duration_attributes(self, topic: str | None) -> Attributes:
        found = self._poll_durations.get(topic)
        if found is None:
            found = dict(self._poll_metric_base)
            if topic is not None:
                found[a.MESSAGING_DESTINATION_NAME] = topic
            self._poll_durations[topic] = found
        return found

    def _producer_context(self, record: Record) -> Context | None:
        """The whole context the configured propagator reads from the record's headers (baggage
        included, also without a span context); what ``_producer`` reads fast, for comparison."""
        found = self._producer(record)
        if found is not None:
            return found[1]
        headers = record.headers
        if not headers:
            return None
        propagator = self._propagator or propagate.get_global_textmap()
        return propagator.extract(headers, context=Context(), getter=HEADERS_GETTER)

    def _producer(self, record: Record) -> tuple[SpanContext, Context] | None:
        """The producer's span context, and the context the configured propagator reads from the
        record's headers (read directly for the default W3C propagator: ``sampling.read_w3c``); None
        without a valid span context (then neither the parent nor a link comes from the record)."""
        headers = record.headers
        if not headers:
            return None
        propagator = self._propagator or propagate.get_global_textmap()
        if propagator is not self._w3c_checked:
            self._w3c, self._w3c_checked = is_default_w3c(propagator), propagator
        if self._w3c:
            found = read_w3c(headers)
            if found is not GENERIC:
                return found  # type: ignore[return-value]
        produced = propagator.extract(headers, context=Context(), getter=HEADERS_GETTER)
        span_context = trace.get_current_span(produced).get_span_context()
        return (span_context, produced) if span_context.is_valid else None

    def _links(self, records: Mapping[Any, Sequence[Record]], *, one_topic: bool) -> list[Link]:
        links: list[Link] = []
        budget = self._max_links
        for tp, rows in records.items():
            if budget <= 0:
                break
            where = self._partition(tp.topic, tp.partition)
            base = where.link_one_topic if one_topic else where.link_many_topics
            for record in rows:
                if budget <= 0:
                    break
                produced = self._producer(record)
                if produced is not None:
                    links.append(Link(produced[0], {**base, a.MESSAGING_KAFKA_OFFSET: record.offset}))
                    budget -= 1
        return links

    def _start(
        self, record: Record, count: bool = False, task: asyncio.Task[Any] | None = None
    ) -> _Processing:
        """Open the record's process span and make it current, in ``task`` (the current one: the
        caller asked for it; None: ask here). The per-record path under an SDK: what only depends on
        the partition or on the caller's context is looked up, not rebuilt."""
        started = time.time_ns()
        where = self._last_partition
        if where is None or where.partition != record.partition or where.topic != record.topic:
            where = self._last_partition = self._partition(record.topic, record.partition)
        if count and self._metering_on:
            where.delivered += 1
        if not self._tracing_on:
            return _Processing(record, trace.INVALID_SPAN, None, None, started, where.process_metric)
        current = otel_context.get_current()
        if current is not self._ambient_of:
            self._ambient = trace.get_current_span(current).get_span_context()
            self._ambient_of = current
        ambient = self._ambient
        parent = current
        links: list[Link] = []
        produced = self._producer(record)
        if produced is not None:
            links.append(Link(produced[0]))
            if self._always_producer or (self._producer_unless_current and not ambient.is_valid):
                parent = produced[1]
                if ambient.is_valid:
                    links.append(Link(ambient))
        attrs: Attributes = {**where.process_span, _OFFSET: record.offset}
        key = message_key(record.key, self._key_max_length)
        if key is not None:
            attrs[_KEY] = key
        if record.value is None:
            attrs[_TOMBSTONE] = True
        span = self._tracer.start_span(
            where.process_name,
            context=parent,
            kind=_CONSUMER,
            attributes=attrs,
            links=links,
            start_time=started,
        )
        token = otel_context.attach(trace.set_span_in_context(span, parent))
        if task is None:
            task = _current_task()
        return _Processing(record, span, token, task, started, where.process_metric)

    def _detach(self, processing: _Processing) -> None:
        """Restore the context from before the record, in the task that attached it (a context
        attached in another task, e.g. a wait_for wrapper task on Python 3.11, went with that task)."""
        token, processing.token = processing.token, None
        if token is not None and processing.task is _current_task():
            otel_context.detach(token)

    def _finish(self, processing: _Processing, error: BaseException | None) -> None:
        self._finish_in(processing, error, _current_task() if processing.token is not None else None)

    def _finish_in(
        self, processing: _Processing, error: BaseException | None, task: asyncio.Task[Any] | None
    ) -> None:
        """End ``processing``'s span; ``task`` is the current task (None: none, or nothing attached)."""
        token = processing.token
        if token is not None:  # _detach, inlined: this runs once per record
            processing.token = None
            if processing.task is task:
                otel_context.detach(token)
        now = time.time_ns()
        span = processing.span
        if error is None:
            span.end(end_time=now)
            if self._metering_on:
                self._instruments.process_duration.record(
                    max(0, now - processing.started_ns) / 1e9, processing.metric_attributes
                )
            return
        metric_attributes = processing.metric_attributes
        if isinstance(error, Exception):
            kind = error_type(error)
            metric_attributes = {**metric_attributes, a.ERROR_TYPE: kind}
            if span.is_recording():
                span.record_exception(error, timestamp=now)
                span.set_attribute(a.ERROR_TYPE, kind)
                span.set_status(Status(StatusCode.ERROR, kind))
        span.end(end_time=now)
        if self._metering_on:
            self._instruments.process_duration.record(
                max(0, now - processing.started_ns) / 1e9, metric_attributes
            )

    def _end_if_open(self, processing: _Processing) -> None:
        if self._open is processing:
            self.end()


class ProcessingBlock:
    """What ``RecordTracer.processing(record)`` returns: a ``with`` block around one record's handling."""

    __slots__ = ("_processing", "_record", "_tracer")

    def __init__(self, tracer: RecordTracer | None, record: Record) -> None:
        self._tracer = tracer
        self._record = record
        self._processing: _Processing | None = None

    def __enter__(self) -> Span:
        if self._tracer is None:
            return trace.INVALID_SPAN
        self._processing = self._tracer._begin_block(self._record)
        return self._processing.span

    def __exit__(self, kind: object, error: BaseException | None, traceback: object) -> None:
        processing, self._processing = self._processing, None
        if processing is not None and self._tracer is not None:
            self._tracer._finish(processing, error)


_NOTHING_TO_PROCESS = ProcessingBlock(None, None)
"""The block when no SDK listens: shared, it holds nothing."""

"""The unsampled record's cheap path (issue 26): a dropped process span still carries the producer's
trace to the handler and records nothing, and the W3C fast path reads the same parent as the
configured propagator for every header shape."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from opentelemetry import propagate, trace
from opentelemetry.baggage.propagation import W3CBaggagePropagator
from opentelemetry.context import Context
from opentelemetry.propagators.composite import CompositePropagator
from opentelemetry.propagators.textmap import TextMapPropagator
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    Decision,
    ParentBased,
    Sampler,
    SamplingResult,
    TraceIdRatioBased,
)
from opentelemetry.trace import SpanKind
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from record_harness import FakeConsumer, by_offset, record

from staticconsumer.telemetry import RecordTracer
from staticconsumer.telemetry.records import HEADERS_GETTER
from staticconsumer.telemetry.sampling import GENERIC, is_default_w3c, read_traceparent

TRACE_ID = 0x4BF92F3577B34DA6A3CE929D0E0E4736
PRODUCER_SPAN_ID = 0x00F067AA0BA902B7


def traceparent(flags: str = "01", trace_id: int = TRACE_ID, span_id: int = PRODUCER_SPAN_ID) -> bytes:
    return f"00-{trace_id:032x}-{span_id:016x}-{flags}".encode()


class Sdk:
    """A tracer provider with a sampler of the test's choosing, spans into memory."""

    def __init__(self, sampler: Sampler) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(sampler=sampler)
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def record_tracer(self, **options: Any) -> RecordTracer:
        return RecordTracer(group_id="billing", tracer_provider=self.provider, **options)


ONE_PERCENT = ParentBased(TraceIdRatioBased(0.01))


async def test_a_dropped_record_records_nothing_yet_its_handler_is_in_the_producers_trace() -> None:
    sdk = Sdk(ONE_PERCENT)
    tracer = sdk.record_tracer()
    app = sdk.provider.get_tracer("application")
    consumer = FakeConsumer([record(0, key=b"k", headers=[("traceparent", traceparent("00"))])], tracer)
    inside: list[tuple[trace.SpanContext, bool, dict[str, str]]] = []
    async with consumer:
        async for _rec in consumer:
            current = trace.get_current_span().get_span_context()
            with app.start_as_current_span("charge card") as child:
                carrier: dict[str, str] = {}
                propagate.inject(carrier)  # what the handler's own outgoing call would carry
                inside.append((current, child.is_recording(), carrier))
    ((current, child_recording, carrier),) = inside
    assert current.is_valid
    assert current.trace_id == TRACE_ID, "the handler runs in the producer's trace"
    assert current.span_id != PRODUCER_SPAN_ID, "in a span of its own, below the producer's"
    assert not current.trace_flags.sampled
    assert not current.is_remote
    assert not child_recording, "the handler's spans follow the unsampled decision"
    assert carrier["traceparent"].startswith(f"00-{TRACE_ID:032x}-")
    assert carrier["traceparent"].endswith("-00")
    assert sdk.exporter.get_finished_spans() == ()
    assert not trace.get_current_span().get_span_context().is_valid, "the context is restored"


@pytest.mark.parametrize(
    "headers",
    [
        [("traceparent", traceparent("00"))],
        [("traceparent", traceparent("02"))],  # W3C level 2: the random trace id flag, kept by a child
        [("traceparent", traceparent("00")), ("tracestate", b"vendor=v1,other=2")],
    ],
    ids=["unsampled", "random flag", "tracestate"],
)
async def test_the_bare_span_is_the_one_the_sdk_itself_would_make(headers: list[tuple[str, bytes]]) -> None:
    """Same trace id, flags and trace state as the SDK's span for the same parent: the fast path's
    parent is the propagator's, and the SDK makes the span."""
    sdk = Sdk(ONE_PERCENT)
    tracer = sdk.record_tracer()
    parent = TraceContextTextMapPropagator().extract(headers, getter=HEADERS_GETTER)
    reference = sdk.provider.get_tracer("x").start_span("x", context=parent).get_span_context()
    tracer.requested()
    tracer.delivered(record(0, headers=headers))
    ours = trace.get_current_span().get_span_context()
    tracer.close()
    assert ours.span_id not in (0, PRODUCER_SPAN_ID, reference.span_id)
    assert (ours.trace_id, ours.trace_flags, ours.trace_state, ours.is_remote) == (
        reference.trace_id,
        reference.trace_flags,
        reference.trace_state,
        reference.is_remote,
    )
    assert sdk.exporter.get_finished_spans() == ()


async def test_sampled_records_under_the_same_sampler_get_the_full_span() -> None:
    sdk = Sdk(ONE_PERCENT)
    consumer = FakeConsumer(
        [
            record(0, key=b"k0", headers=[("traceparent", traceparent("01"))]),
            record(1, key=b"k1", headers=[("traceparent", traceparent("00"))]),
            record(2, key=b"k2", headers=[("traceparent", traceparent("01", span_id=7))]),
        ],
        sdk.record_tracer(),
    )
    async with consumer:
        async for _rec in consumer:
            pass
    process = by_offset(sdk.exporter.get_finished_spans())
    assert sorted(process) == [0, 2]
    for offset, producer in ((0, PRODUCER_SPAN_ID), (2, 7)):
        span = process[offset]
        assert span.kind is SpanKind.CONSUMER
        assert span.parent is not None
        assert span.parent.span_id == producer
        assert [link.context.span_id for link in span.links] == [producer]
        assert (span.attributes or {})["messaging.kafka.message.key"] == f"k{offset}"


async def test_a_dropped_processing_block_is_current_and_records_nothing() -> None:
    sdk = Sdk(ONE_PERCENT)
    tracer = sdk.record_tracer()
    rec = record(0, headers=[("traceparent", traceparent("00"))])
    with tracer.processing(rec) as span:
        assert not span.is_recording()
        assert trace.get_current_span() is span
        assert span.get_span_context().trace_id == TRACE_ID
    assert sdk.exporter.get_finished_spans() == ()


class AttributeSampler(Sampler):
    """Samples by a span attribute: must see the attributes of dropped records too."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    def should_sample(
        self,
        parent_context: Context | None,
        trace_id: int,
        name: str,
        kind: SpanKind | None = None,
        attributes: Any = None,
        links: Sequence[trace.Link] | None = None,
        trace_state: trace.TraceState | None = None,
    ) -> SamplingResult:
        self.seen.append(dict(attributes or {}))
        keep = (attributes or {}).get("messaging.kafka.offset") == 1
        return SamplingResult(Decision.RECORD_AND_SAMPLE if keep else Decision.DROP, attributes)

    def get_description(self) -> str:
        return "AttributeSampler"


async def test_a_sampler_that_reads_attributes_gets_them() -> None:
    sampler = AttributeSampler()
    sdk = Sdk(sampler)
    consumer = FakeConsumer(
        [record(i, headers=[("traceparent", traceparent("00"))]) for i in range(3)], sdk.record_tracer()
    )
    async with consumer:
        async for _rec in consumer:
            pass
    assert [s["messaging.kafka.offset"] for s in sampler.seen] == [0, 1, 2]
    assert sorted(by_offset(sdk.exporter.get_finished_spans())) == [1]


# -- the fast path reads what the configured propagator reads -------------------------------------

HEADER_SHAPES: list[list[tuple[str, bytes | None]]] = [
    [("traceparent", traceparent("01"))],
    [("traceparent", traceparent("00"))],
    [("traceparent", traceparent("03"))],
    [("other", b"x"), ("traceparent", traceparent("01")), ("other", None)],
    [("traceparent", None), ("traceparent", traceparent("01", span_id=9))],
    [("traceparent", traceparent("01")), ("traceparent", traceparent("01", span_id=9))],
    [("traceparent", traceparent("01").upper())],
    [("traceparent", b"01" + traceparent("01")[2:])],
    [("traceparent", b"ff" + traceparent("01")[2:])],
    [("traceparent", traceparent("01") + b"-extra")],
    [("traceparent", b"01" + traceparent("01")[2:] + b"-extra")],
    [("traceparent", b" \t" + traceparent("01") + b" ")],
    [("traceparent", traceparent("01", trace_id=0))],
    [("traceparent", traceparent("01", span_id=0))],
    [("traceparent", traceparent("01")[:-1])],
    [("traceparent", b"\xff\xfe" + traceparent("01")[2:])],
    [("traceparent", b"")],
    [("traceparent", traceparent("01")), ("tracestate", b"vendor=value,other=1")],
    [("traceparent", traceparent("01")), ("baggage", b"user=alice")],
    [("baggage", b"user=alice")],
    [("key", b"value")],
]


def contexts_equal(left: Context | None, right: Context) -> None:
    """Same span context (ids, flags, state, remoteness) and the same other entries (baggage)."""
    span = trace.get_current_span(right).get_span_context()
    if left is None:
        assert not span.is_valid
        assert dict(right) == {}
        return
    assert trace.get_current_span(left).get_span_context() == span
    assert trace.get_current_span(left).get_span_context().trace_state == span.trace_state
    others = {k: v for k, v in left.items() if not isinstance(v, trace.Span)}
    assert others == {k: v for k, v in right.items() if not isinstance(v, trace.Span)}


@pytest.mark.parametrize("headers", HEADER_SHAPES, ids=[repr(h)[:60] for h in HEADER_SHAPES])
@pytest.mark.parametrize(
    "propagator",
    [
        TraceContextTextMapPropagator(),
        CompositePropagator([TraceContextTextMapPropagator(), W3CBaggagePropagator()]),
    ],
    ids=["tracecontext", "tracecontext,baggage"],
)
def test_the_fast_path_gives_the_configured_propagators_parent(
    headers: list[tuple[str, bytes | None]], propagator: Any
) -> None:
    assert is_default_w3c(propagator)
    tracer = RecordTracer(group_id="g", tracer_provider=TracerProvider(), propagator=propagator)
    found = tracer._producer_context(record(0, headers=headers))
    expected = propagator.extract(headers, context=Context(), getter=HEADERS_GETTER)
    contexts_equal(found, expected)


def test_the_canonical_header_is_read_without_the_propagator() -> None:
    assert read_traceparent([("traceparent", traceparent("01"))]) is not GENERIC
    assert read_traceparent([("key", b"v")]) is None
    assert read_traceparent([("traceparent", traceparent("01")), ("baggage", b"a=b")]) is GENERIC


class CountingPropagator(TraceContextTextMapPropagator):
    """Reads what the default reads, but is not the default: must be asked for every record."""

    calls = 0

    def extract(self, *args: Any, **kwargs: Any) -> Context:
        CountingPropagator.calls += 1
        return super().extract(*args, **kwargs)


def test_another_propagator_is_always_asked() -> None:
    assert not is_default_w3c(CountingPropagator())
    tracer = RecordTracer(group_id="g", tracer_provider=TracerProvider(), propagator=CountingPropagator())
    CountingPropagator.calls = 0
    for offset in range(3):
        tracer._producer_context(record(offset, headers=[("traceparent", traceparent("01"))]))
    assert CountingPropagator.calls == 3


class B3LikePropagator(TextMapPropagator):
    """Reads a trace from a header of its own (as B3 does): a composite holding it reads more than
    traceparent, so the default's fast path must never stand in for it."""

    calls = 0

    def extract(self, carrier: Any, context: Context | None = None, getter: Any = None) -> Context:
        B3LikePropagator.calls += 1
        return context if context is not None else Context()

    def inject(self, carrier: Any, context: Context | None = None, setter: Any = None) -> None:
        return None

    @property
    def fields(self) -> set[str]:
        return {"x-b3-traceid", "x-b3-spanid", "x-b3-sampled"}


@pytest.mark.parametrize(
    "inner",
    [
        [TraceContextTextMapPropagator(), B3LikePropagator()],
        [TraceContextTextMapPropagator(), W3CBaggagePropagator(), B3LikePropagator()],
        [B3LikePropagator(), TraceContextTextMapPropagator()],
    ],
    ids=["tracecontext,b3", "tracecontext,baggage,b3", "b3,tracecontext"],
)
def test_a_composite_with_another_propagator_never_takes_the_fast_path(inner: list[Any]) -> None:
    propagator = CompositePropagator(inner)
    assert not is_default_w3c(propagator)
    tracer = RecordTracer(group_id="g", tracer_provider=TracerProvider(), propagator=propagator)
    B3LikePropagator.calls = 0
    for offset in range(3):
        found = tracer._producer_context(record(offset, headers=[("traceparent", traceparent("01"))]))
        assert found is not None
        assert trace.get_current_span(found).get_span_context().span_id == PRODUCER_SPAN_ID
    assert B3LikePropagator.calls == 3, "the composite, and so the other propagator, read every record"


def test_the_default_global_propagator_takes_the_fast_path() -> None:
    """What OTEL_PROPAGATORS' default builds (tracecontext,baggage) is recognised by its fields."""
    assert is_default_w3c(propagate.get_global_textmap())
    assert is_default_w3c(CompositePropagator([W3CBaggagePropagator(), TraceContextTextMapPropagator()]))
    assert is_default_w3c(CompositePropagator([TraceContextTextMapPropagator()]))
    assert not is_default_w3c(CompositePropagator([W3CBaggagePropagator()]))
    assert not is_default_w3c(CompositePropagator([]))


async def test_fast_and_generic_paths_record_identical_spans() -> None:
    """The same records through the fast path and through a propagator that is not the default (the
    generic path): the same parents and links, span for span."""
    results = []
    for propagator in (TraceContextTextMapPropagator(), CountingPropagator()):
        sdk = Sdk(ALWAYS_ON)
        records = [
            record(i, headers=h)
            for i, h in enumerate(
                [
                    [("traceparent", traceparent("01", span_id=1))],
                    [("traceparent", traceparent("00", span_id=2))],
                    [("traceparent", traceparent("01", span_id=3)), ("tracestate", b"v=1")],
                    [("traceparent", traceparent("01", span_id=4).upper())],
                    [("key", b"none")],
                ]
            )
        ]
        consumer = FakeConsumer(records, sdk.record_tracer(propagator=propagator))
        async with consumer:
            async for _rec in consumer:
                await asyncio.sleep(0)
        results.append(
            {
                offset: (
                    span.parent and (span.parent.trace_id, span.parent.span_id, span.parent.trace_flags),
                    [(link.context.span_id, str(link.context.trace_state)) for link in span.links],
                )
                for offset, span in by_offset(sdk.exporter.get_finished_spans()).items()
            }
        )
    assert results[0] == results[1]
    assert results[0][0][0] == (TRACE_ID, 1, 1)
    assert results[0][4][0] is None


@pytest.mark.parametrize(
    ("sampler", "recorded"),
    [
        (ParentBased(ALWAYS_ON, remote_parent_sampled=ALWAYS_OFF), []),
        (
            ParentBased(ALWAYS_ON, remote_parent_sampled=ALWAYS_OFF, remote_parent_not_sampled=ALWAYS_ON),
            [1],
        ),
        (ParentBased(ALWAYS_ON, remote_parent_not_sampled=ALWAYS_ON), [0, 1]),
        (ParentBased(ALWAYS_OFF), [0]),
    ],
    ids=["drops sampled parents", "inverted", "keeps unsampled parents", "default delegates"],
)
async def test_parent_based_delegates_of_any_kind_decide(sampler: Sampler, recorded: list[int]) -> None:
    """Whatever ParentBased's delegates, the SDK's verdict stands, record by record."""
    sdk = Sdk(sampler)
    consumer = FakeConsumer(
        [
            record(0, headers=[("traceparent", traceparent("01"))]),
            record(1, headers=[("traceparent", traceparent("00"))]),
        ],
        sdk.record_tracer(),
    )
    async with consumer:
        async for _rec in consumer:
            pass
    assert sorted(by_offset(sdk.exporter.get_finished_spans())) == recorded

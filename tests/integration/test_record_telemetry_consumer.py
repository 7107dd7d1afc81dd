"""StaticConsumer's record telemetry on a real broker, with the in-memory exporter and reader.

A producer traced by opentelemetry-instrumentation-aiokafka writes records whose headers carry its
``send`` spans. The consumer continues each producer's trace in a ``process`` span that is current in
the ``async for`` body (a span the handler starts is its child, an exception from the body is recorded
on it), commits inside a handler become children of the handler's span, the consumer's own fetcher is
never traced by the instrumentation, and the lag gauge reads the high watermark minus the position.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.structs import TopicPartition as KafkaTopicPartition
from opentelemetry import trace
from opentelemetry.instrumentation.aiokafka import AIOKafkaInstrumentor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from staticconsumer import StaticConsumer
from staticconsumer.membership import TopicPartition
from staticconsumer.telemetry import TelemetryObserver
from staticconsumer.telemetry import attributes as a
from staticconsumer.testing import EmbeddedKafka

from .support import FAST, eventually

pytestmark = pytest.mark.kafka

INSTRUMENTATION_SCOPE = "opentelemetry.instrumentation.aiokafka"


class Otel:
    """An SDK of the test's own, and the aiokafka instrumentation reporting to it."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def observer(self) -> TelemetryObserver:
        return TelemetryObserver(
            client_id="billing-0", tracer_provider=self.tracer_provider, meter_provider=self.meter_provider
        )

    def spans(self, name: str | None = None) -> list[ReadableSpan]:
        return [s for s in self.exporter.get_finished_spans() if name is None or s.name == name]

    def instrumentation_spans(self) -> list[ReadableSpan]:
        return [
            s
            for s in self.spans()
            if s.instrumentation_scope is not None and s.instrumentation_scope.name == INSTRUMENTATION_SCOPE
        ]

    def gauge(self, metric: str) -> dict[tuple[str, str], Any]:
        data = self.reader.get_metrics_data()
        if data is None:
            return {}
        return {
            (
                p.attributes[a.MESSAGING_DESTINATION_NAME],
                p.attributes[a.MESSAGING_DESTINATION_PARTITION_ID],
            ): p.value
            for r in data.resource_metrics
            for sc in r.scope_metrics
            for m in sc.metrics
            if m.name == metric
            for p in m.data.data_points
        }


@pytest.fixture
def otel() -> Iterator[Otel]:
    found = Otel()
    instrumentor = AIOKafkaInstrumentor()
    instrumentor.instrument(tracer_provider=found.tracer_provider)
    try:
        yield found
    finally:
        instrumentor.uninstrument()


async def produce_traced(bootstrap: str, topic: str, count: int) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        for i in range(count):
            await producer.send_and_wait(topic, f"v{i}".encode(), key=f"order-{i}".encode(), partition=0)
    finally:
        await producer.stop()


def consumer(kafka: EmbeddedKafka, topic: str, group: str, otel: Otel) -> StaticConsumer:
    return StaticConsumer(
        topic,
        bootstrap_servers=kafka.bootstrap_servers,
        group_id=group,
        group_instance_id="billing-0",
        telemetry=otel.observer(),
        enable_auto_commit=False,
        **FAST,
    )


def offset_of(span: ReadableSpan) -> int:
    return int((span.attributes or {})[a.MESSAGING_KAFKA_OFFSET])  # type: ignore[arg-type]


async def test_async_for_continues_each_producers_trace_into_the_handler(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str, otel: Otel
) -> None:
    topic = create_topic(partitions=1)
    await produce_traced(kafka_broker.bootstrap_servers, topic, 4)
    sends = {int((s.attributes or {})[a.MESSAGING_KAFKA_MESSAGE_KEY].split("-")[1]): s for s in otel.spans()}  # type: ignore[union-attr]
    assert sorted(sends) == [0, 1, 2, 3]
    assert {s.kind for s in sends.values()} == {SpanKind.PRODUCER}
    otel.exporter.clear()

    app = otel.tracer_provider.get_tracer("billing")
    handled: dict[int, trace.Span] = {}

    async def bill() -> None:
        async with consumer(kafka_broker, topic, unique_group, otel) as billing:
            async for record in billing:
                with app.start_as_current_span("charge card") as handler:
                    handled[record.offset] = handler
                    if record.offset == 1:
                        await billing.commit()  # inside the handler's span
                    if record.offset == 3:
                        raise KeyError(record.key.decode())

    with pytest.raises(KeyError, match="order-3"):
        await bill()
    assert trace.get_current_span().get_span_context().is_valid is False, "no record context leaks out"

    assert otel.instrumentation_spans() == [], "the consumer's own fetcher is never traced"
    process = {offset_of(s): s for s in otel.spans(f"process {topic}")}
    assert sorted(process) == [0, 1, 2, 3]
    for offset, span in process.items():
        send = sends[offset]
        assert span.kind is SpanKind.CONSUMER
        assert span.context.trace_id == send.context.trace_id, "the producer's trace id"
        assert span.parent is not None
        assert span.parent.span_id == send.context.span_id
        attrs = span.attributes or {}
        assert attrs[a.MESSAGING_CONSUMER_GROUP_NAME] == unique_group
        assert attrs[a.MESSAGING_DESTINATION_NAME] == topic
        assert attrs[a.MESSAGING_DESTINATION_PARTITION_ID] == "0"
        assert attrs[a.MESSAGING_KAFKA_MESSAGE_KEY] == f"order-{offset}"
        (handler,) = [
            h
            for h in otel.spans("charge card")
            if h.context.span_id == handled[offset].get_span_context().span_id
        ]
        assert handler.parent is not None
        assert handler.parent.span_id == span.context.span_id, "the handler's span is the record's child"
        assert handler.context.trace_id == send.context.trace_id
    failed = process[3]
    assert failed.status.status_code is StatusCode.ERROR
    assert (failed.attributes or {})[a.ERROR_TYPE] == "builtins.KeyError"
    (exception,) = [e for e in failed.events if e.name == "exception"]
    assert (exception.attributes or {})["exception.type"] == "KeyError"
    assert all(s.status.status_code is StatusCode.UNSET for o, s in process.items() if o != 3)

    (commit,) = otel.spans(f"commit {topic}")
    assert commit.parent is not None
    assert commit.parent.span_id == handled[1].get_span_context().span_id, "committed inside the handler"
    assert commit.context.trace_id == sends[1].context.trace_id


async def test_getmany_links_each_producer_and_processing_continues_each_trace(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str, otel: Otel
) -> None:
    topic = create_topic(partitions=1)
    await produce_traced(kafka_broker.bootstrap_servers, topic, 3)
    sends = {s.context.span_id: s for s in otel.spans()}
    otel.exporter.clear()
    async with consumer(kafka_broker, topic, unique_group, otel) as billing:
        seen = 0
        while seen < 3:
            batch = await billing.getmany(timeout_ms=2000)
            for records in batch.values():
                for record in records:
                    with billing.processing(record):
                        seen += 1
    assert otel.instrumentation_spans() == []
    polls = otel.spans(f"poll {topic}")
    assert {link.context.span_id for poll in polls for link in poll.links} == set(sends)
    assert sum((p.attributes or {})[a.MESSAGING_BATCH_MESSAGE_COUNT] for p in polls) == 3  # type: ignore[misc]
    process = otel.spans(f"process {topic}")
    assert {s.parent.span_id for s in process if s.parent is not None} == set(sends)
    assert {s.context.trace_id for s in process} == {s.context.trace_id for s in sends.values()}


async def test_the_lag_gauge_is_the_high_watermark_minus_the_position(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str, otel: Otel
) -> None:
    topic = create_topic(partitions=1)
    await produce_traced(kafka_broker.bootstrap_servers, topic, 10)
    async with consumer(kafka_broker, topic, unique_group, otel) as billing:
        assert otel.gauge(a.METRIC_CONSUMER_LAG) == {}, "nothing known before the first fetch"
        for _ in range(4):
            await billing.getone()
        billing.pause(TopicPartition(topic, 0))
        await asyncio.sleep(0.5)  # a fetch in flight when pausing has landed by now
        fetcher = billing._fetcher
        assert fetcher is not None
        high_watermark = fetcher.highwater(KafkaTopicPartition(topic, 0))
        assert high_watermark == 10
        assert billing._partitions.consumed_position(TopicPartition(topic, 0)) == 4
        assert otel.gauge(a.METRIC_CONSUMER_LAG) == {(topic, "0"): high_watermark - 4}
    await eventually(lambda: otel.gauge(a.METRIC_CONSUMER_LAG) == {}, 5, "a stopped consumer drops out")

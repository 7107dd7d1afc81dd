"""Record telemetry on a real broker, beside opentelemetry-instrumentation-aiokafka.

An instrumented AIOKafkaProducer writes records whose headers carry its send spans; the consumer's
internal fetcher (``UninstrumentedFetcher``) reads them back with the instrumentation active, wired to
a ``RecordTracer`` the way StaticConsumer's getone/async-for/getmany are. The instrumentation must trace
the producer and any plain AIOKafkaConsumer, and never the fetcher.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.structs import TopicPartition
from opentelemetry import trace
from opentelemetry.instrumentation.aiokafka import AIOKafkaInstrumentor
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from staticconsumer.telemetry import RecordTracer, UninstrumentedFetcher, is_wrapped
from staticconsumer.telemetry import attributes as a
from staticconsumer.testing import EmbeddedKafka

pytestmark = pytest.mark.kafka

INSTRUMENTATION_SCOPE = "opentelemetry.instrumentation.aiokafka"


class Traces:
    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def spans(self) -> tuple[ReadableSpan, ...]:
        return self.exporter.get_finished_spans()

    def by_instrumentation(self) -> list[ReadableSpan]:
        return [
            s
            for s in self.spans()
            if s.instrumentation_scope and s.instrumentation_scope.name == INSTRUMENTATION_SCOPE
        ]


@pytest.fixture
def traces() -> Iterator[Traces]:
    """The aiokafka instrumentation, active for this test only, reporting to a test SDK."""
    found = Traces()
    instrumentor = AIOKafkaInstrumentor()
    instrumentor.instrument(tracer_provider=found.provider)
    try:
        yield found
    finally:
        instrumentor.uninstrument()


async def produce_traced(bootstrap: str, topic: str, count: int) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        for i in range(count):
            await producer.send_and_wait(topic, f"v{i}".encode(), key=f"order-{i}".encode())
    finally:
        await producer.stop()


def fetcher_kwargs(bootstrap: str) -> dict[str, Any]:
    return {"bootstrap_servers": bootstrap, "group_id": None, "enable_auto_commit": False}


class WiredFetcher:
    """The internal fetcher with RecordTracer calls where StaticConsumer makes them."""

    def __init__(self, fetcher: AIOKafkaConsumer, tracer: RecordTracer, total: int) -> None:
        self.fetcher = fetcher
        self.tracer = tracer
        self.left = total

    async def getone(self) -> Any:
        self.tracer.requested()
        record = await self.fetcher.getone()
        self.left -= 1
        self.tracer.delivered(record)
        return record

    def __aiter__(self) -> Any:
        return self.tracer.loop(self.__anext__)

    async def __anext__(self) -> Any:
        if self.left <= 0:
            self.tracer.requested()
            raise StopAsyncIteration
        return await self.getone()

    async def stop(self) -> None:
        self.tracer.close(sys.exc_info()[1])
        await self.fetcher.stop()


async def handle_all(consumer: WiredFetcher, app: trace.Tracer, fail_at: int) -> None:
    """The application's loop: a span of its own per record, and a handler that fails at one."""
    try:
        async for record in consumer:
            with app.start_as_current_span("handle order"):
                if record.offset == fail_at:
                    raise KeyError(record.key)
    finally:
        await consumer.stop()


async def start_fetcher(cls: Callable[..., AIOKafkaConsumer], bootstrap: str, topic: str) -> AIOKafkaConsumer:
    fetcher = cls(**fetcher_kwargs(bootstrap))
    await fetcher.start()
    fetcher.assign([TopicPartition(topic, 0)])
    await fetcher.seek_to_beginning(TopicPartition(topic, 0))
    return fetcher


async def test_the_fetcher_is_invisible_to_the_instrumentation_and_process_spans_join_the_producer(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], traces: Traces
) -> None:
    topic = create_topic()
    bootstrap = kafka_broker.bootstrap_servers
    await produce_traced(bootstrap, topic, 4)
    sends = {
        int((s.attributes or {})["messaging.kafka.message.key"].split("-")[1]): s
        for s in traces.by_instrumentation()
    }  # type: ignore[union-attr]
    assert sorted(sends) == [0, 1, 2, 3]
    assert {s.kind for s in sends.values()} == {SpanKind.PRODUCER}

    plain = await start_fetcher(AIOKafkaConsumer, bootstrap, topic)
    try:
        assert sum(map(len, (await plain.getmany(timeout_ms=10_000)).values())) == 4
    finally:
        await plain.stop()
    assert len(traces.by_instrumentation()) > 4, "the instrumentation is active: a plain consumer is traced"

    traces.exporter.clear()
    tracer = RecordTracer(
        group_id="billing",
        client_id="billing-0",
        bootstrap_servers=bootstrap,
        tracer_provider=traces.provider,
    )
    consumer = WiredFetcher(await start_fetcher(UninstrumentedFetcher, bootstrap, topic), tracer, total=4)
    with pytest.raises(KeyError):
        await handle_all(consumer, traces.provider.get_tracer("application"), fail_at=3)

    assert traces.by_instrumentation() == [], "the internal fetcher produced no instrumentation span"
    process = {
        (s.attributes or {})[a.MESSAGING_KAFKA_OFFSET]: s
        for s in traces.spans()
        if s.name == f"process {topic}"
    }
    handlers = [s for s in traces.spans() if s.name == "handle order"]
    assert sorted(process) == [0, 1, 2, 3]
    for offset, span in process.items():
        send = sends[int(offset)]  # type: ignore[arg-type]
        assert span.context.trace_id == send.context.trace_id
        assert span.parent is not None
        assert span.parent.span_id == send.context.span_id
        assert (span.attributes or {})[a.MESSAGING_KAFKA_MESSAGE_KEY] == f"order-{offset}"
        (handler,) = [
            h for h in handlers if h.parent is not None and h.parent.span_id == span.context.span_id
        ]
        assert handler.context.trace_id == send.context.trace_id
    assert process[3].status.status_code is StatusCode.ERROR
    assert (process[3].attributes or {})[a.ERROR_TYPE] == "builtins.KeyError"
    assert trace.get_current_span().get_span_context().span_id == 0


async def test_a_poll_of_the_fetcher_links_every_producer_and_nothing_else_is_traced(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], traces: Traces
) -> None:
    topic = create_topic()
    bootstrap = kafka_broker.bootstrap_servers
    await produce_traced(bootstrap, topic, 3)
    sends = {s.context.span_id for s in traces.by_instrumentation()}
    traces.exporter.clear()
    tracer = RecordTracer(group_id="billing", bootstrap_servers=bootstrap, tracer_provider=traces.provider)
    fetcher = await start_fetcher(UninstrumentedFetcher, bootstrap, topic)
    try:
        started = tracer.requested()
        batch = await fetcher.getmany(timeout_ms=10_000)
        tracer.polled(batch, started)
    finally:
        await fetcher.stop()
    (poll,) = traces.spans()
    assert poll.name == f"poll {topic}"
    assert {link.context.span_id for link in poll.links} == sends
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    assert (poll.attributes or {})[a.SERVER_ADDRESS] == host
    assert (poll.attributes or {})[a.SERVER_PORT] == int(port)


def test_instrumenting_after_import_does_not_reach_the_fetcher(traces: Traces) -> None:
    assert is_wrapped(AIOKafkaConsumer, "getmany")
    assert is_wrapped(AIOKafkaConsumer, "getone")
    assert not is_wrapped(UninstrumentedFetcher, "getmany")
    assert not is_wrapped(UninstrumentedFetcher, "getone")

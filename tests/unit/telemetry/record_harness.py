"""A test SDK, records with producer contexts, and a fake consumer wired to RecordTracer the way
StaticConsumer is to be wired (phase 2): the calls in FakeConsumer are the contract."""

from __future__ import annotations

import asyncio
import collections
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from aiokafka.structs import ConsumerRecord, TopicPartition
from opentelemetry import propagate, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from staticconsumer.telemetry import RecordTracer


class Sdk:
    """An SDK of the test's own (the global providers are left alone)."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])
        self.producer_tracer = self.tracer_provider.get_tracer("producer")
        self.app_tracer = self.tracer_provider.get_tracer("application")

    def record_tracer(self, **options: Any) -> RecordTracer:
        defaults: dict[str, Any] = {
            "group_id": "billing",
            "client_id": "billing-0-client",
            "group_instance_id": "billing-0",
            "bootstrap_servers": ("kafka-1:9093", "kafka-2:9093"),
            "tracer_provider": self.tracer_provider,
            "meter_provider": self.meter_provider,
        }
        return RecordTracer(**{**defaults, **options})

    def spans(self, name: str | None = None) -> list[ReadableSpan]:
        return [s for s in self.exporter.get_finished_spans() if name is None or s.name == name]

    def produced(
        self, count: int = 1, topic: str = "orders"
    ) -> list[tuple[ReadableSpan, list[tuple[str, bytes]]]]:
        """Producer spans with the headers a producer instrumentation injects for each."""
        out = []
        for _ in range(count):
            with self.producer_tracer.start_as_current_span(f"send {topic}", kind=SpanKind.PRODUCER) as span:
                carrier: dict[str, str] = {}
                propagate.inject(carrier)
            headers = [(k, v.encode()) for k, v in carrier.items()]
            out.append((self.finished(span), headers))
        return out

    def finished(self, span: trace.Span) -> ReadableSpan:
        span_id = span.get_span_context().span_id
        return next(s for s in self.exporter.get_finished_spans() if s.context.span_id == span_id)

    def points(self, metric: str) -> list[Any]:
        data = self.reader.get_metrics_data()
        if data is None:
            return []
        return [
            point
            for resource in data.resource_metrics
            for scope in resource.scope_metrics
            for m in scope.metrics
            if m.name == metric
            for point in m.data.data_points
        ]


def record(
    offset: int,
    *,
    topic: str = "orders",
    partition: int = 0,
    key: Any = None,
    value: Any = b"v",
    headers: Sequence[tuple[str, bytes]] = (),
) -> ConsumerRecord[Any, Any]:
    return ConsumerRecord(
        topic=topic,
        partition=partition,
        offset=offset,
        timestamp=0,
        timestamp_type=0,
        key=key,
        value=value,
        checksum=None,
        serialized_key_size=-1,
        serialized_value_size=-1,
        headers=tuple(headers),
    )


class Stopped(Exception):
    pass


class FakeConsumer:
    """Stands in for StaticConsumer: records from a list, and exactly the RecordTracer calls the real
    consumer makes in getmany / getone / __aiter__ / __anext__ / __aexit__ / stop()."""

    def __init__(self, records: Sequence[ConsumerRecord[Any, Any]], tracer: RecordTracer) -> None:
        self._records = collections.deque(records)
        self._tracer = tracer
        self.stopped = False

    async def getmany(
        self, max_records: int | None = None
    ) -> dict[TopicPartition, list[ConsumerRecord[Any, Any]]]:
        started = self._tracer.requested()
        await asyncio.sleep(0)  # the fetch
        batch: dict[TopicPartition, list[ConsumerRecord[Any, Any]]] = {}
        while self._records and (max_records is None or sum(map(len, batch.values())) < max_records):
            rec = self._records.popleft()
            batch.setdefault(TopicPartition(rec.topic, rec.partition), []).append(rec)
        self._tracer.polled(batch, started)
        return batch

    async def getone(self) -> ConsumerRecord[Any, Any]:
        self._tracer.requested()
        await asyncio.sleep(0)  # the fetch
        if self.stopped or not self._records:
            raise Stopped
        rec = self._records.popleft()
        self._tracer.delivered(rec)
        return rec

    def __aiter__(self) -> Any:
        return self._tracer.loop(self.__anext__)

    async def __anext__(self) -> ConsumerRecord[Any, Any]:
        try:
            return await self.getone()
        except Stopped:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> FakeConsumer:
        return self

    async def __aexit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        self._tracer.close(exc)
        await self.stop()

    async def stop(self) -> None:
        self._tracer.close(sys.exc_info()[1])
        await asyncio.sleep(0)  # closing connections
        self.stopped = True


def by_offset(spans: Sequence[ReadableSpan]) -> Mapping[int, ReadableSpan]:
    return {int((s.attributes or {})["messaging.kafka.offset"]): s for s in spans}


async def fail_inside_async_with(consumer: FakeConsumer, at_offset: int, error: Exception) -> None:
    """The loop shape ``async with consumer: async for ...``, whose body raises at one record."""
    async with consumer:
        async for rec in consumer:
            if rec.offset == at_offset:
                raise error


async def fail_before_stop_in_finally(consumer: FakeConsumer, at_offset: int, error: Exception) -> None:
    """The loop shape aiokafka's docs use: ``try: async for ... finally: await consumer.stop()``."""
    try:
        async for rec in consumer:
            await asyncio.sleep(0)
            if rec.offset == at_offset:
                raise error
    finally:
        await consumer.stop()

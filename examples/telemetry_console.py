"""See the consumer's OpenTelemetry spans and metrics on the console.

Run: .venv/bin/python examples/telemetry_console.py   (starts its own embedded Kafka broker)

Installs the OpenTelemetry SDK with the console exporters (one line per span, one per metric point),
then: a static member joins and commits, a second member joins (the first one rebalances), and the
second restarts within the session timeout (a join of its own, no rebalance for anyone). StaticConsumer
reports to the global providers by default; without the SDK installed it would record nothing.
"""

import asyncio
from collections.abc import Callable

from aiokafka import AIOKafkaProducer
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, MetricsData, PeriodicExportingMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

from staticconsumer import StaticConsumer
from staticconsumer.telemetry import attributes as a
from staticconsumer.testing import EmbeddedKafka

SETTINGS = {
    "group_id": "telemetry-demo",
    "session_timeout_ms": 10_000,
    "heartbeat_interval_ms": 1_000,
    "auto_offset_reset": "earliest",
}

SHOWN = (
    a.GROUP_INSTANCE_ID,
    a.REBALANCE_REASON,
    a.GENERATION_BEFORE,
    a.GENERATION_AFTER,
    a.LEADER,
    a.ASSIGNMENT_SKIPPED,
    a.PARTITIONS_ASSIGNED,
    a.PARTITIONS_REVOKED,
    a.COMMIT_PARTITIONS,
    a.ERROR_TYPE,
)


def one_line(span: ReadableSpan) -> str:
    """The console exporter prints JSON by default; one line per span reads better here."""
    attrs = span.attributes or {}
    duration_ms = ((span.end_time or 0) - (span.start_time or 0)) / 1e6
    indent = "  " if span.parent is not None else ""
    shown = " ".join(f"{key.rsplit('.', 1)[-1]}={attrs[key]}" for key in SHOWN if key in attrs)
    return f"span   {indent}{span.name:16s} {duration_ms:7.1f} ms  {shown}\n"


def metric_lines(data: MetricsData) -> str:
    lines = []
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                for point in metric.data.data_points:
                    value = getattr(point, "value", None)
                    if value is None:
                        value = f"count={point.count} sum={point.sum:.3f}"  # a histogram
                    # system, group and client id are the same on every point: leave them out
                    labels = {
                        k.rsplit(".", 1)[-1]: v
                        for k, v in point.attributes.items()
                        if not k.startswith("messaging.")
                    }
                    lines.append(f"metric {metric.name} {labels} {value}\n")
    return "".join(lines)


async def main(bootstrap: str, export_metrics: Callable[[], object]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    for i in range(10):
        await producer.send("orders", f"order-{i}".encode())
    await producer.stop()

    async with StaticConsumer(
        "orders", bootstrap_servers=bootstrap, group_instance_id="a", **SETTINGS
    ) as first:
        for _ in range(10):
            await first.getone()
        await first.commit()
        for _ in range(2):  # the second member joins, restarts and comes back
            async with StaticConsumer(
                "orders", bootstrap_servers=bootstrap, group_instance_id="b", **SETTINGS
            ) as second:
                while not second.assignment():
                    await second.getmany(timeout_ms=200)
                while len(first.assignment()) != 1:
                    await first.getmany(timeout_ms=200)
        print(f"a is still in generation {first.generation} after b's restart")
        export_metrics()  # while a still runs, so its gauges (time since rebalance, heartbeat) report


if __name__ == "__main__":
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(formatter=one_line)))
    trace.set_tracer_provider(tracer_provider)
    reader = PeriodicExportingMetricReader(
        ConsoleMetricExporter(formatter=metric_lines), export_interval_millis=3_600_000
    )
    meter_provider = MeterProvider(metric_readers=[reader], shutdown_on_exit=False)
    metrics.set_meter_provider(meter_provider)
    with EmbeddedKafka() as kafka:
        kafka.create_topic("orders", partitions=2)
        asyncio.run(main(kafka.bootstrap_servers, meter_provider.force_flush))

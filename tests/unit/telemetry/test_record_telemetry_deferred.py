"""Record telemetry of a consumer built before anything imported OpenTelemetry (issue 18).

``import staticconsumer`` and ``StaticConsumer(...)`` do not import OpenTelemetry; the consumer's
record tracer is then a ``DeferredRecordTracer``. An SDK installed later must still get every process
span, poll span and record metric from then on, as with a tracer built eagerly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from aiokafka.structs import TopicPartition
from record_harness import Sdk, record

from staticconsumer.telemetry import (
    NO_PROCESSING,
    DeferredRecordTracer,
    RecordLoop,
    RecordTracer,
    record_tracer,
)

ORDERS_0 = TopicPartition("orders", 0)


class Switch:
    def __init__(self) -> None:
        self.on = False

    def __call__(self) -> bool:
        return self.on


def _deferred(sdk: Sdk, switch: Switch) -> DeferredRecordTracer:
    return DeferredRecordTracer(
        in_use=switch,
        group_id="billing",
        client_id="billing-0-client",
        tracer_provider=sdk.tracer_provider,
        meter_provider=sdk.meter_provider,
    )


def test_nothing_is_built_or_recorded_until_opentelemetry_is_in_use() -> None:
    sdk, switch = Sdk(), Switch()
    deferred = _deferred(sdk, switch)
    deferred.requested()
    deferred.polled({ORDERS_0: [record(0)]}, 0)
    deferred.delivered(record(1))
    assert deferred.processing(record(2)) is NO_PROCESSING
    deferred.close()
    assert deferred.tracer is None
    assert deferred.per_record is False
    assert sdk.spans() == []


def test_from_the_first_request_after_opentelemetry_is_imported_every_record_is_traced() -> None:
    sdk, switch = Sdk(), Switch()
    deferred = _deferred(sdk, switch)
    deferred.requested()
    deferred.delivered(record(0))
    switch.on = True
    started = deferred.requested()
    assert isinstance(deferred.tracer, RecordTracer)
    assert deferred.per_record is True, "the SDK is there: the per-record path must call delivered"
    deferred.polled({ORDERS_0: [record(1)]}, started)
    deferred.requested()
    deferred.delivered(record(2))
    deferred.requested()
    with deferred.processing(record(3)):
        pass
    deferred.close()
    assert [s.name for s in sdk.spans()] == ["poll orders", "process orders", "process orders"]
    offsets = [(s.attributes or {}).get("messaging.kafka.offset") for s in sdk.spans("process orders")]
    assert offsets == [2, 3]


async def test_an_async_for_loop_begun_before_opentelemetry_traces_the_records_after_it() -> None:
    sdk, switch = Sdk(), Switch()
    deferred = _deferred(sdk, switch)
    pending = [record(offset) for offset in range(4)]

    async def anext() -> object:
        deferred.requested()  # what the consumer's __anext__ does when nothing is buffered
        item = pending.pop(0)
        deferred.delivered(item)
        return item

    loop = deferred.loop(anext)
    assert isinstance(loop, RecordLoop)
    await loop.__anext__()
    switch.on = True
    await loop.__anext__()
    await loop.__anext__()
    del loop
    deferred.close()
    offsets = [(s.attributes or {}).get("messaging.kafka.offset") for s in sdk.spans("process orders")]
    assert offsets == [1, 2]


def test_record_tracer_is_eager_when_opentelemetry_is_in_use() -> None:
    # This test process has imported OpenTelemetry (the harness's SDK), so nothing is deferred.
    sdk = Sdk()
    tracer = record_tracer(True, group_id="billing")
    assert isinstance(tracer, RecordTracer)
    assert record_tracer(False, group_id="billing") is None
    assert isinstance(sdk.record_tracer(), RecordTracer)


LATE_SDK = textwrap.dedent(
    """
    import asyncio, json, sys
    from aiokafka import ConsumerRecord
    import staticconsumer
    from staticconsumer.membership import MemberState, TopicPartition
    from staticconsumer.runtime import MemberSnapshot

    TP = TopicPartition("orders", 0)

    class Fetcher:
        def __init__(self):
            self.next = 0
        def assignment(self):
            return set()
        async def getmany(self, *tps, timeout_ms=0, max_records=None):
            await asyncio.sleep(0)
            rows = [ConsumerRecord("orders", 0, o, 0, 0, None, b"v", None, 1, 1, [])
                    for o in range(self.next, self.next + 2)]
            self.next += 2
            return {tps[0]: rows}

    class Membership:
        def poll_called(self):
            pass

    async def main():
        consumer = staticconsumer.StaticConsumer(
            "orders", bootstrap_servers="127.0.0.1:1", group_id="g", group_instance_id="g-0",
            enable_auto_commit=False)
        consumer._membership = Membership()
        await consumer._partitions.assign(frozenset({TP}), frozenset({TP}), 1, {TP: 0})
        consumer._partitions.membership_changed(
            MemberSnapshot(state=MemberState.STABLE, generation=1, assignment=frozenset({TP})))
        consumer._fetcher = consumer._partitions.fetcher = Fetcher()
        before = []
        async for r in consumer:
            before.append(r.offset)
            if len(before) == 4:
                break
        imported = "opentelemetry" in sys.modules

        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)

        after = []
        async for r in consumer:
            after.append(r.offset)
            if len(after) == 4:
                break
        polled = await consumer.getmany(timeout_ms=1000)
        consumer._records.close()
        spans = [(s.name, (s.attributes or {}).get("messaging.kafka.offset"))
                 for s in exporter.get_finished_spans()]
        print(json.dumps({"imported_before": imported, "before": before, "after": after,
                          "polled": sum(len(v) for v in polled.values()), "spans": spans}))

    asyncio.run(main())
    """
)


def test_an_sdk_installed_after_the_consumer_was_built_gets_its_record_spans() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    run = subprocess.run(
        [sys.executable, "-c", LATE_SDK], capture_output=True, text=True, env=env, timeout=60
    )
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    assert seen["imported_before"] is False, "no OpenTelemetry import while nobody used it"
    assert seen["before"] == [0, 1, 2, 3]
    assert seen["after"] == [4, 5, 6, 7]
    assert seen["polled"] == 2
    names = [name for name, _ in seen["spans"]]
    assert names.count("poll orders") == 1, names
    process = [offset for name, offset in seen["spans"] if name == "process orders"]
    assert process == [4, 5, 6, 7], "every record handed over after the SDK came has its process span"

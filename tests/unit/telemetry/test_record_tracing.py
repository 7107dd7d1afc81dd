"""Process and poll spans of records, through a fake consumer wired like StaticConsumer (phase 2)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.trace import SpanKind, StatusCode
from record_harness import (
    FakeConsumer,
    Sdk,
    by_offset,
    fail_before_stop_in_finally,
    fail_inside_async_with,
    record,
)

from staticconsumer.telemetry import ProcessParent
from staticconsumer.telemetry import attributes as a
from staticconsumer.telemetry.records import message_key, server_of


def current_span_id() -> int:
    return trace.get_current_span().get_span_context().span_id


async def test_handler_runs_in_a_process_span_that_is_a_child_of_the_producer() -> None:
    sdk = Sdk()
    produced = sdk.produced(3)
    consumer = FakeConsumer([record(i, headers=h) for i, (_, h) in enumerate(produced)], sdk.record_tracer())
    seen_current = []
    async with consumer:
        async for rec in consumer:
            seen_current.append(current_span_id())
            with sdk.app_tracer.start_as_current_span(f"handle {rec.offset}"):
                pass
            if rec.offset == 2:
                break
    process = by_offset(sdk.spans("process orders"))
    assert sorted(process) == [0, 1, 2]
    for offset, (producer, _) in enumerate(produced):
        span = process[offset]
        assert span.kind is SpanKind.CONSUMER
        assert span.parent is not None
        assert span.parent.span_id == producer.context.span_id
        assert span.context.trace_id == producer.context.trace_id
        assert [link.context.span_id for link in span.links] == [producer.context.span_id]
        assert seen_current[offset] == span.context.span_id, "the handler ran with the process span current"
        (handler,) = sdk.spans(f"handle {offset}")
        assert handler.parent is not None
        assert handler.parent.span_id == span.context.span_id
        assert span.status.status_code is StatusCode.UNSET
    assert current_span_id() == 0, "the record's context does not outlive the loop"


async def test_the_span_ends_when_the_next_record_is_requested() -> None:
    sdk = Sdk()
    consumer = FakeConsumer([record(i) for i in range(3)], sdk.record_tracer())
    ended_before = {}
    async for rec in consumer:
        ended_before[rec.offset] = sorted(by_offset(sdk.spans("process orders")))
    assert ended_before == {0: [], 1: [0], 2: [0, 1]}
    assert sorted(by_offset(sdk.spans("process orders"))) == [0, 1, 2], "StopAsyncIteration ends the last"
    spans = by_offset(sdk.spans("process orders"))
    assert spans[0].end_time is not None
    assert spans[1].start_time is not None
    assert spans[0].end_time <= spans[1].start_time


async def test_process_span_attributes_follow_the_kafka_conventions() -> None:
    sdk = Sdk()
    consumer = FakeConsumer(
        [record(7, partition=3, key=b"customer-42"), record(8, partition=3, key=b"\xff\x00", value=None)],
        sdk.record_tracer(),
    )
    async for _ in consumer:
        pass
    spans = by_offset(sdk.spans())
    assert set(spans) == {7, 8}
    assert dict(spans[7].attributes or {}) == {
        a.MESSAGING_SYSTEM: "kafka",
        a.MESSAGING_OPERATION_NAME: "process",
        a.MESSAGING_OPERATION_TYPE: "process",
        a.MESSAGING_DESTINATION_NAME: "orders",
        a.MESSAGING_DESTINATION_PARTITION_ID: "3",
        a.MESSAGING_KAFKA_OFFSET: 7,
        a.MESSAGING_KAFKA_MESSAGE_KEY: "customer-42",
        a.MESSAGING_CONSUMER_GROUP_NAME: "billing",
        a.MESSAGING_CLIENT_ID: "billing-0-client",
        a.GROUP_INSTANCE_ID: "billing-0",
    }
    tombstone = dict(spans[8].attributes or {})
    assert a.MESSAGING_KAFKA_MESSAGE_KEY not in tombstone, "a binary key has no canonical string form"
    assert tombstone[a.MESSAGING_KAFKA_MESSAGE_TOMBSTONE] is True
    assert a.SERVER_ADDRESS not in tombstone, "server.* goes on CLIENT spans"


async def test_an_exception_leaving_the_loop_body_is_recorded_through_async_with() -> None:
    sdk = Sdk()
    consumer = FakeConsumer([record(i) for i in range(5)], sdk.record_tracer())
    with pytest.raises(KeyError):
        await fail_inside_async_with(consumer, 1, KeyError("no such customer"))
    spans = by_offset(sdk.spans("process orders"))
    assert sorted(spans) == [0, 1]
    failed = spans[1]
    assert failed.status.status_code is StatusCode.ERROR
    assert (failed.attributes or {})[a.ERROR_TYPE] == "builtins.KeyError"
    (event,) = failed.events
    assert event.name == "exception"
    assert (event.attributes or {})["exception.type"] == "KeyError"
    assert spans[0].status.status_code is StatusCode.UNSET
    assert current_span_id() == 0


async def test_an_exception_leaving_the_loop_body_is_recorded_by_stop_in_finally() -> None:
    sdk = Sdk()
    consumer = FakeConsumer([record(i) for i in range(5)], sdk.record_tracer())
    with pytest.raises(ValueError, match="bad payload"):
        await fail_before_stop_in_finally(consumer, 2, ValueError("bad payload"))
    failed = by_offset(sdk.spans("process orders"))[2]
    assert failed.status.status_code is StatusCode.ERROR
    assert (failed.attributes or {})[a.ERROR_TYPE] == "builtins.ValueError"


async def test_break_detaches_at_once_and_ends_the_span_on_the_next_loop_turn() -> None:
    sdk = Sdk()
    consumer = FakeConsumer([record(i) for i in range(5)], sdk.record_tracer())
    async for rec in consumer:
        if rec.offset == 1:
            break
    assert current_span_id() == 0, "code after the loop is not inside the record's span"
    assert sorted(by_offset(sdk.spans())) == [0]
    await asyncio.sleep(0)
    assert sorted(by_offset(sdk.spans())) == [0, 1]
    assert by_offset(sdk.spans())[1].status.status_code is StatusCode.UNSET


async def test_a_swallowed_exception_ends_the_span_without_an_error() -> None:
    """The documented limit: the exception never passes the consumer, so only the span's end is known."""
    sdk = Sdk()
    consumer = FakeConsumer([record(i) for i in range(3)], sdk.record_tracer())
    try:
        async for _ in consumer:
            raise RuntimeError("handled elsewhere")
    except RuntimeError:
        pass
    await asyncio.sleep(0)
    (span,) = sdk.spans()
    assert span.status.status_code is StatusCode.UNSET
    assert current_span_id() == 0


async def test_processing_inside_the_loop_takes_over_the_span_and_records_for_certain() -> None:
    sdk = Sdk()
    tracer = sdk.record_tracer()
    consumer = FakeConsumer([record(i) for i in range(3)], tracer)
    try:
        async for rec in consumer:
            with tracer.processing(rec) as span:
                assert span.get_span_context().span_id == current_span_id()
                if rec.offset == 1:
                    raise RuntimeError("handled elsewhere")
    except RuntimeError:
        pass
    spans = by_offset(sdk.spans())
    assert sorted(spans) == [0, 1], "one span per record, not two"
    assert spans[1].status.status_code is StatusCode.ERROR
    assert current_span_id() == 0


async def test_inside_a_current_span_the_process_span_is_its_child_and_links_the_producer() -> None:
    sdk = Sdk()
    ((producer, headers),) = sdk.produced(1)
    consumer = FakeConsumer([record(0, headers=headers)], sdk.record_tracer())
    with sdk.app_tracer.start_as_current_span("batch job") as job:
        async for _ in consumer:
            pass
    (span,) = sdk.spans("process orders")
    assert span.parent is not None
    assert span.parent.span_id == job.get_span_context().span_id
    assert [link.context.span_id for link in span.links] == [producer.context.span_id]


async def test_parent_producer_always_parents_on_the_producer_and_links_the_current_span() -> None:
    sdk = Sdk()
    ((producer, headers),) = sdk.produced(1)
    consumer = FakeConsumer(
        [record(0, headers=headers)], sdk.record_tracer(process_parent=ProcessParent.PRODUCER)
    )
    with sdk.app_tracer.start_as_current_span("batch job") as job:
        async for _ in consumer:
            assert current_span_id() != job.get_span_context().span_id
        assert current_span_id() == job.get_span_context().span_id, "the job's context is back after the loop"
    (span,) = sdk.spans("process orders")
    assert span.parent is not None
    assert span.parent.span_id == producer.context.span_id
    assert [link.context.span_id for link in span.links] == [
        producer.context.span_id,
        job.get_span_context().span_id,
    ]


async def test_parent_current_starts_a_new_trace_linked_to_the_producer() -> None:
    sdk = Sdk()
    ((producer, headers),) = sdk.produced(1)
    consumer = FakeConsumer(
        [record(0, headers=headers)], sdk.record_tracer(process_parent=ProcessParent.CURRENT)
    )
    async for _ in consumer:
        pass
    (span,) = sdk.spans("process orders")
    assert span.parent is None
    assert span.context.trace_id != producer.context.trace_id
    assert [link.context.span_id for link in span.links] == [producer.context.span_id]


async def test_a_record_without_trace_context_gets_a_root_span_without_links() -> None:
    sdk = Sdk()
    consumer = FakeConsumer(
        [record(0, headers=[("other", b"x"), ("traceparent", b"garbage")])], sdk.record_tracer()
    )
    async for _ in consumer:
        pass
    (span,) = sdk.spans("process orders")
    assert span.parent is None
    assert not span.links


async def test_getmany_records_one_poll_span_linked_to_every_producer() -> None:
    sdk = Sdk()
    produced = sdk.produced(3)
    records = [record(i, partition=i % 2, headers=h) for i, (_, h) in enumerate(produced)] + [record(3)]
    consumer = FakeConsumer(records, sdk.record_tracer())
    with sdk.app_tracer.start_as_current_span("poller") as poller:
        batch = await consumer.getmany()
    assert sum(map(len, batch.values())) == 4
    (poll,) = sdk.spans("poll orders")
    assert poll.kind is SpanKind.CLIENT
    assert poll.parent is not None
    assert poll.parent.span_id == poller.get_span_context().span_id
    assert dict(poll.attributes or {}) == {
        a.MESSAGING_SYSTEM: "kafka",
        a.MESSAGING_OPERATION_NAME: "poll",
        a.MESSAGING_OPERATION_TYPE: "receive",
        a.MESSAGING_DESTINATION_NAME: "orders",
        a.MESSAGING_BATCH_MESSAGE_COUNT: 4,
        a.MESSAGING_CONSUMER_GROUP_NAME: "billing",
        a.MESSAGING_CLIENT_ID: "billing-0-client",
        a.GROUP_INSTANCE_ID: "billing-0",
        a.SERVER_ADDRESS: "kafka-1",
        a.SERVER_PORT: 9093,
    }
    linked = {link.context.span_id: dict(link.attributes or {}) for link in poll.links}
    assert linked == {
        producer.context.span_id: {
            a.MESSAGING_DESTINATION_PARTITION_ID: str(i % 2),
            a.MESSAGING_KAFKA_OFFSET: i,
        }
        for i, (producer, _) in enumerate(produced)
    }
    assert not sdk.spans("process orders"), "getmany opens no per-record span by itself"


async def test_a_poll_across_topics_is_named_by_the_operation_alone_and_links_carry_the_topic() -> None:
    sdk = Sdk()
    (orders,) = sdk.produced(1, topic="orders")
    (refunds,) = sdk.produced(1, topic="refunds")
    consumer = FakeConsumer(
        [record(0, headers=orders[1]), record(5, topic="refunds", partition=2, headers=refunds[1])],
        sdk.record_tracer(),
    )
    await consumer.getmany()
    (poll,) = sdk.spans("poll")
    assert a.MESSAGING_DESTINATION_NAME not in (poll.attributes or {})
    assert {(link.attributes or {})[a.MESSAGING_DESTINATION_NAME] for link in poll.links} == {
        "orders",
        "refunds",
    }


async def test_links_stop_at_the_limit() -> None:
    sdk = Sdk()
    produced = sdk.produced(5)
    consumer = FakeConsumer(
        [record(i, headers=h) for i, (_, h) in enumerate(produced)], sdk.record_tracer(max_links=2)
    )
    await consumer.getmany()
    (poll,) = sdk.spans("poll orders")
    assert [(link.attributes or {})[a.MESSAGING_KAFKA_OFFSET] for link in poll.links] == [0, 1]
    assert (poll.attributes or {})[a.MESSAGING_BATCH_MESSAGE_COUNT] == 5


async def test_an_empty_poll_records_nothing() -> None:
    sdk = Sdk()
    consumer = FakeConsumer([], sdk.record_tracer())
    assert await consumer.getmany() == {}
    assert sdk.spans() == []


async def test_processing_gives_getmany_users_a_span_per_record() -> None:
    sdk = Sdk()
    tracer = sdk.record_tracer()
    produced = sdk.produced(2)
    consumer = FakeConsumer([record(i, headers=h) for i, (_, h) in enumerate(produced)], tracer)
    batch = await consumer.getmany()
    inside = []

    def handle(rec: Any) -> None:
        with tracer.processing(rec) as span:
            inside.append(span.get_span_context().span_id == current_span_id())
            if rec.offset == 1:
                raise LookupError("missing")

    (records,) = batch.values()
    handle(records[0])
    with pytest.raises(LookupError):
        handle(records[1])
    assert inside == [True, True]
    spans = by_offset(sdk.spans("process orders"))
    assert spans[0].parent is not None
    assert spans[0].parent.span_id == produced[0][0].context.span_id
    assert spans[1].status.status_code is StatusCode.ERROR
    assert (spans[1].attributes or {})[a.ERROR_TYPE] == "builtins.LookupError"
    assert current_span_id() == 0


async def test_a_record_requested_from_another_task_is_ended_without_detach_errors(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """On Python 3.11 wait_for runs getone in a task of its own: its context went with that task."""
    sdk = Sdk()
    consumer = FakeConsumer([record(i) for i in range(3)], sdk.record_tracer())
    with caplog.at_level(logging.DEBUG, logger="opentelemetry.context"):
        first = await asyncio.ensure_future(consumer.getone())
        assert current_span_id() == 0, "the other task's context stayed there"
        second = await consumer.getone()
        assert current_span_id() != 0
        await consumer.stop()
    assert (first.offset, second.offset) == (0, 1)
    assert sorted(by_offset(sdk.spans())) == [0, 1]
    assert current_span_id() == 0
    assert not [r for r in caplog.records if r.name == "opentelemetry.context"], caplog.text


async def test_delivered_detaches_a_record_context_only_in_the_task_that_attached_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``delivered`` ends the previous record and starts the next with one look at the current task:
    the previous record's context is detached only where it was attached, the next one's is attached
    (and later detached) here."""
    sdk = Sdk()
    tracer = sdk.record_tracer()
    rows = [record(i) for i in range(3)]

    async def elsewhere() -> int:
        tracer.delivered(rows[0])
        return current_span_id()

    with caplog.at_level(logging.DEBUG, logger="opentelemetry.context"):
        assert await asyncio.ensure_future(elsewhere()) != 0
        assert current_span_id() == 0, "the other task's context stayed there"
        tracer.delivered(rows[1])  # ends record 0 (attached in the other task): nothing to detach here
        first = current_span_id()
        assert first != 0
        tracer.delivered(rows[2])  # ends record 1: detached here, record 2 attached in its place
        assert current_span_id() not in (0, first)
        tracer.end()
    assert current_span_id() == 0, "every context attached in this task was detached"
    spans = by_offset(sdk.spans("process orders"))
    assert sorted(spans) == [0, 1, 2]
    assert spans[1].context is not None
    assert spans[1].context.span_id == first
    assert not [r for r in caplog.records if r.name == "opentelemetry.context"], caplog.text


async def test_without_an_sdk_nothing_is_recorded_and_no_context_is_attached() -> None:
    sdk = Sdk()
    tracer = sdk.record_tracer(tracer_provider=trace.NoOpTracerProvider(), meter_provider=NoOpMeterProvider())
    assert not tracer.tracing()
    assert not tracer.metering()
    ((_, headers),) = sdk.produced(1)
    consumer = FakeConsumer([record(0, headers=headers), record(1)], tracer)
    async for _ in consumer:
        assert current_span_id() == 0
    with tracer.processing(record(2)) as span:
        assert not span.is_recording()
    assert [s.name for s in sdk.spans()] == ["send orders"]


def test_the_api_proxies_count_as_no_sdk() -> None:
    sdk = Sdk()
    tracer = sdk.record_tracer(tracer_provider=trace.ProxyTracerProvider())
    assert not tracer.tracing()


def test_an_sdk_installed_after_the_consumer_is_noticed_within_a_second(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from opentelemetry.sdk.trace import TracerProvider

    now = [100.0]
    installed: list[trace.TracerProvider] = [trace.ProxyTracerProvider()]
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: installed[0])
    sdk = Sdk()
    tracer = sdk.record_tracer(tracer_provider=None, clock=lambda: now[0])
    assert not tracer.tracing()
    installed[0] = TracerProvider()
    now[0] += 0.5
    assert not tracer.tracing(), "looked at no more than once a second"
    now[0] += 0.6
    assert tracer.tracing()
    installed[0] = trace.ProxyTracerProvider()
    now[0] += 10
    assert tracer.tracing(), "a global provider cannot be unset: never looked at again"


@pytest.mark.parametrize(
    ("key", "limit", "recorded"),
    [
        (b"customer-42", 64, "customer-42"),
        ("customer-42", 64, "customer-42"),
        (42, 64, "42"),
        (b"", 64, ""),
        (None, 64, None),
        (b"\xff\xfe", 64, None),
        (b"tab\there", 64, None),
        ("x" * 65, 64, None),
        ("x" * 64, 64, "x" * 64),
        (b"customer-42", 0, None),
        (True, 64, None),
        (3.5, 64, None),
        (memoryview(b"abc"), 64, "abc"),
    ],
)
def test_only_short_keys_with_a_canonical_printable_form_are_recorded(
    key: Any, limit: int, recorded: str | None
) -> None:
    assert message_key(key, limit) == recorded


@pytest.mark.parametrize(
    ("bootstrap", "server"),
    [
        ("kafka-1:9093,kafka-2:9093", ("kafka-1", 9093)),
        (("kafka-1:9093", "kafka-2:9093"), ("kafka-1", 9093)),
        ("kafka-1", ("kafka-1", 9092)),
        ("[::1]:19092", ("::1", 19092)),
        ("SASL_SSL://broker.example:9094", ("broker.example", 9094)),
        ((" ", "b:1"), ("b", 1)),
        ((), None),
        ("", None),
    ],
)
def test_server_address_is_the_first_bootstrap_server(bootstrap: Any, server: tuple[str, int] | None) -> None:
    assert server_of(bootstrap) == server


async def test_the_partition_of_each_record_is_right_when_records_switch_partition_and_topic() -> None:
    """The attributes of the last partition are reused record after record: a record of another
    partition or topic (or back to an earlier one) must get its own."""
    sdk = Sdk()
    where = [("orders", 0), ("orders", 0), ("orders", 1), ("refunds", 1), ("refunds", 0), ("orders", 0)]
    records = [record(i, topic=t, partition=p) for i, (t, p) in enumerate(where)]
    tracer = sdk.record_tracer()  # held: the consumed counter reads the running tracers
    async for _ in FakeConsumer(records, tracer):
        pass
    spans = by_offset(sdk.spans())
    assert sorted(spans) == list(range(len(where)))
    for offset, (topic, partition) in enumerate(where):
        attributes = dict(spans[offset].attributes or {})
        assert spans[offset].name == f"process {topic}"
        assert attributes[a.MESSAGING_DESTINATION_NAME] == topic
        assert attributes[a.MESSAGING_DESTINATION_PARTITION_ID] == str(partition)
    delivered = {
        (p.attributes[a.MESSAGING_DESTINATION_NAME], p.attributes[a.MESSAGING_DESTINATION_PARTITION_ID]): (
            p.value
        )
        for p in sdk.points(a.METRIC_CONSUMED_MESSAGES)
    }
    assert delivered == {("orders", "0"): 3, ("orders", "1"): 1, ("refunds", "1"): 1, ("refunds", "0"): 1}


async def test_the_parent_follows_the_current_span_when_it_changes_between_records() -> None:
    """What is current in the caller's context is asked once per context object: a span made current
    between two records, and gone again, must change the parent of the next record's span."""
    sdk = Sdk()
    produced = sdk.produced(4)
    tracer = sdk.record_tracer()
    records = [record(i, headers=h) for i, (_, h) in enumerate(produced)]
    tracer.delivered(records[0])  # no span current: parented on the producer
    tracer.end()
    with sdk.app_tracer.start_as_current_span("job") as job:
        tracer.delivered(records[1])  # the job is current: its child
        tracer.end()
        with sdk.app_tracer.start_as_current_span("inner") as inner:
            tracer.delivered(records[2])
            tracer.end()
    tracer.delivered(records[3])  # nothing current again: the producer
    tracer.end()
    spans = by_offset(sdk.spans("process orders"))
    parents = {offset: span.parent.span_id if span.parent else None for offset, span in spans.items()}
    assert parents == {
        0: produced[0][0].context.span_id,
        1: job.get_span_context().span_id,
        2: inner.get_span_context().span_id,
        3: produced[3][0].context.span_id,
    }
    for offset, (producer, _) in enumerate(produced):
        assert [link.context.span_id for link in spans[offset].links] == [producer.context.span_id]

"""Record metrics: consumed messages, process and poll durations, per-partition lag."""

from __future__ import annotations

import threading

import pytest
from record_harness import FakeConsumer, Sdk, fail_inside_async_with, record

from staticconsumer.membership import TopicPartition
from staticconsumer.telemetry import attributes as a
from staticconsumer.telemetry import partition_lag
from staticconsumer.telemetry.instruments import MESSAGING_DURATION_BUCKETS


def only(points: list[object], **wanted: object) -> list[object]:
    expected = {k.replace("__", "."): v for k, v in wanted.items()}
    return [p for p in points if all(p.attributes.get(k) == v for k, v in expected.items())]  # type: ignore[attr-defined]


async def test_consumed_messages_counts_per_partition_and_delivering_operation() -> None:
    sdk = Sdk()
    consumer = FakeConsumer(
        [record(0, partition=0), record(1, partition=0), record(0, partition=1), record(2, partition=0)],
        sdk.record_tracer(),
    )
    await consumer.getmany(max_records=3)
    async for _ in consumer:
        pass
    points = sdk.points(a.METRIC_CONSUMED_MESSAGES)
    by_key = {
        (
            p.attributes[a.MESSAGING_OPERATION_NAME],
            p.attributes[a.MESSAGING_DESTINATION_PARTITION_ID],
        ): p.value
        for p in points
    }
    assert by_key == {("poll", "0"): 2, ("poll", "1"): 1, ("process", "0"): 1}
    poll_point = only(points, messaging__operation__name="poll")[0]
    assert poll_point.attributes[a.SERVER_ADDRESS] == "kafka-1"  # type: ignore[attr-defined]
    assert poll_point.attributes[a.MESSAGING_CONSUMER_GROUP_NAME] == "billing"  # type: ignore[attr-defined]
    assert a.MESSAGING_KAFKA_OFFSET not in poll_point.attributes  # type: ignore[attr-defined]


async def test_process_duration_equals_the_span_and_carries_the_error_type() -> None:
    sdk = Sdk()
    consumer = FakeConsumer([record(0), record(1)], sdk.record_tracer())
    with pytest.raises(ZeroDivisionError):
        await fail_inside_async_with(consumer, 1, ZeroDivisionError("division by zero"))
    points = sdk.points(a.METRIC_PROCESS_DURATION)
    ok = only(points, **{"error.type": None})
    failed = only(points, error__type="builtins.ZeroDivisionError")
    assert len(ok) == 1
    assert len(failed) == 1
    assert ok[0].count == 1
    assert failed[0].count == 1
    spans = {s.attributes[a.MESSAGING_KAFKA_OFFSET]: s for s in sdk.spans("process orders")}  # type: ignore[index]
    span = spans[0]
    assert span.end_time is not None
    assert span.start_time is not None
    assert ok[0].sum == pytest.approx((span.end_time - span.start_time) / 1e9)  # type: ignore[attr-defined]
    assert tuple(ok[0].explicit_bounds) == MESSAGING_DURATION_BUCKETS  # type: ignore[attr-defined]
    assert ok[0].attributes[a.MESSAGING_OPERATION_NAME] == "process"  # type: ignore[attr-defined]


async def test_poll_duration_equals_the_poll_span() -> None:
    sdk = Sdk()
    consumer = FakeConsumer([record(0), record(1, topic="refunds")], sdk.record_tracer())
    await consumer.getmany(max_records=1)
    await consumer.getmany()
    points = sdk.points(a.METRIC_OPERATION_DURATION)
    assert {p.attributes.get(a.MESSAGING_DESTINATION_NAME) for p in points} == {"orders", "refunds"}
    (orders,) = only(points, messaging__destination__name="orders")
    (span,) = sdk.spans("poll orders")
    assert span.end_time is not None
    assert span.start_time is not None
    assert orders.sum == pytest.approx((span.end_time - span.start_time) / 1e9)  # type: ignore[attr-defined]
    assert orders.attributes[a.MESSAGING_OPERATION_NAME] == "poll"  # type: ignore[attr-defined]


def test_the_lag_gauge_reports_every_consumer_per_partition_until_it_closes() -> None:
    sdk = Sdk()
    readings = {TopicPartition("orders", 0): 5, TopicPartition("orders", 1): 0}
    first = sdk.record_tracer(lag=lambda: readings)
    second = sdk.record_tracer(group_instance_id="billing-1", lag=lambda: {TopicPartition("orders", 2): 9})
    points = sdk.points(a.METRIC_CONSUMER_LAG)
    seen = {
        (p.attributes[a.GROUP_INSTANCE_ID], p.attributes[a.MESSAGING_DESTINATION_PARTITION_ID]): p.value
        for p in points
    }
    assert seen == {("billing-0", "0"): 5, ("billing-0", "1"): 0, ("billing-1", "2"): 9}
    assert {p.attributes[a.MESSAGING_DESTINATION_NAME] for p in points} == {"orders"}
    readings[TopicPartition("orders", 0)] = 2
    second.close()
    seen = {
        p.attributes[a.MESSAGING_DESTINATION_PARTITION_ID]: p.value for p in sdk.points(a.METRIC_CONSUMER_LAG)
    }
    assert seen == {"0": 2, "1": 0}
    first.close()
    assert sdk.points(a.METRIC_CONSUMER_LAG) == []


def test_a_failing_lag_callback_costs_only_its_own_series() -> None:
    sdk = Sdk()

    def broken() -> dict[TopicPartition, int]:
        raise RuntimeError("consumer state changed under the exporter")

    consumers = [
        sdk.record_tracer(lag=broken),
        sdk.record_tracer(group_instance_id="billing-1", lag=lambda: {TopicPartition("orders", 0): 3}),
    ]
    assert [p.value for p in sdk.points(a.METRIC_CONSUMER_LAG)] == [3]
    del consumers[1]
    assert sdk.points(a.METRIC_CONSUMER_LAG) == [], "a consumer dropped without close() drops out too"


def test_partition_lag_is_end_offset_minus_position_where_both_are_known() -> None:
    t0, t1, t2, t3 = (TopicPartition("orders", i) for i in range(4))
    positions = {t0: 10, t1: 7, t3: 4}
    ends = {t0: 15, t1: 7, t2: 30}

    def end_offset(tp: TopicPartition) -> int | None:
        if tp == t3:
            raise AssertionError("Partition is not assigned")  # aiokafka's highwater() after a revoke
        return ends.get(tp)

    assert partition_lag([t0, t1, t2, t3], positions.get, end_offset) == {t0: 5, t1: 0}


def test_the_lag_callback_runs_on_the_exporter_thread() -> None:
    sdk = Sdk()
    threads = []

    def lag() -> dict[TopicPartition, int]:
        threads.append(threading.current_thread())
        return {TopicPartition("orders", 0): 1}

    tracer = sdk.record_tracer(lag=lag)
    collector = threading.Thread(target=sdk.reader.get_metrics_data)
    collector.start()
    collector.join()
    assert threads == [collector]
    tracer.close()

"""The aiokafka calls of StaticConsumer against a real broker: commits in aiokafka's shapes (and bad
ones refused without harm), subscribe() after start() and on a running consumer, unsubscribe(), and a
subscribed topic that does not exist (warned about with backoff, ``missing_topics``, a telemetry span,
or fatal with ``fail_on_missing_topics``)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import pytest
from aiokafka.structs import OffsetAndMetadata as AiokafkaOffsetAndMetadata
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from staticconsumer.consumer import StaticConsumer
from staticconsumer.errors import MissingTopicsError
from staticconsumer.membership import TopicPartition
from staticconsumer.telemetry import TelemetryObserver
from staticconsumer.testing import EmbeddedKafka

from .support import (
    FAST,
    RecordingListener,
    RequestRecorder,
    consume,
    describe_group,
    eventually,
    produce,
    until_assigned,
)

pytestmark = pytest.mark.kafka


async def test_commits_take_aiokafka_shapes_and_bad_input_harms_nothing(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=2)
    await produce(kafka_broker.bootstrap_servers, topic, 10)
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    async with StaticConsumer(
        topic,
        bootstrap_servers=kafka_broker.bootstrap_servers,
        group_id=unique_group,
        enable_auto_commit=False,
        **FAST,
    ) as consumer:
        await until_assigned(consumer)
        await consumer.commit({tp0: AiokafkaOffsetAndMetadata(3, "m"), tp1: (4, "meta")})
        with pytest.raises(
            TypeError, match=r"offsets\[TopicPartition\(topic='.*', partition=0\)\] offset must be"
        ):
            await consumer.commit({tp0: ("five", "m")})
        with pytest.raises(ValueError, match="must be an offset from 0"):
            await consumer.commit({tp0: -1})
        await consumer.commit({tp0: 5})  # the coordinator was never thought lost: this one just works
        assert await consumer.committed(tp0) == 5
        assert await consumer.committed(tp1) == 4
        assert await consumer.committed(TopicPartition(topic + "-other", 0)) is None
        assert await consumer.seek_to_committed(tp1) == {tp1: 4}
        assert await consumer.position(tp1) == 4


async def test_a_consumer_started_before_subscribe_joins_only_then(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=2)
    await produce(kafka_broker.bootstrap_servers, topic, 6)
    wire = RequestRecorder()
    consumer = StaticConsumer(
        bootstrap_servers=kafka_broker.bootstrap_servers,
        group_id=unique_group,
        group_instance_id="late-0",
        request_hook=wire,
        **FAST,
    )
    await consumer.start()
    try:
        assert await consumer.getmany(timeout_ms=1500) == {}
        assert not wire.of("JoinGroupRequest"), "nothing to join with: a join would cost a rebalance later"
        listener = RecordingListener()
        consumer.subscribe([topic], listener=listener)
        assert consumer.subscription() == {topic}
        assert len(await consume(consumer, 6)) == 6
        assert len(wire.of("JoinGroupRequest")) == 1, "a static member joins once, with its subscription"
        assert listener.kinds() == ["revoked", "assigned"], "eager: the empty revoke before the join"
    finally:
        await consumer.stop()


async def test_subscribe_on_a_running_consumer_rebalances_onto_the_new_topics(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str, unique_topic: str
) -> None:
    first = create_topic(f"{unique_topic}-first", partitions=2)
    second = create_topic(f"{unique_topic}-second", partitions=2)
    third = create_topic(f"{unique_topic}-third-x", partitions=1)
    bootstrap = kafka_broker.bootstrap_servers
    for topic in (first, second, third):
        await produce(bootstrap, topic, 4, prefix=topic)
    listener = RecordingListener()
    async with StaticConsumer(
        first, bootstrap_servers=bootstrap, group_id=unique_group, listener=listener, **FAST
    ) as consumer:
        assert {r.topic for r in await consume(consumer, 4)} == {first}
        generation = consumer.generation

        consumer.subscribe([second], listener=listener)
        assert consumer.subscription() == {second}
        assert all(tp.topic == second for tp in consumer.assignment()), "the old topic stops at once"
        records = await consume(consumer, 4)
        assert {r.topic for r in records} == {second}
        assert consumer.generation > generation, "the subscription change rebalanced the group"
        assert consumer.assignment() == {TopicPartition(second, 0), TopicPartition(second, 1)}
        revoked = [parts for kind, parts, _ in listener.events if kind == "revoked"]
        assert revoked[-1] == {TopicPartition(first, 0), TopicPartition(first, 1)}

        consumer.subscribe(pattern=f"{unique_topic}-third-.*")
        records = await consume(consumer, 4)
        assert {r.topic for r in records} == {third}
        assert consumer.subscription() == {third}, "what the pattern matched"
        assert consumer.partitions_for_topic(third) == {0}
        assert third in await consumer.topics()


async def test_unsubscribe_keeps_the_member_and_subscribe_gets_partitions_back(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=2)
    bootstrap = kafka_broker.bootstrap_servers
    listener = RecordingListener()
    async with StaticConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=unique_group,
        group_instance_id="quiet-0",
        listener=listener,
        **FAST,
    ) as consumer:
        await until_assigned(consumer)
        consumer.unsubscribe()
        assert consumer.assignment() == frozenset()

        async def revoked_and_stable() -> bool:
            await consumer.getmany(timeout_ms=200)
            group = await describe_group(bootstrap, unique_group)
            return (
                listener.kinds()[-1:] == ["assigned"]
                and len(listener.kinds()) >= 3
                and group.group_state == "Stable"
            )

        await eventually(revoked_and_stable, 30, "the rebalance after unsubscribe()")
        assert consumer.assignment() == frozenset()
        group = await describe_group(bootstrap, unique_group)
        assert [m.group_instance_id for m in group.members] == ["quiet-0"], "still a member, no LeaveGroup"

        consumer.subscribe([topic])
        await until_assigned(consumer)
        assert consumer.assignment() == {TopicPartition(topic, 0), TopicPartition(topic, 1)}


def _missing_topic_warnings(records: list[logging.LogRecord], topic: str) -> list[str]:
    return [
        r.getMessage()
        for r in records
        if r.name == "staticconsumer.connection.topics"
        and r.levelno == logging.WARNING
        and topic in r.getMessage()
    ]


async def test_a_missing_topic_is_warned_about_reported_and_consumed_once_created(
    kafka_broker: EmbeddedKafka, unique_topic: str, unique_group: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    bootstrap = kafka_broker.bootstrap_servers
    consumer = StaticConsumer(
        unique_topic,
        bootstrap_servers=bootstrap,
        group_id=unique_group,
        metadata_max_age_ms=1000,
        telemetry=TelemetryObserver(tracer_provider=provider),
        **FAST,
    )
    await consumer.start()
    try:
        assert consumer.missing_topics == {unique_topic}
        (warning,) = _missing_topic_warnings(caplog.records, unique_topic)
        assert f"subscribed topic(s) '{unique_topic}' do not exist" in warning
        started = time.monotonic()
        while time.monotonic() - started < 12:  # the reminder comes after 10 s, then 20 s, ...
            await consumer.getmany(timeout_ms=500)
        reminders = _missing_topic_warnings(caplog.records, unique_topic)
        assert len(reminders) == 2, reminders
        assert "waiting 1" in reminders[1], "the reminder says for how long"
        (span,) = [s for s in exporter.get_finished_spans() if s.name == "missing topics"]
        assert span.attributes is not None
        assert span.attributes["staticconsumer.topics.missing"] == (unique_topic,)
        assert span.attributes["messaging.consumer.group.name"] == unique_group
        assert [e.name for e in span.events] == ["staticconsumer.topics.not_found"]

        kafka_broker.create_topic(unique_topic, 1)
        await produce(bootstrap, unique_topic, 3)
        assert len(await consume(consumer, 3, within=60)) == 3
        await eventually(lambda: not consumer.missing_topics, 10, "the topic's creation noticed")
        assert any("exist now" in m for m in _missing_topic_warnings(caplog.records, unique_topic))
        appeared = [s for s in exporter.get_finished_spans() if s.name == "missing topics"][-1]
        assert [e.name for e in appeared.events] == ["staticconsumer.topics.appeared"]
    finally:
        await consumer.stop()


async def test_fail_on_missing_topics_fails_start_and_a_later_subscribe(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_topic: str, unique_group: str
) -> None:
    settings: dict[str, Any] = {
        "bootstrap_servers": kafka_broker.bootstrap_servers,
        "group_id": unique_group,
        "fail_on_missing_topics": True,
        **FAST,
    }
    consumer = StaticConsumer(f"{unique_topic}-nope", **settings)
    with pytest.raises(MissingTopicsError) as raised:
        await consumer.start()
    assert raised.value.topics == (f"{unique_topic}-nope",)
    assert "staticconsumer.fail.on.missing.topics is true" in str(raised.value)

    existing = create_topic(partitions=1)
    async with StaticConsumer(existing, **settings) as running:
        await until_assigned(running)
        running.subscribe([existing, f"{unique_topic}-later"])

        async def poll_for_30s() -> None:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                await running.getmany(timeout_ms=200)

        with pytest.raises(MissingTopicsError, match=f"'{unique_topic}-later'"):
            await poll_for_30s()

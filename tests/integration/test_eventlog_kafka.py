"""The event log's Kafka sink on a real broker: a consumer's records arrive; a full buffer drops, counted."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer

from staticconsumer.consumer import StaticConsumer
from staticconsumer.eventlog import KafkaSink, decode_line, schema
from staticconsumer.testing import EmbeddedKafka

from .support import FAST, until_assigned

pytestmark = pytest.mark.kafka


async def _read_topic(bootstrap: str, topic: str, expected: int, within: float = 30.0) -> list[bytes]:
    """Every record value on ``topic`` (partition order), once ``expected`` arrived or time ran out."""
    reader = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", group_id=None)
    await reader.start()
    values: list[bytes] = []
    try:
        deadline = time.monotonic() + within
        while len(values) < expected and time.monotonic() < deadline:
            batch = await reader.getmany(timeout_ms=500)
            values += [record.value for records in batch.values() for record in records if record.value]
        # Anything beyond ``expected`` would be a bug too: read a little longer to see it.
        batch = await reader.getmany(timeout_ms=1000)
        values += [record.value for records in batch.values() for record in records if record.value]
    finally:
        await reader.stop()
    return values


async def test_consumer_writes_its_event_log_to_a_topic_and_a_file(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str, tmp_path: Path
) -> None:
    topic = create_topic(partitions=3)
    log_topic = create_topic(f"{topic}-membership", partitions=1)
    consumer = StaticConsumer(
        topic,
        bootstrap_servers=kafka_broker.bootstrap_servers,
        group_id=unique_group,
        group_instance_id="logged-0",
        event_log_topic=log_topic,
        event_log_path=str(tmp_path / "{instance}.jsonl"),
        **FAST,
    )
    async with consumer:
        await until_assigned(consumer)
    assert consumer.event_log is not None
    assert consumer.event_log.dropped == 0
    from_file = (tmp_path / "logged-0.jsonl").read_bytes().splitlines()
    records = [decode_line(line) for line in from_file]
    tags = [schema.tag_of(type(r)) for r in records]
    assert tags[0] == "joining"
    assert tags[-1] == "stopped"
    assert {"sync", "assigned", "revoked"} <= set(tags), "static stop revokes, sends no LeaveGroup"
    assert "leaving" not in tags
    assigned = next(r for r in records if isinstance(r, schema.Assigned))
    assert {p.partition for p in assigned.partitions} == {0, 1, 2}
    assert assigned.member.startswith("logged-0-"), "the broker's member id for a static member"
    assert assigned.generation >= 1
    from_topic = await _read_topic(kafka_broker.bootstrap_servers, log_topic, len(from_file))
    assert from_topic == from_file, "the topic holds the same records, in the same order"


async def test_full_buffer_on_a_real_broker_drops_exactly_the_overflow(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str]
) -> None:
    log_topic = create_topic(partitions=1)
    sink = KafkaSink(log_topic, {"bootstrap_servers": kafka_broker.bootstrap_servers}, capacity=100)
    started = time.perf_counter()
    for i in range(5_000):
        sink.write(b'{"n":%d}\n' % i, b"group")
    burst = time.perf_counter() - started
    assert burst < 1.0, f"5,000 writes took {burst:.3f}s: write must never wait for the broker"
    assert (sink.queued, sink.dropped) == (100, 4_900)
    await sink.aclose()
    assert (sink.sent, sink.dropped) == (100, 4_900)
    values = await _read_topic(kafka_broker.bootstrap_servers, log_topic, 100)
    assert values == [b'{"n":%d}' % i for i in range(100)], "the first 100 were kept, in order"

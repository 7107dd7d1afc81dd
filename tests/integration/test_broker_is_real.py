"""The embedded broker is a real Kafka: records round-trip through aiokafka, and it speaks the group APIs
at exactly the versions Kafka's own Java client of the same release knows."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from staticconsumer.testing import EmbeddedKafka, ExternalKafka, broker_api_versions
from staticconsumer.testing.broker import API_NAMES
from tests.interop.oracle import JavaOracle

pytestmark = [pytest.mark.kafka, pytest.mark.both_versions]

GROUP_APIS = [
    "JoinGroup",
    "SyncGroup",
    "Heartbeat",
    "LeaveGroup",
    "OffsetCommit",
    "OffsetFetch",
    "DescribeGroups",
    "FindCoordinator",
]


async def test_produce_and_consume_round_trip(
    kafka_broker: EmbeddedKafka | ExternalKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=3)
    sent = {f"key-{i}".encode(): f"value-{i}".encode() for i in range(30)}
    producer = AIOKafkaProducer(bootstrap_servers=kafka_broker.bootstrap_servers)
    await producer.start()
    try:
        for key, value in sent.items():
            await producer.send_and_wait(topic, value, key=key)
    finally:
        await producer.stop()

    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=kafka_broker.bootstrap_servers,
        group_id=unique_group,
        auto_offset_reset="earliest",
    )
    await consumer.start()
    received: dict[bytes, bytes] = {}
    partitions: set[int] = set()
    try:
        async with asyncio.timeout(60):
            while len(received) < len(sent):
                batch = await consumer.getmany(timeout_ms=1000)
                for tp, records in batch.items():
                    for record in records:
                        assert record.key is not None
                        assert record.value is not None
                        received[record.key] = record.value
                        partitions.add(tp.partition)
    finally:
        await consumer.stop()
    assert received == sent
    assert partitions == {0, 1, 2}, "keys spread over every partition of a real topic"


def test_group_api_versions_match_the_java_client_of_the_same_release(
    kafka_broker: EmbeddedKafka | ExternalKafka, java_oracle_for: Callable[[str], JavaOracle]
) -> None:
    if isinstance(kafka_broker, ExternalKafka):
        pytest.fail("this check needs a pinned embedded broker: unset STATICCONSUMER_KAFKA_BOOTSTRAP")
    broker = {
        API_NAMES[k]: v
        for k, v in broker_api_versions(kafka_broker.bootstrap_servers).items()
        if k in API_NAMES
    }
    client = java_oracle_for(kafka_broker.version).api_versions()
    assert java_oracle_for(kafka_broker.version).kafka_version == kafka_broker.version
    assert broker["JoinGroup"][1] == 9, "JoinGroup v9 (SkipAssignment) on both lines"
    assert client["JoinGroup"][1] == 9
    for api in GROUP_APIS:
        assert broker[api][1] == client[api][1], f"{api}: broker max {broker[api]}, client {client[api]}"
    # Static membership needs these versions on the broker (instance id fields):
    assert broker["SyncGroup"][1] >= 3
    assert broker["Heartbeat"][1] >= 3
    assert broker["OffsetCommit"][1] >= 7
    assert broker["LeaveGroup"][1] >= 3

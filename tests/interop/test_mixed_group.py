"""Java KafkaConsumers and StaticConsumers in one group, on the real broker, for each assignor and with
either side leading: every partition is owned by exactly one member."""

from __future__ import annotations

import time

import pytest

from staticconsumer.consumer import StaticConsumer
from staticconsumer.testing import EmbeddedKafka
from tests.interop.oracle import JavaPeerConsumer

from ..integration.support import FAST

pytestmark = [pytest.mark.kafka, pytest.mark.oracle]

PARTITIONS = {"orders": 5, "payments": 3}


@pytest.mark.parametrize("leader_side", ["java", "python"])
@pytest.mark.parametrize("assignor", ["range", "roundrobin", "sticky", "cooperative-sticky"])
async def test_mixed_java_and_python_group_owns_every_partition_once(
    kafka_broker: EmbeddedKafka, unique_topic: str, unique_group: str, assignor: str, leader_side: str
) -> None:
    topics = [f"{unique_topic}-{name}" for name in PARTITIONS]
    for topic, count in zip(topics, PARTITIONS.values(), strict=True):
        kafka_broker.create_topic(topic, count)
    bootstrap = kafka_broker.bootstrap_servers
    java_members: list[JavaPeerConsumer] = []
    python_members: list[StaticConsumer] = []

    def start_java(index: int) -> None:
        java_members.append(
            JavaPeerConsumer.start(
                kafka_broker.version,
                bootstrap=bootstrap,
                group=unique_group,
                topics=",".join(topics),
                instance=f"java-{index}",
                assignor=assignor,
                session_ms=10000,
                heartbeat_ms=1000,
            )
        )

    async def start_python(index: int) -> None:
        consumer = StaticConsumer(
            *topics,
            bootstrap_servers=bootstrap,
            group_id=unique_group,
            group_instance_id=f"python-{index}",
            assignors=[assignor],
            **FAST,
        )
        await consumer.start()
        python_members.append(consumer)

    async def poll_python(seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            for consumer in python_members:
                await consumer.getmany(timeout_ms=50)

    try:
        # The first member to join leads.
        if leader_side == "java":
            start_java(0)
            while java_members[0].first("assigned") is None:
                await poll_python(0.2)
            await start_python(0)
        else:
            await start_python(0)
            while not python_members[0].assignment():
                await poll_python(0.2)
            start_java(0)
        start_java(1)
        await start_python(1)

        expected = {(t, p) for t, n in zip(topics, PARTITIONS.values(), strict=True) for p in range(n)}
        deadline = time.monotonic() + 60
        while True:
            await poll_python(0.3)
            owned = [{(tp.topic, tp.partition) for tp in c.assignment()} for c in python_members]
            owned += [j.assignment() for j in java_members]
            generations = {c.generation for c in python_members} | {
                j.last("assigned")["gen"] for j in java_members if j.last("assigned") is not None
            }
            flat = [tp for member in owned for tp in member]
            if len(generations) == 1 and sorted(flat) == sorted(expected) and all(owned):
                break
            if time.monotonic() > deadline:
                raise AssertionError(f"not settled: generations {generations}, owned {owned}")
        assert len(flat) == len(set(flat)), "no partition owned twice"
        leader = [c for c in python_members if c.is_leader]
        assert bool(leader) == (leader_side == "python"), "the side that joined first leads"
    finally:
        for consumer in python_members:
            await consumer.stop()
        for java in java_members:
            java.stop()

"""Run with: .venv/bin/pytest examples/test_with_fault_proxy.py

A Kafka cluster whose node advertises a FaultProxy: the client reaches the broker only through it, so
the test can cut the network and heal it. A static member cut off for less than its session timeout
keeps its member id and generation: nothing rebalances. (For three nodes, node kills and coordinator
failover, use the plugin's ``kafka_cluster`` fixture: EmbeddedKafkaCluster(nodes=3, fault_proxies=True).)
"""

import asyncio
from collections.abc import Iterator

import pytest
from aiokafka import AIOKafkaProducer

from staticconsumer import StaticConsumer
from staticconsumer.testing import EmbeddedKafkaCluster


@pytest.fixture(scope="module")
def proxied_kafka() -> Iterator[EmbeddedKafkaCluster]:
    with EmbeddedKafkaCluster(nodes=1, fault_proxies=True) as cluster:
        yield cluster


async def test_a_short_network_cut_costs_a_static_member_nothing(
    proxied_kafka: EmbeddedKafkaCluster, unique_topic: str, unique_group: str
) -> None:
    proxied_kafka.create_topic(unique_topic, partitions=2)
    consumer = StaticConsumer(
        unique_topic,
        bootstrap_servers=proxied_kafka.bootstrap_servers,  # the proxy's address
        group_id=unique_group,
        group_instance_id="orders-0",
        session_timeout_ms=10_000,
        heartbeat_interval_ms=1_000,
        auto_offset_reset="earliest",
    )
    await consumer.start()
    try:
        async with asyncio.timeout(60):
            while not consumer.assignment():
                await consumer.getmany(timeout_ms=200)
        before = (consumer.member_id, consumer.generation)

        proxy = proxied_kafka.proxy(1)
        proxy.blackhole(client_id=consumer.settings.effective_client_id)  # only this consumer's connections
        await asyncio.sleep(4)  # < session.timeout.ms: the broker keeps the member
        proxy.heal()

        producer = AIOKafkaProducer(bootstrap_servers=proxied_kafka.bootstrap_servers)
        await producer.start()
        await producer.send_and_wait(unique_topic, b"after the cut", partition=0)
        await producer.stop()
        records = []
        async with asyncio.timeout(60):
            while not records:
                batch = await consumer.getmany(timeout_ms=500)
                records = [r for rows in batch.values() for r in rows]
        assert records[0].value == b"after the cut"
        assert (consumer.member_id, consumer.generation) == before
    finally:
        await consumer.stop()

"""The 3-node cluster itself: ready means ready, clients go through the proxies, and the group
coordinator is where Kafka's own formula (Utils.abs of the Java hashCode) says it is."""

from __future__ import annotations

import asyncio

import pytest

from staticconsumer import _aiokafka
from staticconsumer.testing.cluster import OFFSETS_TOPIC, EmbeddedKafkaCluster
from staticconsumer.testing.probe import java_string_hash, offsets_partition_for

pytestmark = [pytest.mark.kafka, pytest.mark.faults]


def test_ready_means_every_offsets_partition_is_led_and_fully_replicated(
    cluster: EmbeddedKafkaCluster,
) -> None:
    described = cluster.describe_topics([OFFSETS_TOPIC])
    partitions = described[0]["partitions"]
    assert len(partitions) == cluster.settings.offsets_topic_partitions
    for partition in partitions:
        assert len(partition["replicas"]) == 3
        assert sorted(partition["isr"]) == [1, 2, 3]
        assert partition["leader"] in (1, 2, 3)
    assert cluster.registered_brokers() == {1, 2, 3}


async def test_clients_learn_the_proxies_addresses_from_metadata(cluster: EmbeddedKafkaCluster) -> None:
    client = _aiokafka.new_client(bootstrap_servers=cluster.bootstrap_servers)
    await client.bootstrap()
    try:
        metadata = await client.fetch_all_metadata()
        advertised = {broker.nodeId: broker.port for broker in metadata.brokers()}
    finally:
        await client.close()
    assert advertised == {node_id: cluster.proxy(node_id).port for node_id in (1, 2, 3)}


async def test_the_coordinator_of_a_group_with_a_negative_hash_code_is_the_leader_utils_abs_names(
    cluster: EmbeddedKafkaCluster,
) -> None:
    partitions = cluster.settings.offsets_topic_partitions
    leaders = {p: cluster.leader(OFFSETS_TOPIC, p) for p in range(partitions)}
    negative = [name for name in (f"orders-{i}" for i in range(40)) if java_string_hash(name) < 0]
    discriminating = [
        name
        for name in negative
        if leaders[offsets_partition_for(name, partitions)]
        != leaders[(java_string_hash(name) & 0x7FFFFFFF) % partitions]
    ]
    assert discriminating, f"leaders {leaders}: no group tells Utils.abs from a sign mask apart"
    for name in discriminating[:4] + negative[:4]:
        coordinator = await asyncio.to_thread(cluster.find_coordinator, name)
        assert coordinator == leaders[offsets_partition_for(name, partitions)], name

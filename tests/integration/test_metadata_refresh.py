"""Our clients' metadata refreshes (aiokafka's periodic one, and the one it forces after every failed
connect: a fleet's whole reconnect at a broker's return) are read by our decoder, give what aiokafka's
give, and a client that took its brokers only asks for no topic (issue 27)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from aiokafka import AIOKafkaClient

from staticconsumer import _aiokafka
from staticconsumer.testing import EmbeddedKafka, ExternalKafka

pytestmark = pytest.mark.kafka


def _state(client: Any, topic: str) -> tuple[Any, ...]:
    cluster = client.cluster
    return (
        {(b.nodeId, b.host, b.port) for b in cluster.brokers()},
        {p: cluster.leader_for_partition(_tp(topic, p)) for p in range(6)},
    )


def _tp(topic: str, partition: int) -> Any:
    from aiokafka.structs import TopicPartition

    return TopicPartition(topic, partition)


async def test_a_refresh_is_read_by_our_decoder_and_gives_what_aiokafkas_gives(
    kafka_broker: EmbeddedKafka | ExternalKafka,
    create_topic: Callable[..., str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    topic = create_topic(partitions=6)
    read: list[int] = []
    of = _aiokafka._MetadataRows.of
    monkeypatch.setattr(_aiokafka._MetadataRows, "of", classmethod(lambda cls, r: read.append(1) or of(r)))
    ours = _aiokafka.new_client(bootstrap_servers=kafka_broker.bootstrap_servers)
    theirs = AIOKafkaClient(bootstrap_servers=kafka_broker.bootstrap_servers)
    try:
        for client in (ours, theirs):
            await client.bootstrap()
            await client.set_topics([topic])  # a refresh naming the topic
        assert read, "our client's refresh went through our decoder"
        assert ours.cluster.topics() == theirs.cluster.topics() == {topic}
        assert _state(ours, topic) == _state(theirs, topic)
        assert ours.cluster.partitions_for_topic(topic) == set(range(6))
        everything = await ours.fetch_all_metadata()  # every topic, as aiokafka's
        assert topic in everything.topics()
    finally:
        await ours.close()
        await theirs.close()


async def test_a_client_that_took_its_brokers_only_refreshes_them_without_any_topic(
    kafka_broker: EmbeddedKafka | ExternalKafka, create_topic: Callable[..., str]
) -> None:
    topic = create_topic(partitions=2)
    brokers_only = _aiokafka.new_client(bootstrap_servers=kafka_broker.bootstrap_servers)
    tracking_none = _aiokafka.new_client(bootstrap_servers=kafka_broker.bootstrap_servers)
    try:
        for client in (brokers_only, tracking_none):
            await client.bootstrap()
        brokers_only.brokers_only = True
        for client in (brokers_only, tracking_none):
            await client.force_metadata_update()
        assert brokers_only.cluster.brokers(), "its brokers are refreshed"
        assert brokers_only.cluster.topics() == set(), "no topic asked for (aiokafka asks for every one)"
        assert topic in tracking_none.cluster.topics(), "any other client keeps aiokafka's all-topics refresh"
        assert topic in (await brokers_only.fetch_all_metadata()).topics(), "an explicit read of all still is"
    finally:
        await brokers_only.close()
        await tracking_none.close()

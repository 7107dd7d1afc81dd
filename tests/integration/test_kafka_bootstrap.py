"""``KafkaBootstrap``: the brokers given, or an embedded one for the duration; its topics exist either way."""

from __future__ import annotations

import socket

import pytest
from aiokafka.admin import AIOKafkaAdminClient

from staticconsumer.testing import EmbeddedKafka, ExternalKafka, KafkaBootstrap
from staticconsumer.testing.launcher import run_coroutine_blocking

pytestmark = pytest.mark.kafka


async def _partitions(bootstrap: str, topic: str) -> int:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        (described,) = await admin.describe_topics([topic])
    finally:
        await admin.close()
    assert described["error_code"] == 0, described
    return len(described["partitions"])


def _listening(bootstrap: str) -> bool:
    host, port = bootstrap.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=2).close()
    except OSError:
        return False
    return True


def test_given_brokers_are_used_as_they_are_and_get_the_topics(
    kafka_broker: EmbeddedKafka | ExternalKafka, unique_topic: str
) -> None:
    given = kafka_broker.bootstrap_servers
    kafka = KafkaBootstrap(f" {given} ", topics={unique_topic: 3})
    with kafka as bootstrap:
        assert bootstrap == given
        assert kafka.embedded is None, "no broker of its own"
        assert run_coroutine_blocking(lambda: _partitions(bootstrap, unique_topic)) == 3
    with KafkaBootstrap(given, topics={unique_topic: 2}) as bootstrap:  # exists with more: kept as it is
        assert run_coroutine_blocking(lambda: _partitions(bootstrap, unique_topic)) == 3
    assert _listening(given), "given brokers are not stopped"


async def test_async_with_given_brokers(
    kafka_broker: EmbeddedKafka | ExternalKafka, unique_topic: str
) -> None:
    async with KafkaBootstrap(kafka_broker.bootstrap_servers, topics={unique_topic: 2}) as bootstrap:
        assert bootstrap == kafka_broker.bootstrap_servers
        assert await _partitions(bootstrap, unique_topic) == 2


async def test_without_brokers_an_embedded_one_runs_for_the_block_only() -> None:
    kafka = KafkaBootstrap(topics={"orders": 2})
    async with kafka as bootstrap:
        assert kafka.embedded is not None
        assert kafka.embedded.running
        assert await _partitions(bootstrap, "orders") == 2
    assert not kafka.embedded.running
    assert not _listening(bootstrap), "the embedded broker was stopped on exit"


def test_empty_bootstrap_servers_are_refused() -> None:
    with pytest.raises(ValueError, match="bootstrap_servers is empty"):
        KafkaBootstrap("  ")

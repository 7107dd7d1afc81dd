"""The consumer-protocol check against the real brokers: 4.x passes, 3.9.2 gets the typed refusal.

3.9.2 advertises ConsumerGroupHeartbeat v0 by default yet answers it UNSUPPORTED_VERSION (the KIP-848
preview is off unless group.coordinator.rebalance.protocols includes consumer); the check refuses it from
its ApiVersions alone, naming the broker and the release derived from them, before any heartbeat.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
from aiokafka.client import AIOKafkaClient

from staticconsumer import _aiokafka as bridge
from staticconsumer import protocol as p
from staticconsumer.broker_support import broker_release, consumer_protocol_refused, ensure_consumer_protocol
from staticconsumer.errors import ConsumerProtocolUnsupportedError, ErrorCode
from staticconsumer.testing import EmbeddedKafka, ExternalKafka

pytestmark = [pytest.mark.kafka, pytest.mark.both_versions]


@pytest.fixture
async def client(kafka_broker: EmbeddedKafka | ExternalKafka) -> AsyncIterator[AIOKafkaClient]:
    kafka = AIOKafkaClient(bootstrap_servers=kafka_broker.bootstrap_servers, client_id="support-test")
    await kafka.bootstrap()
    try:
        yield kafka
    finally:
        await kafka.close()


async def test_the_check_passes_on_kafka_4_and_refuses_3_9_with_the_release(
    kafka_broker: EmbeddedKafka | ExternalKafka, client: AIOKafkaClient, unique_group: str
) -> None:
    if isinstance(kafka_broker, ExternalKafka):
        pytest.fail("this check needs a pinned embedded broker: unset STATICCONSUMER_KAFKA_BOOTSTRAP")
    node = bridge.any_node(client)
    versions = await bridge.broker_versions(client, node)
    line = ".".join(kafka_broker.version.split(".")[:2])
    if kafka_broker.version.startswith("3."):
        assert broker_release(versions) == line
        assert versions[p.ConsumerGroupHeartbeatRequest.API_KEY] == (0, 0), "3.9 advertises the v0 preview"
        with pytest.raises(ConsumerProtocolUnsupportedError) as raised:
            await ensure_consumer_protocol(client, node)
        error = raised.value
        assert (error.node_id, error.broker_release, error.advertised) == (node, "3.9", (0, 0))
        assert f"broker {node} (Kafka 3.9, derived from its API versions)" in str(error)
        assert "Upgrade the brokers to Kafka 4.0 or newer" in str(error)
        assert "group_protocol=classic" in str(error)
        # what the check spares the consumer: the heartbeat it advertises is refused
        found = await bridge.send(client, node, p.FindCoordinatorRequest(coordinator_keys=[unique_group]))
        (coordinator,) = found.response_as(p.FindCoordinatorResponse).coordinators
        join = p.ConsumerGroupHeartbeatRequest(
            unique_group, str(uuid.uuid4()), 0, "pod-0", None, 30_000, ["t"], None, None, []
        )
        answer = await bridge.send(client, coordinator.node_id, join)
        assert answer.version == 0
        refused = answer.response_as(p.ConsumerGroupHeartbeatResponse)
        assert (refused.error_code, refused.error_message) == (ErrorCode.UNSUPPORTED_VERSION, None)
        assert "switched off" in str(consumer_protocol_refused(versions, node, refused.error_message))
    else:
        assert broker_release(versions) == f"{line} or newer"
        assert await ensure_consumer_protocol(client, node) == 1

"""The rolling-bounce benchmark's member processes that are not our asyncio consumer, small, on the real
broker: our sync consumer and kafka-python 3.0 (issue 28), and confluent-kafka's AIOConsumer on the classic
and the consumer protocol and its blocking Consumer (issue 26), all static. Each member process reports its
assignments and its restart timeline from its client's own hooks, and a static member back within the
session timeout moves nobody."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from staticconsumer.bounce import MODES, TIMELINE, BounceSettings, bounce
from staticconsumer.testing import EmbeddedKafka

pytestmark = pytest.mark.kafka

PEER_MODES = (
    "staticconsumer-sync-static",
    "kafka-python-static",
    "confluent-static",
    "confluent-consumer",
    "confluent-sync-static",
)


@pytest.mark.parametrize("name", PEER_MODES)
async def test_a_static_peer_mode_bounces_without_moving_anyone(
    kafka_broker: EmbeddedKafka, name: str
) -> None:
    mode = MODES[name]
    settings = BounceSettings(members=2, partitions_per_member=2, grace=1.0)
    topic = f"bounce-{name}-{uuid.uuid4().hex[:6]}"
    await asyncio.to_thread(kafka_broker.create_topic, topic, settings.partitions)
    result = await bounce(mode, kafka_broker.bootstrap_servers, topic, topic, settings)
    assert [r.index for r in result.restarts] == [0, 1]
    assert result.rebalances == 0, f"generations (epochs) after the group settled: {result.generations}"
    assert result.revoked_from_others == 0
    assert result.start_generation >= 1, "the first assignments carried the generation (epoch)"
    for restart in result.restarts:
        assert set(restart.timeline) == set(TIMELINE), f"restart {restart.index} reported {restart.timeline}"
        steps = [restart.timeline[step] for step in TIMELINE]
        assert steps[2:5] == sorted(steps[2:5]), f"coordinator, joined, synced in order: {restart.timeline}"
        assert 0 < restart.seconds_to_assigned <= restart.seconds_to_first_record
        assert restart.seconds_away < settings.session_ms / 1000
    # Each restart leaves its partitions unowned from the stop until the new process is assigned them.
    assert 0 < result.unowned_partition_seconds < settings.partitions * result.window_seconds

"""The rolling-bounce benchmark's confluent-kafka modes (issue 26), small, on the real broker: the
AIOConsumer on the classic and the consumer protocol, and the blocking Consumer, all static. Each member
process reports its assignments and its restart timeline from librdkafka's own hooks, and a static member
back within the session timeout moves nobody."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from staticconsumer.bounce import MODES, TIMELINE, BounceSettings, bounce
from staticconsumer.testing import EmbeddedKafka

pytestmark = pytest.mark.kafka


@pytest.mark.parametrize("name", ["confluent-static", "confluent-consumer", "confluent-sync-static"])
async def test_a_confluent_static_mode_bounces_without_moving_anyone(
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
    assert result.start_generation >= 1, "the assignments carried the generation (epoch) librdkafka logged"
    for restart in result.restarts:
        assert set(restart.timeline) == set(TIMELINE), f"restart {restart.index} reported {restart.timeline}"
        steps = [restart.timeline[step] for step in TIMELINE]
        assert steps[2:5] == sorted(steps[2:5]), f"coordinator, joined, synced in order: {restart.timeline}"
        assert 0 < restart.seconds_to_assigned <= restart.seconds_to_first_record
        assert restart.seconds_away < settings.session_ms / 1000
    assert 0 < result.unowned_partition_seconds < settings.partitions * result.window_seconds

"""The rolling-bounce benchmark's synchronous modes, small, on the real broker: our sync consumer and
kafka-python 3.0, both static. Each member process reports what the benchmark folds into its figures
(issue 28), and a static member back within the session timeout moves nobody."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from staticconsumer.bounce import MODES, TIMELINE, BounceSettings, bounce
from staticconsumer.testing import EmbeddedKafka

pytestmark = pytest.mark.kafka


@pytest.mark.parametrize("name", ["staticconsumer-sync-static", "kafka-python-static"])
async def test_a_synchronous_static_mode_bounces_without_a_rebalance(
    kafka_broker: EmbeddedKafka, name: str
) -> None:
    mode = MODES[name]
    settings = BounceSettings(members=2, partitions_per_member=2, grace=1.0)
    topic = f"bounce-{name}-{uuid.uuid4().hex[:6]}"
    await asyncio.to_thread(kafka_broker.create_topic, topic, settings.partitions)
    result = await bounce(mode, kafka_broker.bootstrap_servers, topic, topic, settings)
    assert [r.index for r in result.restarts] == [0, 1]
    assert result.rebalances == 0, f"generations after the group settled: {result.generations}"
    assert result.revoked_from_others == 0
    assert result.start_generation >= 1, "the first assignments carried the generation"
    for restart in result.restarts:
        assert set(restart.timeline) == set(TIMELINE), f"restart {restart.index} reported {restart.timeline}"
        assert 0 < restart.seconds_to_assigned <= restart.seconds_to_first_record
        assert restart.seconds_away < settings.session_ms / 1000
    # Each restart leaves its partitions unowned from the stop until the new process is assigned them.
    assert 0 < result.unowned_partition_seconds < settings.partitions * result.window_seconds

"""The rolling bounce's paired run (issue 26) on the real broker: our static group and aiokafka's live at
once, each on its own topic and group, restarted member by member in alternating order, so each restart
of ours has a neighbour of aiokafka's measured on the same machine state."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from staticconsumer.bounce import MODES, TIMELINE, BounceSettings, paired_bounce
from staticconsumer.testing import EmbeddedKafka

pytestmark = pytest.mark.kafka


async def test_two_static_groups_bounce_together_restart_by_restart(kafka_broker: EmbeddedKafka) -> None:
    settings = BounceSettings(members=2, partitions_per_member=2, grace=0.5)
    suffix = uuid.uuid4().hex[:6]
    topics = (f"paired-ours-{suffix}", f"paired-theirs-{suffix}")
    for topic in topics:
        await asyncio.to_thread(kafka_broker.create_topic, topic, settings.partitions)
    said: list[str] = []
    ours, theirs = await paired_bounce(
        (MODES["staticconsumer-static"], MODES["aiokafka-static"]),
        kafka_broker.bootstrap_servers,
        topics,
        settings,
        said.append,
    )
    # A B for member 0, B A for member 1: neither side always restarts right after the other settled.
    assert [line.split(" restart")[0].strip() for line in said] == [
        "staticconsumer-static",
        "aiokafka-static",
        "aiokafka-static",
        "staticconsumer-static",
    ]
    for result, mode in ((ours, "staticconsumer-static"), (theirs, "aiokafka-static")):
        assert result.mode == mode
        assert [r.index for r in result.restarts] == [0, 1]
        assert result.rebalances == 0, f"{mode}: generations after the group settled: {result.generations}"
        assert result.revoked_from_others == 0
        for restart in result.restarts:
            assert set(restart.timeline) == set(TIMELINE), (
                f"{mode} restart {restart.index}: {restart.timeline}"
            )
            assert 0 < restart.seconds_to_assigned <= restart.seconds_to_first_record
        assert 0 < result.unowned_partition_seconds < settings.partitions * result.window_seconds

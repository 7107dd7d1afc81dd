"""A pattern subscription that starts matching a new topic costs the group one rebalance, not two.

The member that sees the new topic first rejoins; the others learn of the rebalance from their heartbeat,
before their own metadata refresh has seen the topic. Each must match its pattern against fresh metadata
before it joins (as aiokafka and Java do), or it joins with its old subscription, gets none of the new
topic, and rebalances the group once more when its own refresh sees the topic.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from staticconsumer.consumer import StaticConsumer
from staticconsumer.testing import EmbeddedKafka

from .support import FAST, RecordingListener, eventually

pytestmark = pytest.mark.kafka

QUICK_MS = 300
"""The metadata age of the member that notices the new topic (and rejoins) first."""
SLOW_MS = 4_000
"""The other member's: its own refresh comes well after the first member's rejoin."""


async def test_a_new_topic_matching_the_pattern_costs_one_rebalance(
    kafka_broker: EmbeddedKafka, unique_topic: str, unique_group: str
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    kafka_broker.create_topic(f"{unique_topic}-a", 2)
    listeners = [RecordingListener(), RecordingListener()]
    consumers = [
        StaticConsumer(
            pattern=rf"{unique_topic}-.*",
            bootstrap_servers=bootstrap,
            group_id=unique_group,
            group_instance_id=f"p{index}",
            metadata_max_age_ms=age_ms,
            listener=listener,
            **FAST,
        )
        for index, (age_ms, listener) in enumerate(zip((QUICK_MS, SLOW_MS), listeners, strict=True))
    ]
    for consumer in consumers:
        await consumer.start()
    try:

        async def settled(partitions: int) -> bool:
            await asyncio.gather(*(c.getmany(timeout_ms=50) for c in consumers))
            owned = [tp for c in consumers for tp in c.assignment()]
            generations = {c.generation for c in consumers}
            return len(owned) == len(set(owned)) == partitions and len(generations) == 1

        await eventually(lambda: settled(2), 30, "both members sharing the first topic in one generation")
        before = consumers[0].generation
        assigned_before = [listener.kinds().count("assigned") for listener in listeners]

        kafka_broker.create_topic(f"{unique_topic}-b", 2)
        await eventually(lambda: settled(4), 30, "the new matching topic assigned in one generation")
        # Past the slow member's own refresh: a member that joined without the topic rejoins by then.
        quiet_until = time.monotonic() + SLOW_MS / 1000 + 2
        while time.monotonic() < quiet_until:
            await asyncio.gather(*(c.getmany(timeout_ms=100) for c in consumers))

        assert all(c.generation == before + 1 for c in consumers), (
            f"generations {[c.generation for c in consumers]} after {before}: one rebalance expected"
        )
        assert [listener.kinds().count("assigned") for listener in listeners] == [
            count + 1 for count in assigned_before
        ]
        assert {tp.topic for c in consumers for tp in c.assignment()} == {
            f"{unique_topic}-a",
            f"{unique_topic}-b",
        }
    finally:
        await asyncio.gather(*(c.stop() for c in consumers))

"""aiokafka's options against a real broker: exclude_internal_topics=False lets a pattern subscription
match (and read) __consumer_offsets, and max_poll_records=None lets one getmany return everything
fetched, past the Java default of 500."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from staticconsumer.consumer import StaticConsumer
from staticconsumer.testing import EmbeddedKafka

from .support import FAST, eventually, produce, until_assigned

pytestmark = pytest.mark.kafka

OFFSETS_TOPIC = "__consumer_offsets"


async def test_a_pattern_matches_internal_topics_only_with_exclude_internal_topics_false(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=1)
    await produce(kafka_broker.bootstrap_servers, topic, 1)
    pattern = f"{topic}|{OFFSETS_TOPIC}"

    async with StaticConsumer(
        pattern=pattern,
        bootstrap_servers=kafka_broker.bootstrap_servers,
        group_id=f"{unique_group}-a",
        **FAST,
    ) as excluding:
        await until_assigned(excluding)
        assert {tp.topic for tp in excluding.assignment()} == {topic}, (
            "the default leaves internal topics out"
        )

    async with StaticConsumer(
        pattern=pattern,
        bootstrap_servers=kafka_broker.bootstrap_servers,
        group_id=f"{unique_group}-b",
        exclude_internal_topics=False,
        enable_auto_commit=False,
        **FAST,
    ) as including:
        topics_read: set[str] = set()

        async def read_both() -> bool:  # the group's own join wrote its metadata to __consumer_offsets
            batch = await including.getmany(timeout_ms=500)
            topics_read.update(tp.topic for tp, rows in batch.items() if rows)
            return topics_read == {topic, OFFSETS_TOPIC}

        await eventually(
            read_both,
            20,
            "records read from the topic and from __consumer_offsets",
            lambda: f"assignment {sorted(including.assignment())}, read from {sorted(topics_read)}",
        )
        assert {tp.topic for tp in including.assignment()} == {topic, OFFSETS_TOPIC}


async def test_max_poll_records_none_returns_everything_fetched_in_one_getmany(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=1)
    await produce(kafka_broker.bootstrap_servers, topic, 1200)

    async def batch_sizes(group: str, **options: Any) -> list[int]:
        sizes: list[int] = []
        async with StaticConsumer(
            topic, bootstrap_servers=kafka_broker.bootstrap_servers, group_id=group, **FAST, **options
        ) as consumer:
            deadline = time.monotonic() + 30
            while sum(sizes) < 1200 and time.monotonic() < deadline:  # from the first poll on: none lost
                batch = await consumer.getmany(timeout_ms=1000)
                sizes.extend(len(rows) for rows in batch.values() if rows)
        return sizes

    unlimited = await batch_sizes(f"{unique_group}-none", max_poll_records=None)
    assert sum(unlimited) == 1200
    assert max(unlimited) > 500, unlimited
    default = await batch_sizes(f"{unique_group}-default")
    assert sum(default) == 1200
    assert max(default) <= 500, default

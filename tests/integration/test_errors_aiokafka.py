"""commit({}) against a real broker: nothing is sent by a healthy consumer (as in aiokafka and Java), while a
fenced one still raises its fencing, which an aiokafka service's ``except`` clauses catch."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import aiokafka.errors
import pytest

from staticconsumer.consumer import StaticConsumer
from staticconsumer.errors import FencedInstanceIdError
from staticconsumer.membership import TopicPartition
from staticconsumer.testing import EmbeddedKafka

from .support import (
    FAST,
    RequestRecorder,
    committed_offsets,
    consume,
    poll_until_it_raises,
    produce,
    take_over_instance_id,
    until_assigned,
)

pytestmark = pytest.mark.kafka


async def test_commit_of_an_empty_mapping_sends_nothing_and_changes_nothing(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=1)
    bootstrap = kafka_broker.bootstrap_servers
    await produce(bootstrap, topic, 3)
    wire = RequestRecorder()
    async with StaticConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=unique_group,
        group_instance_id="empty-0",
        enable_auto_commit=False,
        request_hook=wire,
        **FAST,
    ) as consumer:
        await consume(consumer, 3)
        await consumer.commit()
        commits = len(wire.of("OffsetCommitRequest"))
        assert commits >= 1
        assert await consumer.commit({}) is None
        assert len(wire.of("OffsetCommitRequest")) == commits, "commit({}) sent an OffsetCommit"
        assert await committed_offsets(bootstrap, unique_group) == {TopicPartition(topic, 0): 3}


async def test_a_fenced_consumer_commit_of_an_empty_mapping_raises_the_fencing(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=1)
    bootstrap = kafka_broker.bootstrap_servers
    async with StaticConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=unique_group,
        group_instance_id="fenced-0",
        enable_auto_commit=False,
        **FAST,
    ) as consumer:
        await until_assigned(consumer)
        # Another process takes the instance id: a JoinGroup with it and no member id replaces this
        # member, whose next heartbeat is answered FENCED_INSTANCE_ID.
        takeover = take_over_instance_id(bootstrap, unique_group, "fenced-0", topic)
        try:
            with pytest.raises(FencedInstanceIdError):
                await poll_until_it_raises(consumer)
        finally:
            takeover.cancel()
            await asyncio.gather(takeover, return_exceptions=True)

        with pytest.raises(FencedInstanceIdError, match=r"fenced group\.instance\.id 'fenced-0'"):
            await consumer.commit({})
        with pytest.raises(aiokafka.errors.BrokerResponseError) as caught:  # as an aiokafka service catches
            await consumer.commit({})
        assert caught.value.errno == 82

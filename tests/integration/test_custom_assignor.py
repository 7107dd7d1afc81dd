"""The path examples/custom_assignor.py describes, outside that example's own wiring: register a custom
assignor with ``assignors.register``, name it first in ``KAFKA_PARTITION_ASSIGNMENT_STRATEGY``, and a group
of StaticConsumers on a real broker agrees on it and assigns with it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator, Mapping, Sequence

import pytest

import assignors
from assignors import Assignor, GroupAssignment, Member, MemberAssignment, TopicInfo
from staticconsumer.consumer import StaticConsumer
from staticconsumer.settings import Settings
from staticconsumer.testing import EmbeddedKafka

from .support import FAST, describe_group

pytestmark = pytest.mark.kafka


class AllToTheLastInstance(Assignor):
    """Every partition to the static member with the highest instance id: unmistakable in the result."""

    name = "test-all-to-the-last-instance"

    def assign(self, members: Sequence[Member], topics: Mapping[str, TopicInfo]) -> GroupAssignment:
        out: GroupAssignment = {m.member_id: MemberAssignment() for m in members}
        last = max(members, key=lambda m: m.group_instance_id or "")
        out[last.member_id].partitions = [
            (topic, p) for topic, info in sorted(topics.items()) for p in range(info.partitions)
        ]
        return out


@pytest.fixture
def registered() -> Iterator[str]:
    """Registered through the public call, as a user would; removed afterwards so that other tests
    (which list the registry) see only the built-in assignors."""
    assignors.register(AllToTheLastInstance)
    try:
        yield AllToTheLastInstance.name
    finally:
        assignors._REGISTRY.pop(AllToTheLastInstance.name, None)


async def test_a_registered_assignor_named_in_the_environment_runs_the_group(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str, registered: str
) -> None:
    topic = create_topic(partitions=4)
    environ = {
        "KAFKA_BOOTSTRAP_SERVERS": kafka_broker.bootstrap_servers,
        "KAFKA_GROUP_ID": unique_group,
        "KAFKA_PARTITION_ASSIGNMENT_STRATEGY": f"{registered},cooperative-sticky",
    }
    consumers = [
        StaticConsumer(topic, settings=Settings.from_env(environ, group_instance_id=f"pod-{i}", **FAST))
        for i in range(2)
    ]
    for consumer in consumers:
        await consumer.start()
    try:
        deadline = time.monotonic() + 45
        while (
            sorted(len(c.assignment()) for c in consumers) != [0, 4]
            or len({c.generation for c in consumers}) != 1
        ):
            assert time.monotonic() < deadline, [sorted(c.assignment()) for c in consumers]
            await asyncio.gather(*(c.getmany(timeout_ms=200) for c in consumers))
        assert not consumers[0].assignment(), "pod-0 is not the last instance id"
        assert sorted(consumers[1].assignment()) == [(topic, p) for p in range(4)]
        group = await describe_group(kafka_broker.bootstrap_servers, unique_group)
        assert group.protocol_data == registered
    finally:
        for consumer in consumers:
            await consumer.stop()

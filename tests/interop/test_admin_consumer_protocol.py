"""The admin on a KIP-848 group of Java KafkaConsumers (group.protocol=consumer, the oracle's PeerConsumer):
describe shows instance ids, member epochs and assignments; a stopped static member stays with epoch -2
and its partitions; LeaveGroup by instance id removes it at once and its partitions move on."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest

from staticconsumer.admin import GroupAdmin, GroupDescription
from staticconsumer.errors import UnknownMemberIdError
from staticconsumer.testing import EmbeddedKafka
from tests.interop.oracle import JavaPeerConsumer

pytestmark = [pytest.mark.kafka, pytest.mark.oracle]

PARTITIONS = 4


def _owned(group: GroupDescription, instance_id: str) -> set[tuple[str, int]]:
    member = group.member(instance_id)
    assert member is not None, f"{instance_id} is not in {group}"
    return {(tp.topic, p) for tp in member.assignment for p in tp.partitions}


async def _until(admin: GroupAdmin, group: str, done: Callable[[GroupDescription], bool]) -> GroupDescription:
    deadline = time.monotonic() + 90
    while True:
        described = await admin.describe_group(group)
        if done(described):
            return described
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached: {described}")
        await asyncio.sleep(0.5)


def _settled(described: GroupDescription, members: int) -> bool:
    return (
        described.state == "Stable"
        and len(described.members) == members
        and all(m.assignment == m.target_assignment and m.assignment for m in described.members)
    )


async def test_describe_and_remove_static_members_of_a_consumer_protocol_group(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    if not kafka_broker.version.startswith("4."):
        pytest.fail(f"the consumer protocol needs Kafka 4, not {kafka_broker.version}")
    topic = create_topic(partitions=PARTITIONS)
    peers = {
        name: JavaPeerConsumer.start(
            kafka_broker.version,
            bootstrap=kafka_broker.bootstrap_servers,
            group=unique_group,
            topics=topic,
            instance=name,
            protocol="consumer",
            remote_assignor="range",
        )
        for name in ("java-0", "java-1")
    }
    try:
        async with GroupAdmin(bootstrap_servers=kafka_broker.bootstrap_servers) as admin:
            stable = await _until(admin, unique_group, lambda g: _settled(g, 2))
            assert (stable.group_type, stable.protocol_type, stable.protocol) == (
                "consumer",
                "consumer",
                "range",
            )
            assert stable.group_epoch == stable.assignment_epoch
            assert stable.group_epoch is not None
            assert {m.group_instance_id for m in stable.members} == {"java-0", "java-1"}
            for member in stable.members:
                assert member.member_protocol == "consumer"
                assert member.member_epoch is not None
                assert 0 < member.member_epoch <= stable.group_epoch
                assert member.subscription == (topic,)
            owned = {name: _owned(stable, name) for name in peers}
            assert sorted(owned["java-0"] | owned["java-1"]) == [(topic, p) for p in range(PARTITIONS)]
            assert not owned["java-0"] & owned["java-1"]

            # a static Java member's close() leaves with epoch -2: kept, with its partitions
            assert peers["java-1"].stop() == 0
            held = await _until(
                admin, unique_group, lambda g: (m := g.member("java-1")) is not None and m.member_epoch == -2
            )
            assert _owned(held, "java-1") == owned["java-1"]
            assert _owned(held, "java-0") == owned["java-0"], "nobody else moved"

            # LeaveGroup by instance id removes it now; an unknown id gets its own verdict
            result = await admin.remove_members(unique_group, ["java-1", "ghost"], reason="scaled down")
            assert [m.group_instance_id for m in result.removed] == ["java-1"]
            assert isinstance(result.error_for("ghost"), UnknownMemberIdError)
            alone = await _until(admin, unique_group, lambda g: _settled(g, 1))
            assert [m.group_instance_id for m in alone.members] == ["java-0"]
            assert sorted(_owned(alone, "java-0")) == [(topic, p) for p in range(PARTITIONS)]
            assert alone.group_epoch is not None
            assert stable.group_epoch is not None
            assert alone.group_epoch > stable.group_epoch
        deadline = time.monotonic() + 30
        while peers["java-0"].assignment() != {(topic, p) for p in range(PARTITIONS)}:
            assert time.monotonic() < deadline, peers["java-0"].events
            await asyncio.sleep(0.3)
    finally:
        for peer in peers.values():
            peer.stop()

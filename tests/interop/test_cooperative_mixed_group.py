"""A live cooperative group of Java KafkaConsumers (cooperative-sticky) and StaticConsumers, either side
leading, under a producer: members join one by one and one leaves; ownership of every member is sampled
every 100 ms. Never two owners at the same moment; after each rebalance every partition is owned exactly
once."""

from __future__ import annotations

import asyncio
import time

import pytest

from staticconsumer.testing import EmbeddedKafka
from staticconsumer.testing.ledger import Ledger, LedgerProducer
from tests.interop.oracle import JavaPeerConsumer

from ..integration.cooperative_support import Member, OwnershipSampler, Partition

pytestmark = [pytest.mark.kafka, pytest.mark.oracle, pytest.mark.both_versions]

PARTITIONS = 8


class JavaMember:
    """A Java peer as the sampler sees it: what its listener was told it owns (cooperative: deltas)."""

    def __init__(self, peer: JavaPeerConsumer, instance: str) -> None:
        self.peer = peer
        self.instance = instance

    def held(self) -> set[Partition]:
        return self.peer.assignment()

    owned = held

    def generation(self) -> int | None:
        last = self.peer.last("assigned")
        return None if last is None else int(last["gen"])

    def revoked(self) -> set[Partition]:
        return {(t, p) for e in list(self.peer.events) if e["e"] == "revoked" for t, p in e["partitions"]}


async def _until_owned_once(
    python: list[Member], java: list[JavaMember], expected: set[Partition], within: float = 90
) -> int:
    """Every partition owned by exactly one member, one generation for all, for a second; returns it."""
    deadline = time.monotonic() + within
    quiet_since: float | None = None
    while True:
        owned = [m.owned() for m in python] + [j.held() for j in java]
        flat = [p for member in owned for p in member]
        generations = {m.consumer.generation for m in python} | {j.generation() for j in java}
        if sorted(flat) == sorted(expected) and len(generations) == 1 and all(owned):
            quiet_since = quiet_since or time.monotonic()
            if time.monotonic() - quiet_since >= 1.0:
                generation = generations.pop()
                assert generation is not None
                return generation
        else:
            quiet_since = None
        if time.monotonic() > deadline:
            raise AssertionError(f"not settled: generations {generations}, owned {owned}")
        await asyncio.sleep(0.1)


@pytest.mark.parametrize("leader_side", ["java", "python"])
async def test_java_and_python_cooperative_members_never_own_a_partition_twice(
    kafka_broker: EmbeddedKafka, unique_topic: str, unique_group: str, leader_side: str
) -> None:
    kafka_broker.create_topic(unique_topic, PARTITIONS)
    bootstrap = kafka_broker.bootstrap_servers
    expected = {(unique_topic, p) for p in range(PARTITIONS)}
    ledger = Ledger()
    producer = await LedgerProducer(bootstrap, unique_topic, ledger, rate=80).start()
    python: list[Member] = []
    java: list[JavaMember] = []
    sampler = OwnershipSampler({}).start()

    async def join(side: str) -> None:
        index = len(python) if side == "python" else len(java)
        name = f"{side}-{index}"
        if side == "python":
            member = await Member(bootstrap, unique_group, unique_topic, name, ledger).start()
            python.append(member)
            sampler.members = {**sampler.members, name: member}
        else:
            peer = JavaPeerConsumer.start(
                kafka_broker.version,
                bootstrap=bootstrap,
                group=unique_group,
                topics=unique_topic,
                instance=name,
                assignor="cooperative-sticky",
                session_ms=10000,
                heartbeat_ms=1000,
            )
            java.append(JavaMember(peer, name))
            sampler.members = {**sampler.members, name: java[-1]}

    other = "python" if leader_side == "java" else "java"
    generations: list[int] = []
    try:
        for side in (leader_side, other, other, leader_side):
            await join(side)
            generations.append(await _until_owned_once(python, java, expected))
        leader = [m for m in python if m.consumer.is_leader]
        assert bool(leader) == (leader_side == "python"), "the side that joined first leads"
        assert all(m.consumer.rebalance_protocol == "cooperative" for m in python)

        leaving = python[-1]
        await leaving.stop(leave_group=True)
        python.remove(leaving)
        sampler.members = {k: v for k, v in sampler.members.items() if k != leaving.instance}
        generations.append(await _until_owned_once(python, java, expected))
        await sampler.stop()

        assert generations == sorted(generations), "every rebalance moved the group forward"
        double = sampler.double_owned()
        assert not double, f"two owners at once: {double[:5]}"
        assert len(sampler.samples) > 100

    finally:
        await sampler.stop()
        await producer.stop()
        for member in python:
            await member.stop()
        for peer in java:
            peer.peer.stop()

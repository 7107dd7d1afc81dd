"""Moving a live group from eager to cooperative-sticky with two rolling bounces (docs/consumer.md), on
real brokers, under a producer: first every member gets both assignors (still eager), then every member
drops the eager one (cooperative). No partition is ever held by two members at once, every acknowledged
record is processed, and committed offsets never go backwards."""

from __future__ import annotations

import asyncio

import pytest

from staticconsumer.testing import EmbeddedKafka
from staticconsumer.testing.ledger import CommitSampler, Ledger, LedgerProducer

from .cooperative_support import Member, OwnershipSampler, until_settled

pytestmark = [pytest.mark.kafka, pytest.mark.both_versions]

PARTITIONS = 6
STEPS = (
    (["range"], "eager"),
    (["range", "cooperative-sticky"], "eager"),
    (["cooperative-sticky"], "cooperative"),
)


async def test_eager_to_cooperative_with_two_rolling_bounces(
    kafka_broker: EmbeddedKafka, unique_topic: str, unique_group: str
) -> None:
    kafka_broker.create_topic(unique_topic, PARTITIONS)
    bootstrap = kafka_broker.bootstrap_servers
    expected = {(unique_topic, p) for p in range(PARTITIONS)}
    ledger = Ledger()
    producer = await LedgerProducer(bootstrap, unique_topic, ledger, rate=120).start()
    commits = await CommitSampler(bootstrap, unique_group, ledger, interval=0.25).start()
    sampler = OwnershipSampler({})

    def member(name: str, assignors: list[str]) -> Member:
        return Member(bootstrap, unique_group, unique_topic, name, ledger, assignors=assignors)

    assignors, protocol = STEPS[0]
    members = [member(f"m{i}", assignors) for i in range(3)]
    try:
        for m in members:
            await m.start()
        await until_settled(members, expected, within=90)
        sampler.members = {m.instance: m for m in members}
        sampler.start()
        for assignors, protocol in STEPS[1:]:
            for index, old in enumerate(list(members)):
                await old.stop()  # static: no LeaveGroup, the broker keeps its place
                new = await member(old.instance, assignors).start()
                assert new.consumer.rebalance_protocol == protocol
                members[index] = new
                sampler.members = {m.instance: m for m in members}
                await until_settled(members, expected, within=90, quiet=1.0)
        await sampler.stop()

        assert {m.consumer.rebalance_protocol for m in members} == {"cooperative"}
        assert {m.consumer._partitions.snapshot.protocol_name for m in members} == {"cooperative-sticky"}
        double = sampler.double_owned()
        assert not double, f"held by two members at once: {double[:5]}"

        await producer.stop()
        verdict = await ledger.until_all_processed(within=60)
        await asyncio.sleep(1.5)
        ledger.committed(await commits.sample())
        assert not verdict.lost, verdict.summary()
        ledger.assert_at_least_once()
    finally:
        await sampler.stop()
        await producer.stop()
        await commits.stop()
        for m in members:
            await m.stop()

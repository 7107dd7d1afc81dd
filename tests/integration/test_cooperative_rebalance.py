"""Cooperative rebalancing (KIP-429) on real brokers, 4.x and 3.9.x: four static members under a producer,
then a fifth joins, and then one leaves with stop(leave_group=True).

What must hold: members that keep their partitions never stop fetching them (sampled every 100 ms, and no
gap in their deliveries beyond the normal fetch interval), only moved partitions are revoked, exactly two
generations pass for a join (the second hands out what the first revoked) and one for a leave (nothing has
to be revoked), every acknowledged record is processed, committed offsets never go backwards, kept
partitions deliver every offset exactly once, and no partition ever has two holders at the same moment.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from staticconsumer.testing import EmbeddedKafka
from staticconsumer.testing.ledger import CommitSampler, Ledger, LedgerProducer

from .cooperative_support import Member, OwnershipSampler, Partition, until_settled

pytestmark = [pytest.mark.kafka, pytest.mark.both_versions]

PARTITIONS = 12
RATE = 240.0
"""Records a second over 12 partitions: one every 50 ms per partition."""
MAX_KEPT_GAP = 1.5
"""Longest pause allowed in a kept partition's deliveries: a few fetch intervals (100 ms each) on a
loaded CI machine, well below the two rounds of the rebalance (about 4 s here). The exact proof that a
kept partition never stopped is that no StopFetching named it (recorded at the application side)."""


def moved(before: dict[str, set[Partition]], after: dict[str, set[Partition]], name: str) -> set[Partition]:
    return before.get(name, set()) - after.get(name, set())


def assert_kept_partitions_were_never_stopped(
    members: list[Member],
    sampler: OwnershipSampler,
    before: dict[str, set[Partition]],
    after: dict[str, set[Partition]],
    start: float,
    end: float,
) -> dict[str, float]:
    gaps: dict[str, float] = {}
    for member in members:
        kept = before.get(member.instance, set()) & after.get(member.instance, set())
        assert not member.stopped(kept, start, end), f"{member.instance} was told to stop a partition it kept"
        assert not sampler.not_fetching(member.instance, kept, start, end), (
            f"{member.instance} was seen not fetching a partition it kept"
        )
        for partition in kept:
            gap = member.max_gap(partition, start, end)
            gaps[f"{member.instance}/{partition[1]}"] = gap
            assert gap <= MAX_KEPT_GAP, (
                f"{member.instance} went {gap:.2f}s without a record of kept {partition}"
            )
            offsets = member.offsets_after(partition, start - 5)
            assert offsets == list(range(offsets[0], offsets[0] + len(offsets))), (
                f"{partition} kept by {member.instance}: every offset exactly once, in order"
            )
    return gaps


async def test_a_fifth_member_joins_and_only_the_partitions_it_takes_move(
    kafka_broker: EmbeddedKafka, unique_topic: str, unique_group: str
) -> None:
    kafka_broker.create_topic(unique_topic, PARTITIONS)
    bootstrap = kafka_broker.bootstrap_servers
    expected = {(unique_topic, p) for p in range(PARTITIONS)}
    ledger = Ledger()
    producer = await LedgerProducer(bootstrap, unique_topic, ledger, rate=RATE).start()
    commits = await CommitSampler(bootstrap, unique_group, ledger, interval=0.25).start()
    members = [Member(bootstrap, unique_group, unique_topic, f"m{i}", ledger) for i in range(4)]
    sampler = OwnershipSampler({m.instance: m for m in members})
    try:
        for member in members:
            await member.start()
        before = await until_settled(members, expected, within=90)
        generation = members[0].consumer.generation
        assert all(m.consumer.rebalance_protocol == "cooperative" for m in members)
        sampler.start()
        await asyncio.sleep(2)

        joined_at = time.monotonic()
        fifth = await Member(bootstrap, unique_group, unique_topic, "m4", ledger).start()
        sampler.members = {**sampler.members, "m4": fifth}
        after = await until_settled([*members, fifth], expected, within=90)
        settled_at = time.monotonic()
        await sampler.stop()

        assert fifth.consumer.generation == generation + 2, "exactly two generations: revoke, then hand out"
        assert after["m4"], "the newcomer got partitions"
        assert set().union(*(moved(before, after, m.instance) for m in members)) == after["m4"]
        for member in members:
            revoked = member.listener.since(joined_at, "revoked")
            assert revoked == moved(before, after, member.instance), (
                f"{member.instance} revoked only what moved"
            )
            assert not member.listener.since(joined_at, "lost")
            assert not member.listener.since(joined_at, "assigned"), "an old member gains nothing here"
        assert fifth.listener.since(joined_at, "assigned") == after["m4"]
        assert not sampler.double_owned(), "never two holders at the same moment"
        gaps = assert_kept_partitions_were_never_stopped(
            members, sampler, before, after, joined_at, settled_at
        )
        print(
            f"rebalance {settled_at - joined_at:.2f}s, longest kept-partition gap {max(gaps.values()):.2f}s"
        )

        await producer.stop()
        verdict = await ledger.until_all_processed(within=60)
        await asyncio.sleep(1.5)  # one more auto-commit round, then a last sample
        ledger.committed(await commits.sample())
        assert not verdict.lost, verdict.summary()
        ledger.assert_at_least_once()
    finally:
        await sampler.stop()
        await producer.stop()
        await commits.stop()
        for member in [*members, *([fifth] if "fifth" in locals() else [])]:
            await member.stop()


async def test_a_member_that_leaves_gives_up_only_its_own_partitions_in_one_generation(
    kafka_broker: EmbeddedKafka, unique_topic: str, unique_group: str
) -> None:
    kafka_broker.create_topic(unique_topic, PARTITIONS)
    bootstrap = kafka_broker.bootstrap_servers
    expected = {(unique_topic, p) for p in range(PARTITIONS)}
    ledger = Ledger()
    producer = await LedgerProducer(bootstrap, unique_topic, ledger, rate=RATE).start()
    commits = await CommitSampler(bootstrap, unique_group, ledger, interval=0.25).start()
    members = [Member(bootstrap, unique_group, unique_topic, f"m{i}", ledger) for i in range(5)]
    sampler = OwnershipSampler({m.instance: m for m in members})
    try:
        for member in members:
            await member.start()
        before = await until_settled(members, expected, within=90)
        generation = members[0].consumer.generation
        sampler.start()
        await asyncio.sleep(2)

        leaver, stayers = members[-1], members[:-1]
        left_at = time.monotonic()
        await leaver.stop(leave_group=True)
        after = await until_settled(stayers, expected, within=90)
        settled_at = time.monotonic()
        await sampler.stop()

        assert leaver.listener.since(left_at, "revoked") == before[leaver.instance], "revoked, not lost"
        assert {m.consumer.generation for m in stayers} == {generation + 1}, "nothing to revoke: one round"
        for member in stayers:
            assert not member.listener.since(left_at, "revoked"), f"{member.instance} revoked nothing"
            assert not member.listener.since(left_at, "lost")
            gained = after[member.instance] - before[member.instance]
            assert member.listener.since(left_at, "assigned") == gained
            assert gained <= before[leaver.instance]
        assert not sampler.double_owned()
        assert_kept_partitions_were_never_stopped(stayers, sampler, before, after, left_at, settled_at)

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
        for member in members:
            await member.stop()


async def test_dropping_a_topic_revokes_only_its_partitions_before_the_join_and_keeps_the_rest_fetching(
    kafka_broker: EmbeddedKafka, unique_topic: str, unique_group: str
) -> None:
    """Issue 13: under cooperative, the only revocation before rejoining is of topics no longer subscribed.
    m0 drops topic B: its B partitions are revoked before its next JoinGroup goes out, its A partitions
    are never revoked nor stopped (A is produced to throughout), and B ends up wholly with m1 (which may
    hand m0 some of A for balance, in a second round: that is m1's revoke, never m0's)."""
    topic_a, topic_b = f"{unique_topic}-a", f"{unique_topic}-b"
    kafka_broker.create_topic(topic_a, 6)  # more of A than of B: after m0 drops B, A stays spread
    kafka_broker.create_topic(topic_b, 4)
    bootstrap = kafka_broker.bootstrap_servers
    partitions_a = {(topic_a, p) for p in range(6)}
    partitions_b = {(topic_b, p) for p in range(4)}
    ledger = Ledger()
    producer = await LedgerProducer(bootstrap, topic_a, ledger, rate=120.0).start()
    producer_b = await LedgerProducer(bootstrap, topic_b, ledger, rate=80.0).start()  # m1 keeps some of B
    joins: list[float] = []

    def record_joins(api: str, version: int, message: object) -> None:
        if api == "JoinGroupRequest":
            joins.append(time.monotonic())  # the membership thread; the clock is the process's

    dropper = Member(bootstrap, unique_group, (topic_a, topic_b), "m0", ledger, request_hook=record_joins)
    keeper = Member(bootstrap, unique_group, (topic_a, topic_b), "m1", ledger)
    members = [dropper, keeper]
    sampler = OwnershipSampler({m.instance: m for m in members})
    try:
        for member in members:
            await member.start()
        before = await until_settled(members, partitions_a | partitions_b, within=90)
        assert dropper.consumer.rebalance_protocol == "cooperative"
        dropped = before["m0"] & partitions_b
        kept_a = before["m0"] & partitions_a
        assert dropped, f"m0 should own some of B to start with: {before}"
        assert kept_a, f"m0 should own some of A to start with: {before}"
        sampler.start()
        await asyncio.sleep(2)

        subscribed_at = time.monotonic()
        dropper.consumer.subscribe(topics=[topic_a], listener=dropper.listener)
        after = await until_settled(members, partitions_a | partitions_b, within=90)
        settled_at = time.monotonic()
        await sampler.stop()

        revokes = [c for c in dropper.listener.calls if c.at >= subscribed_at and c.kind == "revoked"]
        joins_after = [at for at in joins if at >= subscribed_at]
        assert revokes, "m0 revoked something after subscribe"
        assert joins_after, "m0 rejoined after subscribe"
        assert set(revokes[0].partitions) == dropped, "exactly its partitions of B are revoked first"
        assert revokes[0].at < joins_after[0], "B is revoked before the JoinGroup goes out, not after"
        assert dropper.listener.since(subscribed_at, "revoked") == dropped, "no partition of A is revoked"
        assert not dropper.listener.since(subscribed_at, "lost")
        gained = after["m0"] - before["m0"]
        assert gained <= partitions_a, "m0 gains only A"
        assert dropper.listener.since(subscribed_at, "assigned") == gained
        # m1 gives up only what balance moves to m0 (partitions of A), and takes m0's B.
        assert keeper.listener.since(subscribed_at, "revoked") == gained
        assert keeper.listener.since(subscribed_at, "assigned") == dropped, "m1 is assigned m0's B"

        assert after["m1"] >= partitions_b, f"B all with m1: {after}"
        assert not after["m0"] & partitions_b, f"m0 owns no B: {after}"
        assert after["m0"] >= kept_a, "m0 keeps every partition of A it had"
        assert after["m0"] & partitions_a, "A is still spread: m0 owns some"
        assert after["m1"] & partitions_a, "A is still spread: m1 owns some"
        assert not sampler.double_owned(), "never two holders at the same moment"
        # Kept partitions (m0's of A, all of m1's) never stopped, delivered throughout, every offset once.
        gaps = assert_kept_partitions_were_never_stopped(
            members, sampler, before, after, subscribed_at, settled_at
        )
        assert all(dropper.offsets_after(p, subscribed_at) for p in kept_a), "A kept arriving at m0"
        longest = max(gaps.values())
        print(f"subscription change {settled_at - subscribed_at:.2f}s, longest kept gap {longest:.2f}s")
    finally:
        await sampler.stop()
        await producer.stop()
        await producer_b.stop()
        for member in members:
            await member.stop()

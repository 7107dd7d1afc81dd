"""What a static group lives through on a real 3-node cluster, each with an at-least-once ledger.

Three static members (separate processes, public StaticConsumer API, commit after each batch) consume a
topic with 6 partitions (RF 3, min ISR 2) while a producer keeps writing. Each test injects one fault
and checks two things: the ledger (every record the producer got acknowledged was processed by some
member; sampled committed offsets never moved backwards) and the membership outcome that fault should
have (none at all, for most of them).
"""

from __future__ import annotations

import asyncio
import time

import pytest

from staticconsumer.testing.cluster import EmbeddedKafkaCluster
from staticconsumer.testing.fleet import MemberSpec
from staticconsumer.testing.proxy import wait_for_async

from .harness import SESSION_MS, scenario

pytestmark = [pytest.mark.kafka, pytest.mark.faults]


async def test_coordinator_failover_changes_no_membership_and_loses_nothing(
    cluster: EmbeddedKafkaCluster,
) -> None:
    async with scenario(cluster, "coordinator") as run:
        before = run.fleet.identities()
        coordinator = await run.coordinator()
        since = time.monotonic()
        await asyncio.to_thread(cluster.kill_node, coordinator)
        await asyncio.to_thread(cluster.wait_until_fenced, coordinator)
        successor = await run.coordinator()
        assert successor != coordinator
        commits_before = run.sampler.samples
        await run.flowing(within=60)
        await wait_for_async(lambda: run.sampler.samples > commits_before + 2, 30, "commits sampled again")
        await run.stable()
        assert run.rebalance_events_since(since) == {}, "the coordinator moved and the group rebalanced"
        assert run.fleet.identities() == before
        verdict = await run.finish()
        served = {node for samples in run.ledger.commits.values() for _, _, node in samples}
        assert successor in served, "commits were read from the new coordinator, one sample after another"
        print(verdict.summary())
        run.ledger.assert_at_least_once()
        assert verdict.processed >= verdict.acknowledged
    await asyncio.to_thread(cluster.start_node, coordinator)


async def test_broker_restart_changes_no_membership_and_loses_nothing(cluster: EmbeddedKafkaCluster) -> None:
    async with scenario(cluster, "restart") as run:
        before = run.fleet.identities()
        coordinator = await run.coordinator()
        leaders = {cluster.leader(run.topic, p) for p in range(run.partitions)}
        victim = min(leaders - {coordinator})  # a node that leads some of the topic, but not the group
        since = time.monotonic()
        await asyncio.to_thread(cluster.restart_node, victim, down_seconds=3)
        await run.flowing()
        await run.stable()
        assert run.rebalance_events_since(since) == {}
        assert run.fleet.identities() == before
        await run.finish()
        run.ledger.assert_at_least_once()


async def test_a_blackhole_shorter_than_the_session_keeps_the_member_and_its_generation(
    cluster: EmbeddedKafkaCluster,
) -> None:
    async with scenario(cluster, "short-blackhole") as run:
        before = run.fleet.identities()
        victim = run.fleet["m-1"]
        since = time.monotonic()
        for proxy in cluster.proxies:
            proxy.blackhole(client_id=victim.client_id)
        await asyncio.sleep(SESSION_MS / 1000 * 0.4)
        assert not victim.of("records", since=since + 1.5), "the victim kept fetching through a blackhole"
        for proxy in cluster.proxies:
            proxy.heal()
        await run.flowing()
        await run.stable()
        assert run.rebalance_events_since(since) == {}
        assert run.fleet.identities() == before, "a static member lost its id or generation to a short cut"
        await run.finish()
        run.ledger.assert_at_least_once()


async def test_a_blackhole_longer_than_the_session_evicts_the_member_which_rejoins_and_nothing_is_lost(
    cluster: EmbeddedKafkaCluster,
) -> None:
    async with scenario(cluster, "long-blackhole") as run:
        before = run.fleet.identities()
        victim, others = run.fleet["m-1"], [run.fleet["m-0"], run.fleet["m-2"]]
        victim_partitions = victim.owned()
        since = time.monotonic()
        for proxy in cluster.proxies:
            proxy.blackhole(client_id=victim.client_id)
        await wait_for_async(
            lambda: victim_partitions <= others[0].owned() | others[1].owned(),
            SESSION_MS / 1000 + 30,
            "the others took over the cut-off member's partitions",
        )
        evicted_after = time.monotonic() - since
        for proxy in cluster.proxies:
            proxy.heal()
        await wait_for_async(
            lambda: victim.owned() and victim.identity() != before["m-1"], 60, "the member rejoined"
        )
        await run.stable()
        await run.flowing()
        after = run.fleet.identities()
        assert evicted_after >= SESSION_MS / 1000 * 0.9, f"evicted after {evicted_after:.1f}s: too early"
        assert after["m-1"] is not None
        assert before["m-1"] is not None
        assert after["m-1"][0] != before["m-1"][0], "the evicted member kept its member id"
        assert after["m-1"][1] >= before["m-1"][1] + 2, "eviction and rejoin are two rebalances"
        verdict = await run.finish()
        run.ledger.assert_at_least_once()
        assert verdict.acknowledged > 0


async def test_a_static_member_killed_and_restarted_within_the_session_causes_no_rebalance(
    cluster: EmbeddedKafkaCluster,
) -> None:
    session_ms = 15_000  # room for a Python process to start on a loaded machine, still a restart's budget
    async with scenario(cluster, "sigkill", spec=MemberSpec(session_ms=session_ms)) as run:
        before = run.fleet.identities()
        victim = run.fleet["m-1"]
        owned = victim.owned()
        since = time.monotonic()
        await asyncio.to_thread(victim.kill)
        await asyncio.sleep(1.0)
        victim.start()
        await wait_for_async(
            lambda: bool(victim.of("assigned", since=since)), session_ms / 1000 + 20, "the member is back"
        )
        await run.flowing()
        await run.stable()
        others = {i: e for i, e in run.rebalance_events_since(since).items() if i != "m-1"}
        assert others == {}, "the other members saw a rebalance"
        back = victim.of("assigned", since=since)
        assert [{tuple(tp) for tp in e["partitions"]} for e in back] == [owned], "not its old partitions"
        identity = victim.identity()
        assert identity is not None
        assert before["m-1"] is not None
        assert identity[1] == before["m-1"][1], "the generation moved: the group rebalanced"
        assert {i: v for i, v in run.fleet.identities().items() if i != "m-1"} == {
            i: v for i, v in before.items() if i != "m-1"
        }
        await run.finish()
        run.ledger.assert_at_least_once()

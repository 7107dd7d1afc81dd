"""Static membership under the consumer protocol (KIP-848) on the real 4.x broker, with members in their own
processes under a producer: a rolling bounce of six moves nothing, two processes with one instance id end
with UNRELEASED_INSTANCE_ID's diagnosis (and a clean stop never causes it), and a member killed with SIGKILL
and restarted within the session timeout takes its own partitions back with nobody else moving.
"""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from staticconsumer.bounce import MODES, BounceSettings, bounce
from staticconsumer.testing import EmbeddedKafka
from staticconsumer.testing.fleet import MemberProcess, MemberSpec
from staticconsumer.testing.proxy import wait_for_async

from .consumer_protocol_support import ConsumerScenario, consumer_scenario

pytestmark = pytest.mark.kafka

CONSUMER = MemberSpec(group_protocol="consumer", request_timeout_ms=10_000)


def _assert_clean(run: ConsumerScenario) -> None:
    assert run.ownership.samples > 0
    assert run.ownership.doubles == [], f"a partition had two owners at once: {run.ownership.doubles[:5]}"
    verdict = run.ledger.assert_at_least_once()
    assert verdict.acknowledged > 0


async def test_a_rolling_bounce_of_six_static_members_moves_nothing(kafka_broker: EmbeddedKafka) -> None:
    async with consumer_scenario(kafka_broker, "bounce", members=6, partitions=12, spec=CONSUMER) as run:
        before = {instance: member.owned() for instance, member in run.fleet.members.items()}
        for instance, member in list(run.fleet.members.items()):
            since = time.monotonic()
            await asyncio.to_thread(member.stop)
            stopped = member.of("stopped", since=since)
            assert stopped, f"{instance} did not stop gracefully"
            member.start()
            await wait_for_async(
                lambda member=member, since=since: bool(member.of("assigned", since=since)),  # type: ignore[misc]
                60,
                f"{instance} back",
            )
            back = member.of("assigned", since=since)
            assert {tuple(tp) for tp in back[0]["partitions"]} == before[instance], (
                f"{instance} did not get its own partitions back at once"
            )
            assert run.listener_calls_since(since, besides=instance) == {}, "a member not restarted moved"
            await run.flowing([member])
        await run.stable()
        assert {instance: member.owned() for instance, member in run.fleet.members.items()} == before
        await run.finish()
    _assert_clean(run)


async def test_two_processes_with_one_instance_id_and_a_clean_restart(kafka_broker: EmbeddedKafka) -> None:
    async with consumer_scenario(kafka_broker, "twice", members=2, partitions=4, spec=CONSUMER) as run:
        first = run.fleet["m-0"]
        owned = first.owned()
        # a second process with the first one's instance id, while the first is alive (kept out of the
        # fleet, whose members are told apart by instance id)
        twin = MemberProcess(run.fleet, "m-0")
        since = time.monotonic()
        twin.start()
        try:
            # it exits on its own (code 4): a SIGTERM right after its "fatal" line would race its exit
            await wait_for_async(
                lambda: bool(twin.of("fatal")) and not twin.running, 60, "the second process gives up, exits"
            )
        finally:
            await asyncio.to_thread(twin.stop)
        assert twin.process is not None
        assert twin.process.returncode == 4
        fatal = twin.of("fatal")[0]
        assert fatal["type"] == "UnreleasedInstanceIdError"
        assert fatal["cause"] == "live-process"
        assert "another live process on this host" in fatal["message"]
        assert not twin.of("assigned"), "the newcomer never owned anything"
        assert first.running
        assert first.owned() == owned, "the holder kept its place and its partitions"
        assert run.listener_calls_since(since) == {}
        # a restart after a clean stop() is never refused
        since = time.monotonic()
        await asyncio.to_thread(first.stop)
        first.start()
        await wait_for_async(lambda: bool(first.of("assigned", since=since)), 60, "m-0 back")
        assert not first.of("fatal", "error", since=since)
        assert {tuple(tp) for tp in first.of("assigned", since=since)[0]["partitions"]} == owned
        await run.flowing([first])
        await run.finish()
    _assert_clean(run)


async def test_sigkill_and_restart_within_the_session_takes_the_same_partitions(
    kafka_broker: EmbeddedKafka,
) -> None:
    async with consumer_scenario(kafka_broker, "sigkill", members=3, partitions=6, spec=CONSUMER) as run:
        victim = run.fleet["m-1"]
        owned = victim.owned()
        identities = {i: m.identity() for i, m in run.fleet.members.items() if i != "m-1"}
        since = time.monotonic()
        await asyncio.to_thread(victim.kill)
        await asyncio.sleep(1.0)
        victim.start()
        await wait_for_async(
            lambda: bool(victim.of("assigned", since=since)), 40, "the killed member is back"
        )
        assert time.monotonic() - since < 45, "back within the brokers' session timeout"
        back = victim.of("assigned", since=since)
        assert [{tuple(tp) for tp in e["partitions"]} for e in back] == [owned], "not its own partitions"
        assert not victim.of("fatal", "lost", since=since)
        await run.flowing([victim])
        assert run.listener_calls_since(since, besides="m-1") == {}, "another member moved"
        assert {i: m.identity() for i, m in run.fleet.members.items() if i != "m-1"} == identities
        await run.stable()
        await run.finish()
    _assert_clean(run)


async def test_the_rolling_bounce_benchmarks_consumer_protocol_mode(kafka_broker: EmbeddedKafka) -> None:
    """The rolling-bounce benchmark's staticconsumer-consumer mode, small: nobody moves, no new epoch."""
    mode = MODES["staticconsumer-consumer"]
    settings = BounceSettings(members=2, partitions_per_member=2, grace=1.0)
    topic = f"bounce-consumer-{uuid.uuid4().hex[:6]}"
    await asyncio.to_thread(kafka_broker.create_topic, topic, settings.partitions)
    result = await bounce(mode, kafka_broker.bootstrap_servers, topic, topic, settings)
    assert len(result.restarts) == 2
    assert result.revoked_from_others == 0
    assert result.rebalances == 0, f"new member epochs after the group settled: {result.generations}"
    assert all(r.timeline.get("synced") is not None for r in result.restarts), "the timeline of a restart"

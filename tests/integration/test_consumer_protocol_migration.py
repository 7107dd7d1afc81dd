"""A classic group of static members migrated online to the consumer protocol (Kafka 4's upgrade path) by a
rolling bounce that switches group_protocol member by member, under a producer: the broker converts the
group when the first consumer-protocol member joins, each restarted member takes its instance id's place
and partitions, no member that is not restarted (classic or consumer) moves, every partition stays owned
exactly once throughout (sampled every 100 ms), nothing is lost and no committed offset moves
backwards."""

from __future__ import annotations

import asyncio
import time

import pytest

from staticconsumer.testing import EmbeddedKafka
from staticconsumer.testing.fleet import MemberSpec
from staticconsumer.testing.proxy import wait_for_async

from .consumer_protocol_support import consumer_scenario

pytestmark = pytest.mark.kafka

CLASSIC = MemberSpec(
    group_protocol="classic", session_ms=30_000, heartbeat_ms=1_000, request_timeout_ms=10_000
)
CONSUMER = MemberSpec(group_protocol="consumer", request_timeout_ms=10_000)


async def test_classic_to_consumer_by_rolling_bounce_keeps_every_partition_owned_once(
    kafka_broker: EmbeddedKafka,
) -> None:
    async with consumer_scenario(kafka_broker, "migrate", members=4, partitions=8, spec=CLASSIC) as run:
        assert (await run.describe()).group_type == "classic"
        run.fleet.spec = CONSUMER  # every member started from now on speaks the consumer protocol
        before = {instance: member.owned() for instance, member in run.fleet.members.items()}
        for instance, member in list(run.fleet.members.items()):
            since = time.monotonic()
            await asyncio.to_thread(member.stop)
            member.start()
            await wait_for_async(
                lambda member=member, since=since: bool(member.of("assigned", since=since)),  # type: ignore[misc]
                90,
                f"{instance} back on the consumer protocol",
            )
            assert not member.of("fatal", since=since)
            back = member.of("assigned", since=since)
            assert {tuple(tp) for tp in back[0]["partitions"]} == before[instance], (
                f"{instance} did not take its classic predecessor's partitions"
            )
            await run.stable()
            await run.flowing()
            group = await run.describe()
            assert group.group_type == "consumer", "the first consumer-protocol member converts the group"
            protocols = {m.group_instance_id: m.member_protocol for m in group.members}
            assert protocols[instance] == "consumer"
            assert run.listener_calls_since(since, besides=instance) == {}, (
                "a member not restarted (classic or consumer) moved"
            )
        assert set(protocols.values()) == {"consumer"}
        await run.finish()
    assert run.ownership.samples > 0
    assert run.ownership.doubles == [], f"a partition had two owners at once: {run.ownership.doubles[:5]}"
    run.ledger.assert_at_least_once()

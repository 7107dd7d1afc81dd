"""A fault scenario: a topic, a producer booking acknowledgements in a ledger, a commit sampler, and a
fleet of static members in their own processes, all against the shared 3-node cluster.

The producer and the sampler use the cluster's INTERNAL listeners, which no proxy fault touches, so
they keep producing and observing while the members are cut off; the members reach the cluster only
through the proxies.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from staticconsumer.testing.cluster import EmbeddedKafkaCluster
from staticconsumer.testing.fleet import Fleet, MemberProcess, MemberSpec
from staticconsumer.testing.ledger import CommitSampler, Ledger, LedgerProducer, Verdict
from staticconsumer.testing.proxy import wait_for_async

from ..support import describe_group

SESSION_MS = 10_000
"""Static members' session timeout in the suite: long enough for a restart, short enough for CI."""


@dataclass
class Scenario:
    cluster: EmbeddedKafkaCluster
    topic: str
    group: str
    partitions: int
    ledger: Ledger
    producer: LedgerProducer
    sampler: CommitSampler
    fleet: Fleet

    async def coordinator(self) -> int:
        return await asyncio.to_thread(self.cluster.find_coordinator, self.group)

    async def stable(self, within: float = 60.0) -> None:
        """Until the broker says Stable with every running member, and the members own every partition."""
        running = sum(member.running for member in self.fleet.members.values())

        async def check() -> bool:
            if not self.fleet.assigned_everywhere(self.partitions):
                return False
            described = await describe_group(self.cluster.internal_bootstrap_servers, self.group)
            return described.group_state == "Stable" and len(described.members) == running

        await wait_for_async(check, within, f"group {self.group} stable with every partition owned")

    async def flowing(self, members: list[MemberProcess] | None = None, within: float = 60.0) -> None:
        """Until each of ``members`` (default: all running) processed records it had not processed before."""
        watched = members or [m for m in self.fleet.members.values() if m.running]
        since = time.monotonic()
        await wait_for_async(
            lambda: all(member.of("records", since=since) for member in watched),
            within,
            f"records processed by {[m.instance for m in watched]}",
        )

    def rebalance_events_since(self, since: float) -> dict[str, list[str]]:
        """Listener calls after ``since``, per member: empty lists mean no rebalance touched anyone."""
        return {
            instance: [f"{e['event']} {e['partitions']}" for e in events]
            for instance, events in self.fleet.events_since(since, "assigned", "revoked", "lost").items()
            if events
        }

    async def finish(self, within: float = 90.0) -> Verdict:
        """Stop producing, wait until every acknowledged record was processed, take a last commit sample."""
        await self.producer.stop()
        verdict = await self.ledger.until_all_processed(within)
        await asyncio.sleep(1.5)  # the members commit what they just processed
        await self.sampler.stop()
        assert self.ledger.acknowledged_count > 0
        return verdict


@asynccontextmanager
async def scenario(
    cluster: EmbeddedKafkaCluster,
    name: str,
    *,
    members: int = 3,
    partitions: int = 6,
    rate: float = 40.0,
    spec: MemberSpec | None = None,
) -> AsyncIterator[Scenario]:
    suffix = uuid.uuid4().hex[:6]
    topic, group = f"faults-{name}-{suffix}", f"faults-{name}-{suffix}"
    await asyncio.to_thread(cluster.create_topic, topic, partitions)
    ledger = Ledger()
    producer = LedgerProducer(cluster.internal_bootstrap_servers, topic, ledger, rate=rate)
    sampler = CommitSampler(cluster.internal_bootstrap_servers, group, ledger)
    fleet = Fleet(
        cluster.bootstrap_servers, [topic], group, ledger, spec=spec or MemberSpec(session_ms=SESSION_MS)
    )
    run = Scenario(cluster, topic, group, partitions, ledger, producer, sampler, fleet)
    try:
        await producer.start()
        await sampler.start()
        fleet.start([f"m-{index}" for index in range(members)])
        await run.stable()
        await run.flowing()
        yield run
    finally:
        await producer.stop()
        await sampler.stop()
        await asyncio.to_thread(fleet.stop)

"""A consumer-protocol scenario against the single real broker: a topic, a producer booking acknowledgements
in a ledger, a commit sampler, and a fleet of static members in their own processes
(``staticconsumer.testing.member --group-protocol consumer``), with the group seen through
ConsumerGroupDescribe (the admin) and ownership sampled from what the members report."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field

from staticconsumer.admin import GroupAdmin, GroupDescription
from staticconsumer.testing import EmbeddedKafka
from staticconsumer.testing.fleet import Fleet, MemberProcess, MemberSpec
from staticconsumer.testing.ledger import CommitSampler, Ledger, LedgerProducer, Verdict
from staticconsumer.testing.proxy import wait_for_async

Partition = tuple[str, int]


@dataclass
class OwnershipSampler:
    """Every ``interval`` seconds, who owns which partition by the members' own reports (listener calls).

    A member stops counting as an owner once asked to stop; ``doubles`` keeps every sample at which a
    partition had two owners, ``unowned`` the samples at which some partition had none.
    """

    members: Callable[[], list[MemberProcess]]
    partitions: set[Partition]
    interval: float = 0.1
    samples: int = 0
    doubles: list[tuple[float, Partition, list[str]]] = field(default_factory=list)
    unowned: list[tuple[float, set[Partition]]] = field(default_factory=list)
    _task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with suppress(asyncio.CancelledError):
                await self._task

    def owners(self) -> dict[Partition, list[str]]:
        owners: dict[Partition, list[str]] = {}
        for member in self.members():
            if member.running:
                for tp in member.owned():
                    owners.setdefault(tp, []).append(f"{member.instance}#{member.incarnations}")
        return owners

    async def _run(self) -> None:
        while True:
            now = time.monotonic()
            owners = self.owners()
            self.samples += 1
            for tp, who in owners.items():
                if len(who) > 1:
                    self.doubles.append((now, tp, who))
            missing = self.partitions - set(owners)
            if missing:
                self.unowned.append((now, missing))
            await asyncio.sleep(self.interval)


@dataclass
class ConsumerScenario:
    kafka: EmbeddedKafka
    topic: str
    group: str
    partitions: int
    ledger: Ledger
    producer: LedgerProducer
    sampler: CommitSampler
    fleet: Fleet
    ownership: OwnershipSampler

    async def describe(self) -> GroupDescription:
        async with GroupAdmin(bootstrap_servers=self.kafka.bootstrap_servers) as admin:
            return await admin.describe_group(self.group)

    async def stable(self, within: float = 90.0) -> None:
        """Until the broker says Stable with every running member reconciled, and the members' own reports
        cover every partition exactly once."""
        running = {m.instance for m in self.fleet.members.values() if m.running}

        async def check() -> bool:
            owned = [m.owned() for m in self.fleet.members.values() if m.running]
            if sum(len(o) for o in owned) != self.partitions or len(set().union(*owned)) != self.partitions:
                return False
            group = await self.describe()
            members = {m.group_instance_id for m in group.members if m.member_epoch != -2}
            # a classic group (before an online migration) has no target assignment to be reconciled to
            reconciled = group.group_type != "consumer" or all(
                m.assignment == m.target_assignment for m in group.members
            )
            return group.state == "Stable" and members == running and reconciled

        await wait_for_async(check, within, f"group {self.group} stable with every partition owned once")

    async def flowing(self, members: list[MemberProcess] | None = None, within: float = 60.0) -> None:
        watched = members or [m for m in self.fleet.members.values() if m.running]
        since = time.monotonic()
        await wait_for_async(
            lambda: all(member.of("records", since=since) for member in watched),
            within,
            f"records processed by {[m.instance for m in watched]}",
        )

    def listener_calls_since(self, since: float, *, besides: str | None = None) -> dict[str, list[str]]:
        return {
            instance: [f"{e['event']} {e['partitions']}" for e in events]
            for instance, events in self.fleet.events_since(since, "assigned", "revoked", "lost").items()
            if events and instance != besides
        }

    async def finish(self, within: float = 90.0) -> Verdict:
        await self.producer.stop()
        verdict = await self.ledger.until_all_processed(within)
        await asyncio.sleep(1.5)
        await self.sampler.stop()
        return verdict


@asynccontextmanager
async def consumer_scenario(
    kafka: EmbeddedKafka,
    name: str,
    *,
    members: int = 3,
    partitions: int = 6,
    rate: float = 40.0,
    spec: MemberSpec | None = None,
) -> AsyncIterator[ConsumerScenario]:
    suffix = uuid.uuid4().hex[:6]
    topic, group = f"kip848-{name}-{suffix}", f"kip848-{name}-{suffix}"
    await asyncio.to_thread(kafka.create_topic, topic, partitions)
    ledger = Ledger()
    producer = LedgerProducer(kafka.bootstrap_servers, topic, ledger, rate=rate)
    sampler = CommitSampler(kafka.bootstrap_servers, group, ledger)
    fleet = Fleet(
        kafka.bootstrap_servers, [topic], group, ledger, spec=spec or MemberSpec(group_protocol="consumer")
    )
    ownership = OwnershipSampler(
        lambda: list(fleet.members.values()), {(topic, p) for p in range(partitions)}
    )
    run = ConsumerScenario(kafka, topic, group, partitions, ledger, producer, sampler, fleet, ownership)
    try:
        await producer.start()
        await sampler.start()
        fleet.start([f"m-{index}" for index in range(members)])
        await run.stable()
        await run.flowing()
        ownership.start()
        yield run
    finally:
        await ownership.stop()
        await producer.stop()
        await sampler.stop()
        await asyncio.to_thread(fleet.stop)

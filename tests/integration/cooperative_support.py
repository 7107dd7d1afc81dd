"""Members that record what cooperative rebalancing must guarantee, for the tests against real brokers:
every delivery (partition, offset, when), every listener call with the generation it came in, and the
ownership of every member sampled every 100 ms (what it fetches, as the application side holds it)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from staticconsumer.consumer import ConsumerRebalanceListener, StaticConsumer
from staticconsumer.membership import TopicPartition
from staticconsumer.testing.ledger import Ledger

from .support import FAST

Partition = tuple[str, int]

COOPERATIVE = {
    **FAST,
    "fetch_max_wait_ms": 100,
    "auto_commit_interval_ms": 500,
    "assignors": ["cooperative-sticky"],
}
"""Test members: short sessions, a fetch at least every 100 ms, auto-commit every 500 ms."""


@dataclass
class Call:
    kind: str
    partitions: frozenset[Partition]
    at: float
    generation: int


@dataclass
class Listener(ConsumerRebalanceListener):
    consumer: StaticConsumer | None = None
    calls: list[Call] = field(default_factory=list)

    def _add(self, kind: str, partitions: frozenset[TopicPartition]) -> None:
        generation = self.consumer.generation if self.consumer is not None else -1
        self.calls.append(
            Call(kind, frozenset((tp.topic, tp.partition) for tp in partitions), time.monotonic(), generation)
        )

    def on_partitions_revoked(self, revoked: frozenset[TopicPartition]) -> None:
        self._add("revoked", revoked)

    def on_partitions_assigned(self, assigned: frozenset[TopicPartition]) -> None:
        self._add("assigned", assigned)

    def on_partitions_lost(self, lost: frozenset[TopicPartition]) -> None:
        self._add("lost", lost)

    def since(self, when: float, kind: str) -> set[Partition]:
        return {p for c in self.calls if c.at >= when and c.kind == kind for p in c.partitions}


class Member:
    """A StaticConsumer polling in a task of its own, recording deliveries into the ledger."""

    def __init__(
        self,
        bootstrap: str,
        group: str,
        topic: str | tuple[str, ...],
        instance: str,
        ledger: Ledger,
        **options: Any,
    ):
        self.instance = instance
        self.ledger = ledger
        self.listener = Listener()
        self.consumer = StaticConsumer(
            *((topic,) if isinstance(topic, str) else topic),
            bootstrap_servers=bootstrap,
            group_id=group,
            group_instance_id=instance,
            listener=self.listener,
            **{**COOPERATIVE, **options},
        )
        self.listener.consumer = self.consumer
        self.deliveries: dict[Partition, list[tuple[int, float]]] = {}
        """Per partition, (offset, monotonic time of delivery) in delivery order."""
        self.stops: list[tuple[float, frozenset[Partition] | None]] = []
        """Every StopFetching the membership asked of the application side (None: everything)."""
        self._task: asyncio.Task[None] | None = None
        application_side = self.consumer._partitions
        stop_fetching = application_side.stop_fetching

        def recording_stop(partitions: frozenset[TopicPartition] | None) -> None:
            named = None if partitions is None else frozenset((tp.topic, tp.partition) for tp in partitions)
            self.stops.append((time.monotonic(), named))
            stop_fetching(partitions)

        application_side.stop_fetching = recording_stop  # type: ignore[method-assign]

    async def start(self) -> Member:
        await self.consumer.start()
        self._task = asyncio.create_task(self._poll(), name=f"member-{self.instance}")
        return self

    async def _poll(self) -> None:
        while True:
            batch = await self.consumer.getmany(timeout_ms=100)
            now = time.monotonic()
            for tp, rows in batch.items():
                key = (tp.topic, tp.partition)
                self.deliveries.setdefault(key, []).extend((r.offset, now) for r in rows)
                self.ledger.processed(key, (r.offset for r in rows), self.instance)

    def owned(self) -> set[Partition]:
        """What it fetches now."""
        return {(tp.topic, tp.partition) for tp in self.consumer.assignment()}

    def held(self) -> set[Partition]:
        """What it fetches, plus what it stopped fetching but has not given up yet (revoke running)."""
        return {(tp.topic, tp.partition) for tp in self.consumer._partitions._held}

    async def stop(self, leave_group: bool = False) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
        await self.consumer.stop(leave_group=leave_group)

    def max_gap(self, partition: Partition, start: float, end: float) -> float:
        """The longest time without a delivery of ``partition`` between ``start`` and ``end``."""
        times = [start] + [t for _, t in self.deliveries.get(partition, []) if start <= t <= end] + [end]
        return max(b - a for a, b in itertools.pairwise(times))

    def stopped(self, partitions: Iterable[Partition], start: float, end: float) -> list[float]:
        """When, between ``start`` and ``end``, any of ``partitions`` was told to stop fetching."""
        wanted = set(partitions)
        return [at for at, named in self.stops if start <= at <= end and (named is None or named & wanted)]

    def offsets_after(self, partition: Partition, start: float) -> list[int]:
        return [o for o, t in self.deliveries.get(partition, []) if t >= start]


@dataclass
class Sample:
    at: float
    held: dict[str, set[Partition]]
    """Per member, what it fetches or has stopped fetching but not yet given up."""
    fetching: dict[str, set[Partition]]


class OwnershipSampler:
    """Every ``interval`` seconds, what each member holds and fetches. Members need ``held()`` and
    ``owned()`` (fetching); Java peers report what their listener was told (held = fetching)."""

    def __init__(self, members: Mapping[str, Any], interval: float = 0.1) -> None:
        self.members = members
        self.interval = interval
        self.samples: list[Sample] = []
        self._task: asyncio.Task[None] | None = None

    def start(self) -> OwnershipSampler:
        self._task = asyncio.create_task(self._run())
        return self

    def sample(self) -> Sample:
        held = {name: set(member.held()) for name, member in self.members.items()}
        fetching = {name: set(member.owned()) for name, member in self.members.items()}
        sample = Sample(time.monotonic(), held, fetching)
        self.samples.append(sample)
        return sample

    async def _run(self) -> None:
        while True:
            self.sample()
            await asyncio.sleep(self.interval)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def double_owned(self) -> list[tuple[float, Partition, list[str]]]:
        """Every sample where a partition had two owners at once."""
        found: list[tuple[float, Partition, list[str]]] = []
        for sample in self.samples:
            owners: dict[Partition, list[str]] = {}
            for name, partitions in sample.held.items():
                for p in partitions:
                    owners.setdefault(p, []).append(name)
            found.extend((sample.at, p, names) for p, names in owners.items() if len(names) > 1)
        return found

    def not_fetching(
        self, name: str, partitions: Iterable[Partition], start: float, end: float
    ) -> list[float]:
        """Sample times between ``start`` and ``end`` when ``name`` was not fetching all of ``partitions``."""
        wanted = set(partitions)
        return [
            s.at for s in self.samples if start <= s.at <= end and not wanted <= s.fetching.get(name, set())
        ]


def settled(
    members: Sequence[Member], expected: set[Partition], *, generation: int | None = None
) -> tuple[bool, dict[str, set[Partition]]]:
    """One generation for all, every expected partition owned exactly once (each member fetching)."""
    owned = {m.instance: m.owned() for m in members}
    flat = [p for parts in owned.values() for p in parts]
    generations = {m.consumer.generation for m in members}
    ok = len(generations) == 1 and sorted(flat) == sorted(expected) and len(flat) == len(set(flat))
    if generation is not None:
        ok = ok and generations == {generation}
    return ok, owned


async def until_settled(
    members: Sequence[Member], expected: set[Partition], within: float, *, quiet: float = 2.0
) -> dict[str, set[Partition]]:
    """Wait until the group is settled and stays so (same owners, same generation) for ``quiet`` seconds."""
    deadline = time.monotonic() + within
    stable_since: float | None = None
    last: tuple[int, dict[str, set[Partition]]] | None = None
    while True:
        ok, owned = settled(members, expected)
        state = (members[0].consumer.generation, owned)
        if ok and state == last:
            if stable_since is not None and time.monotonic() - stable_since >= quiet:
                return owned
        else:
            stable_since = time.monotonic() if ok else None
        last = state if ok else None
        if time.monotonic() > deadline:
            generations = {m.instance: m.consumer.generation for m in members}
            raise AssertionError(f"not settled within {within}s: generations {generations}, owned {owned}")
        await asyncio.sleep(0.1)

"""An at-least-once ledger for fault tests: what the producer got acknowledged, what consumers processed,
and what the group committed over time.

The verdict is the contract a consumer group owes its application whatever the network or the brokers
do: every acknowledged record is processed by some member (``lost`` is empty), and no committed offset
ever moves backwards. Duplicates are allowed (at-least-once) and counted.

Committed offsets are read from the group's coordinator, and Kafka serves those reads at the
coordinator's high watermark. A newly elected coordinator starts from its own high watermark, which can
lag the one its predecessor served by a replication round, so right after a failover it may answer an
offset older than one already read (the newer commit is not lost: it shows once the high watermark
catches up). "Backwards" therefore compares samples read from the same coordinator; a step back across
a coordinator change is kept apart (``Verdict.back_across_failover``) and not held against the group.

:class:`LedgerProducer` produces keyed records at a steady rate and records each acknowledged
``(partition, offset)``; :class:`CommitSampler` samples the group's committed offsets from the broker
(through a listener no fault touches). Members report what they processed with :meth:`Ledger.processed`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

Partition = tuple[str, int]


@dataclass(frozen=True)
class Backwards:
    """A committed offset that moved backwards between two samples."""

    partition: Partition
    before: int
    after: int
    at: float


@dataclass(frozen=True)
class Verdict:
    acknowledged: int
    processed: int
    lost: Mapping[Partition, list[int]]
    duplicates: int
    backwards: list[Backwards]
    commit_samples: int
    back_across_failover: list[Backwards] = field(default_factory=list)

    @property
    def lost_count(self) -> int:
        return sum(len(offsets) for offsets in self.lost.values())

    def summary(self) -> str:
        lost = {f"{t}-{p}": offsets[:10] for (t, p), offsets in self.lost.items()}
        return (
            f"acknowledged {self.acknowledged}, processed {self.processed} distinct, lost {self.lost_count} "
            f"{lost if lost else ''}, duplicates {self.duplicates}, commits backwards {self.backwards[:5]} "
            f"({self.commit_samples} commit samples"
            + (
                f"; a new coordinator's first reads stepped back {self.back_across_failover[:5]}"
                if self.back_across_failover
                else ""
            )
            + ")"
        )


@dataclass
class Ledger:
    """Thread-safe: member reports arrive on reader threads, acknowledgements on the producer's loop."""

    acked: dict[Partition, set[int]] = field(default_factory=dict)
    seen: dict[Partition, Counter[int]] = field(default_factory=dict)
    by_member: Counter[str] = field(default_factory=Counter)
    commits: dict[Partition, list[tuple[float, int, int | None]]] = field(default_factory=dict)
    """Per partition: (when, committed offset, the coordinator node that answered, if known)."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def acknowledged(self, partition: Partition, offset: int) -> None:
        with self._lock:
            self.acked.setdefault(partition, set()).add(offset)

    def processed(self, partition: Partition, offsets: Iterable[int], member: str = "") -> None:
        with self._lock:
            counts = self.seen.setdefault(partition, Counter())
            for offset in offsets:
                counts[offset] += 1
                self.by_member[member] += 1

    def committed(
        self, offsets: Mapping[Partition, int], at: float | None = None, coordinator: int | None = None
    ) -> None:
        """One sample of the group's committed offsets, read at ``at`` from node ``coordinator``."""
        now = time.monotonic() if at is None else at
        with self._lock:
            for partition, offset in offsets.items():
                self.commits.setdefault(partition, []).append((now, offset, coordinator))

    @property
    def acknowledged_count(self) -> int:
        with self._lock:
            return sum(len(offsets) for offsets in self.acked.values())

    def missing(self) -> dict[Partition, list[int]]:
        """Acknowledged offsets no member has processed (yet)."""
        with self._lock:
            return {
                partition: sorted(offsets - set(self.seen.get(partition, ())))
                for partition, offsets in self.acked.items()
                if offsets - set(self.seen.get(partition, ()))
            }

    def verdict(self) -> Verdict:
        missing = self.missing()
        with self._lock:
            steps_back = [  # a sample with no coordinator named is compared with every other
                (
                    Backwards(partition, before, after, at),
                    None in (served_before, served_after) or served_before == served_after,
                )
                for partition, samples in self.commits.items()
                for (_, before, served_before), (at, after, served_after) in itertools.pairwise(samples)
                if after < before
            ]
            return Verdict(
                acknowledged=sum(len(o) for o in self.acked.values()),
                processed=sum(len(c) for c in self.seen.values()),
                lost=missing,
                duplicates=sum(n - 1 for c in self.seen.values() for n in c.values() if n > 1),
                backwards=[step for step, same_coordinator in steps_back if same_coordinator],
                commit_samples=sum(len(s) for s in self.commits.values()),
                back_across_failover=[step for step, same_coordinator in steps_back if not same_coordinator],
            )

    async def until_all_processed(self, within: float) -> Verdict:
        """Wait until every acknowledged record was processed (or ``within`` seconds passed)."""
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if not self.missing():
                break
            await asyncio.sleep(0.2)
        return self.verdict()

    def assert_at_least_once(self) -> Verdict:
        verdict = self.verdict()
        assert verdict.acknowledged > 0, "the producer got nothing acknowledged: the test proved nothing"
        assert not verdict.lost, f"acknowledged records never processed: {verdict.summary()}"
        assert not verdict.backwards, f"committed offsets moved backwards: {verdict.summary()}"
        return verdict


class LedgerProducer:
    """Produces ``rate`` keyed records a second (acks=all, idempotent) and books each acknowledgement."""

    def __init__(
        self,
        bootstrap_servers: str,
        topic: str,
        ledger: Ledger,
        *,
        rate: float = 50.0,
        client_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.topic = topic
        self.ledger = ledger
        self.rate = rate
        self.client_kwargs = dict(client_kwargs or {})
        self.sent = 0
        self.failed = 0
        self._task: asyncio.Task[None] | None = None
        self._producer: Any = None

    async def start(self) -> LedgerProducer:
        from aiokafka import AIOKafkaProducer

        self._producer = AIOKafkaProducer(
            bootstrap_servers=self.bootstrap_servers,
            acks="all",
            enable_idempotence=True,
            linger_ms=5,
            request_timeout_ms=30_000,
            **self.client_kwargs,
        )
        await self._producer.start()
        self._task = asyncio.create_task(self._run(), name=f"ledger-producer-{self.topic}")
        return self

    async def _run(self) -> None:
        started = time.monotonic()
        while True:
            due = started + self.sent / self.rate
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            index = self.sent
            self.sent += 1
            try:
                future = await self._producer.send(self.topic, f"v{index}".encode(), key=f"k{index}".encode())
            except Exception:  # buffer full or producer closing: not acknowledged, not owed
                self.failed += 1
                continue
            future.add_done_callback(self._booked)

    def _booked(self, future: asyncio.Future[Any]) -> None:
        if future.cancelled() or future.exception() is not None:
            self.failed += 1
            return
        metadata = future.result()
        self.ledger.acknowledged((metadata.topic, metadata.partition), metadata.offset)

    async def stop(self) -> None:
        """Stop producing and wait for every send in flight to be acknowledged or to fail."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._producer is not None:
            with contextlib.suppress(Exception):
                await self._producer.flush()
            await self._producer.stop()
            self._producer = None


class CommitSampler:
    """Samples the group's committed offsets every ``interval`` seconds into the ledger."""

    def __init__(
        self,
        bootstrap_servers: str,
        group: str,
        ledger: Ledger,
        *,
        interval: float = 0.5,
        client_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.group = group
        self.ledger = ledger
        self.interval = interval
        self.client_kwargs = dict(client_kwargs or {})
        self.samples = 0
        self.errors = 0
        self._task: asyncio.Task[None] | None = None
        self._admin: Any = None

    async def start(self) -> CommitSampler:
        self._task = asyncio.create_task(self._run(), name=f"commit-sampler-{self.group}")
        return self

    async def sample(self) -> dict[Partition, int]:
        """The group's committed offsets now (partitions without a commit left out)."""
        return (await self.sample_from())[1]

    async def sample_from(self) -> tuple[int, dict[Partition, int]]:
        """The coordinator node that answered, and the group's committed offsets it served."""
        from aiokafka.admin import AIOKafkaAdminClient

        if self._admin is None:
            admin = AIOKafkaAdminClient(
                bootstrap_servers=self.bootstrap_servers, request_timeout_ms=5_000, **self.client_kwargs
            )
            await admin.start()
            self._admin = admin
        try:
            coordinator = await self._admin.find_coordinator(self.group)
            offsets = await self._admin.list_consumer_group_offsets(
                self.group, group_coordinator_id=coordinator
            )
        except Exception:
            await self._close_admin()
            raise
        return coordinator, {
            (tp.topic, tp.partition): meta.offset for tp, meta in offsets.items() if meta.offset >= 0
        }

    async def _close_admin(self) -> None:
        admin, self._admin = self._admin, None
        if admin is not None:
            with contextlib.suppress(Exception):
                await admin.close()

    async def _run(self) -> None:
        while True:
            try:
                at = time.monotonic()
                coordinator, offsets = await self.sample_from()
                self.ledger.committed(offsets, at, coordinator)
                self.samples += 1
            except Exception:  # coordinator moving or node down: the next sample will do
                self.errors += 1
            await asyncio.sleep(self.interval)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        with contextlib.suppress(Exception):
            coordinator, offsets = await self.sample_from()
            self.ledger.committed(offsets, coordinator=coordinator)
        await self._close_admin()

"""The leader's metadata: an assignment uses a read that began after the rebalance did, awaiting the one
in flight, and never one from before (it may miss what made another member rejoin)."""

from __future__ import annotations

import asyncio

import pytest

from staticconsumer._aiokafka import PartitionReplicas
from staticconsumer.runtime.metadata import TopicMetadata, TopicReplicas


class Cluster:
    """Answers Metadata from ``partitions`` (topics absent from it do not exist); counts the reads.
    With ``hold`` set, a read waits for it, so a test can look at a read in flight."""

    def __init__(self, partitions: dict[str, int]) -> None:
        self.partitions = partitions
        self.reads: list[frozenset[str]] = []
        self.hold: asyncio.Event | None = None
        self.fail = False

    async def read(self, topics: frozenset[str]) -> TopicReplicas:
        self.reads.append(topics)
        if self.hold is not None:
            await self.hold.wait()
        if self.fail:
            raise ConnectionError("broker gone")
        return {
            t: [PartitionReplicas(p, frozenset()) for p in range(self.partitions[t])]
            for t in topics
            if t in self.partitions
        }


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def counts(metadata: TopicReplicas) -> dict[str, int]:
    return {t: len(p) for t, p in metadata.items()}


async def test_a_read_begun_after_the_rebalance_is_reused() -> None:
    cluster, clock = Cluster({"orders": 4, "payments": 2}), Clock()
    metadata = TopicMetadata(cluster.read, now=clock)
    began = clock.now
    await metadata.fresh(frozenset({"orders", "payments"}))
    clock.now += 0.5
    assert counts(await metadata.read_since(began, frozenset({"orders"}))) == {"orders": 4}
    assert cluster.reads == [frozenset({"orders", "payments"})]


async def test_a_read_from_before_the_rebalance_is_not_reused() -> None:
    """Another member rejoined because it saw the topic grow: the leader's older read has not."""
    cluster, clock = Cluster({"orders": 4}), Clock()
    metadata = TopicMetadata(cluster.read, now=clock)
    await metadata.fresh(frozenset({"orders"}))
    clock.now += 1.0
    cluster.partitions["orders"] = 6
    assert counts(await metadata.read_since(clock.now, frozenset({"orders"}))) == {"orders": 6}
    assert len(cluster.reads) == 2


async def test_the_read_in_flight_is_awaited_not_repeated() -> None:
    cluster, clock = Cluster({"orders": 4}), Clock()
    metadata = TopicMetadata(cluster.read, now=clock)
    cluster.hold = asyncio.Event()
    began = clock.now
    ahead = asyncio.create_task(metadata.fresh(frozenset({"orders"})))
    await asyncio.sleep(0)
    assert metadata.reading(frozenset({"orders"}))
    assigning = asyncio.create_task(metadata.read_since(began, frozenset({"orders"})))
    await asyncio.sleep(0)
    cluster.hold.set()
    assert counts(await assigning) == {"orders": 4}
    await ahead
    assert len(cluster.reads) == 1
    assert not metadata.reading(frozenset({"orders"}))


async def test_a_failed_read_ahead_makes_the_assignment_read_again() -> None:
    cluster, clock = Cluster({"orders": 4}), Clock()
    metadata = TopicMetadata(cluster.read, now=clock)
    cluster.fail = True
    with pytest.raises(ConnectionError):
        await metadata.fresh(frozenset({"orders"}))
    cluster.fail = False
    assert counts(await metadata.read_since(clock.now, frozenset({"orders"}))) == {"orders": 4}
    assert len(cluster.reads) == 2


async def test_a_topic_the_read_did_not_ask_for_is_read() -> None:
    cluster, clock = Cluster({"orders": 4, "payments": 2}), Clock()
    metadata = TopicMetadata(cluster.read, now=clock)
    await metadata.fresh(frozenset({"orders"}))
    recent = await metadata.read_since(clock.now, frozenset({"orders", "payments"}))
    assert counts(recent) == {"orders": 4, "payments": 2}
    assert cluster.reads[-1] == frozenset({"orders", "payments"})


async def test_a_topic_asked_for_but_absent_does_not_exist_and_is_not_asked_again() -> None:
    cluster, clock = Cluster({"orders": 4}), Clock()
    metadata = TopicMetadata(cluster.read, now=clock)
    await metadata.fresh(frozenset({"orders", "refunds"}))
    assert counts(await metadata.read_since(clock.now, frozenset({"orders", "refunds"}))) == {"orders": 4}
    assert len(cluster.reads) == 1


async def test_known_is_the_last_finished_read_and_never_asks() -> None:
    cluster = Cluster({"orders": 3, "payments": 2})
    metadata = TopicMetadata(cluster.read, now=Clock())
    assert metadata.known(frozenset({"orders"})) == {}
    assert not metadata.covers(frozenset({"orders"}))
    await metadata.fresh(frozenset({"orders", "missing"}))
    assert counts(metadata.known(frozenset({"orders", "payments", "missing"}))) == {"orders": 3}
    assert metadata.covers(frozenset({"orders"}))
    assert not metadata.covers(frozenset({"orders", "payments"}))
    assert cluster.reads == [frozenset({"orders", "missing"})]


async def test_known_after_a_failed_read_is_empty_and_a_read_in_flight_covers() -> None:
    cluster = Cluster({"orders": 3})
    metadata = TopicMetadata(cluster.read, now=Clock())
    cluster.hold = asyncio.Event()
    cluster.fail = True
    reading = asyncio.ensure_future(metadata.fresh(frozenset({"orders"})))
    await asyncio.sleep(0)
    assert metadata.covers(frozenset({"orders"}))  # asked for already: no second read is started
    assert metadata.known(frozenset({"orders"})) == {}
    cluster.hold.set()
    with pytest.raises(ConnectionError):
        await reading
    assert metadata.known(frozenset({"orders"})) == {}

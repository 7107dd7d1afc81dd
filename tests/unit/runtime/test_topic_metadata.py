"""The leader's metadata: reused for an assignment while young and complete, read again otherwise."""

from __future__ import annotations

from staticconsumer._aiokafka import PartitionReplicas
from staticconsumer.runtime.metadata import TopicMetadata, TopicReplicas


class Cluster:
    """Answers Metadata from ``partitions`` (topics absent from it do not exist); counts the reads."""

    def __init__(self, partitions: dict[str, int]) -> None:
        self.partitions = partitions
        self.reads: list[frozenset[str]] = []

    async def read(self, topics: frozenset[str]) -> TopicReplicas:
        self.reads.append(topics)
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


async def test_an_assignment_soon_after_a_read_reuses_it() -> None:
    cluster, clock = Cluster({"orders": 4, "payments": 2}), Clock()
    metadata = TopicMetadata(cluster.read, max_age=300.0, now=clock)
    await metadata.fresh(frozenset({"orders", "payments"}))
    clock.now += 299.0
    recent = await metadata.recent(frozenset({"orders"}))
    assert {t: len(p) for t, p in recent.items()} == {"orders": 4}
    assert cluster.reads == [frozenset({"orders", "payments"})]


async def test_an_old_read_is_not_reused() -> None:
    cluster, clock = Cluster({"orders": 4}), Clock()
    metadata = TopicMetadata(cluster.read, max_age=300.0, now=clock)
    await metadata.recent(frozenset({"orders"}))
    clock.now += 300.0
    cluster.partitions["orders"] = 6
    recent = await metadata.recent(frozenset({"orders"}))
    assert len(recent["orders"]) == 6
    assert len(cluster.reads) == 2


async def test_a_topic_the_last_read_did_not_cover_is_asked_for() -> None:
    cluster, clock = Cluster({"orders": 4, "payments": 2}), Clock()
    metadata = TopicMetadata(cluster.read, max_age=300.0, now=clock)
    await metadata.fresh(frozenset({"orders"}))
    recent = await metadata.recent(frozenset({"orders", "payments"}))
    assert {t: len(p) for t, p in recent.items()} == {"orders": 4, "payments": 2}
    assert cluster.reads[-1] == frozenset({"orders", "payments"})


async def test_a_topic_missing_from_the_last_read_is_asked_for_again() -> None:
    """It may have been created since: assigning without it would leave it unconsumed until a refresh."""
    cluster, clock = Cluster({"orders": 4}), Clock()
    metadata = TopicMetadata(cluster.read, max_age=300.0, now=clock)
    assert await metadata.recent(frozenset({"orders", "refunds"})) is not None
    cluster.partitions["refunds"] = 3
    recent = await metadata.recent(frozenset({"orders", "refunds"}))
    assert {t: len(p) for t, p in recent.items()} == {"orders": 4, "refunds": 3}
    assert len(cluster.reads) == 2


async def test_every_fresh_read_replaces_what_is_reused() -> None:
    """The duties' periodic and audit reads keep the leader's next assignment current."""
    cluster, clock = Cluster({"orders": 4}), Clock()
    metadata = TopicMetadata(cluster.read, max_age=300.0, now=clock)
    await metadata.fresh(frozenset({"orders"}))
    cluster.partitions["orders"] = 8
    await metadata.fresh(frozenset({"orders"}))
    recent = await metadata.recent(frozenset({"orders"}))
    assert len(recent["orders"]) == 8
    assert len(cluster.reads) == 2

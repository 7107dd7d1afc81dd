"""The group's topics as the membership client last read them: the leader assigns from this.

A leader that asked the cluster for its group's topics before every assignment put a Metadata round trip
between the moment the group's JoinGroup barrier lifts and the moment every member may fetch again; in a
group of twelve on two cores that round trip was a third of the time partitions were unowned. Java's
leader assigns from its metadata cache, refreshed at least every ``metadata.max.age.ms``, and rejoins
when a refresh shows the assignment was computed from stale partitions. This does the same: the leader's
duties read fresh metadata (periodically, and in the audit once each generation is stable) and compare it
with what the assignment used, so partitions added since the last read are assigned one rebalance later,
never lost.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from staticconsumer._aiokafka import PartitionReplicas

TopicReplicas = dict[str, list[PartitionReplicas]]
Reader = Callable[[frozenset[str]], Awaitable[TopicReplicas]]


class TopicMetadata:
    """The last read of some topics' partitions, reused while younger than ``max_age`` seconds."""

    def __init__(self, read: Reader, *, max_age: float, now: Callable[[], float]) -> None:
        self._read = read
        self._max_age = max_age
        self._now = now
        self._last: TopicReplicas = {}
        self._read_at: float | None = None

    async def fresh(self, topics: frozenset[str]) -> TopicReplicas:
        """Ask the cluster now, and remember the answer."""
        read_at = self._now()
        metadata = await self._read(topics)
        self._last, self._read_at = metadata, read_at
        return metadata

    async def recent(self, topics: frozenset[str]) -> TopicReplicas:
        """The last answer if it is young enough and names every one of ``topics``; else :meth:`fresh`.

        A topic missing from the last answer (not created yet, or not visible) is always asked for
        again: it may exist by now, and an assignment without it would leave it unconsumed until the
        next refresh.
        """
        read_at = self._read_at
        if read_at is not None and self._now() - read_at < self._max_age and topics <= self._last.keys():
            return {topic: self._last[topic] for topic in topics}
        return await self.fresh(topics)

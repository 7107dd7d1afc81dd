"""The group's topics as the membership client reads them, so the leader's read is off the critical path.

A leader that asked the cluster for its group's topics after the JoinGroup answer put a Metadata round
trip between the moment the group's barrier lifts and the moment every member may fetch again (all of
them wait for the leader's SyncGroup); in a group of twelve on two cores that was a third of the time
partitions went unowned in a rebalance. Reusing an older read instead (Java's leader assigns from its
metadata cache) costs a second rebalance whenever another member rejoined because it saw the topics
change (the audit): the leader's old read does not have the change yet.

So the last generation's leader starts its read as it rejoins, while the barrier holds (the members it
waits for take far longer than a Metadata round trip), and assigns from that read, or from any read that
began after the rebalance did: every change seen before the rebalance started is in it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from staticconsumer._aiokafka import PartitionReplicas

TopicReplicas = dict[str, list[PartitionReplicas]]
Reader = Callable[[frozenset[str]], Awaitable[TopicReplicas]]


class _Read:
    """One read: when it began, the topics it asked for, and its answer (None if it failed)."""

    __slots__ = ("answer", "began", "topics")

    def __init__(self, began: float, topics: frozenset[str]) -> None:
        self.began = began
        self.topics = topics
        self.answer: asyncio.Future[TopicReplicas | None] = asyncio.get_running_loop().create_future()


class TopicMetadata:
    """Reads of some topics' partitions, the last one kept, the one in flight awaitable."""

    def __init__(self, read: Reader, *, now: Callable[[], float]) -> None:
        self._read = read
        self._now = now
        self._last: _Read | None = None
        self._in_flight: _Read | None = None

    def seed(self, topics: frozenset[str], metadata: TopicReplicas) -> None:
        """An answer read before this membership began (the bootstrap probe's, which named ``topics``):
        known at once, without asking again, and as old as any read can be, so :meth:`read_since` never
        takes it for a read made after a rebalance began."""
        attempt = _Read(float("-inf"), topics)
        attempt.answer.set_result({topic: rows for topic, rows in metadata.items() if topic in topics})
        if self._last is None:
            self._last = attempt

    async def fresh(self, topics: frozenset[str]) -> TopicReplicas:
        """Ask the cluster now; the answer is kept for :meth:`read_since`."""
        attempt = _Read(self._now(), topics)
        self._in_flight = attempt
        try:
            metadata = await self._read(topics)
        except BaseException:
            attempt.answer.set_result(None)
            raise
        finally:
            if self._in_flight is attempt:
                self._in_flight = None
        attempt.answer.set_result(metadata)
        if self._last is None or attempt.began >= self._last.began:
            self._last = attempt
        return metadata

    def known(self, topics: frozenset[str]) -> TopicReplicas:
        """What the last finished read said of ``topics`` (those it asked for and found), at once; never
        a request. Empty before the first read."""
        last = self._last
        if last is None or not last.answer.done():
            return {}
        metadata = last.answer.result()
        if metadata is None:
            return {}
        return {topic: metadata[topic] for topic in topics & last.topics if topic in metadata}

    def covers(self, topics: frozenset[str]) -> bool:
        """Whether the last read, or the one in flight, asked for every one of ``topics``."""
        return any(read is not None and topics <= read.topics for read in (self._last, self._in_flight))

    def reading(self, topics: frozenset[str]) -> bool:
        """Whether a read of (at least) ``topics`` is in flight."""
        return self._in_flight is not None and topics <= self._in_flight.topics

    async def read_since(self, began: float, topics: frozenset[str]) -> TopicReplicas:
        """Metadata of ``topics`` from a read that began at or after ``began``: the one in flight (awaited),
        else the last one, else a new one. A read names the topics it asked for, so a topic missing from
        its answer did not exist then, which is after ``began``."""
        for attempt in (self._in_flight, self._last):
            if attempt is None or attempt.began < began or not topics <= attempt.topics:
                continue
            metadata = await asyncio.shield(attempt.answer)
            if metadata is not None:
                return {topic: metadata[topic] for topic in topics if topic in metadata}
        return await self.fresh(topics)

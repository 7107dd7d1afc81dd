"""The leader's duties, whether it computed the assignment or was told to skip it (KIP-814).

Pure decisions, no I/O: the driver feeds in what it learned (the members' subscriptions, cluster
metadata, the assignment the coordinator holds) and gets back a reason to rejoin, or None.

Java's leader keeps a metadata snapshot of every member's topics and rejoins when a partition count
changes (which, from the leader of a Stable group, forces a rebalance). Beyond that this module
catches what Java misses:

* a returning leader cannot see changes made while it was down (KIP-814's acknowledged gap): the
  assignment audit compares the partitions that exist with those the coordinator's current assignment
  hands out, and any subscribed partition owned by nobody is a reason to rebalance;
* a static member that restarts with a different subscription is replaced in place without a
  rebalance (KAFKA-12759), so its new topics are never assigned: the same audit, run by every member
  for its own topics, notices them;
* on brokers that answer below JoinGroup v9 a returning leader is not told it leads; the membership
  machine recognises a leader id minted for our own instance id (LeadershipGuessed) and the duties
  start from there.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass

import anyio

from staticconsumer.membership import TopicPartition

log = logging.getLogger("staticconsumer.leader")

PartitionCounts = Mapping[str, int]
"""Topic -> number of partitions; a topic absent from the map does not exist (or is not visible)."""


def metadata_change(
    snapshot: PartitionCounts, current: PartitionCounts, watched: Iterable[str]
) -> str | None:
    """Why the assignment is stale for ``watched`` topics, or None if their partitions are unchanged."""
    changes = []
    for topic in sorted(set(watched)):
        before, after = snapshot.get(topic), current.get(topic)
        if before == after:
            continue
        if before is None:
            changes.append(f"{topic} appeared with {after} partitions")
        elif after is None:
            changes.append(f"{topic} disappeared")
        else:
            changes.append(f"{topic} went from {before} to {after} partitions")
    return "metadata changed: " + "; ".join(changes) if changes else None


def unowned_partitions(
    watched: Iterable[str], counts: PartitionCounts, owned: Iterable[TopicPartition]
) -> frozenset[TopicPartition]:
    """Partitions of ``watched`` topics that exist but that no member of the group owns."""
    taken = set(owned)
    return frozenset(
        TopicPartition(topic, partition)
        for topic in set(watched)
        for partition in range(counts.get(topic, 0))
        if TopicPartition(topic, partition) not in taken
    )


def audit_reason(unowned: frozenset[TopicPartition], limit: int = 5) -> str | None:
    """A rejoin reason naming (a few of) the unowned partitions, or None when all are owned."""
    if not unowned:
        return None
    shown = ", ".join(f"{tp.topic}-{tp.partition}" for tp in sorted(unowned)[:limit])
    more = f" and {len(unowned) - limit} more" if len(unowned) > limit else ""
    return f"{len(unowned)} subscribed partitions owned by no member: {shown}{more}"


@dataclass
class MetadataWatch:
    """What one member watches in one generation, and the partition counts its assignment was made for.

    The leader watches every member's topics; other members watch only their own. ``snapshot`` is
    taken when the generation starts, so a change is noticed once, and ``reported`` stops the same
    change from causing a second rejoin while the first is under way.
    """

    generation: int
    watched: frozenset[str]
    snapshot: dict[str, int]
    leader: bool
    reported: bool = False

    def check(self, current: PartitionCounts) -> str | None:
        """A rejoin reason the first time the watched topics' partitions differ from the snapshot."""
        if self.reported or not self.leader:
            return None
        reason = metadata_change(self.snapshot, current, self.watched)
        if reason is not None:
            self.reported = True
        return reason


@dataclass(frozen=True)
class DescribedMember:
    """One member as the coordinator describes it: what it subscribes to and what it was assigned."""

    member_id: str
    group_instance_id: str | None
    topics: frozenset[str]
    assigned: tuple[TopicPartition, ...]


@dataclass(frozen=True)
class GroupView:
    """DescribeGroups, reduced to what the duties need."""

    state: str
    members: tuple[DescribedMember, ...]


CountsFetcher = Callable[[frozenset[str]], Awaitable[dict[str, int]]]
GroupDescriber = Callable[[], Awaitable[GroupView | None]]
RejoinRequester = Callable[[str], None]


class LeaderDuties:
    """Runs the duties above for one consumer: a periodic metadata check while leading, and one
    assignment audit per generation for every member (its own topics; the leader's, everyone's).

    All I/O comes in as callables, so the logic is testable without a broker.
    """

    def __init__(
        self,
        *,
        own_topics: Callable[[], frozenset[str]],
        refresh_interval: float,
        partition_counts: CountsFetcher,
        describe: GroupDescriber,
        rejoin: RejoinRequester,
    ) -> None:
        self._own_topics = own_topics
        self._interval = refresh_interval
        self._partition_counts = partition_counts
        self._describe = describe
        self._rejoin = rejoin
        self.watch: MetadataWatch | None = None
        self._audit_generation: int | None = None
        self._audited: set[int] = set()
        self._wake = anyio.Event()

    # -- inputs from the driver -----------------------------------------------------------------

    def leader_elected(
        self, generation: int, group_topics: frozenset[str], counts: PartitionCounts | None
    ) -> None:
        """We lead ``generation``; ``counts`` are the partitions the assignment was computed from, if any."""
        watched = group_topics | self._own_topics()
        snapshot = dict(counts) if counts is not None else {}
        self.watch = MetadataWatch(generation, watched, snapshot, leader=True)
        if counts is None:
            self._wake.set()  # take the snapshot now (SkipAssignment: nothing was computed)

    def leadership_guessed(self, generation: int) -> None:
        """A below-v9 broker named a leader minted for our instance id: lead, learning members by describe."""
        self.watch = MetadataWatch(generation, self._own_topics(), {}, leader=True)
        self._wake.set()

    def assigned(self, generation: int, leading: bool) -> None:
        """Stable in ``generation``: audit the coordinator's assignment once for this generation."""
        if not leading and (self.watch is None or self.watch.generation != generation):
            self.watch = MetadataWatch(generation, self._own_topics(), {}, leader=False)
        if generation not in self._audited:
            self._audit_generation = generation
            self._wake.set()

    def membership_lost(self) -> None:
        """No generation any more (rejoining, fenced, stopped): nothing to watch until the next one."""
        self.watch = None
        self._audit_generation = None

    # -- the loop -------------------------------------------------------------------------------

    async def run(self) -> None:
        """Forever: audit when asked, check metadata every refresh interval while leading."""
        while True:
            with anyio.move_on_after(self._interval):
                await self._wake.wait()
            self._wake = anyio.Event()
            try:
                await self.step()
            except Exception as error:  # metadata or describe failed: try again next interval
                log.info("leader duties skipped a round: %r", error)

    async def step(self) -> None:
        watch = self.watch
        if watch is None:
            return
        if watch.leader and not watch.snapshot:
            await self._complete_snapshot(watch)
            return
        if self._audit_generation == watch.generation:
            self._audit_generation = None
            self._audited.add(watch.generation)
            if await self._audit(watch):
                return
        if watch.leader:
            reason = watch.check(await self._partition_counts(watch.watched))
            if reason is not None and self.watch is watch:
                self._rejoin(reason)

    async def _complete_snapshot(self, watch: MetadataWatch) -> None:
        """SkipAssignment or a guessed leadership: learn the members' topics and today's partitions."""
        view = await self._describe()
        if view is not None:
            watch.watched = watch.watched | frozenset(t for m in view.members for t in m.topics)
        counts = await self._partition_counts(watch.watched)
        watch.snapshot = {t: counts[t] for t in watch.watched if t in counts}
        if self._audit_generation is None and watch.generation not in self._audited:
            self._audit_generation = watch.generation
        self._wake.set()

    async def _audit(self, watch: MetadataWatch) -> bool:
        """Rejoin if a partition this member is responsible for is owned by nobody; True if it did."""
        view = await self._describe()
        if view is None or view.state != "Stable" or self.watch is not watch:
            return False
        topics = watch.watched if watch.leader else self._own_topics()
        counts = await self._partition_counts(frozenset(topics))
        owned = [tp for member in view.members for tp in member.assigned]
        reason = audit_reason(unowned_partitions(topics, counts, owned))
        if reason is not None and self.watch is watch:
            watch.reported = True
            self._rejoin(reason)
            return True
        return False

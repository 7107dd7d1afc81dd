"""The leader's duties over time: a metadata watch while leading, and one ownership audit per generation.

The decisions are pure (staticconsumer/leader.py); this runs them on the membership thread, with all
I/O passed in as callables, so it is testable without a broker.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from staticconsumer.leader import GroupView, MetadataWatch, PartitionCounts

log = logging.getLogger("staticconsumer.leader")


CountsFetcher = Callable[[frozenset[str]], Awaitable[dict[str, int]]]
GroupDescriber = Callable[[], Awaitable["GroupView | None"]]
RejoinRequester = Callable[[str], None]
AuditVerdict = Literal["rejoined", "rebalancing", "checked"]


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
        first_fetched: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._own_topics = own_topics
        self._first_fetched = first_fetched
        """Awaited before the first round asks anything: a restarting member's first fetch goes out
        before the audit's (or the leader's snapshot's) DescribeGroups and Metadata, not beside them."""
        self._interval = refresh_interval
        self._partition_counts = partition_counts
        self._describe = describe
        self._rejoin = rejoin
        self._watch: MetadataWatch | None = None
        self._unbuilt: tuple[int, frozenset[str], dict[str, int], bool] | None = None
        """A watch told of but not built yet (:attr:`watch`): the decisions' module
        (``staticconsumer.leader``) loads when a round first reads it, after the first fetch, not on a
        restart's way to its first record (issue 26)."""
        self.led: frozenset[str] = frozenset()
        """The topics watched as the last generation's leader (empty once a generation is followed):
        the likely leader of the next generation reads them as it rejoins."""
        self._audit_generation: int | None = None
        self._audited: set[int] = set()
        self._wake = asyncio.Event()

    @property
    def watch(self) -> MetadataWatch | None:
        """What this member watches in its current generation, if it has one."""
        if self._unbuilt is not None:
            from staticconsumer.leader import MetadataWatch

            self._watch, self._unbuilt = MetadataWatch(*self._unbuilt), None
        return self._watch

    def _watch_from(
        self, generation: int, watched: frozenset[str], snapshot: dict[str, int], leader: bool
    ) -> None:
        self._watch, self._unbuilt = None, (generation, watched, snapshot, leader)

    def _watched_generation(self) -> int | None:
        if self._unbuilt is not None:
            return self._unbuilt[0]
        return None if self._watch is None else self._watch.generation

    # -- inputs from the driver -----------------------------------------------------------------

    def leader_elected(
        self, generation: int, group_topics: frozenset[str], counts: PartitionCounts | None
    ) -> None:
        """We lead ``generation``; ``counts`` are the partitions the assignment was computed from, if any."""
        watched = group_topics | self._own_topics()
        snapshot = dict(counts) if counts is not None else {}
        self._watch_from(generation, watched, snapshot, leader=True)
        self.led = watched
        if counts is None:
            self._wake.set()  # take the snapshot now (SkipAssignment: nothing was computed)

    def leadership_guessed(self, generation: int) -> None:
        """A below-v9 broker named a leader minted for our instance id: lead, learning members by describe."""
        self._watch_from(generation, self._own_topics(), {}, leader=True)
        self._wake.set()

    def assigned(self, generation: int, leading: bool) -> None:
        """Stable in ``generation``: audit the coordinator's assignment once for this generation."""
        if not leading and self._watched_generation() != generation:
            self._watch_from(generation, self._own_topics(), {}, leader=False)
        if not leading:
            self.led = frozenset()
        if generation not in self._audited:
            self._audit_generation = generation
            self._wake.set()

    def membership_lost(self) -> None:
        """No generation any more (rejoining, fenced, stopped): nothing to watch until the next one."""
        self._watch = self._unbuilt = None
        self._audit_generation = None

    # -- the loop -------------------------------------------------------------------------------

    async def run(self) -> None:
        """Forever: audit when asked, check metadata every refresh interval while leading."""
        while True:
            try:
                async with asyncio.timeout(self._interval):
                    await self._wake.wait()
            except TimeoutError:
                pass  # the periodic check
            self._wake.clear()  # a wake while this round runs is kept for the next
            try:
                await self.step()
            except Exception as error:  # metadata or describe failed: try again next interval
                log.info("leader duties skipped a round: %r", error)

    async def step(self) -> None:
        first_fetched, self._first_fetched = self._first_fetched, None
        if first_fetched is not None:
            await first_fetched()
        watch = self.watch
        if watch is None:
            return
        if watch.leader and not watch.snapshot:
            await self._complete_snapshot(watch)
            return
        counts: dict[str, int] | None = None
        if self._audit_generation == watch.generation:
            self._audit_generation = None
            self._audited.add(watch.generation)
            verdict, counts = await self._audit(watch)
            if verdict != "checked":
                return
        if watch.leader:
            if counts is None or not watch.watched <= counts.keys():  # the audit's are as fresh
                counts = await self._partition_counts(watch.watched)
            reason = watch.check(counts)
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

    async def _audit(self, watch: MetadataWatch) -> tuple[AuditVerdict, dict[str, int] | None]:
        """Rejoin if a partition this member is responsible for is owned by nobody.

        Also says whether the leader's metadata check should follow, with the partition counts read
        (None if none were): not after a rejoin, and not while the group is rebalancing. That rebalance
        assigns from metadata read after it began, and its generation gets an audit of its own; a check
        against this generation's counts would only ask for one more rebalance.
        """
        from staticconsumer.leader import audit_reason, unowned_partitions

        view = await self._describe()
        if view is None:
            return "checked", None  # the coordinator did not say: the metadata check still runs
        if view.state != "Stable" or self.watch is not watch:
            return "rebalancing", None
        topics = watch.watched if watch.leader else self._own_topics()
        counts = await self._partition_counts(frozenset(topics))
        # A cooperative generation leaves moving partitions unassigned for one round; their old owner
        # still holds them (its claim) until the second rebalance: not a reason to rejoin.
        owned = [tp for member in view.members for tp in (*member.assigned, *member.claimed)]
        reason = audit_reason(unowned_partitions(topics, counts, owned))
        if reason is not None and self.watch is watch:
            watch.reported = True
            self._rejoin(reason)
            return "rejoined", counts
        return "checked", counts

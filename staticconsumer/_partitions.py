"""The application's side of ownership: what it fetches, what it has buffered, where it is in each
partition, and the user's listener. This is the PartitionOwner the membership thread drives.

One record per partition the application holds (fetching, or stopped and waiting for its revoke to
finish), so a partition's position, buffer and fetch state can never disagree. Every method runs on the
application's event loop.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import math
import operator
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

import msgspec
from aiokafka import AIOKafkaConsumer, ConsumerRecord
from aiokafka.structs import TopicPartition as KafkaTopicPartition

from staticconsumer import _aiokafka
from staticconsumer.errors import IllegalStateError
from staticconsumer.listener import ListenerCall, call_listener
from staticconsumer.membership import OffsetAndMetadata, ReleaseReason, TopicPartition
from staticconsumer.runtime import MemberSnapshot

Partitions = frozenset[TopicPartition]
if TYPE_CHECKING:  # read by annotations only: subscripting aiokafka's generic class costs ~0.05 ms (issue 26)
    Records = dict[TopicPartition, list[ConsumerRecord[Any, Any]]]
    Record: TypeAlias = ConsumerRecord[Any, Any]

_monotonic = time.monotonic
"""Bound once: read at every segment boundary (``_next_segment``)."""
_HANDED_OUT: Iterator[Record] = iter(())


def _kafka(tp: TopicPartition) -> KafkaTopicPartition:
    return KafkaTopicPartition(tp.topic, tp.partition)


class _Held(msgspec.Struct):
    """One partition the application holds."""

    position: int | None
    """The next offset to hand to the application (committed offset, then after each returned record);
    None until known (no committed offset and nothing returned yet)."""
    fetching: bool = True
    buffer: collections.deque[ConsumerRecord[Any, Any]] = msgspec.field(default_factory=collections.deque)
    reset: str | None = None
    """``earliest``/``latest`` after seek_to_beginning/end made before the fetcher started: done then."""
    held_back: KafkaTopicPartition | None = None
    """Set while the fetcher is paused because ``buffer`` holds records of this partition (as aiokafka
    fetches a partition again only once its records were handed over): a seek then waits for one fetch
    from the new offset, not for a read ahead already waiting at the broker (fetch.max.wait.ms)."""


class ApplicationPartitions:
    """Implements the membership's PartitionOwner for one StaticConsumer."""

    def __init__(self, listener: object, on_change: Callable[[], None]) -> None:
        self.listener = listener
        self.fetcher: AIOKafkaConsumer | None = None
        self.snapshot = MemberSnapshot()
        self._held: dict[TopicPartition, _Held] = {}
        self._fetching: Partitions = frozenset()
        self._paused: set[TopicPartition] = set()
        self._on_change = on_change
        self.topics: frozenset[str] = frozenset()
        """The subscribed topics, kept in the fetcher's metadata (``partitions_for_topic``)."""
        self._draining: tuple[_Held, list[Record], Iterator[Record]] | None = None
        """The partition ``take_one`` hands records from, the records taken out of its buffer for that
        and their iterator (None: none). Its position is moved past the records handed out only when
        read or when the segment ends (``_fold``), not for every record: with the deque pop it
        replaces, a store per record was ~100 ns of a ~1.5 us record under ``async for`` (issue 26)."""
        self._iterator: Iterator[Record] = _HANDED_OUT
        """The draining segment's iterator (exhausted when there is none): ``take_one``'s one lookup."""
        self._buffered = False
        """False only while no partition's buffer holds a record (``take`` skips its look at each
        partition then): ``buffer`` sets it, a ``take`` that left none clears it. A segment (``take_one``)
        is taken out of records ``buffer`` put there, and ``take`` folds it back before it looks."""
        self.hand_over_until = -math.inf
        """Buffered records are handed over without the consumer's per-poll work (liveness, auto-commit)
        only before this monotonic instant: ``tick`` sets it after that work, ``end_tick`` clears it."""
        self.handing_over = False
        """Whether the tick is on: what the per-record path reads instead of the clock (a clock read was
        ~40 ns of a ~1.4 us record under ``async for``, issue 26). Cleared by a timer on the event loop
        at ``hand_over_until`` (a loop body that awaits lets it run), by the first segment boundary past
        it (a body that never awaits lets no timer run: then the work waits for the segment to end, at
        most one refill, ``max_poll_records`` + 1 records, Kafka's contract for ``max_poll_interval_ms``),
        and by ``end_tick``."""
        self._tick_timer: asyncio.TimerHandle | None = None
        self._tick_loop: asyncio.AbstractEventLoop | None = None
        self.assignments = 0
        """How many assignments (empty ones included) the membership has handed over: ``start()`` waits
        for the first, as aiokafka's does."""

    # -- what the consumer reads --------------------------------------------------------------------

    @property
    def fetching(self) -> Partitions:
        """The partitions owned and fetched right now."""
        return self._fetching

    def holds(self, tp: TopicPartition) -> bool:
        """Whether ``tp`` is this member's: fetched now, or stopped and waiting for its revoke callback
        (so seek, position and commit work inside ``on_partitions_revoked``, as in aiokafka)."""
        return tp in self._held

    def require(self, partitions: tuple[TopicPartition, ...], call: str) -> tuple[TopicPartition, ...]:
        """``partitions`` (every held one when empty), or IllegalStateError naming those not held."""
        if not partitions:
            return tuple(self._held)
        foreign = sorted(tp for tp in partitions if tp not in self._held)
        if foreign:
            owned = ", ".join(f"{tp.topic}[{tp.partition}]" for tp in sorted(self._held)) or "none"
            raise IllegalStateError(
                f"{call}: {', '.join(f'{tp.topic}[{tp.partition}]' for tp in foreign)} "
                f"{'is' if len(foreign) == 1 else 'are'} not assigned to this consumer (it owns: {owned}). "
                "Partitions come from the group: call it for owned partitions, e.g. in on_partitions_assigned"
            )
        return partitions

    async def position(self, tp: TopicPartition) -> int:
        """The offset of the next record the application will get from ``tp`` (held)."""
        self._fold()
        held = self._held[tp]
        if held.position is not None:
            return held.position
        if held.buffer:
            return int(held.buffer[0].offset)
        fetcher = self.fetcher
        if fetcher is None or not held.fetching:
            raise IllegalStateError(
                f"the position of {tp.topic}[{tp.partition}] is not known: nothing was read from it, the "
                "group has no committed offset for it, and it is no longer fetched"
            )
        # Nothing returned and nothing committed: where the reset policy puts the fetcher.
        return int(await fetcher.position(_kafka(tp)))

    def fetch_state(self, tp: TopicPartition) -> KafkaTopicPartition | None:
        """aiokafka's partition to ask for highwater/LSO/poll time, when the fetcher fetches ``tp``."""
        fetcher = self.fetcher
        ktp = _kafka(tp)
        if fetcher is None or ktp not in fetcher.assignment():
            return None
        return ktp

    def paused(self) -> frozenset[TopicPartition]:
        return frozenset(self._paused)

    def positions(self) -> dict[TopicPartition, OffsetAndMetadata]:
        """Positions after the records returned to the application: owned partitions, plus those being
        revoked right now (fetching stops before the revoke callback, but their progress must still be
        committed by it or inside it)."""
        self._fold()
        return {tp: OffsetAndMetadata(h.position) for tp, h in self._held.items() if h.position is not None}

    def holding(self, partitions: Partitions) -> dict[TopicPartition, object]:
        """A token per partition held now. Records a fetch started under a token are delivered only if
        the partition is still held under the same one (``still_held``): kept through a cooperative
        rebalance, yes; revoked, lost or given back anew (positions reset), no."""
        return {tp: self._held[tp] for tp in partitions if tp in self._held}

    def still_held(self, partition: TopicPartition, token: object) -> bool:
        held = self._held.get(partition)
        return held is not None and held is token and held.fetching

    def still_fetching(self, fetched: Mapping[Any, list[Record]]) -> Records:
        """The non-empty batches of ``fetched`` (keyed by aiokafka's partitions) of partitions fetched
        now, keyed by ours: records of a partition no longer fetched are dropped (read again by its
        next owner from the committed offset)."""
        result: Records = {}
        held = self._held
        for tp, batch in fetched.items():
            ours = TopicPartition(tp.topic, tp.partition)
            found = held.get(ours)
            if batch and found is not None and found.fetching:
                result[ours] = batch
        return result

    def consumed_position(self, partition: TopicPartition) -> int | None:
        """The consumed position of one partition (None: unknown or not held). Safe to call from
        another thread (the lag gauge's exporter): it reads, never moves, the draining segment."""
        held = self._held.get(partition)
        if held is None:
            return None
        draining = self._draining  # one read: the segment, its records and its iterator agree
        if draining is not None and draining[0] is held:
            handed = len(draining[1]) - operator.length_hint(draining[2])
            if handed > 0:
                return int(draining[1][handed - 1].offset) + 1
        return held.position

    # -- buffered records ---------------------------------------------------------------------------

    def take(self, wanted: Partitions, max_records: int | None) -> Records:
        """Buffered records of fetched partitions not paused (up to ``max_records``), oldest first per
        partition."""
        self._fold()
        if not self._buffered:  # a getmany user buffers nothing: no look at every partition a poll
            return {}
        result: Records = {}
        budget = max_records if max_records is not None else sys.maxsize
        left = False
        for tp, held in self._held.items():
            if not held.buffer:
                continue
            if budget <= 0:
                left = True
                break
            if (wanted and tp not in wanted) or tp in self._paused:
                left = True
                continue
            queue = held.buffer
            if len(queue) <= budget:
                rows = list(queue)
                queue.clear()
            else:
                rows = [queue.popleft() for _ in range(budget)]
                left = True
            if not queue and held.held_back is not None:
                self._release(held)
            result[tp] = rows
            budget -= len(rows)
        self._buffered = left
        return result

    # -- the tick: buffered records handed over without the per-poll work ---------------------------

    def tick(self, now: float, seconds: float) -> None:
        """The consumer did its per-poll work at ``now``: hand buffered records over without it for
        ``seconds`` (a segment being handed out goes on: its timer ends this tick too)."""
        self.hand_over_until = now + seconds
        self.handing_over = True
        if self._draining is not None:
            self._arm_tick_timer()

    def _arm_tick_timer(self) -> None:
        """A segment is handed out: one timer on the running loop ends the tick meanwhile
        (re-armed when a later tick extends it, not made anew for every poll; none for a ``getmany``
        user, who hands out no segment: no wake-up of an idle loop)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop, no timer: the segment boundaries end the tick
            return
        if self._tick_timer is None or self._tick_loop is not loop:
            if self._tick_timer is not None:
                self._tick_timer.cancel()
            self._tick_loop = loop
            self._tick_timer = loop.call_later(max(0.0, self.hand_over_until - _monotonic()), self._tick_over)

    def _tick_over(self) -> None:
        self._tick_timer = None
        left = self.hand_over_until - _monotonic()
        if left <= 0:
            self.handing_over = False
        elif self._draining is not None and self._tick_loop is not None:  # extended since it was armed
            self._tick_timer = self._tick_loop.call_later(left, self._tick_over)
        # else extended but no segment is handed out: the next one arms a timer, or reads the clock

    def end_tick(self) -> None:
        """No record is handed over without the per-poll work any more (the consumer stops)."""
        self.hand_over_until = -math.inf
        self.handing_over = False
        timer, self._tick_timer = self._tick_timer, None
        if timer is not None:
            timer.cancel()

    def take_one(self) -> Record | None:
        """The next buffered record of any partition not paused; None when nothing is buffered or the
        tick is over. The per-record path of ``getone`` (``RecordIteration`` inlines it): one
        partition's buffer is taken out whole and handed over from a list iterator (the order ``take``
        uses), its position settled once for the segment (``_fold``): a flag and one ``next`` a record,
        no batch built for a single record."""
        if not self.handing_over:
            return None
        record = next(self._iterator, None)
        if record is None:
            return self._next_segment()
        return record

    def _next_segment(self) -> Record | None:
        """The draining segment is handed over: settle it, and start on the next partition with records
        buffered (the fetcher reads the finished one again, see ``_fold``); None (and the tick ends)
        once the tick's time is up, which a loop body that never awaits only notices here."""
        if _monotonic() >= self.hand_over_until:
            self.handing_over = False
            return None
        self._fold()
        paused = self._paused
        for tp, held in self._held.items():
            if held.buffer and held.fetching and tp not in paused:
                self._arm_tick_timer()
                rows = list(held.buffer)
                held.buffer.clear()
                iterator = iter(rows)
                self._draining = (held, rows, iterator)
                self._iterator = iterator
                return next(iterator)
        return None

    def _fold(self) -> None:
        """End the draining segment: its partition's position moves past the records handed out, the
        rest go back to the front of its buffer, and a buffer now empty lets the fetcher read it again.
        Everything but ``take_one`` sees buffers and positions as if each record had been popped."""
        draining = self._draining
        if draining is None:
            return
        held, rows, iterator = draining
        self._draining = None
        self._iterator = _HANDED_OUT
        left = operator.length_hint(iterator)
        handed = len(rows) - left
        if handed:
            held.position = int(rows[handed - 1].offset) + 1
        if left:
            held.buffer.extendleft(reversed(rows[handed:]))
        elif not held.buffer and held.held_back is not None:
            self._release(held)

    def buffer(self, records: Records) -> None:
        """Keep ``records`` for getone/async for; the fetcher reads none of their partitions ahead until
        they were handed over (call it right after the fetcher handed them over, before any await)."""
        fetcher = self.fetcher
        for tp, rows in records.items():
            held = self._held.get(tp)
            if held is not None and held.fetching and rows:
                held.buffer.extend(rows)
                self._buffered = True
                if held.held_back is None and fetcher is not None:
                    ktp = _kafka(tp)
                    with contextlib.suppress(Exception):  # not the fetcher's (any more): nothing to hold
                        fetcher.pause(ktp)
                        held.held_back = ktp

    def _release(self, held: _Held) -> None:
        """The buffer of a held-back partition emptied: the fetcher reads it again (unless paused)."""
        ktp, held.held_back = held.held_back, None
        fetcher = self.fetcher
        if ktp is None or fetcher is None or not held.fetching:
            return
        if TopicPartition(ktp.topic, ktp.partition) in self._paused:
            return
        with contextlib.suppress(Exception):
            fetcher.resume(ktp)

    def returned(self, result: Mapping[TopicPartition, list[ConsumerRecord[Any, Any]]]) -> None:
        """Records handed to the application move the positions that commits will use."""
        for tp, rows in result.items():
            held = self._held.get(tp)
            if held is not None:
                held.position = rows[-1].offset + 1
                held.reset = None

    def drop_buffered(self, partitions: tuple[TopicPartition, ...]) -> None:
        """Forget buffered records (after a seek): they are fetched again from the new position."""
        self._fold()
        for tp in partitions or tuple(self._held):
            held = self._held.get(TopicPartition(tp.topic, tp.partition))
            if held is not None:
                held.buffer.clear()
                self._release(held)

    def sought(self, partition: TopicPartition, offset: int) -> None:
        self._fold()
        held = self._held.get(partition)
        if held is not None:
            held.buffer.clear()
            held.position = offset
            held.reset = None
            self._release(held)

    def reset(self, partitions: tuple[TopicPartition, ...], where: str) -> None:
        """seek_to_beginning/end (``where``: earliest/latest): the position is the fetcher's until a
        record is returned again."""
        self._fold()
        for tp in partitions:
            held = self._held.get(tp)
            if held is not None:
                held.buffer.clear()
                held.position = None
                held.reset = where if self.fetcher is None else None
                self._release(held)

    # -- pause -------------------------------------------------------------------------------------

    def pause(self, partitions: tuple[TopicPartition, ...]) -> None:
        """Records of these partitions, buffered ones included, are not handed over until ``resume``."""
        self._fold()
        self._paused.update(TopicPartition(p.topic, p.partition) for p in partitions)

    def resume(self, partitions: tuple[TopicPartition, ...]) -> None:
        self._paused.difference_update(TopicPartition(p.topic, p.partition) for p in partitions)

    # -- PartitionOwner -----------------------------------------------------------------------------

    def stop_fetching(self, partitions: Partitions | None) -> None:
        self._fold()  # the records handed out of the segment count: revoke commits past them
        stopping = (
            tuple(self._held) if partitions is None else tuple(p for p in partitions if p in self._held)
        )
        for tp in stopping:
            held = self._held[tp]
            held.fetching = False
            held.buffer.clear()
            held.held_back = None  # paused below, or no longer the fetcher's
        self._fetching = frozenset(tp for tp, h in self._held.items() if h.fetching)
        if self.fetcher is not None:
            with contextlib.suppress(Exception):
                if partitions is None or not self._fetching:
                    _aiokafka.fetch_partitions(self.fetcher, [], self.topics)
                else:  # the rest keep fetching untouched; reassigned when the revoke is done
                    self.fetcher.pause(*(_kafka(tp) for tp in stopping))
        self._on_change()

    async def revoke(
        self, partitions: Partitions, reason: ReleaseReason, collect_positions: bool
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        await call_listener(self.listener, ListenerCall.REVOKED, partitions)
        positions = self.positions()
        collected = {tp: positions[tp] for tp in partitions if tp in positions} if collect_positions else {}
        await self._forget(partitions)
        return collected

    async def lose(self, partitions: Partitions, reason: ReleaseReason) -> None:
        await self._forget(partitions)  # another member may own them already: never commit these
        await call_listener(self.listener, ListenerCall.LOST, partitions)

    async def assign(
        self,
        partitions: Partitions,
        owned: Partitions,
        generation: int,
        committed: Mapping[TopicPartition, int],
    ) -> None:
        self._fold()
        for tp in partitions:
            offset = committed.get(tp, -1)
            self._held[tp] = _Held(position=offset if offset >= 0 else None)
        await self._refetch(
            {tp: offset for tp, offset in committed.items() if tp in partitions and offset >= 0}
        )
        self._on_change()
        await call_listener(self.listener, ListenerCall.ASSIGNED, partitions)
        self.assignments += 1  # after the callback: its seeks are in place when start() returns
        self._on_change()

    def membership_changed(self, snapshot: MemberSnapshot) -> None:
        self.snapshot = snapshot
        if snapshot.fatal_error is not None:
            self.stop_fetching(None)
            self._held.clear()  # a finished member commits nothing more
        self._on_change()

    # -- the fetcher --------------------------------------------------------------------------------

    async def attach(self, fetcher: AIOKafkaConsumer) -> None:
        """The fetcher has started: fetch what was assigned meanwhile, from the positions known."""
        self.fetcher = fetcher
        await self._refetch(
            {tp: h.position for tp, h in self._held.items() if h.fetching and h.position is not None}
        )
        for where, seek in (("earliest", fetcher.seek_to_beginning), ("latest", fetcher.seek_to_end)):
            pending = [_kafka(tp) for tp, h in self._held.items() if h.fetching and h.reset == where]
            if pending:
                await seek(*pending)
        for held in self._held.values():
            held.reset = None

    async def _forget(self, partitions: Partitions) -> None:
        self._fold()
        for tp in partitions:
            self._held.pop(tp, None)
        self._paused.difference_update(partitions)
        await self._refetch({})

    async def _refetch(self, seeks: Mapping[TopicPartition, int]) -> None:
        """Point the fetcher at the partitions being fetched; those it already fetched keep their place."""
        self._fetching = frozenset(tp for tp, h in self._held.items() if h.fetching)
        fetcher = self.fetcher
        if fetcher is None:
            return
        current = {TopicPartition(tp.topic, tp.partition) for tp in fetcher.assignment()}
        if current == set(self._fetching) and not seeks:
            return
        kept = (current & self._fetching) - set(seeks)
        for tp in kept:  # may wait for a position being reset (offset reset policy)
            await fetcher.position(_kafka(tp))
        # Every position is valid now, so this pass never suspends: no fetch can move a kept partition
        # between reading its place and re-assigning the fetcher (which forgets it).
        places = {tp: await fetcher.position(_kafka(tp)) for tp in kept}
        _aiokafka.fetch_partitions(fetcher, [_kafka(tp) for tp in self._fetching], self.topics)
        for tp, offset in {**places, **seeks}.items():
            fetcher.seek(_kafka(tp), offset)
        self._fold()  # a segment taken out while this waited is buffered records too
        for tp, held in self._held.items():  # the fetcher starts unpaused: still holding records back?
            held.held_back = _kafka(tp) if held.fetching and held.buffer else None
        paused = (self._paused | {tp for tp, h in self._held.items() if h.held_back}) & self._fetching
        if paused:
            fetcher.pause(*(_kafka(tp) for tp in paused))


if TYPE_CHECKING:  # a Protocol only type checkers read: no class to build at import (issue 26)

    class LoopTracer(Protocol):
        """What a ``RecordIteration`` tells about records: ``RecordTracer`` or ``DeferredRecordTracer``."""

        per_record: bool

        def delivered(self, record: Any) -> None: ...

        def loop_left(self) -> None: ...


class RecordIteration:
    """The iterator of one ``async for`` over a consumer.

    Its ``__anext__`` is ``take_one`` inlined (one coroutine, no call and no clock read a record: ~30
    and ~40 ns of a ~1.4 us record, issue 26); anything else (nothing buffered, the tick over, a stop)
    goes to the consumer's ``__anext__``. The loop object exists also so that leaving the loop is
    noticed: the ``async for`` statement holds the only reference, so when the loop is left by
    ``break``, ``return`` or an exception, CPython drops it at once and ``__del__`` tells the tracer.
    (Other interpreters drop it at their next collection; ``requested()`` and ``close()`` end the
    span in any case.)
    """

    __slots__ = ("_partitions", "_slow", "_tracer")

    def __init__(
        self,
        partitions: ApplicationPartitions,
        slow: Callable[[], Awaitable[Record]],
        tracer: LoopTracer | None,
    ) -> None:
        self._partitions = partitions
        self._slow = slow
        self._tracer = tracer

    def __aiter__(self) -> RecordIteration:
        return self

    async def __anext__(self) -> Record:
        partitions = self._partitions
        if partitions.handing_over:
            record = next(partitions._iterator, None)
            if record is None:
                record = partitions._next_segment()
            if record is not None:
                tracer = self._tracer
                if tracer is not None and tracer.per_record:
                    tracer.delivered(record)
                return record
        return await self._slow()

    def __del__(self) -> None:
        tracer = self._tracer
        if tracer is not None:
            with contextlib.suppress(Exception):
                tracer.loop_left()

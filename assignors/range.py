"""``range``: Java's RangeAssignor, including KIP-881 rack awareness and co-partitioned topics.

Per topic, subscribers in member order take contiguous ranges: floor(P/C) each, the first P mod C
one more. With racks, partitions whose replicas share a rack with a consumer go to it first, within the
same per-topic quotas, and topics with the same subscribers and partition count stay co-partitioned.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from itertools import repeat

from ._builtin import RangeAssignor as RangeAssignor
from .model import (
    GroupAssignment,
    Member,
    MemberAssignment,
    TopicInfo,
    TopicPartition,
    java_key,
    live_topics,
    sort_assignment,
    sorted_members,
    subscribers_by_topic,
    use_rack_aware,
)


class _TopicState:
    """One topic's quotas and unassigned partitions while assigning (Java's TopicAssignmentState)."""

    __slots__ = (
        "assigned",
        "base",
        "consumers",
        "extra",
        "n",
        "needs_rack_aware",
        "racks",
        "taken",
        "topic",
    )

    def __init__(self, topic: str, n: int, info: TopicInfo, consumers: list[int], rack_of: list[str | None]):
        self.topic = topic
        self.n = n
        self.consumers = consumers  # member indexes, in member order
        c = len(consumers)
        self.base = n // c if c else 0
        self.extra = n % c if c else 0
        self.assigned: dict[int, int] = dict.fromkeys(consumers, 0)
        self.taken = bytearray(n)
        consumer_racks = {r for i in consumers if (r := rack_of[i]) is not None}
        if consumer_racks:
            self.racks = [info.racks_of(p) for p in range(n)]
            all_racks: set[str] = set().union(*self.racks)
            self.needs_rack_aware = use_rack_aware(consumer_racks, all_racks, self.racks)
        else:
            self.racks = []
            self.needs_rack_aware = False

    def max_assignable(self, i: int) -> int:
        return max(0, self.base + (1 if self.extra > 0 else 0) - self.assigned[i])

    def on_assigned(self, i: int, count: int) -> None:
        self.assigned[i] += count
        if self.assigned[i] > self.base:
            self.extra -= 1


def assign_range(members: Sequence[Member], topics: Mapping[str, TopicInfo]) -> GroupAssignment:
    """``RangeAssignor.assign``: loaded by the leader's first assignment, not by building a consumer."""
    ordered = sorted_members(members)
    ids = [m.member_id for m in ordered]
    rack_of = [m.effective_rack for m in ordered]
    out: list[list[TopicPartition]] = [[] for _ in ordered]
    counts = live_topics(ordered, topics)

    subscribers = subscribers_by_topic(ordered, counts)

    # Topics in Java string order, so the fast path's lists come out sorted without a sort.
    order = sorted(counts, key=java_key)
    states: list[_TopicState] = []
    if any(rack_of):
        states = [_TopicState(t, counts[t], topics[t], subscribers[t], rack_of) for t in order]
    if not any(s.needs_rack_aware for s in states):
        # Fast path: pure arithmetic ranges, one slice per member and topic.
        for t in order:
            n = counts[t]
            consumers = subscribers[t]
            base, extra = divmod(n, len(consumers))
            tps = list(zip(repeat(t, n), range(n), strict=True))
            start = 0
            for k, i in enumerate(consumers):
                size = base + 1 if k < extra else base
                if not size:
                    break
                out[i] += tps[start : start + size]
                start += size
        return {ids[i]: MemberAssignment(parts) for i, parts in enumerate(out)}

    _rack_matching(states, rack_of, out)
    for s in states:
        _fill_ranges(s, out)
    return {ids[i]: MemberAssignment(sort_assignment(parts)) for i, parts in enumerate(out)}


def _rack_matching(
    states: list[_TopicState], rack_of: list[str | None], out: list[list[TopicPartition]]
) -> None:
    """Java's assignWithRackMatching: co-partitioned groups together, other topics one by one."""
    groups: dict[tuple[tuple[int, ...], int], list[_TopicState]] = defaultdict(list)
    for s in states:
        # Java keys on the subscriber set, then on the size of the partition-rack map (which is
        # empty when none of the subscribers has a rack).
        groups[(tuple(s.consumers), len(s.racks))].append(s)
    for (consumers, n), group in groups.items():
        if len(group) > 1:
            _co_partitioned(list(consumers), n, group, rack_of, out)
        elif group[0].needs_rack_aware:
            _ranges_with_racks(group[0], rack_of, out)


def _assign(s: _TopicState, i: int, parts: list[int], out: list[list[TopicPartition]]) -> None:
    for p in parts:
        s.taken[p] = 1
    out[i].extend((s.topic, p) for p in parts)
    s.on_assigned(i, len(parts))


def _ranges_with_racks(s: _TopicState, rack_of: list[str | None], out: list[list[TopicPartition]]) -> None:
    """Each consumer in order takes its first ``max_assignable`` unassigned rack-matching partitions.

    Per-rack cursors over partition lists keep this linear instead of Java's consumers x partitions scan.
    """
    by_rack: dict[str, list[int]] = defaultdict(list)
    for p, racks in enumerate(s.racks):
        for r in racks:
            by_rack[r].append(p)
    cursor: dict[str | None, int] = defaultdict(int)
    remaining = s.n
    for i in s.consumers:
        if remaining == 0:
            break
        limit = s.max_assignable(i)
        if limit == 0:
            continue
        rack = rack_of[i]
        candidates = range(s.n) if rack is None else by_rack.get(rack, [])
        pos = cursor[rack]
        picked: list[int] = []
        while pos < len(candidates) and len(picked) < limit:
            p = candidates[pos]
            pos += 1
            if not s.taken[p]:
                picked.append(p)
        # Every partition before ``pos`` in this list is now taken, so the cursor never goes back.
        cursor[rack] = pos
        if picked:
            _assign(s, i, picked, out)
            remaining -= len(picked)


def _co_partitioned(
    consumers: list[int],
    n: int,
    group: list[_TopicState],
    rack_of: list[str | None],
    out: list[list[TopicPartition]],
) -> None:
    """Java's assignCoPartitionedWithRackMatching: partition p of every topic goes to one consumer.

    The states of a group evolve in lockstep (same consumers, same counts), so one state's quota
    answers for all; per-rack queues find the first eligible consumer without scanning them all.
    """
    lead = group[0]
    queues: dict[str | None, list[int]] = defaultdict(list)
    for i in consumers:
        queues[rack_of[i]].append(i)
    heads: dict[str | None, int] = dict.fromkeys(queues, 0)

    def head(rack: str | None) -> int | None:
        q = queues.get(rack)
        if q is None:
            return None
        h = heads[rack]
        while h < len(q) and lead.max_assignable(q[h]) <= 0:
            h += 1
        heads[rack] = h
        return q[h] if h < len(q) else None

    order = {i: k for k, i in enumerate(consumers)}
    for p in range(n):
        common = frozenset.intersection(*(s.racks[p] for s in group))
        best: int | None = head(None)
        for r in common:
            c = head(r)
            if c is not None and (best is None or order[c] < order[best]):
                best = c
        if best is None:
            continue
        for s in group:
            _assign(s, best, [p], out)


def _fill_ranges(s: _TopicState, out: list[list[TopicPartition]]) -> None:
    """Java's plain assignRanges over whatever the rack pass left unassigned."""
    free = [p for p in range(s.n) if not s.taken[p]]
    pos = 0
    for i in s.consumers:
        if pos >= len(free):
            break
        limit = s.max_assignable(i)
        if limit:
            _assign(s, i, free[pos : pos + limit], out)
            pos += limit

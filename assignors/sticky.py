"""``sticky`` and ``cooperative-sticky``: balanced, sticky, rack-aware, and ordered by instance id.

Wire-compatible with Java's StickyAssignor / CooperativeStickyAssignor (same names, same userData,
same reading of owned partitions and generations), but every tie is broken in member order (static
members by instance id first), so a static member that restarts with a new member id gets the same
partitions back. Java breaks ties on member ids, so results agree with Java on balance and on which
owned partitions stay put, not partition for partition.

Outline (Java's ConstrainedAssignmentBuilder / GeneralAssignmentBuilder, re-derived):

1. Each member's claimed partitions come from its userData (``sticky``) or its subscription's owned
   partitions and generation (``cooperative-sticky``). A partition claimed by several members goes to
   the highest generation; a tie in the highest generation voids every claim to it.
2. Equal subscriptions: quotas floor(P/C) / ceil(P/C); each member keeps its claims up to its quota,
   the first P mod C members (member order) with enough claims keep one more; the rest is dealt
   round-robin to members below quota, rack-matching partitions first when racks are in play.
3. Unequal subscriptions: members keep all their claims, unassigned partitions of the most
   constrained topics go first to the least-loaded subscriber, then partitions move one at a time
   from a subscriber with k+2 or more partitions to one with k until no such move exists (Java's
   ``isBalanced`` criterion). Every move lowers the sum of squared counts, so this terminates.
4. ``cooperative-sticky`` then withholds partitions that another member still owns (two-phase move).

Partitions are handled as integer ids (topics in Java order, then partition) and counts are kept in
flat lists, so the equal-subscription path is linear in partitions plus members.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from collections import defaultdict, deque
from collections.abc import Mapping, Sequence
from itertools import filterfalse, product
from typing import TypeVar

from ._builtin import CooperativeStickyAssignor as CooperativeStickyAssignor
from ._builtin import StickyAssignor as StickyAssignor
from ._builtin import _StickyBase
from .model import (
    NO_GENERATION,
    GroupAssignment,
    Member,
    MemberAssignment,
    TopicInfo,
    TopicPartition,
    java_key,
    partition_counts,
    sorted_members,
    use_rack_aware,
)

_T = TypeVar("_T")


class _Layout:
    """Partition ids: topics in Java string order, each topic's partitions contiguous."""

    def __init__(self, counts: dict[str, int]):
        self.topics = sorted(counts, key=java_key)
        self.counts = counts
        self.offset: dict[str, int] = {}
        self.starts: list[int] = []
        total = 0
        for t in self.topics:
            self.offset[t] = total
            self.starts.append(total)
            total += counts[t]
        self.total = total

    def topic_index(self, pid: int) -> int:
        return bisect_right(self.starts, pid) - 1

    def spread_key(self, pid: int) -> tuple[int, int]:
        """Partition number first, then topic: Java's order for choosing which owned partitions stay."""
        k = self.topic_index(pid)
        return (pid - self.starts[k], k)

    def partitions(self) -> list[TopicPartition]:
        """Every partition as a ``(topic, partition)`` tuple, in id order.

        The one place a million-partition assignment pays per partition: built in C by
        ``itertools.product`` over runs of topics with equal counts, so the partition numbers are
        created once per run rather than once per topic.
        """
        out: list[TopicPartition] = []
        run: list[str] = []
        count = -1
        for t in self.topics:
            if self.counts[t] != count and run:
                out += product(run, range(count))
                run = []
            count = self.counts[t]
            run.append(t)
        if run:
            out += product(run, range(count))
        return out


class _Racks:
    """KIP-881 state for one assignment: whether racks are used, and who matches what."""

    def __init__(self, ordered: list[Member], layout: _Layout, topics: Mapping[str, TopicInfo]):
        rack_of = [m.effective_rack for m in ordered]
        consumer_racks = {r for r in rack_of if r is not None}
        self.enabled = False
        self.rack_of: list[str | None] = [None] * len(ordered)
        self.pid_racks: list[frozenset[str]] = []
        self.consumers_in_rack: dict[str, int] = {}
        if not consumer_racks:
            return
        pid_racks: list[frozenset[str]] = []
        empty: frozenset[str] = frozenset()
        for t in layout.topics:
            info = topics[t]
            if info.replica_racks:
                pid_racks.extend(info.replica_racks)
            else:
                pid_racks.extend([empty] * info.partitions)
        all_racks: set[str] = set()
        for r in set(pid_racks):
            all_racks |= r
        if not use_rack_aware(consumer_racks, all_racks, pid_racks):
            return
        self.enabled = True
        self.rack_of = rack_of
        self.pid_racks = pid_racks
        per_rack: dict[str, int] = defaultdict(int)
        for rack in rack_of:
            if rack is not None:
                per_rack[rack] += 1
        self.consumers_in_rack = dict(per_rack)

    def mismatch(self, member: int, pid: int) -> bool:
        rack = self.rack_of[member]
        return rack is not None and rack not in self.pid_racks[pid]

    def should_move(self, member: int, pid: int) -> bool:
        """An owned partition is given up for locality only if some member sits on a replica's rack.

        Otherwise no placement can do better, and keeping it avoids moving it on every rebalance.
        """
        return self.mismatch(member, pid) and self.candidates(pid) > 0

    def matches(self, member: int, pid: int) -> bool:
        rack = self.rack_of[member]
        return rack is not None and rack in self.pid_racks[pid]

    def candidates(self, pid: int) -> int:
        """How many consumers share a rack with ``pid``; scarce partitions are placed first."""
        return sum(self.consumers_in_rack.get(r, 0) for r in self.pid_racks[pid])


class _Claims:
    """Resolved previous ownership: who keeps a claim to each partition, and who claimed at all."""

    def __init__(self, per_member: list[list[int]], generations: list[int | None], unsubscribed: list[int]):
        """``per_member[i]``: member ``i``'s valid claims to topics it subscribes to, as partition ids;
        ``unsubscribed``: claims to live topics their claimants no longer subscribe to, which count
        in ``claimed`` only (cooperative: the claimant still owns them until it revokes them)."""
        self.claimed: set[int] = set()
        claimed_count = 0
        for pids in per_member:
            self.claimed.update(pids)
            claimed_count += len(pids)
        contested = len(self.claimed) != claimed_count
        self.claimed.update(unsubscribed)
        self.any_claims = bool(self.claimed)
        if not contested:
            # Common case: no partition claimed twice, nothing to resolve.
            self.owned = per_member
            return
        gens = [NO_GENERATION if g is None else g for g in generations]
        winner: dict[int, int] = {}  # pid -> member, or -1 when the top generation is contested
        best: dict[int, int] = {}
        for i, pids in enumerate(per_member):
            g = gens[i]
            for pid in pids:
                cur = winner.get(pid)
                if cur is None:
                    winner[pid] = i
                    best[pid] = g
                elif cur == i:
                    continue
                elif g > best[pid]:
                    winner[pid] = i
                    best[pid] = g
                elif g == best[pid]:
                    winner[pid] = -1
        self.owned = [sorted({pid for pid in pids if winner[pid] == i}) for i, pids in enumerate(per_member)]


def _deal(parts: Sequence[_T], needs: list[tuple[int, int]], out: list[list[_T]]) -> None:
    """Deal ``parts`` round-robin to members (in the given order) until each has received its need.

    Done in phases with a constant set of takers, one slice per taker per phase, rather than one
    Python step per partition.
    """
    active = [(i, n) for i, n in needs if n > 0]
    pos = 0
    done = 0
    while active:
        rounds = min(n for _, n in active) - done
        width = len(active)
        end = pos + width * rounds
        for k, (i, _) in enumerate(active):
            out[i] += parts[pos + k : end : width]
        pos = end
        done += rounds
        active = [(i, n) for i, n in active if n > done]
    if pos != len(parts):
        raise AssertionError("sticky assignor dealt a different number of partitions than it had")


def _fresh(size: int, layout: _Layout) -> list[list[TopicPartition]]:
    """Equal subscriptions, nothing owned, no racks: what ``_constrained`` deals, on the partitions
    themselves. Member ``k`` gets partitions k, k+size, ... and the first P mod size members one more
    (from the last round), already in order: one slice per member, no id list, sort or lookup."""
    partitions = layout.partitions()
    min_q, extra = divmod(layout.total, size)
    full = size * min_q
    out = [partitions[k:full:size] for k in range(size)]
    for k in range(extra):
        out[k].append(partitions[full + k])
    return out


def _constrained(
    size: int, layout: _Layout, claims: _Claims, racks: _Racks
) -> tuple[list[list[int]], list[int]]:
    """All members subscribe to the same topics: quota-based keep, then fill.

    Returns each member's partitions (kept ones first) and how many of them it kept.
    """
    total = layout.total
    min_q, extra = divmod(total, size)
    max_q = min_q + (1 if extra else 0)
    out: list[list[int]] = []
    over = 0
    kept: list[int] = []
    dropped_by: dict[int, int] = {}  # partitions given up for rack locality -> their owner
    for i in range(size):
        own = sorted(claims.owned[i])
        if racks.enabled:
            for pid in own:
                if racks.should_move(i, pid):
                    dropped_by[pid] = i
            if dropped_by:
                own = [pid for pid in own if pid not in dropped_by]
        if len(own) >= max_q and over < extra:
            quota = max_q
            over += 1
        else:
            quota = min_q
        # Over quota: keep the lowest partition numbers across topics, as Java does, so each
        # member keeps a share of every topic rather than whole topics.
        keep = sorted(own, key=layout.spread_key)[:quota] if len(own) > quota else own
        out.append(list(keep))
        kept.extend(keep)
    kept_len = [len(parts) for parts in out]

    if kept:
        # Every kept partition is a claim: when as many were kept as claimed, they are the claims.
        taken = claims.claimed if len(kept) == len(claims.claimed) else set(kept)
        free = list(filterfalse(taken.__contains__, range(total)))
    else:
        free = list(range(total))

    if racks.enabled and free:
        free.sort(key=racks.candidates)
        free, over = _rack_fill(free, out, min_q, extra, over, racks)

    remaining_over = extra - over
    need = [0] * size
    for i in range(size):
        have = len(out[i])
        need[i] = max(0, min_q - have)
        if remaining_over > 0 and have <= min_q:
            need[i] += 1
            remaining_over -= 1
    if dropped_by:
        # No rack-matching member could take it: back to its owner if the owner has room.
        rest = []
        for pid in free:
            i = dropped_by.get(pid, -1)
            if i >= 0 and need[i] > 0:
                out[i].append(pid)
                need[i] -= 1
            else:
                rest.append(pid)
        free = rest
    _deal(free, list(enumerate(need)), out)
    return out, kept_len


def _rack_fill(
    free: list[int], out: list[list[int]], min_q: int, extra: int, over: int, racks: _Racks
) -> tuple[list[int], int]:
    """Place partitions on members of a replica's rack while quotas allow; return the rest."""
    under: dict[str, deque[int]] = defaultdict(deque)
    at_min: dict[str, deque[int]] = defaultdict(deque)
    for i, parts in enumerate(out):
        rack = racks.rack_of[i]
        if rack is None:
            continue
        if len(parts) < min_q:
            under[rack].append(i)
        elif len(parts) == min_q and over < extra:
            at_min[rack].append(i)
    left: list[int] = []
    for pid in free:
        chosen: int | None = None
        chosen_rack = ""
        for r in racks.pid_racks[pid]:
            q = under.get(r)
            if q:
                i = q[0]
                if chosen is None or (len(out[i]), i) < (len(out[chosen]), chosen):
                    chosen, chosen_rack = i, r
        if chosen is not None:
            q = under[chosen_rack]
            q.popleft()
            out[chosen].append(pid)
            if len(out[chosen]) < min_q:
                q.append(chosen)
            elif over < extra:
                at_min[chosen_rack].append(chosen)
            continue
        if over < extra:
            for r in racks.pid_racks[pid]:
                q = at_min.get(r)
                if q and (chosen is None or q[0] < chosen):
                    chosen, chosen_rack = q[0], r
            if chosen is not None:
                at_min[chosen_rack].popleft()
                out[chosen].append(pid)
                over += 1
                if over == extra:
                    at_min.clear()
                continue
        left.append(pid)
    return left, over


def _valid_top(heap: list[tuple[int, int]], ok: dict[int, int] | list[int], sign: int) -> int | None:
    """Drop stale (count, member) entries; return the member on top or None."""
    while heap:
        key, i = heap[0]
        if sign * key == ok[i]:
            return i
        heapq.heappop(heap)
    return None


def _general(
    ordered: list[Member], subs: list[frozenset[str]], layout: _Layout, claims: _Claims, racks: _Racks
) -> list[list[int]]:
    """Unequal subscriptions: keep claims, place the rest on the least loaded, then even out."""
    size = len(ordered)
    count = [0] * size
    hold: list[dict[int, list[int]]] = [defaultdict(list) for _ in range(size)]
    owner = [-1] * layout.total

    subscribers: list[list[int]] = [[] for _ in layout.topics]
    tindex = {t: k for k, t in enumerate(layout.topics)}
    for i, sub in enumerate(subs):
        for t in sub:
            subscribers[tindex[t]].append(i)
    for s in subscribers:
        s.sort()
    # Racks of each topic's subscribers: an owned partition is given up for locality only when
    # one of them sits on a replica's rack.
    topic_racks = [{r for i in s if (r := racks.rack_of[i]) is not None} for s in subscribers]

    dropped_by: dict[int, int] = {}
    for i in range(size):
        for pid in claims.owned[i]:
            k = layout.topic_index(pid)
            if (
                racks.enabled
                and racks.mismatch(i, pid)
                and not topic_racks[k].isdisjoint(racks.pid_racks[pid])
            ):
                dropped_by[pid] = i
                continue
            hold[i][k].append(pid)
            count[i] += 1
            owner[pid] = i

    topic_order = sorted(
        (k for k in range(len(layout.topics)) if subscribers[k]),
        key=lambda k: (len(subscribers[k]), java_key(layout.topics[k])),
    )

    for k in topic_order:
        _place_topic(k, subscribers[k], layout, owner, count, hold, racks, dropped_by)

    moved = True
    while moved:
        moved = False
        for k in topic_order:
            if len(subscribers[k]) > 1 and _even_out_topic(k, subscribers[k], count, hold, racks):
                moved = True

    out: list[list[int]] = [[] for _ in range(size)]
    for i in range(size):
        for pids in hold[i].values():
            out[i].extend(pids)
    return out


def _place_topic(
    k: int,
    subs: list[int],
    layout: _Layout,
    owner: list[int],
    count: list[int],
    hold: list[dict[int, list[int]]],
    racks: _Racks,
    dropped_by: dict[int, int],
) -> None:
    """Give each unowned partition of topic ``k`` to a least-loaded subscriber.

    Among equally loaded subscribers a rack match wins, then the partition's previous owner.
    """
    start = layout.starts[k]
    free = [pid for pid in range(start, start + layout.counts[layout.topics[k]]) if owner[pid] < 0]
    if not free:
        return
    heap = [(count[i], i) for i in subs]
    heapq.heapify(heap)
    by_rack: dict[str, list[tuple[int, int]]] = {}
    if racks.enabled:
        free.sort(key=racks.candidates)
        for i in subs:
            rack = racks.rack_of[i]
            if rack is not None:
                by_rack.setdefault(rack, []).append((count[i], i))
        for h in by_rack.values():
            heapq.heapify(h)
    for pid in free:
        best = _valid_top(heap, count, 1)
        assert best is not None
        if racks.enabled and not racks.matches(best, pid):
            # Among the least-loaded subscribers, prefer one on a replica's rack.
            least = count[best]
            for r in racks.pid_racks[pid]:
                rack_heap = by_rack.get(r)
                cand = _valid_top(rack_heap, count, 1) if rack_heap else None
                if (
                    cand is not None
                    and count[cand] == least
                    and (not racks.matches(best, pid) or cand < best)
                ):
                    best = cand
            previous = dropped_by.get(pid, -1)
            if previous >= 0 and not racks.matches(best, pid) and count[previous] == least:
                best = previous
        owner[pid] = best
        hold[best][k].append(pid)
        count[best] += 1
        heapq.heappush(heap, (count[best], best))
        rack = racks.rack_of[best]
        if rack is not None and rack in by_rack:
            heapq.heappush(by_rack[rack], (count[best], best))


def _even_out_topic(
    k: int, subs: list[int], count: list[int], hold: list[dict[int, list[int]]], racks: _Racks
) -> bool:
    """Move partitions of topic ``k`` from subscribers holding n+2 or more partitions to ones holding n."""
    low = [(count[i], i) for i in subs]
    heapq.heapify(low)
    high = [(-count[i], i) for i in subs if hold[i].get(k)]
    heapq.heapify(high)
    moved = False
    while True:
        r = _valid_top(low, count, 1)
        d = _top_donor(high, count, hold, k)
        if r is None or d is None or count[d] < count[r] + 2:
            return moved
        parts = hold[d][k]
        pid = _pick_to_move(parts, d, r, racks)
        hold[r][k].append(pid)
        count[d] -= 1
        count[r] += 1
        moved = True
        heapq.heappush(low, (count[d], d))
        heapq.heappush(low, (count[r], r))
        if parts:
            heapq.heappush(high, (-count[d], d))
        heapq.heappush(high, (-count[r], r))


def _top_donor(
    high: list[tuple[int, int]], count: list[int], hold: list[dict[int, list[int]]], k: int
) -> int | None:
    while high:
        neg, i = high[0]
        if -neg == count[i] and hold[i].get(k):
            return i
        heapq.heappop(high)
    return None


def _pick_to_move(parts: list[int], donor: int, receiver: int, racks: _Racks) -> int:
    """Prefer a partition on the receiver's rack, then one off the donor's rack, else the newest.

    Newest first keeps previously owned partitions in place: they were appended before new ones.
    """
    if racks.enabled:
        for idx in range(len(parts) - 1, -1, -1):
            if racks.matches(receiver, parts[idx]):
                return parts.pop(idx)
        for idx in range(len(parts) - 1, -1, -1):
            if racks.mismatch(donor, parts[idx]):
                return parts.pop(idx)
    return parts.pop()


def assign_sticky(
    assignor: _StickyBase, members: Sequence[Member], topics: Mapping[str, TopicInfo]
) -> GroupAssignment:
    """``StickyAssignor.assign`` and ``CooperativeStickyAssignor.assign``: loaded by the leader's first
    assignment, not by building a consumer."""
    ordered = sorted_members(members)
    if not ordered:
        return {}
    counts, subs = _live_subscriptions(ordered, topics)
    layout = _Layout(counts)
    racks = _Racks(ordered, layout, topics)
    claims = _Claims(*assignor.read_claims(ordered, subs, layout))

    kept_len = [0] * len(ordered)
    first = subs[0]
    if layout.total == 0:
        result: list[list[int]] = [[] for _ in ordered]
    elif all(s is first or s == first for s in subs):
        if not claims.any_claims and not racks.enabled:
            fresh = _fresh(len(ordered), layout)
            return {m.member_id: MemberAssignment(fresh[i]) for i, m in enumerate(ordered)}
        result, kept_len = _constrained(len(ordered), layout, claims, racks)
    else:
        result = _general(ordered, subs, layout, claims, racks)

    if assignor.cooperative and claims.any_claims:
        _withhold_transfers(result, kept_len, claims)

    pick = layout.partitions().__getitem__
    return {m.member_id: MemberAssignment(list(map(pick, sorted(result[i])))) for i, m in enumerate(ordered)}


def _live_subscriptions(
    ordered: list[Member], topics: Mapping[str, TopicInfo]
) -> tuple[dict[str, int], list[frozenset[str]]]:
    """The subscribed topics that exist with their partition counts (``live_topics``), and each
    member's subscribed topics that exist. Members of a group mostly subscribe alike, so the work is
    done once per distinct subscription, and equal subscriptions share one object."""
    distinct: dict[frozenset[str], frozenset[str]] = {}
    canonical = [distinct.setdefault(m.topics, m.topics) for m in ordered]
    counts = partition_counts(set().union(*distinct), topics)
    live = {id(subscribed): subscribed.intersection(counts) for subscribed in distinct}
    return counts, [live[id(subscribed)] for subscribed in canonical]


def _withhold_transfers(result: list[list[int]], kept_len: list[int], claims: _Claims) -> None:
    """Cooperative two-phase move: a partition another member still owns is not handed out yet.

    A partition is withheld from its new holder when somebody claimed it and the holder's own claim
    did not survive conflict resolution; the owner revokes it, rejoins, and the next rebalance
    assigns it. The first ``kept_len[i]`` entries are member ``i``'s own surviving claims.
    """
    claimed = claims.claimed
    for i, pids in enumerate(result):
        start = kept_len[i]
        tail = pids[start:]
        if not tail or claimed.isdisjoint(tail):
            continue
        mine = set(claims.owned[i])
        result[i] = pids[:start] + [pid for pid in tail if pid not in claimed or pid in mine]

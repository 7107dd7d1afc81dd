"""The built-in assignor classes, light: what a member needs to join (protocol name, rebalance
protocols, subscription user data, the assignment it got) without the algorithms.

Every member builds its assignors and sends their metadata in JoinGroup; only the group's leader runs
``assign``. So ``assign`` loads its algorithm (``range``, ``roundrobin``, ``sticky``) on first call, and
building a consumer does not pay for three modules it may never run (issue 26). The classes are
re-exported by those public modules, whose names they carry.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar

from .model import NO_GENERATION, Assignor, GroupAssignment, Member, MemberAssignment, TopicInfo

if TYPE_CHECKING:
    from .model import RebalanceProtocol, TopicPartition
    from .sticky import _Layout


class RangeAssignor(Assignor):
    """Java-identical range assignment with static members ordered by instance id."""

    __module__ = "assignors.range"
    name = "range"

    def assign(self, members: Sequence[Member], topics: Mapping[str, TopicInfo]) -> GroupAssignment:
        from .range import assign_range

        return assign_range(members, topics)


class RoundRobinAssignor(Assignor):
    """Java-identical round robin with static members ordered by instance id."""

    __module__ = "assignors.roundrobin"
    name = "roundrobin"

    def assign(self, members: Sequence[Member], topics: Mapping[str, TopicInfo]) -> GroupAssignment:
        from .roundrobin import assign_round_robin

        return assign_round_robin(members, topics)


class _StickyBase(Assignor):
    """Shared sticky algorithm; subclasses say where previous ownership is read from."""

    __module__ = "assignors.sticky"
    cooperative = False

    def read_claims(
        self, ordered: list[Member], subs: list[frozenset[str]], layout: _Layout
    ) -> tuple[list[list[int]], list[int | None], list[int]]:
        """Each member's claims (partition ids of subscribed topics), generation, and the claims to
        live topics their claimants no longer subscribe to (cooperative only)."""
        raise NotImplementedError

    def assign(self, members: Sequence[Member], topics: Mapping[str, TopicInfo]) -> GroupAssignment:
        from .sticky import assign_sticky

        return assign_sticky(self, members, topics)


class StickyAssignor(_StickyBase):
    """Eager sticky: previous assignment and generation travel in userData (Java V1 format)."""

    __module__ = "assignors.sticky"
    name = "sticky"

    def __init__(self) -> None:
        self._assigned: list[TopicPartition] | None = None
        self._generation = NO_GENERATION
        self._topic_names: dict[bytes, str] = {}  # decoded-name cache for userData; no effect on results

    def read_claims(
        self, ordered: list[Member], subs: list[frozenset[str]], layout: _Layout
    ) -> tuple[list[list[int]], list[int | None], list[int]]:
        from .userdata import PartitionIds, decode_sticky_user_data_ids

        # Eager members revoke everything before joining, so Java reads ownership from userData only.
        offset, counts = layout.offset, layout.counts
        tables: dict[int, PartitionIds] = {}  # per distinct subscription: topic bytes -> (base, count)
        per_member: list[list[int]] = []
        generations: list[int | None] = []
        for m, sub in zip(ordered, subs, strict=True):
            ids = tables.get(id(sub))
            if ids is None:
                ids = tables[id(sub)] = {}

            def resolve(topic: str, sub: frozenset[str] = sub) -> tuple[int, int] | None:
                return (offset[topic], counts[topic]) if topic in sub else None

            pids, generation = decode_sticky_user_data_ids(m.user_data, ids, resolve)
            per_member.append(pids)
            generations.append(generation)
        return per_member, generations, []

    def on_assignment(self, assignment: MemberAssignment, generation: int) -> None:
        self._assigned = list(assignment.partitions)
        self._generation = generation

    def subscription_user_data(self, topics: Collection[str]) -> bytes | None:
        if self._assigned is None:
            return None
        from .userdata import encode_sticky_user_data

        return encode_sticky_user_data(self._assigned, self._generation)


class CooperativeStickyAssignor(_StickyBase):
    """Cooperative sticky: ownership from the subscription; userData is just the generation."""

    __module__ = "assignors.sticky"
    name = "cooperative-sticky"
    rebalance_protocols: ClassVar[tuple[RebalanceProtocol, ...]] = ("cooperative", "eager")
    cooperative = True

    def __init__(self) -> None:
        self._generation = NO_GENERATION

    def read_claims(
        self, ordered: list[Member], subs: list[frozenset[str]], layout: _Layout
    ) -> tuple[list[list[int]], list[int | None], list[int]]:
        from .userdata import decode_cooperative_user_data

        offset, counts = layout.offset, layout.counts
        per_member: list[list[int]] = []
        generations: list[int | None] = []
        unsubscribed: list[int] = []
        for m, sub in zip(ordered, subs, strict=True):
            owned = m.owned_partitions
            per_member.append([offset[t] + p for t, p in owned if t in sub and 0 <= p < counts[t]])
            if len(sub) != len(offset):  # it does not subscribe to every live topic
                unsubscribed += [
                    offset[t] + p for t, p in owned if t not in sub and t in offset and 0 <= p < counts[t]
                ]
            generations.append(
                m.generation if m.generation >= 0 else decode_cooperative_user_data(m.user_data)
            )
        return per_member, generations, unsubscribed

    def on_assignment(self, assignment: MemberAssignment, generation: int) -> None:
        self._generation = generation

    def subscription_user_data(self, topics: Collection[str]) -> bytes:
        return encode_cooperative_user_data(self._generation)


def encode_cooperative_user_data(generation: int) -> bytes:
    """CooperativeStickyAssignor's userData: the generation as one big-endian int32. Defined here, where
    every member's join needs it, so joining does not load ``userdata`` (which re-exports it)."""
    return generation.to_bytes(4, "big", signed=True)

"""The data every assignor sees and returns, and the member order they all share.

This is the public interface for custom assignors: StaticConsumer builds these objects from the
JoinGroup response (instance ids included) and the cluster metadata, and sends the result in SyncGroup.
"""

from __future__ import annotations

import abc
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import ClassVar, Literal

import msgspec
from msgspec.structs import force_setattr

TopicPartition = tuple[str, int]
"""``(topic, partition)``; a plain tuple because assignors handle a million of them per rebalance."""

RebalanceProtocol = Literal["eager", "cooperative"]

NO_GENERATION = -1
"""Java's ``DEFAULT_GENERATION``: the member has no generation (never assigned, or an old client)."""


def java_key(text: str) -> bytes:
    """Sort key matching Java ``String.compareTo`` (UTF-16 code units).

    Python compares strings by code point, which orders characters above U+FFFF after U+E000..U+FFFF;
    Java compares their surrogate pairs (U+D800..U+DFFF) and so puts them before. Big-endian UTF-16
    bytes compare exactly like Java's code units.
    """
    return text.encode("utf-16-be", "surrogatepass")


class Member(msgspec.Struct, frozen=True):
    """One group member as the leader sees it in the JoinGroup response plus its decoded subscription.

    ``generation`` and ``owned_partitions`` are the ConsumerProtocolSubscription v1+/v2+ fields
    (``-1`` and ``()`` when absent); ``user_data`` is the assignor-specific blob, untouched. ``topics``
    and ``owned_partitions`` accept any iterable and are kept as a frozenset and a tuple.
    """

    member_id: str
    topics: frozenset[str]
    group_instance_id: str | None = None
    owned_partitions: tuple[TopicPartition, ...] = ()
    generation: int = NO_GENERATION
    rack: str | None = None
    user_data: bytes | None = None

    def __post_init__(self) -> None:
        # Callers need not build frozensets and tuples by hand (the dataclass this was took any iterable).
        if type(self.topics) is not frozenset:
            force_setattr(self, "topics", frozenset(self.topics))
        if type(self.owned_partitions) is not tuple:
            force_setattr(self, "owned_partitions", tuple(self.owned_partitions))

    @property
    def effective_rack(self) -> str | None:
        """The rack used for matching: Java ignores an empty rack id."""
        return self.rack or None


class TopicInfo(msgspec.Struct, frozen=True):
    """A topic's partition count and, optionally, the racks of each partition's replicas.

    ``replica_racks[p]`` holds the racks of partition ``p``'s replicas; leave it empty when racks are
    unknown (rack-aware assignment is then off for this topic, as in Java).
    """

    partitions: int
    replica_racks: tuple[frozenset[str], ...] = ()

    def __post_init__(self) -> None:
        if self.partitions < 0:
            raise ValueError("partition count cannot be negative")
        if self.replica_racks and len(self.replica_racks) != self.partitions:
            raise ValueError("replica_racks must have one entry per partition")

    @classmethod
    def with_racks(cls, racks: Sequence[Iterable[str]]) -> TopicInfo:
        """Build from per-partition replica rack lists (index = partition id)."""
        return cls(len(racks), tuple(frozenset(r) for r in racks))

    def racks_of(self, partition: int) -> frozenset[str]:
        return self.replica_racks[partition] if self.replica_racks else frozenset()


class MemberAssignment(msgspec.Struct):
    """What one member receives in SyncGroup: its partitions and optional assignor user data."""

    partitions: list[TopicPartition] = msgspec.field(default_factory=list)
    user_data: bytes | None = None


GroupAssignment = dict[str, MemberAssignment]
"""Member id -> assignment; every member given to ``assign`` has an entry, possibly empty."""


def member_sort_key(member: Member) -> tuple[int, bytes, bytes]:
    """Java's MemberInfo order: static members first by instance id, then dynamic ones by member id.

    Two members with the same instance id (never valid in a group, but possible during fencing) fall
    back to member id so the order stays total.
    """
    if member.group_instance_id is not None:
        return (0, java_key(member.group_instance_id), java_key(member.member_id))
    return (1, java_key(member.member_id), b"")


def sorted_members(members: Iterable[Member]) -> list[Member]:
    """Members in the order every assignor here uses for placement and tie-breaking."""
    ordered = sorted(members, key=member_sort_key)
    seen: set[str] = set()
    for m in ordered:
        if m.member_id in seen:
            raise ValueError(f"duplicate member id {m.member_id!r}")
        seen.add(m.member_id)
    return ordered


def live_topics(members: Iterable[Member], topics: Mapping[str, TopicInfo]) -> dict[str, int]:
    """Subscribed topics that have partitions, with their counts: what Java's metadata would show.

    A topic missing from ``topics`` or with zero partitions is skipped, exactly as Java skips a topic
    without metadata.
    """
    wanted: set[str] = set()
    for m in members:
        wanted.update(m.topics)
    return partition_counts(wanted, topics)


def subscribers_by_topic(ordered: Sequence[Member], counts: Mapping[str, int]) -> dict[str, list[int]]:
    """For each live topic (a key of ``counts``), the positions in ``ordered`` of the members subscribing
    to it, in that order (what range and round robin deal partitions to)."""
    subscribers: dict[str, list[int]] = {t: [] for t in counts}
    for i, m in enumerate(ordered):
        for t in m.topics:
            if t in counts:
                subscribers[t].append(i)
    return subscribers


def partition_counts(wanted: Iterable[str], topics: Mapping[str, TopicInfo]) -> dict[str, int]:
    """The partition counts of the ``wanted`` topics that exist and have partitions."""
    out: dict[str, int] = {}
    for t in wanted:
        info = topics.get(t)
        if info is not None and info.partitions > 0:
            out[t] = info.partitions
    return out


def sort_assignment(partitions: list[TopicPartition]) -> list[TopicPartition]:
    """Topic (Java order) then partition: the order Java's rack-aware paths and RoundRobin produce."""
    keys: dict[str, bytes] = {}
    for t, _ in partitions:
        if t not in keys:
            keys[t] = java_key(t)
    return sorted(partitions, key=lambda tp: (keys[tp[0]], tp[1]))


def use_rack_aware(
    consumer_racks: Collection[str],
    all_partition_racks: Collection[str],
    racks_per_partition: Iterable[frozenset[str]],
) -> bool:
    """KIP-881's switch: racks on both sides overlap, and not every partition is on every rack."""
    if not consumer_racks or not set(consumer_racks) & set(all_partition_racks):
        return False
    every = frozenset(all_partition_racks)
    return any(r != every for r in racks_per_partition)


class Assignor(abc.ABC):
    """Base class for partition assignors, built-in and custom.

    ``name`` is the protocol name sent in JoinGroup; members of one group (Java or Python) must share
    one. An instance lives inside one consumer: ``on_assignment`` and ``subscription_user_data`` carry
    state from one generation to the next, while ``assign`` runs on the leader and must depend only on
    its arguments.
    """

    name: ClassVar[str]
    rebalance_protocols: ClassVar[tuple[RebalanceProtocol, ...]] = ("eager",)

    @abc.abstractmethod
    def assign(self, members: Sequence[Member], topics: Mapping[str, TopicInfo]) -> GroupAssignment:
        """Assign the partitions of ``topics`` to ``members`` (leader only)."""

    def subscription_user_data(self, topics: Collection[str]) -> bytes | None:
        """User data to put in this member's next subscription (JoinGroup metadata)."""
        return None

    def on_assignment(self, assignment: MemberAssignment, generation: int) -> None:
        """Called with this member's assignment once SyncGroup succeeds in ``generation``."""
        return None

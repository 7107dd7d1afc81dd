"""The leader's duties, whether it computed the assignment or was told to skip it (KIP-814).

Pure decisions, no I/O: the membership runtime (staticconsumer/runtime/duties.py) feeds in what it
learned (the members' subscriptions, cluster metadata, the assignment the coordinator holds) and gets
back a reason to rejoin, or None.

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

from collections.abc import Iterable, Mapping

import msgspec

from staticconsumer.membership import TopicPartition

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


class MetadataWatch(msgspec.Struct):
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


class DescribedMember(msgspec.Struct, frozen=True):
    """One member as the coordinator describes it: what it subscribes to and what it was assigned."""

    member_id: str
    group_instance_id: str | None
    topics: frozenset[str]
    assigned: tuple[TopicPartition, ...]
    claimed: tuple[TopicPartition, ...] = ()
    """What it owned as it joined this generation (cooperative members; eager ones claim nothing). A
    claimed partition missing from every assignment is moving: its owner revokes it and rejoins, and the
    second rebalance hands it out, so it is not "owned by no member"."""


class GroupView(msgspec.Struct, frozen=True):
    """DescribeGroups, reduced to what the duties need."""

    state: str
    members: tuple[DescribedMember, ...]

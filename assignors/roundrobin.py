"""``roundrobin``: Java's RoundRobinAssignor (not rack-aware, as in Java).

All partitions, topics in Java string order then partition number, are dealt to the members in member
order around a circle, skipping members not subscribed to the partition's topic.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from itertools import repeat

from ._builtin import RoundRobinAssignor as RoundRobinAssignor
from .model import (
    GroupAssignment,
    Member,
    MemberAssignment,
    TopicInfo,
    TopicPartition,
    java_key,
    live_topics,
    sorted_members,
    subscribers_by_topic,
)


def assign_round_robin(members: Sequence[Member], topics: Mapping[str, TopicInfo]) -> GroupAssignment:
    """``RoundRobinAssignor.assign``: loaded by the leader's first assignment, not by building a consumer."""
    ordered = sorted_members(members)
    size = len(ordered)
    out: list[list[TopicPartition]] = [[] for _ in ordered]
    counts = live_topics(ordered, topics)
    subscribers = subscribers_by_topic(ordered, counts)

    # The circle's position carries over from topic to topic. Within one topic the skipping
    # iterator simply cycles through that topic's subscribers, so each subscriber's share is a
    # strided range: O(subscribers + partitions) per topic instead of a per-partition scan.
    pos = 0
    for topic in sorted(counts, key=java_key):
        n = counts[topic]
        subs = subscribers[topic]
        k = bisect_left(subs, pos)
        if k == len(subs):
            k = 0
        width = len(subs)
        tps = list(zip(repeat(topic, n), range(n), strict=True))
        for j in range(min(width, n)):
            out[subs[(k + j) % width]] += tps[j::width]
        pos = (subs[(k + n - 1) % width] + 1) % size
    return {m.member_id: MemberAssignment(out[i]) for i, m in enumerate(ordered)}

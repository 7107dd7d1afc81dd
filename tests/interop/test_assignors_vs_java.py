"""Our assignors against Kafka's own (kafka-clients in the oracle JVM).

``range`` and ``roundrobin`` must match Java partition for partition on thousands of random groups.
The sticky assignors break ties differently on purpose (instance ids, not member ids), so there we
compare what Java's result guarantees too: balance, and how many owned partitions stay put.
"""

from __future__ import annotations

import base64
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from assignors import (
    Member,
    MemberAssignment,
    TopicInfo,
    create,
    decode_sticky_user_data,
    encode_sticky_user_data,
    java_key,
)
from tests.interop.oracle import JavaOracle

pytestmark = pytest.mark.oracle

SEED = 20261121
BATCHES = 10
GROUPS_PER_BATCH = 520  # 5,200 random groups per assignor

# Names chosen to make Java's UTF-16 order differ from Python's code point order: U+E000 sorts
# after U+1F600 in Python, before it in Java.
TOPIC_POOL = ["t0", "t1", "T", "orders", "a\ue000", "a\U0001f600", "é", "t-10", "t-9"]
ID_POOL = ["a", "b", "B", "c-1", "c-10", "c-9", "x\ue000", "x\U0001f600", "ß", "pod-0", "pod-1", "pod-2"]
RACKS = ["r0", "r1", "r2"]


@dataclass
class Group:
    members: list[Member]
    topics: dict[str, TopicInfo]


def _random_racks(rng: random.Random) -> list[str]:
    return rng.sample(RACKS, rng.randint(0, len(RACKS)))


def random_group(rng: random.Random, *, equal_subscriptions: bool = False, max_members: int = 8) -> Group:
    """A random group: static/dynamic/mixed, unequal subscriptions, racks, empty topics, idle members."""
    names = rng.sample(TOPIC_POOL, rng.randint(1, 5))
    with_racks = rng.random() < 0.5
    topics: dict[str, TopicInfo] = {}
    for t in names:
        n = rng.choice([0, 0, 1, 2, 3, 4, 5, 7, 8, 12])
        if with_racks and n:
            style = rng.random()
            if style < 0.3:  # every partition on every rack: Java turns rack-awareness off
                topics[t] = TopicInfo.with_racks([RACKS] * n)
            elif style < 0.5:  # co-partitioning friendly: partition p on rack p mod 3
                topics[t] = TopicInfo.with_racks([[RACKS[p % 3]] for p in range(n)])
            else:
                topics[t] = TopicInfo.with_racks([_random_racks(rng) for _ in range(n)])
        else:
            topics[t] = TopicInfo(n)
    subscribable = [*names, "missing-topic"]
    common = rng.sample(subscribable, rng.randint(1, len(subscribable)))
    kind = rng.choice(["static", "dynamic", "mixed"])
    count = rng.randint(1, max_members)
    instance_ids = rng.sample(ID_POOL, min(count, len(ID_POOL)))
    members: list[Member] = []
    for i in range(count):
        static = kind == "static" or (kind == "mixed" and rng.random() < 0.5)
        if equal_subscriptions:
            subs = common
        elif rng.random() < 0.1:
            subs = []
        else:
            subs = rng.sample(subscribable, rng.randint(1, len(subscribable)))
        rack = rng.choice([None, None, "", *RACKS, "r9"]) if with_racks else None
        members.append(
            Member(
                member_id=f"{rng.choice(ID_POOL)}-{rng.getrandbits(32):08x}-{i}",
                topics=subs,
                group_instance_id=instance_ids[i] if static and i < len(instance_ids) else None,
                rack=rack,
            )
        )
    return Group(members, topics)


def java_members(members: Sequence[Member]) -> list[dict[str, Any]]:
    out = []
    for m in members:
        out.append(
            {
                "memberId": m.member_id,
                "groupInstanceId": m.group_instance_id,
                "topics": sorted(m.topics),
                "ownedPartitions": [list(tp) for tp in m.owned_partitions],
                "generation": m.generation,
                "rackId": m.rack,
                "userData": None if m.user_data is None else base64.b64encode(m.user_data).decode(),
            }
        )
    return out


def java_topics(topics: Mapping[str, TopicInfo]) -> dict[str, list[dict[str, Any]]]:
    return {
        t: [{"partition": p, "racks": sorted(info.racks_of(p))} for p in range(info.partitions)]
        for t, info in topics.items()
    }


def java_assign(oracle: JavaOracle, name: str, group: Group) -> tuple[dict[str, list[tuple[str, int]]], int]:
    result = oracle.assign(name, java_members(group.members), java_topics(group.topics))
    assignment = {
        member: [(tp[0], tp[1]) for tp in body["partitions"]] for member, body in result["assignment"].items()
    }
    return assignment, int(result["elapsedNanos"])


def ours(name: str, group: Group) -> dict[str, list[tuple[str, int]]]:
    return {m: a.partitions for m, a in create(name).assign(group.members, group.topics).items()}


def by_java_order(parts: list[tuple[str, int]]) -> list[tuple[str, int]]:
    return sorted(parts, key=lambda tp: (java_key(tp[0]), tp[1]))


@pytest.mark.parametrize("name", ["range", "roundrobin"])
@pytest.mark.parametrize("batch", range(BATCHES))
def test_matches_java_exactly(java_oracle: JavaOracle, name: str, batch: int) -> None:
    rng = random.Random(SEED * 100 + batch)
    for index in range(GROUPS_PER_BATCH):
        group = random_group(rng)
        expected, _ = java_assign(java_oracle, name, group)
        got = ours(name, group)
        if name == "roundrobin":
            # Java deals in (topic, partition) order, so even the list order must agree.
            same = got == expected
        else:
            # Java's non-rack range lists topics in HashMap order; compare each member's set in order.
            same = {m: by_java_order(p) for m, p in got.items()} == {
                m: by_java_order(p) for m, p in expected.items()
            }
        where = f"{name} differs from Java on batch {batch} group {index}"
        assert same, f"{where}:\n{group}\nours={got}\njava={expected}"


def test_instance_id_order_is_utf16_like_java(java_oracle: JavaOracle) -> None:
    # Python orders U+E000 before U+1F600; Java (UTF-16) the other way round.
    members = [
        Member("m1", ["t"], group_instance_id="x\ue000"),
        Member("m2", ["t"], group_instance_id="x\U0001f600"),
    ]
    group = Group(members, {"t": TopicInfo(2)})
    expected, _ = java_assign(java_oracle, "range", group)
    assert expected == {"m2": [("t", 0)], "m1": [("t", 1)]}
    assert ours("range", group) == expected


# ---- sticky / cooperative-sticky: properties, not identity -------------------------------------------


def _counts(assignment: Mapping[str, list[tuple[str, int]]]) -> Counter[str]:
    return Counter({m: len(p) for m, p in assignment.items()})


def _balanced(group: Group, assignment: Mapping[str, list[tuple[str, int]]]) -> bool:
    """Java's isBalanced: no partition can move from a member with k+2 or more to a subscriber with k."""
    counts = _counts(assignment)
    owner = {tp: m for m, parts in assignment.items() for tp in parts}
    for m in group.members:
        for t in m.topics:
            info = group.topics.get(t)
            for p in range(info.partitions if info else 0):
                other = owner.get((t, p))
                if other is None:
                    return False  # every subscribed partition must be assigned
                if other != m.member_id and counts[other] > counts[m.member_id] + 1:
                    return False
    return True


def _with_history(
    rng: random.Random, group: Group, name: str, *, drop: int, join: int
) -> tuple[Group, dict[str, list[tuple[str, int]]]]:
    """Give members a random previous assignment, then let some leave and new ones join."""
    all_parts = [(t, p) for t, info in group.topics.items() for p in range(info.partitions)]
    previous: dict[str, list[tuple[str, int]]] = {m.member_id: [] for m in group.members}
    ids = list(previous)
    for tp in all_parts:
        if rng.random() < 0.9:
            previous[rng.choice(ids)].append(tp)
    generation = rng.randint(1, 50)
    survivors = group.members[drop:]
    rebuilt = []
    for m in survivors:
        owned = previous[m.member_id]
        rebuilt.append(
            Member(
                m.member_id,
                m.topics,
                group_instance_id=m.group_instance_id,
                owned_partitions=owned if name == "cooperative-sticky" else (),
                generation=generation if name == "cooperative-sticky" else -1,
                rack=m.rack,
                user_data=encode_sticky_user_data(owned, generation) if name == "sticky" else None,
            )
        )
    topics_of_all = next(iter(group.members)).topics
    for j in range(join):
        rebuilt.append(Member(f"joiner-{j}-{rng.getrandbits(24):06x}", topics_of_all))
    return Group(rebuilt, group.topics), {m.member_id: previous[m.member_id] for m in survivors}


Assignment = Mapping[str, list[tuple[str, int]]]


def _kept(previous: Assignment, assignment: Assignment) -> int:
    return sum(len(set(parts) & set(assignment.get(m, []))) for m, parts in previous.items())


@pytest.mark.parametrize("name", ["sticky", "cooperative-sticky"])
def test_sticky_balance_and_stickiness_match_java(java_oracle: JavaOracle, name: str) -> None:
    """Equal subscriptions, no racks: Java keeps a deterministic number of owned partitions; so must we."""
    rng = random.Random(SEED + (1 if name == "sticky" else 2))
    for index in range(400):
        base = random_group(rng, equal_subscriptions=True)
        base = Group([Member(m.member_id, m.topics, m.group_instance_id) for m in base.members], base.topics)
        group, previous = _with_history(
            rng, base, name, drop=rng.randint(0, 1) if len(base.members) > 1 else 0, join=rng.randint(0, 2)
        )
        expected, _ = java_assign(java_oracle, name, group)
        got = ours(name, group)
        context = f"{name} group {index}: {group}\nours={got}\njava={expected}"
        assert _kept(previous, got) == _kept(previous, expected), context
        total_got = sum(_counts(got).values())
        total_java = sum(_counts(expected).values())
        assert total_got == total_java, context  # cooperative withholds the same number of moves
        if name == "sticky":
            assert _balanced(group, got), context


@pytest.mark.parametrize("name", ["sticky", "cooperative-sticky"])
def test_sticky_random_groups_are_balanced_where_java_is(java_oracle: JavaOracle, name: str) -> None:
    """Unequal subscriptions and racks: both results must be complete and balanced (eager)."""
    rng = random.Random(SEED + (3 if name == "sticky" else 4))
    checked = 0
    for index in range(400):
        group, _ = _with_history(rng, random_group(rng), name, drop=0, join=0)
        expected, _ = java_assign(java_oracle, name, group)
        got = ours(name, group)
        assert set(got) == set(expected)
        if name == "sticky" and _balanced(group, expected):
            checked += 1
            assert _balanced(group, got), f"group {index}: {group}\nours={got}\njava={expected}"
        # Nobody receives a partition twice, and nothing outside its subscription.
        seen = [tp for parts in got.values() for tp in parts]
        assert len(seen) == len(set(seen))
        subs = {m.member_id: m.topics for m in group.members}
        assert all(t in subs[m] for m, parts in got.items() for t, _ in parts)
    if name == "sticky":
        assert checked > 300


def test_java_reads_our_sticky_user_data(java_oracle: JavaOracle) -> None:
    """Java members must understand a Python member's userData and vice versa."""
    assigned = [("t", 0), ("u", 2), ("t", 5), ("a\U0001f600", 1)]
    ours_bytes = encode_sticky_user_data(assigned, 7)
    java_bytes = java_oracle.subscription_user_data("sticky", ["t", "u"], assigned, generation=7)
    assert decode_sticky_user_data(java_bytes) == decode_sticky_user_data(ours_bytes)
    # A Java sticky leader honours our userData: the owner keeps its partitions.
    topics = {"t": TopicInfo(6), "u": TopicInfo(3), "a\U0001f600": TopicInfo(2)}
    members = [
        Member("py", ["t", "u", "a\U0001f600"], group_instance_id="py", user_data=ours_bytes),
        Member("java", ["t", "u", "a\U0001f600"], group_instance_id="java"),
    ]
    expected, _ = java_assign(java_oracle, "sticky", Group(members, topics))
    assert set(assigned) <= set(expected["py"])
    assert set(assigned) <= set(ours("sticky", Group(members, topics))["py"])


@pytest.mark.parametrize("name", ["sticky", "cooperative-sticky"])
def test_user_data_bytes_match_java_for_one_topic(java_oracle: JavaOracle, name: str) -> None:
    assignor = create(name)
    assignor.on_assignment(MemberAssignment([("t", 3), ("t", 1)]), 12)
    java = java_oracle.subscription_user_data(name, ["t"], [("t", 3), ("t", 1)], generation=12)
    assert assignor.subscription_user_data(["t"]) == java

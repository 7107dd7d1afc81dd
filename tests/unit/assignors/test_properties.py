"""Hypothesis properties: validity, balance, stickiness, and independence from member ids."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from assignor_support import (
    ALL_NAMES,
    STICKY_NAMES,
    TP,
    fully_balanced,
    next_generation,
    run,
    subscription,
    valid_and_balanced,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assignors import Member, TopicInfo

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
RACKS = ["r0", "r1", "r2"]


@st.composite
def clusters(draw: st.DrawFn) -> dict[str, TopicInfo]:
    names = draw(
        st.lists(st.sampled_from(["a", "b", "c", "d", "e\U0001f600", "e\ue000"]), min_size=1, unique=True)
    )
    racked = draw(st.booleans())
    out: dict[str, TopicInfo] = {}
    for t in names:
        n = draw(st.integers(0, 12))
        if racked and n:
            racks = draw(st.lists(st.sets(st.sampled_from(RACKS)), min_size=n, max_size=n))
            out[t] = TopicInfo.with_racks(racks)
        else:
            out[t] = TopicInfo(n)
    return out


@st.composite
def groups(
    draw: st.DrawFn, *, equal: bool = False, static: bool | None = None, racks: bool = True
) -> tuple[list[Member], dict[str, TopicInfo]]:
    topics = draw(clusters())
    names = sorted(topics)
    count = draw(st.integers(1, 7))
    instance_ids = draw(
        st.lists(
            st.text("abcXYZ\ue000\U0001f600", min_size=1, max_size=3),
            min_size=count,
            max_size=count,
            unique=True,
        )
    )
    common = draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
    members = []
    for i in range(count):
        is_static = draw(st.booleans()) if static is None else static
        subs = common if equal else draw(st.lists(st.sampled_from(names), unique=True))
        rack = draw(st.sampled_from([None, *RACKS])) if racks else None
        members.append(
            Member(
                f"m{draw(st.integers(0, 10**6))}-{i}",
                subs,
                group_instance_id=instance_ids[i] if is_static else None,
                rack=rack,
            )
        )
    return members, topics


def _complete(
    members: Sequence[Member], topics: dict[str, TopicInfo], assignment: dict[str, list[TP]]
) -> None:
    wanted = {(t, p) for m in members for t in m.topics if t in topics for p in range(topics[t].partitions)}
    got = [tp for tps in assignment.values() for tp in tps]
    assert len(got) == len(set(got)), "a partition assigned twice"
    assert set(got) == wanted
    subs = {m.member_id: m.topics for m in members}
    assert set(assignment) == set(subs)
    assert all(t in subs[m] for m, tps in assignment.items() for t, _ in tps)


@pytest.mark.parametrize("name", ["range", "roundrobin", "sticky"])
@SETTINGS
@given(group=groups())
def test_every_subscribed_partition_assigned_once(
    name: str, group: tuple[list[Member], dict[str, TopicInfo]]
) -> None:
    members, topics = group
    _complete(members, topics, run(name, members, topics))


@SETTINGS
@given(group=groups())
def test_sticky_is_balanced_for_any_subscriptions(group: tuple[list[Member], dict[str, TopicInfo]]) -> None:
    members, topics = group
    valid_and_balanced(members, topics, run("sticky", members, topics))


@pytest.mark.parametrize("name", STICKY_NAMES)
@SETTINGS
@given(group=groups(equal=True, racks=False), leaver=st.integers(0, 6))
def test_equal_subscriptions_fully_balanced_and_survivors_keep_everything(
    name: str, group: tuple[list[Member], dict[str, TopicInfo]], leaver: int
) -> None:
    members, topics = group
    first = run(name, members, topics)
    assert fully_balanced(first)
    if len(members) < 2:
        return
    gone = members[leaver % len(members)].member_id
    survivors = next_generation(name, [m for m in members if m.member_id != gone], first, 5)
    second = run(name, survivors, topics)
    for m in survivors:
        assert set(first[m.member_id]) <= set(second[m.member_id]), "a survivor lost a partition"
    if name == "sticky":
        assert fully_balanced(second)


@pytest.mark.parametrize("name", STICKY_NAMES)
@SETTINGS
@given(group=groups(equal=True, racks=False), joiners=st.integers(1, 3))
def test_joiners_only_take_what_quotas_free(
    name: str, group: tuple[list[Member], dict[str, TopicInfo]], joiners: int
) -> None:
    """Existing members give away only their surplus; nobody gains a partition someone else kept."""
    members, topics = group
    first = run(name, members, topics)
    topic_list = sorted(members[0].topics)
    rejoined = next_generation(name, members, first, 3) + [
        subscription(name, f"new-{j}", topic_list, [], 3) for j in range(joiners)
    ]
    second = run(name, rejoined, topics)
    total = sum(len(p) for p in first.values())
    size = len(rejoined)
    max_quota = -(-total // size)
    for m in members:
        kept = set(first[m.member_id]) & set(second[m.member_id])
        assert len(kept) >= min(len(first[m.member_id]), total // size)
        assert set(second[m.member_id]) <= set(first[m.member_id]) or len(first[m.member_id]) < max_quota


@pytest.mark.parametrize("name", STICKY_NAMES)
@SETTINGS
@given(group=groups(racks=False), generation=st.integers(1, 100))
def test_unchanged_group_keeps_its_assignment(
    name: str, group: tuple[list[Member], dict[str, TopicInfo]], generation: int
) -> None:
    """Rejoining with exactly what was assigned changes nothing (a balanced result is a fixed point)."""
    members, topics = group
    first = run(name, members, topics)
    again = run(name, next_generation(name, members, first, generation), topics)
    assert again == first


def _aligned(members: Sequence[Member], topics: dict[str, TopicInfo], assignment: dict[str, list[TP]]) -> int:
    rack = {m.member_id: m.rack for m in members}
    return sum(1 for m, tps in assignment.items() for t, p in tps if rack[m] in topics[t].racks_of(p))


@SETTINGS
@given(group=groups(), generation=st.integers(1, 100))
def test_unchanged_rack_aware_group_only_improves_then_settles(
    group: tuple[list[Member], dict[str, TopicInfo]], generation: int
) -> None:
    """With racks, a rebalance may move owned partitions onto their replicas' racks, never away,
    and an unchanged group settles after that."""
    members, topics = group
    first = run("sticky", members, topics)
    second = run("sticky", next_generation("sticky", members, first, generation), topics)
    assert _aligned(members, topics, second) >= _aligned(members, topics, first)
    valid_and_balanced(members, topics, second)
    third = run("sticky", next_generation("sticky", members, second, generation + 1), topics)
    fourth = run("sticky", next_generation("sticky", members, third, generation + 2), topics)
    assert fourth == third


@pytest.mark.parametrize("name", ALL_NAMES)
@SETTINGS
@given(group=groups(static=True), salt=st.integers(1, 10**6))
def test_static_group_ignores_member_ids(
    name: str, group: tuple[list[Member], dict[str, TopicInfo]], salt: int
) -> None:
    """Same instance ids, fresh member ids (every member restarted): identical assignment by instance."""
    members, topics = group
    first = run(name, members, topics)
    renamed = [
        Member(f"z{salt}-{k}", m.topics, group_instance_id=m.group_instance_id, rack=m.rack)
        for k, m in enumerate(reversed(members))
    ]
    second = run(name, renamed, topics)
    by_instance_first = {m.group_instance_id: first[m.member_id] for m in members}
    by_instance_second = {m.group_instance_id: second[m.member_id] for m in renamed}
    assert by_instance_first == by_instance_second


@pytest.mark.parametrize("name", STICKY_NAMES)
@SETTINGS
@given(group=groups(static=True), salt=st.integers(1, 10**6), generation=st.integers(1, 50))
def test_static_group_with_history_ignores_member_ids(
    name: str, group: tuple[list[Member], dict[str, TopicInfo]], salt: int, generation: int
) -> None:
    """With owned partitions too: only instance ids matter, never the broker's member ids."""
    members, topics = group
    first = run(name, members, topics)
    history = next_generation(name, members, first, generation)
    renamed = [
        Member(
            f"z{salt}-{k}",
            m.topics,
            group_instance_id=m.group_instance_id,
            owned_partitions=m.owned_partitions,
            generation=m.generation,
            rack=m.rack,
            user_data=m.user_data,
        )
        for k, m in enumerate(reversed(history))
    ]
    original = run(name, history, topics)
    second = run(name, renamed, topics)
    assert {m.group_instance_id: original[m.member_id] for m in history} == {
        m.group_instance_id: second[m.member_id] for m in renamed
    }


@pytest.mark.parametrize("name", ALL_NAMES)
def test_kip_345_static_member_restart_keeps_every_partition(name: str) -> None:
    """Static A, B, C share 9 partitions; A restarts (new member id, no memory) and all stay put."""
    topics = {"t": TopicInfo(9)}
    members = [subscription(name, f"{x}-old", ["t"], instance=x) for x in "ABC"]
    first = run(name, members, topics)
    assert sorted(len(p) for p in first.values()) == [3, 3, 3]
    rejoined = [
        subscription(name, "A-new", ["t"], instance="A"),
        *next_generation(name, members[1:], first, 1),
    ]
    second = run(name, rejoined, topics)
    assert second["A-new"] == first["A-old"]
    assert second["B-old"] == first["B-old"]
    assert second["C-old"] == first["C-old"]


@SETTINGS
@given(group=groups(), seed=st.integers(0, 2**32 - 1), generation=st.integers(1, 50))
def test_cooperative_never_hands_over_a_partition_someone_still_owns(
    group: tuple[list[Member], dict[str, TopicInfo]], seed: int, generation: int
) -> None:
    """KIP-429's two phases: a claimed partition goes only to its claimant; once owners have revoked
    what they lost, follow-up rebalances complete the moves and settle balanced, like the eager result."""
    import random

    members, topics = group
    rng = random.Random(seed)
    ids = [m.member_id for m in members]
    claims: dict[str, list[TP]] = {m: [] for m in ids}
    for t, info in topics.items():
        for p in range(info.partitions):
            if rng.random() < 0.7:
                claims[rng.choice(ids)].append((t, p))
    history = [
        subscription(
            "cooperative-sticky", m.member_id, m.topics, claims[m.member_id], generation, rack=m.rack
        )
        for m in members
    ]
    owned = claims
    current = history
    # Each rack-improving move costs a revoke plus a follow-up, so allow a few rounds.
    for round_ in range(1, 8):
        result = run("cooperative-sticky", current, topics)
        owner = {tp: m for m, tps in owned.items() for tp in tps}
        for member, tps in result.items():
            for tp in tps:
                assert owner.get(tp, member) == member, f"{tp} given to {member} while {owner[tp]} owns it"
        if result == owned:
            break
        # Owners revoke what they lost and rejoin; the next rebalance completes the moves.
        owned = result
        current = next_generation("cooperative-sticky", current, result, generation + round_)
    else:
        raise AssertionError(f"no stable assignment after 7 rounds: {owned}")
    _complete(members, topics, owned)
    valid_and_balanced(members, topics, owned)

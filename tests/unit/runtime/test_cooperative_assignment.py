"""The rebalance protocol a member follows (from its assignors), and the leader's check of cooperative
plans (Java's validateCooperativeAssignment), including the claims KAFKA-14639 and KAFKA-12984 are about."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import assignors as assignor_lib
from assignors import (
    CooperativeStickyAssignor,
    GroupAssignment,
    Member,
    MemberAssignment,
    RangeAssignor,
    TopicInfo,
)
from staticconsumer.errors import AssignorError, ConfigurationError
from staticconsumer.membership import RebalanceProtocol
from staticconsumer.protocol import assigned_partitions
from staticconsumer.runtime.assignment import (
    compute_assignment,
    rebalance_protocol_of,
    validate_cooperative_assignment,
)


class Fixed(assignor_lib.Assignor):
    """A custom cooperative assignor that hands out a fixed plan (to break the rules on purpose)."""

    name = "fixed"
    rebalance_protocols: ClassVar[tuple[assignor_lib.RebalanceProtocol, ...]] = ("cooperative", "eager")

    def __init__(self, plan: Mapping[str, list[tuple[str, int]]]) -> None:
        self.plan = plan

    def assign(self, members: Sequence[Member], topics: Mapping[str, TopicInfo]) -> GroupAssignment:
        return {m.member_id: MemberAssignment(list(self.plan.get(m.member_id, []))) for m in members}


class CooperativeOnly(Fixed):
    name = "cooperative-only"
    rebalance_protocols: ClassVar[tuple[assignor_lib.RebalanceProtocol, ...]] = ("cooperative",)


class Strange(Fixed):
    name = "strange"
    rebalance_protocols = ("incremental",)  # type: ignore[assignment]


# ---------------------------------------------------------------- which protocol


def test_cooperative_sticky_alone_is_cooperative() -> None:
    assert rebalance_protocol_of([CooperativeStickyAssignor()]) is RebalanceProtocol.COOPERATIVE


@pytest.mark.parametrize("name", ["range", "roundrobin", "sticky"])
def test_the_eager_assignors_are_eager(name: str) -> None:
    assert rebalance_protocol_of([assignor_lib.create(name)]) is RebalanceProtocol.EAGER


def test_an_eager_assignor_beside_cooperative_sticky_makes_the_member_eager() -> None:
    """The first bounce of a migration: both assignors, still eager (Java: the highest common protocol)."""
    chosen = rebalance_protocol_of([RangeAssignor(), CooperativeStickyAssignor()])
    assert chosen is RebalanceProtocol.EAGER
    assert rebalance_protocol_of([CooperativeStickyAssignor(), RangeAssignor()]) is chosen


def test_the_default_list_is_eager_so_it_joins_eager_groups_formed_by_aiokafka_or_java() -> None:
    """range and roundrobin are eager only: with them in the list the member revokes everything before
    each join, as the aiokafka (roundrobin) and Java (range first) members it joins do."""
    from staticconsumer.settings import Settings

    defaults = Settings(bootstrap_servers=("k:9092",), group_id="g").assignors
    chosen = rebalance_protocol_of([assignor_lib.create(name) for name in defaults])
    assert chosen is RebalanceProtocol.EAGER
    assert rebalance_protocol_of([assignor_lib.create(n) for n in reversed(defaults)]) is chosen


def test_a_custom_assignor_declares_its_own_protocols() -> None:
    assert rebalance_protocol_of([Fixed({})]) is RebalanceProtocol.COOPERATIVE
    assert rebalance_protocol_of([CooperativeOnly({}), CooperativeStickyAssignor()]) is (
        RebalanceProtocol.COOPERATIVE
    )


def test_assignors_without_a_common_protocol_are_refused_by_name() -> None:
    with pytest.raises(ConfigurationError, match="no rebalance protocol in common") as caught:
        rebalance_protocol_of([CooperativeOnly({}), RangeAssignor()])
    assert "cooperative-only" in str(caught.value)
    assert "range" in str(caught.value)


def test_an_unknown_declared_protocol_is_refused_by_name() -> None:
    with pytest.raises(ConfigurationError, match="'strange' declares rebalance protocols"):
        rebalance_protocol_of([Strange({})])


def test_no_assignor_at_all_is_refused() -> None:
    with pytest.raises(ConfigurationError):
        rebalance_protocol_of([])


# ---------------------------------------------------------------- the leader's check

TOPICS = {"t": TopicInfo(4)}


def members(**owned: Sequence[int]) -> list[Member]:
    return [
        Member(name, ["t"], owned_partitions=[("t", p) for p in parts], generation=3)
        for name, parts in owned.items()
    ]


def plan_of(encoded: Mapping[str, bytes]) -> dict[str, set[tuple[str, int]]]:
    return {member: set(assigned_partitions(data)) for member, data in encoded.items()}


def test_a_plan_that_moves_an_owned_partition_in_one_round_is_refused_naming_the_assignor() -> None:
    group = members(a=[0, 1], b=[2, 3], c=[])
    with pytest.raises(AssignorError) as caught:
        compute_assignment(
            Fixed({"a": [("t", 0)], "b": [("t", 2), ("t", 3)], "c": [("t", 1)]}), group, TOPICS
        )
    assert caught.value.assignor == "fixed"
    assert "t-1 (owned by 'a', given to 'c')" in str(caught.value)


def test_a_plan_that_leaves_a_moving_partition_unassigned_for_one_round_passes() -> None:
    group = members(a=[0, 1], b=[2, 3], c=[])
    encoded = compute_assignment(Fixed({"a": [("t", 0)], "b": [("t", 2), ("t", 3)]}), group, TOPICS)
    assert plan_of(encoded) == {"a": {("t", 0)}, "b": {("t", 2), ("t", 3)}, "c": set()}


def test_unclaimed_partitions_may_go_to_anyone_and_an_owner_may_keep_what_it_has() -> None:
    validate_cooperative_assignment(
        "x",
        members(a=[0], b=[]),
        {"a": MemberAssignment([("t", 0), ("t", 2)]), "b": MemberAssignment([("t", 1), ("t", 3)])},
    )


def test_eager_only_assignors_are_not_checked_their_members_own_nothing_when_they_join() -> None:
    eager = _eager_fixed({"b": [("t", 0)]})
    encoded = compute_assignment(eager, members(a=[0], b=[]), TOPICS)
    assert plan_of(encoded)["b"] == {("t", 0)}


def _eager_fixed(plan: Mapping[str, list[tuple[str, int]]]) -> Fixed:
    class EagerFixed(Fixed):
        name = "eager-fixed"
        rebalance_protocols: ClassVar[tuple[assignor_lib.RebalanceProtocol, ...]] = ("eager",)

    return EagerFixed(plan)


def test_kafka_14639_claims_from_different_generations_higher_wins_and_nothing_moves_in_one_round() -> None:
    """KAFKA-14639: a member that missed a round claims a partition another member got in the round it
    missed. Cooperative-sticky honours the claim of the higher generation; the loser revokes it and no one
    else gets it in this round, so the check passes; a plan that hands it to a third member is refused."""
    late = Member("late", ["t"], owned_partitions=[("t", 0), ("t", 1)], generation=4)
    current = Member("current", ["t"], owned_partitions=[("t", 1), ("t", 2)], generation=5)
    new = Member("new", ["t"], owned_partitions=[], generation=-1)
    group = [late, current, new]
    encoded = plan_of(compute_assignment(CooperativeStickyAssignor(), group, TOPICS))
    assert ("t", 1) not in encoded["late"], "the higher generation's claim wins"
    assert ("t", 1) not in encoded["new"], "never revoked from one and given to another in one round"
    with pytest.raises(AssignorError, match="t-1"):
        compute_assignment(
            Fixed({"late": [("t", 0)], "current": [("t", 2)], "new": [("t", 1)]}), group, TOPICS
        )


def test_kafka_12984_a_stale_claim_of_a_partition_now_owned_elsewhere_is_not_honoured() -> None:
    """KAFKA-12984: a member reporting ownedPartitions of an older generation must not win them back; the
    generation it sends (Subscription v2) lets the assignor tell the stale claim from the current one."""
    stale = Member("stale", ["t"], owned_partitions=[("t", 0), ("t", 1), ("t", 2), ("t", 3)], generation=1)
    owner = Member("owner", ["t"], owned_partitions=[("t", 2), ("t", 3)], generation=6)
    encoded = plan_of(compute_assignment(CooperativeStickyAssignor(), [stale, owner], TOPICS))
    assert {("t", 2), ("t", 3)} <= encoded["owner"]
    assert not encoded["stale"] & {("t", 2), ("t", 3)}


claims = st.lists(
    st.tuples(st.sets(st.integers(0, 7), max_size=5), st.sampled_from([-1, 3, 4, 5])), min_size=1, max_size=6
)


@settings(max_examples=300, deadline=None)
@given(claims=claims, partitions=st.integers(1, 8))
def test_cooperative_sticky_never_trips_the_check_whatever_the_claims(
    claims: list[tuple[set[int], int]], partitions: int
) -> None:
    """Our cooperative-sticky withholds every claimed partition that changes hands, so the leader's check
    never refuses its plans (Java skips the check for its own; we run it for every cooperative assignor)."""
    group = [
        Member(f"m{i}", ["t"], owned_partitions=[("t", p) for p in sorted(owned)], generation=generation)
        for i, (owned, generation) in enumerate(claims)
    ]
    compute_assignment(CooperativeStickyAssignor(), group, {"t": TopicInfo(partitions)})

"""Java's AbstractStickyAssignorTest / StickyAssignorTest / CooperativeStickyAssignorTest scenarios.

Each test names the Java test it reproduces. Where Java's expected partitions depend on HashMap or
member-id order, we assert our own deterministic result (member order) and say so.
"""

from __future__ import annotations

import random

import pytest
from assignor_support import (
    STICKY_NAMES,
    fully_balanced,
    next_generation,
    parts,
    run,
    settle,
    subscription,
    valid_and_balanced,
)

from assignors import Member, TopicInfo

GEN = 1


@pytest.fixture(params=STICKY_NAMES)
def name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_one_consumer_no_topic(name: str) -> None:  # testOneConsumerNoTopic
    members = [subscription(name, "c1", [])]
    assert run(name, members, {}) == {"c1": []}


def test_one_consumer_nonexistent_topic(name: str) -> None:  # testOneConsumerNonexistentTopic
    members = [subscription(name, "c1", ["t"])]
    assert run(name, members, {"t": TopicInfo(0)}) == {"c1": []}
    assert run(name, members, {}) == {"c1": []}


def test_one_consumer_one_topic(name: str) -> None:  # testOneConsumerOneTopic
    assert run(name, [subscription(name, "c1", ["t"])], {"t": TopicInfo(3)}) == {"c1": parts("t", 0, 1, 2)}


def test_only_assigns_partitions_from_subscribed_topics(name: str) -> None:
    # testOnlyAssignsPartitionsFromSubscribedTopics
    got = run(name, [subscription(name, "c1", ["t"])], {"t": TopicInfo(3), "other": TopicInfo(3)})
    assert got == {"c1": parts("t", 0, 1, 2)}


def test_one_consumer_multiple_topics(name: str) -> None:  # testOneConsumerMultipleTopics
    got = run(name, [subscription(name, "c1", ["t1", "t2"])], {"t1": TopicInfo(1), "t2": TopicInfo(2)})
    assert got == {"c1": [("t1", 0), ("t2", 0), ("t2", 1)]}


def test_two_consumers_one_topic_one_partition(name: str) -> None:  # testTwoConsumersOneTopicOnePartition
    members = [subscription(name, "c1", ["t"]), subscription(name, "c2", ["t"])]
    got = run(name, members, {"t": TopicInfo(1)})
    assert got == {"c1": [("t", 0)], "c2": []}


def test_two_consumers_one_topic_two_partitions(name: str) -> None:  # testTwoConsumersOneTopicTwoPartitions
    members = [subscription(name, "c1", ["t"]), subscription(name, "c2", ["t"])]
    assert run(name, members, {"t": TopicInfo(2)}) == {"c1": [("t", 0)], "c2": [("t", 1)]}


def test_multiple_consumers_mixed_topic_subscriptions(name: str) -> None:
    # testMultipleConsumersMixedTopicSubscriptions
    topics = {"t1": TopicInfo(3), "t2": TopicInfo(2)}
    members = [
        subscription(name, "c1", ["t1"]),
        subscription(name, "c2", ["t1", "t2"]),
        subscription(name, "c3", ["t1"]),
    ]
    got = run(name, members, topics)
    assert got["c2"] == [("t2", 0), ("t2", 1)]
    assert len(got["c1"]) == len(got["c3"]) == 1 or sorted(len(got[c]) for c in ("c1", "c3")) == [1, 2]
    valid_and_balanced(members, topics, got)


def test_two_consumers_two_topics_six_partitions(name: str) -> None:  # testTwoConsumersTwoTopicsSixPartitions
    topics = {"t1": TopicInfo(3), "t2": TopicInfo(3)}
    members = [subscription(name, "c1", ["t1", "t2"]), subscription(name, "c2", ["t1", "t2"])]
    got = run(name, members, topics)
    assert got == {"c1": [("t1", 0), ("t1", 2), ("t2", 1)], "c2": [("t1", 1), ("t2", 0), ("t2", 2)]}
    valid_and_balanced(members, topics, got)


def test_consumer_owning_min_quota_expected_max_quota(name: str) -> None:
    # testConsumerOwningMinQuotaExpectedMaxQuota
    topics = {"t1": TopicInfo(2), "t2": TopicInfo(3)}
    members = [
        subscription(name, "c1", ["t1", "t2"], [("t1", 0), ("t2", 1)], GEN),
        subscription(name, "c2", ["t1", "t2"], [("t1", 1), ("t2", 2)], GEN),
    ]
    got = run(name, members, topics)
    assert got == {"c1": [("t1", 0), ("t2", 0), ("t2", 1)], "c2": [("t1", 1), ("t2", 2)]}


def test_max_quota_consumers_more_than_expected(name: str) -> None:
    # testMaxQuotaConsumerMoreThanNumExpectedMaxCapacityMembers. Java lets c2 keep both (HashMap
    # order); we go by member order, so c1 keeps both and c2 gives up its higher partition.
    topics = {"t1": TopicInfo(2), "t2": TopicInfo(2)}
    members = [
        subscription(name, "c1", ["t1", "t2"], [("t1", 0), ("t2", 0)], GEN),
        subscription(name, "c2", ["t1", "t2"], [("t1", 1), ("t2", 1)], GEN),
        subscription(name, "c3", ["t1", "t2"], [], GEN),
    ]
    got = run(name, members, topics)
    assert got["c1"] == [("t1", 0), ("t2", 0)]
    assert got["c2"] == [("t1", 1)]
    # Cooperative: t2-1 is still owned by c2, so c3 receives it only in the follow-up rebalance.
    assert got["c3"] == ([] if name == "cooperative-sticky" else [("t2", 1)])


def test_all_consumers_under_min_quota(name: str) -> None:  # testAllConsumersAreUnderMinQuota
    topics = {"t1": TopicInfo(2), "t2": TopicInfo(3)}
    members = [
        subscription(name, "c1", ["t1", "t2"], [("t1", 0)], GEN),
        subscription(name, "c2", ["t1", "t2"], [("t1", 1)], GEN),
        subscription(name, "c3", ["t1", "t2"], [], GEN),
    ]
    got = run(name, members, topics)
    assert got == {"c1": [("t1", 0), ("t2", 0)], "c2": [("t1", 1), ("t2", 1)], "c3": [("t2", 2)]}
    assert fully_balanced(got)


def test_add_remove_consumer_one_topic(name: str) -> None:  # testAddRemoveConsumerOneTopic
    topics = {"t": TopicInfo(3)}
    first = run(name, [subscription(name, "c1", ["t"])], topics)
    assert first == {"c1": parts("t", 0, 1, 2)}
    members = [subscription(name, "c1", ["t"], first["c1"], GEN), subscription(name, "c2", ["t"], [], GEN)]
    second = run(name, members, topics)
    assert second["c1"] == parts("t", 0, 1)
    assert second["c2"] == ([] if name == "cooperative-sticky" else [("t", 2)])
    if name == "cooperative-sticky":
        # The follow-up rebalance after c1 revoked t-2.
        members = [
            subscription(name, "c1", ["t"], second["c1"], GEN + 1),
            subscription(name, "c2", ["t"], [], GEN + 1),
        ]
        second = run(name, members, topics)
        assert second == {"c1": parts("t", 0, 1), "c2": [("t", 2)]}
    third = run(name, [subscription(name, "c2", ["t"], second["c2"], GEN + 2)], topics)
    assert third == {"c2": parts("t", 0, 1, 2)}


def test_topic_balance_after_reassignment(name: str) -> None:  # testTopicBalanceAfterReassignment
    topics = {"t1": TopicInfo(12), "t2": TopicInfo(12)}
    every = ["t1", "t2"]

    def per_topic(assignment: dict[str, list[tuple[str, int]]], expected: int) -> None:
        for tps in assignment.values():
            assert [sum(1 for t, _ in tps if t == topic) for topic in every] == [expected, expected]

    first = run(name, [subscription(name, "c1", every)], topics)
    per_topic(first, 12)
    members = [subscription(name, "c1", every, first["c1"], GEN), subscription(name, "c2", every, [], GEN)]
    second = settle(name, members, topics, GEN)
    per_topic(second, 6)
    members = [
        subscription(name, "c1", every, second["c1"], GEN + 2),
        subscription(name, "c2", every, second["c2"], GEN + 2),
        subscription(name, "c3", every, [], GEN + 2),
        subscription(name, "c4", every, [], GEN + 2),
    ]
    third = settle(name, members, topics, GEN + 2)
    per_topic(third, 3)
    members = [subscription(name, m, every, third[m], GEN + 4) for m in ("c3", "c4")]
    fourth = settle(name, members, topics, GEN + 4)
    per_topic(fourth, 6)


def test_add_remove_two_consumers_two_topics(name: str) -> None:  # testAddRemoveTwoConsumersTwoTopics
    topics = {"t1": TopicInfo(3), "t2": TopicInfo(4)}
    members = [subscription(name, "c1", ["t1", "t2"]), subscription(name, "c2", ["t1", "t2"])]
    first = run(name, members, topics)
    valid_and_balanced(members, topics, first)
    members = [
        *next_generation(name, members, first, GEN),
        subscription(name, "c3", ["t1", "t2"], [], GEN),
        subscription(name, "c4", ["t1", "t2"], [], GEN),
    ]
    second = run(name, members, topics)
    for member in ("c1", "c2"):
        assert set(second[member]) <= set(first[member]), "existing members only give partitions away"
    if name == "sticky":
        valid_and_balanced(members, topics, second)
    # c1 and c2 leave.
    survivors = next_generation(name, members[2:], second, GEN + 1)
    third = run(name, survivors, topics)
    for member in ("c3", "c4"):
        assert set(second[member]) <= set(third[member])
    valid_and_balanced(survivors, topics, third)


def test_poor_round_robin_assignment_scenario(name: str) -> None:  # testPoorRoundRobinAssignmentScenario
    topics = {f"topic{i}": TopicInfo((i % 2) + 1) for i in range(1, 6)}
    every = list(topics)
    members = [
        subscription(name, "consumer1", every),
        subscription(name, "consumer2", ["topic1", "topic3", "topic5"]),
        subscription(name, "consumer3", ["topic1", "topic3", "topic5"]),
        subscription(name, "consumer4", every),
    ]
    valid_and_balanced(members, topics, run(name, members, topics))


def test_add_remove_topic_two_consumers(name: str) -> None:  # testAddRemoveTopicTwoConsumers
    topics = {"t1": TopicInfo(3)}
    members = [subscription(name, "c1", ["t1"]), subscription(name, "c2", ["t1"])]
    first = run(name, members, topics)
    topics = {"t1": TopicInfo(3), "t2": TopicInfo(3)}
    members = [subscription(name, m, ["t1", "t2"], first[m], GEN) for m in ("c1", "c2")]
    second = run(name, members, topics)
    for m in ("c1", "c2"):
        assert set(first[m]) <= set(second[m])
    valid_and_balanced(members, topics, second)
    topics = {"t2": TopicInfo(3)}
    members = [subscription(name, m, ["t2"], second[m], GEN + 1) for m in ("c1", "c2")]
    third = run(name, members, topics)
    for m in ("c1", "c2"):
        assert {tp for tp in second[m] if tp[0] == "t2"} <= set(third[m])
    valid_and_balanced(members, topics, third)


def test_reassignment_after_one_consumer_leaves(name: str) -> None:  # testReassignmentAfterOneConsumerLeaves
    topics = {f"topic{i:02d}": TopicInfo(i) for i in range(1, 20)}
    members = [
        subscription(name, f"consumer{i:02d}", [f"topic{j:02d}" for j in range(1, i + 1)])
        for i in range(1, 20)
    ]
    first = run(name, members, topics)
    valid_and_balanced(members, topics, first)
    members = next_generation(name, [m for m in members if m.member_id != "consumer10"], first, GEN)
    second = run(name, members, topics)
    if name == "sticky":
        valid_and_balanced(members, topics, second)
    for m in members:
        moved_away = set(first[m.member_id]) - set(second[m.member_id])
        assert len(moved_away) <= len(first[m.member_id]), "sanity"
    kept = sum(len(set(first[m.member_id]) & set(second[m.member_id])) for m in members)
    assert kept >= sum(len(first[m.member_id]) for m in members) * 0.8


def test_reassignment_after_one_consumer_added(name: str) -> None:  # testReassignmentAfterOneConsumerAdded
    topics = {"t": TopicInfo(20)}
    members = [subscription(name, f"consumer{i}", ["t"]) for i in range(1, 10)]
    first = run(name, members, topics)
    members = [*next_generation(name, members, first, GEN), subscription(name, "consumer10", ["t"], [], GEN)]
    second = run(name, members, topics)
    for m in members[:-1]:
        assert set(second[m.member_id]) <= set(first[m.member_id])
    if name == "sticky":
        valid_and_balanced(members, topics, second)


def test_same_subscriptions(name: str) -> None:  # testSameSubscriptions
    topics = {f"t{i}": TopicInfo(i) for i in range(1, 15)}
    members = [subscription(name, f"consumer{i:02d}", list(topics)) for i in range(1, 10)]
    first = run(name, members, topics)
    valid_and_balanced(members, topics, first)
    members = next_generation(name, [m for m in members if m.member_id != "consumer05"], first, GEN)
    second = run(name, members, topics)
    for m in members:
        # Quotas only grow when a member leaves, so every survivor keeps everything.
        assert set(first[m.member_id]) <= set(second[m.member_id])
    valid_and_balanced(members, topics, second)


def test_new_subscription(name: str) -> None:  # testNewSubscription
    topics = {f"t{i}": TopicInfo(1) for i in range(5)}
    members = [subscription(name, f"c{i}", [f"t{j}" for j in range(i, 5)]) for i in range(3)]
    first = run(name, members, topics)
    valid_and_balanced(members, topics, first)
    changed = [
        subscription(
            name, m.member_id, (["t1"] if m.member_id == "c0" else m.topics), first[m.member_id], GEN
        )
        for m in members
    ]
    second = run(name, changed, topics)
    if name == "sticky":
        valid_and_balanced(changed, topics, second)


def test_move_existing_assignments(name: str) -> None:  # testMoveExistingAssignments
    topics = {f"t{i}": TopicInfo(1) for i in range(1, 7)}
    members = [
        subscription(name, "c1", ["t1", "t2"], [("t1", 0)], GEN),
        subscription(name, "c2", ["t1", "t2", "t3", "t4"], [("t2", 0), ("t3", 0)], GEN),
        subscription(name, "c3", ["t2", "t3", "t4", "t5", "t6"], [("t4", 0), ("t5", 0), ("t6", 0)], GEN),
    ]
    got = run(name, members, topics)
    if name == "sticky":
        valid_and_balanced(members, topics, got)


def test_stickiness(name: str) -> None:  # testStickiness
    topics = {"t": TopicInfo(3)}
    members = [subscription(name, f"consumer{i:02d}", ["t"]) for i in range(1, 5)]
    first = run(name, members, topics)
    owner_of = {tp: m for m, tps in first.items() for tp in tps}
    members = next_generation(name, [m for m in members if m.member_id != "consumer01"], first, GEN)
    second = run(name, members, topics)
    for tp, old in owner_of.items():
        if old != "consumer01" and name == "sticky":
            assert tp in second[old], "a partition whose owner stayed must stay"


def test_assignment_updated_for_deleted_topic(name: str) -> None:  # testAssignmentUpdatedForDeletedTopic
    members = [subscription(name, "c1", ["t1", "t2", "t3"])]
    got = run(name, members, {"t1": TopicInfo(1), "t3": TopicInfo(100)})
    assert len(got["c1"]) == 101


def test_no_exception_when_only_subscribed_topic_deleted(name: str) -> None:
    # testNoExceptionThrownWhenOnlySubscribedTopicDeleted
    topics = {"t": TopicInfo(3)}
    first = run(name, [subscription(name, "c1", ["t"])], topics)
    assert run(name, [subscription(name, "c1", ["t"], first["c1"], GEN)], {}) == {"c1": []}


def test_reassignment_with_random_subscriptions_and_changes(name: str) -> None:
    # testReassignmentWithRandomSubscriptionsAndChanges (seeded; fewer rounds)
    rng = random.Random(7)
    for _ in range(20):
        topics = {f"t{i}": TopicInfo(rng.randint(1, 8)) for i in range(rng.randint(1, 6))}
        names = list(topics)
        members = [
            subscription(name, f"c{i}", rng.sample(names, rng.randint(1, len(names))))
            for i in range(rng.randint(2, 8))
        ]
        first = run(name, members, topics)
        valid_and_balanced(members, topics, first)
        changed = [
            subscription(
                name, m.member_id, rng.sample(names, rng.randint(1, len(names))), first[m.member_id], GEN
            )
            for m in members
        ]
        second = run(name, changed, topics)
        if name == "sticky":
            valid_and_balanced(changed, topics, second)


def test_all_consumers_reach_expected_quota(name: str) -> None:
    # testAllConsumersReachExpectedQuotaAndAreConsideredFilled
    members = [
        subscription(name, "c1", ["t"], parts("t", 0, 1), GEN),
        subscription(name, "c2", ["t"], parts("t", 2), GEN),
        subscription(name, "c3", ["t"], [], GEN),
    ]
    assert run(name, members, {"t": TopicInfo(4)}) == {
        "c1": parts("t", 0, 1),
        "c2": parts("t", 2),
        "c3": parts("t", 3),
    }


def test_owned_partitions_invalidated_for_stale_generation(name: str) -> None:
    # testOwnedPartitionsAreInvalidatedForConsumerWithStaleGeneration
    topics = {"t": TopicInfo(3), "t2": TopicInfo(3)}
    claim = [("t", 0), ("t", 2), ("t2", 1)]
    members = [
        subscription(name, "c1", ["t", "t2"], claim, 10),
        subscription(name, "c2", ["t", "t2"], claim, 9),
    ]
    got = run(name, members, topics)
    assert set(got["c1"]) == set(claim)
    assert set(got["c2"]) == {("t", 1), ("t2", 0), ("t2", 2)}


def test_owned_partitions_invalidated_for_no_generation(name: str) -> None:
    # testOwnedPartitionsAreInvalidatedForConsumerWithNoGeneration
    topics = {"t": TopicInfo(3), "t2": TopicInfo(3)}
    claim = [("t", 0), ("t", 2), ("t2", 1)]
    members = [
        subscription(name, "c1", ["t", "t2"], claim, 10),
        subscription(name, "c2", ["t", "t2"], claim, -1),
    ]
    got = run(name, members, topics)
    assert set(got["c1"]) == set(claim)
    assert set(got["c2"]) == {("t", 1), ("t2", 0), ("t2", 2)}


def test_partition_claimed_twice_in_same_generation(name: str) -> None:
    # testPartitionsTransferringOwnershipIncludeThePartitionClaimedByMultipleConsumersInSameGeneration
    # and StickyAssignorTest's ...InvalidatedWhenClaimedByMultipleConsumersInSameGeneration...
    members = [
        subscription(name, "c1", ["t"], parts("t", 0, 1), GEN),
        subscription(name, "c2", ["t"], parts("t", 0, 2), GEN),
        subscription(name, "c3", ["t"], [], GEN),
    ]
    got = run(name, members, {"t": TopicInfo(3)})
    assert got["c1"] == parts("t", 1)
    assert got["c2"] == parts("t", 2)
    # t-0 changes hands: eager hands it over, cooperative waits for both claimants to revoke it.
    assert got["c3"] == ([] if name == "cooperative-sticky" else parts("t", 0))


def test_claimed_twice_with_unequal_partitions_per_consumer(name: str) -> None:
    # ...InvalidatedWhenClaimedByMultipleConsumersInSameGenerationWithUnequalPartitionsPerConsumer
    members = [
        subscription(name, "c1", ["t"], parts("t", 0, 1), GEN),
        subscription(name, "c2", ["t"], parts("t", 0, 2), GEN),
        subscription(name, "c3", ["t"], [], GEN),
    ]
    got = run(name, members, {"t": TopicInfo(4)})
    # Java deals the freed t-0 to c3 and the spare t-3 to c1; we deal round-robin in member order,
    # which hands c1 the extra slot first. Either way t-0 is nobody's to keep.
    assert got["c2"] == parts("t", 2)
    assert got["c3"] == parts("t", 3)
    assert got["c1"] == (parts("t", 1) if name == "cooperative-sticky" else parts("t", 0, 1))


def test_partitions_go_to_highest_generation(
    name: str,
) -> None:  # testEnsurePartitionsAssignedToHighestGeneration
    topics = {"t": TopicInfo(3), "t2": TopicInfo(3), "t3": TopicInfo(3)}
    every = list(topics)
    members = [
        subscription(name, "c1", every, [("t", 0), ("t2", 0), ("t3", 0)], 10),
        subscription(name, "c2", every, [("t", 1), ("t2", 1), ("t3", 1)], 9),
        subscription(name, "c3", every, [("t2", 1), ("t3", 0), ("t3", 2)], 8),
    ]
    got = run(name, members, topics)
    assert set(got["c1"]) == {("t", 0), ("t2", 0), ("t3", 0)}
    assert set(got["c2"]) == {("t", 1), ("t2", 1), ("t3", 1)}
    assert set(got["c3"]) == {("t", 2), ("t2", 2), ("t3", 2)}


def test_no_reassignment_on_current_members(name: str) -> None:  # testNoReassignmentOnCurrentMembers
    topics = {"t": TopicInfo(3), "t1": TopicInfo(3), "t2": TopicInfo(3), "t3": TopicInfo(3)}
    every = ["t", "t2", "t3", "t1"]
    members = [
        subscription(name, "c1", every, [], -1),
        subscription(name, "c2", every, [("t", 0), ("t2", 0), ("t1", 0)], 9),
        subscription(name, "c3", every, [("t3", 2), ("t2", 2), ("t1", 1)], 8),
        subscription(name, "c4", every, [("t3", 1), ("t", 1), ("t", 2)], 7),
    ]
    got = run(name, members, topics)
    assert set(got["c1"]) == {("t1", 2), ("t2", 1), ("t3", 0)}
    for m in members[1:]:
        assert set(got[m.member_id]) == set(m.owned_partitions)


def test_owned_partitions_with_multiple_generations(name: str) -> None:
    # testOwnedPartitionsAreInvalidatedForConsumerWithMultipleGeneration
    topics = {"t": TopicInfo(3), "t2": TopicInfo(3)}
    members = [
        subscription(name, "c1", ["t", "t2"], [("t", 0), ("t2", 1), ("t", 1)], 10),
        subscription(name, "c2", ["t", "t2"], [("t", 0), ("t2", 1), ("t2", 2)], 8),
    ]
    got = run(name, members, topics)
    assert set(got["c1"]) == {("t", 0), ("t2", 1), ("t", 1)}
    assert set(got["c2"]) == {("t", 2), ("t2", 2), ("t2", 0)}


@pytest.mark.parametrize("equal", [True, False])
def test_assignment_with_multiple_generations(name: str, equal: bool) -> None:
    # StickyAssignorTest.testAssignmentWithMultipleGenerations1
    every = ["t", "t2"]
    c2_topics = every if equal else ["t"]
    topics = {"t": TopicInfo(6), "t2": TopicInfo(6)}
    r1 = run(
        name,
        [
            subscription(name, "c1", every),
            subscription(name, "c2", c2_topics),
            subscription(name, "c3", every),
        ],
        topics,
    )
    assert sorted(len(p) for p in r1.values()) == [4, 4, 4]
    members = [
        subscription(name, "c1", every, r1["c1"], GEN),
        subscription(name, "c2", c2_topics, r1["c2"], GEN),
    ]
    r2 = run(name, members, topics)
    if name == "sticky":
        assert len(r2["c1"]) == len(r2["c2"]) == 6
        assert set(r1["c2"]) <= set(r2["c2"])
        if equal:
            assert set(r1["c1"]) <= set(r2["c1"])
        # c3 comes back with its generation-1 view while c2 is at generation 2: c2 wins conflicts.
        members = [
            subscription(name, "c2", c2_topics, r2["c2"], 2),
            subscription(name, "c3", every, r1["c3"], 1),
        ]
        r3 = run(name, members, topics)
        assert len(r3["c2"]) == len(r3["c3"]) == 6
        assert not set(r3["c2"]) & set(r3["c3"])


@pytest.mark.parametrize("equal", [True, False])
def test_assignment_with_conflicting_previous_generations(name: str, equal: bool) -> None:
    # StickyAssignorTest.testAssignmentWithConflictingPreviousGenerations
    topics = {"t": TopicInfo(4), "t2": TopicInfo(4), "t3": TopicInfo(4)}
    every = list(topics)
    c1_topics = every if equal else ["t"]
    c2_topics = every if equal else ["t", "t2"]
    c1_prev = (
        [("t", 0), ("t", 1), ("t", 2), ("t2", 2), ("t2", 3), ("t3", 0)] if equal else parts("t", 0, 1, 2, 3)
    )
    c2_prev = [("t", 0), ("t", 1), ("t2", 0), ("t2", 1), ("t2", 2), ("t2", 3)]
    c3_prev = [("t", 2), ("t", 3), ("t3", 0), ("t3", 1), ("t3", 2), ("t3", 3)]
    members = [
        subscription(name, "c1", c1_topics, c1_prev, 1),
        subscription(name, "c2", c2_topics, c2_prev, 2),
        subscription(name, "c3", every, c3_prev, 2),
    ]
    got = run(name, members, topics)
    assert set(got["c2"]) <= set(c2_prev)
    assert set(got["c3"]) <= set(c3_prev)
    if name == "sticky":
        assert sorted(len(p) for p in got.values()) == [4, 4, 4]


def test_uniform_subscription_transfer_list(name: str) -> None:
    # CooperativeStickyAssignorTest.testUniformSubscriptionTransferOwnershipListIsRight
    topics = {"t": TopicInfo(4)}
    members = [
        subscription(name, "c1", ["t"], parts("t", 0, 1), GEN),
        subscription(name, "c2", ["t"], parts("t", 2, 3), GEN),
        subscription(name, "c3", ["t"], [], GEN),
    ]
    got = run(name, members, topics)
    assert got["c1"] == parts("t", 0, 1)
    assert got["c2"] == parts("t", 2)
    assert got["c3"] == ([] if name == "cooperative-sticky" else parts("t", 3))


def test_large_uniform_group_stays_sticky(name: str) -> None:
    # testLargeAssignmentAndGroupWithUniformSubscription, scaled down for a unit test.
    topics = {f"topic-{i:03d}": TopicInfo(200) for i in range(50)}
    every = list(topics)
    members = [subscription(name, f"consumer-{i:04d}", every) for i in range(300)]
    first = run(name, members, topics)
    assert fully_balanced(first)
    members = [
        subscription(name, m.member_id, every, [] if i == 0 else first[m.member_id], GEN)
        for i, m in enumerate(members)
    ]
    second = run(name, members, topics)
    for m in members[1:]:
        assert second[m.member_id] == first[m.member_id]
    assert second[members[0].member_id] == first[members[0].member_id]


def test_rack_aware_uniform_subscription(name: str) -> None:  # testRackAwareAssignmentWithUniformSubscription
    racks = ["a", "b", "c"]
    topics = {
        "t1": TopicInfo.with_racks([[racks[p % 3]] for p in range(6)]),
        "t2": TopicInfo.with_racks([[racks[p % 3], racks[(p + 1) % 3]] for p in range(6)]),
    }
    members = [subscription(name, f"c{i}", ["t1", "t2"], rack=racks[i]) for i in range(3)]
    got = run(name, members, topics)
    assert fully_balanced(got)
    for i, m in enumerate(members):
        for t, p in got[m.member_id]:
            assert racks[i] in topics[t].racks_of(p)


def test_rack_aware_keeps_only_matching_owned(name: str) -> None:
    # Owned partitions on the wrong rack are given up for rack alignment (Java does the same).
    topics = {"t": TopicInfo.with_racks([["a"], ["b"], ["a"], ["b"]])}
    members = [
        subscription(name, "c1", ["t"], parts("t", 0, 1), GEN, rack="a"),
        subscription(name, "c2", ["t"], parts("t", 2, 3), GEN, rack="b"),
    ]
    got = run(name, members, topics)
    if name == "sticky":
        assert got == {"c1": parts("t", 0, 2), "c2": parts("t", 1, 3)}
    else:
        assert got == {"c1": parts("t", 0), "c2": parts("t", 3)}


def test_rack_aware_non_equal_subscription(
    name: str,
) -> None:  # testRackAwareAssignmentWithNonEqualSubscription
    racks = ["a", "b", "c"]
    topics = {
        "t1": TopicInfo.with_racks([[racks[p % 3]] for p in range(6)]),
        "t2": TopicInfo.with_racks([[racks[p % 3]] for p in range(6)]),
    }
    members = [
        subscription(name, "c0", ["t1", "t2"], rack="a"),
        subscription(name, "c1", ["t1", "t2"], rack="b"),
        subscription(name, "c2", ["t1"], rack="c"),
    ]
    got = run(name, members, topics)
    valid_and_balanced(members, topics, got)
    aligned = sum(1 for m in members for t, p in got[m.member_id] if m.rack in topics[t].racks_of(p))
    # 8 is the optimum here (c2 must take four t1 partitions, only two on its rack); like Java's,
    # our placement is a heuristic, but it must get close.
    assert aligned >= 7


def test_empty_group() -> None:
    assert run("sticky", [], {"t": TopicInfo(3)}) == {}


def test_members_subscribed_to_nothing_get_nothing(name: str) -> None:
    members = [subscription(name, "idle", []), subscription(name, "busy", ["t"])]
    assert run(name, members, {"t": TopicInfo(3)}) == {"idle": [], "busy": parts("t", 0, 1, 2)}


def test_partition_beyond_topic_size_is_ignored(name: str) -> None:
    members = [
        subscription(name, "c1", ["t"], [("t", 7), ("t", 0)], GEN),
        subscription(name, "c2", ["t"], [], GEN),
    ]
    got = run(name, members, {"t": TopicInfo(2)})
    assert got == {"c1": [("t", 0)], "c2": [("t", 1)]}


def test_duplicate_member_ids_rejected(name: str) -> None:
    with pytest.raises(ValueError, match="duplicate member id"):
        run(name, [Member("m", ["t"]), Member("m", ["t"])], {"t": TopicInfo(1)})

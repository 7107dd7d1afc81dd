"""The leader's duties as pure decisions and a loop over fake I/O (no broker, no sleeping)."""

from __future__ import annotations

from staticconsumer.leader import (
    DescribedMember,
    GroupView,
    MetadataWatch,
    audit_reason,
    metadata_change,
    unowned_partitions,
)
from staticconsumer.membership import TopicPartition as TP
from staticconsumer.runtime.duties import LeaderDuties


def test_metadata_change_names_growth_new_and_vanished_topics_and_ignores_unwatched() -> None:
    snapshot = {"a": 4, "b": 2, "gone": 1, "other": 3}
    current = {"a": 6, "b": 2, "new": 5, "other": 9}
    reason = metadata_change(snapshot, current, ["a", "b", "gone", "new"])
    assert (
        reason
        == "metadata changed: a went from 4 to 6 partitions; gone disappeared; new appeared with 5 partitions"
    )
    assert metadata_change(snapshot, current, ["b"]) is None
    assert metadata_change(snapshot, current, ["other"]) is not None


def test_unowned_partitions_are_those_existing_that_no_member_owns() -> None:
    owned = [TP("a", 0), TP("a", 1), TP("b", 0)]
    assert unowned_partitions(["a", "b"], {"a": 3, "b": 1}, owned) == {TP("a", 2)}
    assert unowned_partitions(["a"], {"a": 2}, owned) == frozenset()
    assert unowned_partitions(["missing"], {"a": 2}, owned) == frozenset(), "a topic that does not exist"
    reason = audit_reason(frozenset(TP("t", p) for p in range(7)), limit=2)
    assert reason == "7 subscribed partitions owned by no member: t-0, t-1 and 5 more"
    assert audit_reason(frozenset()) is None


def test_watch_reports_a_change_once_and_only_when_leading() -> None:
    watch = MetadataWatch(3, frozenset({"a"}), {"a": 4}, leader=True)
    assert watch.check({"a": 4}) is None
    assert watch.check({"a": 5}) is not None
    assert watch.check({"a": 6}) is None, "one rejoin per change while the first is under way"
    follower = MetadataWatch(3, frozenset({"a"}), {"a": 4}, leader=False)
    assert follower.check({"a": 5}) is None, "followers never force rebalances on metadata"


class FakeCluster:
    """Partition counts and the coordinator's view, as the duties would fetch them."""

    def __init__(self, counts: dict[str, int], view: GroupView | None) -> None:
        self.counts = counts
        self.view = view
        self.rejoins: list[str] = []
        self.describes = 0
        self.reads = 0

    async def partition_counts(self, topics: frozenset[str]) -> dict[str, int]:
        self.reads += 1
        return {t: n for t, n in self.counts.items() if t in topics}

    async def describe(self) -> GroupView | None:
        self.describes += 1
        return self.view

    def duties(self, own: frozenset[str]) -> LeaderDuties:
        return LeaderDuties(
            own_topics=lambda: own,
            refresh_interval=60,
            partition_counts=self.partition_counts,
            describe=self.describe,
            rejoin=self.rejoins.append,
        )


def view(*members: tuple[str, set[str], list[TP]], state: str = "Stable") -> GroupView:
    return GroupView(state, tuple(DescribedMember(m, m, frozenset(t), tuple(a)) for m, t, a in members))


async def test_computing_leader_snapshots_the_counts_it_assigned_and_rejoins_when_they_change() -> None:
    cluster = FakeCluster(
        {"a": 2, "b": 2}, view(("l", {"a"}, [TP("a", 0), TP("a", 1)]), ("f", {"b"}, [TP("b", 0), TP("b", 1)]))
    )
    duties = cluster.duties(frozenset({"a"}))
    duties.leader_elected(1, frozenset({"a", "b"}), {"a": 2, "b": 2})
    duties.assigned(1, leading=True)
    await duties.step()
    assert cluster.rejoins == [], "the audit finds every partition owned"
    cluster.counts["b"] = 3  # a topic only the follower subscribes to grows
    await duties.step()
    assert cluster.rejoins == ["metadata changed: b went from 2 to 3 partitions"]


async def test_skipping_leader_learns_every_members_topics_and_audits_what_grew_while_it_was_down() -> None:
    # The stored assignment predates partition a-2, added while the leader was away.
    cluster = FakeCluster(
        {"a": 3, "b": 1}, view(("l", {"a"}, [TP("a", 0)]), ("f", {"a", "b"}, [TP("a", 1), TP("b", 0)]))
    )
    duties = cluster.duties(frozenset({"a"}))
    duties.leader_elected(7, frozenset(), None)  # SkipAssignment: nothing computed, no members decoded
    await duties.step()  # snapshot: describe + metadata
    assert duties.watch is not None
    assert duties.watch.watched == {"a", "b"}
    assert duties.watch.snapshot == {"a": 3, "b": 1}
    duties.assigned(7, leading=True)
    await duties.step()
    assert cluster.rejoins == ["1 subscribed partitions owned by no member: a-2"]


async def test_follower_audits_only_its_own_topics_once_per_generation() -> None:
    # The follower restarted subscribing to "new" as well (KAFKA-12759): nobody owns new-0/new-1.
    cluster = FakeCluster(
        {"a": 2, "new": 2, "leaders-only": 4},
        view(("l", {"a", "leaders-only"}, [TP("a", 0)]), ("f", {"a", "new"}, [TP("a", 1)])),
    )
    duties = cluster.duties(frozenset({"a", "new"}))
    duties.assigned(4, leading=False)
    await duties.step()
    assert cluster.rejoins == ["2 subscribed partitions owned by no member: new-0, new-1"]
    assert "leaders-only" not in cluster.rejoins[0], "followers do not police other members' topics"
    duties.assigned(4, leading=False)
    await duties.step()
    assert len(cluster.rejoins) == 1, "one audit per generation"


async def test_no_audit_verdict_while_the_group_is_rebalancing() -> None:
    cluster = FakeCluster({"a": 2}, view(("f", {"a"}, []), state="PreparingRebalance"))
    duties = cluster.duties(frozenset({"a"}))
    duties.assigned(2, leading=False)
    await duties.step()
    assert cluster.rejoins == []


async def test_a_leader_checks_no_metadata_while_the_group_is_rebalancing() -> None:
    """That rebalance assigns from metadata read after it began: a check against the old generation's
    counts would only add a rebalance after it."""
    cluster = FakeCluster({"a": 2}, view(("l", {"a"}, [TP("a", 0), TP("a", 1)]), state="PreparingRebalance"))
    duties = cluster.duties(frozenset({"a"}))
    duties.leader_elected(5, frozenset({"a"}), {"a": 2})
    duties.assigned(5, leading=True)
    cluster.counts["a"] = 3
    await duties.step()
    assert cluster.rejoins == []
    assert cluster.reads == 0


async def test_the_leaders_check_reuses_the_audits_partition_counts() -> None:
    cluster = FakeCluster({"a": 2}, view(("l", {"a"}, [TP("a", 0), TP("a", 1)])))
    duties = cluster.duties(frozenset({"a"}))
    duties.leader_elected(5, frozenset({"a"}), {"a": 2})
    duties.assigned(5, leading=True)
    await duties.step()
    assert cluster.reads == 1, "one Metadata read for the audit and the check"
    assert cluster.rejoins == []


async def test_guessed_leadership_takes_up_the_duties() -> None:
    cluster = FakeCluster(
        {"a": 2, "b": 1}, view(("pod-0-x", {"a"}, [TP("a", 0), TP("a", 1)]), ("f", {"b"}, [TP("b", 0)]))
    )
    duties = cluster.duties(frozenset({"a"}))
    duties.leadership_guessed(5)
    await duties.step()
    assert duties.watch is not None
    assert duties.watch.leader
    assert duties.watch.watched == {"a", "b"}
    duties.assigned(5, leading=True)
    await duties.step()
    assert cluster.rejoins == []
    cluster.counts["b"] = 2
    await duties.step()
    assert cluster.rejoins == ["metadata changed: b went from 1 to 2 partitions"]


async def test_losing_the_generation_stops_the_watch() -> None:
    cluster = FakeCluster({"a": 2}, None)
    duties = cluster.duties(frozenset({"a"}))
    duties.leader_elected(1, frozenset({"a"}), {"a": 2})
    duties.membership_lost()
    cluster.counts["a"] = 5
    await duties.step()
    assert cluster.rejoins == []


async def test_audit_is_skipped_when_describe_fails() -> None:
    cluster = FakeCluster({"a": 2}, None)
    duties = cluster.duties(frozenset({"a"}))
    duties.assigned(1, leading=False)
    await duties.step()
    assert cluster.rejoins == []
    assert cluster.describes == 1


def test_the_last_generations_leader_remembers_what_it_led_across_the_rebalance() -> None:
    """What the loop reads ahead as the member rejoins: kept while the member rebalances (membership is
    lost at an eager revoke), forgotten once it follows a generation."""
    cluster = FakeCluster({"a": 2, "b": 2}, None)
    duties = cluster.duties(frozenset({"a"}))
    assert duties.led == frozenset()
    duties.leader_elected(3, frozenset({"a", "b"}), {"a": 2, "b": 2})
    duties.assigned(3, leading=True)
    duties.membership_lost()
    assert duties.led == {"a", "b"}
    duties.assigned(4, leading=False)
    assert duties.led == frozenset()

"""Cooperative incremental rebalancing (KIP-429) in the classic machine, and the Java client's regressions.

A cooperative member keeps owning and fetching what it holds while the group rebalances; after SyncGroup
it revokes only ``owned - assigned`` (committing them first), hands out only ``assigned - owned``, and
asks for the second rebalance that gives the revoked partitions to their new owner.
"""

from __future__ import annotations

from membership_harness import INSTANCE, UUID22, Harness, kinds, of, offsets, one, tp

from staticconsumer.errors import ErrorCode, FencedInstanceIdError
from staticconsumer.membership import (
    NO_GENERATION,
    GroupProtocol,
    JoinGroupMember,
    MemberState,
    RebalanceProtocol,
    ReleaseReason,
)
from staticconsumer.membership import actions as act
from staticconsumer.membership import events as ev
from staticconsumer.membership.observe import Joined, JoinStarted

STATIC_ID = f"{INSTANCE}-{UUID22}"
COOPERATIVE = RebalanceProtocol.COOPERATIVE
T0, T1, T2, T3 = (tp("t", p) for p in range(4))


def cooperative(**overrides: object) -> Harness:
    return Harness(rebalance_protocol=COOPERATIVE, **overrides)  # type: ignore[arg-type]


def stable(h: Harness, *partitions: object, generation: int = 1) -> None:
    h.become_stable(partitions=partitions or (T0, T1), generation=generation)  # type: ignore[arg-type]


def rejoin(h: Harness, reason: str = "a member joined") -> act.SendJoinGroup:
    out = h.feed(ev.RequestRejoin, reason=reason)
    return one(out, act.SendJoinGroup)


def sync(h: Harness, join: act.SendJoinGroup, *partitions: object, generation: int) -> list[act.Action]:
    sent = one(h.join_answer(join, generation=generation, member_id=STATIC_ID), act.SendSyncGroup)
    return h.sync_answer(sent, partitions=partitions)  # type: ignore[arg-type]


# ---------------------------------------------------------------- before the join


def test_a_cooperative_member_rejoins_without_revoking_and_keeps_fetching() -> None:
    h = cooperative()
    stable(h, T0, T1, generation=3)
    out = h.feed(ev.RequestRejoin, reason="a member joined")
    assert kinds(out) == ["SendJoinGroup"], "no StopFetching, no revoke callback before the join"
    assert h.m.assignment == {T0, T1}, "still owned while the group rebalances"
    assert h.m.generation == 3, "the subscription says which generation the partitions are from"
    assert h.state() is MemberState.PREPARING_REBALANCE


def test_an_eager_member_still_revokes_everything_before_the_join() -> None:
    h = Harness()
    stable(h, T0, T1)
    out = h.feed(ev.RequestRejoin, reason="r")
    assert kinds(out) == ["StopFetching", "PartitionsRevoked"]
    assert one(out, act.StopFetching).partitions is None
    assert one(out, act.PartitionsRevoked).partitions == {T0, T1}


def test_only_partitions_of_topics_no_longer_subscribed_are_revoked_before_the_join() -> None:
    h = cooperative()
    join = one(h.coordinator_found(h.start((GroupProtocol("range", b"t,u"),))), act.SendJoinGroup)
    sync_request = one(h.join_answer(join, member_id=STATIC_ID), act.SendSyncGroup)
    h.finish_callback(one(h.sync_answer(sync_request, partitions=[T0, tp("u", 0)]), act.PartitionsAssigned))

    out = h.feed(ev.UpdateProtocols, protocols=(GroupProtocol("range", b"t"),), reason="unsubscribed u")
    assert kinds(out) == ["StopFetching", "PartitionsRevoked"]
    assert one(out, act.StopFetching).partitions == {tp("u", 0)}, "t keeps fetching"
    revoked = one(out, act.PartitionsRevoked)
    assert revoked.partitions == {tp("u", 0)}

    out = h.finish_callback(revoked, u0=42)
    assert kinds(out) == ["SendOffsetCommit", "SendJoinGroup"], "the commit goes first, the join right after"
    send = one(out, act.SendOffsetCommit)
    assert send.offsets == offsets(u0=42), "the revoked partition's position is committed first"
    assert one(out, act.SendJoinGroup).reason == "unsubscribed u"
    assert h.m.assignment == {T0}
    assert kinds(h.commit_answer(send)) == ["CommitCompleted"]


def test_nothing_is_revoked_before_the_join_when_every_owned_topic_is_still_subscribed() -> None:
    h = cooperative()
    stable(h, T0)
    out = h.feed(ev.UpdateProtocols, protocols=(GroupProtocol("range", b"t,v"),), reason="subscribed v")
    assert kinds(out) == ["SendJoinGroup"]


# ---------------------------------------------------------------- after SyncGroup


def test_after_sync_only_the_delta_is_revoked_committed_and_assigned_then_the_member_rejoins() -> None:
    h = cooperative()
    stable(h, T0, T1, generation=1)
    out = sync(h, rejoin(h), T1, T2, generation=2)
    assert kinds(out) == ["StopFetching", "PartitionsRevoked"], "revoke first; the assignment waits"
    assert one(out, act.StopFetching).partitions == {T0}, "only the moved partition stops"
    revoked = one(out, act.PartitionsRevoked)
    assert (revoked.partitions, revoked.reason) == ({T0}, ReleaseReason.REBALANCE)
    assert h.state() is MemberState.STABLE

    send = one(h.finish_callback(revoked, t0=17), act.SendOffsetCommit)
    assert (send.generation, send.member_id, send.offsets) == (2, STATIC_ID, offsets(t0=17))
    assert h.m.assignment == {T1}

    out = h.commit_answer(send)
    assert kinds(out) == ["CommitCompleted", "PartitionsAssigned"]
    assigned = one(out, act.PartitionsAssigned)
    assert assigned.partitions == {T2}, "the listener hears only of what is new"
    assert assigned.owned == {T1, T2}
    assert assigned.generation == 2

    out = h.finish_callback(assigned)
    join = one(out, act.SendJoinGroup)
    assert "revoke" in join.reason, "the second rebalance hands the revoked partition to its new owner"
    assert h.m.assignment == {T1, T2}


def test_an_assignment_that_only_adds_is_handed_out_at_once_and_needs_no_second_rebalance() -> None:
    h = cooperative()
    stable(h, T0, generation=1)
    out = sync(h, rejoin(h), T0, T3, generation=2)
    assert kinds(out) == ["PartitionsAssigned"]
    assigned = one(out, act.PartitionsAssigned)
    assert (assigned.partitions, assigned.owned) == ({T3}, {T0, T3})
    out = h.finish_callback(assigned)
    assert not of(out, act.SendJoinGroup)
    assert not h.m.rejoin_needed
    assert not h.sent(act.StopFetching)
    assert not h.sent(act.PartitionsRevoked)


def test_an_unchanged_assignment_tells_the_listener_nothing_new_and_touches_nothing() -> None:
    h = cooperative()
    stable(h, T0, T1, generation=4)
    out = sync(h, rejoin(h), T0, T1, generation=5)
    assigned = one(out, act.PartitionsAssigned)
    assert assigned.partitions == frozenset()
    assert assigned.owned == {T0, T1}
    assert kinds(out) == ["PartitionsAssigned"]


def test_a_revoke_that_returns_no_positions_hands_out_the_assignment_without_a_commit() -> None:
    h = cooperative()
    stable(h, T0, T1)
    revoked = one(sync(h, rejoin(h), T1, generation=2), act.PartitionsRevoked)
    out = h.finish_callback(revoked)
    assert kinds(out) == ["PartitionsAssigned"]
    assert one(out, act.PartitionsAssigned).owned == {T1}


def test_every_partition_revoked_still_keeps_the_member_and_its_leader_duties() -> None:
    """Giving up all it owns after SyncGroup is a partial revoke: named partitions, not 'stop everything'
    (which the runtime reads as 'no generation any more')."""
    h = cooperative()
    stable(h, T0, T1)
    out = sync(h, rejoin(h), generation=2)
    assert one(out, act.StopFetching).partitions == {T0, T1}
    assigned = one(h.finish_callback(one(out, act.PartitionsRevoked)), act.PartitionsAssigned)
    assert (assigned.partitions, assigned.owned) == (frozenset(), frozenset())


def test_commits_work_while_the_revoke_callback_runs_in_the_new_generation() -> None:
    h = cooperative()
    stable(h, T0, T1)
    sync(h, rejoin(h), T1, generation=2)
    send = one(h.commit(7, t0=5, t1=9), act.SendOffsetCommit)
    assert send.generation == 2


# ---------------------------------------------------------------- lost stays lost


def test_a_reset_generation_reports_everything_lost_before_rejoining_and_commits_nothing() -> None:
    h = cooperative()
    stable(h, T0, T1)
    out = h.feed(ev.HeartbeatResponse, token=h.heartbeat_due().token, error_code=ErrorCode.ILLEGAL_GENERATION)
    assert kinds(out) == ["StopFetching", "PartitionsLost"]
    lost = one(out, act.PartitionsLost)
    assert (lost.partitions, lost.reason) == ({T0, T1}, ReleaseReason.MEMBERSHIP_LOST)
    out = h.finish_callback(lost, t0=1, t1=2)
    assert kinds(out) == ["SendJoinGroup"], "lost partitions are never committed"
    assert h.m.assignment == frozenset()
    assert h.m.generation == NO_GENERATION, "the next subscription claims nothing, from no generation"


def test_max_poll_interval_loses_everything_under_cooperative_too() -> None:
    h = cooperative(max_poll_interval_ms=5_000)
    stable(h, T0)
    out = h.live_until(h.now + 6.0)
    lost = one(out, act.PartitionsLost)
    assert (lost.partitions, lost.reason) == ({T0}, ReleaseReason.POLL_TIMEOUT)


def test_fencing_reports_lost_and_ends_the_member() -> None:
    h = cooperative()
    stable(h, T0)
    join = rejoin(h)
    out = h.join_answer(join, ErrorCode.FENCED_INSTANCE_ID)
    assert kinds(out)[:2] == ["StopFetching", "PartitionsLost"]
    assert isinstance(one(out, act.Fatal).error, FencedInstanceIdError)


def test_a_generation_reset_during_the_revoke_callback_drops_the_pending_assignment() -> None:
    h = cooperative()
    stable(h, T0, T1)
    revoked = one(sync(h, rejoin(h), T1, T2, generation=2), act.PartitionsRevoked)
    h.feed(ev.HeartbeatResponse, token=h.heartbeat_due().token, error_code=ErrorCode.UNKNOWN_MEMBER_ID)
    out = h.finish_callback(revoked, t0=3)
    assert not of(out, act.PartitionsAssigned), "T2 belongs to a generation this member is no longer in"
    assert not of(out, act.SendOffsetCommit), "no commit without a generation"
    lost = one(out, act.PartitionsLost)
    assert lost.partitions == {T1}, "what it kept is lost: another member may own it now"


# ---------------------------------------------------------------- stop


def test_stop_in_a_stable_generation_revokes_and_commits_everything() -> None:
    h = cooperative()
    stable(h, T0, T1)
    out = h.feed(ev.Stop, leave_group=True)
    revoked = one(out, act.PartitionsRevoked)
    assert (revoked.partitions, revoked.reason) == ({T0, T1}, ReleaseReason.STOP)
    send = one(h.finish_callback(revoked, t0=1, t1=2), act.SendOffsetCommit)
    out = h.commit_answer(send)
    leave = one(out, act.SendLeaveGroup)
    assert leave.members[0].group_instance_id == INSTANCE


def test_stop_while_the_group_rebalances_reports_the_partitions_lost() -> None:
    """Java's onLeavePrepare: the generation is in flux, so nothing can be committed for them."""
    h = cooperative()
    stable(h, T0, T1)
    rejoin(h)
    out = h.feed(ev.Stop, leave_group=False)
    lost = one(out, act.PartitionsLost)
    assert (lost.partitions, lost.reason) == ({T0, T1}, ReleaseReason.STOP)
    out = h.finish_callback(lost, t0=1)
    assert not of(out, act.SendOffsetCommit)
    assert kinds(out) == ["Stopped"]


def test_stop_with_nothing_owned_runs_no_callback() -> None:
    h = cooperative()
    h.become_stable(partitions=())
    out = h.feed(ev.Stop, leave_group=False)
    assert kinds(out) == ["Stopped"]


def test_stop_during_the_revoke_after_sync_never_hands_out_the_new_partitions() -> None:
    h = cooperative()
    stable(h, T0, T1)
    revoked = one(sync(h, rejoin(h), T1, T2, generation=2), act.PartitionsRevoked)
    h.feed(ev.Stop, leave_group=False)
    out = h.finish_callback(revoked)
    assert not of(out, act.PartitionsAssigned)
    final = one(out, act.PartitionsRevoked)
    assert (final.partitions, final.reason) == ({T1}, ReleaseReason.STOP)


# ---------------------------------------------------------------- static membership, leader


def test_a_static_restart_gets_its_old_assignment_with_no_revoke_and_no_rebalance() -> None:
    h = cooperative()
    join = h.start_until_join()
    out = sync(h, join, T0, T1, generation=7)
    assigned = one(out, act.PartitionsAssigned)
    assert (assigned.partitions, assigned.owned) == ({T0, T1}, {T0, T1})
    assert kinds(h.finish_callback(assigned)) == []
    assert not h.m.rejoin_needed


def test_a_returning_static_leader_that_skips_the_assignment_keeps_it_all() -> None:
    h = cooperative()
    join = h.start_until_join()
    members = (JoinGroupMember(member_id=STATIC_ID, group_instance_id=INSTANCE, metadata=b"t"),)
    out = h.join_answer(join, member_id=STATIC_ID, leader_id=STATIC_ID, members=members, skip_assignment=True)
    assert one(out, act.LeaderElected).skip_assignment
    send = one(out, act.SendSyncGroup)
    assert send.assignments == ()
    assigned = one(h.sync_answer(send, partitions=[T0, T1]), act.PartitionsAssigned)
    assert assigned.partitions == {T0, T1}
    assert not h.m.rejoin_needed


def test_milestones_name_the_rebalance_protocol() -> None:
    h = cooperative()
    join = h.start_until_join()
    assert one(h.m.milestones, JoinStarted).rebalance_protocol == "cooperative"  # type: ignore[arg-type]
    h.join_answer(join, member_id=STATIC_ID)
    assert one(h.m.milestones, Joined).rebalance_protocol == "cooperative"  # type: ignore[arg-type]
    assert h.m.rebalance_protocol is COOPERATIVE


# ---------------------------------------------------------------- regressions the Java client had


def test_kafka_14016_rebalance_in_progress_during_sync_revokes_nothing_beyond_the_plan() -> None:
    """KAFKA-14016: a SyncGroup answered REBALANCE_IN_PROGRESS must not reset the generation (which made
    the next join give everything up as lost); only what the next plan moves is revoked."""
    h = cooperative()
    stable(h, T0, T1, T2, generation=1)
    join = rejoin(h)
    sent = one(h.join_answer(join, generation=2, member_id=STATIC_ID), act.SendSyncGroup)
    out = h.sync_answer(sent, ErrorCode.REBALANCE_IN_PROGRESS)
    second = one(out, act.SendJoinGroup)
    assert kinds(out) == ["SendJoinGroup"], "rejoin at once, nothing revoked or lost"
    assert h.m.assignment == {T0, T1, T2}
    assert h.m.generation == 2, "the generation is kept, so the claims are not thrown away"

    out = sync(h, second, T0, T1, generation=3)
    revoked = one(out, act.PartitionsRevoked)
    assert revoked.partitions == {T2}, "exactly what the plan moves"
    assert not [a for a in h.history if isinstance(a, act.PartitionsLost)]


def test_kafka_14639_a_member_that_missed_a_round_revokes_only_what_the_next_plan_moves() -> None:
    """KAFKA-14639: after missing a generation (SyncGroup REBALANCE_IN_PROGRESS twice) the member still
    claims what it holds; when the plan gives one of them away, that one is revoked and a second rebalance
    requested, never reassigned by this member in the same round."""
    h = cooperative()
    stable(h, T0, T1, generation=1)
    join = rejoin(h)
    for generation in (2, 3):
        sent = one(h.join_answer(join, generation=generation, member_id=STATIC_ID), act.SendSyncGroup)
        join = one(h.sync_answer(sent, ErrorCode.REBALANCE_IN_PROGRESS), act.SendJoinGroup)
    assert h.m.assignment == {T0, T1}
    out = sync(h, join, T0, T2, generation=4)
    assert one(out, act.PartitionsRevoked).partitions == {T1}
    assert not of(out, act.PartitionsAssigned), "T2 waits until T1 is given up"
    assigned = one(h.finish_callback(one(out, act.PartitionsRevoked)), act.PartitionsAssigned)
    assert (assigned.partitions, assigned.owned) == ({T2}, {T0, T2})
    assert h.m.rejoin_needed


def test_kafka_12984_a_member_never_claims_partitions_of_a_generation_it_lost() -> None:
    """KAFKA-12984: stale ownedPartitions. A member whose generation was reset (here: SyncGroup
    ILLEGAL_GENERATION) gives them up as lost before it rejoins, so its next subscription claims nothing
    and says generation -1; the runtime encodes ``assignment`` and ``generation`` at JoinGroup time."""
    h = cooperative()
    stable(h, T0, T1, generation=5)
    join = rejoin(h)
    sent = one(h.join_answer(join, generation=6, member_id=STATIC_ID), act.SendSyncGroup)
    out = h.sync_answer(sent, ErrorCode.ILLEGAL_GENERATION)
    lost = one(out, act.PartitionsLost)
    assert lost.partitions == {T0, T1}
    out = h.finish_callback(lost)
    assert kinds(out) == ["SendJoinGroup"]
    assert (h.m.assignment, h.m.generation) == (frozenset(), NO_GENERATION)

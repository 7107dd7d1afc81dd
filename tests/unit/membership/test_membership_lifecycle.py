"""Eager rebalance, shutdown with and without LeaveGroup, and max.poll.interval expiry."""

from __future__ import annotations

import pytest
from membership_harness import INSTANCE, UUID22, Harness, kinds, of, offsets, one, tp

from staticconsumer.errors import ErrorCode, FencedInstanceIdError
from staticconsumer.membership import FailureKind, MemberState, ReleaseReason, RequestToken
from staticconsumer.membership import actions as act
from staticconsumer.membership import events as ev

STATIC_ID = f"{INSTANCE}-{UUID22}"


# ---------------------------------------------------------------- eager rebalance


def test_eager_rebalance_revokes_then_sends_the_commit_and_the_join_back_to_back() -> None:
    h = Harness()
    h.become_stable(partitions=[tp("t", 0), tp("t", 1)], generation=3)
    out = h.feed(ev.RequestRejoin, reason="partition count of t changed")
    assert kinds(out) == ["StopFetching", "PartitionsRevoked"]
    revoked = one(out, act.PartitionsRevoked)
    assert revoked.partitions == {tp("t", 0), tp("t", 1)}
    assert revoked.reason is ReleaseReason.REBALANCE
    assert h.m.assignment == {tp("t", 0), tp("t", 1)}, "still owned while the callback runs"

    out = h.finish_callback(revoked, t0=11, t1=22)
    assert kinds(out) == ["SendOffsetCommit", "SendJoinGroup"], "the commit first, the join right after it"
    send = one(out, act.SendOffsetCommit)
    assert (send.commit_id, send.generation, send.member_id) == (None, 3, STATIC_ID)
    assert send.offsets == offsets(t0=11, t1=22)
    join = one(out, act.SendJoinGroup)
    assert join.reason == "partition count of t changed"
    assert join.member_id == STATIC_ID
    assert h.m.assignment == frozenset()

    assert kinds(h.commit_answer(send)) == ["CommitCompleted"], "answered while the join is out"


def test_failed_rebalance_commit_is_reported_and_the_join_it_preceded_goes_on() -> None:
    h = Harness()
    h.become_stable()
    h.feed(ev.RequestRejoin, reason="r")
    out = h.finish_callback(one(h.history, act.PartitionsRevoked), t0=1)
    send, join = one(out, act.SendOffsetCommit), one(out, act.SendJoinGroup)
    done = one(h.commit_answer(send, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS), act.CommitCompleted)
    assert done.error is not None
    sync = one(h.join_answer(join, generation=2, member_id=STATIC_ID), act.SendSyncGroup)
    assert sync.generation == 2


@pytest.mark.parametrize(
    "code",
    [ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID],
)
def test_a_pre_join_commit_refused_while_its_join_is_out_leaves_the_join_to_decide(code: int) -> None:
    """The JoinGroup went out right behind the commit: its answer says where the member stands, so the
    commit's answer neither resets the member nor asks for another rebalance after this one."""
    h = Harness()
    h.become_stable(generation=3)
    h.feed(ev.RequestRejoin, reason="r")
    out = h.finish_callback(one(h.history, act.PartitionsRevoked), t0=5)
    send, join = one(out, act.SendOffsetCommit), one(out, act.SendJoinGroup)
    done = one(h.commit_answer(send, code), act.CommitCompleted)
    assert done.error is not None, "the failed commit is still reported"
    assert h.state() == MemberState.PREPARING_REBALANCE
    sync = one(h.join_answer(join, generation=4, member_id=STATIC_ID), act.SendSyncGroup)
    h.finish_callback(one(h.sync_answer(sync, partitions=[tp("t", 0)]), act.PartitionsAssigned))
    assert h.state() == MemberState.STABLE
    assert not h.m.rejoin_needed, "no second rebalance for an answer the join overtook"


def test_a_pre_join_commit_to_a_coordinator_that_moved_still_marks_it_unknown() -> None:
    h = Harness()
    h.become_stable()
    h.feed(ev.RequestRejoin, reason="r")
    out = h.finish_callback(one(h.history, act.PartitionsRevoked), t0=5)
    out = h.commit_answer(one(out, act.SendOffsetCommit), ErrorCode.NOT_COORDINATOR)
    assert of(out, act.DisconnectCoordinator)


def test_stop_during_the_pre_join_commit_waits_for_its_answer() -> None:
    h = Harness()
    h.become_stable()
    h.feed(ev.RequestRejoin, reason="r")
    send = one(h.finish_callback(one(h.history, act.PartitionsRevoked), t0=5), act.SendOffsetCommit)
    assert not of(h.feed(ev.Stop), act.Stopped), "the commit is still out"
    assert of(h.commit_answer(send), act.CommitCompleted)


def test_revoke_without_offsets_joins_at_once() -> None:
    h = Harness()
    h.become_stable()
    h.feed(ev.RequestRejoin, reason="r")
    out = h.finish_callback(one(h.history, act.PartitionsRevoked))
    assert kinds(out) == ["SendJoinGroup"]


def test_rebalance_commit_skips_offsets_that_would_move_backwards() -> None:
    h = Harness()
    h.become_stable()
    h.commit_answer(one(h.commit(1, t0=50), act.SendOffsetCommit))
    h.feed(ev.RequestRejoin, reason="r")
    send = one(h.finish_callback(one(h.history, act.PartitionsRevoked), t0=40, t1=7), act.SendOffsetCommit)
    assert send.offsets == offsets(t1=7)


def test_rebalance_commit_with_only_backwards_offsets_is_skipped() -> None:
    h = Harness()
    h.become_stable()
    h.commit_answer(one(h.commit(1, t0=50), act.SendOffsetCommit))
    h.feed(ev.RequestRejoin, reason="r")
    out = h.finish_callback(one(h.history, act.PartitionsRevoked), t0=40)
    assert kinds(out) == ["SendJoinGroup"]


def test_rejoin_requested_during_sync_happens_after_the_assignment() -> None:
    """The leader computed with old metadata, so a change seen meanwhile needs another round."""
    h = Harness()
    join = h.start_until_join()
    sync = one(h.join_answer(join, member_id=STATIC_ID), act.SendSyncGroup)
    assert h.feed(ev.RequestRejoin, reason="metadata changed") == []
    assigned = one(h.sync_answer(sync, partitions=[tp("t", 0)]), act.PartitionsAssigned)
    out = h.finish_callback(assigned)
    assert kinds(out) == ["StopFetching", "PartitionsRevoked"]
    assert (
        one(h.finish_callback(one(out, act.PartitionsRevoked)), act.SendJoinGroup).reason
        == "metadata changed"
    )


def test_update_protocols_rejoins_with_the_new_subscription() -> None:
    """Issue 5b hook: a changed subscription must reach the group through a new JoinGroup."""
    from staticconsumer.membership import GroupProtocol

    h = Harness()
    h.become_stable()
    new = (GroupProtocol("range", b"t,new-topic"),)
    h.feed(ev.UpdateProtocols, protocols=new, reason="subscription changed")
    join = one(h.finish_callback(one(h.history, act.PartitionsRevoked)), act.SendJoinGroup)
    assert join.protocols == new
    assert join.reason == "subscription changed"


def test_no_second_rejoin_while_a_callback_is_running() -> None:
    h = Harness()
    h.become_stable()
    h.feed(ev.RequestRejoin, reason="a")
    assert h.feed(ev.RequestRejoin, reason="b") == []
    assert h.advance(5.0) == [one(h.history[-1:], act.SendHeartbeat)]
    assert len(h.sent(act.PartitionsRevoked)) == 1


# ---------------------------------------------------------------- shutdown


def test_static_stop_revokes_commits_and_sends_no_leave_group() -> None:
    """Issue 4 item 6: a restart within the session timeout then gets its partitions back."""
    h = Harness()
    h.become_stable(partitions=[tp("t", 0)])
    out = h.feed(ev.Stop, leave_group=False)
    revoked = one(out, act.PartitionsRevoked)
    assert revoked.reason is ReleaseReason.STOP
    assert h.state() is MemberState.STOPPING
    send = one(h.finish_callback(revoked, t0=99), act.SendOffsetCommit)
    assert send.group_instance_id == INSTANCE
    out = h.commit_answer(send)
    assert kinds(out) == ["CommitCompleted", "Stopped"]
    assert one(out, act.Stopped).error is None
    assert not h.sent(act.SendLeaveGroup)
    assert h.state() is MemberState.STOPPED
    assert h.run_until(h.now + 600.0) == []


def test_static_stop_with_leave_group_names_the_instance_id_and_a_reason() -> None:
    h = Harness()
    h.become_stable()
    h.feed(ev.Stop, leave_group=True)
    out = h.finish_callback(one(h.history, act.PartitionsRevoked))
    leave = one(out, act.SendLeaveGroup)
    assert leave.members == (
        act.LeaveGroupIdentity(
            member_id=STATIC_ID, group_instance_id=INSTANCE, reason="the consumer is being closed"
        ),
    )
    assert not of(out, act.Stopped), "waits for the LeaveGroup answer (the driver bounds it)"
    assert kinds(h.feed(ev.LeaveGroupResponse, token=leave.token)) == ["Stopped"]


def test_static_leave_group_finds_the_coordinator_first_when_unknown() -> None:
    h = Harness()
    h.become_stable(partitions=[])
    h.feed(ev.CoordinatorDisconnected)
    lookup = of(h.history, act.FindCoordinator)[-1]
    h.feed(ev.Stop, leave_group=True)
    out = h.finish_callback(of(h.history, act.PartitionsRevoked)[-1])
    assert out == []
    leave = one(h.coordinator_found(lookup), act.SendLeaveGroup)
    assert leave.members[0].group_instance_id == INSTANCE


def test_leave_group_answer_that_fails_still_completes_the_stop() -> None:
    """testCloseNoResponseForLeaveGroup: best effort, never resent."""
    h = Harness(instance_id=None)
    h.become_stable(member_id="m-1")
    h.feed(ev.Stop)
    leave = one(h.finish_callback(one(h.history, act.PartitionsRevoked)), act.SendLeaveGroup)
    out = h.feed(ev.RequestFailed, token=leave.token, kind=FailureKind.TIMED_OUT)
    assert kinds(out) == ["Stopped"]
    assert len(h.sent(act.SendLeaveGroup)) == 1


def test_leave_group_error_code_still_completes_the_stop() -> None:
    h = Harness()
    h.become_stable()
    h.feed(ev.Stop, leave_group=True)
    leave = one(h.finish_callback(one(h.history, act.PartitionsRevoked)), act.SendLeaveGroup)
    out = h.feed(ev.LeaveGroupResponse, token=leave.token, error_code=ErrorCode.FENCED_INSTANCE_ID)
    assert kinds(out) == ["Stopped"]


def test_dynamic_stop_sends_leave_group_without_instance_id() -> None:
    """testCloseDynamicAssignment; testLeaveGroupSentWithGroupInstanceIdUnSet."""
    h = Harness(instance_id=None)
    h.become_stable(member_id="m-1")
    h.feed(ev.Stop)
    leave = one(h.finish_callback(one(h.history, act.PartitionsRevoked)), act.SendLeaveGroup)
    assert leave.members == (
        act.LeaveGroupIdentity(
            member_id="m-1", group_instance_id=None, reason="the consumer is being closed"
        ),
    )
    assert kinds(h.feed(ev.LeaveGroupResponse, token=leave.token)) == ["Stopped"]


def test_dynamic_stop_commits_before_leaving() -> None:
    h = Harness(instance_id=None)
    h.become_stable(member_id="m-1")
    h.feed(ev.Stop)
    h.commit(5)  # nothing; keep the ids apart
    out = h.finish_callback(one(h.history, act.PartitionsRevoked), t1=8)
    send = one(out, act.SendOffsetCommit)
    assert not of(out, act.SendLeaveGroup)
    assert of(h.commit_answer(send), act.SendLeaveGroup)


def test_pending_member_that_stops_still_leaves_with_its_member_id() -> None:
    """testPendingMemberShouldLeaveGroup."""
    h = Harness(instance_id=None)
    join = h.start_until_join()
    h.join_answer(join, ErrorCode.MEMBER_ID_REQUIRED, member_id="pending-1")
    leave = one(h.feed(ev.Stop), act.SendLeaveGroup)
    assert leave.members[0].member_id == "pending-1"


def test_dynamic_member_without_member_id_or_coordinator_sends_no_leave() -> None:
    h = Harness(instance_id=None)
    h.start()
    assert kinds(h.feed(ev.Stop)) == ["Stopped"]
    h2 = Harness(instance_id=None)
    h2.become_stable(member_id="m-1", partitions=[])
    h2.feed(ev.CoordinatorDisconnected)
    h2.feed(ev.Stop)
    assert kinds(h2.finish_callback(of(h2.history, act.PartitionsRevoked)[-1])) == ["Stopped"]
    assert not h2.sent(act.SendLeaveGroup)


def test_stop_while_joining_ignores_the_late_join_answer() -> None:
    h = Harness()
    join = h.start_until_join()
    assert kinds(h.feed(ev.Stop)) == ["Stopped"]
    assert h.join_answer(join, member_id=STATIC_ID) == []
    assert not h.sent(act.SendSyncGroup)


def test_stop_before_start_and_stop_twice() -> None:
    h = Harness()
    assert kinds(h.feed(ev.Stop)) == ["Stopped"]
    assert kinds(h.feed(ev.Stop)) == ["Stopped"]


def test_stop_after_fencing_reports_the_fenced_error() -> None:
    h = Harness()
    join = h.start_until_join()
    h.join_answer(join, ErrorCode.FENCED_INSTANCE_ID)
    stopped = one(h.feed(ev.Stop), act.Stopped)
    assert isinstance(stopped.error, FencedInstanceIdError)


def test_fenced_during_the_stop_commit_ends_the_stop_with_the_error() -> None:
    h = Harness()
    h.become_stable()
    h.feed(ev.Stop)
    send = one(h.finish_callback(one(h.history, act.PartitionsRevoked), t0=1), act.SendOffsetCommit)
    out = h.commit_answer(send, ErrorCode.FENCED_INSTANCE_ID)
    assert isinstance(one(out, act.Stopped).error, FencedInstanceIdError)
    assert h.m.state is MemberState.FENCED


def test_no_heartbeats_while_stopping() -> None:
    h = Harness()
    h.become_stable()
    h.feed(ev.Stop)
    assert not of(h.run_until(h.now + 30.0), act.SendHeartbeat)


def test_a_later_leave_request_upgrades_a_stop_still_in_progress() -> None:
    h = Harness()
    h.become_stable()
    h.feed(ev.Stop)
    h.feed(ev.Stop, leave_group=True)
    assert of(h.finish_callback(one(h.history, act.PartitionsRevoked)), act.SendLeaveGroup)


# ---------------------------------------------------------------- max.poll.interval


def test_static_member_that_stops_polling_drops_its_member_id_without_leave_group() -> None:
    """Issue 4 item 8; reference 3.5."""
    h = Harness()  # max.poll.interval 60 s
    h.become_stable(partitions=[tp("t", 0)])
    out = h.live_until(h.now + 60.0)
    lost = one(out, act.PartitionsLost)
    assert lost.reason is ReleaseReason.POLL_TIMEOUT
    assert lost.partitions == {tp("t", 0)}
    assert not of(out, act.SendLeaveGroup)
    assert h.m.member_id == ""
    assert h.m.state is MemberState.UNJOINED
    assert not of(h.finish_callback(lost), act.SendJoinGroup), "no rejoin until the application polls"
    assert not of(h.live_until(h.now + 120.0), act.SendJoinGroup)
    join = one(h.feed(ev.PollCalled), act.SendJoinGroup)
    assert join.member_id == "", "rejoins as its own replacement"
    assert join.group_instance_id == INSTANCE
    assert join.reason == "consumer poll timeout has expired"
    assert not h.sent(act.SendLeaveGroup)


def test_dynamic_member_that_stops_polling_leaves_the_group_and_rejoins_on_poll() -> None:
    h = Harness(instance_id=None)
    h.become_stable(member_id="m-1", partitions=[tp("t", 0)])
    out = h.live_until(h.now + 60.0)
    leave = one(out, act.SendLeaveGroup)
    assert leave.members == (
        act.LeaveGroupIdentity(
            member_id="m-1", group_instance_id=None, reason="consumer poll timeout has expired"
        ),
    )
    h.finish_callback(one(out, act.PartitionsLost))
    h.feed(ev.LeaveGroupResponse, token=leave.token)
    assert one(h.feed(ev.PollCalled), act.SendJoinGroup).member_id == ""


def test_polling_keeps_the_member_in_the_group() -> None:
    h = Harness()
    h.become_stable()
    for _ in range(20):
        h.live_until(h.now + 30.0)
        h.feed(ev.PollCalled)
    assert h.m.state is MemberState.STABLE
    assert not h.sent(act.PartitionsLost)


def test_poll_timer_restarts_when_a_join_completes() -> None:
    h = Harness()
    join = h.start_until_join()
    h.now += 59.0  # the application never polled while the join was parked
    sync = one(h.join_answer(join, member_id=STATIC_ID), act.SendSyncGroup)
    h.sync_answer(sync)
    deadline = h.now + 60.0
    assert not of(h.run_until(deadline - 0.5), act.PartitionsLost)
    assert h.m.state is MemberState.STABLE


def test_a_poll_after_fencing_raises_instead_of_rejoining() -> None:
    h = Harness()
    h.become_stable()
    hb = h.heartbeat_due()
    h.feed(ev.HeartbeatResponse, token=hb.token, error_code=ErrorCode.FENCED_INSTANCE_ID)
    out = h.feed(ev.PollCalled)
    assert kinds(out) == ["Fatal"]


@pytest.mark.parametrize("leave_group", [False, True])
def test_static_member_never_leaves_on_its_own(leave_group: bool) -> None:
    h = Harness()
    h.become_stable()
    h.live_until(h.now + 60.0)  # poll timeout
    h.finish_callback(of(h.history, act.PartitionsLost)[-1])
    h.feed(ev.PollCalled)  # the rejoin (member id "") is now in flight
    h.feed(ev.Stop, leave_group=leave_group)
    assert bool(h.sent(act.SendLeaveGroup)) is leave_group


def test_static_leave_after_a_local_reset_names_the_last_member_id_it_held() -> None:
    """After a poll timeout the id is dropped locally, but the broker still maps our instance to it."""
    h = Harness()
    h.become_stable()
    h.live_until(h.now + 60.0)
    h.finish_callback(of(h.history, act.PartitionsLost)[-1])
    assert h.m.member_id == ""
    leave = one(h.feed(ev.Stop, leave_group=True), act.SendLeaveGroup)
    assert leave.members[0].member_id == STATIC_ID
    assert leave.members[0].group_instance_id == INSTANCE


def test_static_member_that_never_joined_has_nothing_to_leave() -> None:
    """An empty member id would remove whichever process holds the instance id now."""
    h = Harness()
    h.start_until_join()
    out = h.feed(ev.Stop, leave_group=True)
    assert kinds(out) == ["Stopped"]
    assert not h.sent(act.SendLeaveGroup)


def test_repr_names_what_a_log_reader_needs() -> None:
    h = Harness()
    h.become_stable(generation=9)
    text = repr(h.m)
    for part in ("group='g'", f"instance='{INSTANCE}'", "state=STABLE", "generation=9", STATIC_ID):
        assert part in text


def test_generation_lost_during_the_revoke_callback_skips_the_commit() -> None:
    """The callback's offsets belong to a generation the coordinator just dropped: committing is futile."""
    h = Harness()
    h.become_stable()
    hb = h.heartbeat_due()
    h.feed(ev.RequestRejoin, reason="r")
    revoked = one(h.history, act.PartitionsRevoked)
    h.feed(ev.HeartbeatResponse, token=hb.token, error_code=ErrorCode.UNKNOWN_MEMBER_ID)
    out = h.finish_callback(revoked, t0=10)
    assert kinds(out) == ["SendJoinGroup"]
    assert one(out, act.SendJoinGroup).member_id == ""


def test_coordinator_lost_during_the_revoke_callback_skips_the_commit_and_rediscovers() -> None:
    h = Harness()
    h.become_stable()
    h.feed(ev.RequestRejoin, reason="r")
    revoked = one(h.history, act.PartitionsRevoked)
    lookup = one(h.feed(ev.CoordinatorDisconnected), act.FindCoordinator)
    assert h.finish_callback(revoked, t0=10) == []
    assert one(h.coordinator_found(lookup), act.SendJoinGroup).member_id == STATIC_ID
    assert not h.sent(act.SendOffsetCommit)


def test_dropping_out_with_no_partitions_rejoins_without_a_callback() -> None:
    h = Harness()
    h.become_stable(partitions=[])
    hb = h.heartbeat_due()
    out = h.feed(ev.HeartbeatResponse, token=hb.token, error_code=ErrorCode.UNKNOWN_MEMBER_ID)
    assert kinds(out) == ["SendJoinGroup"]


def test_answers_arriving_after_stop_change_nothing() -> None:
    h = Harness()
    join = h.start_until_join()
    sync = one(h.join_answer(join, member_id=STATIC_ID), act.SendSyncGroup)
    hb = h.heartbeat_due()
    h.feed(ev.Stop)
    assert h.state() is MemberState.STOPPED
    assert h.sync_answer(sync, partitions=[tp("t", 0)]) == []
    assert h.feed(ev.HeartbeatResponse, token=hb.token, error_code=ErrorCode.FENCED_INSTANCE_ID) == []
    assert h.state() is MemberState.STOPPED


def test_start_twice_is_ignored() -> None:
    h = Harness()
    h.start()
    assert h.feed(ev.Start, protocols=()) == []
    assert h.state() is MemberState.UNJOINED


def test_failure_of_an_unknown_request_is_ignored() -> None:
    h = Harness()
    h.become_stable()
    bogus = RequestToken(request_id=12345, generation=1, member_id=STATIC_ID)
    assert h.feed(ev.RequestFailed, token=bogus) == []
    assert h.m.coordinator_known


def test_unrecognised_heartbeat_error_backs_off_and_keeps_the_member() -> None:
    h = Harness()
    h.become_stable()
    hb = h.heartbeat_due()
    assert h.feed(ev.HeartbeatResponse, token=hb.token, error_code=9999) == []
    assert h.state() is MemberState.STABLE

"""SyncGroup and Heartbeat error tables, liveness timers, and the "if gen unchanged" rule."""

from __future__ import annotations

import msgspec
import pytest
from membership_harness import INSTANCE, UUID22, Harness, kinds, of, one, tp

from staticconsumer.errors import (
    ErrorCode,
    FencedInstanceIdError,
    GroupAuthorizationFailedError,
    InconsistentGroupProtocolError,
    UnknownServerError,
)
from staticconsumer.membership import NO_GENERATION, MemberState, ReleaseReason
from staticconsumer.membership import actions as act
from staticconsumer.membership import events as ev

STATIC_ID = f"{INSTANCE}-{UUID22}"


def _completing(h: Harness, generation: int = 3) -> act.SendSyncGroup:
    join = h.start_until_join()
    return one(h.join_answer(join, generation=generation, member_id=STATIC_ID), act.SendSyncGroup)


# ---------------------------------------------------------------- SyncGroup table


def test_sync_success_makes_the_member_stable_and_runs_the_assigned_callback() -> None:
    h = Harness()
    sync = _completing(h)
    out = h.sync_answer(sync, partitions=[tp("t", 2), tp("u", 0)])
    assigned = one(out, act.PartitionsAssigned)
    assert assigned.partitions == {tp("t", 2), tp("u", 0)}
    assert assigned.generation == 3
    assert h.m.state is MemberState.STABLE
    assert h.m.assignment == {tp("t", 2), tp("u", 0)}
    assert not h.m.rejoin_needed


def test_sync_rebalance_in_progress_rejoins_at_once_keeping_identity() -> None:
    h = Harness()
    sync = _completing(h)
    join = one(h.sync_answer(sync, ErrorCode.REBALANCE_IN_PROGRESS), act.SendJoinGroup)
    assert join.member_id == STATIC_ID
    assert h.m.generation == 3, "no reset for REBALANCE_IN_PROGRESS"


def test_sync_unknown_member_resets_generation_and_member_id() -> None:
    h = Harness()
    sync = _completing(h)
    join = one(h.sync_answer(sync, ErrorCode.UNKNOWN_MEMBER_ID), act.SendJoinGroup)
    assert join.member_id == ""
    assert h.m.generation == NO_GENERATION


def test_sync_illegal_generation_resets_generation_but_keeps_member_id() -> None:
    h = Harness()
    sync = _completing(h)
    join = one(h.sync_answer(sync, ErrorCode.ILLEGAL_GENERATION), act.SendJoinGroup)
    assert join.member_id == STATIC_ID
    assert h.m.generation == NO_GENERATION


@pytest.mark.parametrize("code", [ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION])
def test_sync_error_for_an_older_generation_does_not_reset(code: ErrorCode) -> None:
    """testSyncGroupIllegalGenerationResponseWithOldGeneration."""
    h = Harness()
    sync = _completing(h, generation=3)
    stale = msgspec.structs.replace(sync.token, generation=2, member_id="old-id")
    join = one(h.feed(ev.SyncGroupResponse, token=stale, error_code=code), act.SendJoinGroup)
    assert join.member_id == STATIC_ID
    assert h.m.generation == 3


@pytest.mark.parametrize("code", [ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR])
def test_sync_coordinator_errors_rediscover_and_restart_from_join_after_backoff(code: ErrorCode) -> None:
    h = Harness()
    sync = _completing(h)
    out = h.sync_answer(sync, code)
    assert kinds(out) == ["DisconnectCoordinator", "FindCoordinator"]
    h.coordinator_found(one(out, act.FindCoordinator))
    join = one(h.advance(0.1), act.SendJoinGroup)
    assert join.member_id == STATIC_ID


def test_sync_fenced_is_fatal() -> None:
    """testSyncGroupRequestWithFencedInstanceIdException."""
    h = Harness()
    sync = _completing(h)
    fatal = one(h.sync_answer(sync, ErrorCode.FENCED_INSTANCE_ID), act.Fatal)
    assert isinstance(fatal.error, FencedInstanceIdError)
    assert h.m.state is MemberState.FENCED


@pytest.mark.parametrize(
    ("code", "error_type"),
    [
        (ErrorCode.GROUP_AUTHORIZATION_FAILED, GroupAuthorizationFailedError),
        (ErrorCode.UNKNOWN_SERVER_ERROR, UnknownServerError),
    ],
)
def test_sync_other_errors_are_fatal(code: ErrorCode, error_type: type[Exception]) -> None:
    h = Harness()
    sync = _completing(h)
    assert isinstance(one(h.sync_answer(sync, code), act.Fatal).error, error_type)


@pytest.mark.parametrize(
    ("protocol_type", "protocol_name"),
    [("connect", "range"), ("consumer", "roundrobin")],
)
def test_sync_with_inconsistent_protocol_is_fatal(protocol_type: str, protocol_name: str) -> None:
    """testJoinGroupProtocolTypeAndName, SyncGroup side."""
    h = Harness()
    sync = _completing(h)
    out = h.sync_answer(sync, protocol_type=protocol_type, protocol_name=protocol_name)
    assert isinstance(one(out, act.Fatal).error, InconsistentGroupProtocolError)


def test_sync_without_protocol_fields_is_accepted_from_old_versions() -> None:
    h = Harness()
    sync = _completing(h)
    assert of(h.sync_answer(sync, protocol_type=None, protocol_name=None), act.PartitionsAssigned)


def test_unreadable_assignment_is_fatal_rather_than_half_applied() -> None:
    h = Harness()
    sync = _completing(h)
    out = h.feed(ev.SyncGroupResponse, token=sync.token, assignment=b"no-colon-here")
    assert of(out, act.Fatal)
    assert h.m.assignment == frozenset()


def test_sync_success_after_a_heartbeat_reset_does_not_become_stable() -> None:
    """The assignment belongs to a generation we already left, so rejoin instead."""
    h = Harness()
    sync = _completing(h)
    hb = h.heartbeat_due()
    h.feed(ev.HeartbeatResponse, token=hb.token, error_code=ErrorCode.UNKNOWN_MEMBER_ID)
    assert h.m.member_id == ""
    out = h.sync_answer(sync, partitions=[tp("t", 0)])
    assert not of(out, act.PartitionsAssigned)
    assert one(out, act.SendJoinGroup).member_id == ""


# ---------------------------------------------------------------- heartbeat timing


def test_heartbeats_every_interval_while_stable() -> None:
    h = Harness()
    h.become_stable(generation=2)
    start = h.now
    sent_at = []
    for _ in range(3):
        hb = h.heartbeat_due()
        sent_at.append(round(h.now - start, 6))
        assert (hb.generation, hb.member_id, hb.group_instance_id) == (2, STATIC_ID, INSTANCE)
        h.feed(ev.HeartbeatResponse, token=hb.token)
    assert sent_at == [1.0, 2.0, 3.0]


def test_after_a_rejoin_heartbeats_restart_one_interval_from_the_join_answer() -> None:
    """Java's resetTimeouts: the cadence restarts when JoinGroup is answered, not where it was before the
    rebalance. Every member of a generation is answered at once, so they heartbeat together afterwards
    (as aiokafka's, whose heartbeat task restarts after each join); docs/membership.md, Heartbeat timing."""
    h = Harness()
    h.become_stable(generation=2)
    hb = h.heartbeat_due()
    before = h.now
    revoked = one(
        h.feed(ev.HeartbeatResponse, token=hb.token, error_code=ErrorCode.REBALANCE_IN_PROGRESS),
        act.PartitionsRevoked,
    )
    join = one(h.finish_callback(revoked), act.SendJoinGroup)
    assert not of(h.run_until(before + 1.7), act.SendHeartbeat), "no heartbeat while the JoinGroup is out"
    answered = h.now
    one(h.join_answer(join, generation=3, member_id=STATIC_ID), act.SendSyncGroup)
    sent_at = []
    for _ in range(2):
        hb = h.heartbeat_due()
        sent_at.append(round(h.now - answered, 6))
        assert hb.generation == 3
        h.feed(ev.HeartbeatResponse, token=hb.token)
    assert sent_at == [1.0, 2.0], "not 0.3 s after the answer, where the old cadence would have put it"


def test_heartbeats_also_while_waiting_for_sync() -> None:
    h = Harness()
    _completing(h)
    hb = h.heartbeat_due()
    assert hb.generation == 3
    assert h.m.state is MemberState.COMPLETING_REBALANCE


def test_no_heartbeat_before_joining_or_while_a_join_is_in_flight() -> None:
    h = Harness()
    h.start_until_join()
    assert not of(h.run_until(h.now + 30.0), act.SendHeartbeat)


def test_only_one_heartbeat_in_flight() -> None:
    h = Harness()
    h.become_stable()
    h.heartbeat_due()
    assert not of(h.run_until(h.now + 5.0), act.SendHeartbeat)


def test_session_expiry_without_heartbeat_response_marks_coordinator_unknown() -> None:
    h = Harness()  # session 10 s
    h.become_stable()
    h.heartbeat_due()  # never answered
    out = h.run_until(h.now + 10.0)
    assert of(out, act.DisconnectCoordinator)
    assert of(out, act.FindCoordinator)
    assert not h.m.coordinator_known
    assert h.m.state is MemberState.STABLE, "partitions are kept until the coordinator says otherwise"


def test_failed_heartbeat_retries_after_backoff_not_a_whole_interval() -> None:
    h = Harness()
    h.become_stable()
    hb = h.heartbeat_due()
    h.feed(ev.HeartbeatResponse, token=hb.token, error_code=ErrorCode.UNKNOWN_SERVER_ERROR)
    assert h.m.next_deadline() == pytest.approx(h.now + 0.1)
    h.heartbeat_due()


# ---------------------------------------------------------------- heartbeat table


@pytest.mark.parametrize("code", [ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR])
def test_heartbeat_coordinator_errors_rediscover_and_retry_with_backoff(code: ErrorCode) -> None:
    h = Harness()
    h.become_stable()
    hb = h.heartbeat_due()
    out = h.feed(ev.HeartbeatResponse, token=hb.token, error_code=code)
    assert kinds(out) == ["DisconnectCoordinator", "FindCoordinator"]
    h.coordinator_found(one(out, act.FindCoordinator))
    assert one(h.advance(0.1), act.SendHeartbeat).generation == 1
    assert h.m.state is MemberState.STABLE


def test_heartbeat_rebalance_in_progress_while_stable_requests_a_rejoin() -> None:
    h = Harness()
    h.become_stable()
    hb = h.heartbeat_due()
    out = h.feed(ev.HeartbeatResponse, token=hb.token, error_code=ErrorCode.REBALANCE_IN_PROGRESS)
    revoked = one(out, act.PartitionsRevoked)
    assert revoked.reason is ReleaseReason.REBALANCE
    join = one(h.finish_callback(revoked), act.SendJoinGroup)
    assert join.reason == "group is already rebalancing"
    assert join.member_id == STATIC_ID


def test_heartbeat_rebalance_in_progress_while_completing_is_ignored() -> None:
    h = Harness()
    _completing(h)
    hb = h.heartbeat_due()
    assert h.feed(ev.HeartbeatResponse, token=hb.token, error_code=ErrorCode.REBALANCE_IN_PROGRESS) == []
    assert h.m.state is MemberState.COMPLETING_REBALANCE


def test_heartbeat_rebalance_in_progress_counts_as_a_successful_heartbeat() -> None:
    h = Harness()
    _completing(h)
    for _ in range(15):  # 15 s > 10 s session, all answered REBALANCE_IN_PROGRESS
        hb = h.heartbeat_due()
        h.feed(ev.HeartbeatResponse, token=hb.token, error_code=ErrorCode.REBALANCE_IN_PROGRESS)
    assert h.m.coordinator_known


@pytest.mark.parametrize(
    ("code", "keeps_member_id"),
    [(ErrorCode.ILLEGAL_GENERATION, True), (ErrorCode.UNKNOWN_MEMBER_ID, False)],
)
def test_heartbeat_membership_errors_lose_partitions_then_rejoin(
    code: ErrorCode, keeps_member_id: bool
) -> None:
    """shouldLoseAllOwnedPartitionsBeforeRejoiningAfterDroppingOutOfTheGroup."""
    h = Harness()
    h.become_stable(partitions=[tp("t", 0)])
    hb = h.heartbeat_due()
    out = h.feed(ev.HeartbeatResponse, token=hb.token, error_code=code)
    assert kinds(out) == ["StopFetching", "PartitionsLost"], "lost, not revoked, and before any JoinGroup"
    lost = one(out, act.PartitionsLost)
    assert lost.partitions == {tp("t", 0)}
    join = one(h.finish_callback(lost, t0=5), act.SendJoinGroup)
    assert join.member_id == (STATIC_ID if keeps_member_id else "")
    assert not h.sent(act.SendOffsetCommit), "lost partitions are never committed"


@pytest.mark.parametrize(
    "code", [ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID]
)
def test_heartbeat_error_for_an_older_generation_is_ignored(code: ErrorCode) -> None:
    """testHeartbeatInstanceFencedResponseWithOldGeneration (and its IG/UMI siblings)."""
    h = Harness()
    h.become_stable(generation=1)
    old_hb = h.heartbeat_due()
    # A rebalance completes (generation 2) before the old heartbeat's answer arrives.
    h.feed(ev.RequestRejoin, reason="r")
    join = one(h.finish_callback(one(h.history, act.PartitionsRevoked)), act.SendJoinGroup)
    h.become_stable(join=join, generation=2)
    out = h.feed(ev.HeartbeatResponse, token=old_hb.token, error_code=code)
    assert not of(out, act.Fatal)
    assert not of(out, act.PartitionsLost)
    assert (h.m.generation, h.m.member_id, h.m.state) == (2, STATIC_ID, MemberState.STABLE)


def test_heartbeat_fenced_with_current_generation_is_fatal_and_sticky() -> None:
    """testHeartbeatRequestWithFencedInstanceIdException; issue 4 item 3."""
    h = Harness()
    h.become_stable(partitions=[tp("t", 0), tp("t", 1)])
    hb = h.heartbeat_due()
    out = h.feed(ev.HeartbeatResponse, token=hb.token, error_code=ErrorCode.FENCED_INSTANCE_ID)
    assert kinds(out) == ["StopFetching", "PartitionsLost", "Fatal"]
    assert one(out, act.PartitionsLost).partitions == {tp("t", 0), tp("t", 1)}
    error = one(out, act.Fatal).error
    assert isinstance(error, FencedInstanceIdError)
    for _ in range(3):
        assert one(h.feed(ev.PollCalled), act.Fatal).error is error
        assert one(h.commit(t0=1), act.CommitCompleted).error is error
    assert not h.sent(act.SendOffsetCommit)
    assert h.run_until(h.now + 600.0) == []


def test_heartbeat_authorization_failure_is_fatal() -> None:
    h = Harness()
    h.become_stable()
    hb = h.heartbeat_due()
    out = h.feed(ev.HeartbeatResponse, token=hb.token, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    assert isinstance(one(out, act.Fatal).error, GroupAuthorizationFailedError)


def test_heartbeat_disconnect_rediscovers_and_keeps_the_generation() -> None:
    h = Harness()
    h.become_stable(generation=4)
    hb = h.heartbeat_due()
    out = h.feed(ev.RequestFailed, token=hb.token)
    h.coordinator_found(one(out, act.FindCoordinator))
    assert one(h.advance(0.1), act.SendHeartbeat).generation == 4


def test_late_failure_from_a_replaced_coordinator_does_not_drop_the_new_one() -> None:
    h = Harness()
    h.become_stable()
    hb = h.heartbeat_due()
    out = h.feed(ev.CoordinatorDisconnected)
    assert out == [one(out, act.FindCoordinator)], "the driver already knows; no DisconnectCoordinator"
    h.coordinator_found(one(out, act.FindCoordinator), node_id=2)
    assert not of(h.feed(ev.RequestFailed, token=hb.token), act.DisconnectCoordinator)
    assert h.m.coordinator_known


def test_find_coordinator_failures_back_off_exponentially_up_to_the_cap() -> None:
    h = Harness()
    lookup = h.start()
    gaps = []
    for _ in range(6):
        before = h.now
        assert (
            h.feed(
                ev.FindCoordinatorResponse, token=lookup.token, error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE
            )
            == []
        )
        deadline = h.m.next_deadline()
        assert deadline is not None
        gaps.append(round(deadline - before, 6))
        lookup = one(h.run_until(deadline), act.FindCoordinator)
    assert gaps == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]


def test_find_coordinator_authorization_failure_is_fatal() -> None:
    h = Harness()
    lookup = h.start()
    out = h.feed(
        ev.FindCoordinatorResponse, token=lookup.token, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED
    )
    assert isinstance(one(out, act.Fatal).error, GroupAuthorizationFailedError)


def test_find_coordinator_request_failure_retries_after_backoff() -> None:
    h = Harness()
    lookup = h.start()
    assert h.feed(ev.RequestFailed, token=lookup.token) == []
    assert of(h.advance(0.1), act.FindCoordinator)

"""OffsetCommit: local refusals, the commit error table, fencing, and offsets that never go backwards."""

from __future__ import annotations

import pytest
from membership_harness import INSTANCE, UUID22, Harness, kinds, of, offsets, one, tp

from staticconsumer.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    ErrorCode,
    FencedInstanceIdError,
    GroupAuthorizationFailedError,
    NetworkExceptionError,
    NotCoordinatorError,
    OffsetMetadataTooLargeError,
    RebalanceInProgressError,
    RequestTimedOutError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)
from staticconsumer.membership import (
    NO_GENERATION,
    CommitFailedError,
    FailureKind,
    MemberState,
    OffsetRegressionError,
)
from staticconsumer.membership import actions as act
from staticconsumer.membership import events as ev

STATIC_ID = f"{INSTANCE}-{UUID22}"


def _send(h: Harness, commit_id: int = 1, **by_key: int) -> act.SendOffsetCommit:
    return one(h.commit(commit_id, **by_key), act.SendOffsetCommit)


def _stable_then_rejoining(h: Harness) -> act.SendJoinGroup:
    """Stable in generation 1, then a rebalance whose JoinGroup is in flight."""
    h.become_stable(generation=1)
    h.feed(ev.RequestRejoin, reason="r")
    return one(h.finish_callback(of(h.history, act.PartitionsRevoked)[-1]), act.SendJoinGroup)


def test_commit_in_a_stable_generation_carries_the_full_identity() -> None:
    h = Harness()
    h.become_stable(generation=6)
    send = _send(h, 42, t0=10, t1=20)
    assert (send.generation, send.member_id, send.group_instance_id) == (6, STATIC_ID, INSTANCE)
    assert send.commit_id == 42
    assert send.offsets == offsets(t0=10, t1=20)
    done = one(h.commit_answer(send), act.CommitCompleted)
    assert (done.commit_id, done.error) == (42, None)
    assert h.m.committed_offsets == {tp("t", 0): 10, tp("t", 1): 20}


def test_dynamic_commit_has_no_instance_id() -> None:
    h = Harness(instance_id=None)
    h.become_stable(member_id="m-1")
    assert _send(h, t0=1).group_instance_id is None


def test_empty_commit_succeeds_without_a_request() -> None:
    h = Harness()
    h.become_stable()
    out = h.commit(7)
    assert kinds(out) == ["CommitCompleted"]
    assert one(out, act.CommitCompleted).error is None


def test_commit_while_joining_fails_locally_with_rebalance_in_progress() -> None:
    h = Harness()
    _stable_then_rejoining(h)
    out = h.commit(t0=5)
    assert kinds(out) == ["CommitCompleted"]
    assert isinstance(one(out, act.CommitCompleted).error, RebalanceInProgressError)


def test_commit_while_waiting_for_sync_fails_locally_with_rebalance_in_progress() -> None:
    h = Harness()
    join = h.start_until_join()
    h.join_answer(join)
    assert isinstance(one(h.commit(t0=5), act.CommitCompleted).error, RebalanceInProgressError)


def test_commit_when_not_in_a_generation_fails_locally_with_commit_failed() -> None:
    h = Harness()
    h.become_stable()
    h.run_until(h.now + 60.0)  # max.poll.interval expired: unjoined, waiting for a poll
    assert h.m.state is MemberState.UNJOINED
    assert isinstance(one(h.commit(t0=5), act.CommitCompleted).error, CommitFailedError)


def test_commit_before_start_fails_locally() -> None:
    h = Harness()
    assert isinstance(one(h.commit(t0=1), act.CommitCompleted).error, CommitFailedError)
    assert not h.sent(act.SendOffsetCommit)


def test_commit_with_unknown_coordinator_is_retriable_and_triggers_discovery() -> None:
    h = Harness()
    h.become_stable()
    h.feed(ev.CoordinatorDisconnected)
    out = h.commit(t0=1)
    error = one(out, act.CommitCompleted).error
    assert isinstance(error, CoordinatorNotAvailableError)
    assert error.retriable
    assert not of(out, act.SendOffsetCommit)


def test_commits_are_allowed_inside_the_revoke_callback() -> None:
    h = Harness()
    h.become_stable()
    h.feed(ev.RequestRejoin, reason="r")
    revoked = one(h.history, act.PartitionsRevoked)
    send = _send(h, t0=3)
    assert send.generation == 1
    h.commit_answer(send)
    assert of(h.finish_callback(revoked), act.SendJoinGroup)


# ---------------------------------------------------------------- never backwards


def test_lower_offset_than_committed_is_refused() -> None:
    h = Harness()
    h.become_stable()
    h.commit_answer(_send(h, 1, t0=10))
    out = h.commit(2, t0=9, t1=4)
    error = one(out, act.CommitCompleted).error
    assert isinstance(error, OffsetRegressionError)
    assert error.regressions == {tp("t", 0): (9, 10)}
    assert "t[0]: 9 < 10" in str(error)
    assert not of(out, act.SendOffsetCommit)
    assert of(h.commit(3, t0=10), act.SendOffsetCommit), "the same offset again is fine"


def test_lower_offset_than_one_in_flight_is_refused_until_that_fails() -> None:
    h = Harness()
    h.become_stable()
    first = _send(h, 1, t0=10)
    assert isinstance(one(h.commit(2, t0=5), act.CommitCompleted).error, OffsetRegressionError)
    h.commit_answer(first, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    assert of(h.commit(3, t0=5), act.SendOffsetCommit)


def test_committed_offsets_only_move_forward_whatever_order_answers_arrive() -> None:
    h = Harness()
    h.become_stable()
    low = _send(h, 1, t0=5)
    high = _send(h, 2, t0=9)
    h.commit_answer(high)
    h.commit_answer(low)
    assert h.m.committed_offsets == {tp("t", 0): 9}


def test_partial_failure_records_the_partitions_that_made_it() -> None:
    h = Harness()
    h.become_stable()
    send = _send(h, t0=4, t1=8)
    out = h.feed(
        ev.OffsetCommitResponse,
        token=send.token,
        partition_errors={tp("t", 0): ErrorCode.NONE, tp("t", 1): ErrorCode.OFFSET_METADATA_TOO_LARGE},
    )
    assert isinstance(one(out, act.CommitCompleted).error, OffsetMetadataTooLargeError)
    assert h.m.committed_offsets == {tp("t", 0): 4}


# ---------------------------------------------------------------- the commit error table


@pytest.mark.parametrize(
    ("code", "error_type"),
    [
        (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, CoordinatorLoadInProgressError),
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UnknownTopicOrPartitionError),
    ],
)
def test_retriable_commit_errors_keep_the_coordinator(code: ErrorCode, error_type: type[Exception]) -> None:
    h = Harness()
    h.become_stable()
    out = h.commit_answer(_send(h, t0=1), code)
    error = one(out, act.CommitCompleted).error
    assert isinstance(error, error_type)
    assert getattr(error, "retriable", False)
    assert kinds(out) == ["CommitCompleted"]
    assert h.m.coordinator_known


@pytest.mark.parametrize(
    ("code", "error_type"),
    [
        (ErrorCode.COORDINATOR_NOT_AVAILABLE, CoordinatorNotAvailableError),
        (ErrorCode.NOT_COORDINATOR, NotCoordinatorError),
        (ErrorCode.REQUEST_TIMED_OUT, RequestTimedOutError),
    ],
)
def test_coordinator_commit_errors_mark_it_unknown_and_are_retriable(
    code: ErrorCode, error_type: type[Exception]
) -> None:
    h = Harness()
    h.become_stable()
    out = h.commit_answer(_send(h, t0=1), code)
    assert isinstance(one(out, act.CommitCompleted).error, error_type)
    assert of(out, act.DisconnectCoordinator)
    assert of(out, act.FindCoordinator)
    assert h.m.state is MemberState.STABLE


def test_commit_rebalance_in_progress_requests_a_rejoin() -> None:
    h = Harness()
    h.become_stable()
    out = h.commit_answer(_send(h, t0=1), ErrorCode.REBALANCE_IN_PROGRESS)
    assert isinstance(one(out, act.CommitCompleted).error, RebalanceInProgressError)
    assert of(out, act.PartitionsRevoked), "the rejoin starts by revoking (eager)"
    assert h.m.generation == 1, "no reset"


@pytest.mark.parametrize(
    ("code", "member_after"),
    [(ErrorCode.UNKNOWN_MEMBER_ID, ""), (ErrorCode.ILLEGAL_GENERATION, STATIC_ID)],
)
def test_commit_membership_errors_reset_to_no_generation(code: ErrorCode, member_after: str) -> None:
    """testCommitOffsetUnknownMemberShouldResetToNoGeneration."""
    h = Harness()
    h.become_stable(partitions=[tp("t", 0)])
    out = h.commit_answer(_send(h, t0=1), code)
    assert isinstance(one(out, act.CommitCompleted).error, CommitFailedError)
    assert h.m.generation == NO_GENERATION
    assert h.m.member_id == member_after
    lost = one(out, act.PartitionsLost)
    assert one(h.finish_callback(lost), act.SendJoinGroup).member_id == member_after


@pytest.mark.parametrize("code", [ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION])
def test_stale_commit_membership_error_while_rejoining_is_rebalance_in_progress(code: ErrorCode) -> None:
    h = Harness()
    h.become_stable(generation=1)
    send = _send(h, t0=1)
    # The member moves on to a new JoinGroup before the answer arrives; identity changes via a
    # heartbeat ILLEGAL_GENERATION (generation reset, member id kept).
    hb = h.heartbeat_due()
    h.feed(ev.HeartbeatResponse, token=hb.token, error_code=ErrorCode.ILLEGAL_GENERATION)
    h.finish_callback(of(h.history, act.PartitionsLost)[-1])
    assert h.m.state is MemberState.PREPARING_REBALANCE
    out = h.commit_answer(send, code)
    assert isinstance(one(out, act.CommitCompleted).error, RebalanceInProgressError)
    assert h.m.member_id == STATIC_ID, "a stale UNKNOWN_MEMBER_ID must not wipe the member id"


@pytest.mark.parametrize("code", [ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION])
def test_stale_commit_membership_error_never_resets_a_newer_stable_generation(code: ErrorCode) -> None:
    h = Harness()
    h.become_stable(generation=1)
    send = _send(h, t0=1)
    h.feed(ev.RequestRejoin, reason="r")
    join = one(h.finish_callback(of(h.history, act.PartitionsRevoked)[-1]), act.SendJoinGroup)
    h.become_stable(join=join, generation=2)
    out = h.commit_answer(send, code)
    assert isinstance(one(out, act.CommitCompleted).error, CommitFailedError)
    assert (h.m.generation, h.m.member_id, h.m.state) == (2, STATIC_ID, MemberState.STABLE)
    assert not of(out, act.PartitionsLost)


def test_commit_fenced_with_current_generation_is_fatal_and_sticky() -> None:
    """testCommitOffsetRequestSyncWithFencedInstanceIdException."""
    h = Harness()
    h.become_stable(partitions=[tp("t", 0)])
    out = h.commit_answer(_send(h, 1, t0=1), ErrorCode.FENCED_INSTANCE_ID)
    assert kinds(out) == ["StopFetching", "PartitionsLost", "Fatal", "CommitCompleted"]
    error = one(out, act.CommitCompleted).error
    assert isinstance(error, FencedInstanceIdError)
    assert one(out, act.Fatal).error is error
    assert h.m.state is MemberState.FENCED


def test_every_commit_after_fencing_gets_the_fenced_error_and_nothing_is_sent() -> None:
    """testCommitOffsetRequestAsyncAlwaysReceiveFencedException."""
    h = Harness()
    h.become_stable()
    h.commit_answer(_send(h, 1, t0=1), ErrorCode.FENCED_INSTANCE_ID)
    sent_before = len(h.sent(act.SendOffsetCommit))
    for commit_id in range(2, 6):
        error = one(h.commit(commit_id, t0=commit_id), act.CommitCompleted).error
        assert isinstance(error, FencedInstanceIdError)
    assert len(h.sent(act.SendOffsetCommit)) == sent_before


def test_fencing_fails_the_other_commits_in_flight_at_once() -> None:
    h = Harness()
    h.become_stable()
    first = _send(h, 1, t0=1)
    _send(h, 2, t1=1)
    out = h.commit_answer(first, ErrorCode.FENCED_INSTANCE_ID)
    done = {c.commit_id: c.error for c in of(out, act.CommitCompleted)}
    assert set(done) == {1, 2}
    assert all(isinstance(e, FencedInstanceIdError) for e in done.values())


def test_commit_fenced_for_an_older_generation_is_not_fatal() -> None:
    """testCommitOffsetFencedInstanceWithNewGeneration."""
    h = Harness()
    h.become_stable(generation=1)
    send = _send(h, t0=1)
    h.feed(ev.RequestRejoin, reason="r")
    join = one(h.finish_callback(of(h.history, act.PartitionsRevoked)[-1]), act.SendJoinGroup)
    h.become_stable(join=join, generation=2)
    out = h.commit_answer(send, ErrorCode.FENCED_INSTANCE_ID)
    assert isinstance(one(out, act.CommitCompleted).error, CommitFailedError)
    assert not of(out, act.Fatal)
    assert h.m.state is MemberState.STABLE


def test_commit_fenced_for_an_older_generation_while_rejoining_is_rebalance_in_progress() -> None:
    h = Harness()
    h.become_stable(generation=1)
    send = _send(h, t0=1)
    hb = h.heartbeat_due()
    h.feed(ev.HeartbeatResponse, token=hb.token, error_code=ErrorCode.ILLEGAL_GENERATION)
    h.finish_callback(of(h.history, act.PartitionsLost)[-1])
    out = h.commit_answer(send, ErrorCode.FENCED_INSTANCE_ID)
    assert isinstance(one(out, act.CommitCompleted).error, RebalanceInProgressError)
    assert h.m.state is MemberState.PREPARING_REBALANCE


@pytest.mark.parametrize(
    ("code", "error_type"),
    [
        (ErrorCode.GROUP_AUTHORIZATION_FAILED, GroupAuthorizationFailedError),
        (ErrorCode.TOPIC_AUTHORIZATION_FAILED, TopicAuthorizationFailedError),
        (ErrorCode.OFFSET_METADATA_TOO_LARGE, OffsetMetadataTooLargeError),
    ],
)
def test_caller_errors_are_raised_to_the_caller_only(code: ErrorCode, error_type: type[Exception]) -> None:
    h = Harness()
    h.become_stable()
    out = h.commit_answer(_send(h, t0=1), code)
    assert kinds(out) == ["CommitCompleted"]
    assert isinstance(one(out, act.CommitCompleted).error, error_type)
    assert h.m.state is MemberState.STABLE


@pytest.mark.parametrize(
    ("kind", "error_type"),
    [(FailureKind.DISCONNECTED, NetworkExceptionError), (FailureKind.TIMED_OUT, RequestTimedOutError)],
)
def test_commit_without_answer_is_retriable_and_rediscovers(
    kind: FailureKind, error_type: type[Exception]
) -> None:
    h = Harness()
    h.become_stable()
    send = _send(h, t0=1)
    out = h.feed(ev.RequestFailed, token=send.token, kind=kind)
    assert isinstance(one(out, act.CommitCompleted).error, error_type)
    assert of(out, act.FindCoordinator)
    assert h.m.committed_offsets == {}

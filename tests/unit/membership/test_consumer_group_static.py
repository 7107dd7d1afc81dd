"""Static membership under the consumer protocol (KIP-848): leaving with -2 or -1, FENCED_INSTANCE_ID,
UNRELEASED_INSTANCE_ID (our own place, a dead earlier run's, a live holder), fenced by epoch, stale."""

from __future__ import annotations

import pytest
from consumer_harness import INSTANCE, MEMBER, ConsumerHarness, T, kinds, of, one, tp

from staticconsumer.errors import (
    CommitFailedError,
    ConsumerProtocolUnsupportedError,
    ErrorCode,
    FencedInstanceIdError,
    UnreleasedInstanceIdError,
)
from staticconsumer.membership import FailureKind, InstanceEvidence, MemberState, ReleaseReason
from staticconsumer.membership import actions as act
from staticconsumer.membership import events as ev
from staticconsumer.membership.observe import Leaving

OTHER = "BBBBBBBBBBBBBBBBBBBBBB"


def unreleased(holder: str) -> str:
    return (
        f"Static member {MEMBER} with instance id {INSTANCE} cannot join the group because the instance id "
        f"is owned by {holder} member."
    )


# -- leaving ------------------------------------------------------------------------------------------


def test_stop_of_a_static_member_revokes_commits_then_leaves_with_epoch_minus_2_and_its_instance_id() -> None:
    h = ConsumerHarness()
    h.stable({T: [0, 1]}, epoch=4)
    out = h.feed(ev.Stop)
    revoked = one(out, act.PartitionsRevoked)
    assert (revoked.partitions, revoked.reason) == ({tp("t", 0), tp("t", 1)}, ReleaseReason.STOP)
    assert one(out, act.StopFetching).partitions is None
    commit = one(h.finish(revoked, t0=5, t1=6), act.SendOffsetCommit)
    assert commit.generation == 4
    leave = one(h.commit_answer(commit), act.SendConsumerGroupHeartbeat)
    assert (leave.member_id, leave.member_epoch, leave.instance_id, leave.purpose) == (
        MEMBER,
        -2,
        INSTANCE,
        "leave",
    )
    assert leave.owned is None
    assert leave.subscribed_topic_names is None
    assert any(isinstance(m, Leaving) for m in h.m.milestones)
    assert h.state() is MemberState.LEAVING
    out = h.answer(leave, epoch=-2)
    assert one(out, act.Stopped).error is None
    assert h.state() is MemberState.STOPPED


def test_stop_with_leave_group_leaves_for_good_with_epoch_minus_1() -> None:
    h = ConsumerHarness()
    h.stable({T: [0]})
    revoked = one(h.feed(ev.Stop, leave_group=True), act.PartitionsRevoked)
    leave = one(h.finish(revoked), act.SendConsumerGroupHeartbeat)
    assert (leave.member_epoch, leave.instance_id) == (-1, INSTANCE)


def test_a_dynamic_member_always_leaves_with_minus_1() -> None:
    h = ConsumerHarness(instance_id=None)
    h.stable({T: [0]})
    revoked = one(h.feed(ev.Stop), act.PartitionsRevoked)
    leave = one(h.finish(revoked), act.SendConsumerGroupHeartbeat)
    assert (leave.member_epoch, leave.instance_id) == (-1, None)


def test_a_member_that_never_sent_a_join_stops_without_a_leave() -> None:
    h = ConsumerHarness()
    h.start()
    out = h.feed(ev.Stop)
    assert kinds(out) == ["Stopped"]


def test_a_static_stop_finds_the_coordinator_first_so_its_minus_2_is_not_lost() -> None:
    h = ConsumerHarness()
    h.stable({T: [0]})
    lookup = one(h.answer(h.next_heartbeat(), ErrorCode.NOT_COORDINATOR), act.FindCoordinator)
    revoked = one(h.feed(ev.Stop), act.PartitionsRevoked)
    out = h.finish(revoked)
    assert not of(out, act.SendConsumerGroupHeartbeat)
    leave = one(
        h.feed(ev.FindCoordinatorResponse, token=lookup.token, node_id=1), act.SendConsumerGroupHeartbeat
    )
    assert leave.member_epoch == -2


def test_a_failed_leave_still_stops() -> None:
    h = ConsumerHarness()
    h.stable({T: [0]})
    leave = one(h.finish(one(h.feed(ev.Stop), act.PartitionsRevoked)), act.SendConsumerGroupHeartbeat)
    assert one(h.feed(ev.RequestFailed, token=leave.token), act.Stopped).error is None


# -- fenced -------------------------------------------------------------------------------------------


def test_fenced_instance_id_is_fatal_and_sticky_with_the_diagnosis() -> None:
    h = ConsumerHarness()
    h.stable({T: [0]})
    out = h.answer(h.next_heartbeat(), ErrorCode.FENCED_INSTANCE_ID, message="was fenced by member X")
    fatal = one(out, act.Fatal)
    assert isinstance(fatal.error, FencedInstanceIdError)
    assert "another process is running with the same" in str(fatal.error)
    assert one(out, act.PartitionsLost).partitions == {tp("t", 0)}
    assert kinds(out).index("StopFetching") < kinds(out).index("PartitionsLost") < kinds(out).index("Fatal")
    assert h.state() is MemberState.FENCED
    assert one(h.feed(ev.PollCalled), act.Fatal).error is fatal.error
    assert one(h.commit(t0=1), act.CommitCompleted).error is fatal.error


@pytest.mark.parametrize("code", [ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID])
def test_fenced_by_epoch_loses_partitions_and_rejoins_at_epoch_0_with_the_same_ids(code: ErrorCode) -> None:
    h = ConsumerHarness()
    h.stable({T: [0, 1]}, epoch=5)
    out = h.answer(h.next_heartbeat(), code, message="fenced")
    lost = one(out, act.PartitionsLost)
    assert (lost.partitions, lost.reason) == ({tp("t", 0), tp("t", 1)}, ReleaseReason.MEMBERSHIP_LOST)
    assert not of(out, act.SendOffsetCommit), "lost partitions are never committed"
    assert h.state() is MemberState.EPOCH_FENCED
    assert isinstance(one(h.commit(t0=3), act.CommitCompleted).error, CommitFailedError)
    join = one(h.finish(lost), act.SendConsumerGroupHeartbeat)
    assert (join.member_epoch, join.member_id, join.instance_id, join.purpose) == (
        0,
        MEMBER,
        INSTANCE,
        "join",
    )
    assert join.subscribed_topic_names == ("t", "u")
    assert join.owned == ()
    h.stable({T: [0]}, epoch=6, join=join)
    assert h.m.assignment == {tp("t", 0)}


def test_an_answer_about_an_older_epoch_is_ignored() -> None:
    h = ConsumerHarness()
    h.stable({T: [0]}, epoch=1)
    beat = h.next_heartbeat()
    h.answer(beat, epoch=2)
    stale = ev.ConsumerGroupHeartbeatResponse(
        now=h.now, token=beat.token, error_code=ErrorCode.FENCED_MEMBER_EPOCH
    )
    assert h.m.handle(stale) == []


# -- UNRELEASED_INSTANCE_ID ----------------------------------------------------------------------------


def test_our_own_place_held_after_a_lost_join_answer_is_released_and_rejoined() -> None:
    """apache/kafka PR #23542: a rejoin at epoch 0 while the broker still has this very member."""
    h = ConsumerHarness()
    join = h.start_until_join()
    lookup = one(h.feed(ev.RequestFailed, token=join.token, kind=FailureKind.TIMED_OUT), act.FindCoordinator)
    h.feed(ev.FindCoordinatorResponse, token=lookup.token, node_id=1)
    again = one(h.run_until(h.now + 1), act.SendConsumerGroupHeartbeat)
    assert again.member_epoch == 0
    release = one(
        h.answer(again, ErrorCode.UNRELEASED_INSTANCE_ID, message=unreleased(MEMBER)),
        act.SendConsumerGroupHeartbeat,
    )
    assert (release.member_id, release.member_epoch, release.instance_id, release.purpose) == (
        MEMBER,
        -2,
        INSTANCE,
        "release",
    )
    rejoin = one(h.answer(release, epoch=-2), act.SendConsumerGroupHeartbeat)
    assert (rejoin.member_epoch, rejoin.purpose) == (0, "join")
    h.stable({T: [0, 1]}, epoch=3, join=rejoin)


def test_a_dead_earlier_run_on_this_host_has_its_place_released_and_taken() -> None:
    h = ConsumerHarness(evidence=InstanceEvidence(previous_member_id=OTHER))
    join = h.start_until_join()
    release = one(
        h.answer(join, ErrorCode.UNRELEASED_INSTANCE_ID, message=unreleased(OTHER)),
        act.SendConsumerGroupHeartbeat,
    )
    assert (release.member_id, release.member_epoch, release.instance_id) == (OTHER, -2, INSTANCE)
    rejoin = one(h.answer(release, epoch=-2), act.SendConsumerGroupHeartbeat)
    assert (rejoin.member_id, rejoin.member_epoch) == (MEMBER, 0)
    assigned = h.stable({T: [0, 1]}, epoch=7, join=rejoin)
    assert assigned.partitions == {tp("t", 0), tp("t", 1)}


def test_an_unknown_holder_is_waited_for_up_to_the_session_timeout_then_named_a_live_process() -> None:
    h = ConsumerHarness(session_timeout_ms=45_000)
    join = h.start_until_join()
    started = h.now
    out = h.answer(join, ErrorCode.UNRELEASED_INSTANCE_ID, message=unreleased(OTHER))
    assert not of(out, act.Fatal)
    attempts = 1
    while True:
        deadline = h.m.next_deadline()
        assert deadline is not None
        retry = one(h.run_until(deadline), act.SendConsumerGroupHeartbeat)
        assert (retry.member_id, retry.member_epoch) == (MEMBER, 0), "never a release of someone else's place"
        out = h.answer(retry, ErrorCode.UNRELEASED_INSTANCE_ID, message=unreleased(OTHER))
        attempts += 1
        if of(out, act.Fatal):
            break
    error = one(out, act.Fatal).error
    assert isinstance(error, UnreleasedInstanceIdError)
    assert error.cause == UnreleasedInstanceIdError.LIVE_PROCESS
    assert error.holder_member_id == OTHER
    assert 50 <= h.now - started < 52, "the session timeout (45 s) plus a margin"
    assert attempts > 40, "retried with backoff, capped at retry.backoff.max.ms"
    assert "another live process" not in str(error)
    assert "heartbeating" in str(error)
    assert h.state() is MemberState.FAILED


def test_a_holder_that_leaves_meanwhile_lets_the_member_in() -> None:
    h = ConsumerHarness()
    join = h.start_until_join()
    h.answer(join, ErrorCode.UNRELEASED_INSTANCE_ID, message=unreleased(OTHER))
    retry = one(h.run_until(h.now + 1), act.SendConsumerGroupHeartbeat)
    h.stable({T: [0]}, epoch=2, join=retry)


def test_a_live_process_on_this_host_is_named_and_not_waited_for_a_whole_session() -> None:
    h = ConsumerHarness(evidence=InstanceEvidence(live_holder="pid 4242"), request_timeout_ms=5_000)
    join = h.start_until_join()
    started = h.now
    out = h.answer(join, ErrorCode.UNRELEASED_INSTANCE_ID, message=unreleased(OTHER))
    while not of(out, act.Fatal):
        retry = one(h.run_until(h.m.next_deadline() or h.now + 1), act.SendConsumerGroupHeartbeat)
        out = h.answer(retry, ErrorCode.UNRELEASED_INSTANCE_ID, message=unreleased(OTHER))
    error = one(out, act.Fatal).error
    assert isinstance(error, UnreleasedInstanceIdError)
    assert error.cause == UnreleasedInstanceIdError.LIVE_PROCESS
    assert "pid 4242" in str(error)
    assert "another live process on this host" in str(error)
    assert 5 <= h.now - started < 7, "bounded by how long a graceful stop can take"


def test_a_dead_earlier_runs_place_that_cannot_be_released_is_named_a_previous_run() -> None:
    h = ConsumerHarness(
        evidence=InstanceEvidence(previous_member_id=OTHER),
        session_timeout_ms=9_000,
        heartbeat_interval_ms=1_000,
    )
    join = h.start_until_join()
    release = one(
        h.answer(join, ErrorCode.UNRELEASED_INSTANCE_ID, message=unreleased(OTHER)),
        act.SendConsumerGroupHeartbeat,
    )
    out = h.answer(release, ErrorCode.FENCED_INSTANCE_ID, message="fenced")
    assert not of(out, act.Fatal), "a refused release is not this member's fencing"
    retry = one(out, act.SendConsumerGroupHeartbeat)
    out = h.answer(retry, ErrorCode.UNRELEASED_INSTANCE_ID, message=unreleased(OTHER))
    while not of(out, act.Fatal):
        retry = one(h.run_until(h.m.next_deadline() or h.now + 1), act.SendConsumerGroupHeartbeat)
        out = h.answer(retry, ErrorCode.UNRELEASED_INSTANCE_ID, message=unreleased(OTHER))
    error = one(out, act.Fatal).error
    assert isinstance(error, UnreleasedInstanceIdError)
    assert error.cause == UnreleasedInstanceIdError.PREVIOUS_RUN
    assert "did not leave" in str(error) or "without leaving" in str(error)


# -- stale (max.poll.interval.ms) -----------------------------------------------------------------------


def test_a_poll_timeout_loses_partitions_leaves_with_minus_2_and_rejoins_at_the_next_poll() -> None:
    h = ConsumerHarness(max_poll_interval_ms=60_000)
    h.stable({T: [0]})
    out: list[act.Action] = []
    while not of(out, act.PartitionsLost):
        deadline = h.m.next_deadline()
        assert deadline is not None
        out = h.run_until(deadline)
        for beat in of(out, act.SendConsumerGroupHeartbeat):
            if beat.purpose == "heartbeat":
                h.answer(beat)
    assert one(out, act.PartitionsLost).reason is ReleaseReason.POLL_TIMEOUT
    leave = [b for b in of(out, act.SendConsumerGroupHeartbeat) if b.purpose == "leave"]
    assert [b.member_epoch for b in leave] == [-2]
    assert h.state() is MemberState.STALE
    h.finish(one(out, act.PartitionsLost))
    h.answer(leave[0], epoch=-2)
    assert not of(h.run_until(h.now + 30), act.SendConsumerGroupHeartbeat), "no heartbeats while stale"
    join = one(h.feed(ev.PollCalled), act.SendConsumerGroupHeartbeat)
    assert (join.member_epoch, join.member_id, join.purpose) == (0, MEMBER, "join")


# -- refused by the broker --------------------------------------------------------------------------------


def test_a_heartbeat_refused_with_unsupported_version_is_the_consumer_protocol_error() -> None:
    h = ConsumerHarness()
    join = h.start_until_join()
    out = h.answer(join, ErrorCode.UNSUPPORTED_VERSION, message="group.protocol=consumer, but broker 1 ...")
    error = one(out, act.Fatal).error
    assert isinstance(error, ConsumerProtocolUnsupportedError)
    assert "broker 1" in str(error)


def test_no_common_heartbeat_version_is_the_consumer_protocol_error() -> None:
    h = ConsumerHarness()
    join = h.start_until_join()
    out = h.feed(ev.RequestFailed, token=join.token, kind=FailureKind.UNSUPPORTED_VERSION, detail="Kafka 3.9")
    error = one(out, act.Fatal).error
    assert isinstance(error, ConsumerProtocolUnsupportedError)
    assert "Kafka 3.9" in str(error)


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (ErrorCode.UNSUPPORTED_ASSIGNOR, "group.remote.assignor='sticky'"),
        (ErrorCode.INVALID_REGULAR_EXPRESSION, "RE2/J"),
        (ErrorCode.GROUP_ID_NOT_FOUND, "classic group"),
    ],
)
def test_fatal_answers_name_their_culprit(code: ErrorCode, words: str) -> None:
    h = ConsumerHarness(server_assignor="sticky")
    join = h.start_until_join()
    error = one(h.answer(join, code, message="no"), act.Fatal).error
    assert words in str(error)

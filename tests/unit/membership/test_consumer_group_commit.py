"""Commits under the consumer protocol: they carry the member epoch; STALE_MEMBER_EPOCH is resent with the
next heartbeat's epoch and never surfaced when the epoch only moved forward; offsets never go backwards."""

from __future__ import annotations

import pytest
from consumer_harness import MEMBER, ConsumerHarness, T, of, one, tp

from staticconsumer.errors import (
    CommitFailedError,
    ErrorCode,
    FencedInstanceIdError,
    OffsetRegressionError,
    StaleMemberEpochError,
)
from staticconsumer.membership import actions as act
from staticconsumer.membership import events as ev


def test_a_commit_carries_the_member_epoch_and_member_id() -> None:
    h = ConsumerHarness()
    h.stable({T: [0]}, epoch=7)
    send = one(h.commit(t0=10), act.SendOffsetCommit)
    assert (send.generation, send.member_id, send.group_instance_id) == (7, MEMBER, "pod-0")
    done = one(h.commit_answer(send), act.CommitCompleted)
    assert done.error is None
    assert h.m.committed_offsets == {tp("t", 0): 10}


def test_commits_are_refused_while_the_member_is_not_in_the_group() -> None:
    h = ConsumerHarness()
    h.start_until_join()
    assert isinstance(one(h.commit(t0=1), act.CommitCompleted).error, CommitFailedError)


def test_a_stale_commit_is_resent_at_once_when_the_epoch_moved_meanwhile() -> None:
    h = ConsumerHarness()
    h.stable({T: [0]}, epoch=3)
    send = one(h.commit(t0=10), act.SendOffsetCommit)
    h.answer(h.next_heartbeat(), epoch=4)
    out = h.commit_answer(send, ErrorCode.STALE_MEMBER_EPOCH)
    assert not of(out, act.CommitCompleted), "never surfaced when the epoch only moved forward"
    resent = one(out, act.SendOffsetCommit)
    assert (resent.generation, resent.offsets, resent.commit_id) == (4, send.offsets, send.commit_id)
    assert one(h.commit_answer(resent), act.CommitCompleted).error is None


def test_a_stale_commit_waits_for_the_next_heartbeat_which_goes_out_at_once() -> None:
    h = ConsumerHarness()
    h.stable({T: [0]}, epoch=3)
    send = one(h.commit(t0=10), act.SendOffsetCommit)
    out = h.commit_answer(send, ErrorCode.STALE_MEMBER_EPOCH)
    beat = one(out, act.SendConsumerGroupHeartbeat)
    assert not of(out, act.SendOffsetCommit)
    resent = one(h.answer(beat, epoch=5), act.SendOffsetCommit)
    assert resent.generation == 5
    assert one(h.commit_answer(resent), act.CommitCompleted).error is None


def test_a_commit_refused_twice_at_a_confirmed_epoch_fails_as_stale() -> None:
    h = ConsumerHarness()
    h.stable({T: [0]}, epoch=3)
    send = one(h.commit(t0=10), act.SendOffsetCommit)
    beat = one(h.commit_answer(send, ErrorCode.STALE_MEMBER_EPOCH), act.SendConsumerGroupHeartbeat)
    resent = one(h.answer(beat, epoch=3), act.SendOffsetCommit)
    assert resent.generation == 3
    beat = one(h.commit_answer(resent, ErrorCode.STALE_MEMBER_EPOCH), act.SendConsumerGroupHeartbeat)
    done = one(h.answer(beat, epoch=3), act.CommitCompleted)
    assert isinstance(done.error, StaleMemberEpochError)


def test_a_stale_commit_of_a_partition_still_being_revoked_is_resent() -> None:
    h = ConsumerHarness()
    h.stable({T: [0, 1]}, epoch=3)
    send = one(h.commit(t0=10, t1=11), act.SendOffsetCommit)
    one(h.answer(h.next_heartbeat(), epoch=4, assignment={T: [1]}), act.PartitionsRevoked)
    resent = one(h.commit_answer(send, ErrorCode.STALE_MEMBER_EPOCH), act.SendOffsetCommit)
    assert resent.generation == 4, "t0 is ours until the revoke finishes and is acknowledged"


def test_a_stale_commit_of_a_partition_given_up_meanwhile_is_not_resent() -> None:
    h = ConsumerHarness()
    h.stable({T: [0, 1]}, epoch=3)
    send = one(h.commit(t0=10, t1=11), act.SendOffsetCommit)
    revoked = one(h.answer(h.next_heartbeat(), epoch=4, assignment={T: [1]}), act.PartitionsRevoked)
    h.finish(revoked)
    out = h.commit_answer(send, ErrorCode.STALE_MEMBER_EPOCH)
    done = [c for c in h.sent(act.CommitCompleted) if c.commit_id == 1]
    assert len(done) == 1
    assert isinstance(done[0].error, CommitFailedError)
    assert "given up" in str(done[0].error)
    assert not [s for s in of(out, act.SendOffsetCommit) if s.commit_id == 1]


def test_the_release_commit_of_a_reconciliation_is_resent_and_the_assignment_waits_for_it() -> None:
    h = ConsumerHarness()
    h.stable({T: [0, 1]}, epoch=3)
    revoked = one(h.answer(h.next_heartbeat(), epoch=4, assignment={T: [1, 2]}), act.PartitionsRevoked)
    commit = one(h.finish(revoked, t0=9), act.SendOffsetCommit)
    out = h.commit_answer(commit, ErrorCode.STALE_MEMBER_EPOCH)
    assert not of(out, act.PartitionsAssigned)
    beat = one(out, act.SendConsumerGroupHeartbeat)
    resent = one(h.answer(beat, epoch=5), act.SendOffsetCommit)
    assert resent.offsets == {tp("t", 0): commit.offsets[tp("t", 0)]}, (
        "the revoked partition is still ours to commit"
    )
    assigned = one(h.commit_answer(resent), act.PartitionsAssigned)
    assert assigned.partitions == {tp("t", 2)}


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (ErrorCode.FENCED_MEMBER_EPOCH, CommitFailedError),  # the member rejoins; the commit is not resent
        (ErrorCode.FENCED_INSTANCE_ID, FencedInstanceIdError),  # fatal: no commit waits forever
    ],
)
def test_a_commit_parked_when_the_member_is_fenced_is_answered(code: ErrorCode, expected: type) -> None:
    h = ConsumerHarness()
    h.stable({T: [0]}, epoch=3)
    send = one(h.commit(t0=10), act.SendOffsetCommit)
    beat = one(h.commit_answer(send, ErrorCode.STALE_MEMBER_EPOCH), act.SendConsumerGroupHeartbeat)
    out = h.answer(beat, code)
    assert isinstance(one(out, act.CommitCompleted).error, expected)
    if code == ErrorCode.FENCED_INSTANCE_ID:
        assert isinstance(one(out, act.Fatal).error, FencedInstanceIdError)


def test_a_stale_commit_superseded_by_a_later_one_is_not_resent_and_nothing_goes_backwards() -> None:
    h = ConsumerHarness()
    h.stable({T: [0]}, epoch=3)
    first = one(h.commit(1, t0=0), act.SendOffsetCommit)
    beat = one(h.commit_answer(first, ErrorCode.STALE_MEMBER_EPOCH), act.SendConsumerGroupHeartbeat)
    second = one(h.commit(2, t0=1), act.SendOffsetCommit)
    assert one(h.commit_answer(second), act.CommitCompleted).error is None
    out = h.answer(beat, epoch=3)
    assert not of(out, act.SendOffsetCommit), "resending offset 0 would move the committed 1 backwards"
    done = one(out, act.CommitCompleted)
    assert (done.commit_id, done.error) == (1, None), "what it asked for is covered by the later commit"
    assert h.m.committed_offsets == {tp("t", 0): 1}


def test_a_stale_commit_resends_only_the_partitions_no_later_commit_superseded() -> None:
    h = ConsumerHarness()
    h.stable({T: [0, 1]}, epoch=3)
    first = one(h.commit(1, t0=5, t1=5), act.SendOffsetCommit)
    beat = one(h.commit_answer(first, ErrorCode.STALE_MEMBER_EPOCH), act.SendConsumerGroupHeartbeat)
    second = one(h.commit(2, t0=8), act.SendOffsetCommit)
    resent = one(h.answer(beat, epoch=4), act.SendOffsetCommit)
    assert (resent.commit_id, set(resent.offsets)) == (1, {tp("t", 1)}), "t0's 8 is in flight"
    assert one(h.commit_answer(second), act.CommitCompleted).error is None
    assert one(h.commit_answer(resent), act.CommitCompleted).error is None
    assert h.m.committed_offsets == {tp("t", 0): 8, tp("t", 1): 5}


def test_a_commit_below_one_waiting_for_a_resend_is_a_regression() -> None:
    h = ConsumerHarness()
    h.stable({T: [0]}, epoch=3)
    first = one(h.commit(1, t0=10), act.SendOffsetCommit)
    h.commit_answer(first, ErrorCode.STALE_MEMBER_EPOCH)
    refused = one(h.commit(2, t0=4), act.CommitCompleted)
    assert isinstance(refused.error, OffsetRegressionError)


def test_unknown_member_on_a_commit_fails_it_and_heartbeats_at_once() -> None:
    h = ConsumerHarness()
    h.stable({T: [0]})
    send = one(h.commit(t0=10), act.SendOffsetCommit)
    out = h.commit_answer(send, ErrorCode.UNKNOWN_MEMBER_ID)
    assert isinstance(one(out, act.CommitCompleted).error, CommitFailedError)
    assert one(out, act.SendConsumerGroupHeartbeat).purpose == "heartbeat"


def test_fenced_instance_id_on_a_commit_is_the_fencing() -> None:
    h = ConsumerHarness()
    h.stable({T: [0]})
    send = one(h.commit(t0=10), act.SendOffsetCommit)
    out = h.commit_answer(send, ErrorCode.FENCED_INSTANCE_ID)
    assert isinstance(one(out, act.Fatal).error, FencedInstanceIdError)
    assert isinstance(one(out, act.CommitCompleted).error, FencedInstanceIdError)


def test_offsets_never_go_backwards() -> None:
    h = ConsumerHarness()
    h.stable({T: [0]})
    h.commit_answer(one(h.commit(t0=10), act.SendOffsetCommit))
    assert isinstance(one(h.commit(2, t0=9), act.CommitCompleted).error, OffsetRegressionError)


def test_a_stop_fails_a_parked_commit_rather_than_leaving_it_waiting() -> None:
    h = ConsumerHarness()
    h.stable({T: [0]})
    send = one(h.commit(t0=10), act.SendOffsetCommit)
    h.commit_answer(send, ErrorCode.STALE_MEMBER_EPOCH)
    out = h.feed(ev.Stop)
    assert isinstance(one(out, act.CommitCompleted).error, CommitFailedError)

"""JoinGroup: request contents, KIP-394's second join, the JoinGroup error table, leadership (KIP-814)."""

from __future__ import annotations

import msgspec
import pytest
from membership_harness import (
    GROUP,
    INSTANCE,
    PROTOCOLS,
    UUID22,
    Harness,
    kinds,
    of,
    one,
    tp,
)

from staticconsumer.errors import (
    DecodeError,
    ErrorCode,
    FencedInstanceIdError,
    GroupAuthorizationFailedError,
    GroupMaxSizeReachedError,
    InconsistentGroupProtocolError,
    InvalidGroupIdError,
    InvalidSessionTimeoutError,
    UnknownServerError,
    UnsupportedVersionError,
)
from staticconsumer.membership import (
    NO_GENERATION,
    FailureKind,
    GroupProtocol,
    JoinGroupMember,
    MemberState,
    RebalanceProtocol,
    RequestToken,
)
from staticconsumer.membership import actions as act
from staticconsumer.membership import events as ev

STATIC_ID = f"{INSTANCE}-{UUID22}"


def test_static_join_carries_instance_id_timeouts_and_protocols_in_order() -> None:
    h = Harness(session_timeout_ms=45_000, max_poll_interval_ms=300_000, request_timeout_ms=30_000)
    join = h.start_until_join()
    assert join.member_id == ""
    assert join.group_instance_id == INSTANCE
    assert join.session_timeout_ms == 45_000
    assert join.rebalance_timeout_ms == 300_000
    assert join.request_timeout_ms == 305_000
    assert join.protocol_type == "consumer"
    assert join.protocols == PROTOCOLS
    assert join.reason == ""
    assert h.m.state is MemberState.PREPARING_REBALANCE


def test_dynamic_join_has_no_instance_id() -> None:
    h = Harness(instance_id=None)
    assert h.start_until_join().group_instance_id is None


def test_nothing_is_sent_before_the_coordinator_is_known() -> None:
    h = Harness()
    assert kinds(h.feed(ev.Start, protocols=PROTOCOLS)) == ["FindCoordinator"]
    assert h.advance(5.0) == []


def test_start_without_protocols_is_fatal_not_a_silent_empty_join() -> None:
    h = Harness()
    out = h.feed(ev.Start, protocols=())
    assert "SendJoinGroup" not in kinds(out)
    assert h.m.state is MemberState.FAILED


def test_member_id_required_means_exactly_two_joins_with_the_full_protocol_list() -> None:
    """testJoinGroupRequestWithMemberIdRequired; issue 4 item 2 (aiokafka sent partial lists)."""
    three = (*PROTOCOLS, GroupProtocol("sticky", b"t"))
    h = Harness(instance_id=None)
    lookup = h.start(protocols=three)
    first = one(h.prepare_first_join(h.coordinator_found(lookup)), act.SendJoinGroup)
    second_out = h.join_answer(first, ErrorCode.MEMBER_ID_REQUIRED, member_id="consumer-1-abc", generation=-1)
    second = one(second_out, act.SendJoinGroup)
    assert kinds(second_out) == ["SendJoinGroup"], "rejoin at once: no backoff, no callbacks"
    assert second.member_id == "consumer-1-abc"
    assert second.protocols == three
    assert h.m.generation == NO_GENERATION
    assert second.reason == "need to re-join with the given member-id: consumer-1-abc"
    sync = one(h.join_answer(second, generation=3, member_id="consumer-1-abc"), act.SendSyncGroup)
    h.sync_answer(sync, partitions=[tp("t", 0)])
    assert len(h.sent(act.SendJoinGroup)) == 2
    assert h.m.state is MemberState.STABLE


def test_join_success_stores_generation_member_and_protocol_then_follower_syncs() -> None:
    """testJoinGroupProtocolTypeAndName: the SyncGroup carries protocol type and name."""
    h = Harness()
    join = h.start_until_join()
    sync = one(
        h.join_answer(join, generation=7, member_id=STATIC_ID, protocol_name="roundrobin"), act.SendSyncGroup
    )
    assert (h.m.generation, h.m.member_id, h.m.protocol_name) == (7, STATIC_ID, "roundrobin")
    assert sync.generation == 7
    assert sync.member_id == STATIC_ID
    assert sync.group_instance_id == INSTANCE
    assert sync.protocol_type == "consumer"
    assert sync.protocol_name == "roundrobin"
    assert sync.assignments == ()
    assert h.m.state is MemberState.COMPLETING_REBALANCE
    assert not h.m.is_leader


def test_join_answer_with_another_protocol_type_is_inconsistent_and_fatal() -> None:
    h = Harness()
    join = h.start_until_join()
    fatal = one(h.join_answer(join, protocol_type="connect"), act.Fatal)
    assert isinstance(fatal.error, InconsistentGroupProtocolError)


def test_join_answer_without_protocol_type_is_accepted_as_old_versions_send_none() -> None:
    h = Harness()
    join = h.start_until_join()
    assert of(h.join_answer(join, protocol_type=None), act.SendSyncGroup)


# ---------------------------------------------------------------- the JoinGroup error table


def test_coordinator_loading_backs_off_then_retries_with_the_same_coordinator() -> None:
    h = Harness()
    h.become_stable()
    h.feed(ev.RequestRejoin, reason="test")
    revoked = one(h.history, act.PartitionsRevoked)
    join = one(h.finish_callback(revoked), act.SendJoinGroup)
    assert h.join_answer(join, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS) == []
    assert h.advance(0.05) == []
    retry = one(h.advance(0.06), act.SendJoinGroup)
    assert retry.member_id == STATIC_ID
    assert not h.sent(act.FindCoordinator)[1:], "the coordinator is still the right one"


@pytest.mark.parametrize("code", [ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR])
def test_coordinator_errors_mark_it_unknown_rediscover_and_back_off(code: ErrorCode) -> None:
    h = Harness()
    join = h.start_until_join()
    out = h.join_answer(join, code)
    assert kinds(out) == ["DisconnectCoordinator", "FindCoordinator"]
    assert not h.m.coordinator_known
    assert h.coordinator_found(one(out, act.FindCoordinator)) == [], "still inside the backoff"
    retry = one(h.advance(0.1), act.SendJoinGroup)
    assert retry.reason == f"rebalance failed due to {code.name}"


def test_unknown_member_id_resets_the_member_id_and_rejoins_at_once() -> None:
    """testJoinGroupRequestWithGroupInstanceIdNotFound: the broker forgot us; join as a new member."""
    h = Harness()
    h.become_stable(generation=4)
    h.feed(ev.RequestRejoin, reason="metadata changed")
    join = one(h.finish_callback(one(h.history, act.PartitionsRevoked)), act.SendJoinGroup)
    assert join.member_id == STATIC_ID
    rejoin = one(h.join_answer(join, ErrorCode.UNKNOWN_MEMBER_ID), act.SendJoinGroup)
    assert rejoin.member_id == ""
    assert h.m.generation == NO_GENERATION
    assert rejoin.reason == "rebalance failed due to UNKNOWN_MEMBER_ID"


def test_unknown_member_id_for_an_older_generation_does_not_reset() -> None:
    """testJoinGroupUnknownMemberResponseWithOldGeneration."""
    h = Harness()
    h.become_stable(generation=4)
    h.feed(ev.RequestRejoin, reason="metadata changed")
    join = one(h.finish_callback(one(h.history, act.PartitionsRevoked)), act.SendJoinGroup)
    stale = msgspec.structs.replace(join.token, generation=3, member_id="someone-else")
    rejoin = one(
        h.feed(ev.JoinGroupResponse, token=stale, error_code=ErrorCode.UNKNOWN_MEMBER_ID), act.SendJoinGroup
    )
    assert rejoin.member_id == STATIC_ID, "the newer identity survives a stale UNKNOWN_MEMBER_ID"
    assert h.m.generation == 4


def test_rebalance_in_progress_retries_at_once_without_reset() -> None:
    """testJoinGroupRequestWithRebalanceInProgress."""
    h = Harness(instance_id=None)
    join = h.start_until_join()
    second = one(h.join_answer(join, ErrorCode.MEMBER_ID_REQUIRED, member_id="m-1"), act.SendJoinGroup)
    third = one(h.join_answer(second, ErrorCode.REBALANCE_IN_PROGRESS), act.SendJoinGroup)
    assert third.member_id == "m-1"


def test_fenced_instance_id_on_join_is_fatal_and_names_group_and_instance() -> None:
    """testJoinGroupRequestWithFencedInstanceIdException."""
    h = Harness()
    join = h.start_until_join()
    out = h.join_answer(join, ErrorCode.FENCED_INSTANCE_ID)
    fatal = one(out, act.Fatal)
    assert isinstance(fatal.error, FencedInstanceIdError)
    assert fatal.error.group_id == GROUP
    assert fatal.error.group_instance_id == INSTANCE
    assert "another process" in str(fatal.error)
    assert "session.timeout.ms" in str(fatal.error)
    assert h.m.state is MemberState.FENCED
    assert h.advance(60.0) == []


@pytest.mark.parametrize(
    ("code", "error_type"),
    [
        (ErrorCode.INCONSISTENT_GROUP_PROTOCOL, InconsistentGroupProtocolError),
        (ErrorCode.INVALID_SESSION_TIMEOUT, InvalidSessionTimeoutError),
        (ErrorCode.INVALID_GROUP_ID, InvalidGroupIdError),
        (ErrorCode.GROUP_AUTHORIZATION_FAILED, GroupAuthorizationFailedError),
        (ErrorCode.GROUP_MAX_SIZE_REACHED, GroupMaxSizeReachedError),
        (ErrorCode.UNSUPPORTED_VERSION, UnsupportedVersionError),
        (ErrorCode.UNKNOWN_SERVER_ERROR, UnknownServerError),
        (ErrorCode.ILLEGAL_GENERATION, Exception),
    ],
)
def test_fatal_join_errors_end_the_member(code: ErrorCode, error_type: type[Exception]) -> None:
    """testGroupMaxSizeExceptionIsFatal and the rest of the fatal set; unexpected codes are fatal too."""
    h = Harness(instance_id=None)
    join = h.start_until_join()
    out = h.join_answer(join, code)
    fatal = one(out, act.Fatal)
    assert isinstance(fatal.error, error_type)
    assert h.m.state is MemberState.FAILED
    assert "SendJoinGroup" not in kinds(h.advance(30.0))
    assert one(h.feed(ev.PollCalled), act.Fatal).error is fatal.error


def test_unsupported_version_for_a_static_member_says_the_broker_is_too_old() -> None:
    """Issue 4 item 1: a clear error, never a silent fall-back to dynamic membership."""
    h = Harness()
    join = h.start_until_join()
    fatal = one(h.join_answer(join, ErrorCode.UNSUPPORTED_VERSION), act.Fatal)
    assert isinstance(fatal.error, UnsupportedVersionError)
    assert "too old for static membership" in str(fatal.error)


def test_unrecognised_error_code_is_reported_with_its_number() -> None:
    h = Harness()
    join = h.start_until_join()
    fatal = one(h.join_answer(join, 9999), act.Fatal)
    assert "9999" in str(fatal.error)


# ---------------------------------------------------------------- connection loss keeps the member id


@pytest.mark.parametrize("kind", [FailureKind.DISCONNECTED, FailureKind.TIMED_OUT])
def test_join_disconnect_keeps_member_id(kind: FailureKind) -> None:
    """testRetainMemberIdAfterJoinGroupDisconnect."""
    h = Harness(instance_id=None)
    join = h.start_until_join()
    second = one(h.join_answer(join, ErrorCode.MEMBER_ID_REQUIRED, member_id="m-1"), act.SendJoinGroup)
    out = h.feed(ev.RequestFailed, token=second.token, kind=kind)
    assert kinds(out) == ["DisconnectCoordinator", "FindCoordinator"]
    h.coordinator_found(one(out, act.FindCoordinator))
    retry = one(h.advance(0.1), act.SendJoinGroup)
    assert retry.member_id == "m-1"


def test_sync_disconnect_keeps_member_id_and_restarts_from_join() -> None:
    """testRetainMemberIdAfterSyncGroupDisconnect."""
    h = Harness()
    join = h.start_until_join()
    sync = one(h.join_answer(join, generation=2, member_id=STATIC_ID), act.SendSyncGroup)
    out = h.feed(ev.RequestFailed, token=sync.token)
    h.coordinator_found(one(out, act.FindCoordinator))
    retry = one(h.advance(0.1), act.SendJoinGroup)
    assert retry.member_id == STATIC_ID
    assert retry.reason == "SyncGroup disconnected"


def test_response_to_an_unknown_request_is_ignored() -> None:
    h = Harness()
    join = h.start_until_join()
    bogus = RequestToken(request_id=999, generation=join.token.generation, member_id="")
    assert h.feed(ev.JoinGroupResponse, token=bogus, error_code=ErrorCode.FENCED_INSTANCE_ID) == []
    assert h.m.state is MemberState.PREPARING_REBALANCE


# ---------------------------------------------------------------- rejoin reasons


def test_rejoin_reason_is_sent_and_truncated_to_255_characters() -> None:
    """testRejoinReason."""
    h = Harness()
    h.become_stable()
    h.feed(ev.RequestRejoin, reason="x" * 300)
    join = one(h.finish_callback(one(h.history, act.PartitionsRevoked)), act.SendJoinGroup)
    assert join.reason == "x" * 255


def test_rejoin_reason_is_cleared_after_a_successful_sync() -> None:
    h = Harness()
    h.become_stable()
    h.feed(ev.RequestRejoin, reason="first")
    join = one(h.finish_callback(one(h.history, act.PartitionsRevoked)), act.SendJoinGroup)
    h.become_stable(join=join, generation=2)
    h.feed(ev.RequestRejoin, reason="")
    join2 = one(h.finish_callback(of(h.history, act.PartitionsRevoked)[-1]), act.SendJoinGroup)
    assert join2.reason == ""


# ---------------------------------------------------------------- leadership


def _members() -> tuple[JoinGroupMember, ...]:
    return (
        JoinGroupMember(member_id=STATIC_ID, group_instance_id=INSTANCE, metadata=b"t,u"),
        JoinGroupMember(member_id="pod-1-x", group_instance_id="pod-1", metadata=b"v"),
        JoinGroupMember(member_id="dyn-1", group_instance_id=None, metadata=b"t"),
    )


def test_leader_runs_the_assignor_with_every_member_and_their_topics() -> None:
    h = Harness()
    join = h.start_until_join()
    out = h.join_answer(join, generation=5, member_id=STATIC_ID, leader_id=STATIC_ID, members=_members())
    assert kinds(out) == ["LeaderElected", "RunAssignor"]
    elected = one(out, act.LeaderElected)
    assert not elected.skip_assignment
    assert elected.group_topics == {"t", "u", "v"}
    run = one(out, act.RunAssignor)
    assert run.members == _members()
    assert run.generation == 5
    assert run.protocol_name == "range"
    assert h.m.is_leader
    assert h.m.group_topics == {"t", "u", "v"}
    sync = one(
        h.feed(ev.AssignmentComputed, generation=5, assignments={"pod-1-x": b"v:0", STATIC_ID: b"t:0"}),
        act.SendSyncGroup,
    )
    assert sync.assignments == (
        act.SyncAssignment(member_id=STATIC_ID, assignment=b"t:0"),
        act.SyncAssignment(member_id="pod-1-x", assignment=b"v:0"),
    ), "sorted by member id so the request is deterministic"
    assigned = one(h.sync_answer(sync, partitions=[tp("t", 0)]), act.PartitionsAssigned)
    assert assigned.partitions == {tp("t", 0)}


def test_assignment_for_another_generation_is_ignored() -> None:
    h = Harness()
    join = h.start_until_join()
    h.join_answer(join, generation=5, member_id=STATIC_ID, leader_id=STATIC_ID, members=_members())
    assert h.feed(ev.AssignmentComputed, generation=4, assignments={}) == []
    assert of(h.feed(ev.AssignmentComputed, generation=5, assignments={}), act.SendSyncGroup)


def test_assignor_failure_sends_no_plan_and_rejoins_after_backoff() -> None:
    """Issue 16: an assignor that raises must not end the member; an empty plan must not be sent."""
    h = Harness()
    join = h.start_until_join()
    h.join_answer(join, generation=5, member_id=STATIC_ID, leader_id=STATIC_ID, members=_members())
    boom = RuntimeError("assignor bug")
    out = h.feed(ev.AssignmentFailed, generation=5, error=boom)
    assert not of(out, act.Fatal), kinds(out)
    assert not of(out, act.SendSyncGroup), kinds(out)
    assert h.m.fatal_error is None
    assert h.advance(0.05) == [], "the rejoin waits for retry.backoff.ms"
    rejoin = one(h.advance(0.05), act.SendJoinGroup)
    assert rejoin.member_id == STATIC_ID
    assert "assignor bug" in rejoin.reason


def test_skip_assignment_leader_does_not_compute_but_still_watches_all_topics() -> None:
    """testOnLeaderElectedShouldSkipAssignment (KIP-814)."""
    h = Harness()
    join = h.start_until_join()
    out = h.join_answer(
        join, generation=5, member_id=STATIC_ID, leader_id=STATIC_ID, members=_members(), skip_assignment=True
    )
    assert kinds(out) == ["LeaderElected", "SendSyncGroup"]
    assert one(out, act.LeaderElected).skip_assignment
    assert one(out, act.SendSyncGroup).assignments == ()
    assert h.m.is_leader
    assert h.m.group_topics == {"t", "u", "v"}
    assert h.m.group_members == _members()
    assigned = one(
        h.sync_answer(one(out, act.SendSyncGroup), partitions=[tp("t", 1)]), act.PartitionsAssigned
    )
    assert assigned.partitions == {tp("t", 1)}, "the group keeps its existing assignment"


def test_unreadable_member_subscription_is_a_decode_error() -> None:
    h = Harness()
    join = h.start_until_join()
    bad = (JoinGroupMember(member_id=STATIC_ID, group_instance_id=INSTANCE, metadata=b"!garbage"),)
    fatal = one(h.join_answer(join, member_id=STATIC_ID, leader_id=STATIC_ID, members=bad), act.Fatal)
    assert isinstance(fatal.error, DecodeError)


def test_leadership_is_cleared_when_a_new_join_starts() -> None:
    h = Harness()
    join = h.start_until_join()
    out = h.join_answer(
        join, member_id=STATIC_ID, leader_id=STATIC_ID, members=_members(), skip_assignment=True
    )
    h.finish_callback(one(h.sync_answer(one(out, act.SendSyncGroup)), act.PartitionsAssigned))
    h.feed(ev.RequestRejoin, reason="r")
    h.finish_callback(of(h.history, act.PartitionsRevoked)[-1])
    assert not h.m.is_leader
    assert h.m.group_topics == frozenset()


@pytest.mark.parametrize("suffix", [UUID22, "123e4567-e89b-12d3-a456-426614174000"])
def test_below_v9_a_leader_id_minted_for_our_instance_id_is_guessed_as_ours(suffix: str) -> None:
    """KAFKA-13435: the returning static leader is told the old leader id and no members."""
    h = Harness()
    join = h.start_until_join()
    new_id = f"{INSTANCE}-BBBBBBBBBBBBBBBBBBBBBB"
    out = h.join_answer(join, generation=5, member_id=new_id, leader_id=f"{INSTANCE}-{suffix}")
    guessed = one(out, act.LeadershipGuessed)
    assert guessed.leader_id == f"{INSTANCE}-{suffix}"
    assert guessed.member_id == new_id
    assert h.m.leadership_guessed
    assert not h.m.is_leader, "the broker did not say so; the flag is for the driver to act on"
    assert one(out, act.SendSyncGroup).assignments == ()


@pytest.mark.parametrize(
    ("instance_id", "leader_id"),
    [
        ("a", f"a-b-{UUID22}"),  # instance "a-b" leads, not "a"
        ("a", "a-short"),
        (INSTANCE, f"pod-1-{UUID22}"),
        (None, f"{INSTANCE}-{UUID22}"),
    ],
)
def test_leadership_guess_needs_a_whole_minted_id_for_our_instance(
    instance_id: str | None, leader_id: str
) -> None:
    h = Harness(instance_id=instance_id)
    join = h.start_until_join()
    out = h.join_answer(join, member_id="me-1", leader_id=leader_id)
    assert not of(out, act.LeadershipGuessed)
    assert not h.m.leadership_guessed


def test_no_leadership_guess_when_the_broker_lists_members_or_skips() -> None:
    h = Harness()
    join = h.start_until_join()
    out = h.join_answer(join, member_id="me-1", leader_id=f"{INSTANCE}-{UUID22}", members=_members())
    assert not of(out, act.LeadershipGuessed)


def test_static_leader_that_skipped_can_still_trigger_a_rebalance() -> None:
    """testStaticLeaderRejoinsGroupAndCanTriggersRebalance / ...DetectMetadataChangesForOtherMembers.

    The returning leader skipped the assignor but watches every member's topics; when one of them
    changes (here a topic only pod-1 subscribes to), RequestRejoin sends it back with its member id,
    which as the leader of a Stable group forces a rebalance on the broker.
    """
    h = Harness()
    join = h.start_until_join()
    out = h.join_answer(
        join, generation=5, member_id=STATIC_ID, leader_id=STATIC_ID, members=_members(), skip_assignment=True
    )
    assert "v" in h.m.group_topics, "a topic only another member subscribes to is watched too"
    h.finish_callback(
        one(h.sync_answer(one(out, act.SendSyncGroup), partitions=[tp("t", 0)]), act.PartitionsAssigned)
    )
    h.feed(ev.RequestRejoin, reason="partitions of v changed from 1 to 2")
    rejoin = one(h.finish_callback(of(h.history, act.PartitionsRevoked)[-1]), act.SendJoinGroup)
    assert rejoin.member_id == STATIC_ID
    assert rejoin.reason == "partitions of v changed from 1 to 2"
    follow = one(
        h.join_answer(rejoin, generation=6, member_id=STATIC_ID, leader_id=STATIC_ID, members=_members()),
        act.RunAssignor,
    )
    assert follow.generation == 6, "this time the leader computes"


def test_eager_first_join_runs_the_revoke_callback_with_nothing_first() -> None:
    """aiokafka's _on_join_prepare: on_partitions_revoked(set()) before the first JoinGroup, which waits
    for it; once only (later joins revoke what was assigned, as before)."""
    h = Harness()
    out = h.coordinator_found(h.start())
    revoked = one(out, act.PartitionsRevoked)
    assert revoked.partitions == frozenset()
    assert kinds(out) == ["PartitionsRevoked"], "no StopFetching (nothing fetched), no join before it ends"
    join = one(h.finish_callback(revoked), act.SendJoinGroup)
    sync = one(h.join_answer(join), act.SendSyncGroup)
    h.sync_answer(sync, partitions=[tp("t", 0)])
    assert h.m.state is MemberState.STABLE
    assert [r.partitions for r in of(h.history, act.PartitionsRevoked)] == [frozenset()]


def test_eager_first_join_revoke_commits_nothing_and_joins_after_an_error_retry() -> None:
    h = Harness()
    revoked = one(h.coordinator_found(h.start()), act.PartitionsRevoked)
    join = one(h.finish_callback(revoked, t0=5), act.SendJoinGroup)  # offsets of nothing owned: ignored
    assert not of(h.history, act.SendOffsetCommit)
    retry = h.join_answer(join, ErrorCode.REBALANCE_IN_PROGRESS)
    assert kinds(retry) == ["SendJoinGroup"], "the first-join revoke runs once, not before each attempt"


def test_cooperative_first_join_runs_no_revoke_callback() -> None:
    """Cooperative listeners only ever hear of partitions that go (never an empty revoke)."""
    h = Harness(rebalance_protocol=RebalanceProtocol.COOPERATIVE)
    out = h.coordinator_found(h.start())
    assert kinds(out) == ["SendJoinGroup"]


def test_no_common_protocol_names_ours_the_groups_and_the_setting_that_fixes_it() -> None:
    """The first thing a pod moved from another client meets when the lists differ."""
    h = Harness(instance_id=None)
    join = h.start_until_join()
    out = h.feed(
        ev.JoinGroupResponse,
        token=join.token,
        error_code=ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
        refusal_detail="the group uses protocol 'roundrobin' (1 member: aiokafka-0.14)",
    )
    error = one(out, act.Fatal).error
    assert isinstance(error, InconsistentGroupProtocolError)
    offered = ", ".join(p.name for p in join.protocols)
    assert f"This member offers {offered}; the group uses protocol 'roundrobin'" in str(error)
    assert "assignors= (KAFKA_PARTITION_ASSIGNMENT_STRATEGY)" in str(error)
    bare = Harness(instance_id=None)
    out = bare.join_answer(bare.start_until_join(), ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    assert "the group's members offer none of them" in str(one(out, act.Fatal).error), "no DescribeGroups"

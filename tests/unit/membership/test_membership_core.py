"""The shared pieces of the membership core: reconciliation, rules as data, and the failures the runtime
reports (unsupported versions, requests that cannot be encoded, a coordinator that names a protocol we
never offered)."""

from __future__ import annotations

from membership_harness import INSTANCE, PROTOCOLS, UUID22, Harness, kinds, of, one, tp

from staticconsumer.errors import (
    EncodeError,
    ErrorCode,
    InconsistentGroupProtocolError,
    StaticMembershipUnsupportedError,
    UnsupportedVersionError,
)
from staticconsumer.membership import FailureKind, OffsetAndMetadata, ReleaseReason, rules
from staticconsumer.membership import actions as act
from staticconsumer.membership import events as ev
from staticconsumer.membership.backoff import Backoff
from staticconsumer.membership.observe import Joined, JoinStarted
from staticconsumer.membership.reconcile import Ownership, RebalanceProtocol, diff, release_before_join

STATIC_ID = f"{INSTANCE}-{UUID22}"


def _stable(h: Harness, partitions: list[tuple[str, int]]) -> None:
    join = h.start_until_join()
    sync = one(h.join_answer(join, member_id=STATIC_ID), act.SendSyncGroup)
    assigned = one(h.sync_answer(sync, partitions=[tp(t, p) for t, p in partitions]), act.PartitionsAssigned)
    h.feed(ev.CallbackFinished, callback_id=assigned.callback_id)


# -- reconciliation ---------------------------------------------------------------------------------


def test_diff_splits_owned_and_target_into_revoke_assign_and_keep() -> None:
    owned = frozenset({tp("t", 0), tp("t", 1), tp("u", 0)})
    target = frozenset({tp("t", 1), tp("u", 0), tp("u", 1)})
    delta = diff(owned, target)
    assert delta.revoke == {tp("t", 0)}
    assert delta.assign == {tp("u", 1)}
    assert delta.keep == {tp("t", 1), tp("u", 0)}


def test_eager_releases_everything_before_a_join_cooperative_only_unsubscribed_topics() -> None:
    owned = frozenset({tp("t", 0), tp("gone", 0)})
    assert release_before_join(RebalanceProtocol.EAGER, owned, frozenset({"t"})) == owned
    assert release_before_join(RebalanceProtocol.COOPERATIVE, owned, frozenset({"t"})) == {tp("gone", 0)}


def test_ownership_hands_the_listener_only_what_is_new_and_keeps_what_stays() -> None:
    ownership = Ownership()
    first = one(ownership.assign(frozenset({tp("t", 0), tp("t", 1)}), 1), act.PartitionsAssigned)
    assert first.partitions == first.owned == {tp("t", 0), tp("t", 1)}
    ownership.callback_finished(first.callback_id)
    out = ownership.revoke(frozenset({tp("t", 1)}), ReleaseReason.REBALANCE, everything=False)
    assert kinds(out) == ["StopFetching", "PartitionsRevoked"]
    assert one(out, act.StopFetching).partitions == {tp("t", 1)}, "only the revoked partition stops"
    release = ownership.callback_finished(one(out, act.PartitionsRevoked).callback_id)
    assert release is not None
    assert ownership.owned == {tp("t", 0)}
    assert ownership.holding
    second = one(ownership.assign(frozenset({tp("t", 0), tp("t", 2)}), 2), act.PartitionsAssigned)
    assert second.partitions == {tp("t", 2)}
    assert second.owned == {tp("t", 0), tp("t", 2)}


def test_releasing_everything_means_holding_nothing_and_stopping_every_fetch() -> None:
    ownership = Ownership()
    ownership.callback_finished(
        one(ownership.assign(frozenset({tp("t", 0)}), 1), act.PartitionsAssigned).callback_id
    )
    out = ownership.lose(ownership.owned, ReleaseReason.MEMBERSHIP_LOST, everything=True)
    assert one(out, act.StopFetching).partitions is None
    ownership.callback_finished(one(out, act.PartitionsLost).callback_id)
    assert not ownership.holding
    assert ownership.owned == frozenset()


# -- rules as data --------------------------------------------------------------------------------


def test_every_error_the_java_tables_name_has_a_row() -> None:
    """The conformance reference's tables (section 3.3), as the codes each API must list explicitly."""
    assert set(rules.JOIN_GROUP.reactions) >= {
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.UNKNOWN_MEMBER_ID,
        ErrorCode.MEMBER_ID_REQUIRED,
        ErrorCode.REBALANCE_IN_PROGRESS,
        ErrorCode.FENCED_INSTANCE_ID,
        ErrorCode.GROUP_MAX_SIZE_REACHED,
    }
    assert set(rules.SYNC_GROUP.reactions) >= {
        ErrorCode.REBALANCE_IN_PROGRESS,
        ErrorCode.UNKNOWN_MEMBER_ID,
        ErrorCode.ILLEGAL_GENERATION,
        ErrorCode.FENCED_INSTANCE_ID,
    }
    assert rules.HEARTBEAT.reaction(ErrorCode.FENCED_INSTANCE_ID).steps == (rules.Step.FENCE,)
    assert rules.HEARTBEAT.reaction(ErrorCode.FENCED_INSTANCE_ID).stale == (rules.Step.HEARTBEAT_OK,)
    assert rules.commit_reaction(ErrorCode.OFFSET_METADATA_TOO_LARGE).verdict is rules.Verdict.BROKER_ERROR


def test_the_tables_render_one_row_per_reaction_for_the_docs() -> None:
    text = rules.markdown()
    assert "| COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR |" in text
    assert "| any other | fatal and sticky: the broker's error | same |" in text
    assert text.count("**") == 8, "four tables, each with a bold title"


def test_backoff_doubles_from_the_base_up_to_the_cap() -> None:
    backoff = Backoff(100, 1_000)
    assert [backoff.seconds(n) for n in range(1, 7)] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]


# -- failures the runtime reports -----------------------------------------------------------------


def test_a_protocol_the_member_never_offered_is_a_typed_fatal_error_naming_both() -> None:
    h = Harness()
    join = h.start_until_join()
    out = h.join_answer(join, member_id=STATIC_ID, protocol_name="sticky")
    error = one(out, act.Fatal).error
    assert isinstance(error, InconsistentGroupProtocolError)
    assert "'sticky'" in str(error)
    assert str([p.name for p in PROTOCOLS]) in str(error)
    assert not of(out, act.SendSyncGroup)


def test_a_request_no_common_version_can_carry_ends_a_static_member_with_a_clear_error() -> None:
    h = Harness()
    join = h.start_until_join()
    out = h.feed(
        ev.RequestFailed, token=join.token, kind=FailureKind.UNSUPPORTED_VERSION, detail="JoinGroup v4"
    )
    error = one(out, act.Fatal).error
    assert isinstance(error, StaticMembershipUnsupportedError)
    assert "JoinGroup v4" in str(error)
    dynamic = Harness(instance_id=None)
    join = dynamic.start_until_join()
    failed = dynamic.feed(
        ev.RequestFailed, token=join.token, kind=FailureKind.UNSUPPORTED_VERSION, detail="x"
    )
    assert isinstance(one(failed, act.Fatal).error, UnsupportedVersionError)


def test_a_commit_that_cannot_be_encoded_fails_the_commit_alone_never_as_a_network_error() -> None:
    h = Harness()
    _stable(h, [("t", 0)])
    send = one(
        h.feed(ev.CommitRequested, commit_id=7, offsets={tp("t", 0): OffsetAndMetadata(3)}),
        act.SendOffsetCommit,
    )
    out = h.feed(ev.RequestFailed, token=send.token, kind=FailureKind.INVALID_REQUEST, detail="bad metadata")
    done = one(out, act.CommitCompleted)
    assert isinstance(done.error, EncodeError)
    assert "bad metadata" in str(done.error)
    assert not of(out, act.DisconnectCoordinator), "the coordinator is fine"
    assert h.m.coordinator_known
    assert h.m.fatal_error is None


def test_unrecoverable_runtime_failures_end_the_member_with_partitions_lost() -> None:
    h = Harness()
    _stable(h, [("t", 0)])
    boom = RuntimeError("committed offsets unreadable")
    out = h.feed(ev.Unrecoverable, error=boom)
    assert kinds(out)[:2] == ["StopFetching", "PartitionsLost"]
    assert one(out, act.Fatal).error is boom


def test_milestones_say_when_a_join_starts_and_when_it_succeeded() -> None:
    h = Harness()
    lookup = h.start()
    h.prepare_first_join(h.coordinator_found(lookup))
    started = [m for m in h.m.milestones if isinstance(m, JoinStarted)]
    assert len(started) == 1
    join = h.sent(act.SendJoinGroup)[0]
    h.join_answer(join, member_id=STATIC_ID, leader_id=STATIC_ID, members=())
    joined = [m for m in h.m.milestones if isinstance(m, Joined)]
    assert len(joined) == 1
    assert joined[0].leader
    assert joined[0].generation == 1

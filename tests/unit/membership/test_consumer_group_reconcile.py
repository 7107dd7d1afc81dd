"""The consumer protocol's machine (KIP-848): joining, reconciling towards the broker's target, acknowledging,
heartbeats at the broker's interval, topic ids resolved (unresolved ones wait), subscriptions."""

from __future__ import annotations

from consumer_harness import (
    INSTANCE,
    INTERVAL_MS,
    MEMBER,
    ConsumerHarness,
    T,
    U,
    kinds,
    of,
    one,
    owned_of,
    tp,
)

from staticconsumer.errors import ErrorCode
from staticconsumer.membership import MemberState, ReleaseReason
from staticconsumer.membership import actions as act
from staticconsumer.membership import events as ev
from staticconsumer.membership.observe import Joined, JoinStarted


def test_the_join_is_a_full_heartbeat_at_epoch_0_with_the_clients_own_member_id() -> None:
    h = ConsumerHarness(server_assignor="uniform", rack_id="rack-a")
    join = h.start_until_join()
    assert (join.member_id, join.member_epoch, join.instance_id, join.purpose) == (
        MEMBER,
        0,
        INSTANCE,
        "join",
    )
    assert join.subscribed_topic_names == ("t", "u")
    assert join.subscribed_topic_regex is None
    assert join.rebalance_timeout_ms == 300_000, "the rebalance timeout is max.poll.interval.ms, as in Java"
    assert (join.server_assignor, join.rack_id) == ("uniform", "rack-a")
    assert join.owned == (), "a join reports owning nothing"
    assert h.state() is MemberState.JOINING
    assert any(isinstance(m, JoinStarted) for m in h.m.milestones)


def test_join_reconcile_acknowledge_stable() -> None:
    h = ConsumerHarness()
    join = h.start_until_join()
    out = h.answer(join, epoch=3, assignment={T: [0, 1]})
    (joined,) = [m for m in h.m.milestones if isinstance(m, Joined)]
    assert (joined.generation, joined.member_id, joined.leader) == (3, MEMBER, False)
    assert h.state() is MemberState.RECONCILING
    resolve = one(out, act.ResolveTopicIds)
    assert resolve.topic_ids == {T}
    assert not of(out, act.PartitionsAssigned), "nothing is assigned before its topic has a name"

    assigned = one(h.resolve(resolve), act.PartitionsAssigned)
    assert assigned.partitions == assigned.owned == {tp("t", 0), tp("t", 1)}
    assert assigned.generation == 3
    assert not h.sent(act.SendConsumerGroupHeartbeat)[1:], "the acknowledgement waits for the listener"

    ack = one(h.finish(assigned), act.SendConsumerGroupHeartbeat)
    assert h.state() is MemberState.ACKNOWLEDGING
    assert (ack.purpose, ack.member_epoch) == ("acknowledge", 3)
    assert owned_of(ack) == {T: [0, 1]}, "the acknowledgement reports what is owned, by topic id"
    assert ack.subscribed_topic_names is None, "unchanged fields are null after a successful heartbeat"
    assert ack.rebalance_timeout_ms == -1
    h.answer(ack, epoch=3)
    assert h.state() is MemberState.STABLE
    assert h.m.assignment == {tp("t", 0), tp("t", 1)}


def test_heartbeats_follow_the_brokers_interval_and_carry_only_what_changed() -> None:
    h = ConsumerHarness(heartbeat_interval_ms=3_000)
    h.stable()
    start = h.now
    beat = h.next_heartbeat()
    assert h.now - start == INTERVAL_MS / 1000, "the broker's heartbeat interval, not the local setting"
    assert beat.purpose == "heartbeat"
    assert (beat.owned, beat.subscribed_topic_names, beat.server_assignor) == (None, None, None)
    assert beat.instance_id == INSTANCE, (
        "the instance id goes on every heartbeat (so a replaced member is fenced)"
    )
    h.answer(beat, epoch=1, interval_ms=2_000)
    start = h.now
    h.next_heartbeat()
    assert h.now - start == 2.0


def test_a_new_target_revokes_first_commits_then_assigns_and_never_touches_what_stays() -> None:
    h = ConsumerHarness()
    h.stable({T: [0, 1]}, epoch=1)
    beat = h.next_heartbeat()
    out = h.answer(beat, epoch=2, assignment={T: [1], U: [0]})
    assert kinds(out) == ["ResolveTopicIds", "StopFetching", "PartitionsRevoked"], "revoking needs no names"
    resolve = one(out, act.ResolveTopicIds)
    assert one(out, act.StopFetching).partitions == {tp("t", 0)}, "only the revoked partition stops"
    revoked = one(out, act.PartitionsRevoked)
    assert (revoked.partitions, revoked.reason) == ({tp("t", 0)}, ReleaseReason.REBALANCE)
    assert h.state() is MemberState.RECONCILING

    out = h.finish(revoked, t0=42)
    commit = one(out, act.SendOffsetCommit)
    assert (commit.generation, commit.member_id, commit.commit_id) == (2, MEMBER, None)
    assert not of(out, act.PartitionsAssigned), (
        "nothing new before the revoked partition's commit is answered"
    )
    assert not of(h.resolve(resolve), act.PartitionsAssigned), "u is named, but the commit is still out"
    out = h.commit_answer(commit)
    assigned = one(out, act.PartitionsAssigned)
    assert assigned.partitions == {tp("u", 0)}
    assert assigned.owned == {tp("t", 1), tp("u", 0)}
    assert not any(a.partitions is None or tp("t", 1) in a.partitions for a in h.sent(act.StopFetching)), (
        "a kept partition is never stopped"
    )
    ack = one(h.finish(assigned), act.SendConsumerGroupHeartbeat)
    assert owned_of(ack) == {T: [1], U: [0]}
    h.answer(ack, epoch=2)
    assert h.state() is MemberState.STABLE
    assert h.m.committed_offsets == {tp("t", 0): 42}


def test_a_revoke_only_step_is_acknowledged_once_its_commit_is_answered_and_assigned_heard() -> None:
    h = ConsumerHarness()
    h.stable({T: [0, 1]})
    out = h.answer(h.next_heartbeat(), epoch=2, assignment={T: [1]})
    revoked = one(out, act.PartitionsRevoked)
    commit = one(h.finish(revoked, t0=7), act.SendOffsetCommit)
    assert not h.sent(act.SendConsumerGroupHeartbeat)[3:], "no acknowledgement while the commit is out"
    assigned = one(h.commit_answer(commit), act.PartitionsAssigned)
    # nothing new, and still on_partitions_assigned (empty), as Java's consumer and the classic protocol
    # do: the reconciliation has an end the listener and the observers see
    assert (assigned.partitions, assigned.owned, assigned.generation) == (frozenset(), {tp("t", 1)}, 2)
    assert not h.sent(act.SendConsumerGroupHeartbeat)[3:], "no acknowledgement before the callback"
    ack = one(h.finish(assigned), act.SendConsumerGroupHeartbeat)
    assert (ack.purpose, owned_of(ack)) == ("acknowledge", {T: [1]})
    assert not of(h.run_until(h.now + 1), act.PartitionsAssigned), "one assigned callback per step"


def test_a_target_that_changes_during_a_revoke_is_reconciled_against_the_latest_one() -> None:
    h = ConsumerHarness()
    h.stable({T: [0, 1]})
    revoked = one(h.answer(h.next_heartbeat(), epoch=2, assignment={T: [1]}), act.PartitionsRevoked)
    beat = h.next_heartbeat()
    h.answer(beat, epoch=3, assignment={T: [1, 2]})
    out = h.finish(revoked)
    assigned = one(out, act.PartitionsAssigned)
    assert assigned.partitions == {tp("t", 2)}
    assert assigned.generation == 3


def test_unresolved_topic_ids_wait_while_the_rest_is_reconciled() -> None:
    h = ConsumerHarness()
    join = h.start_until_join()
    resolve = one(h.answer(join, assignment={T: [0], U: [0]}), act.ResolveTopicIds)
    out = h.resolve(resolve, names={T: "t"})
    assigned = one(out, act.PartitionsAssigned)
    assert assigned.partitions == {tp("t", 0)}, "u's id is unknown yet: its partition waits"
    assert h.m.target_unresolved == {U}
    ack = one(h.finish(assigned), act.SendConsumerGroupHeartbeat)
    assert owned_of(ack) == {T: [0]}
    h.answer(ack)
    assert h.state() is MemberState.ACKNOWLEDGING, "not stable while part of the target waits"
    retry = one(h.run_until(h.now + 0.1), act.ResolveTopicIds)
    assert retry.topic_ids == {U}
    added = one(h.resolve(retry), act.PartitionsAssigned)
    assert added.partitions == {tp("u", 0)}
    ack = one(h.finish(added), act.SendConsumerGroupHeartbeat)
    h.answer(ack)
    assert h.state() is MemberState.STABLE


def test_an_empty_first_assignment_is_still_handed_to_the_listener_and_acknowledged() -> None:
    h = ConsumerHarness()
    join = h.start_until_join()
    assigned = one(h.answer(join, assignment={}), act.PartitionsAssigned)
    assert assigned.partitions == assigned.owned == frozenset()
    ack = one(h.finish(assigned), act.SendConsumerGroupHeartbeat)
    assert ack.owned == ()


def test_a_pattern_goes_to_the_broker_and_a_subscription_change_goes_out_at_once() -> None:
    h = ConsumerHarness()
    join = h.start_until_join(topics=(), pattern="orders-.*")
    assert (join.subscribed_topic_names, join.subscribed_topic_regex) == ((), "orders-.*")
    h.stable({T: [0]}, join=join)
    out = h.feed(ev.UpdateProtocols, protocols=(), reason="subscribe", topics=frozenset({"t", "v"}))
    beat = one(out, act.SendConsumerGroupHeartbeat)
    assert (beat.subscribed_topic_names, beat.subscribed_topic_regex) == (("t", "v"), ""), (
        "null would leave the broker the regex beside the names: an empty one drops it"
    )
    assert beat.owned is None


def test_unsubscribing_from_a_pattern_drops_the_regex_and_names_only_never_send_one() -> None:
    h = ConsumerHarness()
    join = h.start_until_join(topics=(), pattern="orders-.*")
    h.stable({T: [0]}, join=join)
    out = h.feed(ev.UpdateProtocols, protocols=(), reason="unsubscribe", topics=frozenset())
    beat = one(out, act.SendConsumerGroupHeartbeat)
    assert (beat.subscribed_topic_names, beat.subscribed_topic_regex) == ((), "")

    named = ConsumerHarness()
    join = named.start_until_join()
    named.stable(join=join)
    out = named.feed(ev.UpdateProtocols, protocols=(), reason="subscribe", topics=frozenset({"t"}))
    beat = one(out, act.SendConsumerGroupHeartbeat)
    assert (beat.subscribed_topic_names, beat.subscribed_topic_regex) == (("t",), None), (
        "a v0 broker refuses any regex field: a member that never sent one sends none"
    )


def test_coordinator_errors_rediscover_and_the_next_heartbeat_is_full() -> None:
    h = ConsumerHarness()
    h.stable()
    out = h.answer(h.next_heartbeat(), ErrorCode.NOT_COORDINATOR)
    assert one(out, act.DisconnectCoordinator)
    lookup = one(out, act.FindCoordinator)
    assert not of(
        h.feed(ev.FindCoordinatorResponse, token=lookup.token, node_id=2), act.SendConsumerGroupHeartbeat
    )
    beat = one(h.run_until(h.now + 0.1), act.SendConsumerGroupHeartbeat)
    assert beat.member_epoch == 1
    assert beat.subscribed_topic_names == ("t", "u"), "full after an error"
    assert owned_of(beat) == {T: [0, 1]}
    assert beat.rebalance_timeout_ms == 300_000


def test_a_lost_heartbeat_backs_off_and_resends_everything() -> None:
    h = ConsumerHarness()
    h.stable()
    beat = h.next_heartbeat()
    lookup = one(h.feed(ev.RequestFailed, token=beat.token), act.FindCoordinator)
    h.feed(ev.FindCoordinatorResponse, token=lookup.token, node_id=1)
    again = one(h.run_until(h.now + 0.1), act.SendConsumerGroupHeartbeat)
    assert again.subscribed_topic_names is not None
    assert again.owned is not None

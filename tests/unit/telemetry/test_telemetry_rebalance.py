"""Rebalance spans from a real MembershipMachine: what a join, a rebalance, a static rejoin and a failed
join record, with JoinGroup/SyncGroup children, exact timestamps and the metrics that go with them."""

from __future__ import annotations

import pytest
from opentelemetry.trace import SpanKind, StatusCode
from telemetry_harness import CLIENT_ID, GROUP, INSTANCE, MEMBER, T0, T1, Member, Telemetry, named, one

from staticconsumer.errors import ErrorCode
from staticconsumer.membership import JoinGroupMember, OffsetAndMetadata
from staticconsumer.membership import actions as act
from staticconsumer.membership import events as ev
from staticconsumer.telemetry import attributes as a


@pytest.fixture
def otel() -> Telemetry:
    return Telemetry()


def test_first_join_is_a_join_span_with_its_requests_as_children(otel: Telemetry) -> None:
    member = Member(otel)
    started = member.now
    member.join_as_follower(generation=3)

    root = otel.span(named("join"))
    assert root.kind is SpanKind.INTERNAL
    assert root.parent is None
    assert [s.name for s in otel.children(root)] == [
        named("FindCoordinator"),
        named("JoinGroup"),
        named("SyncGroup"),
    ]
    attrs = root.attributes or {}
    assert attrs[a.MESSAGING_SYSTEM] == "kafka"
    assert attrs[a.MESSAGING_CONSUMER_GROUP_NAME] == GROUP
    assert attrs[a.MESSAGING_CLIENT_ID] == CLIENT_ID
    assert attrs[a.GROUP_INSTANCE_ID] == INSTANCE
    assert attrs[a.MEMBER_ID] == MEMBER
    assert attrs[a.GENERATION_BEFORE] == -1
    assert attrs[a.GENERATION_AFTER] == 3
    assert attrs[a.REBALANCE_KIND] == "join"
    assert attrs[a.REBALANCE_OUTCOME] == "stable"
    assert attrs[a.LEADER] is False
    assert attrs[a.ASSIGNMENT_SKIPPED] is False
    assert attrs[a.PARTITIONS_ASSIGNED] == 2
    assert attrs[a.PARTITIONS_REVOKED] == 0
    assert attrs[a.PARTITIONS_LOST] == 0
    assert attrs[a.JOIN_ATTEMPTS] == 1
    assert attrs[a.PROTOCOL_NAME] == "range"
    assert a.REBALANCE_REASON not in attrs, "the first join has no reason; none is invented"

    # Monotonic times, converted exactly: Start at `started`, FindCoordinator answered 10 ms later,
    # JoinGroup 100 ms, SyncGroup 50 ms.
    assert root.start_time == member.ns(started)
    assert root.end_time == member.ns(started + 0.16)
    find, join, sync = otel.children(root)
    assert (find.start_time, find.end_time) == (member.ns(started), member.ns(started + 0.01))
    assert (join.start_time, join.end_time) == (member.ns(started + 0.01), member.ns(started + 0.11))
    assert (sync.start_time, sync.end_time) == (member.ns(started + 0.11), member.ns(started + 0.16))
    assert join.kind is SpanKind.CLIENT
    assert (join.attributes or {})[a.GENERATION] == 3

    assert otel.total(a.METRIC_REBALANCES) == 0, "a first join is not counted as a rebalance"
    durations = otel.points(a.METRIC_REBALANCE_DURATION)
    assert [(p.attributes[a.REBALANCE_KIND], p.count) for p in durations] == [("join", 1)]
    assert durations[0].sum == pytest.approx(0.16)
    assert otel.total(a.METRIC_PARTITIONS_ASSIGNED) == 2
    assert otel.points(a.METRIC_TIME_SINCE_REBALANCE) == []
    callbacks = otel.points(a.METRIC_CALLBACK_DURATION)
    assert [(p.attributes[a.CALLBACK], p.sum) for p in callbacks] == [
        ("revoked", pytest.approx(0.0)),  # eager: the empty revoke before the first join, as aiokafka's
        ("assigned", pytest.approx(0.01)),
    ]


def test_dynamic_join_records_both_joins_of_kip_394_without_calling_the_first_a_failure(
    otel: Telemetry,
) -> None:
    member = Member(otel, instance_id=None)
    join = member.start_until_join()
    second = one(
        member.join_answer(join, ErrorCode.MEMBER_ID_REQUIRED, generation=-1, member_id="m-1"),
        act.SendJoinGroup,
    )
    sync = one(member.join_answer(second, member_id="m-1"), act.SendSyncGroup)
    member.sync_answer(sync, [T0])

    root = otel.span(named("join"))
    joins = [s for s in otel.children(root) if s.name == named("JoinGroup")]
    assert len(joins) == 2
    first_attrs = joins[0].attributes or {}
    assert first_attrs[a.KAFKA_ERROR_CODE] == ErrorCode.MEMBER_ID_REQUIRED
    assert a.ERROR_TYPE not in first_attrs
    assert joins[0].status.status_code is StatusCode.UNSET
    assert (joins[1].attributes or {})[a.MEMBER_ID] == "m-1", "the second join carries the minted id"
    attrs = root.attributes or {}
    assert attrs[a.JOIN_ATTEMPTS] == 2
    assert attrs[a.LEADER] is False
    assert a.GROUP_INSTANCE_ID not in attrs, "a dynamic member has no instance id"
    assert otel.total(a.METRIC_REBALANCE_FAILURES) == 0


def test_rebalance_from_stable_revokes_commits_and_counts(otel: Telemetry) -> None:
    member = Member(otel)
    member.join_as_follower(generation=1)
    beat = member.next_heartbeat()
    started = member.now + 0.002
    member.now = started
    out = member.feed(ev.HeartbeatResponse, token=beat.token, error_code=ErrorCode.REBALANCE_IN_PROGRESS)
    revoked = one(out, act.PartitionsRevoked)
    member.now += 0.02
    released = member.finish(revoked, {T0: 5, T1: 7})
    commit, join = one(released, act.SendOffsetCommit), one(released, act.SendJoinGroup)  # back to back
    member.now += 0.01
    member.feed(ev.OffsetCommitResponse, token=commit.token, partition_errors={T0: 0, T1: 0})
    member.now += 0.3
    sync = one(member.join_answer(join, generation=2, member_id=MEMBER), act.SendSyncGroup)
    member.now += 0.05
    member.sync_answer(sync, [T1])
    ended = member.now

    root = otel.span(named("rebalance"))
    attrs = root.attributes or {}
    assert attrs[a.REBALANCE_KIND] == "rebalance"
    assert attrs[a.REBALANCE_REASON] == "group is already rebalancing"
    assert attrs[a.GENERATION_BEFORE] == 1
    assert attrs[a.GENERATION_AFTER] == 2
    assert attrs[a.PARTITIONS_REVOKED] == 2
    assert attrs[a.PARTITIONS_ASSIGNED] == 1
    assert root.start_time == member.ns(started), "the rebalance starts with the revoke, not the JoinGroup"
    assert root.end_time == member.ns(ended)
    children = otel.children(root)
    assert [s.name for s in children] == [named("commit", "t"), named("JoinGroup"), named("SyncGroup")]
    release = children[0].attributes or {}
    assert release[a.COMMIT_KIND] == "release"
    assert release[a.COMMIT_PARTITIONS] == 2
    assert release[a.MESSAGING_OPERATION_TYPE] == "settle"
    assert (children[1].attributes or {})[a.REBALANCE_REASON] == "group is already rebalancing"

    assert otel.total(a.METRIC_REBALANCES) == 1
    assert otel.total(a.METRIC_PARTITIONS_REVOKED, staticconsumer__partitions__reason="rebalance") == 2
    member.now += 4.5
    (since,) = otel.points(a.METRIC_TIME_SINCE_REBALANCE)
    assert since.value == pytest.approx(4.5)
    assert since.attributes[a.GROUP_INSTANCE_ID] == INSTANCE
    kinds = {p.attributes[a.REBALANCE_KIND]: p.count for p in otel.points(a.METRIC_REBALANCE_DURATION)}
    assert kinds == {"join": 1, "rebalance": 1}
    (commit_point,) = otel.points(a.METRIC_COMMIT_DURATION)
    assert commit_point.attributes[a.COMMIT_KIND] == "release"
    assert commit_point.sum == pytest.approx(0.01)


def test_a_release_commit_answered_after_its_rebalance_ended_ends_inside_it_and_still_counts(
    otel: Telemetry,
) -> None:
    """The rebalance can end before its release commit is answered (the commit's connection lost its
    coordinator and the rejoin went out on a new one): the commit's span ends with its parent, marked
    abandoned, and the late answer is still measured, without stretching any span."""
    member = Member(otel)
    member.join_as_follower(generation=1)
    beat = member.next_heartbeat()
    out = member.feed(ev.HeartbeatResponse, token=beat.token, error_code=ErrorCode.REBALANCE_IN_PROGRESS)
    member.now += 0.02
    released = member.finish(one(out, act.PartitionsRevoked), {T0: 5, T1: 7})
    commit, join = one(released, act.SendOffsetCommit), one(released, act.SendJoinGroup)
    member.now += 0.3
    sync = one(member.join_answer(join, generation=2, member_id=MEMBER), act.SendSyncGroup)
    member.now += 0.05
    member.sync_answer(sync, [T1])
    ended = member.now
    member.now += 2.0
    member.feed(ev.OffsetCommitResponse, token=commit.token, partition_errors={T0: 0, T1: 0})

    root = otel.span(named("rebalance"))
    assert root.end_time == member.ns(ended)
    (release,) = [s for s in otel.children(root) if s.name == named("commit", "t")]
    assert (release.attributes or {})[a.COMMIT_KIND] == "release"
    assert (release.attributes or {})[a.REQUEST_OUTCOME] == "abandoned"
    assert release.end_time == root.end_time, "no span outlives its parent"
    (commit_point,) = otel.points(a.METRIC_COMMIT_DURATION)
    assert commit_point.attributes[a.COMMIT_KIND] == "release"
    assert commit_point.sum == pytest.approx(2.35), "the late answer is still measured"
    assert a.ERROR_TYPE not in commit_point.attributes


def test_static_member_replacing_itself_after_a_poll_timeout_is_a_rejoin_not_a_rebalance(
    otel: Telemetry,
) -> None:
    member = Member(otel, max_poll_interval_ms=5_000)
    member.join_as_follower(generation=4)
    # Heartbeats flow, but the application never polls: the poll deadline passes.
    lost: act.PartitionsLost | None = None
    while lost is None:
        deadline = member.m.next_deadline()
        assert deadline is not None
        member.now = deadline
        for action in member.feed(ev.Tick):
            if isinstance(action, act.SendHeartbeat):
                member.feed(ev.HeartbeatResponse, token=action.token)
            elif isinstance(action, act.PartitionsLost):
                lost = action
    member.finish(lost)
    member.now += 30  # the application is stuck; no rebalance span is open meanwhile
    assert [s.name for s in otel.spans() if s.parent is None] == [named("join")]
    join = one(member.feed(ev.PollCalled), act.SendJoinGroup)
    rejoined_at = member.now
    sync = one(member.join_answer(join, generation=4, member_id="billing-0-new"), act.SendSyncGroup)
    member.sync_answer(sync, [T0, T1])

    root = otel.span(named("rejoin"))
    attrs = root.attributes or {}
    assert attrs[a.REBALANCE_KIND] == "rejoin"
    assert (attrs[a.GENERATION_BEFORE], attrs[a.GENERATION_AFTER]) == (4, 4)
    assert attrs[a.PARTITIONS_LOST] == 2
    assert attrs[a.MEMBER_ID] == "billing-0-new"
    assert attrs[a.REBALANCE_REASON] == "consumer poll timeout has expired"
    assert root.start_time == member.ns(rejoined_at), "the stall is not part of the rejoin"
    assert otel.total(a.METRIC_REBALANCES) == 0
    assert otel.total(a.METRIC_PARTITIONS_LOST, staticconsumer__partitions__reason="poll timeout") == 2


def test_leader_that_skips_assignment_says_so(otel: Telemetry) -> None:
    member = Member(otel)
    join = member.start_until_join()
    out = member.join_answer(join, generation=9, leader_id=MEMBER, skip_assignment=True)
    sync = one(out, act.SendSyncGroup)
    assert sync.assignments == ()
    member.sync_answer(sync, [T0])
    attrs = otel.span(named("join")).attributes or {}
    assert attrs[a.LEADER] is True
    assert attrs[a.ASSIGNMENT_SKIPPED] is True
    join_attrs = otel.span(named("JoinGroup")).attributes or {}
    assert join_attrs[a.ASSIGNMENT_SKIPPED] is True


def test_leader_computing_the_assignment(otel: Telemetry) -> None:
    member = Member(otel)
    join = member.start_until_join()
    members = (JoinGroupMember(MEMBER, INSTANCE, b"t"),)
    out = member.feed(
        ev.JoinGroupResponse,
        token=join.token,
        generation=1,
        protocol_type="consumer",
        protocol_name="range",
        leader_id=MEMBER,
        member_id=MEMBER,
        members=members,
    )
    run = one(out, act.RunAssignor)
    sync = one(
        member.feed(ev.AssignmentComputed, generation=run.generation, assignments={MEMBER: b"t:0"}),
        act.SendSyncGroup,
    )
    member.sync_answer(sync, [T0])
    attrs = otel.span(named("join")).attributes or {}
    assert (attrs[a.LEADER], attrs[a.ASSIGNMENT_SKIPPED]) == (True, False)


def test_fenced_join_fails_the_join_with_the_fencing_on_the_join_group_span(otel: Telemetry) -> None:
    member = Member(otel)
    join = member.start_until_join()
    member.now += 0.2
    out = member.join_answer(join, ErrorCode.FENCED_INSTANCE_ID)
    assert any(isinstance(x, act.Fatal) for x in out)

    root = otel.span(named("join"))
    attrs = root.attributes or {}
    assert root.status.status_code is StatusCode.ERROR
    assert attrs[a.REBALANCE_OUTCOME] == "failed"
    assert attrs[a.ERROR_TYPE] == "FENCED_INSTANCE_ID"
    join_span = otel.span(named("JoinGroup"))
    assert (join_span.attributes or {})[a.ERROR_TYPE] == "FENCED_INSTANCE_ID"
    (fenced,) = join_span.events
    assert fenced.name == a.EVENT_FENCED
    assert (fenced.attributes or {})[a.ERROR_TYPE] == "FENCED_INSTANCE_ID"
    assert (fenced.attributes or {})[a.GROUP_INSTANCE_ID] == INSTANCE
    assert fenced.timestamp == member.ns(member.now)
    assert otel.total(a.METRIC_FENCINGS) == 1
    assert otel.total(a.METRIC_REBALANCE_FAILURES, error__type="FENCED_INSTANCE_ID") == 1
    assert otel.spans(named("fenced")) == [], "no fallback span when a request span carried the fencing"


def test_retriable_join_errors_stay_inside_one_rebalance(otel: Telemetry) -> None:
    member = Member(otel)
    join = member.start_until_join()
    member.now += 0.1
    member.join_answer(join, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    deadline = member.m.next_deadline()
    assert deadline is not None
    member.now = deadline
    retry = one(member.feed(ev.Tick), act.SendJoinGroup)
    sync = one(member.join_answer(retry), act.SendSyncGroup)
    member.sync_answer(sync, [T0])
    root = otel.span(named("join"))
    joins = [s for s in otel.children(root) if s.name == named("JoinGroup")]
    assert [s.status.status_code for s in joins] == [StatusCode.ERROR, StatusCode.UNSET]
    assert (joins[0].attributes or {})[a.ERROR_TYPE] == "COORDINATOR_LOAD_IN_PROGRESS"
    assert (root.attributes or {})[a.JOIN_ATTEMPTS] == 2
    assert root.status.status_code is StatusCode.UNSET
    assert otel.total(a.METRIC_REBALANCE_FAILURES) == 0


def test_stop_during_a_join_ends_it_as_stopped_and_abandons_the_open_request(otel: Telemetry) -> None:
    member = Member(otel)
    join = member.start_until_join()
    member.now += 0.3
    out = member.feed(ev.Stop)
    assert any(isinstance(x, act.Stopped) for x in out)
    root = otel.span(named("join"))
    assert (root.attributes or {})[a.REBALANCE_OUTCOME] == "stopped"
    join_span = otel.span(named("JoinGroup"))
    assert (join_span.attributes or {})[a.REQUEST_OUTCOME] == "abandoned"
    assert join_span.end_time == root.end_time == member.ns(member.now)
    assert otel.total(a.METRIC_REBALANCE_FAILURES) == 0
    member.now += 1
    member.join_answer(join)  # the late answer changes nothing
    assert len(otel.spans()) == 3


def test_release_commit_offsets_match_what_the_callback_returned(otel: Telemetry) -> None:
    member = Member(otel)
    member.join_as_follower()
    out = member.feed(ev.Stop)
    revoked = one(out, act.PartitionsRevoked)
    commit = one(member.finish(revoked, {T0: 3}), act.SendOffsetCommit)
    assert dict(commit.offsets) == {T0: OffsetAndMetadata(3)}
    member.now += 0.02
    member.feed(ev.OffsetCommitResponse, token=commit.token, partition_errors={T0: 0})
    span = otel.span(named("commit", "t"))
    assert span.parent is None, "a commit while stopping belongs to no rebalance"
    assert (span.attributes or {})[a.COMMIT_KIND] == "release"
    assert otel.total(a.METRIC_PARTITIONS_REVOKED, staticconsumer__partitions__reason="stop") == 2


def test_fenced_heartbeat_while_the_sync_is_out_fails_the_join_and_abandons_the_sync(otel: Telemetry) -> None:
    member = Member(otel)
    join = member.start_until_join()
    member.now += 0.1
    sync = one(member.join_answer(join), act.SendSyncGroup)
    beat = member.next_heartbeat()  # heartbeats already flow in COMPLETING_REBALANCE
    member.now += 0.01
    member.feed(ev.HeartbeatResponse, token=beat.token, error_code=ErrorCode.FENCED_INSTANCE_ID)
    ended = member.now
    member.now += 0.5
    member.sync_answer(sync, [T0])  # the late answer changes nothing

    root = otel.span(named("join"))
    assert (root.attributes or {})[a.REBALANCE_OUTCOME] == "failed"
    assert root.end_time == member.ns(ended)
    sync_span = otel.span(named("SyncGroup"))
    assert (sync_span.attributes or {})[a.REQUEST_OUTCOME] == "abandoned"
    assert sync_span.end_time == member.ns(ended)
    (fenced,) = otel.span(named("Heartbeat")).events
    assert fenced.name == a.EVENT_FENCED
    assert otel.total(a.METRIC_REBALANCE_FAILURES, error__type="FENCED_INSTANCE_ID") == 1

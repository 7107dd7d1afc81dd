"""Heartbeats, fencing, commits, the gauges and the clock anchor, from a real MembershipMachine."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.trace import StatusCode
from telemetry_harness import INSTANCE, T0, T1, Member, Telemetry, named, one

from staticconsumer.errors import ErrorCode, FencedInstanceIdError
from staticconsumer.membership import OffsetAndMetadata
from staticconsumer.membership import actions as act
from staticconsumer.membership import events as ev
from staticconsumer.membership.types import FailureKind
from staticconsumer.telemetry import TelemetryObserver, telemetry_observers
from staticconsumer.telemetry import attributes as a


@pytest.fixture
def otel() -> Telemetry:
    return Telemetry()


def test_healthy_heartbeats_make_no_spans_and_feed_the_gauge(otel: Telemetry) -> None:
    member = Member(otel)
    member.join_as_follower()
    before = len(otel.spans())
    beat = member.next_heartbeat()
    member.now += 0.004
    answered = member.now
    member.feed(ev.HeartbeatResponse, token=beat.token)
    assert len(otel.spans()) == before
    member.now += 2.5
    (point,) = otel.points(a.METRIC_TIME_SINCE_HEARTBEAT)
    assert point.value == pytest.approx(member.now - answered)
    assert point.attributes[a.GROUP_INSTANCE_ID] == INSTANCE


def test_failed_heartbeats_get_a_span_with_an_event_and_are_counted(otel: Telemetry) -> None:
    member = Member(otel)
    member.join_as_follower()
    beat = member.next_heartbeat()
    sent = member.now
    member.now += 0.2
    out = member.feed(ev.HeartbeatResponse, token=beat.token, error_code=ErrorCode.NOT_COORDINATOR)
    span = otel.span(named("Heartbeat"))
    assert span.parent is None
    assert span.status.status_code is StatusCode.ERROR
    assert (span.start_time, span.end_time) == (member.ns(sent), member.ns(sent + 0.2))
    (event,) = span.events
    assert event.name == a.EVENT_HEARTBEAT_FAILED
    assert (event.attributes or {})[a.ERROR_TYPE] == "NOT_COORDINATOR"

    # A heartbeat with no answer at all is named by Kafka's error for the condition.
    find = one(out, act.FindCoordinator)
    member.feed(ev.FindCoordinatorResponse, token=find.token, node_id=2)
    assert len(otel.spans()) == 5, "rediscovering the coordinator while stable makes no span"
    unanswered = member.next_heartbeat()
    member.now += 1
    member.feed(ev.RequestFailed, token=unanswered.token, kind=FailureKind.TIMED_OUT)
    errors = [(s.attributes or {})[a.ERROR_TYPE] for s in otel.spans(named("Heartbeat"))]
    assert errors == ["NOT_COORDINATOR", "REQUEST_TIMED_OUT"]
    assert otel.total(a.METRIC_HEARTBEAT_FAILURES) == 2
    assert otel.total(a.METRIC_HEARTBEAT_FAILURES, error__type="REQUEST_TIMED_OUT") == 1
    assert otel.total(a.METRIC_FENCINGS) == 0


def test_fenced_heartbeat_records_the_fencing_once_and_fails_the_commit_in_flight(otel: Telemetry) -> None:
    member = Member(otel)
    member.join_as_follower(generation=5)
    member.now += 0.5
    requested = member.now
    send = one(
        member.feed(ev.CommitRequested, commit_id=1, offsets={T0: OffsetAndMetadata(10)}),
        act.SendOffsetCommit,
    )
    beat = member.next_heartbeat()
    member.now += 0.01
    fenced_at = member.now
    out = member.feed(ev.HeartbeatResponse, token=beat.token, error_code=ErrorCode.FENCED_INSTANCE_ID)
    assert isinstance(one(out, act.Fatal).error, FencedInstanceIdError)

    heartbeat = otel.span(named("Heartbeat"))
    (event,) = heartbeat.events
    assert event.name == a.EVENT_FENCED
    assert (event.attributes or {})[a.ERROR_TYPE] == "FENCED_INSTANCE_ID"
    assert event.timestamp == member.ns(fenced_at)
    commit = otel.span(named("commit", "t"))
    assert commit.events == (), "the commit was failed by the fencing, it was not the fenced request"
    assert (commit.attributes or {})[a.ERROR_TYPE] == "FENCED_INSTANCE_ID"
    assert (commit.attributes or {})[a.COMMIT_KIND] == "application"
    assert (commit.attributes or {})[a.GENERATION] == 5
    assert (commit.start_time, commit.end_time) == (member.ns(requested), member.ns(fenced_at))
    assert send.commit_id == 1

    for _ in range(3):  # every later poll reports the same Fatal; it is one fencing
        member.now += 0.1
        member.feed(ev.PollCalled)
    member.feed(ev.Stop)
    assert otel.total(a.METRIC_FENCINGS) == 1
    assert otel.total(a.METRIC_PARTITIONS_LOST, staticconsumer__partitions__reason="fenced") == 2
    assert otel.total(a.METRIC_REBALANCES) == 0
    assert otel.total(a.METRIC_REBALANCE_FAILURES) == 0, "no rebalance was under way"


def test_fenced_commit_carries_the_fencing_event(otel: Telemetry) -> None:
    member = Member(otel)
    member.join_as_follower()
    send = one(
        member.feed(ev.CommitRequested, commit_id=4, offsets={T1: OffsetAndMetadata(2)}), act.SendOffsetCommit
    )
    member.now += 0.03
    member.feed(
        ev.OffsetCommitResponse, token=send.token, partition_errors={T1: ErrorCode.FENCED_INSTANCE_ID}
    )
    (event,) = otel.span(named("commit", "t")).events
    assert event.name == a.EVENT_FENCED
    assert otel.spans(named("fenced")) == [], "the commit span carried it; no fallback span"
    assert otel.total(a.METRIC_FENCINGS) == 1


def test_commits_succeed_fail_or_are_refused_locally_each_with_one_span(otel: Telemetry) -> None:
    member = Member(otel)
    member.join_as_follower()
    ok = one(
        member.feed(ev.CommitRequested, commit_id=1, offsets={T0: OffsetAndMetadata(1)}), act.SendOffsetCommit
    )
    member.now += 0.015
    member.feed(ev.OffsetCommitResponse, token=ok.token, partition_errors={T0: 0})
    bad = one(
        member.feed(ev.CommitRequested, commit_id=2, offsets={T1: OffsetAndMetadata(1)}), act.SendOffsetCommit
    )
    member.now += 0.02
    member.feed(
        ev.OffsetCommitResponse, token=bad.token, partition_errors={T1: ErrorCode.OFFSET_METADATA_TOO_LARGE}
    )
    refused = member.feed(ev.CommitRequested, commit_id=3, offsets={T0: OffsetAndMetadata(0)})
    assert one(refused, act.CommitCompleted).error is not None
    nothing = member.feed(ev.CommitRequested, commit_id=4, offsets={})
    assert one(nothing, act.CommitCompleted).error is None

    spans = otel.spans(named("commit", "t"))
    assert [(s.attributes or {}).get(a.ERROR_TYPE) for s in spans] == [
        None,
        "OFFSET_METADATA_TOO_LARGE",
        "staticconsumer.errors.OffsetRegressionError",
    ], "an empty commit sends nothing and records nothing"
    assert spans[0].end_time - spans[0].start_time == 15_000_000
    assert all((s.attributes or {})[a.MESSAGING_OPERATION_NAME] == "commit" for s in spans)
    points = otel.points(a.METRIC_COMMIT_DURATION)
    assert sum(p.count for p in points) == 3
    assert {p.attributes.get(a.ERROR_TYPE) for p in points} == {
        None,
        "OFFSET_METADATA_TOO_LARGE",
        "staticconsumer.errors.OffsetRegressionError",
    }


def test_members_sharing_a_meter_provider_each_report_their_gauges_until_stopped(otel: Telemetry) -> None:
    first, second = Member(otel, instance_id="a"), Member(otel, instance_id="b")
    for member in (first, second):
        member.join_as_follower()
        beat = member.next_heartbeat()
        member.feed(ev.HeartbeatResponse, token=beat.token)
    reported = {p.attributes[a.GROUP_INSTANCE_ID] for p in otel.points(a.METRIC_TIME_SINCE_HEARTBEAT)}
    assert reported == {"a", "b"}
    first.finish(one(first.feed(ev.Stop), act.PartitionsRevoked))
    assert first.m.state.name == "STOPPED"
    reported = {p.attributes[a.GROUP_INSTANCE_ID] for p in otel.points(a.METRIC_TIME_SINCE_HEARTBEAT)}
    assert reported == {"b"}, "a stopped member no longer reports"


def test_spans_follow_a_wall_clock_step_between_spans_but_never_within_one(otel: Telemetry) -> None:
    member = Member(otel)
    join = member.start_until_join()
    member.wall0 += 3_600 * 10**9  # the wall clock jumps an hour while the join is in flight
    member.now += 0.1
    sync = one(member.join_answer(join), act.SendSyncGroup)
    member.now += 0.1
    member.sync_answer(sync, [T0])
    root = otel.span(named("join"))
    assert root.end_time is not None
    assert root.start_time is not None
    assert root.end_time - root.start_time == 210_000_000, "one anchor for the whole span"

    member.now += 5
    send = one(
        member.feed(ev.CommitRequested, commit_id=1, offsets={T0: OffsetAndMetadata(1)}), act.SendOffsetCommit
    )
    member.feed(ev.OffsetCommitResponse, token=send.token, partition_errors={T0: 0})
    commit = otel.span(named("commit", "t"))
    assert commit.start_time == member.ns(member.now), "the next span uses the corrected wall clock"


def test_without_an_sdk_the_observer_is_silent_and_harmless() -> None:
    assert type(trace.get_tracer_provider()).__name__ == "ProxyTracerProvider", "no SDK in unit tests"
    otel = Telemetry()
    member = Member(otel)
    member.observer = TelemetryObserver()  # global providers: the API's no-ops
    member.join_as_follower()
    beat = member.next_heartbeat()
    member.feed(ev.HeartbeatResponse, token=beat.token, error_code=ErrorCode.FENCED_INSTANCE_ID)
    member.feed(ev.Stop)
    assert otel.spans() == []
    assert otel.points(a.METRIC_FENCINGS) == []


def test_consumer_telemetry_switch() -> None:
    (default,) = telemetry_observers(True, client_id="c")
    assert isinstance(default, TelemetryObserver)
    assert telemetry_observers(False, client_id="c") == ()
    own = TelemetryObserver()
    assert telemetry_observers(own, client_id="c") == (own,)


GLOBAL_SDK_LATE = """
from opentelemetry import metrics
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from telemetry_harness import Member, Telemetry
from staticconsumer.membership import events as ev
from staticconsumer.telemetry import TelemetryObserver

otel = Telemetry()
early = Member(otel, instance_id="early")
early.observer = TelemetryObserver()  # the global provider is still the API's proxy
reader = InMemoryMetricReader()
sdk = MeterProvider(metric_readers=[reader])
metrics.set_meter_provider(sdk)
late = Member(otel, instance_id="late")
late.observer = TelemetryObserver()
explicit = Member(otel, instance_id="explicit")
explicit.observer = TelemetryObserver(meter_provider=sdk)
for member in (early, late, explicit):
    member.join_as_follower()
    beat = member.next_heartbeat()
    member.feed(ev.HeartbeatResponse, token=beat.token)
data = reader.get_metrics_data()
print(sorted(
    p.attributes["staticconsumer.group.instance_id"]
    for r in data.resource_metrics for s in r.scope_metrics for m in s.metrics
    if m.name == "staticconsumer.heartbeat.time_since_last" for p in m.data.data_points
))
"""


def test_consumers_created_before_and_after_the_sdk_all_report_their_gauges() -> None:
    # In a child process: the global meter provider can be set once per process.
    result = subprocess.run(
        [sys.executable, "-c", GLOBAL_SDK_LATE],
        cwd=Path(__file__).parent,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "['early', 'explicit', 'late']"

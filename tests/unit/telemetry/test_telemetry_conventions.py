"""Membership spans follow the messaging conventions: ``{operation} {destination}`` names, the API as
``messaging.operation.name``, the coordinator as ``server.address`` on CLIENT spans, commits named after
their topic and parented to the span current where ``commit()`` was awaited."""

from __future__ import annotations

import pytest
from opentelemetry import context, trace
from opentelemetry.trace import SpanKind
from telemetry_harness import COORDINATOR, GROUP, T0, T1, Member, Telemetry, named, one

from staticconsumer.errors import ErrorCode
from staticconsumer.membership import OffsetAndMetadata, TopicPartition
from staticconsumer.membership import actions as act
from staticconsumer.membership import events as ev
from staticconsumer.telemetry import attributes as a
from staticconsumer.telemetry import caller_context


@pytest.fixture
def otel() -> Telemetry:
    return Telemetry()


def test_request_spans_are_named_after_the_api_and_the_group_and_name_the_coordinator(
    otel: Telemetry,
) -> None:
    member = Member(otel)
    member.join_as_follower()
    beat = member.next_heartbeat()
    member.feed(ev.HeartbeatResponse, token=beat.token, error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)

    host, port = COORDINATOR
    for api in ("JoinGroup", "SyncGroup", "Heartbeat"):
        span = otel.span(f"{api} {GROUP}")
        attrs = span.attributes or {}
        assert span.kind is SpanKind.CLIENT
        assert attrs[a.MESSAGING_OPERATION_NAME] == api
        assert (attrs[a.SERVER_ADDRESS], attrs[a.SERVER_PORT]) == (host, port), api
    lookup = otel.span(named("FindCoordinator"))
    assert (lookup.attributes or {})[a.MESSAGING_OPERATION_NAME] == "FindCoordinator"
    assert a.SERVER_ADDRESS not in (lookup.attributes or {}), "the broker asked is not known to the machine"
    assert otel.span(named("join")).kind is SpanKind.INTERNAL


def test_a_commit_is_named_after_its_topic_and_carries_its_partition_when_there_is_one(
    otel: Telemetry,
) -> None:
    member = Member(otel)
    member.join_as_follower(partitions=(T0, T1, TopicPartition("u", 0)))
    for commit_id, offsets in enumerate(
        ({T0: 1}, {T0: 2, T1: 1}, {T1: 2, TopicPartition("u", 0): 1}), start=1
    ):
        send = one(
            member.feed(
                ev.CommitRequested,
                commit_id=commit_id,
                offsets={tp: OffsetAndMetadata(o) for tp, o in offsets.items()},
            ),
            act.SendOffsetCommit,
        )
        member.now += 0.01
        member.feed(ev.OffsetCommitResponse, token=send.token, partition_errors=dict.fromkeys(offsets, 0))

    one_partition, one_topic = otel.spans(named("commit", "t"))
    assert (one_partition.attributes or {})[a.MESSAGING_DESTINATION_NAME] == "t"
    assert (one_partition.attributes or {})[a.MESSAGING_DESTINATION_PARTITION_ID] == "0"
    assert (one_topic.attributes or {})[a.MESSAGING_DESTINATION_NAME] == "t"
    assert a.MESSAGING_DESTINATION_PARTITION_ID not in (one_topic.attributes or {})
    (two_topics,) = otel.spans("commit")
    assert a.MESSAGING_DESTINATION_NAME not in (two_topics.attributes or {})
    host, port = COORDINATOR
    for span in (one_partition, one_topic, two_topics):
        assert ((span.attributes or {})[a.SERVER_ADDRESS], (span.attributes or {})[a.SERVER_PORT]) == (
            host,
            port,
        )
        assert span.kind is SpanKind.CLIENT


def test_an_application_commit_is_a_child_of_the_callers_span_and_auto_commit_a_root(otel: Telemetry) -> None:
    member = Member(otel)
    member.join_as_follower()
    handler = otel.tracer_provider.get_tracer("application").start_span("handle batch")
    token = context.attach(trace.set_span_in_context(handler))
    try:
        caller = caller_context()
    finally:
        context.detach(token)
    assert caller is not None
    assert caller_context() is None, "no span current: nothing to parent to"

    traced = one(
        member.feed(ev.CommitRequested, commit_id=1, offsets={T0: OffsetAndMetadata(1)}, caller=caller),
        act.SendOffsetCommit,
    )
    member.feed(ev.OffsetCommitResponse, token=traced.token, partition_errors={T0: 0})
    auto = one(
        member.feed(ev.CommitRequested, commit_id=2, offsets={T0: OffsetAndMetadata(2)}), act.SendOffsetCommit
    )
    member.feed(ev.OffsetCommitResponse, token=auto.token, partition_errors={T0: 0})
    refused = member.feed(ev.CommitRequested, commit_id=3, offsets={T0: OffsetAndMetadata(0)}, caller=caller)
    assert one(refused, act.CommitCompleted).error is not None
    handler.end()

    child, root, refused_child = otel.spans(named("commit", "t"))
    handler_id = handler.get_span_context().span_id
    assert child.parent is not None
    assert child.parent.span_id == handler_id
    assert child.context.trace_id == handler.get_span_context().trace_id
    assert root.parent is None, "a commit without a caller's span (auto-commit) is its own trace"
    assert refused_child.parent is not None
    assert refused_child.parent.span_id == handler_id


def test_commits_record_the_client_operation_duration_with_their_error(otel: Telemetry) -> None:
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
    points = {p.attributes.get(a.ERROR_TYPE): p for p in otel.points(a.METRIC_OPERATION_DURATION)}
    assert set(points) == {None, "OFFSET_METADATA_TOO_LARGE"}
    host, port = COORDINATOR
    for point in points.values():
        assert point.count == 1
        assert point.attributes[a.MESSAGING_OPERATION_NAME] == "commit"
        assert point.attributes[a.MESSAGING_DESTINATION_NAME] == "t"
        assert (point.attributes[a.SERVER_ADDRESS], point.attributes[a.SERVER_PORT]) == (host, port)
        assert a.MESSAGING_DESTINATION_PARTITION_ID not in point.attributes, "partitions stay off metrics"
    assert points[None].sum == pytest.approx(0.015)
    assert points["OFFSET_METADATA_TOO_LARGE"].sum == pytest.approx(0.02)

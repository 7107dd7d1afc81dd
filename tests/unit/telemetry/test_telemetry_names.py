"""Every name the telemetry emits comes from attributes.py, and docs/telemetry.md documents all of them."""

from __future__ import annotations

from pathlib import Path

from telemetry_harness import T0, T1, Member, Telemetry, one

from staticconsumer.errors import ErrorCode
from staticconsumer.membership import OffsetAndMetadata
from staticconsumer.membership import actions as act
from staticconsumer.membership import events as ev
from staticconsumer.telemetry import attributes as a
from staticconsumer.telemetry.topics import report_missing_topics

DOCS = Path(__file__).resolve().parents[3] / "docs" / "telemetry.md"

CONSTANTS = {name: value for name, value in vars(a).items() if name.isupper() and isinstance(value, str)}
KEYS = {v for k, v in CONSTANTS.items() if "." in v and not k.startswith(("METRIC_", "EVENT_", "SCOPE"))}
METRICS = {v for k, v in CONSTANTS.items() if k.startswith("METRIC_")}
EVENTS = {v for k, v in CONSTANTS.items() if k.startswith("EVENT_")}


def a_busy_life(otel: Telemetry) -> None:
    """A join, a rebalance with a release commit, commits, a failed heartbeat, a fencing."""
    member = Member(otel)
    member.join_as_follower()
    beat = member.next_heartbeat()
    revoked = one(
        member.feed(ev.HeartbeatResponse, token=beat.token, error_code=ErrorCode.REBALANCE_IN_PROGRESS),
        act.PartitionsRevoked,
    )
    released = member.finish(revoked, {T0: 1})
    commit, join = one(released, act.SendOffsetCommit), one(released, act.SendJoinGroup)  # back to back
    member.feed(ev.OffsetCommitResponse, token=commit.token, partition_errors={T0: 0})
    sync = one(member.join_answer(join, generation=2), act.SendSyncGroup)
    member.finish(one(member.sync_answer(sync, [T1]), act.PartitionsAssigned))
    send = one(
        member.feed(ev.CommitRequested, commit_id=1, offsets={T1: OffsetAndMetadata(3)}), act.SendOffsetCommit
    )
    member.feed(
        ev.OffsetCommitResponse, token=send.token, partition_errors={T1: ErrorCode.OFFSET_METADATA_TOO_LARGE}
    )
    beat = member.next_heartbeat()
    member.feed(ev.HeartbeatResponse, token=beat.token, error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    beat = member.next_heartbeat()
    member.feed(ev.HeartbeatResponse, token=beat.token, error_code=ErrorCode.FENCED_INSTANCE_ID)
    for change in (
        {"missing": {"a"}, "newly_missing": {"a"}, "appeared": set()},
        {"missing": set(), "newly_missing": set(), "appeared": {"a"}},
    ):
        report_missing_topics([member.observer], group_id="billing", **change)


def test_every_emitted_name_is_defined_in_attributes_py() -> None:
    otel = Telemetry()
    a_busy_life(otel)
    spans = otel.spans()
    span_keys = {key for s in spans for key in (s.attributes or {})}
    event_keys = {key for s in spans for e in s.events for key in (e.attributes or {})}
    assert span_keys | event_keys <= KEYS, (span_keys | event_keys) - KEYS
    assert {e.name for s in spans for e in s.events} == EVENTS
    data = otel.reader.get_metrics_data()
    assert data is not None
    emitted = [m for r in data.resource_metrics for sc in r.scope_metrics for m in sc.metrics]
    assert {m.name for m in emitted} <= METRICS
    point_keys = {key for m in emitted for p in m.data.data_points for key in p.attributes}
    assert point_keys <= KEYS, point_keys - KEYS
    assert a.MEMBER_ID not in point_keys, "member ids change every restart: never on metrics"
    assert {sc.scope.name for r in data.resource_metrics for sc in r.scope_metrics} == {a.SCOPE}


def test_docs_list_every_attribute_metric_and_event() -> None:
    text = DOCS.read_text()
    missing = sorted(name for name in KEYS | METRICS | EVENTS if f"`{name}`" not in text)
    # Keys documented as a family (`staticconsumer.rebalance.partitions.assigned` / `.revoked` / `.lost`).
    missing = [m for m in missing if f"`.{m.rsplit('.', 1)[-1]}`" not in text]
    assert missing == [], f"docs/telemetry.md does not mention {missing}"

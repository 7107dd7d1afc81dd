"""The same telemetry and event log under the consumer protocol (KIP-848): the observers read milestones and
ownership actions, so a join, a reconciliation, a failed heartbeat and a fencing read as they do under the
classic protocol, with ConsumerGroupHeartbeat requests as the join's children."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.trace import SpanKind, StatusCode
from telemetry_harness import CLIENT_ID, GROUP, INSTANCE, Telemetry, named

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "membership"))

from consumer_harness import MEMBER, ConsumerHarness, T, U, one

from staticconsumer.errors import ErrorCode
from staticconsumer.eventlog import EventLog, decode_line, schema
from staticconsumer.membership import actions as act
from staticconsumer.membership import events as ev
from staticconsumer.telemetry import TelemetryObserver
from staticconsumer.telemetry import attributes as a


class Lines:
    name = "memory"
    dropped = 0

    def __init__(self) -> None:
        self.lines: list[bytes] = []

    def write(self, line: bytes, key: bytes) -> None:
        self.lines.append(line)

    async def aclose(self) -> None:
        return None

    def records(self) -> list[schema.Record]:
        return [decode_line(line) for line in self.lines]


class Observed(ConsumerHarness):
    """The consumer-protocol machine with the SDK's two observers attached, as the runtime attaches them."""

    def __init__(self, otel: Telemetry, **overrides: Any) -> None:
        super().__init__(group_id=GROUP, instance_id=INSTANCE, **overrides)
        self.sink = Lines()
        self.observers = [
            TelemetryObserver(
                client_id=CLIENT_ID,
                tracer_provider=otel.tracer_provider,
                meter_provider=otel.meter_provider,
                clock=lambda: self.now,
                wall_clock_ns=lambda: round(self.now * 1e9),
            ),
            EventLog([self.sink], clock=lambda: self.now),
        ]

    def feed(self, cls: type[ev.Event], **fields: Any) -> list[act.Action]:
        event = cls(now=self.now, **fields)
        out = self.m.handle(event)
        self.history.extend(out)
        for observer in self.observers:
            observer.observe(event, out, self.m)
        return out


@pytest.fixture
def otel() -> Telemetry:
    return Telemetry()


def test_a_join_is_a_join_span_with_its_consumer_group_heartbeat_and_the_event_log_reads_alike(
    otel: Telemetry,
) -> None:
    h = Observed(otel)
    h.stable({T: [0, 1]}, epoch=4)
    root = otel.span(named("join"))
    assert [s.name for s in otel.children(root)] == [
        named("FindCoordinator"),
        named("ConsumerGroupHeartbeat"),
    ]
    heartbeat = otel.span(named("ConsumerGroupHeartbeat"))
    assert heartbeat.kind is SpanKind.CLIENT
    attrs = heartbeat.attributes or {}
    assert (attrs[a.MEMBER_ID], attrs[a.GENERATION]) == (MEMBER, 4)
    assert (root.attributes or {})[a.GENERATION_AFTER] == 4
    assert (root.attributes or {})[a.REBALANCE_OUTCOME] == "stable"
    assert (root.attributes or {})[a.PARTITIONS_ASSIGNED] == 2
    kinds = [type(r).__name__ for r in h.sink.records()]
    assert kinds[0] == "Joining"
    assert "Synced" in kinds
    assert "Assigned" in kinds
    assigned = next(r for r in h.sink.records() if isinstance(r, schema.Assigned))
    assert assigned.generation == 4


def test_a_reconciliation_is_a_rebalance_with_its_revoke_and_commit(otel: Telemetry) -> None:
    h = Observed(otel)
    h.stable({T: [0, 1]}, epoch=1)
    revoked = one(h.answer(h.next_heartbeat(), epoch=2, assignment={T: [1], U: [0]}), act.PartitionsRevoked)
    commit = one(h.finish(revoked, t0=3), act.SendOffsetCommit)
    h.resolve(one([x for x in h.history if isinstance(x, act.ResolveTopicIds)][-1:], act.ResolveTopicIds))
    assigned = one(h.commit_answer(commit), act.PartitionsAssigned)
    h.finish(assigned)
    rebalance = otel.span(named("rebalance"))
    attrs = rebalance.attributes or {}
    assert (attrs[a.GENERATION_BEFORE], attrs[a.GENERATION_AFTER]) == (1, 2)
    assert (attrs[a.PARTITIONS_REVOKED], attrs[a.PARTITIONS_ASSIGNED]) == (1, 1)
    assert [s.name for s in otel.children(rebalance)] == ["commit t"]
    kinds = [type(r).__name__ for r in h.sink.records()]
    assert kinds.count("Revoked") == 1
    assert kinds.count("Committed") == 1


def test_a_failed_heartbeat_and_a_fencing_are_reported_as_under_the_classic_protocol(otel: Telemetry) -> None:
    h = Observed(otel)
    h.stable({T: [0]})
    h.answer(h.next_heartbeat(), ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    failed = otel.span(named("Heartbeat"))
    assert failed.status.status_code is StatusCode.ERROR
    assert (failed.attributes or {})[a.ERROR_TYPE] == "COORDINATOR_LOAD_IN_PROGRESS"
    beat = one(h.run_until(h.now + 1), act.SendConsumerGroupHeartbeat)
    h.answer(beat, ErrorCode.FENCED_INSTANCE_ID)
    fenced = [s for s in otel.spans(named("Heartbeat")) if any(e.name == a.EVENT_FENCED for e in s.events)]
    assert len(fenced) == 1
    kinds = [type(r).__name__ for r in h.sink.records()]
    assert kinds.count("HeartbeatFailed") == 2
    assert "Fenced" in kinds
    assert "Lost" in kinds


def test_a_static_stop_is_a_leave_in_the_event_log(otel: Telemetry) -> None:
    h = Observed(otel)
    h.stable({T: [0]})
    revoked = one(h.feed(ev.Stop), act.PartitionsRevoked)
    leave = one(h.finish(revoked), act.SendConsumerGroupHeartbeat)
    h.answer(leave, epoch=-2)
    kinds = [type(r).__name__ for r in h.sink.records()]
    assert kinds[-3:] == ["Revoked", "Leaving", "Stopped"]
    assert not otel.spans(named("Heartbeat")), "a leave is no failed heartbeat"

"""Hypothesis: any life a real MembershipMachine can lead leaves well-formed telemetry.

A scripted broker answers the machine's requests in a drawn order with drawn outcomes (success, the
errors the machine handles, no answer at all), interleaved with polls, commits, time passing and a
stop. Whatever happens: every span ends no earlier than it starts and inside its parent, nothing is
left open once the member stopped, and the counters agree with the spans.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from telemetry_harness import MEMBER, PROTOCOLS, T0, T1, Member, Telemetry, encode_assignment, named

from staticconsumer.errors import ErrorCode, FencedInstanceIdError
from staticconsumer.membership import JoinGroupMember, OffsetAndMetadata
from staticconsumer.membership import actions as act
from staticconsumer.membership import events as ev
from staticconsumer.membership.types import FailureKind
from staticconsumer.telemetry import attributes as a

JOIN_CODES = [
    ErrorCode.NONE,
    ErrorCode.NONE,
    ErrorCode.NONE,
    ErrorCode.MEMBER_ID_REQUIRED,
    ErrorCode.REBALANCE_IN_PROGRESS,
    ErrorCode.UNKNOWN_MEMBER_ID,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.FENCED_INSTANCE_ID,
]
SYNC_CODES = [
    ErrorCode.NONE,
    ErrorCode.NONE,
    ErrorCode.NONE,
    ErrorCode.REBALANCE_IN_PROGRESS,
    ErrorCode.ILLEGAL_GENERATION,
    ErrorCode.UNKNOWN_MEMBER_ID,
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.FENCED_INSTANCE_ID,
]
HEARTBEAT_CODES = [
    ErrorCode.NONE,
    ErrorCode.NONE,
    ErrorCode.NONE,
    ErrorCode.REBALANCE_IN_PROGRESS,
    ErrorCode.ILLEGAL_GENERATION,
    ErrorCode.UNKNOWN_MEMBER_ID,
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.FENCED_INSTANCE_ID,
]
COMMIT_CODES = [
    ErrorCode.NONE,
    ErrorCode.NONE,
    ErrorCode.REBALANCE_IN_PROGRESS,
    ErrorCode.ILLEGAL_GENERATION,
    ErrorCode.FENCED_INSTANCE_ID,
    ErrorCode.OFFSET_METADATA_TOO_LARGE,
]


class Broker:
    """Answers whatever the machine asked for, as drawn."""

    def __init__(self, member: Member, data: st.DataObject) -> None:
        self.member = member
        self.data = data
        self.outstanding: list[act.Action] = []
        self.generation = 0
        self.commit_id = 0
        self.offset = 0
        self.fencing = data.draw(st.integers(0, 3)) == 0  # else most lives end early, fenced

    def code(self, codes: list[ErrorCode]) -> ErrorCode:
        allowed = [c for c in codes if self.fencing or c != ErrorCode.FENCED_INSTANCE_ID]
        return self.data.draw(st.sampled_from(allowed))

    def take(self, actions: list[act.Action]) -> None:
        for action in actions:
            if isinstance(
                action,
                act.FindCoordinator
                | act.SendJoinGroup
                | act.SendSyncGroup
                | act.SendHeartbeat
                | act.SendOffsetCommit
                | act.SendLeaveGroup
                | act.RunAssignor
                | act.PartitionsAssigned
                | act.PartitionsRevoked
                | act.PartitionsLost,
            ):
                self.outstanding.append(action)

    def feed(self, cls: type[ev.Event], **fields: Any) -> None:
        self.take(self.member.feed(cls, **fields))

    def answer(self, action: act.Action) -> None:
        draw = self.data.draw
        token = getattr(action, "token", None)
        if token is not None and draw(st.integers(0, 9)) == 0:
            kind = draw(st.sampled_from(list(FailureKind)))
            self.feed(ev.RequestFailed, token=token, kind=kind)
            return
        match action:
            case act.FindCoordinator():
                self.feed(ev.FindCoordinatorResponse, token=action.token, node_id=1)
            case act.SendJoinGroup():
                code = self.code(JOIN_CODES)
                self.generation += code == ErrorCode.NONE and draw(st.booleans())
                member_id = action.member_id or MEMBER
                leads = draw(st.booleans())
                self.feed(
                    ev.JoinGroupResponse,
                    token=action.token,
                    error_code=code,
                    generation=max(self.generation, 1),
                    protocol_type="consumer",
                    protocol_name="range",
                    leader_id=member_id if leads else "other",
                    member_id=member_id,
                    skip_assignment=leads and draw(st.booleans()),
                    members=(JoinGroupMember(member_id, None, b"t"),) if leads else (),
                )
            case act.SendSyncGroup():
                self.feed(
                    ev.SyncGroupResponse,
                    token=action.token,
                    error_code=self.code(SYNC_CODES),
                    protocol_type="consumer",
                    protocol_name="range",
                    assignment=encode_assignment(draw(st.sampled_from([[], [T0], [T0, T1]]))),
                )
            case act.SendHeartbeat():
                self.feed(
                    ev.HeartbeatResponse,
                    token=action.token,
                    error_code=self.code(HEARTBEAT_CODES),
                )
            case act.SendOffsetCommit():
                code = self.code(COMMIT_CODES)
                self.feed(
                    ev.OffsetCommitResponse,
                    token=action.token,
                    partition_errors=dict.fromkeys(action.offsets, code),
                )
            case act.SendLeaveGroup():
                self.feed(ev.LeaveGroupResponse, token=action.token)
            case act.RunAssignor():
                self.feed(ev.AssignmentComputed, generation=action.generation, assignments={MEMBER: b"t:0"})
            case act.PartitionsRevoked():
                self.offset += 1
                self.feed(
                    ev.CallbackFinished,
                    callback_id=action.callback_id,
                    offsets_to_commit={tp: OffsetAndMetadata(self.offset) for tp in action.partitions},
                )
            case act.PartitionsAssigned() | act.PartitionsLost():
                self.feed(ev.CallbackFinished, callback_id=action.callback_id)
            case _:
                raise AssertionError(action)

    def step(self) -> None:
        draw = self.data.draw
        choice = draw(st.sampled_from(["answer", "answer", "answer", "tick", "poll", "commit"]))
        if choice == "answer" and self.outstanding:
            action = self.outstanding.pop(draw(st.integers(0, len(self.outstanding) - 1)))
            self.answer(action)
        elif choice == "commit":
            self.commit_id += 1
            self.offset += 1
            self.feed(
                ev.CommitRequested, commit_id=self.commit_id, offsets={T0: OffsetAndMetadata(self.offset)}
            )
        elif choice == "poll":
            self.feed(ev.PollCalled)
        else:
            self.member.now += draw(st.sampled_from([0.001, 0.5, 1.0, 3.0, 12.0]))
            self.feed(ev.Tick)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_any_life_leaves_well_formed_telemetry(data: st.DataObject) -> None:
    otel = Telemetry()
    member = Member(
        otel, instance_id=data.draw(st.sampled_from([None, "pod-0"])), max_poll_interval_ms=20_000
    )
    broker = Broker(member, data)
    broker.feed(ev.Start, protocols=PROTOCOLS)
    for _ in range(data.draw(st.integers(5, 80))):
        broker.step()
    member.now += 0.01
    broker.feed(ev.Stop, leave_group=data.draw(st.booleans()))
    for _ in range(200):  # answer everything until the member has stopped
        if member.m.state.name in ("STOPPED", "FENCED", "FAILED") and not broker.outstanding:
            break
        member.now += 0.01  # late answers must not stretch spans that already ended
        if broker.outstanding:
            broker.answer(broker.outstanding.pop(0))
        else:
            member.now += 1
            broker.feed(ev.Tick)
    if member.m.state.name != "STOPPED":
        broker.feed(ev.Stop)

    spans = otel.spans()
    by_id = {s.context.span_id: s for s in spans}
    for span in spans:
        assert span.start_time is not None
        assert span.end_time is not None
        assert span.end_time >= span.start_time, span.name
        if span.parent is not None:
            parent = by_id[span.parent.span_id]
            assert parent.start_time is not None
            assert parent.end_time is not None
            assert parent.start_time <= span.start_time, (parent.name, span.name)
            assert span.end_time <= parent.end_time, (parent.name, span.name)
    observer = member.observer
    assert observer._episode is None, "no rebalance left open after the stop"
    assert observer._requests == {}
    assert observer._commits == {}
    roots = [s for s in spans if s.name in {named(k) for k in ("join", "rebalance", "rejoin")}]
    stable_rebalances = [
        s
        for s in roots
        if (s.attributes or {}).get(a.REBALANCE_OUTCOME) == "stable" and s.name == named("rebalance")
    ]
    assert otel.total(a.METRIC_REBALANCES) == len(stable_rebalances)
    failed = [s for s in roots if (s.attributes or {}).get(a.REBALANCE_OUTCOME) == "failed"]
    assert otel.total(a.METRIC_REBALANCE_FAILURES) == len(failed)
    fenced_events = [e for s in spans for e in s.events if e.name == a.EVENT_FENCED]
    assert otel.total(a.METRIC_FENCINGS) == len(fenced_events) <= 1
    assert (len(fenced_events) == 1) == isinstance(member.m.fatal_error, FencedInstanceIdError)
    event(f"rebalances: {min(len(stable_rebalances), 2)}")
    event(f"fenced: {bool(fenced_events)}")
    event(f"failed heartbeats: {bool(otel.spans('Heartbeat'))}")

"""Random event sequences against the machine, checking the invariants that must hold whatever happens.

The model plays a capricious coordinator: it answers any outstanding request, in any order, with any
error the reference tables list (or drops it), moves the clock, polls, commits, rejoins and stops.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from membership_harness import INSTANCE, UUID22, Harness, encode_assignment

from staticconsumer.errors import ErrorCode, FencedInstanceIdError
from staticconsumer.membership import (
    NO_GENERATION,
    FailureKind,
    GroupProtocol,
    JoinGroupMember,
    OffsetAndMetadata,
    RebalanceProtocol,
    TopicPartition,
)
from staticconsumer.membership import actions as act
from staticconsumer.membership import events as ev

PARTITIONS = [TopicPartition("t", p) for p in range(4)]

LOOKUP_CODES = [ErrorCode.NONE] * 4 + [ErrorCode.COORDINATOR_NOT_AVAILABLE]
JOIN_CODES = [ErrorCode.NONE] * 5 + [
    ErrorCode.MEMBER_ID_REQUIRED,
    ErrorCode.UNKNOWN_MEMBER_ID,
    ErrorCode.REBALANCE_IN_PROGRESS,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.FENCED_INSTANCE_ID,
]
SYNC_CODES = [ErrorCode.NONE] * 5 + [
    ErrorCode.REBALANCE_IN_PROGRESS,
    ErrorCode.UNKNOWN_MEMBER_ID,
    ErrorCode.ILLEGAL_GENERATION,
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.FENCED_INSTANCE_ID,
]
HEARTBEAT_CODES = [ErrorCode.NONE] * 6 + [
    ErrorCode.REBALANCE_IN_PROGRESS,
    ErrorCode.ILLEGAL_GENERATION,
    ErrorCode.UNKNOWN_MEMBER_ID,
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.FENCED_INSTANCE_ID,
]
COMMIT_CODES = [ErrorCode.NONE] * 5 + [
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.REQUEST_TIMED_OUT,
    ErrorCode.REBALANCE_IN_PROGRESS,
    ErrorCode.UNKNOWN_MEMBER_ID,
    ErrorCode.ILLEGAL_GENERATION,
    ErrorCode.FENCED_INSTANCE_ID,
    ErrorCode.OFFSET_METADATA_TOO_LARGE,
]

Request = act.FindCoordinator | act.SendJoinGroup | act.SendSyncGroup | act.SendHeartbeat
Request2 = act.SendOffsetCommit | act.SendLeaveGroup


class MembershipModel(RuleBasedStateMachine):
    static = True
    protocol = RebalanceProtocol.EAGER

    def __init__(self) -> None:
        super().__init__()
        # max.poll.interval below the session timeout, so poll expiry is reachable in few steps.
        self.h = Harness(
            instance_id=INSTANCE if self.static else None,
            rebalance_protocol=self.protocol,
            max_poll_interval_ms=5_000,
        )
        self.told: set[TopicPartition] = set()
        """What the listener was told it owns: assigned deltas minus revoked and lost ones."""
        self.outstanding: list[Request | Request2] = []
        self.callbacks: list[int] = []
        self.assignor_generations: list[int] = []
        self.broker_generation = 0
        self.started = False
        self.leave_requested = False
        self.fenced = False
        self.highest_generation = NO_GENERATION
        self.completed_commits: set[int] = set()
        self.next_commit_id = 1
        self.committed_floor: dict[TopicPartition, int] = {}

    # ------------------------------------------------------------ feeding and checking every action

    def feed(self, cls: type[ev.Event], **fields: Any) -> list[act.Action]:
        out = self.h.feed(cls, **fields)
        for action in out:
            self.check_action(action)
        return out

    def check_action(self, action: act.Action) -> None:
        if isinstance(action, act.SendJoinGroup):
            busy = [r for r in self.outstanding if isinstance(r, act.SendJoinGroup | act.SendSyncGroup)]
            assert not busy, f"JoinGroup sent while {busy} is outstanding"
        if isinstance(action, act.SendHeartbeat | act.FindCoordinator):
            same = [r for r in self.outstanding if type(r) is type(action)]
            assert not same, f"{type(action).__name__} sent while {same} is outstanding"
        if isinstance(action, act.SendOffsetCommit):
            assert not self.fenced, "commit sent after fencing"
            assert action.generation != NO_GENERATION
            assert action.member_id != ""
            for tp, om in action.offsets.items():
                assert om.offset >= self.committed_floor.get(tp, om.offset), "offset moved backwards"
        if isinstance(action, act.SendLeaveGroup) and self.static:
            assert self.leave_requested, "a static member sent LeaveGroup without stop(leave_group=True)"
        if isinstance(
            action, act.SendJoinGroup | act.SendSyncGroup | act.SendHeartbeat | act.SendOffsetCommit
        ):
            assert action.group_instance_id == (INSTANCE if self.static else None)
        if isinstance(action, act.Fatal) and isinstance(action.error, FencedInstanceIdError):
            self.fenced = True
        if isinstance(action, act.CommitCompleted) and action.commit_id is not None:
            assert action.commit_id not in self.completed_commits, "a commit completed twice"
            self.completed_commits.add(action.commit_id)
        if isinstance(action, act.CommitCompleted) and action.error is None:
            for tp, om in action.offsets.items():
                self.committed_floor[tp] = max(self.committed_floor.get(tp, om.offset), om.offset)
        if isinstance(action, Request | Request2):
            self.outstanding.append(action)
        if isinstance(action, act.PartitionsAssigned):
            assert not action.partitions & self.told, "a listener is never told twice it owns a partition"
            self.told |= action.partitions
            assert action.owned == self.told, "owned is exactly what the listener was told"
        if isinstance(action, act.PartitionsRevoked | act.PartitionsLost):
            assert action.partitions <= self.told, "only what the listener was told can be taken away"
            self.told -= action.partitions
        if isinstance(action, act.PartitionsRevoked) and self.protocol is RebalanceProtocol.COOPERATIVE:
            assert action.partitions, "a cooperative listener hears of revokes only when something goes"
        if isinstance(action, act.PartitionsAssigned | act.PartitionsRevoked | act.PartitionsLost):
            self.callbacks.append(action.callback_id)
        if isinstance(action, act.RunAssignor):
            self.assignor_generations.append(action.generation)

    def take(self, index: int, kind: type[act.Action]) -> Any:
        matching = [r for r in self.outstanding if isinstance(r, kind)]
        request = matching[index % len(matching)]
        self.outstanding.remove(request)
        return request

    def has(self, kind: type[act.Action]) -> bool:
        return any(isinstance(r, kind) for r in self.outstanding)

    # ------------------------------------------------------------ rules

    @precondition(lambda self: not self.started)
    @rule()
    def start(self) -> None:
        self.started = True
        self.feed(ev.Start, protocols=(GroupProtocol("range", b"t"),))

    @rule(seconds=st.sampled_from([0.05, 0.1, 0.5, 1.0, 3.0, 6.0, 11.0]))
    def advance(self, seconds: float) -> None:
        """Time passes with the driver ticking at every deadline, and nobody answering."""
        target = self.h.now + seconds
        while (deadline := self.h.m.next_deadline()) is not None and deadline <= target:
            self.h.now = deadline
            self.feed(ev.Tick)
        self.h.now = target
        self.feed(ev.Tick)

    @rule(seconds=st.sampled_from([1.0, 4.0, 6.0, 20.0]))
    def live(self, seconds: float) -> None:
        """Time passes with a healthy coordinator answering heartbeats and lookups at once."""
        target = self.h.now + seconds
        while True:
            quick = [r for r in self.outstanding if isinstance(r, act.SendHeartbeat | act.FindCoordinator)]
            if quick:
                request = quick[0]
                self.outstanding.remove(request)
                if isinstance(request, act.SendHeartbeat):
                    self.feed(ev.HeartbeatResponse, token=request.token)
                else:
                    self.feed(ev.FindCoordinatorResponse, token=request.token, node_id=1)
                continue
            deadline = self.h.m.next_deadline()
            if deadline is None or deadline > target:
                break
            self.h.now = deadline
            self.feed(ev.Tick)
        self.h.now = target
        self.feed(ev.Tick)

    @precondition(lambda self: self.has(act.FindCoordinator))
    @rule(index=st.integers(0, 7), code=st.sampled_from(LOOKUP_CODES))
    def answer_lookup(self, index: int, code: int) -> None:
        request = self.take(index, act.FindCoordinator)
        self.feed(ev.FindCoordinatorResponse, token=request.token, error_code=code, node_id=1)

    @precondition(lambda self: self.has(act.SendJoinGroup))
    @rule(
        index=st.integers(0, 7),
        code=st.sampled_from(JOIN_CODES),
        leader=st.booleans(),
        skip=st.booleans(),
        same_generation=st.booleans(),
    )
    def answer_join(self, index: int, code: int, leader: bool, skip: bool, same_generation: bool) -> None:
        request: act.SendJoinGroup = self.take(index, act.SendJoinGroup)
        if code == ErrorCode.FENCED_INSTANCE_ID and not self.static:
            code = ErrorCode.UNKNOWN_MEMBER_ID
        if code == ErrorCode.MEMBER_ID_REQUIRED and self.static:
            code = ErrorCode.REBALANCE_IN_PROGRESS  # the broker never sends it to static members
        if not (same_generation and self.broker_generation > 0):
            self.broker_generation += 1
        member_id = request.member_id or (
            f"{INSTANCE}-{UUID22}" if self.static else f"c-{self.broker_generation}"
        )
        members = (
            JoinGroupMember(member_id=member_id, group_instance_id=request.group_instance_id, metadata=b"t"),
        )
        self.feed(
            ev.JoinGroupResponse,
            token=request.token,
            error_code=code,
            generation=self.broker_generation if code == ErrorCode.NONE else -1,
            protocol_type="consumer",
            protocol_name="range",
            leader_id=member_id if leader else "other-leader",
            member_id=member_id,
            skip_assignment=leader and skip,
            members=members if leader else (),
        )

    @precondition(lambda self: bool(self.assignor_generations))
    @rule(index=st.integers(0, 7))
    def finish_assignor(self, index: int) -> None:
        generation = self.assignor_generations.pop(index % len(self.assignor_generations))
        self.feed(ev.AssignmentComputed, generation=generation, assignments={})

    @precondition(lambda self: self.has(act.SendSyncGroup))
    @rule(
        index=st.integers(0, 7),
        code=st.sampled_from(SYNC_CODES),
        partitions=st.sets(st.sampled_from(PARTITIONS)),
    )
    def answer_sync(self, index: int, code: int, partitions: set[TopicPartition]) -> None:
        request = self.take(index, act.SendSyncGroup)
        if code == ErrorCode.FENCED_INSTANCE_ID and not self.static:
            code = ErrorCode.UNKNOWN_MEMBER_ID
        self.feed(
            ev.SyncGroupResponse,
            token=request.token,
            error_code=code,
            protocol_type="consumer",
            protocol_name="range",
            assignment=encode_assignment(partitions),
        )

    @precondition(lambda self: self.has(act.SendHeartbeat))
    @rule(index=st.integers(0, 7), code=st.sampled_from(HEARTBEAT_CODES))
    def answer_heartbeat(self, index: int, code: int) -> None:
        request = self.take(index, act.SendHeartbeat)
        if code == ErrorCode.FENCED_INSTANCE_ID and not self.static:
            code = ErrorCode.UNKNOWN_MEMBER_ID
        self.feed(ev.HeartbeatResponse, token=request.token, error_code=code)

    @precondition(lambda self: self.has(act.SendOffsetCommit))
    @rule(index=st.integers(0, 7), code=st.sampled_from(COMMIT_CODES))
    def answer_commit(self, index: int, code: int) -> None:
        request: act.SendOffsetCommit = self.take(index, act.SendOffsetCommit)
        if code == ErrorCode.FENCED_INSTANCE_ID and not self.static:
            code = ErrorCode.UNKNOWN_MEMBER_ID
        self.feed(
            ev.OffsetCommitResponse,
            token=request.token,
            partition_errors=dict.fromkeys(request.offsets, code),
        )

    @precondition(lambda self: self.has(act.SendLeaveGroup))
    @rule(index=st.integers(0, 7))
    def answer_leave(self, index: int) -> None:
        request = self.take(index, act.SendLeaveGroup)
        self.feed(ev.LeaveGroupResponse, token=request.token)

    @precondition(lambda self: bool(self.outstanding))
    @rule(index=st.integers(0, 7), timed_out=st.booleans())
    def fail_request(self, index: int, timed_out: bool) -> None:
        request = self.outstanding.pop(index % len(self.outstanding))
        kind = FailureKind.TIMED_OUT if timed_out else FailureKind.DISCONNECTED
        self.feed(ev.RequestFailed, token=request.token, kind=kind)

    @precondition(lambda self: bool(self.callbacks))
    @rule(index=st.integers(0, 7), commit=st.dictionaries(st.sampled_from(PARTITIONS), st.integers(0, 100)))
    def finish_callback(self, index: int, commit: dict[TopicPartition, int]) -> None:
        callback_id = self.callbacks.pop(index % len(self.callbacks))
        offsets = {tp: OffsetAndMetadata(o) for tp, o in commit.items()}
        self.feed(ev.CallbackFinished, callback_id=callback_id, offsets_to_commit=offsets)

    @rule()
    def poll(self) -> None:
        out = self.feed(ev.PollCalled)
        if self.fenced:
            assert [type(a) for a in out] == [act.Fatal]
            assert isinstance(out[0], act.Fatal)
            assert isinstance(out[0].error, FencedInstanceIdError)

    @rule(commit=st.dictionaries(st.sampled_from(PARTITIONS), st.integers(0, 100), min_size=1))
    def commit(self, commit: dict[TopicPartition, int]) -> None:
        commit_id = self.next_commit_id
        self.next_commit_id += 1
        offsets = {tp: OffsetAndMetadata(o) for tp, o in commit.items()}
        out = self.feed(ev.CommitRequested, commit_id=commit_id, offsets=offsets)
        if self.fenced:
            assert [type(a) for a in out] == [act.CommitCompleted]
            assert isinstance(out[0], act.CommitCompleted)
            assert isinstance(out[0].error, FencedInstanceIdError)

    @rule(reason=st.sampled_from(["metadata changed", "subscription changed"]))
    def request_rejoin(self, reason: str) -> None:
        self.feed(ev.RequestRejoin, reason=reason)

    @rule(dice=st.integers(0, 4))
    def coordinator_disconnected(self, dice: int) -> None:
        if dice == 0:
            self.feed(ev.CoordinatorDisconnected)

    @rule(dice=st.integers(0, 9), leave_group=st.booleans())
    def stop(self, dice: int, leave_group: bool) -> None:
        """Rare, since nothing interesting happens after it."""
        if dice != 0:
            return
        self.leave_requested = self.leave_requested or leave_group
        self.feed(ev.Stop, leave_group=leave_group)

    # ------------------------------------------------------------ invariants

    @invariant()
    def generation_never_goes_backwards(self) -> None:
        generation = self.h.m.generation
        if generation != NO_GENERATION:
            assert generation >= self.highest_generation
            self.highest_generation = generation

    @invariant()
    def committed_offsets_never_go_backwards(self) -> None:
        for tp, offset in self.h.m.committed_offsets.items():
            assert offset >= self.committed_floor.get(tp, offset)

    @invariant()
    def fenced_member_owns_nothing_and_stays_fenced(self) -> None:
        if self.fenced:
            assert self.h.m.assignment == frozenset()
            assert self.h.m.state.value == "fenced"

    @invariant()
    def every_commit_is_answered_or_still_on_the_wire(self) -> None:
        waiting = set(range(1, self.next_commit_id)) - self.completed_commits
        on_the_wire = {
            r.commit_id
            for r in self.outstanding
            if isinstance(r, act.SendOffsetCommit) and r.commit_id is not None
        }
        assert waiting <= on_the_wire, f"commits {waiting - on_the_wire} will never be answered"

    @invariant()
    def at_most_one_join_or_sync_outstanding(self) -> None:
        busy = [r for r in self.outstanding if isinstance(r, act.SendJoinGroup | act.SendSyncGroup)]
        assert len(busy) <= 1


class StaticMembershipModel(MembershipModel):
    static = True


class DynamicMembershipModel(MembershipModel):
    static = False


_SETTINGS = settings(
    max_examples=150,
    stateful_step_count=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


class CooperativeStaticMembershipModel(MembershipModel):
    static = True
    protocol = RebalanceProtocol.COOPERATIVE


class CooperativeDynamicMembershipModel(MembershipModel):
    static = False
    protocol = RebalanceProtocol.COOPERATIVE


TestStaticMembership = StaticMembershipModel.TestCase
TestStaticMembership.settings = _SETTINGS
TestDynamicMembership = DynamicMembershipModel.TestCase
TestDynamicMembership.settings = _SETTINGS
TestCooperativeStaticMembership = CooperativeStaticMembershipModel.TestCase
TestCooperativeStaticMembership.settings = _SETTINGS
TestCooperativeDynamicMembership = CooperativeDynamicMembershipModel.TestCase
TestCooperativeDynamicMembership.settings = _SETTINGS

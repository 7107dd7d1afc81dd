"""Random event sequences against the consumer-protocol machine, checking what must hold whatever happens.

The model plays a capricious KIP-848 coordinator: it answers any outstanding request, in any order, with
any error the tables list (or drops it), hands out random targets by topic id, resolves some ids and not
others, moves the clock, polls, commits and stops. The application side folds the ownership actions.
"""

from __future__ import annotations

from typing import Any

from consumer_harness import INSTANCE, MEMBER, NAMES, ConsumerHarness, T, U, ids
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from staticconsumer.errors import ErrorCode, FencedInstanceIdError
from staticconsumer.membership import FailureKind, OffsetAndMetadata, TopicPartition
from staticconsumer.membership import actions as act
from staticconsumer.membership import events as ev

PARTITIONS = [TopicPartition("t", p) for p in range(3)] + [TopicPartition("u", p) for p in range(2)]
OTHER = "BBBBBBBBBBBBBBBBBBBBBB"

HEARTBEAT_CODES = [ErrorCode.NONE] * 8 + [
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.FENCED_MEMBER_EPOCH,
    ErrorCode.UNKNOWN_MEMBER_ID,
    ErrorCode.UNRELEASED_INSTANCE_ID,
    ErrorCode.FENCED_INSTANCE_ID,
]
COMMIT_CODES = [ErrorCode.NONE] * 5 + [
    ErrorCode.STALE_MEMBER_EPOCH,
    ErrorCode.STALE_MEMBER_EPOCH,
    ErrorCode.UNKNOWN_MEMBER_ID,
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.FENCED_INSTANCE_ID,
    ErrorCode.OFFSET_METADATA_TOO_LARGE,
]

Outstanding = (
    act.FindCoordinator | act.SendConsumerGroupHeartbeat | act.SendOffsetCommit | act.ResolveTopicIds
)


class ConsumerProtocolModel(RuleBasedStateMachine):
    static = True

    def __init__(self) -> None:
        super().__init__()
        self.h = ConsumerHarness(
            instance_id=INSTANCE if self.static else None,
            max_poll_interval_ms=20_000,
            session_timeout_ms=9_000,
            heartbeat_interval_ms=1_000,
            request_timeout_ms=5_000,
        )
        self.outstanding: list[Outstanding] = []
        self.callbacks: list[int] = []
        self.app_owned: set[TopicPartition] = set()
        self.broker_epoch = 0
        self.started = False
        self.stopping = False
        self.leave_group = False
        self.fenced = False
        self.completed: set[int] = set()
        self.next_commit_id = 1
        self.floor: dict[TopicPartition, int] = {}

    # ------------------------------------------------------------ feeding and checking every action

    def feed(self, cls: type[ev.Event], **fields: Any) -> list[act.Action]:
        out = self.h.feed(cls, **fields)
        for action in out:
            self.check(action)
        return out

    def check(self, action: act.Action) -> None:
        if isinstance(action, act.SendConsumerGroupHeartbeat):
            beats = [
                r
                for r in self.outstanding
                if isinstance(r, act.SendConsumerGroupHeartbeat) and r.purpose not in ("leave", "release")
            ]
            if action.purpose not in ("leave", "release"):
                assert not beats, f"a heartbeat sent while {beats} is outstanding"
                assert action.member_id == MEMBER
                assert (action.member_epoch == 0) == (action.purpose == "join")
                if action.owned is not None:
                    reported = {
                        TopicPartition(NAMES[t.topic_id], p) for t in action.owned for p in t.partitions
                    }
                    assert reported == set(self.h.m.assignment), "a heartbeat reports what is owned"
            else:
                assert action.member_epoch in (-1, -2)
                if action.purpose == "leave" and self.static and self.stopping:
                    assert action.member_epoch == (-1 if self.leave_group else -2)
                if not self.static:
                    assert action.member_epoch == -1
            assert action.instance_id == (INSTANCE if self.static else None)
        if isinstance(action, act.FindCoordinator | act.ResolveTopicIds):
            same = [r for r in self.outstanding if type(r) is type(action)]
            assert not same, f"{type(action).__name__} sent while {same} is outstanding"
        if isinstance(action, act.SendOffsetCommit):
            assert not self.fenced
            assert action.generation > 0, "a commit carries a member epoch"
            for tp, om in action.offsets.items():
                assert om.offset >= self.floor.get(tp, om.offset), "offset moved backwards"
        if isinstance(action, act.Fatal) and isinstance(action.error, FencedInstanceIdError):
            self.fenced = True
        if isinstance(action, act.CommitCompleted):
            if action.commit_id is not None:
                assert action.commit_id not in self.completed, "a commit completed twice"
                self.completed.add(action.commit_id)
            if action.error is None:
                for tp, om in action.offsets.items():
                    self.floor[tp] = max(self.floor.get(tp, om.offset), om.offset)
        if isinstance(action, Outstanding):
            self.outstanding.append(action)
        if isinstance(action, act.PartitionsAssigned):
            assert not (action.partitions & self.app_owned), "a partition assigned that is already owned"
            self.app_owned |= action.partitions
            assert self.app_owned == set(action.owned)
        if isinstance(action, act.PartitionsRevoked | act.PartitionsLost):
            assert action.partitions <= self.app_owned, "only what is owned is given up"
            self.app_owned -= action.partitions
        if isinstance(action, act.PartitionsAssigned | act.PartitionsRevoked | act.PartitionsLost):
            self.callbacks.append(action.callback_id)

    def take(self, index: int, kind: type[Any], purpose: str | None = None) -> Any:
        matching = [
            r
            for r in self.outstanding
            if isinstance(r, kind) and (purpose is None or getattr(r, "purpose", None) == purpose)
        ]
        request = matching[index % len(matching)]
        self.outstanding.remove(request)
        return request

    def has(self, kind: type[Any], *purposes: str) -> bool:
        return any(isinstance(r, kind) and (not purposes or r.purpose in purposes) for r in self.outstanding)

    # ------------------------------------------------------------ rules

    @precondition(lambda self: not self.started)
    @rule(pattern=st.booleans())
    def start(self, pattern: bool) -> None:
        self.started = True
        if pattern:
            self.feed(ev.Start, protocols=(), pattern="[tu]")
        else:
            self.feed(ev.Start, protocols=(), topics=frozenset({"t", "u"}))

    @rule(seconds=st.sampled_from([0.05, 0.3, 1.0, 3.0, 8.0, 25.0]))
    def advance(self, seconds: float) -> None:
        target = self.h.now + seconds
        while (deadline := self.h.m.next_deadline()) is not None and deadline <= target:
            self.h.now = deadline
            self.feed(ev.Tick)
        self.h.now = target
        self.feed(ev.Tick)

    @rule(seconds=st.sampled_from([1.0, 6.0, 20.0]), wanted=st.sets(st.sampled_from(PARTITIONS)))
    def live(self, seconds: float, wanted: set[TopicPartition]) -> None:
        """Time passes with a healthy coordinator and application: lookups, heartbeats (the first one of
        this stretch brings ``target``), names and commits answered at once, callbacks finished."""
        until = self.h.now + seconds
        handed = False
        while True:
            if self.callbacks:
                self.feed(ev.CallbackFinished, callback_id=self.callbacks.pop(0))
                continue
            if self.outstanding:
                request = self.outstanding.pop(0)
                if isinstance(request, act.FindCoordinator):
                    self.feed(ev.FindCoordinatorResponse, token=request.token, node_id=1)
                elif isinstance(request, act.ResolveTopicIds):
                    self.feed(
                        ev.TopicIdsResolved,
                        token=request.token,
                        names={t: NAMES[t] for t in request.topic_ids},
                    )
                elif isinstance(request, act.SendOffsetCommit):
                    self.feed(ev.OffsetCommitResponse, token=request.token, partition_errors={})
                else:
                    assignment = None
                    if request.purpose not in ("leave", "release") and (
                        request.purpose == "join" or not handed
                    ):
                        self.broker_epoch += 1
                        by_id: dict[Any, list[int]] = {}
                        for tp in wanted:
                            by_id.setdefault(T if tp.topic == "t" else U, []).append(tp.partition)
                        assignment = ids(by_id)
                        handed = True
                    self.feed(
                        ev.ConsumerGroupHeartbeatResponse,
                        token=request.token,
                        member_id=request.member_id,
                        member_epoch=request.member_epoch if request.member_epoch < 0 else self.broker_epoch,
                        heartbeat_interval_ms=1_000,
                        assignment=assignment,
                    )
                continue
            deadline = self.h.m.next_deadline()
            if deadline is None or deadline > until:
                break
            self.h.now = deadline
            self.feed(ev.Tick)
            self.feed(ev.PollCalled)
        self.h.now = until
        self.feed(ev.Tick)

    @precondition(lambda self: self.has(act.FindCoordinator))
    @rule(ok=st.booleans())
    def answer_lookup(self, ok: bool) -> None:
        request = self.take(0, act.FindCoordinator)
        code = ErrorCode.NONE if ok else ErrorCode.COORDINATOR_NOT_AVAILABLE
        self.feed(ev.FindCoordinatorResponse, token=request.token, error_code=code, node_id=1)

    @precondition(lambda self: self.has(act.SendConsumerGroupHeartbeat, "join", "heartbeat", "acknowledge"))
    @rule(
        code=st.sampled_from(HEARTBEAT_CODES),
        new_target=st.none() | st.sets(st.sampled_from(PARTITIONS)),
        bump=st.booleans(),
        ours=st.booleans(),
    )
    def answer_heartbeat(
        self, code: int, new_target: set[TopicPartition] | None, bump: bool, ours: bool
    ) -> None:
        target = new_target
        request = next(
            r
            for r in self.outstanding
            if isinstance(r, act.SendConsumerGroupHeartbeat) and r.purpose not in ("leave", "release")
        )
        self.outstanding.remove(request)
        if code in (ErrorCode.UNRELEASED_INSTANCE_ID, ErrorCode.FENCED_INSTANCE_ID) and not self.static:
            code = ErrorCode.UNKNOWN_MEMBER_ID
        if code == ErrorCode.UNRELEASED_INSTANCE_ID and request.purpose != "join":
            code = ErrorCode.FENCED_MEMBER_EPOCH
        if code != ErrorCode.NONE:
            holder = MEMBER if ours else OTHER
            message = (
                f"Static member x with instance id {INSTANCE} cannot join ... is owned by {holder} member."
            )
            self.feed(
                ev.ConsumerGroupHeartbeatResponse, token=request.token, error_code=code, error_message=message
            )
            return
        if request.purpose == "join" or bump or self.broker_epoch == 0:
            self.broker_epoch += 1
        if request.purpose == "join" and target is None:
            target = set()  # the join's answer always carries an assignment
        assignment = None
        if target is not None:
            by_id: dict[Any, list[int]] = {}
            for tp in target:
                by_id.setdefault(T if tp.topic == "t" else U, []).append(tp.partition)
            assignment = ids(by_id)
        self.feed(
            ev.ConsumerGroupHeartbeatResponse,
            token=request.token,
            member_id=MEMBER,
            member_epoch=self.broker_epoch,
            heartbeat_interval_ms=1_000,
            assignment=assignment,
        )

    @precondition(lambda self: self.has(act.SendConsumerGroupHeartbeat, "leave", "release"))
    @rule(index=st.integers(0, 3), ok=st.booleans())
    def answer_leave(self, index: int, ok: bool) -> None:
        leaves = [
            r
            for r in self.outstanding
            if isinstance(r, act.SendConsumerGroupHeartbeat) and r.purpose in ("leave", "release")
        ]
        request = leaves[index % len(leaves)]
        self.outstanding.remove(request)
        code = ErrorCode.NONE if ok else ErrorCode.UNKNOWN_MEMBER_ID
        self.feed(
            ev.ConsumerGroupHeartbeatResponse,
            token=request.token,
            error_code=code,
            member_epoch=request.member_epoch,
        )

    @precondition(lambda self: self.has(act.ResolveTopicIds))
    @rule(known=st.sets(st.sampled_from([T, U])))
    def answer_resolve(self, known: set[Any]) -> None:
        request = self.take(0, act.ResolveTopicIds)
        names = {t: NAMES[t] for t in request.topic_ids if t in known}
        self.feed(ev.TopicIdsResolved, token=request.token, names=names)

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

    @rule(commit=st.dictionaries(st.sampled_from(PARTITIONS), st.integers(0, 100), min_size=1))
    def commit(self, commit: dict[TopicPartition, int]) -> None:
        commit_id = self.next_commit_id
        self.next_commit_id += 1
        out = self.feed(
            ev.CommitRequested,
            commit_id=commit_id,
            offsets={tp: OffsetAndMetadata(o) for tp, o in commit.items()},
        )
        if self.fenced:
            assert [type(a) for a in out] == [act.CommitCompleted]

    @rule(dice=st.integers(0, 9), leave_group=st.booleans())
    def stop(self, dice: int, leave_group: bool) -> None:
        if dice != 0 or self.stopping:
            return
        self.stopping = True
        self.leave_group = leave_group
        self.feed(ev.Stop, leave_group=leave_group)

    # ------------------------------------------------------------ invariants

    @invariant()
    def the_application_owns_what_the_machine_owns_once_callbacks_are_done(self) -> None:
        if not self.callbacks:
            assert self.app_owned == set(self.h.m.assignment)

    @invariant()
    def a_fenced_member_owns_nothing(self) -> None:
        if self.fenced:
            assert self.h.m.assignment == frozenset()

    @invariant()
    def every_commit_is_answered_on_the_wire_or_waiting_for_an_epoch(self) -> None:
        waiting = set(range(1, self.next_commit_id)) - self.completed
        on_the_wire = {r.commit_id for r in self.outstanding if isinstance(r, act.SendOffsetCommit)}
        parked = {p.pending.commit_id for p in self.h.m._parked}
        assert waiting <= on_the_wire | parked, f"commits {waiting - on_the_wire - parked} are forgotten"

    @invariant()
    def committed_offsets_never_go_backwards(self) -> None:
        for tp, offset in self.h.m.committed_offsets.items():
            assert offset >= self.floor.get(tp, offset)


class StaticConsumerProtocolModel(ConsumerProtocolModel):
    static = True


class DynamicConsumerProtocolModel(ConsumerProtocolModel):
    static = False


_SETTINGS = settings(
    max_examples=100,
    stateful_step_count=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

TestStaticConsumerProtocol = StaticConsumerProtocolModel.TestCase
TestStaticConsumerProtocol.settings = _SETTINGS
TestDynamicConsumerProtocol = DynamicConsumerProtocolModel.TestCase
TestDynamicConsumerProtocol.settings = _SETTINGS

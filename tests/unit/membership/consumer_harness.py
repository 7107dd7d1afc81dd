"""A scripted consumer-protocol coordinator around ConsumerGroupMachine: feed events at a fake clock,
pick actions out. Topics are named by id as the broker names them (T is "t", U is "u")."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar
from uuid import UUID

from staticconsumer.errors import ErrorCode
from staticconsumer.membership import (
    ConsumerGroupMachine,
    IdPartitions,
    InstanceEvidence,
    MembershipConfig,
    MemberState,
    OffsetAndMetadata,
    TopicPartition,
)
from staticconsumer.membership import actions as act
from staticconsumer.membership import events as ev

A = TypeVar("A", bound=act.Action)

GROUP = "g"
INSTANCE = "pod-0"
MEMBER = "AAAAAAAAAAAAAAAAAAAAAA"
T = UUID(int=1)
U = UUID(int=2)
NAMES = {T: "t", U: "u"}
INTERVAL_MS = 5_000


def tp(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


def offsets(**by_key: int) -> dict[TopicPartition, OffsetAndMetadata]:
    """offsets(t0=5, u1=7): topic letters then partition digits."""
    out = {}
    for key, value in by_key.items():
        topic = key.rstrip("0123456789")
        out[TopicPartition(topic, int(key[len(topic) :]))] = OffsetAndMetadata(value)
    return out


def of(actions: Sequence[act.Action], cls: type[A]) -> list[A]:
    return [a for a in actions if isinstance(a, cls)]


def one(actions: Sequence[act.Action], cls: type[A]) -> A:
    found = of(actions, cls)
    assert len(found) == 1, f"expected exactly one {cls.__name__} in {actions!r}"
    return found[0]


def kinds(actions: Sequence[act.Action]) -> list[str]:
    return [type(a).__name__ for a in actions]


def ids(assignment: Mapping[UUID, Iterable[int]]) -> tuple[IdPartitions, ...]:
    return tuple(IdPartitions(t, tuple(sorted(ps))) for t, ps in assignment.items())


def owned_of(heartbeat: act.SendConsumerGroupHeartbeat) -> dict[UUID, list[int]] | None:
    if heartbeat.owned is None:
        return None
    return {t.topic_id: list(t.partitions) for t in heartbeat.owned}


class ConsumerHarness:
    """Owns a machine, a clock and every action it emitted."""

    def __init__(
        self,
        *,
        instance_id: str | None = INSTANCE,
        member_id: str = MEMBER,
        evidence: InstanceEvidence | None = None,
        **overrides: Any,
    ) -> None:
        settings: dict[str, Any] = {
            "group_id": GROUP,
            "group_instance_id": instance_id,
            "decode_assignment": lambda data: [],
            "session_timeout_ms": 45_000,
            "heartbeat_interval_ms": 3_000,
            "max_poll_interval_ms": 300_000,
            "retry_backoff_ms": 100,
            "retry_backoff_max_ms": 1_000,
            "request_timeout_ms": 30_000,
        }
        settings.update(overrides)
        self.config = MembershipConfig(**settings)
        self.m = ConsumerGroupMachine(self.config, member_id, evidence)
        self.now = 100.0
        self.history: list[act.Action] = []

    def feed(self, cls: type[ev.Event], **fields: Any) -> list[act.Action]:
        out = self.m.handle(cls(now=self.now, **fields))
        self.history.extend(out)
        deadline = self.m.next_deadline()
        assert deadline is None or deadline > self.now, "next_deadline must lie in the future"
        return out

    def run_until(self, when: float) -> list[act.Action]:
        out: list[act.Action] = []
        while True:
            deadline = self.m.next_deadline()
            if deadline is None or deadline > when:
                break
            self.now = deadline
            out.extend(self.feed(ev.Tick))
        self.now = when
        out.extend(self.feed(ev.Tick))
        return out

    def state(self) -> MemberState:
        return self.m.state

    def sent(self, cls: type[A]) -> list[A]:
        return of(self.history, cls)

    # ---- scripted broker answers

    def start(self, topics: Iterable[str] = ("t", "u"), pattern: str | None = None) -> act.FindCoordinator:
        return one(
            self.feed(ev.Start, protocols=(), topics=frozenset(topics), pattern=pattern), act.FindCoordinator
        )

    def start_until_join(self, **start: Any) -> act.SendConsumerGroupHeartbeat:
        lookup = self.start(**start)
        return one(
            self.feed(ev.FindCoordinatorResponse, token=lookup.token, node_id=1),
            act.SendConsumerGroupHeartbeat,
        )

    def answer(
        self,
        heartbeat: act.SendConsumerGroupHeartbeat,
        error: int = ErrorCode.NONE,
        *,
        epoch: int | None = None,
        assignment: Mapping[UUID, Iterable[int]] | None = None,
        interval_ms: int | None = None,
        message: str | None = None,
    ) -> list[act.Action]:
        ok = error == ErrorCode.NONE
        if epoch is None:
            epoch = max(heartbeat.member_epoch, 1) if ok else 0
        return self.feed(
            ev.ConsumerGroupHeartbeatResponse,
            token=heartbeat.token,
            error_code=error,
            error_message=message,
            member_id=heartbeat.member_id if ok else None,
            member_epoch=epoch if ok else 0,
            heartbeat_interval_ms=(INTERVAL_MS if interval_ms is None else interval_ms) if ok else 0,
            assignment=ids(assignment) if assignment is not None else None,
        )

    def resolve(
        self, action: act.ResolveTopicIds, names: Mapping[UUID, str] | None = None
    ) -> list[act.Action]:
        known = NAMES if names is None else names
        return self.feed(
            ev.TopicIdsResolved,
            token=action.token,
            names={t: known[t] for t in action.topic_ids if t in known},
        )

    def finish(
        self, callback: act.PartitionsAssigned | act.PartitionsRevoked | act.PartitionsLost, **commit: int
    ) -> list[act.Action]:
        return self.feed(
            ev.CallbackFinished, callback_id=callback.callback_id, offsets_to_commit=offsets(**commit)
        )

    def commit_answer(self, send: act.SendOffsetCommit, error: int = ErrorCode.NONE) -> list[act.Action]:
        return self.feed(
            ev.OffsetCommitResponse, token=send.token, partition_errors=dict.fromkeys(send.offsets, error)
        )

    def commit(self, commit_id: int = 1, **by_key: int) -> list[act.Action]:
        return self.feed(ev.CommitRequested, commit_id=commit_id, offsets=offsets(**by_key))

    def next_heartbeat(self) -> act.SendConsumerGroupHeartbeat:
        """Run to the next heartbeat and return it."""
        deadline = self.m.next_deadline()
        assert deadline is not None
        return one(self.run_until(deadline), act.SendConsumerGroupHeartbeat)

    def stable(
        self,
        assignment: Mapping[UUID, Iterable[int]] | None = None,
        *,
        epoch: int = 1,
        join: act.SendConsumerGroupHeartbeat | None = None,
    ) -> act.PartitionsAssigned:
        """Start (or answer ``join``), resolve, assign, acknowledge: STABLE owning ``assignment``."""
        if assignment is None:
            assignment = {T: [0, 1]}
        if join is None:
            join = self.start_until_join()
        out = self.answer(join, epoch=epoch, assignment=assignment)
        unknown = of(out, act.ResolveTopicIds)
        if unknown:
            out = self.resolve(unknown[0])
        assigned = one(out, act.PartitionsAssigned)
        ack = one(self.finish(assigned), act.SendConsumerGroupHeartbeat)
        assert ack.purpose == "acknowledge"
        self.answer(ack, epoch=epoch)
        assert self.state() is MemberState.STABLE
        return assigned

"""A scripted coordinator around MembershipMachine: feed events at a fake clock, pick actions out.

The codecs are deliberately trivial (text) so the tests read like the protocol and do not depend on
staticconsumer.protocol: an assignment is b"t:0,t:1", a subscription b"t,u".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from staticconsumer.errors import ErrorCode
from staticconsumer.membership import (
    GroupProtocol,
    JoinGroupMember,
    MembershipConfig,
    MembershipMachine,
    MemberState,
    OffsetAndMetadata,
    RebalanceProtocol,
    TopicPartition,
)
from staticconsumer.membership import actions as act
from staticconsumer.membership import events as ev

A = TypeVar("A", bound=act.Action)

GROUP = "g"
INSTANCE = "pod-0"
PROTOCOLS = (GroupProtocol("range", b"t"), GroupProtocol("roundrobin", b"t"))
UUID22 = "AAAAAAAAAAAAAAAAAAAAAA"


def encode_assignment(partitions: Iterable[TopicPartition]) -> bytes:
    return ",".join(f"{tp.topic}:{tp.partition}" for tp in sorted(partitions)).encode()


def decode_assignment(data: bytes) -> list[TopicPartition]:
    if not data:
        return []
    out = []
    for item in data.decode().split(","):
        topic, _, partition = item.rpartition(":")
        out.append(TopicPartition(topic, int(partition)))
    return out


def decode_subscription(data: bytes) -> list[str]:
    if data.startswith(b"!"):
        raise ValueError("corrupt subscription")
    return [t for t in data.decode().split(",") if t]


def tp(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


def offsets(**by_key: int) -> dict[TopicPartition, OffsetAndMetadata]:
    """offsets(t0=5, t1=7) -> {t[0]: 5, t[1]: 7}: topic letters then partition digits."""
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


class Harness:
    """Owns a machine, a clock and the list of every action it emitted."""

    def __init__(
        self,
        *,
        instance_id: str | None = INSTANCE,
        rebalance_protocol: RebalanceProtocol = RebalanceProtocol.EAGER,
        **overrides: Any,
    ) -> None:
        settings: dict[str, Any] = {
            "group_id": GROUP,
            "group_instance_id": instance_id,
            "decode_assignment": decode_assignment,
            "decode_subscription": decode_subscription,
            "session_timeout_ms": 10_000,
            "heartbeat_interval_ms": 1_000,
            "max_poll_interval_ms": 60_000,
            "retry_backoff_ms": 100,
            "retry_backoff_max_ms": 1_000,
        }
        settings.update(overrides)
        self.config = MembershipConfig(**settings)
        self.m = MembershipMachine(self.config, rebalance_protocol)
        self.now = 100.0
        self.history: list[act.Action] = []

    # ---- raw feeding

    def feed(self, cls: type[ev.Event], **fields: Any) -> list[act.Action]:
        event = cls(now=self.now, **fields)
        out = self.m.handle(event)
        self.history.extend(out)
        deadline = self.m.next_deadline()
        assert deadline is None or deadline > self.now, "next_deadline must lie in the future"
        return out

    def advance(self, seconds: float) -> list[act.Action]:
        self.now += seconds
        return self.feed(ev.Tick)

    def run_until(self, when: float) -> list[act.Action]:
        """Tick at every deadline up to ``when``, like a driver would, collecting the actions."""
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

    def live_until(self, when: float) -> list[act.Action]:
        """Like run_until, but a healthy coordinator answers every heartbeat and lookup at once."""
        out: list[act.Action] = []
        pending = self.run_until(self.now)
        while True:
            out.extend(pending)
            answers = [a for a in pending if isinstance(a, act.SendHeartbeat | act.FindCoordinator)]
            pending = []
            for request in answers:
                if isinstance(request, act.SendHeartbeat):
                    pending.extend(self.feed(ev.HeartbeatResponse, token=request.token))
                else:
                    pending.extend(self.feed(ev.FindCoordinatorResponse, token=request.token, node_id=1))
            if pending:
                continue
            deadline = self.m.next_deadline()
            if deadline is None or deadline > when:
                break
            self.now = deadline
            pending = self.feed(ev.Tick)
        if self.now < when:
            self.now = when
            out.extend(self.feed(ev.Tick))
        return out

    def state(self) -> MemberState:
        """The machine's state through a call, so type checkers do not narrow it across events."""
        return self.m.state

    def sent(self, cls: type[A]) -> list[A]:
        return of(self.history, cls)

    # ---- scripted broker answers

    def start(self, protocols: tuple[GroupProtocol, ...] = PROTOCOLS) -> act.FindCoordinator:
        return one(self.feed(ev.Start, protocols=protocols), act.FindCoordinator)

    def coordinator_found(self, lookup: act.FindCoordinator, node_id: int = 1) -> list[act.Action]:
        return self.feed(ev.FindCoordinatorResponse, token=lookup.token, node_id=node_id)

    def start_until_join(self) -> act.SendJoinGroup:
        lookup = self.start()
        return one(self.prepare_first_join(self.coordinator_found(lookup)), act.SendJoinGroup)

    def prepare_first_join(self, out: list[act.Action]) -> list[act.Action]:
        """Finish the eager revoke of the empty assignment that precedes the first join (aiokafka's),
        if ``out`` has one; the actions that follow. It leaves ``history``, so tests count the revokes
        of what was assigned (test_membership_join pins the first-join revoke itself)."""
        revoked = of(out, act.PartitionsRevoked)
        if not revoked or revoked[0].partitions:
            return out
        self.history.remove(revoked[0])
        return self.finish_callback(revoked[0])

    def join_answer(
        self,
        join: act.SendJoinGroup,
        error: int = ErrorCode.NONE,
        *,
        generation: int = 1,
        member_id: str | None = None,
        leader_id: str = "leader-1",
        members: tuple[JoinGroupMember, ...] = (),
        skip_assignment: bool = False,
        protocol_type: str | None = "consumer",
        protocol_name: str | None = "range",
    ) -> list[act.Action]:
        if member_id is None:
            member_id = join.member_id or f"{INSTANCE}-{UUID22}"
        return self.feed(
            ev.JoinGroupResponse,
            token=join.token,
            error_code=error,
            generation=generation,
            protocol_type=protocol_type,
            protocol_name=protocol_name,
            leader_id=leader_id,
            member_id=member_id,
            skip_assignment=skip_assignment,
            members=members,
        )

    def sync_answer(
        self,
        sync: act.SendSyncGroup,
        error: int = ErrorCode.NONE,
        *,
        partitions: Iterable[TopicPartition] = (),
        protocol_type: str | None = "consumer",
        protocol_name: str | None = "range",
    ) -> list[act.Action]:
        return self.feed(
            ev.SyncGroupResponse,
            token=sync.token,
            error_code=error,
            protocol_type=protocol_type,
            protocol_name=protocol_name,
            assignment=encode_assignment(partitions),
        )

    def finish_callback(
        self, callback: act.PartitionsAssigned | act.PartitionsRevoked | act.PartitionsLost, **commit: int
    ) -> list[act.Action]:
        return self.feed(
            ev.CallbackFinished, callback_id=callback.callback_id, offsets_to_commit=offsets(**commit)
        )

    def become_stable(
        self,
        partitions: Iterable[TopicPartition] = (TopicPartition("t", 0), TopicPartition("t", 1)),
        *,
        generation: int = 1,
        member_id: str = f"{INSTANCE}-{UUID22}",
        join: act.SendJoinGroup | None = None,
    ) -> act.PartitionsAssigned:
        """Drive start (or the given join) to STABLE as a follower and finish the assigned callback."""
        if join is None:
            join = self.start_until_join()
        sync = one(self.join_answer(join, generation=generation, member_id=member_id), act.SendSyncGroup)
        assigned = one(self.sync_answer(sync, partitions=partitions), act.PartitionsAssigned)
        self.finish_callback(assigned)
        return assigned

    def commit(self, commit_id: int = 1, **by_key: int) -> list[act.Action]:
        return self.feed(ev.CommitRequested, commit_id=commit_id, offsets=offsets(**by_key))

    def commit_answer(self, send: act.SendOffsetCommit, error: int = ErrorCode.NONE) -> list[act.Action]:
        return self.feed(
            ev.OffsetCommitResponse, token=send.token, partition_errors=dict.fromkeys(send.offsets, error)
        )

    def heartbeat_due(self) -> act.SendHeartbeat:
        """Advance to the next heartbeat and return it."""
        deadline = self.m.next_deadline()
        assert deadline is not None
        return one(self.run_until(deadline), act.SendHeartbeat)

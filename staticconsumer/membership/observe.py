"""What observers (telemetry, the event log, your own) see of the membership, whatever the protocol.

After every step the runtime calls each observer with the event, the actions it caused and the machine's
read-only view. Wire events and request actions differ between protocols; the ownership actions
(PartitionsAssigned/Revoked/Lost), the verdicts (CommitCompleted, Fatal, Stopped) and the **milestones**
below do not, so an observer built on those reads every protocol the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import msgspec

from . import actions, events
from .types import MembershipConfig, MemberState, TopicPartition


class Milestone(msgspec.Struct, frozen=True, kw_only=True):
    """A protocol-neutral fact about the member, emitted by the machine for observers only."""


class JoinStarted(Milestone, frozen=True, kw_only=True):
    """A (re)join attempt goes out; ``reason`` is why the member (re)joins ("" for the first join)."""

    member_id: str
    reason: str
    rebalance_protocol: str | None = None
    """How this member moves partitions (classic protocol): ``eager`` or ``cooperative``; None where the
    distinction does not apply."""


class Joined(Milestone, frozen=True, kw_only=True):
    """The member is in ``generation`` (the member epoch under the consumer protocol)."""

    generation: int
    member_id: str
    leader_id: str
    leader: bool
    leadership_guessed: bool
    assignment_skipped: bool
    protocol_name: str | None
    rebalance_protocol: str | None = None
    """``eager`` or ``cooperative`` under the classic protocol (see JoinStarted)."""


class HeartbeatFailed(Milestone, frozen=True, kw_only=True):
    """The coordinator answered a heartbeat with an error (which may or may not end the membership)."""

    error_code: int


class Leaving(Milestone, frozen=True, kw_only=True):
    """The member tells the coordinator it leaves the group."""

    member_id: str
    group_instance_id: str | None
    reason: str


class MemberView(Protocol):
    """The read-only side of a membership machine that observers may rely on."""

    @property
    def config(self) -> MembershipConfig: ...

    @property
    def state(self) -> MemberState: ...

    @property
    def member_id(self) -> str: ...

    @property
    def generation(self) -> int: ...

    @property
    def protocol_name(self) -> str | None: ...

    @property
    def is_leader(self) -> bool: ...

    @property
    def assignment(self) -> frozenset[TopicPartition]: ...

    @property
    def committed_offsets(self) -> Mapping[TopicPartition, int]: ...

    @property
    def fatal_error(self) -> Exception | None: ...

    @property
    def milestones(self) -> tuple[Milestone, ...]: ...


class MembershipObserver(Protocol):
    """Sees every event the machine handles and the actions it returned (telemetry, event logs).

    Called on the membership thread after each step, with the machine already updated (its
    ``milestones`` are those of this step); it must be quick and must not block. An observer that raises
    is logged and skipped: observing never breaks the consumer.
    """

    def observe(
        self, event: events.Event, produced: Sequence[actions.Action], machine: MemberView
    ) -> None: ...

"""What every protocol's membership machine shares: the step (events in, actions out), the bookkeeping
objects (coordinator lookup, requests in flight, commits, ownership), the commit request, fencing and the
coordinator's discovery.

``ClassicMachine`` (JoinGroup/SyncGroup/Heartbeat) and ``ConsumerGroupMachine`` (KIP-848's heartbeat)
subclass ``MachineCore`` and supply the protocol: how an event is dispatched, what the machine does
after it (``_drive``), which generation a commit carries, and how a failure ends the member.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping

from staticconsumer.errors import (
    CommitFailedError,
    CoordinatorNotAvailableError,
    ErrorCode,
    FencedInstanceIdError,
    OffsetRegressionError,
    broker_error,
)

from . import actions as act
from . import events as ev
from .backoff import Backoff
from .commits import CommitBook, PendingCommit
from .config import MembershipConfig
from .coordinator import CoordinatorLookup
from .inflight import InFlight, RequestKind
from .observe import Milestone
from .reconcile import Ownership
from .types import NO_MEMBER_ID, OffsetAndMetadata, RequestToken, TopicPartition

log = logging.getLogger("staticconsumer.membership")


class Life(enum.Enum):
    """Where the member is in its own life, whatever the protocol's state within the group."""

    NOT_STARTED = enum.auto()
    RUNNING = enum.auto()
    STOPPING = enum.auto()
    STOPPED = enum.auto()
    FENCED = enum.auto()
    FAILED = enum.auto()


class MachineCore:
    """The protocol-independent half of a membership machine (see the module docstring)."""

    def __init__(self, config: MembershipConfig) -> None:
        self._config = config
        self._backoff = Backoff(config.retry_backoff_ms, config.retry_backoff_max_ms)
        self._now = 0.0
        self._out: list[act.Action] = []
        self._milestones: list[Milestone] = []
        self._last_milestones: tuple[Milestone, ...] = ()
        self._life = Life.NOT_STARTED
        self._fatal_error: Exception | None = None
        self._member_id = NO_MEMBER_ID
        self._coordinator = CoordinatorLookup(self._backoff)
        self._requests = InFlight()
        self._commits = CommitBook()
        self._ownership = Ownership()
        self._next_request_id = 1
        self._last_poll_at = 0.0

    # -- what the protocol supplies ------------------------------------------------------------------

    def _dispatch(self, event: ev.Event) -> None:
        raise NotImplementedError

    def _drive(self) -> None:
        """Whatever is due after an event: joins, heartbeats, reconciliation steps, the stop."""
        raise NotImplementedError

    def _fail(self, error: Exception, *, fenced: bool = False) -> None:
        raise NotImplementedError

    def _coordinator_lost(self, reason: str) -> None:
        raise NotImplementedError

    def _coordinator_found(self) -> None:
        """A new coordinator was found (the protocol may reset a timer or resend everything)."""

    def _generation_now(self) -> int:
        """The generation (classic) or member epoch (consumer protocol) this member is at: every request
        token and every commit carries it."""
        raise NotImplementedError

    def _commit_refused(self) -> Exception | None:
        """Why a commit cannot go out now (not in a stable generation, rebalancing), or None."""
        raise NotImplementedError

    def _commit_on_release(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> int | None:
        """Commit what a revoke callback returned; the request id, or None when nothing was sent."""
        raise NotImplementedError

    # -- read-only view ------------------------------------------------------------------------------

    @property
    def config(self) -> MembershipConfig:
        return self._config

    @property
    def backoff(self) -> Backoff:
        """The retry policy this member follows (the runtime backs off its own retries with it too)."""
        return self._backoff

    @property
    def member_id(self) -> str:
        return self._member_id

    @property
    def coordinator_known(self) -> bool:
        return self._coordinator.known

    @property
    def fatal_error(self) -> Exception | None:
        return self._fatal_error

    @property
    def committed_offsets(self) -> Mapping[TopicPartition, int]:
        """Highest offset per partition that the coordinator acknowledged from this member."""
        return self._commits.committed

    @property
    def milestones(self) -> tuple[Milestone, ...]:
        """The protocol-neutral facts of the last ``handle`` call (for observers)."""
        return self._last_milestones

    # -- the step ------------------------------------------------------------------------------------

    def handle(self, event: ev.Event) -> list[act.Action]:
        """Apply one event and return the actions it causes, in the order they must be performed."""
        self._now = event.now
        self._dispatch(event)
        self._drive()
        out, self._out = self._out, []
        self._last_milestones, self._milestones = tuple(self._milestones), []
        return out

    def _send(self, kind: RequestKind, member_id: str | None = None) -> RequestToken:
        """A token for a new request of ``kind``, tracked until its answer or failure."""
        token = RequestToken(self._next_request_id, self._generation_now(), member_id or self._member_id)
        self._next_request_id += 1
        self._requests.add(kind, token, self._coordinator.epoch)
        return token

    def _emit(self, action: act.Action) -> None:
        self._out.append(action)

    def _emit_all(self, actions: list[act.Action]) -> None:
        self._out.extend(actions)

    def _note(self, milestone: Milestone) -> None:
        self._milestones.append(milestone)

    def _poll_deadline(self) -> float:
        return self._last_poll_at + self._config.max_poll_interval_ms / 1000.0

    # -- the coordinator -----------------------------------------------------------------------------

    def _earliest(self, candidates: list[float]) -> float | None:
        """The earliest of a machine's timers still ahead, plus the coordinator's rediscovery backoff."""
        if self._life in (Life.RUNNING, Life.STOPPING) and self._coordinator.retry_at is not None:
            candidates.append(self._coordinator.retry_at)
        future = [t for t in candidates if t > self._now]
        return min(future) if future else None

    def _ensure_coordinator(self) -> None:
        if self._requests.has(RequestKind.LOOKUP) or not self._coordinator.may_look_up(self._now):
            return
        self._emit(act.FindCoordinator(token=self._send(RequestKind.LOOKUP)))

    def _coordinator_failed(self, epoch: int | None, reason: str) -> None:
        """Mark the coordinator unknown, unless the request went to one we already replaced."""
        if self._coordinator.is_current(epoch):
            self._coordinator_lost(reason)

    def _on_find_coordinator(self, event: ev.FindCoordinatorResponse) -> None:
        if self._requests.take(event.token) is None:
            return
        if self._life not in (Life.RUNNING, Life.STOPPING):
            return
        if event.error_code == ErrorCode.NONE:
            self._coordinator.found()
            self._coordinator_found()
            log.info("group %s: coordinator is node %s", self._config.group_id, event.node_id)
            return
        error = broker_error(event.error_code, "FindCoordinator failed")
        if event.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED or not error.retriable:
            self._fail(error)
            return
        self._coordinator.lookup_failed(self._now)

    # -- commits, callbacks, fencing -----------------------------------------------------------------

    def _on_commit_requested(self, event: ev.CommitRequested) -> None:
        """The application's commit: refused locally when it cannot succeed, else sent."""

        def done(error: Exception | None) -> None:
            self._emit(act.CommitCompleted(commit_id=event.commit_id, offsets=event.offsets, error=error))

        if self._fatal_error is not None:
            done(self._fatal_error)
        elif self._life not in (Life.RUNNING, Life.STOPPING):
            done(CommitFailedError("the consumer is not running, so it is in no group generation"))
        elif not event.offsets:
            done(None)
        elif (refused := self._commit_refused()) is not None:
            done(refused)
        elif regressions := self._commits.regressions(event.offsets):
            done(OffsetRegressionError(regressions))
        elif not self._coordinator.known:
            self._ensure_coordinator()
            done(CoordinatorNotAvailableError("group coordinator unknown; rediscovering, retry the commit"))
        else:
            self._send_commit(event.commit_id, event.offsets)

    def _send_commit(self, commit_id: int | None, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> int:
        token = self._send(RequestKind.COMMIT)
        frozen = dict(offsets)
        self._commits.sent(PendingCommit(commit_id, frozen, token))
        self._emit(
            act.SendOffsetCommit(
                token=token,
                commit_id=commit_id,
                generation=self._generation_now(),
                member_id=self._member_id,
                group_instance_id=self._config.group_instance_id,
                offsets=frozen,
            )
        )
        return token.request_id

    def _complete_commit(self, pending: PendingCommit, error: Exception | None) -> None:
        self._emit(act.CommitCompleted(commit_id=pending.commit_id, offsets=pending.offsets, error=error))
        self._ownership.commit_finished(pending.token.request_id)

    def _on_callback_finished(self, event: ev.CallbackFinished) -> None:
        """A listener callback returned: a revoke's offsets are committed before the release is done."""
        release = self._ownership.callback_finished(event.callback_id)
        if release is None:
            return
        if release.lost or not event.offsets_to_commit:
            self._ownership.release_done()
            return
        request_id = self._commit_on_release(event.offsets_to_commit)
        if request_id is None:
            self._ownership.release_done()
        else:
            release.commit_request_id = request_id

    def _fence(self) -> FencedInstanceIdError:
        error = FencedInstanceIdError(
            group_id=self._config.group_id, group_instance_id=self._config.group_instance_id
        )
        self._fail(error, fenced=True)
        return error

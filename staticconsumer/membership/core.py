"""What every protocol's membership machine shares: the step (events in, actions out), the bookkeeping
objects (coordinator lookup, requests in flight, commits, ownership), and one lifecycle: start, poll, stop
(release, leave, Stopped), the coordinator's discovery and loss, commits and their answers, failed
requests, fencing and the fatal end. The error tables of rules.py are decoded here, once: the steps every
protocol takes alike are carried out here, the others handed to the protocol's ``_react_step``.

``ClassicMachine`` (JoinGroup/SyncGroup/Heartbeat) and ``ConsumerGroupMachine`` (KIP-848's heartbeat)
subclass ``MachineCore`` and supply only what makes their protocol different, through the hooks below.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

import msgspec

from staticconsumer.errors import (
    CommitFailedError,
    CoordinatorNotAvailableError,
    EncodeError,
    ErrorCode,
    FencedInstanceIdError,
    NetworkExceptionError,
    OffsetRegressionError,
    RequestTimedOutError,
    StaticConsumerError,
    broker_error,
)

from . import actions as act
from . import events as ev
from . import rules
from .backoff import Backoff
from .coordinator import CoordinatorLookup
from .inflight import InFlight, Request, RequestKind
from .observe import Milestone
from .reconcile import Ownership
from .rules import Step, Verdict, code_name
from .types import (
    NO_MEMBER_ID,
    FailureKind,
    MembershipConfig,
    MemberState,
    OffsetAndMetadata,
    ReleaseReason,
    RequestToken,
    TopicPartition,
)

if TYPE_CHECKING:
    from .commits import CommitBook, PendingCommit

log = logging.getLogger("staticconsumer.membership")


class Life(enum.Enum):
    """Where the member is in its own life, whatever the protocol's state within the group."""

    NOT_STARTED = enum.auto()
    RUNNING = enum.auto()
    STOPPING = enum.auto()
    STOPPED = enum.auto()
    FENCED = enum.auto()
    FAILED = enum.auto()


TERMINAL = frozenset({Life.STOPPED, Life.FENCED, Life.FAILED})
LIFE_STATE = {
    Life.NOT_STARTED: MemberState.NOT_STARTED,
    Life.STOPPING: MemberState.STOPPING,
    Life.STOPPED: MemberState.STOPPED,
    Life.FENCED: MemberState.FENCED,
    Life.FAILED: MemberState.FAILED,
}
"""The member's state whenever it is not running (then the protocol's phase says it)."""

_LEAVES = (RequestKind.LEAVE, RequestKind.CONSUMER_LEAVE)


class Answer(msgspec.Struct, frozen=True):
    """A broker's answer to a request the rule tables cover, as their steps need it."""

    api: str
    code: int
    token: RequestToken
    coordinator_epoch: int
    detail: str | None = None
    """What the broker (or the runtime) said about the refusal, for logs and fatal errors."""
    minted_member_id: str = NO_MEMBER_ID
    """The member id a JoinGroup answer carries (KIP-394)."""
    joining: bool = False
    """The request was the member's join (a JoinGroup, or a heartbeat at epoch 0)."""


class MachineCore:
    """The protocol-independent half of a membership machine (see the module docstring)."""

    _SHOWS_LEAVING = False
    """Whether ``state`` says LEAVING while the stop's leave is out (Java's consumer protocol does)."""

    def __init__(self, config: MembershipConfig) -> None:
        self._config = config
        self._backoff = Backoff(config.retry_backoff_ms, config.retry_backoff_max_ms)
        self._now = 0.0
        self._out: list[act.Action] = []
        self._milestones: list[Milestone] = []
        self._last_milestones: tuple[Milestone, ...] = ()
        self._life = Life.NOT_STARTED
        self._phase = MemberState.UNJOINED
        """Where the member is in the group while it runs (Java's MemberState)."""
        self._fatal_error: Exception | None = None
        self._member_id = NO_MEMBER_ID
        self._protocol_name: str | None = None
        self._is_leader = False
        self._leadership_guessed = False
        self._coordinator = CoordinatorLookup(self._backoff)
        self._requests = InFlight()
        self._commit_book: CommitBook | None = None
        """Made at the first commit (:attr:`_commits`): a restart reaches its first record without one, so
        it does not load the commit bookkeeping on the way (issue 26)."""
        self._ownership = Ownership()
        self._next_request_id = 1
        self._last_poll_at = 0.0
        self._stop_leave_group = False
        self._stop_leave_decided = False
        self._stop_leave_request_id: int | None = None

    # -- what the protocol supplies ------------------------------------------------------------------

    def _dispatch_protocol(self, event: ev.Event) -> None:
        """The protocol's own events (its responses, rejoin and subscription requests); TypeError for any
        other."""
        raise NotImplementedError

    def _start_refused(self, event: ev.Start) -> str | None:
        """Why ``Start`` cannot run this protocol (nothing to subscribe or assign with), or None."""
        raise NotImplementedError

    def _started(self, event: ev.Start) -> None:
        """The member runs: the protocol's first phase and what it joins with."""
        raise NotImplementedError

    def _polled(self) -> None:
        """The application polled (a member waiting for it rejoins)."""

    def _stopping(self) -> None:
        """``Stop`` began: drop what only a running member does (join retries, commits waiting to resend)."""

    def _check_timers(self) -> None:
        """A running member's own deadlines (session, max.poll.interval.ms)."""
        raise NotImplementedError

    def _drive_running(self) -> None:
        """Whatever is due while running: joins, heartbeats, reconciliation steps."""
        raise NotImplementedError

    def _release_on_stop(self) -> bool:
        """Give up what is held before leaving; True while a callback (and maybe a commit) must finish."""
        raise NotImplementedError

    def _leave_needs_coordinator(self) -> bool:
        """Whether the stop must find the coordinator to send its leave (the leave is its point)."""
        raise NotImplementedError

    def _leave_on_stop(self) -> int | None:
        """Send the stop's leave if one is due; its request id, or None."""
        raise NotImplementedError

    def _ended(self) -> None:
        """The member ended for good: forget the protocol's work in progress."""

    def _coordinator_gone(self) -> None:
        """The coordinator is being forgotten (the protocol may resend everything to the next one)."""

    def _coordinator_found(self) -> None:
        """A new coordinator was found (the protocol may reset a timer or resend everything)."""

    def _unsupported(self, detail: str) -> Exception:
        """The error that ends a member whose broker cannot speak the protocol's requests."""
        raise NotImplementedError

    def _request_failed(self, request: Request, event: ev.RequestFailed, reason: str) -> None:
        """A protocol request (not a lookup, not a commit) got no answer."""
        raise NotImplementedError

    def _heartbeat_failed(self) -> None:
        """Back the next heartbeat off."""
        raise NotImplementedError

    def _react_step(self, step: Step, answer: Answer, reason: str) -> None:
        """One step of a rule table that only this protocol takes (only while running)."""
        raise NotImplementedError

    def _fatal_broker_error(self, answer: Answer) -> Exception:
        """The error a FAIL step ends the member with, worded for the API that failed."""
        raise NotImplementedError

    def _commit_reaction(self, code: int) -> rules.CommitReaction:
        """The protocol's OffsetCommit table."""
        raise NotImplementedError

    def _rejoining(self) -> bool:
        """Whether a refused commit's caller is told the member is rejoining (RebalanceInProgressError)."""
        return False

    def _join_decides(self) -> bool:
        """A JoinGroup is out: a commit answered now was sent before it, on the same connection (the
        pre-join commit among them), and the join's own answer says where the member stands."""
        return False

    def _park(self, pending: PendingCommit, sent_epoch: int) -> None:
        """Keep a commit the table resends (Verdict.RESENT) until the protocol can resend it."""
        raise NotImplementedError

    def _release_commit_refused(self) -> str | None:
        """Why the commit after a revoke callback cannot succeed now (for the log), or None."""
        raise NotImplementedError

    def _deadlines(self) -> list[float]:
        """The running member's own timers (heartbeat, poll, retries); past ones are ignored."""
        raise NotImplementedError

    def _repr_identity(self) -> str:
        """What ``repr`` shows of the member's place in the group."""
        raise NotImplementedError

    def _generation_now(self) -> int:
        """The generation (classic) or member epoch (consumer protocol) this member is at: every request
        token and every commit carries it."""
        raise NotImplementedError

    def _commit_refused(self) -> Exception | None:
        """Why a commit cannot go out now (not in a stable generation, rebalancing), or None."""
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
    def state(self) -> MemberState:
        """The group phase while running (Java's MemberState), else where the member is in its life."""
        if self._life is Life.RUNNING:
            return self._phase
        if self._life is Life.STOPPING and self._SHOWS_LEAVING and self._leave_in_flight():
            return MemberState.LEAVING
        return LIFE_STATE[self._life]

    @property
    def generation(self) -> int:
        """The generation (classic) or member epoch (consumer protocol): what commits and observers see."""
        return self._generation_now()

    @property
    def member_id(self) -> str:
        return self._member_id

    @property
    def assignment(self) -> frozenset[TopicPartition]:
        """Partitions this member owns now. Eager: empty while rebalancing or unjoined; cooperative and
        the consumer protocol: a member keeps owning (and fetching) what it holds while the group
        rebalances."""
        return self._ownership.owned

    @property
    def protocol_name(self) -> str | None:
        """The assignor the group uses: the one JoinGroup chose (classic), or the server-side assignor
        asked for (consumer protocol; None: the brokers' default)."""
        return self._protocol_name

    @property
    def is_leader(self) -> bool:
        """True when the coordinator told us we lead the current generation (never, with a broker that
        assigns)."""
        return self._is_leader

    @property
    def leadership_guessed(self) -> bool:
        """True when a below-v9 broker named a leader id minted for our instance id (LeadershipGuessed)."""
        return self._leadership_guessed

    @property
    def coordinator_known(self) -> bool:
        return self._coordinator.known

    @property
    def fatal_error(self) -> Exception | None:
        return self._fatal_error

    @property
    def committed_offsets(self) -> Mapping[TopicPartition, int]:
        """Highest offset per partition that the coordinator acknowledged from this member."""
        return {} if self._commit_book is None else self._commit_book.committed

    @property
    def _commits(self) -> CommitBook:
        """The commit bookkeeping, made (and its module loaded) when the first commit needs it."""
        if self._commit_book is None:
            from .commits import CommitBook

            self._commit_book = CommitBook()
        return self._commit_book

    @property
    def milestones(self) -> tuple[Milestone, ...]:
        """The protocol-neutral facts of the last ``handle`` call (for observers)."""
        return self._last_milestones

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__} group={self._config.group_id!r} "
            f"instance={self._config.group_instance_id!r} state={self.state.name} {self._repr_identity()}>"
        )

    def next_deadline(self) -> float | None:
        """The earliest future time at which a Tick may change something, or None."""
        return self._earliest(self._deadlines() if self._life is Life.RUNNING else [])

    # -- the step ------------------------------------------------------------------------------------

    def handle(self, event: ev.Event) -> list[act.Action]:
        """Apply one event and return the actions it causes, in the order they must be performed."""
        self._now = event.now
        self._dispatch(event)
        self._drive()
        out, self._out = self._out, []
        self._last_milestones, self._milestones = tuple(self._milestones), []
        return out

    def _dispatch(self, event: ev.Event) -> None:
        match event:
            case ev.Start():
                self._on_start(event)
            case ev.Tick():
                pass
            case ev.FindCoordinatorResponse():
                self._on_find_coordinator(event)
            case ev.CoordinatorDisconnected():
                self._coordinator_lost("coordinator connection lost", disconnect=False)
            case ev.OffsetCommitResponse():
                self._on_commit_response(event)
            case ev.RequestFailed():
                self._on_request_failed(event)
            case ev.Unrecoverable():
                self._fail(event.error)
            case ev.CallbackFinished():
                self._on_callback_finished(event)
            case ev.PollCalled():
                self._on_poll()
            case ev.CommitRequested():
                self._on_commit_requested(event)
            case ev.Stop():
                self._on_stop(event)
            case _:
                self._dispatch_protocol(event)

    def _drive(self) -> None:
        """Whatever is due after an event: the running member's timers and work, or the stop's steps."""
        if self._life is Life.RUNNING:
            self._check_timers()
        if self._life is Life.STOPPING:
            self._drive_stop()
        elif self._life is Life.RUNNING:
            self._drive_running()

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

    # -- start, poll, stop, the end ----------------------------------------------------------------

    def _on_start(self, event: ev.Start) -> None:
        if self._life is not Life.NOT_STARTED:
            log.warning("group %s: Start ignored, the member already started", self._config.group_id)
            return
        refused = self._start_refused(event)
        if refused is not None:
            self._fail(StaticConsumerError(refused))
            return
        self._life = Life.RUNNING
        self._last_poll_at = event.now
        self._started(event)

    def _on_poll(self) -> None:
        if self._fatal_error is not None:
            self._emit(act.Fatal(error=self._fatal_error))
            return
        self._last_poll_at = self._now
        self._polled()

    def _on_stop(self, event: ev.Stop) -> None:
        if self._life is Life.NOT_STARTED:
            self._life = Life.STOPPED
            self._emit(act.Stopped(error=None))
        elif self._life in TERMINAL:
            self._emit(act.Stopped(error=self._fatal_error))
        elif self._life is Life.STOPPING:
            if not self._stop_leave_decided:
                self._stop_leave_group = self._stop_leave_group or event.leave_group
        else:
            self._life = Life.STOPPING
            self._stop_leave_group = event.leave_group
            self._stopping()

    def _drive_stop(self) -> None:
        """Release partitions (revoke callback and its commit, or lost), then leave if due, then Stopped."""
        if self._ownership.busy:
            return
        if self._ownership.holding and self._release_on_stop():
            return
        if not self._stop_leave_decided:
            if self._leave_needs_coordinator() and not self._coordinator.known:
                # The leave is the point of the stop: find the coordinator first (the runtime bounds the
                # whole stop by request.timeout.ms).
                self._ensure_coordinator()
                return
            self._stop_leave_decided = True
            self._stop_leave_request_id = self._leave_on_stop()
        if self._leave_in_flight():
            return
        self._life = Life.STOPPED
        self._emit(act.Stopped(error=None))

    def _leave_in_flight(self) -> bool:
        """The stop's leave is out and not answered yet."""
        leave = self._stop_leave_request_id
        return leave is not None and self._requests.contains(leave)

    def _lose_everything(self, reason: ReleaseReason) -> bool:
        """Report every held partition lost (never committed); True while its callback runs."""
        ownership = self._ownership
        if not ownership.owned:
            ownership.drop()
            return False
        self._emit_all(ownership.lose(ownership.owned, reason, everything=True))
        return True

    def _fail(self, error: Exception, *, fenced: bool = False) -> None:
        """End the member for good: stop fetching, report partitions lost, fail pending commits."""
        if self._life in TERMINAL:
            return
        was_stopping = self._life is Life.STOPPING
        self._life = Life.FENCED if fenced else Life.FAILED
        self._fatal_error = error
        log.error("group %s: membership ended: %s", self._config.group_id, error)
        reason = ReleaseReason.FENCED if fenced else ReleaseReason.FATAL
        self._emit(act.StopFetching(reason=reason))
        self._emit_all(self._ownership.abandon(reason))
        for pending in self._commit_book.abandon() if self._commit_book is not None else ():
            self._emit(act.CommitCompleted(commit_id=pending.commit_id, offsets=pending.offsets, error=error))
        self._ended()
        # A leave already sent is still answered (it is best effort, and a stop may wait for it).
        self._requests.drop([k for k in RequestKind if k not in _LEAVES])
        self._coordinator.retry_at = None
        self._emit(act.Fatal(error=error))
        if was_stopping:
            self._emit(act.Stopped(error=error))

    def _fence(self) -> FencedInstanceIdError:
        error = FencedInstanceIdError(
            group_id=self._config.group_id, group_instance_id=self._config.group_instance_id
        )
        self._fail(error, fenced=True)
        return error

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

    def _coordinator_lost(self, reason: str, *, disconnect: bool = True) -> None:
        self._coordinator_gone()
        if self._coordinator.lose():
            log.info("group %s: coordinator unknown (%s); rediscovering", self._config.group_id, reason)
            if disconnect:
                self._emit(act.DisconnectCoordinator(reason=reason))

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
        from .commits import PendingCommit

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

    def _commit_on_release(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> int | None:
        """Commit what a revoke callback returned (rebalance or stop); the request id, or None when it
        cannot succeed and nothing was sent."""
        refused = self._release_commit_refused()
        if refused is not None:
            log.warning("group %s: not committing on release: %s", self._config.group_id, refused)
            return None
        if not self._coordinator.known:
            log.warning("group %s: not committing on release: coordinator unknown", self._config.group_id)
            return None
        regressions = self._commits.regressions(offsets)
        if regressions:
            log.warning("group %s: %s", self._config.group_id, OffsetRegressionError(regressions))
            offsets = {tp: om for tp, om in offsets.items() if tp not in regressions}
            if not offsets:
                return None
        return self._send_commit(None, offsets)

    def _on_commit_response(self, event: ev.OffsetCommitResponse) -> None:
        request = self._requests.take(event.token)
        pending = self._commits.take(event.token.request_id)
        if request is None or pending is None:
            return
        code = self._commits.acknowledge(pending, event.partition_errors)
        if code == ErrorCode.NONE:
            self._complete_commit(pending, None)
            return
        reaction = self._commit_reaction(code)
        joining = self._join_decides()
        steps, verdict = reaction.for_(self._identity_unchanged(event.token) and not joining)
        if joining:
            # No reset and no second rejoin from an answer the JoinGroup already overtook; a coordinator
            # that moved still counts (the join will be refused by it too).
            steps = tuple(step for step in steps if step is Step.COORDINATOR_LOST)
        answer = Answer("OffsetCommit", code, event.token, request.coordinator_epoch)
        reason = reaction.reason or rules.OFFSET_COMMIT_REASON.format(error=code_name(code))
        fenced = self._apply(steps, answer, reason)
        if verdict is Verdict.RESENT:
            self._park(pending, event.token.generation)
            return
        from .commits import verdict_error

        error = fenced or verdict_error(
            verdict, code, event.token.generation, rejoining=self._rejoining(), retry=reaction.retry_hint
        )
        self._complete_commit(pending, error)

    # -- the rule tables -----------------------------------------------------------------------------

    def _identity_unchanged(self, token: RequestToken) -> bool:
        """Kafka's rule: an answer may reset state only if the member still has the identity (generation
        or member epoch, and member id) the request was sent with."""
        return token.generation == self._generation_now() and token.member_id == self._member_id

    def _react(self, table: rules.ApiRules, answer: Answer) -> None:
        """Carry out ``table``'s reaction to an error answer (or a heartbeat's success)."""
        reaction = table.reaction(answer.code)
        unchanged = self._identity_unchanged(answer.token)
        if not unchanged and reaction.stale is not None and table.note_stale:
            log.info(
                "group %s: ignoring %s for an older %s",
                self._config.group_id,
                code_name(answer.code),
                table.identity,
            )
        self._apply(reaction.steps_for(unchanged), answer, table.reason_for(answer.code, reaction))

    def _apply(self, steps: tuple[Step, ...], answer: Answer, reason: str) -> FencedInstanceIdError | None:
        """The steps every protocol takes alike; the rest are the protocol's. The fencing error, if any."""
        for step in steps:
            match step:
                case Step.COORDINATOR_LOST:
                    self._coordinator_failed(
                        answer.coordinator_epoch, f"{answer.api} answered {code_name(answer.code)}"
                    )
                case Step.HEARTBEAT_BACKOFF:
                    self._heartbeat_failed()
                case Step.FENCE:
                    return self._fence()
                case Step.FAIL:
                    self._fail(self._fatal_broker_error(answer))
                case Step.WARN:
                    log.warning(
                        "group %s: heartbeat failed with %s%s",
                        self._config.group_id,
                        code_name(answer.code),
                        "" if answer.detail is None else f": {answer.detail}",
                    )
                case _ if self._life is Life.RUNNING:
                    self._react_step(step, answer, reason)
                case _:
                    pass
        return None

    # -- requests that got no answer -----------------------------------------------------------------

    def _on_request_failed(self, event: ev.RequestFailed) -> None:
        request = self._requests.take(event.token)
        if request is None:
            return
        if event.kind is FailureKind.UNSUPPORTED_VERSION:
            self._fail(self._unsupported(event.detail))
            return
        if event.kind is FailureKind.INVALID_REQUEST:
            unencodable = EncodeError(f"{request.kind.value} could not be encoded: {event.detail}")
            pending = self._commits.take(event.token.request_id)
            if pending is not None:
                self._complete_commit(pending, unencodable)
            else:
                self._fail(unencodable)
            return
        reason = f"request {event.token.request_id} {event.kind.value}"
        if request.kind is RequestKind.LOOKUP:
            self._coordinator.lookup_failed(self._now)
        elif request.kind is RequestKind.COMMIT:
            self._coordinator_failed(request.coordinator_epoch, reason)
            pending = self._commits.take(event.token.request_id)
            if pending is not None:
                error: Exception = (
                    RequestTimedOutError("offset commit timed out; retry")
                    if event.kind is FailureKind.TIMED_OUT
                    else NetworkExceptionError(
                        "connection to the coordinator lost during offset commit; retry"
                    )
                )
                self._complete_commit(pending, error)
        else:
            self._request_failed(request, event, reason)

"""The sans-IO membership state machine: events in, actions out.

It follows the Java client's AbstractCoordinator/ConsumerCoordinator (classic protocol, eager
assignment) as summarised in group-protocol-reference.md section 3, with the static-membership rules
of KIP-345/394/814. No sockets, clocks, sleeps or asyncio here: the driver feeds events (each with
``now``), performs the returned actions, and sends a Tick at ``next_deadline()``.
"""

from __future__ import annotations

import enum
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass

from staticconsumer.errors import (
    BrokerError,
    CoordinatorNotAvailableError,
    DecodeError,
    ErrorCode,
    FencedInstanceIdError,
    InconsistentGroupProtocolError,
    NetworkExceptionError,
    RebalanceInProgressError,
    RequestTimedOutError,
    StaticConsumerError,
    UnknownServerError,
    error_class_for,
)

from . import actions as act
from . import events as ev
from .commit_errors import CommitFailedError, OffsetRegressionError
from .config import MembershipConfig
from .types import (
    NO_GENERATION,
    NO_MEMBER_ID,
    FailureKind,
    GroupProtocol,
    JoinGroupMember,
    MemberState,
    OffsetAndMetadata,
    ReleaseReason,
    RequestToken,
    TopicPartition,
)

log = logging.getLogger(__name__)

MAX_REASON_LENGTH = 255
"""Java truncates JoinGroup/LeaveGroup reasons to 255 characters (JoinGroupRequest.maybeTruncateReason)."""

_COORDINATOR_ERRORS = frozenset({ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR})

_MEMBERSHIP_ERRORS = frozenset(
    {ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID}
)

_JOIN_FATAL_ERRORS = frozenset(
    {
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
        ErrorCode.INVALID_SESSION_TIMEOUT,
        ErrorCode.INVALID_GROUP_ID,
        ErrorCode.GROUP_AUTHORIZATION_FAILED,
        ErrorCode.GROUP_MAX_SIZE_REACHED,
        ErrorCode.UNSUPPORTED_VERSION,
    }
)

# Kafka mints member ids as "<instance id or client id>-<uuid>": the new coordinator uses Kafka's Uuid
# (22 chars of URL-safe base64), the old Scala one java.util.UUID (36 chars, hex with dashes).
_MINTED_SUFFIX = re.compile(
    r"[A-Za-z0-9_-]{22}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)


class _Life(enum.Enum):
    NOT_STARTED = enum.auto()
    RUNNING = enum.auto()
    STOPPING = enum.auto()
    STOPPED = enum.auto()
    FENCED = enum.auto()
    FAILED = enum.auto()


_TERMINAL = frozenset({_Life.STOPPED, _Life.FENCED, _Life.FAILED})


@dataclass(slots=True)
class _PendingCommit:
    commit_id: int | None
    offsets: Mapping[TopicPartition, OffsetAndMetadata]
    token: RequestToken


@dataclass(slots=True)
class _Release:
    """Giving up the current assignment: a callback, then (after a revoke) an optional commit."""

    callback_id: int
    lost: bool
    commit_request_id: int | None = None


def truncate_reason(reason: str) -> str:
    """Cut a rebalance/leave reason to what the broker accepts."""
    return reason[:MAX_REASON_LENGTH]


class MembershipMachine:
    """One group member's membership, as a pure state machine.

    Drive it with ``handle(event)``, which returns the actions to perform in order, and wake it with
    a Tick at ``next_deadline()``. It never raises for broker behaviour: broker errors become actions
    (Fatal, CommitCompleted with an error, retries). Construction validates the config.
    """

    def __init__(self, config: MembershipConfig) -> None:
        self._config = config
        self._now = 0.0
        self._out: list[act.Action] = []
        self._life = _Life.NOT_STARTED
        self._phase = MemberState.UNJOINED
        self._protocols: tuple[GroupProtocol, ...] = ()
        self._fatal_error: Exception | None = None

        # identity in the group
        self._member_id = NO_MEMBER_ID
        self._generation = NO_GENERATION
        self._protocol_name: str | None = None
        self._last_joined_member_id = NO_MEMBER_ID

        # coordinator
        self._coordinator_known = False
        self._coordinator_epoch = 0
        self._lookup_in_flight: RequestToken | None = None
        self._lookup_attempts = 0
        self._lookup_retry_at: float | None = None

        # join / sync
        self._rejoin_needed = True
        self._rejoin_reason = ""
        self._join_in_flight: RequestToken | None = None
        self._sync_in_flight: RequestToken | None = None
        self._awaiting_assignor: int | None = None
        self._join_attempts = 0
        self._join_retry_at: float | None = None
        self._awaiting_poll = False

        # heartbeat and liveness timers
        self._heartbeat_in_flight: RequestToken | None = None
        self._heartbeat_attempts = 0
        self._next_heartbeat_at = 0.0
        self._last_heartbeat_ok_at = 0.0
        self._last_poll_at = 0.0

        # assignment, leadership, callbacks
        self._assignment: frozenset[TopicPartition] | None = None
        self._release: _Release | None = None
        self._callback_in_flight: int | None = None
        self._is_leader = False
        self._leadership_guessed = False
        self._group_members: tuple[JoinGroupMember, ...] = ()
        self._group_topics: frozenset[str] = frozenset()

        # commits and leaves
        self._commits_in_flight: dict[int, _PendingCommit] = {}
        self._committed: dict[TopicPartition, int] = {}
        self._leaves_in_flight: set[int] = set()
        self._stop_leave_group = False
        self._stop_leave_decided = False
        self._stop_leave_request_id: int | None = None

        self._request_epochs: dict[int, int] = {}
        self._next_request_id = 1
        self._next_callback_id = 1

    # ------------------------------------------------------------------ read-only view

    @property
    def config(self) -> MembershipConfig:
        return self._config

    @property
    def state(self) -> MemberState:
        """Lifecycle state when not running, else the group phase (Java's MemberState)."""
        if self._life is _Life.RUNNING:
            return self._phase
        return {
            _Life.NOT_STARTED: MemberState.NOT_STARTED,
            _Life.STOPPING: MemberState.STOPPING,
            _Life.STOPPED: MemberState.STOPPED,
            _Life.FENCED: MemberState.FENCED,
            _Life.FAILED: MemberState.FAILED,
        }[self._life]

    @property
    def member_id(self) -> str:
        return self._member_id

    @property
    def generation(self) -> int:
        return self._generation

    @property
    def protocol_name(self) -> str | None:
        return self._protocol_name

    @property
    def is_leader(self) -> bool:
        """True when the coordinator told us we lead the current generation."""
        return self._is_leader

    @property
    def leadership_guessed(self) -> bool:
        """True when a below-v9 broker named a leader id minted for our instance id (LeadershipGuessed)."""
        return self._leadership_guessed

    @property
    def group_members(self) -> tuple[JoinGroupMember, ...]:
        """Every member with its metadata, as given to the leader; empty for followers."""
        return self._group_members

    @property
    def group_topics(self) -> frozenset[str]:
        """Union of every member's subscribed topics, which the leader must watch; empty for followers."""
        return self._group_topics

    @property
    def assignment(self) -> frozenset[TopicPartition]:
        """Partitions this member owns now (empty while rebalancing or unjoined)."""
        return self._assignment if self._assignment is not None else frozenset()

    @property
    def rejoin_needed(self) -> bool:
        return self._rejoin_needed

    @property
    def coordinator_known(self) -> bool:
        return self._coordinator_known

    @property
    def fatal_error(self) -> Exception | None:
        return self._fatal_error

    @property
    def committed_offsets(self) -> Mapping[TopicPartition, int]:
        """Highest offset per partition that the coordinator acknowledged from this member."""
        return dict(self._committed)

    def __repr__(self) -> str:
        return (
            f"<MembershipMachine group={self._config.group_id!r} "
            f"instance={self._config.group_instance_id!r} state={self.state.name} "
            f"generation={self._generation} member_id={self._member_id!r} leader={self._is_leader}>"
        )

    def next_deadline(self) -> float | None:
        """The earliest future time at which a Tick may change something, or None."""
        candidates: list[float] = []
        if self._life is _Life.RUNNING:
            if self._phase in (MemberState.COMPLETING_REBALANCE, MemberState.STABLE):
                candidates.append(self._poll_deadline())
                if self._coordinator_known:
                    candidates.append(self._session_deadline())
                    if self._heartbeat_in_flight is None:
                        candidates.append(self._next_heartbeat_at)
            if self._join_retry_at is not None:
                candidates.append(self._join_retry_at)
        if self._life in (_Life.RUNNING, _Life.STOPPING) and self._lookup_retry_at is not None:
            candidates.append(self._lookup_retry_at)
        future = [t for t in candidates if t > self._now]
        return min(future) if future else None

    # ------------------------------------------------------------------ entry point

    def handle(self, event: ev.Event) -> list[act.Action]:
        """Apply one event and return the actions it causes, in the order they must be performed."""
        self._now = event.now
        self._dispatch(event)
        self._drive()
        out, self._out = self._out, []
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
                self._mark_coordinator_unknown("coordinator connection lost", disconnect=False)
            case ev.JoinGroupResponse():
                self._on_join_response(event)
            case ev.SyncGroupResponse():
                self._on_sync_response(event)
            case ev.HeartbeatResponse():
                self._on_heartbeat_response(event)
            case ev.OffsetCommitResponse():
                self._on_commit_response(event)
            case ev.LeaveGroupResponse():
                self._on_leave_done(event.token, event.error_code)
            case ev.RequestFailed():
                self._on_request_failed(event)
            case ev.AssignmentComputed():
                self._on_assignment_computed(event)
            case ev.AssignmentFailed():
                self._on_assignment_failed(event)
            case ev.CallbackFinished():
                self._on_callback_finished(event)
            case ev.PollCalled():
                self._on_poll()
            case ev.CommitRequested():
                self._on_commit_requested(event)
            case ev.Stop():
                self._on_stop(event)
            case ev.RequestRejoin():
                if self._life is _Life.RUNNING:
                    self._request_rejoin(event.reason)
            case ev.UpdateProtocols():
                self._protocols = event.protocols
                if self._life is _Life.RUNNING:
                    self._request_rejoin(event.reason)
            case _:
                raise TypeError(f"unknown membership event {event!r}")

    # ------------------------------------------------------------------ helpers

    def _emit(self, action: act.Action) -> None:
        self._out.append(action)

    def _token(self) -> RequestToken:
        token = RequestToken(self._next_request_id, self._generation, self._member_id)
        self._next_request_id += 1
        self._request_epochs[token.request_id] = self._coordinator_epoch
        return token

    def _callback_id(self) -> int:
        callback_id = self._next_callback_id
        self._next_callback_id += 1
        return callback_id

    def _backoff(self, attempts: int) -> float:
        """Exponential backoff in seconds: retry.backoff.ms doubling up to retry.backoff.max.ms."""
        ms = self._config.retry_backoff_ms * (1 << min(max(0, attempts - 1), 30))
        return min(ms, self._config.retry_backoff_max_ms) / 1000.0

    def _generation_unchanged(self, token: RequestToken) -> bool:
        """Kafka's rule: a response may reset state only if we still have the identity it was sent with."""
        return token.generation == self._generation and token.member_id == self._member_id

    def _generation_valid(self) -> bool:
        return self._generation != NO_GENERATION and self._member_id != NO_MEMBER_ID

    def _poll_deadline(self) -> float:
        return self._last_poll_at + self._config.max_poll_interval_ms / 1000.0

    def _session_deadline(self) -> float:
        return self._last_heartbeat_ok_at + self._config.session_timeout_ms / 1000.0

    def _reset_liveness_timers(self) -> None:
        """Java's Heartbeat.resetTimeouts: on entering COMPLETING_REBALANCE every liveness timer restarts."""
        self._last_heartbeat_ok_at = self._now
        self._last_poll_at = self._now
        self._next_heartbeat_at = self._now + self._config.heartbeat_interval_ms / 1000.0
        self._heartbeat_attempts = 0

    def _request_rejoin(self, reason: str) -> None:
        if not self._rejoin_needed:
            log.info("group %s: rejoin requested: %s", self._config.group_id, reason)
        self._rejoin_needed = True
        self._rejoin_reason = reason

    def _reset_generation(self, reason: str, *, reset_member_id: bool) -> None:
        """Forget the generation (and the member id when the coordinator no longer knows it), then rejoin."""
        log.info(
            "group %s: resetting generation%s: %s",
            self._config.group_id,
            " and member id" if reset_member_id else "",
            reason,
        )
        self._phase = MemberState.UNJOINED
        self._generation = NO_GENERATION
        self._protocol_name = None
        if reset_member_id:
            self._member_id = NO_MEMBER_ID
        self._awaiting_assignor = None
        self._clear_leadership()
        self._request_rejoin(reason)

    def _clear_leadership(self) -> None:
        self._is_leader = False
        self._leadership_guessed = False
        self._group_members = ()
        self._group_topics = frozenset()

    def _schedule_join_retry(self) -> None:
        self._join_attempts += 1
        self._join_retry_at = self._now + self._backoff(self._join_attempts)

    def _mark_coordinator_unknown(self, reason: str, *, disconnect: bool = True) -> None:
        if not self._coordinator_known:
            return
        log.info("group %s: coordinator unknown (%s); rediscovering", self._config.group_id, reason)
        self._coordinator_known = False
        self._lookup_attempts = 0
        self._lookup_retry_at = None
        if disconnect:
            self._emit(act.DisconnectCoordinator(reason=reason))

    def _coordinator_failed(self, token: RequestToken, reason: str) -> None:
        """Mark the coordinator unknown, unless the request went to one we already replaced."""
        epoch = self._request_epochs.get(token.request_id)
        if epoch is None or epoch == self._coordinator_epoch:
            self._mark_coordinator_unknown(reason)

    def _finish_request(self, token: RequestToken) -> None:
        self._request_epochs.pop(token.request_id, None)

    # ------------------------------------------------------------------ start, poll, stop

    def _on_start(self, event: ev.Start) -> None:
        if self._life is not _Life.NOT_STARTED:
            log.warning("group %s: Start ignored, the member already started", self._config.group_id)
            return
        if not event.protocols:
            self._fail(StaticConsumerError("Start needs at least one group protocol (assignor)"))
            return
        self._protocols = event.protocols
        self._life = _Life.RUNNING
        self._phase = MemberState.UNJOINED
        self._rejoin_needed = True
        self._rejoin_reason = ""
        self._last_poll_at = event.now

    def _on_poll(self) -> None:
        if self._fatal_error is not None:
            self._emit(act.Fatal(error=self._fatal_error))
            return
        self._last_poll_at = self._now
        if self._awaiting_poll:
            log.info("group %s: application polled again; rejoining", self._config.group_id)
            self._awaiting_poll = False

    def _on_stop(self, event: ev.Stop) -> None:
        if self._life is _Life.NOT_STARTED:
            self._life = _Life.STOPPED
            self._emit(act.Stopped(error=None))
        elif self._life in _TERMINAL:
            self._emit(act.Stopped(error=self._fatal_error))
        elif self._life is _Life.STOPPING:
            if not self._stop_leave_decided:
                self._stop_leave_group = self._stop_leave_group or event.leave_group
        else:
            self._life = _Life.STOPPING
            self._stop_leave_group = event.leave_group
            self._join_retry_at = None
            self._awaiting_poll = False

    def _drive_stop(self) -> None:
        """Release partitions (revoke callback, final commit), then LeaveGroup if allowed, then Stopped."""
        if self._callback_in_flight is not None or self._release is not None:
            return
        if self._assignment is not None and self._begin_release(ReleaseReason.STOP):
            return
        if not self._stop_leave_decided:
            if self._config.is_static and self._stop_leave_group and not self._coordinator_known:
                # An explicit leave is the point of the stop: find the coordinator first.
                self._ensure_coordinator()
                return
            self._stop_leave_decided = True
            self._stop_leave_request_id = self._maybe_leave_on_stop()
        if self._stop_leave_request_id in self._leaves_in_flight:
            return
        self._life = _Life.STOPPED
        self._emit(act.Stopped(error=None))

    def _maybe_leave_on_stop(self) -> int | None:
        reason = "the consumer is being closed"
        if self._config.is_static:
            if not self._stop_leave_group:
                log.info(
                    "group %s: static member %s stops without LeaveGroup; the coordinator keeps its place "
                    "until session.timeout.ms",
                    self._config.group_id,
                    self._config.group_instance_id,
                )
                return None
            # Name ourselves by the last member id the coordinator gave this instance: if someone has
            # replaced us since, the broker answers FENCED_INSTANCE_ID instead of removing them (an
            # empty member id would remove whoever holds the instance id now).
            member_id = self._member_id or self._last_joined_member_id
            if member_id == NO_MEMBER_ID:
                log.info("group %s: never joined, so there is nothing to leave", self._config.group_id)
                return None
            return self._send_leave(member_id, self._config.group_instance_id, reason)
        if self._coordinator_known and self._member_id != NO_MEMBER_ID:
            return self._send_leave(self._member_id, None, reason)
        return None

    def _send_leave(self, member_id: str, instance_id: str | None, reason: str) -> int:
        token = self._token()
        self._leaves_in_flight.add(token.request_id)
        self._emit(
            act.SendLeaveGroup(
                token=token,
                members=(
                    act.LeaveGroupIdentity(
                        member_id=member_id, group_instance_id=instance_id, reason=truncate_reason(reason)
                    ),
                ),
            )
        )
        return token.request_id

    def _on_leave_done(self, token: RequestToken, error_code: int) -> None:
        self._finish_request(token)
        if token.request_id not in self._leaves_in_flight:
            return
        self._leaves_in_flight.discard(token.request_id)
        if error_code != ErrorCode.NONE:
            # Best effort by design (Java logs and never resends).
            log.warning("group %s: LeaveGroup failed: %s", self._config.group_id, _code_name(error_code))

    # ------------------------------------------------------------------ the driving loop

    def _drive(self) -> None:
        if self._life in (_Life.RUNNING, _Life.STOPPING):
            self._check_timers()
        if self._life is _Life.STOPPING:
            self._drive_stop()
        elif self._life is _Life.RUNNING:
            self._drive_join()
            self._maybe_heartbeat()

    def _check_timers(self) -> None:
        if self._life is not _Life.RUNNING:
            return
        if self._phase not in (MemberState.COMPLETING_REBALANCE, MemberState.STABLE):
            return
        if self._coordinator_known and self._now >= self._session_deadline():
            # Java's heartbeat thread: no successful heartbeat for a whole session, so check the coordinator.
            self._mark_coordinator_unknown("session timed out without receiving a heartbeat response")
        if self._now >= self._poll_deadline():
            self._on_poll_timeout()

    def _on_poll_timeout(self) -> None:
        reason = "consumer poll timeout has expired"
        log.warning(
            "group %s: the application did not poll for max.poll.interval.ms (%d ms); %s",
            self._config.group_id,
            self._config.max_poll_interval_ms,
            "dropping the member id locally (static member: no LeaveGroup)"
            if self._config.is_static
            else "leaving the group",
        )
        if not self._config.is_static and self._coordinator_known and self._member_id != NO_MEMBER_ID:
            self._send_leave(self._member_id, None, reason)
        self._reset_generation(reason, reset_member_id=True)
        self._awaiting_poll = True
        if self._assignment is not None and self._release is None:
            self._begin_release(ReleaseReason.POLL_TIMEOUT)

    def _ensure_coordinator(self) -> None:
        if self._coordinator_known or self._lookup_in_flight is not None:
            return
        if self._lookup_retry_at is not None and self._now < self._lookup_retry_at:
            return
        token = self._token()
        self._lookup_in_flight = token
        self._emit(act.FindCoordinator(token=token))

    def _drive_join(self) -> None:
        if not self._coordinator_known and (
            self._rejoin_needed or self._phase in (MemberState.COMPLETING_REBALANCE, MemberState.STABLE)
        ):
            self._ensure_coordinator()
        if not self._rejoin_needed or self._awaiting_poll:
            return
        if self._join_in_flight is not None or self._sync_in_flight is not None:
            return
        if self._awaiting_assignor is not None:
            return
        if self._callback_in_flight is not None or self._release is not None:
            return
        if self._assignment is not None and self._begin_release(
            ReleaseReason.REBALANCE if self._generation_valid() else ReleaseReason.MEMBERSHIP_LOST
        ):
            return
        if not self._coordinator_known:
            return
        if self._join_retry_at is not None and self._now < self._join_retry_at:
            return
        self._send_join()

    def _begin_release(self, reason: ReleaseReason) -> bool:
        """Give up the assignment: revoke while the generation is valid, else report it lost.

        Returns True while a callback (and maybe a commit) must finish before moving on.
        """
        partitions = self._assignment if self._assignment is not None else frozenset()
        if self._generation_valid() and reason in (ReleaseReason.REBALANCE, ReleaseReason.STOP):
            if partitions:
                self._emit(act.StopFetching(reason=reason))
            callback_id = self._callback_id()
            self._release = _Release(callback_id=callback_id, lost=False)
            self._callback_in_flight = callback_id
            self._emit(act.PartitionsRevoked(callback_id=callback_id, partitions=partitions, reason=reason))
            return True
        if not partitions:
            self._assignment = None
            return False
        self._emit(act.StopFetching(reason=reason))
        callback_id = self._callback_id()
        self._release = _Release(callback_id=callback_id, lost=True)
        self._callback_in_flight = callback_id
        self._emit(act.PartitionsLost(callback_id=callback_id, partitions=partitions, reason=reason))
        return True

    def _on_callback_finished(self, event: ev.CallbackFinished) -> None:
        if event.callback_id != self._callback_in_flight:
            return
        self._callback_in_flight = None
        release = self._release
        if release is None or release.callback_id != event.callback_id:
            return
        self._assignment = None
        if release.lost or not event.offsets_to_commit:
            self._release = None
            return
        request_id = self._commit_on_release(event.offsets_to_commit)
        if request_id is None:
            self._release = None
        else:
            release.commit_request_id = request_id

    def _commit_on_release(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> int | None:
        """The eager-rebalance (or stop) commit after the revoke callback; skipped when it cannot succeed."""
        if self._life not in (_Life.RUNNING, _Life.STOPPING) or self._phase is not MemberState.STABLE:
            log.warning("group %s: not committing on release: no stable generation", self._config.group_id)
            return None
        if not self._generation_valid():
            log.warning("group %s: not committing on release: generation was reset", self._config.group_id)
            return None
        if not self._coordinator_known:
            log.warning("group %s: not committing on release: coordinator unknown", self._config.group_id)
            return None
        regressions = self._regressions(offsets)
        if regressions:
            log.warning("group %s: %s", self._config.group_id, OffsetRegressionError(regressions))
            offsets = {tp: om for tp, om in offsets.items() if tp not in regressions}
            if not offsets:
                return None
        return self._send_commit(None, offsets)

    # ------------------------------------------------------------------ coordinator discovery

    def _on_find_coordinator(self, event: ev.FindCoordinatorResponse) -> None:
        self._finish_request(event.token)
        if self._lookup_in_flight is None or event.token.request_id != self._lookup_in_flight.request_id:
            return
        self._lookup_in_flight = None
        if self._life not in (_Life.RUNNING, _Life.STOPPING):
            return
        if event.error_code == ErrorCode.NONE:
            self._coordinator_known = True
            self._coordinator_epoch += 1
            self._lookup_attempts = 0
            self._lookup_retry_at = None
            # Java resets the session timer on discovery: the new coordinator deserves a full session.
            self._last_heartbeat_ok_at = self._now
            log.info("group %s: coordinator is node %s", self._config.group_id, event.node_id)
            return
        error = _error_for(event.error_code, "FindCoordinator failed")
        if event.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED or not error.retriable:
            self._fail(error)
            return
        self._lookup_failed()

    def _lookup_failed(self) -> None:
        self._lookup_attempts += 1
        self._lookup_retry_at = self._now + self._backoff(self._lookup_attempts)

    # ------------------------------------------------------------------ JoinGroup

    def _send_join(self) -> None:
        token = self._token()
        self._join_in_flight = token
        self._phase = MemberState.PREPARING_REBALANCE
        self._rejoin_needed = False
        self._join_retry_at = None
        self._clear_leadership()
        self._emit(
            act.SendJoinGroup(
                token=token,
                member_id=self._member_id,
                group_instance_id=self._config.group_instance_id,
                session_timeout_ms=self._config.session_timeout_ms,
                rebalance_timeout_ms=self._config.max_poll_interval_ms,
                protocol_type=self._config.protocol_type,
                protocols=self._protocols,
                reason=truncate_reason(self._rejoin_reason),
                request_timeout_ms=self._config.join_request_timeout_ms,
            )
        )

    def _on_join_response(self, event: ev.JoinGroupResponse) -> None:
        self._finish_request(event.token)
        if self._join_in_flight is None or event.token.request_id != self._join_in_flight.request_id:
            return
        self._join_in_flight = None
        if self._life is not _Life.RUNNING:
            return
        code = event.error_code
        if code == ErrorCode.NONE:
            self._on_join_success(event)
        elif code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            self._request_rejoin("rebalance failed due to COORDINATOR_LOAD_IN_PROGRESS")
            self._schedule_join_retry()
        elif code in _COORDINATOR_ERRORS:
            self._coordinator_failed(event.token, f"JoinGroup answered {_code_name(code)}")
            self._request_rejoin(f"rebalance failed due to {_code_name(code)}")
            self._schedule_join_retry()
        elif code == ErrorCode.UNKNOWN_MEMBER_ID:
            reason = "rebalance failed due to UNKNOWN_MEMBER_ID"
            if self._generation_unchanged(event.token):
                self._reset_generation(reason, reset_member_id=True)
            self._request_rejoin(reason)
        elif code == ErrorCode.MEMBER_ID_REQUIRED:
            # KIP-394: the broker minted our member id; join again with it, at once, same protocols.
            self._member_id = event.member_id
            self._generation = NO_GENERATION
            self._protocol_name = None
            self._request_rejoin(f"need to re-join with the given member-id: {event.member_id}")
        elif code == ErrorCode.REBALANCE_IN_PROGRESS:
            self._request_rejoin("rebalance failed due to REBALANCE_IN_PROGRESS")
        elif code == ErrorCode.FENCED_INSTANCE_ID:
            # Java: fatal on JoinGroup whatever the generation; nothing else can hold our instance id.
            self._fence()
        elif code == ErrorCode.UNSUPPORTED_VERSION and self._config.is_static:
            self._fail(
                _error_for(
                    code,
                    "JoinGroup with a group.instance.id was refused: the broker is too old for static "
                    "membership (needs Kafka 2.3+)",
                )
            )
        elif code in _JOIN_FATAL_ERRORS:
            self._fail(_error_for(code, f"JoinGroup failed for group {self._config.group_id!r}"))
        else:
            self._fail(_error_for(code, "unexpected error in JoinGroup response"))

    def _on_join_success(self, event: ev.JoinGroupResponse) -> None:
        if event.protocol_type is not None and event.protocol_type != self._config.protocol_type:
            self._fail(
                InconsistentGroupProtocolError(
                    f"JoinGroup answered protocol type {event.protocol_type!r}, "
                    f"expected {self._config.protocol_type!r}"
                )
            )
            return
        self._generation = event.generation
        self._member_id = event.member_id
        self._last_joined_member_id = event.member_id
        self._protocol_name = event.protocol_name
        self._phase = MemberState.COMPLETING_REBALANCE
        self._join_attempts = 0
        self._reset_liveness_timers()
        log.info(
            "group %s: joined generation %d as %s (leader %s)",
            self._config.group_id,
            event.generation,
            event.member_id,
            event.leader_id,
        )
        if event.leader_id == event.member_id:
            self._on_leader_elected(event)
            return
        if self._looks_like_our_old_leader_id(event):
            self._leadership_guessed = True
            self._emit(
                act.LeadershipGuessed(
                    generation=event.generation, member_id=event.member_id, leader_id=event.leader_id
                )
            )
        self._send_sync(())

    def _looks_like_our_old_leader_id(self, event: ev.JoinGroupResponse) -> bool:
        """Below v9 a returning static leader is told its predecessor's id; recognise it (franz-go does)."""
        instance_id = self._config.group_instance_id
        if instance_id is None or event.skip_assignment or event.members:
            return False
        prefix = instance_id + "-"
        if not event.leader_id.startswith(prefix):
            return False
        # The suffix must be a whole minted UUID, so instance "a" does not claim the leader "a-b-<uuid>".
        return _MINTED_SUFFIX.fullmatch(event.leader_id[len(prefix) :]) is not None

    def _on_leader_elected(self, event: ev.JoinGroupResponse) -> None:
        topics: set[str] = set()
        decode = self._config.decode_subscription
        if decode is not None:
            for member in event.members:
                try:
                    topics.update(decode(member.metadata))
                except Exception as exc:
                    self._fail(
                        _wrap_decode_error(exc, f"subscription of member {member.member_id!r} is unreadable")
                    )
                    return
        self._is_leader = True
        self._group_members = event.members
        self._group_topics = frozenset(topics)
        self._emit(
            act.LeaderElected(
                generation=event.generation,
                member_id=event.member_id,
                protocol_name=event.protocol_name,
                members=event.members,
                group_topics=self._group_topics,
                skip_assignment=event.skip_assignment,
            )
        )
        if event.skip_assignment:
            # KIP-814: the group is Stable and keeps its assignment; the broker ignores ours anyway.
            self._send_sync(())
            return
        self._awaiting_assignor = event.generation
        self._emit(
            act.RunAssignor(
                generation=event.generation,
                protocol_name=event.protocol_name,
                members=event.members,
                group_topics=self._group_topics,
            )
        )

    def _on_assignment_computed(self, event: ev.AssignmentComputed) -> None:
        if (
            self._life is not _Life.RUNNING
            or self._awaiting_assignor is None
            or event.generation != self._awaiting_assignor
            or event.generation != self._generation
        ):
            return
        self._awaiting_assignor = None
        assignments = tuple(
            act.SyncAssignment(member_id=member_id, assignment=data)
            for member_id, data in sorted(event.assignments.items())
        )
        self._send_sync(assignments)

    def _on_assignment_failed(self, event: ev.AssignmentFailed) -> None:
        if self._life is not _Life.RUNNING or event.generation != self._awaiting_assignor:
            return
        self._awaiting_assignor = None
        self._fail(event.error)

    # ------------------------------------------------------------------ SyncGroup

    def _send_sync(self, assignments: tuple[act.SyncAssignment, ...]) -> None:
        token = self._token()
        self._sync_in_flight = token
        self._emit(
            act.SendSyncGroup(
                token=token,
                generation=self._generation,
                member_id=self._member_id,
                group_instance_id=self._config.group_instance_id,
                protocol_type=self._config.protocol_type,
                protocol_name=self._protocol_name,
                assignments=assignments,
            )
        )

    def _on_sync_response(self, event: ev.SyncGroupResponse) -> None:
        self._finish_request(event.token)
        if self._sync_in_flight is None or event.token.request_id != self._sync_in_flight.request_id:
            return
        self._sync_in_flight = None
        if self._life is not _Life.RUNNING:
            return
        code = event.error_code
        if code == ErrorCode.NONE:
            self._on_sync_success(event)
        elif code == ErrorCode.REBALANCE_IN_PROGRESS:
            self._request_rejoin("rebalance failed due to REBALANCE_IN_PROGRESS")
        elif code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
            reason = f"rebalance failed due to {_code_name(code)}"
            if self._generation_unchanged(event.token):
                # ILLEGAL_GENERATION keeps the member id: it may still be valid, and reusing it
                # spares the group waiting for the old id to time out.
                self._reset_generation(reason, reset_member_id=code == ErrorCode.UNKNOWN_MEMBER_ID)
            self._request_rejoin(reason)
        elif code in _COORDINATOR_ERRORS:
            self._coordinator_failed(event.token, f"SyncGroup answered {_code_name(code)}")
            self._request_rejoin(f"rebalance failed due to {_code_name(code)}")
            self._schedule_join_retry()
        elif code == ErrorCode.FENCED_INSTANCE_ID:
            self._fence()
        else:
            self._fail(_error_for(code, f"SyncGroup failed for group {self._config.group_id!r}"))

    def _on_sync_success(self, event: ev.SyncGroupResponse) -> None:
        if event.protocol_type is not None and event.protocol_type != self._config.protocol_type:
            self._fail(
                InconsistentGroupProtocolError(
                    f"SyncGroup answered protocol type {event.protocol_type!r}, "
                    f"expected {self._config.protocol_type!r}"
                )
            )
            return
        if (
            self._phase is not MemberState.COMPLETING_REBALANCE
            or self._generation == NO_GENERATION
            or not self._generation_unchanged(event.token)
        ):
            # Our generation was reset while the SyncGroup was out (heartbeat error, poll timeout):
            # this assignment belongs to a generation we are no longer in.
            self._request_rejoin("generation was reset before the SyncGroup response arrived")
            return
        if event.protocol_name is not None and event.protocol_name != self._protocol_name:
            self._fail(
                InconsistentGroupProtocolError(
                    f"SyncGroup answered protocol {event.protocol_name!r}, JoinGroup chose "
                    f"{self._protocol_name!r}"
                )
            )
            return
        try:
            decoded = self._config.decode_assignment(event.assignment)
            partitions = frozenset(TopicPartition(*tp) for tp in decoded)
        except Exception as exc:
            self._fail(_wrap_decode_error(exc, "the assignment from SyncGroup is unreadable"))
            return
        self._phase = MemberState.STABLE
        if not self._rejoin_needed:
            # Java clears the reason here; one asked for during the sync must survive to the next join.
            self._rejoin_reason = ""
        self._join_retry_at = None
        self._assignment = partitions
        log.info(
            "group %s: stable in generation %d with %d partitions",
            self._config.group_id,
            self._generation,
            len(partitions),
        )
        callback_id = self._callback_id()
        self._callback_in_flight = callback_id
        self._emit(
            act.PartitionsAssigned(
                callback_id=callback_id, partitions=partitions, generation=self._generation
            )
        )

    # ------------------------------------------------------------------ Heartbeat

    def _maybe_heartbeat(self) -> None:
        if (
            self._life is not _Life.RUNNING
            or self._phase not in (MemberState.COMPLETING_REBALANCE, MemberState.STABLE)
            or not self._coordinator_known
            or self._heartbeat_in_flight is not None
            or self._now < self._next_heartbeat_at
        ):
            return
        token = self._token()
        self._heartbeat_in_flight = token
        self._next_heartbeat_at = self._now + self._config.heartbeat_interval_ms / 1000.0
        self._emit(
            act.SendHeartbeat(
                token=token,
                generation=self._generation,
                member_id=self._member_id,
                group_instance_id=self._config.group_instance_id,
            )
        )

    def _heartbeat_succeeded(self) -> None:
        self._heartbeat_attempts = 0
        self._last_heartbeat_ok_at = self._now

    def _heartbeat_failed(self) -> None:
        self._heartbeat_attempts += 1
        self._next_heartbeat_at = self._now + self._backoff(self._heartbeat_attempts)

    def _on_heartbeat_response(self, event: ev.HeartbeatResponse) -> None:
        self._finish_request(event.token)
        in_flight = self._heartbeat_in_flight
        if in_flight is None or event.token.request_id != in_flight.request_id:
            return
        self._heartbeat_in_flight = None
        if self._life is not _Life.RUNNING:
            return
        code = event.error_code
        if code == ErrorCode.NONE:
            self._heartbeat_succeeded()
        elif code in _COORDINATOR_ERRORS:
            self._coordinator_failed(event.token, f"Heartbeat answered {_code_name(code)}")
            self._heartbeat_failed()
        elif code == ErrorCode.REBALANCE_IN_PROGRESS:
            # Keep heartbeating through the rebalance, so it counts as a success (Java does the same).
            self._heartbeat_succeeded()
            if self._phase is MemberState.STABLE:
                self._request_rejoin("group is already rebalancing")
        elif code in _MEMBERSHIP_ERRORS:
            if not self._generation_unchanged(event.token):
                log.info(
                    "group %s: ignoring %s for an older generation", self._config.group_id, _code_name(code)
                )
                self._heartbeat_succeeded()
            elif code == ErrorCode.FENCED_INSTANCE_ID:
                self._fence()
            else:
                self._reset_generation(
                    f"encountered {_code_name(code)} from HEARTBEAT response",
                    reset_member_id=code == ErrorCode.UNKNOWN_MEMBER_ID,
                )
        elif code == ErrorCode.GROUP_AUTHORIZATION_FAILED:
            self._fail(_error_for(code, f"not authorized for group {self._config.group_id!r}"))
        else:
            log.warning("group %s: heartbeat failed with %s", self._config.group_id, _code_name(code))
            self._heartbeat_failed()

    # ------------------------------------------------------------------ OffsetCommit

    def _regressions(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata]
    ) -> dict[TopicPartition, tuple[int, int]]:
        """Partitions whose requested offset is below one already committed or in flight."""
        floors: dict[TopicPartition, int] = dict(self._committed)
        for pending in self._commits_in_flight.values():
            for tp, om in pending.offsets.items():
                floors[tp] = max(floors.get(tp, om.offset), om.offset)
        return {
            tp: (om.offset, floors[tp])
            for tp, om in offsets.items()
            if tp in floors and om.offset < floors[tp]
        }

    def _on_commit_requested(self, event: ev.CommitRequested) -> None:
        def done(error: Exception | None) -> None:
            self._emit(act.CommitCompleted(commit_id=event.commit_id, offsets=event.offsets, error=error))

        if self._fatal_error is not None:
            done(self._fatal_error)
        elif self._life not in (_Life.RUNNING, _Life.STOPPING):
            done(CommitFailedError("the consumer is not running, so it is in no group generation"))
        elif not event.offsets:
            done(None)
        elif self._phase is not MemberState.STABLE or not self._generation_valid():
            if self._phase in (MemberState.PREPARING_REBALANCE, MemberState.COMPLETING_REBALANCE):
                done(
                    RebalanceInProgressError(
                        "offset commit cannot be completed while the group is rebalancing; "
                        "poll to complete the rebalance, then commit again"
                    )
                )
            else:
                done(
                    CommitFailedError(
                        "the member is not part of an active generation (it is rejoining); "
                        "its partitions may already belong to another member"
                    )
                )
        elif regressions := self._regressions(event.offsets):
            done(OffsetRegressionError(regressions))
        elif not self._coordinator_known:
            self._ensure_coordinator()
            done(CoordinatorNotAvailableError("group coordinator unknown; rediscovering, retry the commit"))
        else:
            self._send_commit(event.commit_id, event.offsets)

    def _send_commit(self, commit_id: int | None, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> int:
        token = self._token()
        frozen = dict(offsets)
        self._commits_in_flight[token.request_id] = _PendingCommit(commit_id, frozen, token)
        self._emit(
            act.SendOffsetCommit(
                token=token,
                commit_id=commit_id,
                generation=self._generation,
                member_id=self._member_id,
                group_instance_id=self._config.group_instance_id,
                offsets=frozen,
            )
        )
        return token.request_id

    def _on_commit_response(self, event: ev.OffsetCommitResponse) -> None:
        self._finish_request(event.token)
        pending = self._commits_in_flight.pop(event.token.request_id, None)
        if pending is None:
            return
        first_error = ErrorCode.NONE.value
        for tp in sorted(pending.offsets):
            code = event.partition_errors.get(tp, ErrorCode.NONE)
            if code == ErrorCode.NONE:
                offset = pending.offsets[tp].offset
                self._committed[tp] = max(self._committed.get(tp, offset), offset)
            elif first_error == ErrorCode.NONE:
                first_error = code
        error = None if first_error == ErrorCode.NONE else self._commit_error(first_error, event.token)
        self._complete_commit(pending, error)

    def _commit_error(self, code: int, token: RequestToken) -> Exception:
        """Map an OffsetCommit error to what the caller gets, acting on the group as Java does."""
        unchanged = self._generation_unchanged(token)
        rebalancing = self._phase is MemberState.PREPARING_REBALANCE
        if code in (
            ErrorCode.COORDINATOR_NOT_AVAILABLE,
            ErrorCode.NOT_COORDINATOR,
            ErrorCode.REQUEST_TIMED_OUT,
        ):
            self._coordinator_failed(token, f"OffsetCommit answered {_code_name(code)}")
            return _error_for(code, "offset commit failed; retry")
        if code == ErrorCode.REBALANCE_IN_PROGRESS:
            if self._life is _Life.RUNNING:
                self._request_rejoin("offset commit failed since group is already rebalancing")
            return RebalanceInProgressError(
                "offset commit cannot be completed since the group is rebalancing; poll to complete the "
                "rebalance, then commit again"
            )
        if code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
            if not unchanged:
                # Deviation from Java, on purpose: a stale answer never resets a newer generation.
                if rebalancing:
                    return RebalanceInProgressError(
                        "offset commit was sent in an older generation and the member is rejoining"
                    )
                return CommitFailedError(
                    f"offset commit was sent in generation {token.generation} which the group has left "
                    f"({_code_name(code)})"
                )
            if self._life is _Life.RUNNING:
                self._reset_generation(
                    f"encountered {_code_name(code)} from OFFSET_COMMIT response",
                    reset_member_id=code == ErrorCode.UNKNOWN_MEMBER_ID,
                )
            return CommitFailedError(
                f"the coordinator rejected the commit with {_code_name(code)}: this member is no longer in "
                f"generation {token.generation}; its partitions may have moved"
            )
        if code == ErrorCode.FENCED_INSTANCE_ID:
            if unchanged:
                return self._fence()
            if rebalancing:
                return RebalanceInProgressError(
                    "offset commit from an older generation was fenced; the member has rejoined since"
                )
            return CommitFailedError(
                f"offset commit from generation {token.generation} was fenced; the member has rejoined since"
            )
        return _error_for(code, "offset commit failed")

    def _complete_commit(self, pending: _PendingCommit, error: Exception | None) -> None:
        self._emit(act.CommitCompleted(commit_id=pending.commit_id, offsets=pending.offsets, error=error))
        release = self._release
        if release is not None and release.commit_request_id == pending.token.request_id:
            self._release = None

    # ------------------------------------------------------------------ request failures

    def _on_request_failed(self, event: ev.RequestFailed) -> None:
        token = event.token
        rid = token.request_id
        reason = f"request {rid} {event.kind.value}"
        if self._lookup_in_flight is not None and rid == self._lookup_in_flight.request_id:
            self._finish_request(token)
            self._lookup_in_flight = None
            self._lookup_failed()
        elif self._join_in_flight is not None and rid == self._join_in_flight.request_id:
            # testRetainMemberIdAfterJoinGroupDisconnect: keep the member id and retry after backoff.
            self._coordinator_failed(token, reason)
            self._finish_request(token)
            self._join_in_flight = None
            if self._life is _Life.RUNNING:
                self._request_rejoin(f"JoinGroup {event.kind.value}")
                self._schedule_join_retry()
        elif self._sync_in_flight is not None and rid == self._sync_in_flight.request_id:
            # testRetainMemberIdAfterSyncGroupDisconnect: restart from JoinGroup with the same member id.
            self._coordinator_failed(token, reason)
            self._finish_request(token)
            self._sync_in_flight = None
            if self._life is _Life.RUNNING:
                self._request_rejoin(f"SyncGroup {event.kind.value}")
                self._schedule_join_retry()
        elif self._heartbeat_in_flight is not None and rid == self._heartbeat_in_flight.request_id:
            self._coordinator_failed(token, reason)
            self._finish_request(token)
            self._heartbeat_in_flight = None
            self._heartbeat_failed()
        elif rid in self._commits_in_flight:
            self._coordinator_failed(token, reason)
            self._finish_request(token)
            pending = self._commits_in_flight.pop(rid)
            error: Exception = (
                RequestTimedOutError("offset commit timed out; retry")
                if event.kind is FailureKind.TIMED_OUT
                else NetworkExceptionError("connection to the coordinator lost during offset commit; retry")
            )
            self._complete_commit(pending, error)
        elif rid in self._leaves_in_flight:
            self._on_leave_done(token, ErrorCode.NETWORK_EXCEPTION)
        else:
            self._finish_request(token)

    # ------------------------------------------------------------------ fatal paths

    def _fence(self) -> FencedInstanceIdError:
        error = FencedInstanceIdError(
            group_id=self._config.group_id, group_instance_id=self._config.group_instance_id
        )
        self._fail(error, fenced=True)
        return error

    def _fail(self, error: Exception, *, fenced: bool = False) -> None:
        """End the member for good: stop fetching, report partitions lost, fail pending commits."""
        if self._life in _TERMINAL:
            return
        was_stopping = self._life is _Life.STOPPING
        self._life = _Life.FENCED if fenced else _Life.FAILED
        self._fatal_error = error
        log.error("group %s: membership ended: %s", self._config.group_id, error)
        reason = ReleaseReason.FENCED if fenced else ReleaseReason.FATAL
        self._emit(act.StopFetching(reason=reason))
        if self._assignment and self._release is None:
            self._emit(
                act.PartitionsLost(
                    callback_id=self._callback_id(), partitions=self._assignment, reason=reason
                )
            )
        self._assignment = None
        self._release = None
        self._callback_in_flight = None
        for pending in list(self._commits_in_flight.values()):
            self._emit(act.CommitCompleted(commit_id=pending.commit_id, offsets=pending.offsets, error=error))
        self._commits_in_flight.clear()
        self._join_in_flight = None
        self._sync_in_flight = None
        self._heartbeat_in_flight = None
        self._lookup_in_flight = None
        self._awaiting_assignor = None
        self._join_retry_at = None
        self._lookup_retry_at = None
        self._clear_leadership()
        self._emit(act.Fatal(error=error))
        if was_stopping:
            self._emit(act.Stopped(error=error))


def _code_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error code {code}"


def _error_for(code: int, message: str) -> BrokerError:
    cls = error_class_for(code) or UnknownServerError
    if cls.code != code:
        message = f"{message} (unrecognised broker error code {code})"
    return cls(message)


def _wrap_decode_error(exc: Exception, message: str) -> DecodeError:
    error = DecodeError(f"{message}: {exc}")
    error.__cause__ = exc
    return error

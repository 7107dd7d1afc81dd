"""The classic group protocol (JoinGroup / SyncGroup / Heartbeat) as a sans-IO state machine.

It follows the Java client's AbstractCoordinator/ConsumerCoordinator with the static-membership rules of
KIP-345/394/814. The error rules are data (rules.py); what a member owns and gives up is reconciliation
(reconcile.py); commits (commits.py), the coordinator (coordinator.py) and requests in flight (inflight.py)
each have their own module. No sockets, clocks, sleeps or asyncio here: the runtime feeds events (each
with ``now``), performs the returned actions, and sends a Tick at ``next_deadline()``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping

from staticconsumer.errors import (
    CommitFailedError,
    DecodeError,
    EncodeError,
    ErrorCode,
    InconsistentGroupProtocolError,
    NetworkExceptionError,
    OffsetRegressionError,
    RebalanceInProgressError,
    RequestTimedOutError,
    StaticConsumerError,
    StaticMembershipUnsupportedError,
    UnsupportedVersionError,
    broker_error,
)
from staticconsumer.protocol._base import truncate_reason

from . import actions as act
from . import events as ev
from . import rules
from .commits import verdict_error
from .config import MembershipConfig
from .core import Life as _Life
from .core import MachineCore
from .inflight import RequestKind
from .observe import HeartbeatFailed, Joined, JoinStarted, Leaving
from .reconcile import RebalanceProtocol, diff, release_before_join
from .rules import Step, code_name
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

log = logging.getLogger("staticconsumer.membership")

# Kafka mints member ids as "<instance id or client id>-<uuid>": the new coordinator uses Kafka's Uuid
# (22 chars of URL-safe base64), the old Scala one java.util.UUID (36 chars, hex with dashes).
_MINTED_SUFFIX = re.compile(
    r"[A-Za-z0-9_-]{22}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)


_TERMINAL = frozenset({_Life.STOPPED, _Life.FENCED, _Life.FAILED})
_LIFE_STATE = {
    _Life.NOT_STARTED: MemberState.NOT_STARTED,
    _Life.STOPPING: MemberState.STOPPING,
    _Life.STOPPED: MemberState.STOPPED,
    _Life.FENCED: MemberState.FENCED,
    _Life.FAILED: MemberState.FAILED,
}
_JOINED = (MemberState.COMPLETING_REBALANCE, MemberState.STABLE)


class ClassicMachine(MachineCore):
    """One group member's classic-protocol membership, as a pure state machine.

    Drive it with ``handle(event)``, which returns the actions to perform in order, and wake it with a
    Tick at ``next_deadline()``. After each ``handle`` the protocol-neutral ``milestones`` of that step are
    readable (observers use them). It never raises for broker behaviour: broker errors become actions
    (Fatal, CommitCompleted with an error, retries). Construction validates the config.
    """

    def __init__(
        self, config: MembershipConfig, rebalance_protocol: RebalanceProtocol = RebalanceProtocol.EAGER
    ) -> None:
        super().__init__(config)
        self._rebalance_protocol = rebalance_protocol
        self._phase = MemberState.UNJOINED
        self._protocols: tuple[GroupProtocol, ...] = ()

        # identity in the group
        self._generation = NO_GENERATION
        self._protocol_name: str | None = None
        self._last_joined_member_id = NO_MEMBER_ID

        self._pending_assignment: tuple[frozenset[TopicPartition], int] | None = None
        """Cooperative: the assignment (and its generation) to hand out once the revoke it needs is done."""

        # join / sync
        self._rejoin_needed = True
        self._rejoin_reason = ""
        self._awaiting_assignor: int | None = None
        self._join_attempts = 0
        self._join_retry_at: float | None = None
        self._awaiting_poll = False
        self._first_join_prepared = False
        """The eager revoke of the (empty) assignment before the first join has run (aiokafka's)."""

        # heartbeat and liveness timers
        self._heartbeat_attempts = 0
        self._next_heartbeat_at = 0.0
        self._last_heartbeat_ok_at = 0.0

        # leadership
        self._is_leader = False
        self._leadership_guessed = False
        self._group_members: tuple[JoinGroupMember, ...] = ()
        self._group_topics: frozenset[str] = frozenset()

        # stopping
        self._stop_leave_group = False
        self._stop_leave_decided = False
        self._stop_leave_request_id: int | None = None

    # ------------------------------------------------------------------ read-only view

    @property
    def rebalance_protocol(self) -> RebalanceProtocol:
        return self._rebalance_protocol

    @property
    def state(self) -> MemberState:
        """Lifecycle state when not running, else the group phase (Java's MemberState)."""
        return self._phase if self._life is _Life.RUNNING else _LIFE_STATE[self._life]

    @property
    def generation(self) -> int:
        return self._generation

    @property
    def group_protocol(self) -> str:
        """Its group.protocol, as ConsumerGroupMachine's: the runtime asks this, not the type."""
        return "classic"

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
        """Partitions this member owns now. Eager: empty while rebalancing or unjoined; cooperative: a
        member keeps owning (and fetching) what it holds while the group rebalances."""
        return self._ownership.owned

    @property
    def rejoin_needed(self) -> bool:
        return self._rejoin_needed

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__} group={self._config.group_id!r} "
            f"instance={self._config.group_instance_id!r} state={self.state.name} "
            f"generation={self._generation} member_id={self._member_id!r} leader={self._is_leader}>"
        )

    def next_deadline(self) -> float | None:
        """The earliest future time at which a Tick may change something, or None."""
        candidates: list[float] = []
        if self._life is _Life.RUNNING:
            if self._phase in _JOINED:
                candidates.append(self._poll_deadline())
                if self._coordinator.known:
                    candidates.append(self._session_deadline())
                    if not self._requests.has(RequestKind.HEARTBEAT):
                        candidates.append(self._next_heartbeat_at)
            if self._join_retry_at is not None:
                candidates.append(self._join_retry_at)
        return self._earliest(candidates)

    # ------------------------------------------------------------------ entry point

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
            case ev.Unrecoverable():
                self._fail(event.error)
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

    def _generation_now(self) -> int:
        return self._generation

    def _coordinator_found(self) -> None:
        # Java resets the session timer on discovery: the new coordinator deserves a full session.
        self._last_heartbeat_ok_at = self._now

    def _generation_unchanged(self, token: RequestToken) -> bool:
        """Kafka's rule: a response may reset state only if we still have the identity it was sent with."""
        return token.generation == self._generation and token.member_id == self._member_id

    def _generation_valid(self) -> bool:
        return self._generation != NO_GENERATION and self._member_id != NO_MEMBER_ID

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
        self._join_retry_at = self._now + self._backoff.seconds(self._join_attempts)

    def _coordinator_lost(self, reason: str, *, disconnect: bool = True) -> None:
        if self._coordinator.lose():
            log.info("group %s: coordinator unknown (%s); rediscovering", self._config.group_id, reason)
            if disconnect:
                self._emit(act.DisconnectCoordinator(reason=reason))

    def _react(
        self,
        table: rules.ApiRules,
        code: int,
        token: RequestToken,
        epoch: int,
        minted_member_id: str = NO_MEMBER_ID,
        *,
        detail: str = "",
    ) -> None:
        """Carry out the table's reaction to ``code`` for a JoinGroup, SyncGroup or Heartbeat answer
        (``detail``: what the runtime learnt about a refusal, for a fatal error's message)."""
        reaction = table.reaction(code)
        unchanged = self._generation_unchanged(token)
        reason = table.reason_for(code, reaction)
        steps = reaction.steps_for(unchanged)
        if not unchanged and reaction.stale is not None and table is rules.HEARTBEAT:
            log.info("group %s: ignoring %s for an older generation", self._config.group_id, code_name(code))
        for step in steps:
            match step:
                case Step.HEARTBEAT_OK:
                    self._heartbeat_attempts = 0
                    self._last_heartbeat_ok_at = self._now
                case Step.HEARTBEAT_BACKOFF:
                    self._heartbeat_failed()
                case Step.COORDINATOR_LOST:
                    self._coordinator_failed(epoch, f"{table.api} answered {code_name(code)}")
                case Step.RESET_MEMBER_ID:
                    self._reset_generation(reason, reset_member_id=True)
                case Step.RESET_GENERATION:
                    self._reset_generation(reason, reset_member_id=False)
                case Step.REJOIN:
                    self._request_rejoin(reason)
                case Step.REJOIN_AFTER_BACKOFF:
                    self._request_rejoin(reason)
                    self._schedule_join_retry()
                case Step.REJOIN_IF_STABLE:
                    if self._phase is MemberState.STABLE:
                        self._request_rejoin(reason)
                case Step.FENCE:
                    self._fence()
                case Step.FAIL:
                    self._fail(self._fatal_broker_error(table, code, detail))
                case Step.WARN:
                    log.warning(
                        "group %s: %s failed with %s",
                        self._config.group_id,
                        table.api.lower(),
                        code_name(code),
                    )
                case Step.ADOPT_MEMBER_ID:
                    # KIP-394: the broker minted our member id; join again with it, at once, same protocols.
                    self._member_id = minted_member_id
                    self._generation = NO_GENERATION
                    self._protocol_name = None
                    self._request_rejoin(f"need to re-join with the given member-id: {minted_member_id}")

    def _fatal_broker_error(self, table: rules.ApiRules, code: int, detail: str = "") -> Exception:
        group = self._config.group_id
        if table is rules.HEARTBEAT:
            return broker_error(code, f"not authorized for group {group!r}")
        if table is rules.JOIN_GROUP:
            if code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL:
                # The first thing a pod moved from another client meets when the lists differ: say
                # which lists, and which setting makes them meet.
                offered = ", ".join(p.name for p in self._protocols)
                group_side = detail or "the group's members offer none of them"
                return broker_error(
                    code,
                    f"JoinGroup refused for group {group!r}: no protocol in common with the group. "
                    f"This member offers {offered}; {group_side}. Add the group's protocol to this "
                    f"member's assignors= (KAFKA_PARTITION_ASSIGNMENT_STRATEGY), e.g. the default "
                    f"range, cooperative-sticky, roundrobin (docs/migrating.md)",
                )
            if code == ErrorCode.UNSUPPORTED_VERSION and self._config.is_static:
                return broker_error(
                    code,
                    "JoinGroup with a group.instance.id was refused: the broker is too old for static "
                    "membership (needs Kafka 2.3+)",
                )
            if code not in table.reactions:
                return broker_error(code, "unexpected error in JoinGroup response")
        return broker_error(code, f"{table.api} failed for group {group!r}")

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
        if self._ownership.busy:
            return
        if self._ownership.holding and self._release_on_stop():
            return
        if not self._stop_leave_decided:
            if self._config.is_static and self._stop_leave_group and not self._coordinator.known:
                # An explicit leave is the point of the stop: find the coordinator first.
                self._ensure_coordinator()
                return
            self._stop_leave_decided = True
            self._stop_leave_request_id = self._maybe_leave_on_stop()
        if self._stop_leave_request_id is not None and self._requests.contains(self._stop_leave_request_id):
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
        if self._coordinator.known and self._member_id != NO_MEMBER_ID:
            return self._send_leave(self._member_id, None, reason)
        return None

    def _send_leave(self, member_id: str, instance_id: str | None, reason: str) -> int:
        token = self._send(RequestKind.LEAVE)
        truncated = truncate_reason(reason) or ""
        self._note(Leaving(member_id=member_id, group_instance_id=instance_id, reason=truncated))
        self._emit(
            act.SendLeaveGroup(
                token=token,
                members=(
                    act.LeaveGroupIdentity(
                        member_id=member_id, group_instance_id=instance_id, reason=truncated
                    ),
                ),
            )
        )
        return token.request_id

    def _on_leave_done(self, token: RequestToken, error_code: int) -> None:
        if self._requests.take(token) is None:
            return
        if error_code != ErrorCode.NONE:
            # Best effort by design (Java logs and never resends).
            log.warning("group %s: LeaveGroup failed: %s", self._config.group_id, code_name(error_code))

    # ------------------------------------------------------------------ the driving loop

    def _drive(self) -> None:
        if self._life is _Life.RUNNING:
            self._check_timers()
        if self._life is _Life.STOPPING:
            self._pending_assignment = None  # never started: nothing to hand out, nothing to commit
            self._drive_stop()
        elif self._life is _Life.RUNNING:
            self._maybe_apply_pending_assignment()
            self._drive_join()
            self._maybe_heartbeat()

    def _check_timers(self) -> None:
        if self._phase not in _JOINED:
            return
        if self._coordinator.known and self._now >= self._session_deadline():
            # Java's heartbeat thread: no successful heartbeat for a whole session, so check the coordinator.
            self._coordinator_lost("session timed out without receiving a heartbeat response")
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
        if not self._config.is_static and self._coordinator.known and self._member_id != NO_MEMBER_ID:
            self._send_leave(self._member_id, None, reason)
        self._reset_generation(reason, reset_member_id=True)
        self._awaiting_poll = True
        self._pending_assignment = None
        if self._ownership.holding and self._ownership.release is None:
            self._lose_everything(ReleaseReason.POLL_TIMEOUT)

    def _drive_join(self) -> None:
        if not self._coordinator.known and (self._rejoin_needed or self._phase in _JOINED):
            self._ensure_coordinator()
        if not self._rejoin_needed or self._awaiting_poll:
            return
        if self._requests.has(RequestKind.JOIN) or self._requests.has(RequestKind.SYNC):
            return
        if self._awaiting_assignor is not None or self._ownership.busy:
            return
        if self._pending_assignment is not None:
            return
        if self._release_before_join():
            return
        if not self._coordinator.known:
            return
        if self._join_retry_at is not None and self._now < self._join_retry_at:
            return
        self._send_join()

    def _release_before_join(self) -> bool:
        """Give up what must go before a JoinGroup (Java's onJoinPrepare). Returns True while a callback
        (and maybe a commit) must finish first.

        A member whose generation was reset reports everything it holds lost, whatever the protocol:
        another member may own it already. Otherwise eager revokes everything, and cooperative only the
        partitions of topics it no longer subscribes to: it keeps owning and fetching the rest while it
        rejoins, and tells the group so in its subscription.
        """
        ownership = self._ownership
        if not ownership.holding:
            return self._coordinator.known and self._prepare_first_join()
        if not self._generation_valid():
            return self._lose_everything(ReleaseReason.MEMBERSHIP_LOST)
        if self._rebalance_protocol is RebalanceProtocol.EAGER:
            self._emit_all(ownership.revoke(ownership.owned, ReleaseReason.REBALANCE, everything=True))
            return True
        if self._config.decode_subscription is None:
            return False  # the topics are unknown to the machine: nothing can be told unsubscribed
        unsubscribed = release_before_join(self._rebalance_protocol, ownership.owned, self._own_topics())
        if not unsubscribed:
            return False
        log.info(
            "group %s: revoking %d partitions of topics no longer subscribed before rejoining",
            self._config.group_id,
            len(unsubscribed),
        )
        self._emit_all(ownership.revoke(unsubscribed, ReleaseReason.REBALANCE, everything=False))
        return True

    def _prepare_first_join(self) -> bool:
        """Eager: the revoke callback runs with the empty assignment before the first join, as aiokafka's
        ``_on_join_prepare`` does (so a listener ported from aiokafka sees the same calls); True while it
        runs. Java's coordinator skips it (no generation yet); cooperative only ever revokes something."""
        if self._first_join_prepared or self._rebalance_protocol is not RebalanceProtocol.EAGER:
            return False
        self._first_join_prepared = True
        self._emit_all(self._ownership.revoke(frozenset(), ReleaseReason.REBALANCE, everything=True))
        return True

    def _release_on_stop(self) -> bool:
        """Give up everything before leaving (Java's onLeavePrepare): revoked (commits still work) in a
        stable generation, else lost. Returns True while a callback (and maybe a commit) must finish."""
        ownership = self._ownership
        if not self._generation_valid() or self._phase is not MemberState.STABLE:
            # A cooperative member still owns its partitions while the group rebalances; its generation
            # is in flux, so nothing can be committed for them.
            return self._lose_everything(ReleaseReason.STOP)
        if not ownership.owned and self._rebalance_protocol is RebalanceProtocol.COOPERATIVE:
            ownership.drop()  # a cooperative listener only hears of what changes
            return False
        self._emit_all(ownership.revoke(ownership.owned, ReleaseReason.STOP, everything=True))
        return True

    def _lose_everything(self, reason: ReleaseReason) -> bool:
        """Report every held partition lost (never committed); True while its callback runs."""
        ownership = self._ownership
        if not ownership.owned:
            ownership.drop()
            return False
        self._emit_all(ownership.lose(ownership.owned, reason, everything=True))
        return True

    def _own_topics(self) -> frozenset[str]:
        """The topics this member subscribes to now (its first protocol's metadata says them all)."""
        return frozenset(t for p in self._protocols[:1] for t in self._subscribed_topics(p))

    def _subscribed_topics(self, protocol: GroupProtocol) -> frozenset[str]:
        """The topics our own join metadata subscribes to (cooperative keeps the rest while rejoining)."""
        decode = self._config.decode_subscription
        return frozenset(decode(protocol.metadata)) if decode is not None else frozenset()

    def _commit_on_release(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> int | None:
        """The rebalance (or stop) commit after the revoke callback; skipped when it cannot succeed."""
        if self._life not in (_Life.RUNNING, _Life.STOPPING) or self._phase is not MemberState.STABLE:
            log.warning("group %s: not committing on release: no stable generation", self._config.group_id)
            return None
        if not self._generation_valid():
            log.warning("group %s: not committing on release: generation was reset", self._config.group_id)
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

    # ------------------------------------------------------------------ coordinator discovery

    # ------------------------------------------------------------------ JoinGroup

    def _send_join(self) -> None:
        token = self._send(RequestKind.JOIN)
        self._phase = MemberState.PREPARING_REBALANCE
        self._rejoin_needed = False
        self._join_retry_at = None
        self._clear_leadership()
        reason = truncate_reason(self._rejoin_reason) or ""
        self._note(
            JoinStarted(
                member_id=self._member_id,
                reason=reason,
                rebalance_protocol=self._rebalance_protocol.value,
            )
        )
        self._emit(
            act.SendJoinGroup(
                token=token,
                member_id=self._member_id,
                group_instance_id=self._config.group_instance_id,
                session_timeout_ms=self._config.session_timeout_ms,
                rebalance_timeout_ms=self._config.max_poll_interval_ms,
                protocol_type=self._config.protocol_type,
                protocols=self._protocols,
                reason=reason,
                request_timeout_ms=self._config.join_request_timeout_ms,
            )
        )

    def _on_join_response(self, event: ev.JoinGroupResponse) -> None:
        request = self._requests.take(event.token)
        if request is None or request.kind is not RequestKind.JOIN or self._life is not _Life.RUNNING:
            return
        code = event.error_code
        if code == ErrorCode.NONE:
            self._on_join_success(event)
        else:
            self._react(
                rules.JOIN_GROUP,
                code,
                event.token,
                request.coordinator_epoch,
                event.member_id,
                detail=event.refusal_detail,
            )

    def _on_join_success(self, event: ev.JoinGroupResponse) -> None:
        if event.protocol_type is not None and event.protocol_type != self._config.protocol_type:
            self._fail(
                InconsistentGroupProtocolError(
                    f"JoinGroup answered protocol type {event.protocol_type!r}, "
                    f"expected {self._config.protocol_type!r}"
                )
            )
            return
        offered = [p.name for p in self._protocols]
        if event.protocol_name is not None and event.protocol_name not in offered:
            self._fail(
                InconsistentGroupProtocolError(
                    f"the coordinator chose protocol {event.protocol_name!r} for group "
                    f"{self._config.group_id!r}, which this member never offered (offered: {offered})"
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
        leading = event.leader_id == event.member_id
        guessed = not leading and self._looks_like_our_old_leader_id(event)
        self._note(
            Joined(
                generation=event.generation,
                member_id=event.member_id,
                leader_id=event.leader_id,
                leader=leading,
                leadership_guessed=guessed,
                assignment_skipped=leading and event.skip_assignment,
                protocol_name=event.protocol_name,
                rebalance_protocol=self._rebalance_protocol.value,
            )
        )
        if leading:
            self._on_leader_elected(event)
            return
        if guessed:
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
                        _decode_error(exc, f"subscription of member {member.member_id!r} is unreadable")
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
        """The assignor raised: send no plan, keep the group working, and try again from JoinGroup.

        Sending an empty plan would leave every partition unowned for a whole generation; not answering
        makes the coordinator time the generation out. Rejoining with backoff gives the assignor a fresh
        chance (metadata may have changed) without a busy loop.
        """
        if self._life is not _Life.RUNNING or event.generation != self._awaiting_assignor:
            return
        self._awaiting_assignor = None
        log.error("group %s: %s; rejoining after backoff", self._config.group_id, event.error)
        self._request_rejoin(f"the leader's assignment failed: {event.error}")
        self._schedule_join_retry()

    # ------------------------------------------------------------------ SyncGroup

    def _send_sync(self, assignments: tuple[act.SyncAssignment, ...]) -> None:
        self._emit(
            act.SendSyncGroup(
                token=self._send(RequestKind.SYNC),
                generation=self._generation,
                member_id=self._member_id,
                group_instance_id=self._config.group_instance_id,
                protocol_type=self._config.protocol_type,
                protocol_name=self._protocol_name,
                assignments=assignments,
            )
        )

    def _on_sync_response(self, event: ev.SyncGroupResponse) -> None:
        request = self._requests.take(event.token)
        if request is None or request.kind is not RequestKind.SYNC or self._life is not _Life.RUNNING:
            return
        if event.error_code == ErrorCode.NONE:
            self._on_sync_success(event)
        else:
            self._react(rules.SYNC_GROUP, event.error_code, event.token, request.coordinator_epoch)

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
            self._fail(_decode_error(exc, "the assignment from SyncGroup is unreadable"))
            return
        self._phase = MemberState.STABLE
        if not self._rejoin_needed:
            # Java clears the reason here; one asked for during the sync must survive to the next join.
            self._rejoin_reason = ""
        self._join_retry_at = None
        log.info(
            "group %s: stable in generation %d with %d partitions",
            self._config.group_id,
            self._generation,
            len(partitions),
        )
        if self._rebalance_protocol is RebalanceProtocol.COOPERATIVE:
            self._reconcile_cooperatively(partitions)
        else:
            self._emit_all(self._ownership.assign(partitions, self._generation))

    def _reconcile_cooperatively(self, assigned: frozenset[TopicPartition]) -> None:
        """KIP-429 after SyncGroup: revoke ``owned - assigned`` (committed first), then hand out
        ``assigned - owned``; partitions kept are never touched. A revoke means another member waits for
        those partitions, so the member rejoins at once for the second rebalance that gives them out."""
        delta = diff(self._ownership.owned, assigned)
        log.info(
            "group %s: generation %d keeps %d partitions, adds %d, revokes %d",
            self._config.group_id,
            self._generation,
            len(delta.keep),
            len(delta.assign),
            len(delta.revoke),
        )
        if not delta.revoke:
            self._emit_all(self._ownership.assign(assigned, self._generation))
            return
        self._pending_assignment = (assigned, self._generation)
        self._emit_all(self._ownership.revoke(delta.revoke, ReleaseReason.REBALANCE, everything=False))
        self._request_rejoin(f"need to revoke {len(delta.revoke)} partitions and re-join")

    def _maybe_apply_pending_assignment(self) -> None:
        """Hand out the cooperative assignment once its revoke (and the commit after it) is done."""
        pending = self._pending_assignment
        if pending is None or self._ownership.busy:
            return
        self._pending_assignment = None
        assigned, generation = pending
        if generation != self._generation or self._phase is not MemberState.STABLE:
            return  # the generation ended meanwhile: the next join reports what is held as lost
        self._emit_all(self._ownership.assign(assigned, generation))

    # ------------------------------------------------------------------ Heartbeat

    def _maybe_heartbeat(self) -> None:
        if (
            self._phase not in _JOINED
            or not self._coordinator.known
            or self._requests.has(RequestKind.HEARTBEAT)
            or self._now < self._next_heartbeat_at
        ):
            return
        self._next_heartbeat_at = self._now + self._config.heartbeat_interval_ms / 1000.0
        self._emit(
            act.SendHeartbeat(
                token=self._send(RequestKind.HEARTBEAT),
                generation=self._generation,
                member_id=self._member_id,
                group_instance_id=self._config.group_instance_id,
            )
        )

    def _heartbeat_failed(self) -> None:
        self._heartbeat_attempts += 1
        self._next_heartbeat_at = self._now + self._backoff.seconds(self._heartbeat_attempts)

    def _on_heartbeat_response(self, event: ev.HeartbeatResponse) -> None:
        request = self._requests.take(event.token)
        if request is None or request.kind is not RequestKind.HEARTBEAT or self._life is not _Life.RUNNING:
            return
        if event.error_code != ErrorCode.NONE:
            self._note(HeartbeatFailed(error_code=event.error_code))
        self._react(rules.HEARTBEAT, event.error_code, event.token, request.coordinator_epoch)

    # ------------------------------------------------------------------ OffsetCommit

    def _commit_refused(self) -> Exception | None:
        if self._phase is MemberState.STABLE and self._generation_valid():
            return None
        if self._phase in (MemberState.PREPARING_REBALANCE, MemberState.COMPLETING_REBALANCE):
            return RebalanceInProgressError(
                "offset commit cannot be completed while the group is rebalancing; "
                "poll to complete the rebalance, then commit again"
            )
        return CommitFailedError(
            "the member is not part of an active generation (it is rejoining); "
            "its partitions may already belong to another member"
        )

    def _on_commit_response(self, event: ev.OffsetCommitResponse) -> None:
        request = self._requests.take(event.token)
        pending = self._commits.take(event.token.request_id)
        if request is None or pending is None:
            return
        code = self._commits.acknowledge(pending, event.partition_errors)
        error = (
            None
            if code == ErrorCode.NONE
            else self._commit_error(code, event.token, request.coordinator_epoch)
        )
        self._complete_commit(pending, error)

    def _commit_error(self, code: int, token: RequestToken, epoch: int) -> Exception:
        """Act on the group as the table says, and word the error the committing caller gets."""
        reaction = rules.commit_reaction(code)
        steps, verdict = reaction.for_(self._generation_unchanged(token))
        reason = rules.OFFSET_COMMIT_REASON.format(error=code_name(code))
        for step in steps:
            match step:
                case Step.COORDINATOR_LOST:
                    self._coordinator_failed(epoch, f"OffsetCommit answered {code_name(code)}")
                case Step.REJOIN if self._life is _Life.RUNNING:
                    self._request_rejoin("offset commit failed since group is already rebalancing")
                case Step.RESET_MEMBER_ID | Step.RESET_GENERATION if self._life is _Life.RUNNING:
                    self._reset_generation(reason, reset_member_id=step is Step.RESET_MEMBER_ID)
                case Step.FENCE:
                    return self._fence()
                case _:
                    pass
        return verdict_error(
            verdict,
            code,
            token.generation,
            rejoining=self._phase is MemberState.PREPARING_REBALANCE,
            retry=reaction.retry_hint,
        )

    # ------------------------------------------------------------------ request failures

    def _on_request_failed(self, event: ev.RequestFailed) -> None:
        request = self._requests.take(event.token)
        if request is None:
            return
        if event.kind is FailureKind.UNSUPPORTED_VERSION:
            self._fail(
                StaticMembershipUnsupportedError(event.detail)
                if self._config.is_static
                else UnsupportedVersionError(event.detail)
            )
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
        kind = request.kind
        if kind is RequestKind.LOOKUP:
            self._coordinator.lookup_failed(self._now)
        elif kind in (RequestKind.JOIN, RequestKind.SYNC):
            # testRetainMemberIdAfterJoinGroupDisconnect / ...SyncGroupDisconnect: keep the member id and
            # restart from JoinGroup after backoff.
            self._coordinator_failed(request.coordinator_epoch, reason)
            if self._life is _Life.RUNNING:
                self._request_rejoin(f"{kind.value} {event.kind.value}")
                self._schedule_join_retry()
        elif kind is RequestKind.HEARTBEAT:
            self._coordinator_failed(request.coordinator_epoch, reason)
            self._heartbeat_failed()
        elif kind is RequestKind.COMMIT:
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
        elif kind is RequestKind.LEAVE:
            log.warning("group %s: LeaveGroup failed: %s", self._config.group_id, event.kind.value)

    # ------------------------------------------------------------------ fatal paths

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
        for action in self._ownership.abandon(reason):
            self._emit(action)
        for pending in self._commits.abandon():
            self._emit(act.CommitCompleted(commit_id=pending.commit_id, offsets=pending.offsets, error=error))
        self._requests.drop([k for k in RequestKind if k is not RequestKind.LEAVE])
        self._awaiting_assignor = None
        self._pending_assignment = None
        self._join_retry_at = None
        self._coordinator.retry_at = None
        self._clear_leadership()
        self._emit(act.Fatal(error=error))
        if was_stopping:
            self._emit(act.Stopped(error=error))


def _decode_error(exc: Exception, message: str) -> DecodeError:
    error = DecodeError(f"{message}: {exc}")
    error.__cause__ = exc
    return error

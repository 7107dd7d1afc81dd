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

from staticconsumer.errors import (
    CommitFailedError,
    DecodeError,
    ErrorCode,
    InconsistentGroupProtocolError,
    RebalanceInProgressError,
    StaticMembershipUnsupportedError,
    UnsupportedVersionError,
    broker_error,
)
from staticconsumer.protocol._base import truncate_reason

from . import actions as act
from . import events as ev
from . import rules
from .core import Answer, MachineCore
from .core import Life as _Life
from .inflight import Request, RequestKind
from .observe import HeartbeatFailed, Joined, JoinStarted, Leaving
from .reconcile import RebalanceProtocol, diff, release_before_join
from .rules import Step, code_name
from .types import (
    NO_GENERATION,
    NO_MEMBER_ID,
    GroupProtocol,
    JoinGroupMember,
    MembershipConfig,
    MemberState,
    ReleaseReason,
    RequestToken,
    TopicPartition,
)

log = logging.getLogger("staticconsumer.membership")

# Kafka mints member ids as "<instance id or client id>-<uuid>": the new coordinator uses Kafka's Uuid
# (22 chars of URL-safe base64), the old Scala one java.util.UUID (36 chars, hex with dashes). A pattern
# string, compiled (and cached by ``re``) on first use: only a JoinGroup below v9 needs it, and compiling
# it at import cost ~0.2 ms of a restart's CPU (issue 26).
_MINTED_SUFFIX = (
    r"[A-Za-z0-9_-]{22}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)


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
        self._protocols: tuple[GroupProtocol, ...] = ()

        # identity in the group
        self._generation = NO_GENERATION
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
        self._group_members: tuple[JoinGroupMember, ...] = ()
        self._group_topics: frozenset[str] = frozenset()

    # ------------------------------------------------------------------ read-only view

    @property
    def rebalance_protocol(self) -> RebalanceProtocol:
        return self._rebalance_protocol

    @property
    def group_protocol(self) -> str:
        """Its group.protocol, as ConsumerGroupMachine's: the runtime asks this, not the type."""
        return "classic"

    @property
    def group_members(self) -> tuple[JoinGroupMember, ...]:
        """Every member with its metadata, as given to the leader; empty for followers."""
        return self._group_members

    @property
    def group_topics(self) -> frozenset[str]:
        """Union of every member's subscribed topics, which the leader must watch; empty for followers."""
        return self._group_topics

    @property
    def rejoin_needed(self) -> bool:
        return self._rejoin_needed

    def _repr_identity(self) -> str:
        return f"generation={self._generation} member_id={self._member_id!r} leader={self._is_leader}"

    def _deadlines(self) -> list[float]:
        candidates: list[float] = []
        if self._phase in _JOINED:
            candidates.append(self._poll_deadline())
            if self._coordinator.known:
                candidates.append(self._session_deadline())
                if not self._requests.has(RequestKind.HEARTBEAT):
                    candidates.append(self._next_heartbeat_at)
        if self._join_retry_at is not None:
            candidates.append(self._join_retry_at)
        return candidates

    # ------------------------------------------------------------------ entry point

    def _dispatch_protocol(self, event: ev.Event) -> None:
        match event:
            case ev.JoinGroupResponse():
                self._on_join_response(event)
            case ev.SyncGroupResponse():
                self._on_sync_response(event)
            case ev.HeartbeatResponse():
                self._on_heartbeat_response(event)
            case ev.LeaveGroupResponse():
                self._on_leave_done(event.token, event.error_code)
            case ev.AssignmentComputed():
                self._on_assignment_computed(event)
            case ev.AssignmentFailed():
                self._on_assignment_failed(event)
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

    def _react_step(self, step: Step, answer: Answer, reason: str) -> None:
        match step:
            case Step.HEARTBEAT_OK:
                self._heartbeat_attempts = 0
                self._last_heartbeat_ok_at = self._now
            case Step.RESET_MEMBER_ID | Step.RESET_GENERATION:
                self._reset_generation(reason, reset_member_id=step is Step.RESET_MEMBER_ID)
            case Step.REJOIN:
                self._request_rejoin(reason)
            case Step.REJOIN_AFTER_BACKOFF:
                self._request_rejoin(reason)
                self._schedule_join_retry()
            case Step.REJOIN_IF_STABLE:
                if self._phase is MemberState.STABLE:
                    self._request_rejoin(reason)
            case Step.ADOPT_MEMBER_ID:
                # KIP-394: the broker minted our member id; join again with it, at once, same protocols.
                minted = answer.minted_member_id
                self._member_id = minted
                self._generation = NO_GENERATION
                self._protocol_name = None
                self._request_rejoin(f"need to re-join with the given member-id: {minted}")
            case _:
                pass

    def _fatal_broker_error(self, answer: Answer) -> Exception:
        group, code = self._config.group_id, answer.code
        if answer.api == rules.HEARTBEAT.api:
            return broker_error(code, f"not authorized for group {group!r}")
        if answer.api == rules.JOIN_GROUP.api:
            if code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL:
                # The first thing a pod moved from another client meets when the lists differ: say
                # which lists, and which setting makes them meet.
                offered = ", ".join(p.name for p in self._protocols)
                group_side = answer.detail or "the group's members offer none of them"
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
            if code not in rules.JOIN_GROUP.reactions:
                return broker_error(code, "unexpected error in JoinGroup response")
        return broker_error(code, f"{answer.api} failed for group {group!r}")

    # ------------------------------------------------------------------ start, poll, stop

    def _start_refused(self, event: ev.Start) -> str | None:
        return None if event.protocols else "Start needs at least one group protocol (assignor)"

    def _started(self, event: ev.Start) -> None:
        self._protocols = event.protocols
        self._phase = MemberState.UNJOINED
        self._rejoin_needed = True
        self._rejoin_reason = ""

    def _polled(self) -> None:
        if self._awaiting_poll:
            log.info("group %s: application polled again; rejoining", self._config.group_id)
            self._awaiting_poll = False

    def _stopping(self) -> None:
        self._join_retry_at = None
        self._awaiting_poll = False
        self._pending_assignment = None  # never started: nothing to hand out, nothing to commit

    def _leave_needs_coordinator(self) -> bool:
        """A static member's explicit leave is the point of its stop."""
        return self._config.is_static and self._stop_leave_group

    def _leave_on_stop(self) -> int | None:
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

    def _drive_running(self) -> None:
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
        if self._awaiting_assignor is not None or self._ownership.holds_up_join:
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
            self._emit_all(
                ownership.revoke(ownership.owned, ReleaseReason.REBALANCE, everything=True, before_join=True)
            )
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
        self._emit_all(
            ownership.revoke(unsubscribed, ReleaseReason.REBALANCE, everything=False, before_join=True)
        )
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

    def _own_topics(self) -> frozenset[str]:
        """The topics this member subscribes to now (its first protocol's metadata says them all)."""
        return frozenset(t for p in self._protocols[:1] for t in self._subscribed_topics(p))

    def _subscribed_topics(self, protocol: GroupProtocol) -> frozenset[str]:
        """The topics our own join metadata subscribes to (cooperative keeps the rest while rejoining)."""
        decode = self._config.decode_subscription
        return frozenset(decode(protocol.metadata)) if decode is not None else frozenset()

    def _release_commit_refused(self) -> str | None:
        if self._life not in (_Life.RUNNING, _Life.STOPPING) or self._phase is not MemberState.STABLE:
            return "no stable generation"
        if not self._generation_valid():
            return "generation was reset"
        return None

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
            answer = Answer(
                rules.JOIN_GROUP.api,
                code,
                event.token,
                request.coordinator_epoch,
                detail=event.refusal_detail,
                minted_member_id=event.member_id,
                joining=True,
            )
            self._react(rules.JOIN_GROUP, answer)

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
        return re.fullmatch(_MINTED_SUFFIX, event.leader_id[len(prefix) :]) is not None

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
            answer = Answer(rules.SYNC_GROUP.api, event.error_code, event.token, request.coordinator_epoch)
            self._react(rules.SYNC_GROUP, answer)

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
            or not self._identity_unchanged(event.token)
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
        answer = Answer(rules.HEARTBEAT.api, event.error_code, event.token, request.coordinator_epoch)
        self._react(rules.HEARTBEAT, answer)

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

    def _commit_reaction(self, code: int) -> rules.CommitReaction:
        return rules.commit_reaction(code)

    def _rejoining(self) -> bool:
        return self._phase is MemberState.PREPARING_REBALANCE

    def _join_decides(self) -> bool:
        return self._requests.has(RequestKind.JOIN)

    # ------------------------------------------------------------------ request failures

    def _unsupported(self, detail: str) -> Exception:
        if self._config.is_static:
            return StaticMembershipUnsupportedError(detail)
        return UnsupportedVersionError(detail)

    def _request_failed(self, request: Request, event: ev.RequestFailed, reason: str) -> None:
        kind = request.kind
        if kind in (RequestKind.JOIN, RequestKind.SYNC):
            # testRetainMemberIdAfterJoinGroupDisconnect / ...SyncGroupDisconnect: keep the member id and
            # restart from JoinGroup after backoff.
            self._coordinator_failed(request.coordinator_epoch, reason)
            if self._life is _Life.RUNNING:
                self._request_rejoin(f"{kind.value} {event.kind.value}")
                self._schedule_join_retry()
        elif kind is RequestKind.HEARTBEAT:
            self._coordinator_failed(request.coordinator_epoch, reason)
            self._heartbeat_failed()
        elif kind is RequestKind.LEAVE:
            log.warning("group %s: LeaveGroup failed: %s", self._config.group_id, event.kind.value)

    # ------------------------------------------------------------------ the end (after MachineCore._fail)

    def _ended(self) -> None:
        self._awaiting_assignor = None
        self._pending_assignment = None
        self._join_retry_at = None
        self._clear_leadership()


def _decode_error(exc: Exception, message: str) -> DecodeError:
    error = DecodeError(f"{message}: {exc}")
    error.__cause__ = exc
    return error

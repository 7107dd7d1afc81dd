"""KIP-848's consumer group protocol (ConsumerGroupHeartbeat) as a sans-IO state machine.

The broker assigns; the member heartbeats. Each heartbeat may bring the member's whole target assignment
(by topic id); the member reconciles towards it, revoking ``owned - target`` first (its commit, then
``on_partitions_revoked``), then assigning ``target - owned``, then acknowledging what it owns in its next
heartbeat, at once. The broker hands a partition to its new owner only once the previous owner has
acknowledged giving it up, so a member that follows its target never owns a partition another member has
not released.

Same contract as the classic machine (classic.py): events in, actions out, ``next_deadline()``, the same
ownership actions through :class:`~.reconcile.Ownership`, the same commit bookkeeping (commits.py), the
error rules as data (``rules.CONSUMER_GROUP_HEARTBEAT`` and ``rules.CONSUMER_OFFSET_COMMIT``), the same
milestones. States are Java's MemberState (types.MemberState documents the mapping).

Static membership (KIP-848's rules, which differ from the classic protocol's):

* ``Stop`` of a static member leaves with epoch -2 and its instance id: the broker keeps it and its
  assignment for the session timeout, and the next process with that instance id rejoins at epoch 0 and
  gets the same partitions with nothing moved. ``Stop(leave_group=True)`` leaves with -1.
* A newcomer whose instance id is still held is refused with UNRELEASED_INSTANCE_ID (the classic protocol
  fences the older member instead). The holder may be this very member (its join answer was lost, or it
  was fenced by epoch and rejoins: apache/kafka PR #23542), or an earlier run of this instance on this host
  that died without leaving (:class:`InstanceEvidence`): then the machine releases that place (epoch -2 as
  the holder) and rejoins at once. Otherwise it retries with backoff while the holder can still be leaving
  (bounded by the session timeout), then fails with :class:`UnreleasedInstanceIdError` naming the cause.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from uuid import UUID

import msgspec

from staticconsumer.errors import (
    CommitFailedError,
    ConfigurationError,
    ConsumerProtocolUnsupportedError,
    EncodeError,
    ErrorCode,
    NetworkExceptionError,
    OffsetRegressionError,
    RequestTimedOutError,
    StaleMemberEpochError,
    StaticConsumerError,
    UnreleasedInstanceIdError,
    broker_error,
)
from staticconsumer.protocol._base import truncate_reason

from . import actions as act
from . import events as ev
from . import rules
from .commits import PendingCommit, verdict_error
from .config import MembershipConfig
from .core import Life as _Life
from .core import MachineCore
from .inflight import Request, RequestKind
from .observe import HeartbeatFailed, Joined, JoinStarted, Leaving
from .reconcile import RebalanceProtocol, diff
from .rules import Step, Verdict, code_name
from .types import (
    NO_MEMBER_ID,
    FailureKind,
    IdPartitions,
    InstanceEvidence,
    MemberState,
    OffsetAndMetadata,
    ReleaseReason,
    RequestToken,
    TopicPartition,
)

log = logging.getLogger("staticconsumer.membership")

JOIN_EPOCH = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2

UNRELEASED_MARGIN_MS = 5_000
"""Beyond the session timeout, how long a refused newcomer keeps trying: the broker expires a dead
holder at the session timeout, and its timer is not precise to the millisecond."""

_HOLDER = re.compile(r"owned by (\S+) member")
"""The holder's member id in the broker's UNRELEASED_INSTANCE_ID message ("... is owned by <id> member.")."""

_HEARTBEAT_PHASES = frozenset(
    {MemberState.JOINING, MemberState.RECONCILING, MemberState.ACKNOWLEDGING, MemberState.STABLE}
)
_IN_GROUP = frozenset({MemberState.RECONCILING, MemberState.ACKNOWLEDGING, MemberState.STABLE})


_TERMINAL = frozenset({_Life.STOPPED, _Life.FENCED, _Life.FAILED})
_LIFE_STATE = {
    _Life.NOT_STARTED: MemberState.NOT_STARTED,
    _Life.STOPPED: MemberState.STOPPED,
    _Life.FENCED: MemberState.FENCED,
    _Life.FAILED: MemberState.FAILED,
}


class _Parked(msgspec.Struct):
    """A commit answered STALE_MEMBER_EPOCH, waiting for the member epoch of the next heartbeat."""

    pending: PendingCommit
    sent_epoch: int
    heartbeat_seen: bool = False
    resent_at_same_epoch: bool = False


class _Sent(msgspec.Struct, frozen=True):
    """What one heartbeat carried that the broker remembers once it answers."""

    purpose: str
    subscription: tuple[tuple[str, ...], str | None] | None
    owned: frozenset[TopicPartition] | None


class _Unreleased(msgspec.Struct):
    """The instance id is held by someone else: since when, by whom, and which places were released."""

    since: float | None = None
    holder: str | None = None
    released: set[str] = msgspec.field(default_factory=set)


class ConsumerGroupMachine(MachineCore):
    """One member's consumer-protocol (KIP-848) membership, as a pure state machine.

    ``member_id`` is generated by the runtime, once per process (KIP-1082: a UUID); ``evidence`` is what
    the runtime knows from this host about earlier holders of the instance id. Drive it exactly as the
    classic machine: ``handle(event)`` returns the actions in order; Tick at ``next_deadline()``.
    """

    def __init__(
        self,
        config: MembershipConfig,
        member_id: str,
        evidence: InstanceEvidence | None = None,
    ) -> None:
        if not member_id:
            raise ConfigurationError(
                "the consumer protocol needs a member id generated by the client (a UUID, KIP-1082)"
            )
        super().__init__(config)
        self._evidence = evidence or InstanceEvidence()
        self._phase = MemberState.UNJOINED

        self._member_id = member_id
        self._epoch = JOIN_EPOCH
        self._joins_sent = 0
        self._topics: frozenset[str] = frozenset()
        self._pattern: str | None = None

        # heartbeats
        self._interval = config.heartbeat_interval_ms / 1000.0
        """The broker's heartbeat interval once it has told it (group.consumer.heartbeat.interval.ms)."""
        self._next_heartbeat_at = 0.0
        self._not_before = 0.0
        """After a failure, no heartbeat (not even an urgent one) before this."""
        self._heartbeat_attempts = 0
        self._full = True
        self._urgent = False
        """Send the next heartbeat as soon as allowed (an acknowledgement, a subscription change)."""
        self._sent: dict[int, _Sent] = {}
        self._subscription_acked: tuple[tuple[str, ...], str | None] | None = None
        self._owned_acked: frozenset[TopicPartition] | None = None
        self._regex_sent = False
        """A regex reached the broker: it stays there until an empty one replaces it (null: unchanged)."""

        # the target and its reconciliation
        self._target: dict[UUID, frozenset[int]] | None = None
        self._names: dict[UUID, str] = {}
        self._ids: dict[str, UUID] = {}
        self._resolve_attempts = 0
        self._resolve_retry_at: float | None = None
        self._assigning: int | None = None
        self._step_done = False
        self._assign_after_revoke = False
        """A revoke step ends with an assign step even if nothing is new (as Java's does, and the classic
        protocol): the listener hears on_partitions_assigned, observers see the reconciliation end."""
        self._ack_request_id: int | None = None

        # liveness, static membership, stopping
        self._unreleased = _Unreleased()
        self._parked: list[_Parked] = []
        self._resent_same_epoch: set[int] = set()
        """Commits resent at the epoch they went stale at: a second refusal there is final."""
        self._join_reason = ""
        self._stop_leave_group = False
        self._stop_leave_decided = False
        self._stop_leave_request_id: int | None = None
        self._left_with: int | None = None
        """The epoch of the last leave this member sent (-1 or -2), until it rejoins."""

    # ------------------------------------------------------------------ read-only view

    @property
    def group_protocol(self) -> str:
        return "consumer"

    @property
    def rebalance_protocol(self) -> RebalanceProtocol:
        """Partitions move incrementally (only what changes is revoked or assigned), as cooperative."""
        return RebalanceProtocol.COOPERATIVE

    @property
    def state(self) -> MemberState:
        if self._life is _Life.RUNNING:
            return self._phase
        if self._life is _Life.STOPPING:
            leaving = self._stop_leave_request_id is not None and self._requests.contains(
                self._stop_leave_request_id
            )
            return MemberState.LEAVING if leaving else MemberState.STOPPING
        return _LIFE_STATE[self._life]

    @property
    def member_epoch(self) -> int:
        return self._epoch

    @property
    def generation(self) -> int:
        """The member epoch (what the classic protocol's generation is to commits and observers)."""
        return self._epoch

    @property
    def protocol_name(self) -> str | None:
        """The server-side assignor asked for (None: the brokers' default)."""
        return self._config.server_assignor

    @property
    def is_leader(self) -> bool:
        return False

    @property
    def leadership_guessed(self) -> bool:
        return False

    @property
    def assignment(self) -> frozenset[TopicPartition]:
        """Partitions this member owns now (kept while the group reconciles)."""
        return self._ownership.owned

    @property
    def target_unresolved(self) -> frozenset[UUID]:
        """Topic ids of the target assignment whose names are not known yet (their partitions wait)."""
        if self._target is None:
            return frozenset()
        return frozenset(t for t in self._target if t not in self._names)

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__} group={self._config.group_id!r} "
            f"instance={self._config.group_instance_id!r} state={self.state.name} "
            f"epoch={self._epoch} member_id={self._member_id!r}>"
        )

    def next_deadline(self) -> float | None:
        candidates: list[float] = []
        if self._life is _Life.RUNNING:
            if self._phase in _HEARTBEAT_PHASES and self._coordinator.known and not self._heartbeat_busy():
                candidates.append(self._heartbeat_due())
            if self._phase in _IN_GROUP:
                candidates.append(self._poll_deadline())
            if self._resolve_retry_at is not None and self.target_unresolved:
                candidates.append(self._resolve_retry_at)
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
            case ev.ConsumerGroupHeartbeatResponse():
                self._on_heartbeat_response(event)
            case ev.TopicIdsResolved():
                self._on_resolved(event)
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
            case ev.RequestRejoin():
                log.info(
                    "group %s: %s; the consumer protocol's broker reconciles on its own",
                    self._config.group_id,
                    event.reason,
                )
            case ev.UpdateProtocols():
                self._set_subscription(event.topics, event.pattern)
                self._urgent = True
            case _:
                raise TypeError(f"unknown membership event for the consumer protocol: {event!r}")

    # ------------------------------------------------------------------ helpers

    def _generation_now(self) -> int:
        return self._epoch

    def _coordinator_found(self) -> None:
        self._full = True  # a new coordinator hears every field

    def _epoch_unchanged(self, token: RequestToken) -> bool:
        return token.generation == self._epoch and token.member_id == self._member_id

    def _heartbeat_busy(self) -> bool:
        return self._requests.has(RequestKind.CONSUMER_HEARTBEAT) or self._requests.has(
            RequestKind.CONSUMER_LEAVE
        )

    def _heartbeat_due(self) -> float:
        if self._phase is MemberState.JOINING or self._urgent:
            return max(self._now, self._not_before)
        return max(self._next_heartbeat_at, self._not_before)

    def _heartbeat_failed(self) -> None:
        self._heartbeat_attempts += 1
        self._full = True
        self._not_before = self._now + self._backoff.seconds(self._heartbeat_attempts)
        self._next_heartbeat_at = self._not_before

    def _coordinator_lost(self, reason: str, *, disconnect: bool = True) -> None:
        self._full = True
        if self._coordinator.lose():
            log.info("group %s: coordinator unknown (%s); rediscovering", self._config.group_id, reason)
            if disconnect:
                self._emit(act.DisconnectCoordinator(reason=reason))

    def _set_subscription(self, topics: frozenset[str], pattern: str | None) -> None:
        self._topics = frozenset(topics)
        self._pattern = pattern

    def _subscription(self) -> tuple[tuple[str, ...], str | None]:
        """Topic names, or a regex the broker resolves (then no names: the two add up on the broker)."""
        if self._pattern is not None:
            return (), self._pattern
        return tuple(sorted(self._topics)), None

    # ------------------------------------------------------------------ start, poll, stop

    def _on_start(self, event: ev.Start) -> None:
        if self._life is not _Life.NOT_STARTED:
            log.warning("group %s: Start ignored, the member already started", self._config.group_id)
            return
        if not event.topics and event.pattern is None:
            self._fail(StaticConsumerError("the consumer protocol needs topics or a pattern to subscribe to"))
            return
        self._set_subscription(event.topics, event.pattern)
        self._life = _Life.RUNNING
        self._phase = MemberState.JOINING
        self._last_poll_at = event.now

    def _on_poll(self) -> None:
        if self._fatal_error is not None:
            self._emit(act.Fatal(error=self._fatal_error))
            return
        self._last_poll_at = self._now
        if self._life is _Life.RUNNING and self._phase is MemberState.STALE:
            log.info("group %s: application polled again; rejoining at epoch 0", self._config.group_id)
            self._begin_join("the application polled again after max.poll.interval.ms expired")

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
            self._fail_parked_commits(
                CommitFailedError("the consumer is stopping; the commit was not resent")
            )

    def _leave_epoch(self) -> int:
        if self._config.is_static and not self._stop_leave_group:
            return STATIC_LEAVE_EPOCH
        return LEAVE_EPOCH

    def _drive_stop(self) -> None:
        """Release partitions (revoke callback and its commit, or lost), then leave, then Stopped."""
        if self._ownership.busy:
            return
        if self._ownership.holding:
            self._release_everything(ReleaseReason.STOP)
            if self._ownership.busy:
                return
        if not self._stop_leave_decided:
            epoch = self._leave_epoch()
            must_leave = self._joins_sent > 0 and self._left_with not in (epoch, LEAVE_EPOCH)
            if must_leave and not self._coordinator.known:
                # The leave is the point of a static stop (-2 keeps the place for the next run): find the
                # coordinator first; the runtime bounds the whole stop by request.timeout.ms.
                self._ensure_coordinator()
                return
            self._stop_leave_decided = True
            if must_leave:
                self._stop_leave_request_id = self._send_leave(epoch, "the consumer is being closed")
            elif self._joins_sent == 0:
                log.info("group %s: never joined, so there is nothing to leave", self._config.group_id)
        if self._stop_leave_request_id is not None and self._requests.contains(self._stop_leave_request_id):
            return
        self._life = _Life.STOPPED
        self._emit(act.Stopped(error=None))

    def _release_everything(self, reason: ReleaseReason) -> None:
        """Revoke what is held while the member is in the group (commits still work), else report it lost."""
        ownership = self._ownership
        if not ownership.owned:
            ownership.drop()
            return
        if self._epoch > 0 and self._phase in _IN_GROUP:
            self._emit_all(ownership.revoke(ownership.owned, reason, everything=True))
        else:
            self._emit_all(ownership.lose(ownership.owned, reason, everything=True))

    def _send_leave(self, epoch: int, reason: str) -> int:
        """A leave heartbeat: epoch -1 (gone for good) or -2 (a static member away for a while), with the
        instance id (KAFKA-16152: the broker needs it to keep a static member's place)."""
        instance_id = self._config.group_instance_id
        token = self._send(RequestKind.CONSUMER_LEAVE)
        self._note(
            Leaving(
                member_id=self._member_id, group_instance_id=instance_id, reason=truncate_reason(reason) or ""
            )
        )
        log.info(
            "group %s: leaving with member epoch %d (%s)",
            self._config.group_id,
            epoch,
            "kept for the session timeout" if epoch == STATIC_LEAVE_EPOCH else "for good",
        )
        self._left_with = epoch
        self._emit(self._leave_heartbeat(token, self._member_id, epoch, "leave"))
        return token.request_id

    def _leave_heartbeat(
        self, token: RequestToken, member_id: str, epoch: int, purpose: str
    ) -> act.SendConsumerGroupHeartbeat:
        return act.SendConsumerGroupHeartbeat(
            token=token,
            member_id=member_id,
            member_epoch=epoch,
            instance_id=self._config.group_instance_id,
            rack_id=None,
            rebalance_timeout_ms=-1,
            subscribed_topic_names=None,
            subscribed_topic_regex=None,
            server_assignor=None,
            owned=None,
            purpose=purpose,
            request_timeout_ms=self._config.request_timeout_ms,
        )

    # ------------------------------------------------------------------ the driving loop

    def _drive(self) -> None:
        if self._life is _Life.RUNNING:
            self._check_poll_timer()
        if self._life is _Life.STOPPING:
            self._drive_stop()
        elif self._life is _Life.RUNNING:
            self._drive_out_of_group()
            self._maybe_resolve()
            self._maybe_reconcile()
            self._retry_parked_commits()
            self._maybe_heartbeat()

    def _check_poll_timer(self) -> None:
        if self._phase in _IN_GROUP and self._now >= self._poll_deadline():
            self._on_poll_timeout()

    def _on_poll_timeout(self) -> None:
        """Java's STALE: the application stopped polling. Partitions are lost (never committed), the member
        leaves (-2 for a static member, which keeps its place), and rejoins at the next poll."""
        epoch = STATIC_LEAVE_EPOCH if self._config.is_static else LEAVE_EPOCH
        log.warning(
            "group %s: the application did not poll for max.poll.interval.ms (%d ms); leaving with epoch %d "
            "until it polls again",
            self._config.group_id,
            self._config.max_poll_interval_ms,
            epoch,
        )
        self._forget_group_state()
        self._phase = MemberState.STALE
        self._drive_out_of_group()
        if self._coordinator.known:
            self._send_leave(epoch, "consumer poll timeout has expired")

    def _lose_everything(self, reason: ReleaseReason) -> None:
        ownership = self._ownership
        if not ownership.owned:
            ownership.drop()
            return
        self._emit_all(ownership.lose(ownership.owned, reason, everything=True))

    def _forget_group_state(self) -> None:
        """The member is out of the group (fenced, stale): no epoch, no target, every field resent."""
        self._epoch = JOIN_EPOCH
        self._target = None
        self._assigning = None
        self._step_done = False
        self._assign_after_revoke = False
        self._ack_request_id = None
        self._urgent = False
        self._full = True
        self._subscription_acked = None
        self._owned_acked = None
        self._fail_parked_commits(
            CommitFailedError(
                "the member left the group before the commit could be resent; its partitions may "
                "already belong to another member"
            )
        )

    def _drive_out_of_group(self) -> None:
        """Out of the group (fenced by epoch, or stale): give up what is held as lost once no callback runs;
        a fenced member then joins again at epoch 0 (a stale one waits for the next poll)."""
        if self._phase not in (MemberState.EPOCH_FENCED, MemberState.STALE) or self._ownership.busy:
            return
        if self._ownership.holding:
            stale = self._phase is MemberState.STALE
            self._lose_everything(ReleaseReason.POLL_TIMEOUT if stale else ReleaseReason.MEMBERSHIP_LOST)
            if self._ownership.busy:
                return
        if self._phase is MemberState.EPOCH_FENCED:
            self._begin_join("the member was fenced and rejoins at epoch 0")

    def _begin_join(self, reason: str) -> None:
        self._phase = MemberState.JOINING
        self._join_reason = reason
        self._full = True

    # ------------------------------------------------------------------ heartbeats

    def _maybe_heartbeat(self) -> None:
        if self._phase not in _HEARTBEAT_PHASES:
            return
        if not self._coordinator.known:
            self._ensure_coordinator()
            return
        if self._heartbeat_busy() or self._now < self._heartbeat_due():
            return
        self._send_heartbeat()

    def _send_heartbeat(self) -> None:
        joining = self._phase is MemberState.JOINING
        full = self._full or joining
        epoch = JOIN_EPOCH if joining else self._epoch
        subscription = self._subscription()
        send_subscription = full or subscription != self._subscription_acked
        if joining:
            purpose = "join"
        elif self._phase is MemberState.ACKNOWLEDGING and self._urgent:
            purpose = "acknowledge"
        else:
            purpose = "heartbeat"
        owned = self._ownership.owned
        # An acknowledgement always names what is owned (as Java's does: its local epoch changed).
        send_owned = full or purpose == "acknowledge" or owned != self._owned_acked
        token = self._send(RequestKind.CONSUMER_HEARTBEAT)
        if joining:
            self._joins_sent += 1
            self._left_with = None
            self._note(
                JoinStarted(member_id=self._member_id, reason=truncate_reason(self._join_reason) or "")
            )
        if purpose == "acknowledge":
            self._ack_request_id = token.request_id
        self._urgent = False
        self._next_heartbeat_at = self._now + self._interval
        self._sent[token.request_id] = _Sent(
            purpose, subscription if send_subscription else None, owned if send_owned else None
        )
        names, regex = subscription
        if send_subscription:
            if regex is not None:
                self._regex_sent = True
            elif self._regex_sent:
                regex = ""  # as Java does: the broker adds names to a regex it holds, "" drops it
        self._emit(
            act.SendConsumerGroupHeartbeat(
                token=token,
                member_id=self._member_id,
                member_epoch=epoch,
                instance_id=self._config.group_instance_id,
                rack_id=self._config.rack_id if full else None,
                rebalance_timeout_ms=self._config.max_poll_interval_ms if full else -1,
                subscribed_topic_names=names if send_subscription else None,
                subscribed_topic_regex=regex if send_subscription else None,
                server_assignor=self._config.server_assignor if full else None,
                owned=self._as_ids(owned) if send_owned else None,
                purpose=purpose,
                request_timeout_ms=self._config.request_timeout_ms,
            )
        )

    def _as_ids(self, partitions: frozenset[TopicPartition]) -> tuple[IdPartitions, ...]:
        """Owned partitions by topic id (every owned topic came from an id, so each is known)."""
        by_id: dict[UUID, list[int]] = {}
        for tp in sorted(partitions):
            topic_id = self._ids.get(tp.topic)
            if topic_id is not None:
                by_id.setdefault(topic_id, []).append(tp.partition)
        return tuple(IdPartitions(t, tuple(ps)) for t, ps in sorted(by_id.items(), key=lambda kv: str(kv[0])))

    def _on_heartbeat_response(self, event: ev.ConsumerGroupHeartbeatResponse) -> None:
        request = self._requests.take(event.token)
        if request is None:
            return
        sent = self._sent.pop(event.token.request_id, None)
        if request.kind is RequestKind.CONSUMER_LEAVE:
            self._on_leave_answered(event, request)
            return
        if self._life is not _Life.RUNNING or sent is None or self._phase not in _HEARTBEAT_PHASES:
            return  # the member left the group meanwhile (fenced, stale): this answer is moot
        if event.error_code == ErrorCode.NONE:
            self._on_heartbeat_ok(event, sent)
            return
        self._note(HeartbeatFailed(error_code=event.error_code))
        if event.token.request_id == self._ack_request_id:
            self._ack_request_id = None
            self._urgent = True  # the acknowledgement is still owed
        self._react(event, request, sent)

    def _on_heartbeat_ok(self, event: ev.ConsumerGroupHeartbeatResponse, sent: _Sent) -> None:
        joined = sent.purpose == "join"
        self._heartbeat_attempts = 0
        self._not_before = 0.0
        if event.heartbeat_interval_ms > 0:
            self._interval = event.heartbeat_interval_ms / 1000.0
        self._next_heartbeat_at = self._now + self._interval
        self._full = False
        if sent.subscription is not None:
            self._subscription_acked = sent.subscription
        if sent.owned is not None:
            self._owned_acked = sent.owned
        if event.member_id and event.member_id != self._member_id:
            log.info("group %s: the coordinator named this member %s", self._config.group_id, event.member_id)
            self._member_id = event.member_id
        if event.member_epoch != self._epoch:
            log.info(
                "group %s: member epoch %d -> %d", self._config.group_id, self._epoch, event.member_epoch
            )
        self._epoch = event.member_epoch
        if joined:
            self._on_joined()
        for parked in self._parked:
            parked.heartbeat_seen = True
        if event.assignment is not None:
            self._target = {t.topic_id: frozenset(t.partitions) for t in event.assignment}
            self._ack_request_id = None
            if self._phase in (MemberState.ACKNOWLEDGING, MemberState.STABLE):
                self._phase = MemberState.RECONCILING
            self._step_done = True  # even an unchanged target is acknowledged once
        elif (
            event.token.request_id == self._ack_request_id
            and self._phase is MemberState.ACKNOWLEDGING
            and not self.target_unresolved
        ):
            self._ack_request_id = None
            self._phase = MemberState.STABLE
            log.info(
                "group %s: stable at member epoch %d with %d partitions",
                self._config.group_id,
                self._epoch,
                len(self._ownership.owned),
            )

    def _on_joined(self) -> None:
        self._phase = MemberState.RECONCILING
        unreleased = self._unreleased
        if unreleased.since is not None and unreleased.holder not in unreleased.released:
            log.warning(
                "group %s: joined as instance %s after %.1f s of UNRELEASED_INSTANCE_ID: member %s held "
                "it, a previous run that did not leave (crashed or killed), until the broker expired its "
                "session; its partitions were free to move meanwhile",
                self._config.group_id,
                self._config.group_instance_id,
                self._now - unreleased.since,
                unreleased.holder,
            )
        self._unreleased = _Unreleased()
        self._note(
            Joined(
                generation=self._epoch,
                member_id=self._member_id,
                leader_id="",
                leader=False,
                leadership_guessed=False,
                assignment_skipped=False,
                protocol_name=self._config.server_assignor,
            )
        )
        log.info(
            "group %s: joined at member epoch %d as %s", self._config.group_id, self._epoch, self._member_id
        )

    def _react(self, event: ev.ConsumerGroupHeartbeatResponse, request: Request, sent: _Sent) -> None:
        table = rules.CONSUMER_GROUP_HEARTBEAT
        code = event.error_code
        reaction = table.reaction(code)
        unchanged = self._epoch_unchanged(event.token)
        steps = reaction.steps_for(unchanged)
        if not unchanged and reaction.stale is not None:
            log.info(
                "group %s: ignoring %s for an older member epoch", self._config.group_id, code_name(code)
            )
        for step in steps:
            match step:
                case Step.HEARTBEAT_OK:
                    pass
                case Step.COORDINATOR_LOST:
                    self._coordinator_failed(
                        request.coordinator_epoch, f"{table.api} answered {code_name(code)}"
                    )
                case Step.FULL_HEARTBEAT:
                    self._full = True
                case Step.HEARTBEAT_BACKOFF:
                    self._heartbeat_failed()
                case Step.LOSE_AND_REJOIN:
                    self._fenced_by_epoch(code, event.error_message)
                    if sent.purpose == "join":
                        self._heartbeat_failed()  # a join refused like this is not retried in a busy loop
                case Step.UNRELEASED:
                    self._on_unreleased(event)
                case Step.FENCE:
                    self._fence()
                case Step.FAIL:
                    self._fail(self._fatal_error_for(code, event.error_message))
                case Step.WARN:
                    log.warning(
                        "group %s: heartbeat failed with %s: %s",
                        self._config.group_id,
                        code_name(code),
                        event.error_message,
                    )
                case _:
                    pass

    def _fenced_by_epoch(self, code: int, message: str | None) -> None:
        """FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID: what is held is lost; rejoin at epoch 0 with the same
        member id and instance id (Java's FENCED state)."""
        log.warning(
            "group %s: %s (%s): giving up %d partitions as lost and rejoining at epoch 0",
            self._config.group_id,
            code_name(code),
            message,
            len(self._ownership.owned),
        )
        self._forget_group_state()
        self._phase = MemberState.EPOCH_FENCED

    def _fatal_error_for(self, code: int, message: str | None) -> Exception:
        group = self._config.group_id
        said = f" (the broker said: {message})" if message else ""
        if code == ErrorCode.UNSUPPORTED_VERSION:
            return ConsumerProtocolUnsupportedError(
                message
                or "group.protocol=consumer, but the coordinator refused ConsumerGroupHeartbeat with "
                "UNSUPPORTED_VERSION: the consumer protocol is switched off on this cluster"
            )
        if code == ErrorCode.UNSUPPORTED_ASSIGNOR:
            return broker_error(
                code,
                f"group.remote.assignor={self._config.server_assignor!r} is not one of the brokers' "
                f"group.consumer.assignors{said}",
            )
        if code == ErrorCode.INVALID_REGULAR_EXPRESSION:
            return broker_error(
                code,
                f"the broker cannot compile the subscription pattern {self._pattern!r} (brokers evaluate "
                f"it with RE2/J syntax){said}",
            )
        if code == ErrorCode.GROUP_ID_NOT_FOUND:
            return broker_error(
                code,
                f"group {group!r} cannot be joined with the consumer protocol{said}: it exists as a classic "
                f"group that the broker does not convert (group.consumer.migration.policy, or members it "
                f"cannot migrate)",
            )
        return broker_error(code, f"ConsumerGroupHeartbeat failed for group {group!r}{said}")

    # ------------------------------------------------------------------ UNRELEASED_INSTANCE_ID

    def _on_unreleased(self, event: ev.ConsumerGroupHeartbeatResponse) -> None:
        match = _HOLDER.search(event.error_message or "")
        holder = match.group(1) if match else None
        unreleased = self._unreleased
        ours = holder == self._member_id
        dead = holder is not None and holder == self._evidence.previous_member_id
        if holder is not None and (ours or dead) and holder not in unreleased.released:
            unreleased.released.add(holder)
            unreleased.holder = holder
            log.warning(
                "group %s: instance id %s is still held by %s; %s, so its place is released (epoch -2) "
                "and taken at once",
                self._config.group_id,
                self._config.group_instance_id,
                holder,
                "this member's own place (an answer was lost, or it rejoins after a fence)"
                if ours
                else "a previous run of this instance on this host that ended without leaving",
            )
            token = self._send(RequestKind.CONSUMER_LEAVE, member_id=holder)
            self._emit(self._leave_heartbeat(token, holder, STATIC_LEAVE_EPOCH, "release"))
            return
        if unreleased.since is None:
            unreleased.since = self._now
        unreleased.holder = holder
        waited = self._now - unreleased.since
        local = self._evidence.live_holder
        bound_ms = (
            self._config.request_timeout_ms
            if local is not None
            else self._config.session_timeout_ms + UNRELEASED_MARGIN_MS
        )
        if waited * 1000 >= bound_ms:
            self._fail(self._unreleased_error(holder, waited, event.error_message))
            return
        if unreleased.since == self._now:
            log.warning(
                "group %s: instance id %s is held by member %s (UNRELEASED_INSTANCE_ID); retrying for up to "
                "%.0f s while it can still be leaving",
                self._config.group_id,
                self._config.group_instance_id,
                holder,
                bound_ms / 1000,
            )
        self._heartbeat_failed()

    def _unreleased_error(
        self, holder: str | None, waited: float, message: str | None
    ) -> UnreleasedInstanceIdError:
        group, instance = self._config.group_id, self._config.group_instance_id
        who = f"member {holder}" if holder else "another member"
        said = f" (the broker said: {message})" if message else ""
        if holder is not None and holder == self._evidence.previous_member_id:
            return UnreleasedInstanceIdError(
                f"group {group!r}: group.instance.id {instance!r} is still held by {who}, left by a previous "
                f"run of this instance on this host that ended without leaving (crashed or killed), and "
                f"releasing its place failed; the broker frees it when that member's session expires "
                f"(group.consumer.session.timeout.ms). Waited {waited:.0f} s{said}.",
                cause=UnreleasedInstanceIdError.PREVIOUS_RUN,
                holder_member_id=holder,
                waited_seconds=waited,
            )
        local = self._evidence.live_holder
        if local is not None:
            where = (
                f"another live process on this host ({local}) runs this instance id and did not release "
                f"it within {waited:.0f} s"
            )
        else:
            where = (
                f"{who} kept it for {waited:.0f} s, past the session timeout "
                f"({self._config.session_timeout_ms / 1000:.0f} s assumed; the brokers' "
                f"group.consumer.session.timeout.ms), so a live process is heartbeating with it. (A previous "
                f"run that ended without leaving would keep it only until its session expired: if your "
                f"brokers' session timeout is longer, that may be the cause instead.)"
            )
        return UnreleasedInstanceIdError(
            f"group {group!r}: group.instance.id {instance!r} is held by {who}: {where} Under "
            f"group.protocol=consumer the broker refuses the newcomer rather than fencing the holder as "
            f"the classic protocol does. Give every consumer its own instance id, or stop the other process "
            f"first (its stop() releases the id at once){said}.",
            cause=UnreleasedInstanceIdError.LIVE_PROCESS,
            holder_member_id=holder,
            waited_seconds=waited,
        )

    def _on_leave_answered(self, event: ev.ConsumerGroupHeartbeatResponse, request: Request) -> None:
        """A leave, or the release of a holder's place: best effort, errors logged. After a release the
        join goes out again at once (a new holder, if any, shows in the next refusal)."""
        if event.error_code != ErrorCode.NONE:
            log.warning(
                "group %s: the leave heartbeat of member %s answered %s: %s",
                self._config.group_id,
                request.token.member_id,
                code_name(event.error_code),
                event.error_message,
            )

    # ------------------------------------------------------------------ topic ids

    def _maybe_resolve(self) -> None:
        missing = self.target_unresolved
        if not missing or self._requests.has(RequestKind.METADATA):
            return
        if self._resolve_retry_at is not None and self._now < self._resolve_retry_at:
            return
        self._emit(act.ResolveTopicIds(token=self._send(RequestKind.METADATA), topic_ids=missing))

    def _on_resolved(self, event: ev.TopicIdsResolved) -> None:
        if self._requests.take(event.token) is None:
            return
        for topic_id, name in event.names.items():
            self._names[topic_id] = name
            self._ids[name] = topic_id
        if self.target_unresolved:
            self._resolve_attempts += 1
            self._resolve_retry_at = self._now + self._backoff.seconds(self._resolve_attempts)
            log.info(
                "group %s: topic ids %s not in metadata yet; their partitions wait",
                self._config.group_id,
                sorted(str(t) for t in self.target_unresolved),
            )
        else:
            self._resolve_attempts = 0
            self._resolve_retry_at = None

    # ------------------------------------------------------------------ reconciliation

    def _resolved_target(self) -> frozenset[TopicPartition]:
        assert self._target is not None
        return frozenset(
            TopicPartition(self._names[t], p)
            for t, ps in self._target.items()
            if t in self._names
            for p in ps
        )

    def _maybe_reconcile(self) -> None:
        """One step at a time: revoke ``owned - target``, then assign ``target - owned``, then acknowledge."""
        if self._phase not in _IN_GROUP or self._target is None or self._epoch <= 0:
            return
        if self._ownership.busy:
            return
        target = self._resolved_target()
        ownership = self._ownership
        delta = diff(ownership.owned, target)
        if delta.revoke:
            self._phase = MemberState.RECONCILING
            log.info(
                "group %s: epoch %d revokes %d partitions",
                self._config.group_id,
                self._epoch,
                len(delta.revoke),
            )
            # Never "everything": the member keeps holding its (maybe empty) assignment, and its listener
            # hears only of what changes.
            self._emit_all(ownership.revoke(delta.revoke, ReleaseReason.REBALANCE, everything=False))
            self._step_done = True
            self._assign_after_revoke = True
            return
        if self.target_unresolved and self._requests.has(RequestKind.METADATA):
            # Revoking needs no names (every owned topic has one); for what is new, one step for the whole
            # target rather than two while its names are being looked up.
            return
        if delta.assign or not ownership.holding or self._assign_after_revoke:
            self._assign_after_revoke = False
            self._phase = MemberState.RECONCILING
            log.info(
                "group %s: epoch %d assigns %d partitions (%d kept)",
                self._config.group_id,
                self._epoch,
                len(delta.assign),
                len(delta.keep),
            )
            actions = ownership.assign(target, self._epoch)
            assigned = next(a for a in actions if isinstance(a, act.PartitionsAssigned))
            self._assigning = assigned.callback_id
            self._emit_all(actions)
            self._step_done = True
            return
        if self._step_done:
            self._step_done = False
            self._phase = MemberState.ACKNOWLEDGING
            self._urgent = True

    def _on_callback_finished(self, event: ev.CallbackFinished) -> None:
        if event.callback_id == self._assigning:
            self._assigning = None
        super()._on_callback_finished(event)

    def _commit_on_release(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> int | None:
        """The commit after a revoke callback (reconciliation or stop); skipped when it cannot succeed."""
        if (
            self._life not in (_Life.RUNNING, _Life.STOPPING)
            or self._epoch <= 0
            or self._phase not in _IN_GROUP
        ):
            log.warning("group %s: not committing on release: not in the group", self._config.group_id)
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

    # ------------------------------------------------------------------ commits

    def _commit_refused(self) -> Exception | None:
        if self._epoch > 0 and self._phase in _IN_GROUP:
            return None
        return CommitFailedError(
            "the member is not in the group (joining, or rejoining after a fence); its "
            "partitions may already belong to another member"
        )

    def _on_commit_response(self, event: ev.OffsetCommitResponse) -> None:
        request = self._requests.take(event.token)
        pending = self._commits.take(event.token.request_id)
        if request is None or pending is None:
            return
        code = self._commits.acknowledge(pending, event.partition_errors)
        if code == ErrorCode.NONE:
            self._complete_commit(pending, None)
            return
        reaction = rules.consumer_commit_reaction(code)
        unchanged = self._epoch_unchanged(event.token)
        steps, verdict = reaction.for_(unchanged)
        fenced: Exception | None = None
        for step in steps:
            match step:
                case Step.COORDINATOR_LOST:
                    self._coordinator_failed(
                        request.coordinator_epoch, f"OffsetCommit answered {code_name(code)}"
                    )
                case Step.HEARTBEAT_NOW if self._life is _Life.RUNNING:
                    self._urgent = True
                case Step.FENCE:
                    fenced = self._fence()
                case _:
                    pass
        if verdict is Verdict.RESENT:
            self._park(pending, event.token.generation)
            return
        error = fenced or verdict_error(
            verdict, code, event.token.generation, rejoining=False, retry=reaction.retry_hint
        )
        self._complete_commit(pending, error)

    def _park(self, pending: PendingCommit, sent_epoch: int) -> None:
        log.info(
            "group %s: commit sent at member epoch %d is stale; resending with the next heartbeat's epoch",
            self._config.group_id,
            sent_epoch,
        )
        again = pending.token.request_id in self._resent_same_epoch
        self._resent_same_epoch.discard(pending.token.request_id)
        self._parked.append(_Parked(pending, sent_epoch, resent_at_same_epoch=again))
        self._commits.park(pending)
        if self._life is _Life.RUNNING:
            self._urgent = True  # learn the current epoch now rather than at the next interval

    def _fail_parked_commits(self, error: Exception) -> None:
        for parked in self._parked:
            self._commits.unpark(parked.pending)
            self._complete_commit(parked.pending, error)
        self._parked.clear()

    def _retry_parked_commits(self) -> None:
        """Resend stale commits once the member epoch moved (or a heartbeat confirmed it did not)."""
        for parked in list(self._parked):
            if self._epoch <= 0 or self._phase not in _IN_GROUP:
                continue  # out of the group: _forget_group_state fails them
            if self._epoch == parked.sent_epoch and not parked.heartbeat_seen:
                continue
            self._parked.remove(parked)
            pending = parked.pending
            self._commits.unpark(pending)
            superseded = self._commits.regressions(pending.offsets)
            if superseded:
                # A higher offset was committed (or is in flight) since this one was refused: resending it
                # would move the committed offset backwards. What it asked for is already covered.
                log.info(
                    "group %s: not resending %d stale commit offsets a later commit superseded",
                    self._config.group_id,
                    len(superseded),
                )
                remaining = {tp: om for tp, om in pending.offsets.items() if tp not in superseded}
                if not remaining:
                    self._complete_commit(pending, None)
                    continue
                pending = PendingCommit(pending.commit_id, remaining, pending.token)
            release = self._ownership.release
            releasing = release is not None and release.commit_request_id == pending.token.request_id
            allowed = self._ownership.owned | (
                release.partitions if release is not None and releasing else frozenset()
            )
            gone = [tp for tp in pending.offsets if tp not in allowed]
            if gone:
                # Resent now, an offset of a partition given up since could land after the new owner's commit
                # and move it backwards.
                self._complete_commit(
                    pending,
                    CommitFailedError(
                        f"the commit went stale (STALE_MEMBER_EPOCH) and {len(gone)} of its partitions were "
                        f"given up since, so it was not resent (their new owner commits them now)"
                    ),
                )
                continue
            same_epoch = self._epoch == parked.sent_epoch
            if same_epoch and parked.resent_at_same_epoch:
                self._complete_commit(
                    pending,
                    StaleMemberEpochError(
                        f"offset commit refused twice at member epoch {self._epoch}, which the coordinator "
                        f"confirmed in between; retry"
                    ),
                )
                continue
            request_id = self._send_commit(pending.commit_id, pending.offsets)
            if release is not None and releasing:
                release.commit_request_id = request_id
            if same_epoch:
                self._resent_same_epoch.add(request_id)

    # ------------------------------------------------------------------ request failures

    def _on_request_failed(self, event: ev.RequestFailed) -> None:
        request = self._requests.take(event.token)
        if request is None:
            return
        self._sent.pop(event.token.request_id, None)
        if event.kind is FailureKind.UNSUPPORTED_VERSION:
            self._fail(ConsumerProtocolUnsupportedError(event.detail))
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
        elif kind is RequestKind.CONSUMER_HEARTBEAT:
            self._coordinator_failed(request.coordinator_epoch, reason)
            if event.token.request_id == self._ack_request_id:
                self._ack_request_id = None
                self._urgent = True
            self._heartbeat_failed()
        elif kind is RequestKind.CONSUMER_LEAVE:
            self._coordinator_failed(request.coordinator_epoch, reason)
            log.warning("group %s: the leave heartbeat %s", self._config.group_id, event.kind.value)
        elif kind is RequestKind.METADATA:
            self._resolve_attempts += 1
            self._resolve_retry_at = self._now + self._backoff.seconds(self._resolve_attempts)
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

    # ------------------------------------------------------------------ coordinator discovery

    # ------------------------------------------------------------------ fatal paths

    def _fail(self, error: Exception, *, fenced: bool = False) -> None:
        if self._life in _TERMINAL:
            return
        was_stopping = self._life is _Life.STOPPING
        self._life = _Life.FENCED if fenced else _Life.FAILED
        self._fatal_error = error
        log.error("group %s: membership ended: %s", self._config.group_id, error)
        reason = ReleaseReason.FENCED if fenced else ReleaseReason.FATAL
        self._emit(act.StopFetching(reason=reason))
        self._emit_all(self._ownership.abandon(reason))
        for pending in self._commits.abandon():
            self._emit(act.CommitCompleted(commit_id=pending.commit_id, offsets=pending.offsets, error=error))
        self._parked.clear()
        self._requests.drop([k for k in RequestKind if k is not RequestKind.CONSUMER_LEAVE])
        self._coordinator.retry_at = None
        self._emit(act.Fatal(error=error))
        if was_stopping:
            self._emit(act.Stopped(error=error))


__all__ = ["NO_MEMBER_ID", "ConsumerGroupMachine", "InstanceEvidence"]

"""OpenTelemetry traces and metrics of group membership, read off the membership machine's steps.

The observer never touches the network or the machine: it sees each event with the actions it caused
(``MembershipObserver``) and turns them into spans and instruments from opentelemetry-api alone. When
the application configures no SDK, the API hands out no-op tracers and meters, so all of this costs a
few attribute look-ups per membership step (and nothing per poll, see ``observe``).

Timestamps: the machine's ``now`` is ``time.monotonic()``; spans need wall-clock nanoseconds. One
(wall, monotonic) anchor converts both ends of every span, so durations are exactly the monotonic ones
and a wall-clock step can never make a span end before it starts. The anchor is renewed whenever no
span is open, so long-running consumers follow wall-clock corrections.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from opentelemetry import metrics, trace
from opentelemetry.context import Context
from opentelemetry.metrics import CallbackOptions, Meter, MeterProvider, Observation
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, TracerProvider
from opentelemetry.util.types import AttributeValue

from staticconsumer.errors import BrokerError, ErrorCode, FencedInstanceIdError
from staticconsumer.membership import MembershipObserver, MemberView, OffsetAndMetadata, TopicPartition
from staticconsumer.membership import actions as act
from staticconsumer.membership import events as ev
from staticconsumer.membership.observe import Joined, JoinStarted, Milestone
from staticconsumer.membership.types import FailureKind, ReleaseReason

from . import attributes as a
from .instruments import PerProvider, instruments_for, version

Attributes = dict[str, AttributeValue]

_EMPTY_CONTEXT = Context()
"""Parent of every root span: the driver task may have been started inside an application span, and a
rebalance an hour later is not part of that span's work."""

_LONG_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
"""Rebalances last from milliseconds (a static rejoin) to minutes (max.poll.interval.ms)."""
_SHORT_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
"""Commits and listener callbacks: milliseconds normally, seconds when something is wrong."""

_FAILURE_ERROR_TYPE = {
    FailureKind.TIMED_OUT: ErrorCode.REQUEST_TIMED_OUT.name,
    FailureKind.DISCONNECTED: ErrorCode.NETWORK_EXCEPTION.name,
    FailureKind.UNSUPPORTED_VERSION: ErrorCode.UNSUPPORTED_VERSION.name,
    FailureKind.INVALID_REQUEST: ErrorCode.INVALID_REQUEST.name,
}
"""A request with no answer is named by Kafka's own error for the condition."""

_NOT_FAILURES = frozenset({ErrorCode.NONE, ErrorCode.MEMBER_ID_REQUIRED})
"""JoinGroup answers that are steps of the protocol, not failures (KIP-394's second join)."""

_QUIET_EVENTS = frozenset({ev.PollCalled, ev.Tick})
"""Events that, without actions, change nothing the telemetry reports: skipped with one set lookup."""

_HEARTBEAT_OK = frozenset({ErrorCode.NONE, ErrorCode.REBALANCE_IN_PROGRESS})
"""The machine counts REBALANCE_IN_PROGRESS as a live heartbeat (as Java does); so do we."""


def error_type_of_code(code: int) -> str:
    """Kafka's name for an error code; unknown codes keep their number so they stay distinguishable."""
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"UNKNOWN_ERROR_CODE_{code}"


def error_type_of(error: BaseException) -> str:
    """``error.type`` for an exception: Kafka's error name when the broker said it, else the class."""
    if isinstance(error, BrokerError):
        return error.error_name
    cls = type(error)
    return f"{cls.__module__}.{cls.__qualname__}"


class _Instruments:
    """The instruments of one meter provider, shared by every observer that reports to it.

    Sharing matters for the observable gauges: an SDK keeps only the first callbacks registered under
    a name, so one gauge reports every live observer (each with its own attributes).
    """

    def __init__(self, meter: Meter) -> None:
        self.rebalances = meter.create_counter(
            a.METRIC_REBALANCES,
            unit="{rebalance}",
            description="Rebalances completed: the member held a generation and got into a new one",
        )
        self.rebalance_failures = meter.create_counter(
            a.METRIC_REBALANCE_FAILURES,
            unit="{rebalance}",
            description="Joins and rebalances that ended without an assignment (fatal error)",
        )
        self.rebalance_duration = meter.create_histogram(
            a.METRIC_REBALANCE_DURATION,
            unit="s",
            description="From the start of a (re)join to the member becoming stable, by kind",
            explicit_bucket_boundaries_advisory=_LONG_BUCKETS,
        )
        self.heartbeat_failures = meter.create_counter(
            a.METRIC_HEARTBEAT_FAILURES, unit="{heartbeat}", description="Heartbeats answered with an error"
        )
        self.partitions_assigned = meter.create_counter(
            a.METRIC_PARTITIONS_ASSIGNED, unit="{partition}", description="Partitions assigned to the member"
        )
        self.partitions_revoked = meter.create_counter(
            a.METRIC_PARTITIONS_REVOKED, unit="{partition}", description="Partitions revoked, by reason"
        )
        self.partitions_lost = meter.create_counter(
            a.METRIC_PARTITIONS_LOST,
            unit="{partition}",
            description="Partitions lost without a clean revoke, by reason",
        )
        self.callback_duration = meter.create_histogram(
            a.METRIC_CALLBACK_DURATION,
            unit="s",
            description="Time the rebalance listener callbacks took, by callback",
            explicit_bucket_boundaries_advisory=_SHORT_BUCKETS,
        )
        self.fencings = meter.create_counter(
            a.METRIC_FENCINGS,
            unit="{fencing}",
            description="Times another member took this member's group.instance.id (FENCED_INSTANCE_ID)",
        )
        self.commit_duration = meter.create_histogram(
            a.METRIC_COMMIT_DURATION,
            unit="s",
            description="Offset commits from request to verdict, with error.type when they failed",
            explicit_bucket_boundaries_advisory=_SHORT_BUCKETS,
        )
        self._lock = threading.Lock()
        self._live: weakref.WeakSet[TelemetryObserver] = weakref.WeakSet()
        meter.create_observable_gauge(
            a.METRIC_TIME_SINCE_REBALANCE,
            callbacks=[self._time_since_rebalance],
            unit="s",
            description="Seconds since the last completed rebalance (absent before the first)",
        )
        meter.create_observable_gauge(
            a.METRIC_TIME_SINCE_HEARTBEAT,
            callbacks=[self._time_since_heartbeat],
            unit="s",
            description="Seconds since the coordinator last acknowledged a heartbeat",
        )

    def register(self, observer: TelemetryObserver) -> None:
        with self._lock:
            self._live.add(observer)

    def unregister(self, observer: TelemetryObserver) -> None:
        with self._lock:
            self._live.discard(observer)

    def _snapshot(self) -> list[TelemetryObserver]:
        # Gauge callbacks run on the SDK's export thread while observers come and go on the event loop.
        with self._lock:
            return list(self._live)

    def _time_since_rebalance(self, options: CallbackOptions) -> Iterable[Observation]:
        for observer in self._snapshot():
            value = observer.seconds_since_rebalance()
            if value is not None:
                yield Observation(value, observer.metric_attributes)

    def _time_since_heartbeat(self, options: CallbackOptions) -> Iterable[Observation]:
        for observer in self._snapshot():
            value = observer.seconds_since_heartbeat()
            if value is not None:
                yield Observation(value, observer.metric_attributes)


_instruments_for: PerProvider[_Instruments] = PerProvider(_Instruments)
"""The membership's instruments for a meter provider (None: the global one)."""


@dataclass(slots=True)
class _Episode:
    """One (re)join, from its first sign to STABLE or its end: the root span and what it collects."""

    span: Span
    started_at: float
    generation_before: int
    reason: str = ""
    rebalance_protocol: str | None = None
    join_attempts: int = 0
    leader: bool = False
    leadership_guessed: bool = False
    assignment_skipped: bool = False
    assigned: int = 0
    revoked: int = 0
    lost: int = 0


@dataclass(slots=True)
class _Request:
    """A JoinGroup, SyncGroup or FindCoordinator in flight, with its child span of the episode."""

    span: Span
    episode: _Episode


@dataclass(slots=True)
class _Commit:
    span: Span
    started_at: float
    commit_id: int | None
    offsets: Mapping[TopicPartition, OffsetAndMetadata]
    attributes: Attributes = field(default_factory=dict)
    episode: _Episode | None = None
    """The rebalance a release commit belongs to (its span's parent); None for application commits."""
    span_open: bool = True
    """False once the span ended before the answer (its rebalance ended first): the answer still
    counts in the commit metrics, but no span outlives its parent."""


class TelemetryObserver(MembershipObserver):
    """Spans and metrics of one consumer's membership, from opentelemetry-api only.

    ``tracer_provider``/``meter_provider`` default to the global ones, which are silent no-ops until
    the application installs an SDK. ``clock`` and ``wall_clock_ns`` exist so tests can pin time.
    """

    def __init__(
        self,
        *,
        client_id: str | None = None,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock_ns: Callable[[], int] = time.time_ns,
    ) -> None:
        self._client_id = client_id
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        """The providers given (None: the global ones); the consumer's record tracer uses the same."""
        self._tracer = trace.get_tracer(a.SCOPE, version(), tracer_provider=tracer_provider)
        self._instruments = _instruments_for(meter_provider)
        self._operation_duration = instruments_for(meter_provider).operation_duration
        self._clock = clock
        self._wall_clock_ns = wall_clock_ns
        self._anchor: tuple[int, float] | None = None
        self._bound = False
        self.span_attributes: Attributes = {}
        self.metric_attributes: Attributes = {}
        self._episode: _Episode | None = None
        self._requests: dict[int, _Request] = {}
        self._heartbeats: dict[int, float] = {}
        self._commits: dict[int, _Commit] = {}
        self._commit_requested_at: dict[int, float] = {}
        self._commit_callers: dict[int, Context] = {}
        self._group = ""
        self._coordinator: Attributes = {}
        """``server.address``/``server.port`` of the coordinator, as the last FindCoordinator answered."""
        self._callbacks: dict[int, tuple[str, float]] = {}
        self._last_stable_generation: int | None = None
        self._last_rebalance_at: float | None = None
        self._last_heartbeat_at: float | None = None
        self._pending_lost = 0
        self._ended = False
        self._fence_reported = False

    def __repr__(self) -> str:
        return f"<TelemetryObserver group={self.metric_attributes.get(a.MESSAGING_CONSUMER_GROUP_NAME)!r}>"

    # -- gauges -----------------------------------------------------------------------------------

    def seconds_since_rebalance(self) -> float | None:
        at = self._last_rebalance_at
        return None if at is None else max(0.0, self._clock() - at)

    def seconds_since_heartbeat(self) -> float | None:
        at = self._last_heartbeat_at
        return None if at is None else max(0.0, self._clock() - at)

    # -- the hook ---------------------------------------------------------------------------------

    def observe(self, event: ev.Event, produced: Sequence[act.Action], machine: MemberView) -> None:
        """Turn one machine step into spans and measurements."""
        if not produced and type(event) in _QUIET_EVENTS:
            return  # the per-poll path: nothing happened to the membership
        if not self._bound:
            self._bind(machine)
        fatal = next((x.error for x in produced if isinstance(x, act.Fatal)), None)
        newly_fenced = isinstance(fatal, FencedInstanceIdError) and not self._ended
        self._on_event(event, machine, newly_fenced)
        for milestone in machine.milestones:
            self._on_milestone(milestone, event.now)
        for action in produced:
            self._on_action(action, event, machine, newly_fenced)
        if newly_fenced and not self._fence_reported:
            # After every action: a fenced commit's verdict comes after the Fatal it caused.
            self._report_fence_alone(event.now)

    def _bind(self, machine: MemberView) -> None:
        """Identity attributes come from the machine's config: the only place that knows them all."""
        config = machine.config
        base: Attributes = {
            a.MESSAGING_SYSTEM: a.MESSAGING_SYSTEM_KAFKA,
            a.MESSAGING_CONSUMER_GROUP_NAME: config.group_id,
        }
        if self._client_id:
            base[a.MESSAGING_CLIENT_ID] = self._client_id
        if config.group_instance_id is not None:
            base[a.GROUP_INSTANCE_ID] = config.group_instance_id
        self.span_attributes = base
        self.metric_attributes = dict(base)
        self._group = config.group_id
        self._bound = True
        self._instruments.register(self)

    # -- time -------------------------------------------------------------------------------------

    def _ns(self, monotonic: float) -> int:
        if self._anchor is None:
            self._anchor = (self._wall_clock_ns(), self._clock())
        wall, mono = self._anchor
        return wall + round((monotonic - mono) * 1e9)

    def _name(self, operation: str) -> str:
        """``{operation} {group}``: the conventions' span name, the group being what a membership
        operation is performed against."""
        return a.span_name(operation, self._group)

    def _maybe_reanchor(self) -> None:
        """Follow wall-clock corrections, but only between spans so none mixes two anchors."""
        if self._episode is None and not self._requests and not self._commits:
            self._anchor = None

    # -- events -----------------------------------------------------------------------------------

    def _on_event(self, event: ev.Event, machine: MemberView, newly_fenced: bool) -> None:
        match event:
            case ev.Start():
                self._open_episode(event.now)
            case ev.FindCoordinatorResponse():
                if event.error_code == ErrorCode.NONE and event.host:
                    self._coordinator = {a.SERVER_ADDRESS: event.host}
                    if event.port is not None:
                        self._coordinator[a.SERVER_PORT] = event.port
                request = self._requests.pop(event.token.request_id, None)
                if request is not None:
                    self._end_request(request, event.now, event.error_code, {})
            case ev.JoinGroupResponse():
                request = self._requests.pop(event.token.request_id, None)
                if request is not None:
                    extra: Attributes = {}
                    if event.member_id:
                        extra[a.MEMBER_ID] = event.member_id
                    if event.error_code == ErrorCode.NONE:
                        extra[a.GENERATION] = event.generation
                        extra[a.LEADER] = event.leader_id == event.member_id
                        extra[a.ASSIGNMENT_SKIPPED] = event.skip_assignment
                        if event.protocol_name:
                            extra[a.PROTOCOL_NAME] = event.protocol_name
                    self._end_request(request, event.now, event.error_code, extra, newly_fenced)
            case ev.SyncGroupResponse():
                request = self._requests.pop(event.token.request_id, None)
                if request is not None:
                    self._end_request(request, event.now, event.error_code, {}, newly_fenced)
            case ev.HeartbeatResponse():
                self._on_heartbeat_answer(event.token.request_id, event.now, event.error_code, newly_fenced)
            case ev.ConsumerGroupHeartbeatResponse():
                request = self._requests.pop(event.token.request_id, None)
                if request is None:
                    self._on_heartbeat_answer(
                        event.token.request_id, event.now, event.error_code, newly_fenced
                    )
                else:
                    ok = event.error_code == ErrorCode.NONE
                    extra = {a.GENERATION: event.member_epoch} if ok else {}
                    self._end_request(request, event.now, event.error_code, extra, newly_fenced)
            case ev.RequestFailed():
                rid = event.token.request_id
                request = self._requests.pop(rid, None)
                if request is not None:
                    self._end_request(
                        request, event.now, None, {}, error_type=_FAILURE_ERROR_TYPE[event.kind]
                    )
                elif rid in self._heartbeats:
                    self._on_heartbeat_answer(rid, event.now, None, False, _FAILURE_ERROR_TYPE[event.kind])
            case ev.CommitRequested():
                self._commit_requested_at[event.commit_id] = event.now
                if isinstance(event.caller, Context):
                    self._commit_callers[event.commit_id] = event.caller
            case ev.CallbackFinished():
                started = self._callbacks.pop(event.callback_id, None)
                if started is not None:
                    kind, at = started
                    self._instruments.callback_duration.record(
                        max(0.0, event.now - at), {**self.metric_attributes, a.CALLBACK: kind}
                    )
            case _:
                pass

    def _end_request(
        self,
        request: _Request,
        now: float,
        code: int | None,
        extra: Attributes,
        fenced: bool = False,
        error_type: str | None = None,
    ) -> None:
        span = request.span
        if code is not None and code != ErrorCode.NONE:
            span.set_attribute(a.KAFKA_ERROR_CODE, code)
            if code not in _NOT_FAILURES:
                error_type = error_type_of_code(code)
        span.set_attributes(extra)
        if error_type is not None:
            span.set_attribute(a.ERROR_TYPE, error_type)
            span.set_status(Status(StatusCode.ERROR, error_type))
        if fenced and code == ErrorCode.FENCED_INSTANCE_ID:
            self._add_fenced_event(span, now)
        span.end(end_time=self._ns(now))

    def _add_fenced_event(self, span: Span, now: float) -> None:
        self._fence_reported = True
        span.add_event(
            a.EVENT_FENCED,
            {**self.span_attributes, a.ERROR_TYPE: ErrorCode.FENCED_INSTANCE_ID.name},
            timestamp=self._ns(now),
        )

    def _report_fence_alone(self, now: float) -> None:
        """A fencing no request span carried (not expected): a span of its own, so it is never lost."""
        self._maybe_reanchor()
        span = self._tracer.start_span(
            self._name(a.FENCED),
            context=_EMPTY_CONTEXT,
            attributes={**self.span_attributes, a.ERROR_TYPE: ErrorCode.FENCED_INSTANCE_ID.name},
            start_time=self._ns(now),
        )
        span.set_status(Status(StatusCode.ERROR, ErrorCode.FENCED_INSTANCE_ID.name))
        self._add_fenced_event(span, now)
        span.end(end_time=self._ns(now))

    def _on_heartbeat_answer(
        self, rid: int, now: float, code: int | None, fenced: bool, error_type: str | None = None
    ) -> None:
        sent_at = self._heartbeats.pop(rid, None)
        if sent_at is None:
            return
        if code is not None and code in _HEARTBEAT_OK:
            self._last_heartbeat_at = now
            return
        if code is not None:
            error_type = error_type_of_code(code)
        assert error_type is not None
        self._instruments.heartbeat_failures.add(1, {**self.metric_attributes, a.ERROR_TYPE: error_type})
        self._maybe_reanchor()
        span = self._tracer.start_span(
            self._name(a.OPERATION_HEARTBEAT),
            context=_EMPTY_CONTEXT,
            kind=SpanKind.CLIENT,
            attributes={
                **self.span_attributes,
                a.MESSAGING_OPERATION_NAME: a.OPERATION_HEARTBEAT,
                **self._coordinator,
                a.ERROR_TYPE: error_type,
            },
            start_time=self._ns(sent_at),
        )
        if code is not None:
            span.set_attribute(a.KAFKA_ERROR_CODE, code)
        span.set_status(Status(StatusCode.ERROR, error_type))
        if fenced and code == ErrorCode.FENCED_INSTANCE_ID:
            self._add_fenced_event(span, now)
        else:
            span.add_event(a.EVENT_HEARTBEAT_FAILED, {a.ERROR_TYPE: error_type}, timestamp=self._ns(now))
        span.end(end_time=self._ns(now))

    # -- milestones (the same under every protocol) -------------------------------------------------

    def _on_milestone(self, milestone: Milestone, now: float) -> None:
        match milestone:
            case JoinStarted():
                episode = self._ensure_episode(now)
                episode.join_attempts += 1
                if not episode.reason and milestone.reason:
                    episode.reason = milestone.reason
                if milestone.rebalance_protocol is not None:
                    episode.rebalance_protocol = milestone.rebalance_protocol
                    episode.span.set_attribute(a.REBALANCE_PROTOCOL, milestone.rebalance_protocol)
            case Joined():
                episode = self._ensure_episode(now)
                episode.leader = milestone.leader
                episode.assignment_skipped = milestone.assignment_skipped
                episode.leadership_guessed = milestone.leadership_guessed
            case _:
                pass

    # -- actions ----------------------------------------------------------------------------------

    def _on_action(
        self, action: act.Action, event: ev.Event, machine: MemberView, newly_fenced: bool
    ) -> None:
        now = event.now
        match action:
            case act.FindCoordinator():
                if self._episode is not None:
                    self._start_request(action.token.request_id, a.OPERATION_FIND_COORDINATOR, now, {})
            case act.SendJoinGroup():
                attrs: Attributes = {}
                if action.member_id:
                    attrs[a.MEMBER_ID] = action.member_id
                if action.reason:
                    attrs[a.REBALANCE_REASON] = action.reason
                self._start_request(action.token.request_id, a.OPERATION_JOIN_GROUP, now, attrs)
            case act.SendSyncGroup():
                self._ensure_episode(now)
                self._start_request(
                    action.token.request_id,
                    a.OPERATION_SYNC_GROUP,
                    now,
                    {a.MEMBER_ID: action.member_id, a.GENERATION: action.generation},
                )
            case act.PartitionsRevoked():
                self._callbacks[action.callback_id] = ("revoked", now)
                self._count_partitions(self._instruments.partitions_revoked, action.partitions, action.reason)
                if action.reason is ReleaseReason.REBALANCE:
                    self._ensure_episode(now).revoked += len(action.partitions)
            case act.PartitionsLost():
                self._callbacks[action.callback_id] = ("lost", now)
                self._count_partitions(self._instruments.partitions_lost, action.partitions, action.reason)
                if action.reason is ReleaseReason.MEMBERSHIP_LOST:
                    self._ensure_episode(now).lost += len(action.partitions)
                elif self._episode is not None:
                    self._episode.lost += len(action.partitions)
                elif action.reason is ReleaseReason.POLL_TIMEOUT:
                    # The rejoin waits for the next poll; the episode starts with its JoinGroup.
                    self._pending_lost += len(action.partitions)
            case act.PartitionsAssigned():
                self._callbacks[action.callback_id] = ("assigned", now)
                if action.partitions:
                    self._instruments.partitions_assigned.add(len(action.partitions), self.metric_attributes)
                episode = self._ensure_episode(now)
                episode.assigned = len(action.partitions)
                self._finish_episode_stable(episode, now, action.generation, machine)
            case act.SendHeartbeat():
                self._heartbeats[action.token.request_id] = now
            case act.SendConsumerGroupHeartbeat():
                # KIP-848: a join (or a release before one) is a request of the (re)join, like JoinGroup;
                # any other heartbeat is one, seen only when it fails; a leave is neither.
                if action.purpose in ("join", "release"):
                    attrs = {a.MEMBER_ID: action.member_id, a.GENERATION: action.member_epoch}
                    self._start_request(
                        action.token.request_id, a.OPERATION_CONSUMER_GROUP_HEARTBEAT, now, attrs
                    )
                elif action.purpose != "leave":
                    self._heartbeats[action.token.request_id] = now
            case act.SendOffsetCommit():
                self._start_commit(action, now)
            case act.CommitCompleted():
                self._end_commit(action, event, now, newly_fenced)
            case act.Fatal():
                if not self._ended:
                    self._ended = True
                    if newly_fenced:
                        self._instruments.fencings.add(1, self.metric_attributes)
                    self._finish_episode_failed(now, action.error)
            case act.Stopped():
                self._on_stopped(now)
            case _:
                pass

    def _count_partitions(
        self, counter: metrics.Counter, partitions: frozenset[TopicPartition], reason: ReleaseReason
    ) -> None:
        if partitions:
            counter.add(len(partitions), {**self.metric_attributes, a.RELEASE_REASON: reason.value})

    # -- the rebalance episode ---------------------------------------------------------------------

    def _open_episode(self, now: float) -> _Episode:
        self._maybe_reanchor()
        before = self._last_stable_generation
        span = self._tracer.start_span(
            self._name(a.KIND_JOIN if before is None else a.KIND_REBALANCE),
            context=_EMPTY_CONTEXT,
            kind=SpanKind.INTERNAL,
            attributes=self.span_attributes,
            start_time=self._ns(now),
        )
        episode = _Episode(span=span, started_at=now, generation_before=-1 if before is None else before)
        episode.lost, self._pending_lost = self._pending_lost, 0
        self._episode = episode
        return episode

    def _ensure_episode(self, now: float) -> _Episode:
        return self._episode if self._episode is not None else self._open_episode(now)

    def _start_request(self, rid: int, api: str, now: float, attrs: Attributes) -> None:
        """A request span of the (re)join: named after the API, sent to the coordinator (FindCoordinator
        goes to whichever broker the client picks, which the machine does not see: no server there)."""
        episode = self._ensure_episode(now)
        server = self._coordinator if api != a.OPERATION_FIND_COORDINATOR else {}
        span = self._tracer.start_span(
            self._name(api),
            context=trace.set_span_in_context(episode.span),
            kind=SpanKind.CLIENT,
            attributes={**self.span_attributes, a.MESSAGING_OPERATION_NAME: api, **server, **attrs},
            start_time=self._ns(now),
        )
        self._requests[rid] = _Request(span, episode)

    def _episode_attributes(self, episode: _Episode, machine: MemberView | None) -> Attributes:
        attrs: Attributes = {
            a.GENERATION_BEFORE: episode.generation_before,
            a.LEADER: episode.leader,
            a.LEADERSHIP_GUESSED: episode.leadership_guessed,
            a.ASSIGNMENT_SKIPPED: episode.assignment_skipped,
            a.JOIN_ATTEMPTS: episode.join_attempts,
            a.PARTITIONS_ASSIGNED: episode.assigned,
            a.PARTITIONS_REVOKED: episode.revoked,
            a.PARTITIONS_LOST: episode.lost,
        }
        if episode.reason:
            attrs[a.REBALANCE_REASON] = episode.reason
        if episode.rebalance_protocol is not None:
            attrs[a.REBALANCE_PROTOCOL] = episode.rebalance_protocol
        if machine is not None:
            if machine.member_id:
                attrs[a.MEMBER_ID] = machine.member_id
            if machine.protocol_name:
                attrs[a.PROTOCOL_NAME] = machine.protocol_name
        return attrs

    def _finish_episode_stable(
        self, episode: _Episode, now: float, generation: int, machine: MemberView
    ) -> None:
        before = self._last_stable_generation
        if before is None:
            kind = a.KIND_JOIN
        elif before != generation or episode.revoked:
            # KIP-848: a revoke-only reconciliation ends at the epoch it started at (the member's epoch
            # moves once the broker has the release), and it is still a rebalance
            kind = a.KIND_REBALANCE
        else:
            kind = a.KIND_REJOIN
        span = episode.span
        span.update_name(self._name(kind))
        span.set_attributes(self._episode_attributes(episode, machine))
        span.set_attributes(
            {a.REBALANCE_KIND: kind, a.REBALANCE_OUTCOME: a.OUTCOME_STABLE, a.GENERATION_AFTER: generation}
        )
        self._abandon_requests(episode, now)
        span.end(end_time=self._ns(now))
        self._episode = None
        self._last_stable_generation = generation
        self._instruments.rebalance_duration.record(
            max(0.0, now - episode.started_at), {**self.metric_attributes, a.REBALANCE_KIND: kind}
        )
        if kind == a.KIND_REBALANCE:
            self._instruments.rebalances.add(1, self.metric_attributes)
            self._last_rebalance_at = now

    def _finish_episode_failed(self, now: float, error: Exception) -> None:
        episode = self._episode
        if episode is None:
            return
        error_type = error_type_of(error)
        kind = a.KIND_JOIN if self._last_stable_generation is None else a.KIND_REBALANCE
        span = episode.span
        span.set_attributes(self._episode_attributes(episode, None))
        span.set_attributes(
            {a.REBALANCE_KIND: kind, a.REBALANCE_OUTCOME: a.OUTCOME_FAILED, a.ERROR_TYPE: error_type}
        )
        span.set_status(Status(StatusCode.ERROR, error_type))
        self._abandon_requests(episode, now)
        span.end(end_time=self._ns(now))
        self._episode = None
        self._instruments.rebalance_failures.add(
            1, {**self.metric_attributes, a.REBALANCE_KIND: kind, a.ERROR_TYPE: error_type}
        )

    def _abandon_requests(self, episode: _Episode, now: float) -> None:
        """Close children still waiting for an answer, so no span outlives its parent. A release
        commit answered after its rebalance ended (its connection's coordinator moved on, say) keeps
        its place for the commit metrics; only its span ends here."""
        for rid, request in list(self._requests.items()):
            if request.episode is episode:
                del self._requests[rid]
                request.span.set_attribute(a.REQUEST_OUTCOME, a.OUTCOME_ABANDONED)
                request.span.end(end_time=self._ns(now))
        for commit in self._commits.values():
            if commit.episode is episode and commit.span_open:
                commit.span_open = False
                commit.span.set_attribute(a.REQUEST_OUTCOME, a.OUTCOME_ABANDONED)
                commit.span.end(end_time=self._ns(now))

    def _on_stopped(self, now: float) -> None:
        episode = self._episode
        if episode is not None:
            kind = a.KIND_JOIN if self._last_stable_generation is None else a.KIND_REBALANCE
            episode.span.set_attributes(self._episode_attributes(episode, None))
            episode.span.set_attributes({a.REBALANCE_KIND: kind, a.REBALANCE_OUTCOME: a.OUTCOME_STOPPED})
            self._abandon_requests(episode, now)
            episode.span.end(end_time=self._ns(now))
            self._episode = None
        for commit in self._commits.values():
            if commit.span_open:
                commit.span.set_attribute(a.REQUEST_OUTCOME, a.OUTCOME_ABANDONED)
                commit.span.end(end_time=self._ns(now))
        self._commits.clear()
        self._commit_callers.clear()
        self._heartbeats.clear()
        self._callbacks.clear()
        self._instruments.unregister(self)

    # -- commits ----------------------------------------------------------------------------------

    def _commit_attributes(
        self,
        commit_id: int | None,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        generation: int | None = None,
        member_id: str | None = None,
    ) -> Attributes:
        attrs: Attributes = {
            **self.span_attributes,
            a.MESSAGING_OPERATION_NAME: a.OPERATION_COMMIT,
            a.MESSAGING_OPERATION_TYPE: a.OPERATION_TYPE_SETTLE,
            a.COMMIT_KIND: a.COMMIT_APPLICATION if commit_id is not None else a.COMMIT_RELEASE,
            a.COMMIT_PARTITIONS: len(offsets),
        }
        topics = {tp.topic for tp in offsets}
        if len(topics) == 1:
            attrs[a.MESSAGING_DESTINATION_NAME] = next(iter(topics))
            if len(offsets) == 1:
                attrs[a.MESSAGING_DESTINATION_PARTITION_ID] = str(next(iter(offsets)).partition)
        if generation is not None:  # sent to the coordinator (a commit refused locally was not)
            attrs[a.GENERATION] = generation
            attrs.update(self._coordinator)
        if member_id:
            attrs[a.MEMBER_ID] = member_id
        return attrs

    def _commit_span(self, attrs: Attributes, parent: Context, started: float) -> Span:
        return self._tracer.start_span(
            a.span_name(a.OPERATION_COMMIT, attrs.get(a.MESSAGING_DESTINATION_NAME)),  # type: ignore[arg-type]
            context=parent,
            kind=SpanKind.CLIENT,
            attributes=attrs,
            start_time=self._ns(started),
        )

    def _start_commit(self, action: act.SendOffsetCommit, now: float) -> None:
        started = now
        # A release commit belongs to the rebalance it precedes; an application commit to the span
        # current where commit() was awaited (none for auto-commit: a root).
        if action.commit_id is not None:
            started = self._commit_requested_at.pop(action.commit_id, now)
            parent = self._commit_callers.pop(action.commit_id, _EMPTY_CONTEXT)
        elif self._episode is not None:
            parent = trace.set_span_in_context(self._episode.span)
        else:
            parent = _EMPTY_CONTEXT
        if self._episode is None or action.commit_id is not None:
            self._maybe_reanchor()
        attrs = self._commit_attributes(action.commit_id, action.offsets, action.generation, action.member_id)
        span = self._commit_span(attrs, parent, started)
        self._commits[action.token.request_id] = _Commit(
            span,
            started,
            action.commit_id,
            action.offsets,
            attrs,
            episode=self._episode if action.commit_id is None else None,
        )

    def _find_commit(self, action: act.CommitCompleted, event: ev.Event) -> tuple[int, _Commit] | None:
        token = getattr(event, "token", None)
        if token is not None:
            commit = self._commits.get(token.request_id)
            if commit is not None and commit.commit_id == action.commit_id:
                return token.request_id, commit
        for rid, commit in self._commits.items():
            if commit.commit_id == action.commit_id and (
                action.commit_id is not None or commit.offsets == action.offsets
            ):
                return rid, commit
        return None

    def _end_commit(
        self, action: act.CommitCompleted, event: ev.Event, now: float, newly_fenced: bool
    ) -> None:
        found = self._find_commit(action, event)
        error_type = None if action.error is None else error_type_of(action.error)
        if found is None:
            # Refused before any request (rebalancing, not joined, fenced): still the caller's commit,
            # unless there was nothing to commit.
            if action.commit_id is None:
                return
            started = self._commit_requested_at.pop(action.commit_id, now)
            parent = self._commit_callers.pop(action.commit_id, _EMPTY_CONTEXT)
            if not action.offsets:
                return
            self._maybe_reanchor()
            attrs = self._commit_attributes(action.commit_id, action.offsets)
            span = self._commit_span(attrs, parent, started)
        else:
            rid, commit = found
            del self._commits[rid]
            started, attrs = commit.started_at, commit.attributes
            if not commit.span_open:  # its rebalance ended first and closed it: the metrics only
                self._record_commit(attrs, started, now, error_type)
                return
            span = commit.span
            token = getattr(event, "token", None)
            if (
                newly_fenced
                and isinstance(action.error, FencedInstanceIdError)
                and token is not None
                and token.request_id == rid
            ):
                self._add_fenced_event(span, now)
        if error_type is not None:
            span.set_attribute(a.ERROR_TYPE, error_type)
            span.set_status(Status(StatusCode.ERROR, error_type))
        span.end(end_time=self._ns(now))
        self._record_commit(attrs, started, now, error_type)

    def _record_commit(self, attrs: Attributes, started: float, now: float, error_type: str | None) -> None:
        """A commit's duration, in the membership's histogram and in the operation's."""
        metric_attrs = {**self.metric_attributes, a.COMMIT_KIND: attrs[a.COMMIT_KIND]}
        operation_attrs: Attributes = {
            **self.metric_attributes,
            a.MESSAGING_OPERATION_NAME: a.OPERATION_COMMIT,
        }
        for key in (a.MESSAGING_DESTINATION_NAME, a.SERVER_ADDRESS, a.SERVER_PORT):
            if key in attrs:
                operation_attrs[key] = attrs[key]
        if error_type is not None:
            metric_attrs[a.ERROR_TYPE] = error_type
            operation_attrs[a.ERROR_TYPE] = error_type
        duration = max(0.0, now - started)
        self._instruments.commit_duration.record(duration, metric_attrs)
        self._operation_duration.record(duration, operation_attrs)

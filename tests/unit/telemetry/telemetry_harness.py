"""A real MembershipMachine fed scripted coordinator answers, watched by a TelemetryObserver that reports
to the SDK's in-memory exporter and reader, on a fake clock (so every timestamp can be checked exactly)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricsData
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from staticconsumer.errors import ErrorCode
from staticconsumer.membership import (
    GroupProtocol,
    MembershipConfig,
    MembershipMachine,
    OffsetAndMetadata,
    RebalanceProtocol,
    TopicPartition,
)
from staticconsumer.membership import actions as act
from staticconsumer.membership import events as ev
from staticconsumer.telemetry import TelemetryObserver

A = TypeVar("A", bound=act.Action)

GROUP = "billing"
INSTANCE = "billing-0"
CLIENT_ID = "client-7"
MEMBER = "billing-0-AAAAAAAAAAAAAAAAAAAAAA"
PROTOCOLS = (GroupProtocol("range", b"t"),)
WALL0 = 1_700_000_000_000_000_000
"""What the fake wall clock says (ns) when the observer anchors at monotonic MONO0."""
MONO0 = 1000.0
T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)
COORDINATOR = ("kafka-2.internal", 9093)
"""Where FindCoordinator says the coordinator is (``server.address`` of the requests that go there)."""


def named(operation: str, destination: str = GROUP) -> str:
    """A span's name: ``{operation} {destination}`` (the group for membership, the topic for commits)."""
    return f"{operation} {destination}"


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


def one(actions: Sequence[act.Action], cls: type[A]) -> A:
    found = [x for x in actions if isinstance(x, cls)]
    assert len(found) == 1, f"expected exactly one {cls.__name__} in {actions!r}"
    return found[0]


class Telemetry:
    """The SDK side: spans and metrics as an exporter would see them."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def spans(self, name: str | None = None) -> list[ReadableSpan]:
        return [s for s in self.exporter.get_finished_spans() if name is None or s.name == name]

    def span(self, name: str) -> ReadableSpan:
        found = self.spans(name)
        assert len(found) == 1, [s.name for s in self.spans()]
        return found[0]

    def children(self, parent: ReadableSpan) -> list[ReadableSpan]:
        return [
            s for s in self.spans() if s.parent is not None and s.parent.span_id == parent.context.span_id
        ]

    def points(self, metric: str) -> list[Any]:
        data: MetricsData | None = self.reader.get_metrics_data()
        if data is None:
            return []
        return [
            point
            for resource in data.resource_metrics
            for scope in resource.scope_metrics
            for m in scope.metrics
            if m.name == metric
            for point in m.data.data_points
        ]

    def total(self, metric: str, **attributes: Any) -> float:
        """Sum of a counter's points whose attributes include ``attributes`` (dots spelled as __)."""
        wanted = {k.replace("__", "."): v for k, v in attributes.items()}
        return sum(
            p.value for p in self.points(metric) if all(p.attributes.get(k) == v for k, v in wanted.items())
        )


class Member:
    """One machine and its observer, fed events at a fake monotonic clock."""

    def __init__(
        self,
        telemetry: Telemetry,
        *,
        instance_id: str | None = INSTANCE,
        rebalance_protocol: RebalanceProtocol = RebalanceProtocol.EAGER,
        **overrides: Any,
    ) -> None:
        settings: dict[str, Any] = {
            "group_id": GROUP,
            "group_instance_id": instance_id,
            "decode_assignment": decode_assignment,
            "session_timeout_ms": 10_000,
            "heartbeat_interval_ms": 1_000,
            "max_poll_interval_ms": 60_000,
        }
        settings.update(overrides)
        self.m = MembershipMachine(MembershipConfig(**settings), rebalance_protocol)
        self.now = MONO0
        self.wall0 = WALL0
        self.observer = TelemetryObserver(
            client_id=CLIENT_ID,
            tracer_provider=telemetry.tracer_provider,
            meter_provider=telemetry.meter_provider,
            clock=lambda: self.now,
            wall_clock_ns=lambda: self.wall0 + round((self.now - MONO0) * 1e9),
        )

    def ns(self, monotonic: float) -> int:
        """Where the observer must put ``monotonic`` on the wall clock (the fake wall clock is exact)."""
        return self.wall0 + round((monotonic - MONO0) * 1e9)

    def feed(self, cls: type[ev.Event], **fields: Any) -> list[act.Action]:
        event = cls(now=self.now, **fields)
        out = self.m.handle(event)
        self.observer.observe(event, out, self.m)
        return out

    def at(self, when: float) -> Member:
        self.now = when
        return self

    # -- scripted answers

    def start_until_join(self) -> act.SendJoinGroup:
        lookup = one(self.feed(ev.Start, protocols=PROTOCOLS), act.FindCoordinator)
        self.now += 0.01
        host, port = COORDINATOR
        found = self.feed(ev.FindCoordinatorResponse, token=lookup.token, node_id=1, host=host, port=port)
        revoked = [a for a in found if isinstance(a, act.PartitionsRevoked)]
        if revoked:  # eager: the (empty) revoke callback before the first join, as aiokafka's
            found = self.feed(ev.CallbackFinished, callback_id=revoked[0].callback_id, offsets_to_commit={})
        return one(found, act.SendJoinGroup)

    def join_answer(
        self,
        join: act.SendJoinGroup,
        error: int = ErrorCode.NONE,
        *,
        generation: int = 1,
        member_id: str = MEMBER,
        leader_id: str = "other",
        skip_assignment: bool = False,
    ) -> list[act.Action]:
        return self.feed(
            ev.JoinGroupResponse,
            token=join.token,
            error_code=error,
            generation=generation,
            protocol_type="consumer",
            protocol_name="range",
            leader_id=leader_id,
            member_id=member_id,
            skip_assignment=skip_assignment,
        )

    def sync_answer(
        self, sync: act.SendSyncGroup, partitions: Iterable[TopicPartition], error: int = ErrorCode.NONE
    ) -> list[act.Action]:
        return self.feed(
            ev.SyncGroupResponse,
            token=sync.token,
            error_code=error,
            protocol_type="consumer",
            protocol_name="range",
            assignment=encode_assignment(partitions),
        )

    def finish(
        self,
        callback: act.PartitionsAssigned | act.PartitionsRevoked | act.PartitionsLost,
        offsets: dict[TopicPartition, int] | None = None,
    ) -> list[act.Action]:
        return self.feed(
            ev.CallbackFinished,
            callback_id=callback.callback_id,
            offsets_to_commit={tp: OffsetAndMetadata(o) for tp, o in (offsets or {}).items()},
        )

    def join_as_follower(
        self, partitions: Iterable[TopicPartition] = (T0, T1), generation: int = 1
    ) -> act.PartitionsAssigned:
        join = self.start_until_join()
        self.now += 0.1
        sync = one(self.join_answer(join, generation=generation), act.SendSyncGroup)
        self.now += 0.05
        assigned = one(self.sync_answer(sync, partitions), act.PartitionsAssigned)
        self.now += 0.01
        self.finish(assigned)
        return assigned

    def next_heartbeat(self) -> act.SendHeartbeat:
        deadline = self.m.next_deadline()
        assert deadline is not None
        self.now = deadline
        return one(self.feed(ev.Tick), act.SendHeartbeat)

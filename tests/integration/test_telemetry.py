"""Telemetry of real rebalances: the SDK's in-memory exporter and reader see what a join, a rebalance, a
static restart without a rebalance, and a fencing by a duplicate process record on a real broker."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from staticconsumer.consumer import StaticConsumer
from staticconsumer.errors import FencedInstanceIdError
from staticconsumer.telemetry import TelemetryObserver
from staticconsumer.telemetry import attributes as a
from staticconsumer.testing import EmbeddedKafka

from .support import FAST, eventually, until_assigned

pytestmark = pytest.mark.kafka

MEMBER = Path(__file__).with_name("member_process.py")


class Otel:
    """An SDK of our own (not the global one), so each test sees only its own consumers."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def observer(self, client_id: str) -> TelemetryObserver:
        return TelemetryObserver(
            client_id=client_id, tracer_provider=self.tracer_provider, meter_provider=self.meter_provider
        )

    def roots(self, instance: str) -> list[ReadableSpan]:
        """Rebalance/join/rejoin spans of one instance id, oldest first."""
        return [
            s
            for s in self.exporter.get_finished_spans()
            if s.parent is None
            and s.name.split(" ")[0] in ("join", "rebalance", "rejoin")
            and (s.attributes or {}).get(a.GROUP_INSTANCE_ID) == instance
        ]

    def children(self, parent: ReadableSpan) -> list[str]:
        """The names of a span's children, without their destination (``JoinGroup <group>``)."""
        return [
            s.name.split(" ")[0]
            for s in self.exporter.get_finished_spans()
            if s.parent is not None and s.parent.span_id == parent.context.span_id
        ]

    def children_spans(self, parent: ReadableSpan) -> list[ReadableSpan]:
        return [
            s
            for s in self.exporter.get_finished_spans()
            if s.parent is not None and s.parent.span_id == parent.context.span_id
        ]

    def total(self, metric: str, instance: str, **attributes: Any) -> float:
        data = self.reader.get_metrics_data()
        if data is None:
            return 0
        wanted = {a.GROUP_INSTANCE_ID: instance, **{k.replace("__", "."): v for k, v in attributes.items()}}
        return sum(
            getattr(point, "value", None) if hasattr(point, "value") else point.count
            for resource in data.resource_metrics
            for scope in resource.scope_metrics
            for m in scope.metrics
            if m.name == metric
            for point in m.data.data_points
            if all(point.attributes.get(k) == v for k, v in wanted.items())
        )


def consumer(
    kafka: EmbeddedKafka, topic: str, group: str, instance: str, otel: Otel, **extra: Any
) -> StaticConsumer:
    return StaticConsumer(
        topic,
        bootstrap_servers=kafka.bootstrap_servers,
        group_id=group,
        group_instance_id=instance,
        telemetry=otel.observer(f"client-{instance}"),
        **{**FAST, **extra},
    )


async def poll_until_error(member: StaticConsumer, within: float) -> None:
    """Poll like an application until a call raises (the test expects the fencing to surface)."""
    async with asyncio.timeout(within):
        while True:
            await member.getmany(timeout_ms=200)


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


async def test_a_join_and_the_rebalance_a_second_member_causes(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=2)
    otel = Otel()
    first = consumer(kafka_broker, topic, unique_group, "a", otel)
    async with first:
        await until_assigned(first)
        (join,) = otel.roots("a")
        assert join.name == f"join {unique_group}"
        j = attrs(join)
        assert j[a.MESSAGING_SYSTEM] == "kafka"
        assert j[a.MESSAGING_CONSUMER_GROUP_NAME] == unique_group
        assert j[a.MESSAGING_CLIENT_ID] == "client-a"
        assert (j[a.GENERATION_BEFORE], j[a.GENERATION_AFTER]) == (-1, first.generation)
        assert j[a.MEMBER_ID] == first.member_id
        assert j[a.LEADER] is True
        assert j[a.PARTITIONS_ASSIGNED] == 2
        assert otel.children(join) == ["FindCoordinator", "JoinGroup", "SyncGroup"]
        host, port = kafka_broker.bootstrap_servers.split(",")[0].rsplit(":", 1)
        for request in otel.children_spans(join)[1:]:  # JoinGroup, SyncGroup: at the coordinator
            assert request.name == f"{attrs(request)[a.MESSAGING_OPERATION_NAME]} {unique_group}"
            assert (attrs(request)[a.SERVER_ADDRESS], attrs(request)[a.SERVER_PORT]) == (host, int(port))
        assert join.end_time is not None
        assert join.start_time is not None
        assert 0 < join.end_time - join.start_time < 10 * 10**9

        second = consumer(kafka_broker, topic, unique_group, "b", otel)
        async with second:
            await until_assigned(second)
            await eventually(lambda: len(first.assignment()) == 1, 20, "the first member gives one up")
            (rebalance,) = otel.roots("a")[1:]
            r = attrs(rebalance)
            assert rebalance.name == f"rebalance {unique_group}"
            assert r[a.REBALANCE_KIND] == "rebalance"
            assert r[a.REBALANCE_REASON] == "group is already rebalancing"
            assert (r[a.GENERATION_BEFORE], r[a.GENERATION_AFTER]) == (
                j[a.GENERATION_AFTER],
                first.generation,
            )
            assert r[a.GENERATION_AFTER] > r[a.GENERATION_BEFORE]
            assert (r[a.PARTITIONS_REVOKED], r[a.PARTITIONS_ASSIGNED]) == (2, 1)
            assert "JoinGroup" in otel.children(rebalance)
            assert "SyncGroup" in otel.children(rebalance)
            (joined,) = otel.roots("b")
            assert attrs(joined)[a.GENERATION_AFTER] == first.generation == second.generation
            assert attrs(joined)[a.LEADER] is False

            assert otel.total(a.METRIC_REBALANCES, "a") == 1
            assert otel.total(a.METRIC_REBALANCES, "b") == 0, "b's first join is a join"
            assert (
                otel.total(a.METRIC_REBALANCE_DURATION, "a", staticconsumer__rebalance__kind="rebalance") == 1
            )
            assert otel.total(a.METRIC_PARTITIONS_REVOKED, "a") == 2
            assert otel.total(a.METRIC_PARTITIONS_ASSIGNED, "a") == 3
            assert otel.total(a.METRIC_TIME_SINCE_REBALANCE, "a") < 30
            await asyncio.sleep(1.5)  # at least one heartbeat acknowledged since the rebalance
            assert otel.total(a.METRIC_TIME_SINCE_HEARTBEAT, "a") < 1.5


@pytest.mark.both_versions  # the old (3.9) and new (4.x) coordinators replace static members differently
async def test_a_static_restart_records_its_own_join_but_no_rebalance_anywhere(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=2)
    otel = Otel()
    stays = consumer(kafka_broker, topic, unique_group, "stays", otel)
    async with stays:
        await until_assigned(stays)
        restarts = consumer(kafka_broker, topic, unique_group, "restarts", otel)
        async with restarts:
            await until_assigned(restarts)
            await eventually(lambda: len(stays.assignment()) == 1, 20, "both members own a partition")
        generation, owned = stays.generation, stays.assignment()
        spans_of_stays = len(otel.roots("stays"))
        rebalances_of_stays = otel.total(a.METRIC_REBALANCES, "stays")

        again = consumer(kafka_broker, topic, unique_group, "restarts", otel)
        async with again:
            await until_assigned(again)
            assert again.generation == generation, "a static restart within the session: no rebalance"
            first_join, restart_join = otel.roots("restarts")
            assert restart_join.name == f"join {unique_group}"
            r = attrs(restart_join)
            assert (r[a.GENERATION_BEFORE], r[a.GENERATION_AFTER]) == (-1, generation)
            assert r[a.MEMBER_ID] != attrs(first_join)[a.MEMBER_ID], "the broker minted a new member id"
            assert r[a.ASSIGNMENT_SKIPPED] is r[a.LEADER], "a returning leader skips the assignment"
            assert r[a.PARTITIONS_ASSIGNED] == 1
            assert otel.children(restart_join)[-2:] == ["JoinGroup", "SyncGroup"]
            await asyncio.sleep(2.5)  # heartbeats of the member that stayed would see a rebalance by now
            assert stays.generation == generation
            assert stays.assignment() == owned
        assert len(otel.roots("stays")) == spans_of_stays, "the member that stayed recorded nothing"
        assert otel.total(a.METRIC_REBALANCES, "stays") == rebalances_of_stays
        assert otel.total(a.METRIC_REBALANCES, "restarts") == 0
        assert (
            otel.total(a.METRIC_REBALANCE_DURATION, "restarts", staticconsumer__rebalance__kind="join") == 2
        )


@pytest.mark.both_versions  # the old (3.9) and new (4.x) coordinators replace static members differently
async def test_a_fenced_member_records_the_fencing(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=2)
    otel = Otel()
    fenced = consumer(kafka_broker, topic, unique_group, "dup", otel)
    async with fenced:
        await until_assigned(fenced)
        duplicate = await asyncio.create_subprocess_exec(
            sys.executable,
            str(MEMBER),
            "--bootstrap",
            kafka_broker.bootstrap_servers,
            "--topic",
            topic,
            "--group",
            unique_group,
            "--instance",
            "dup",
            stdout=asyncio.subprocess.DEVNULL,
            cwd=Path.cwd(),
        )
        try:
            with pytest.raises(FencedInstanceIdError):
                await poll_until_error(fenced, within=40)
        finally:
            duplicate.kill()
            await duplicate.wait()

    fencings = [
        (span, event)
        for span in otel.exporter.get_finished_spans()
        for event in span.events
        if event.name == a.EVENT_FENCED
    ]
    assert len(fencings) == 1, [s.name for s in otel.exporter.get_finished_spans()]
    span, event = fencings[0]
    assert span.name in {f"{op} {unique_group}" for op in ("Heartbeat", "JoinGroup", "SyncGroup")} | {
        f"commit {topic}"
    }
    assert (event.attributes or {})[a.ERROR_TYPE] == "FENCED_INSTANCE_ID"
    assert (event.attributes or {})[a.GROUP_INSTANCE_ID] == "dup"
    assert attrs(span)[a.ERROR_TYPE] == "FENCED_INSTANCE_ID"
    assert otel.total(a.METRIC_FENCINGS, "dup") == 1
    assert otel.total(a.METRIC_PARTITIONS_LOST, "dup", staticconsumer__partitions__reason="fenced") == 2


async def test_the_consumer_protocol_records_its_join_heartbeats_and_reconciliation(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    """group_protocol=consumer on the real broker: the join span's requests are FindCoordinator and
    ConsumerGroupHeartbeat (named ``ConsumerGroupHeartbeat {group}``, at the coordinator), and a second
    member's arrival is a rebalance span on the first with what it revoked."""
    topic = create_topic(partitions=2)
    otel = Otel()

    def member(instance: str) -> StaticConsumer:
        return StaticConsumer(
            topic,
            bootstrap_servers=kafka_broker.bootstrap_servers,
            group_id=unique_group,
            group_instance_id=instance,
            group_protocol="consumer",
            telemetry=otel.observer(f"client-{instance}"),
        )

    first = member("a")
    async with first:
        await until_assigned(first)
        (join,) = otel.roots("a")
        assert join.name == f"join {unique_group}"
        j = attrs(join)
        assert (j[a.GENERATION_AFTER], j[a.PARTITIONS_ASSIGNED]) == (first.generation, 2)
        assert otel.children(join) == ["FindCoordinator", "ConsumerGroupHeartbeat"]
        beat = otel.children_spans(join)[1]
        host, port = kafka_broker.bootstrap_servers.split(",")[0].rsplit(":", 1)
        assert beat.name == f"ConsumerGroupHeartbeat {unique_group}"
        assert (attrs(beat)[a.SERVER_ADDRESS], attrs(beat)[a.SERVER_PORT]) == (host, int(port))
        assert attrs(beat)[a.MEMBER_ID] == first.member_id

        second = member("b")
        async with second:
            await until_assigned(second, within=60)  # the first releases at its next heartbeat (5 s)
            assert len(first.assignment()) == 1
            await eventually(lambda: len(otel.roots("a")) > 1, 10, "the first member's rebalance span ends")
            rebalances = otel.roots("a")[1:]
            assert len(rebalances) == 1, "the first member's reconciliation is one rebalance span"
            r = attrs(rebalances[0])
            assert rebalances[0].name == f"rebalance {unique_group}"
            assert (r[a.PARTITIONS_REVOKED], r[a.PARTITIONS_ASSIGNED]) == (1, 0)
            # the revoke comes at the member's epoch: it moves on once the broker has the release
            assert r[a.GENERATION_BEFORE] == j[a.GENERATION_AFTER]
            assert r[a.GENERATION_AFTER] >= r[a.GENERATION_BEFORE]
            assert otel.total(a.METRIC_PARTITIONS_REVOKED, "a") == 1

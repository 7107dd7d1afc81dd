"""A live aiokafka group moved pod by pod to StaticConsumer (only the class changes), and back, on a real
broker under a producer: at every step every partition is owned by someone and records keep being
consumed, every acknowledged record is consumed at least once, commits never go backwards, and each
step costs at most two rebalances. A pod that keeps a list sharing no protocol with the group is told
which protocols the group uses and which setting fixes it (docs/migrating.md)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.abc import ConsumerRebalanceListener

from staticconsumer import StaticConsumer
from staticconsumer.errors import InconsistentGroupProtocolError
from staticconsumer.testing import EmbeddedKafka
from staticconsumer.testing.ledger import CommitSampler, Ledger, LedgerProducer

from .support import describe_group

pytestmark = [pytest.mark.kafka, pytest.mark.both_versions]

PARTITIONS = 6
PODS = 3
Partition = tuple[str, int]


class CountingListener(ConsumerRebalanceListener):  # type: ignore[misc]
    """aiokafka's listener class, as the service had it; counts the assignments (one per rebalance)."""

    def __init__(self) -> None:
        self.assigned: list[float] = []

    def on_partitions_revoked(self, revoked: Any) -> None:
        pass

    def on_partitions_assigned(self, assigned: Any) -> None:
        self.assigned.append(time.monotonic())


class Pod:
    """One replica of the service: the same keywords and calls whichever consumer class it runs."""

    def __init__(
        self,
        cls: type[Any],
        name: str,
        bootstrap: str,
        group: str,
        topic: str,
        ledger: Ledger,
        *,
        static: bool,
    ) -> None:
        self.name = name
        self.kind = cls.__name__
        self.ledger = ledger
        options: dict[str, Any] = {
            "bootstrap_servers": bootstrap,
            "group_id": group,
            "session_timeout_ms": 6000,
            "heartbeat_interval_ms": 1000,
            "auto_offset_reset": "earliest",
            "auto_commit_interval_ms": 500,
        }
        if static:
            options["group_instance_id"] = name
        self.consumer = cls(**options)
        self.listener = CountingListener()
        self.consumer.subscribe([topic], listener=self.listener)
        self.last_delivery: dict[Partition, float] = {}
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> Pod:
        await self.consumer.start()
        self._task = asyncio.create_task(self._poll(), name=f"pod-{self.name}")
        return self

    async def _poll(self) -> None:
        while True:
            batch = await self.consumer.getmany(timeout_ms=100)
            now = time.monotonic()
            for tp, rows in batch.items():
                key = (tp.topic, tp.partition)
                self.last_delivery[key] = now
                self.ledger.processed(key, (r.offset for r in rows), self.name)

    def owned(self) -> set[Partition]:
        return {(tp.topic, tp.partition) for tp in self.consumer.assignment()}

    def failed(self) -> BaseException | None:
        if self._task is not None and self._task.done() and not self._task.cancelled():
            return self._task.exception()
        return None

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.consumer.stop()


async def until_every_partition_owned(pods: list[Pod], expected: set[Partition], within: float = 60) -> None:
    """Every partition owned exactly once, and so for a second (a rebalance settled)."""
    deadline = time.monotonic() + within
    settled_since: float | None = None
    while True:
        for pod in pods:
            assert pod.failed() is None, f"{pod.name} ({pod.kind}) failed: {pod.failed()!r}"
        flat = [p for pod in pods for p in pod.owned()]
        if sorted(flat) == sorted(expected):
            settled_since = settled_since or time.monotonic()
            if time.monotonic() - settled_since >= 1.0:
                return
        else:
            settled_since = None
        assert time.monotonic() < deadline, (
            f"not settled: {[(pod.name, sorted(pod.owned())) for pod in pods]}"
        )
        await asyncio.sleep(0.1)


async def until_consumed_after(
    pods: list[Pod], expected: set[Partition], since: float, within: float = 30
) -> None:
    """Records of every partition consumed by some pod after ``since``."""
    deadline = time.monotonic() + within
    while True:
        late = {
            p for p in expected if max((pod.last_delivery.get(p, 0.0) for pod in pods), default=0.0) <= since
        }
        if not late:
            return
        assert time.monotonic() < deadline, f"nothing consumed from {sorted(late)} since the step"
        await asyncio.sleep(0.1)


async def migrate(
    broker: EmbeddedKafka, topic: str, group: str, *, start_as: type[Any], move_to: type[Any], static: bool
) -> list[Pod]:
    """Run ``PODS`` pods of ``start_as`` under a producer, replace them one by one with ``move_to``;
    returns the final pods (stopped). Asserts the step guarantees and the ledger's verdict."""
    broker.create_topic(topic, PARTITIONS)
    bootstrap = broker.bootstrap_servers
    expected = {(topic, p) for p in range(PARTITIONS)}
    ledger = Ledger()
    producer = await LedgerProducer(bootstrap, topic, ledger, rate=100).start()
    commits = await CommitSampler(bootstrap, group, ledger, interval=0.25).start()

    def pod(cls: type[Any], index: int) -> Pod:
        return Pod(cls, f"pod-{index}", bootstrap, group, topic, ledger, static=static)

    pods = [pod(start_as, i) for i in range(PODS)]
    try:
        await pods[0].start()  # alone at first, so it leads (a leader keeps its role while it stays)
        await until_every_partition_owned(pods[:1], expected)
        for p in pods[1:]:
            await p.start()
        await until_every_partition_owned(pods, expected)
        for index in range(PODS):
            step_began = time.monotonic()
            await pods[index].stop()  # a rolling restart: the old pod goes, the new one comes up
            pods[index] = await pod(move_to, index).start()
            await until_every_partition_owned(pods, expected)
            settled = time.monotonic()
            await until_consumed_after(pods, expected, settled)
            # Dynamic: the old pod's LeaveGroup and the new pod's join (often merged into one); static:
            # the new pod takes the old one's place (no leave), its new protocol list rebalances once.
            rebalances = max(sum(1 for at in p.listener.assigned if at >= step_began) for p in pods)
            assert rebalances >= 1, "the new pod got an assignment"
            assert rebalances <= (1 if static else 2), f"step {index}: {rebalances} rebalances"
            if static and index == 0:
                # pod-0 formed the group and led it; its replacement takes its place as leader, so the
                # other client's followers read this leader's assignment (and it read their metadata)
                ours = [p for p in pods if isinstance(p.consumer, StaticConsumer)]
                assert any(p.consumer.is_leader for p in ours) == (move_to is StaticConsumer), "who leads"
            if static:
                described = await describe_group(bootstrap, group)
                assert sorted(m.group_instance_id or "" for m in described.members) == [
                    f"pod-{i}" for i in range(PODS)
                ], "the new pod took the old one's instance id, no member was added"

        described = await describe_group(bootstrap, group)
        await producer.stop()
        verdict = await ledger.until_all_processed(within=60)
        await asyncio.sleep(1.5)  # one more auto-commit round
        ledger.committed(await commits.sample())
        assert not verdict.lost, verdict.summary()
        ledger.assert_at_least_once()
        assert all(ledger.by_member[f"pod-{i}"] > 0 for i in range(PODS))
        return_protocol = described.protocol_data
    finally:
        await producer.stop()
        await commits.stop()
        for p in pods:
            with contextlib.suppress(Exception):
                await p.stop()
    # The last pod to move decides the group's protocol: ours only all together choose range (their
    # first preference); an aiokafka pod among them keeps the group on roundrobin, the one it knows.
    assert return_protocol == ("range" if move_to is StaticConsumer else "roundrobin")
    return pods


async def test_dynamic_aiokafka_group_moves_to_static_consumer_pod_by_pod(
    kafka_broker: EmbeddedKafka, unique_topic: str, unique_group: str
) -> None:
    await migrate(
        kafka_broker,
        unique_topic,
        unique_group,
        start_as=AIOKafkaConsumer,
        move_to=StaticConsumer,
        static=False,
    )


async def test_static_aiokafka_group_moves_to_static_consumer_keeping_instance_ids(
    kafka_broker: EmbeddedKafka, unique_topic: str, unique_group: str
) -> None:
    await migrate(
        kafka_broker,
        unique_topic,
        unique_group,
        start_as=AIOKafkaConsumer,
        move_to=StaticConsumer,
        static=True,
    )


async def test_static_consumer_group_moves_back_to_aiokafka_pod_by_pod(
    kafka_broker: EmbeddedKafka, unique_topic: str, unique_group: str
) -> None:
    await migrate(
        kafka_broker,
        unique_topic,
        unique_group,
        start_as=StaticConsumer,
        move_to=AIOKafkaConsumer,
        static=True,
    )


async def start_and_poll(consumer: StaticConsumer) -> None:
    """Start, then poll: the refusal may come from either, as the first join completes."""
    await consumer.start()
    await consumer.getmany(timeout_ms=20_000)


async def test_no_common_protocol_names_the_groups_protocol_ours_and_the_setting(
    kafka_broker: EmbeddedKafka, unique_topic: str, unique_group: str
) -> None:
    kafka_broker.create_topic(unique_topic, 2)
    bootstrap = kafka_broker.bootstrap_servers
    ledger = Ledger()
    running = await Pod(
        AIOKafkaConsumer, "pod-0", bootstrap, unique_group, unique_topic, ledger, static=False
    ).start()
    try:
        await until_every_partition_owned([running], {(unique_topic, 0), (unique_topic, 1)})
        moved = StaticConsumer(
            unique_topic,
            bootstrap_servers=bootstrap,
            group_id=unique_group,
            assignors=("range",),
            session_timeout_ms=6000,
            heartbeat_interval_ms=1000,
        )
        try:
            with pytest.raises(InconsistentGroupProtocolError) as raised:
                await start_and_poll(moved)
        finally:
            await moved.stop()
        message = str(raised.value)
        assert "This member offers range; the group uses protocol 'roundrobin' (1 member: " in message
        assert "assignors= (KAFKA_PARTITION_ASSIGNMENT_STRATEGY)" in message
        assert running.owned() == {(unique_topic, 0), (unique_topic, 1)}, "the live group was not disturbed"
    finally:
        await running.stop()

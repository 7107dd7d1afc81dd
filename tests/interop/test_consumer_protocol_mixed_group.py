"""Java KafkaConsumers on group.protocol=consumer (the oracle's PeerConsumer) and StaticConsumers on
group_protocol=consumer in one live KIP-848 group, on the real broker: members join one by one, static
members of both clients restart (a leave with epoch -2, then a rejoin at epoch 0), and one leaves for good.
Ownership is sampled every 100 ms from both sides: every partition is owned exactly once after each change,
and never by two members at the same moment."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

import pytest

from staticconsumer.admin import GroupAdmin
from staticconsumer.consumer import StaticConsumer
from staticconsumer.testing import EmbeddedKafka
from tests.interop.oracle import JavaPeerConsumer

pytestmark = [pytest.mark.kafka, pytest.mark.oracle]

PARTITIONS = 8
Partition = tuple[str, int]


class MixedGroup:
    """The members by name, polled and sampled on this loop."""

    def __init__(self, kafka: EmbeddedKafka, topic: str, group: str) -> None:
        self.kafka, self.topic, self.group = kafka, topic, group
        self.python: dict[str, StaticConsumer] = {}
        self.java: dict[str, JavaPeerConsumer] = {}
        self.samples = 0
        self.doubles: list[tuple[float, Partition, list[str]]] = []
        self.expected = {(topic, p) for p in range(PARTITIONS)}

    def owners(self) -> dict[Partition, list[str]]:
        owners: dict[Partition, list[str]] = {}
        for name, consumer in self.python.items():
            for tp in consumer.assignment():
                owners.setdefault((tp.topic, tp.partition), []).append(name)
        for name, peer in self.java.items():
            if peer.process.poll() is None:
                for tp in peer.assignment():
                    owners.setdefault(tp, []).append(name)
        return owners

    async def run(self) -> None:
        """Poll the Python members (they are alive only when polled) and sample ownership every 100 ms."""
        while True:
            for consumer in list(self.python.values()):
                with contextlib.suppress(Exception):
                    await consumer.getmany(timeout_ms=0)
            self.samples += 1
            for tp, who in self.owners().items():
                if len(who) > 1:
                    self.doubles.append((time.monotonic(), tp, who))
            await asyncio.sleep(0.1)

    async def start_python(self, name: str) -> None:
        consumer = StaticConsumer(
            self.topic,
            bootstrap_servers=self.kafka.bootstrap_servers,
            group_id=self.group,
            group_instance_id=name,
            group_protocol="consumer",
            auto_offset_reset="earliest",
        )
        await consumer.start()
        self.python[name] = consumer

    async def stop_python(self, name: str, *, leave_group: bool = False) -> None:
        await self.python.pop(name).stop(leave_group=leave_group)

    def start_java(self, name: str) -> None:
        self.java[name] = JavaPeerConsumer.start(
            self.kafka.version,
            bootstrap=self.kafka.bootstrap_servers,
            group=self.group,
            topics=self.topic,
            instance=name,
            protocol="consumer",
            auto_offset_reset="earliest",
        )

    async def stop_java(self, name: str) -> None:
        peer = self.java.pop(name)
        await asyncio.to_thread(peer.stop)

    async def settled(self, what: str, within: float = 120.0) -> dict[Partition, str]:
        """Until every partition has exactly one live owner and the broker agrees (Stable, reconciled)."""
        deadline = time.monotonic() + within
        async with GroupAdmin(bootstrap_servers=self.kafka.bootstrap_servers) as admin:
            while True:
                owners = self.owners()
                once = set(owners) == self.expected and all(len(w) == 1 for w in owners.values())
                if once:
                    group = await admin.describe_group(self.group)
                    live = [m for m in group.members if m.member_epoch != -2]
                    if (
                        group.state == "Stable"
                        and {m.group_instance_id for m in live} == set(self.python) | set(self.java)
                        and all(m.assignment == m.target_assignment for m in group.members)
                    ):
                        return {tp: who[0] for tp, who in owners.items()}
                if time.monotonic() > deadline:
                    raise AssertionError(f"not settled after {what}: {owners}")
                await asyncio.sleep(0.2)


async def test_java_and_python_consumer_protocol_members_never_own_a_partition_twice(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    if not kafka_broker.version.startswith("4."):
        pytest.fail(f"the consumer protocol needs Kafka 4, not {kafka_broker.version}")
    group = MixedGroup(kafka_broker, create_topic(partitions=PARTITIONS), unique_group)
    sampling = asyncio.create_task(group.run())
    try:
        group.start_java("java-0")
        await group.settled("java-0 joined")
        await group.start_python("python-0")
        await group.settled("python-0 joined")
        group.start_java("java-1")
        await group.settled("java-1 joined")
        await group.start_python("python-1")
        before = await group.settled("python-1 joined")

        # static restarts on both sides: each takes its own partitions back, nobody else moves
        for name in ("python-0", "java-1"):
            if name.startswith("python"):
                await group.stop_python(name)
                await group.start_python(name)
            else:
                await group.stop_java(name)
                group.start_java(name)
            after = await group.settled(f"{name} restarted")
            assert after == before, f"partitions moved when {name} restarted"

        # a leave for good hands the member's partitions to the others
        await group.stop_python("python-1", leave_group=True)
        after = await group.settled("python-1 left for good")
        assert "python-1" not in after.values()
        assert group.samples > 100
        assert group.doubles == [], f"a partition had two owners at once: {group.doubles[:5]}"
    finally:
        sampling.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sampling
        for name in list(group.python):
            await group.stop_python(name)
        for name in list(group.java):
            await group.stop_java(name)

"""Helpers for tests against the real broker: produce, describe a group, read committed offsets,
record what a consumer sends and what its listener sees."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient

from staticconsumer import _aiokafka
from staticconsumer.consumer import ConsumerRebalanceListener, StaticConsumer
from staticconsumer.membership import TopicPartition
from staticconsumer.protocol import (
    DescribedGroup,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    Message,
    Subscription,
)

FAST = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 1000, "auto_offset_reset": "earliest"}
"""Settings for tests: the shortest session timeout brokers accept by default, 1 s heartbeats."""


async def produce(bootstrap: str, topic: str, count: int, prefix: str = "k", start: int = 0) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        for i in range(start, start + count):
            await producer.send(topic, f"v{i}".encode(), key=f"{prefix}{i}".encode())
        await producer.flush()
    finally:
        await producer.stop()


async def to_coordinator(bootstrap: str, group: str, request: Message) -> Message:
    """Send one request to the group's coordinator through our own codec; returns the response."""
    client = _aiokafka.new_client(bootstrap_servers=bootstrap)
    await client.bootstrap()
    try:
        coordinator = (await _aiokafka.find_coordinator(client, group)).node_id
        return (await _aiokafka.send(client, coordinator, request)).response
    finally:
        await client.close()


def take_over_instance_id(bootstrap: str, group: str, instance_id: str, topic: str) -> asyncio.Task[Message]:
    """Another process takes ``instance_id``: a JoinGroup with it and no member id replaces the member
    that held it, whose next heartbeat is answered FENCED_INSTANCE_ID (a fatal error). The task is the
    takeover's JoinGroup, answered once that rebalance completes: cancel it when done."""
    return asyncio.create_task(
        to_coordinator(
            bootstrap,
            group,
            JoinGroupRequest(
                group_id=group,
                session_timeout_ms=FAST["session_timeout_ms"],
                rebalance_timeout_ms=10_000,
                member_id="",
                group_instance_id=instance_id,
                protocol_type="consumer",
                protocols=[JoinGroupRequestProtocol("range", Subscription([topic]).encode())],
            ),
        )
    )


async def poll_until_it_raises(consumer: StaticConsumer, within: float = 20) -> None:
    """getmany() until it raises (a fenced or failed member), at most ``within`` seconds."""
    async with asyncio.timeout(within):
        while True:
            await consumer.getmany(timeout_ms=200)


async def describe_group(bootstrap: str, group: str) -> DescribedGroup:
    """DescribeGroups v5 (with instance ids), at the coordinator."""
    response = await to_coordinator(bootstrap, group, DescribeGroupsRequest(groups=[group]))
    assert isinstance(response, DescribeGroupsResponse)
    return response.groups[0]


async def committed_offsets(bootstrap: str, group: str) -> dict[TopicPartition, int]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        offsets = await admin.list_consumer_group_offsets(group)
    finally:
        await admin.close()
    return {TopicPartition(tp.topic, tp.partition): meta.offset for tp, meta in offsets.items()}


@dataclass
class Sent:
    at: float
    api: str
    version: int
    message: Any


@dataclass
class RequestRecorder:
    """A request_hook that keeps every group request with its negotiated version."""

    sent: list[Sent] = field(default_factory=list)

    def __call__(self, api: str, version: int, message: Message) -> None:
        self.sent.append(Sent(time.monotonic(), api, version, message))

    def of(self, api: str) -> list[Sent]:
        return [s for s in self.sent if s.api == api]


@dataclass
class RecordingListener(ConsumerRebalanceListener):
    events: list[tuple[str, frozenset[TopicPartition], float]] = field(default_factory=list)

    def on_partitions_revoked(self, revoked: frozenset[TopicPartition]) -> None:
        self.events.append(("revoked", revoked, time.monotonic()))

    def on_partitions_assigned(self, assigned: frozenset[TopicPartition]) -> None:
        self.events.append(("assigned", assigned, time.monotonic()))

    def on_partitions_lost(self, lost: frozenset[TopicPartition]) -> None:
        self.events.append(("lost", lost, time.monotonic()))

    def kinds(self) -> list[str]:
        return [kind for kind, _, _ in self.events]


async def eventually(
    check: Callable[[], Awaitable[bool] | bool],
    within: float,
    what: str,
    context: Callable[[], str] | None = None,
) -> None:
    """Poll ``check`` until true; on timeout, fail naming ``what`` and whatever ``context`` says."""
    deadline = time.monotonic() + within
    while True:
        result = check()
        if isinstance(result, Awaitable):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            detail = f"; {context()}" if context is not None else ""
            raise AssertionError(f"not within {within}s: {what}{detail}")
        await asyncio.sleep(0.1)


async def consume(consumer: StaticConsumer, count: int, within: float = 30.0) -> list[Any]:
    """Poll until ``count`` records came back; returns them."""
    records: list[Any] = []
    deadline = time.monotonic() + within
    while len(records) < count:
        if time.monotonic() > deadline:
            raise AssertionError(f"consumed {len(records)} of {count} records within {within}s")
        batch = await consumer.getmany(timeout_ms=500)
        for rows in batch.values():
            records.extend(rows)
    return records


async def until_assigned(consumer: StaticConsumer, within: float = 30.0) -> None:
    """Poll (so the member counts as alive) until it owns partitions."""
    deadline = time.monotonic() + within
    while not consumer.assignment():
        if time.monotonic() > deadline:
            raise AssertionError(f"no assignment within {within}s (generation {consumer.generation})")
        await consumer.getmany(timeout_ms=200)

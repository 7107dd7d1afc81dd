"""StaticConsumers of a consumer-protocol (KIP-848) group on the real 4.x broker, changed from outside and
from inside: the CLI describes them (epochs, target assignment) and removes static members by instance id
(LeaveGroup on a consumer group), and subscribe()/unsubscribe() reach the broker in the next heartbeat."""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from staticconsumer.admin import GroupAdmin, GroupDescription
from staticconsumer.consumer import StaticConsumer
from staticconsumer.membership import TopicPartition
from staticconsumer.testing import EmbeddedKafka

from .support import RecordingListener, RequestRecorder, eventually

pytestmark = pytest.mark.kafka

FAST = {"group_protocol": "consumer", "auto_offset_reset": "earliest"}


async def _cli(kafka: EmbeddedKafka, *command: str) -> tuple[int, str, str]:
    """The CLI in its own process, without blocking the members' event loop."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "staticconsumer.cli",
        *command,
        "--bootstrap-server",
        kafka.bootstrap_servers,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def _poll_until(
    consumers: list[StaticConsumer], done: Callable[[], bool], within: float, what: str
) -> None:
    async def check() -> bool:
        await asyncio.gather(*(c.getmany(timeout_ms=100) for c in consumers))
        return done()

    await eventually(check, within, what)


async def _described(kafka: EmbeddedKafka, group: str) -> GroupDescription:
    async with GroupAdmin(bootstrap_servers=kafka.bootstrap_servers) as admin:
        return await admin.describe_group(group)


def _owned(member: dict[str, Any]) -> set[tuple[str, int]]:
    return {(topic, p) for topic, ps in member["assignment"].items() for p in ps}


async def test_the_cli_describes_and_removes_static_consumers_of_a_consumer_protocol_group(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=4)
    every = {TopicPartition(topic, p) for p in range(4)}
    listener = RecordingListener()
    wire = RequestRecorder()
    stays = StaticConsumer(
        topic,
        bootstrap_servers=kafka_broker.bootstrap_servers,
        group_id=unique_group,
        group_instance_id="pod-0",
        listener=listener,
        request_hook=wire,
        **FAST,
    )
    goes = StaticConsumer(
        topic,
        bootstrap_servers=kafka_broker.bootstrap_servers,
        group_id=unique_group,
        group_instance_id="pod-1",
        **FAST,
    )
    await stays.start()
    await goes.start()
    try:
        await _poll_until(
            [stays, goes],
            lambda: len(stays.assignment()) == 2 and len(goes.assignment()) == 2,
            60,
            "two members with two partitions each",
        )
        code, out, err = await _cli(kafka_broker, "describe", unique_group, "--json")
        assert code == 0, err
        described = json.loads(out)
        assert (described["group_type"], described["state"]) == ("consumer", "Stable")
        members = {m["group_instance_id"]: m for m in described["members"]}
        assert set(members) == {"pod-0", "pod-1"}
        for name, consumer in (("pod-0", stays), ("pod-1", goes)):
            member = members[name]
            assert member["member_id"] == consumer.member_id
            assert member["member_epoch"] == consumer.generation
            assert member["member_protocol"] == "consumer"
            assert member["subscription"] == [topic]
            assert member["target_assignment"] == member["assignment"]
            assert _owned(member) == {(tp.topic, tp.partition) for tp in consumer.assignment()}
        code, text, err = await _cli(kafka_broker, "describe", unique_group)
        assert code == 0, err
        assert "pod-0" in text
        assert "pod-1" in text

        # a stopped static member is kept with epoch -2 and its partitions; the CLI removes it at once
        held = goes.assignment()
        await goes.stop()
        described_after = await _described(kafka_broker, unique_group)
        gone = described_after.member("pod-1")
        assert gone is not None
        assert gone.member_epoch == -2
        assert {TopicPartition(t.topic, p) for t in gone.assignment for p in t.partitions} == held
        code, out, err = await _cli(
            kafka_broker,
            "remove-members",
            unique_group,
            "--instance-id",
            "pod-1",
            "--instance-id",
            "ghost",
            "--json",
        )
        assert code == 1, "one of the two was not a member"
        verdicts = {m["group_instance_id"]: m for m in json.loads(out)["members"]}
        assert verdicts["pod-1"]["removed"]
        assert verdicts["pod-1"]["error"] is None
        assert not verdicts["ghost"]["removed"]
        assert verdicts["ghost"]["error"] == "UNKNOWN_MEMBER_ID"
        await _poll_until([stays], lambda: stays.assignment() == every, 30, "pod-0 takes pod-1's partitions")
        assert [m.group_instance_id for m in (await _described(kafka_broker, unique_group)).members] == [
            "pod-0"
        ]

        # removing a live static member: its next heartbeat is refused, its partitions are lost, and it
        # joins again at epoch 0 with the same instance id and the same member id (the client's own)
        epoch = stays.generation
        member_id = stays.member_id
        heard = len(listener.events)
        code, out, err = await _cli(kafka_broker, "remove-members", unique_group, "--instance-id", "pod-0")
        assert code == 0, (out, err)
        await _poll_until(
            [stays],
            lambda: "lost" in listener.kinds()[heard:] and stays.assignment() == every,
            30,
            "pod-0 loses its partitions and gets them back",
        )
        beats = [s.message for s in wire.of("ConsumerGroupHeartbeatRequest")]
        rejoin = [b for b in beats if b.member_epoch == 0][-1]
        assert (rejoin.instance_id, rejoin.member_id) == ("pod-0", member_id)
        assert stays.generation > epoch
        assert listener.kinds()[heard:] == ["lost", "assigned"], listener.kinds()
    finally:
        await goes.stop()
        await stays.stop()


async def test_subscribe_and_unsubscribe_reach_the_broker_in_the_next_heartbeat(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    prefix = f"sub-{uuid.uuid4().hex[:8]}"
    first = create_topic(name=f"{prefix}-a", partitions=2)
    second = create_topic(name=f"{prefix}-b", partitions=2)
    wire = RequestRecorder()
    consumer = StaticConsumer(
        pattern=f"{prefix}-a.*",
        bootstrap_servers=kafka_broker.bootstrap_servers,
        group_id=unique_group,
        group_instance_id="pod-0",
        request_hook=wire,
        **FAST,
    )

    def owns(topic: str | None) -> Callable[[], bool]:
        wanted = set() if topic is None else {TopicPartition(topic, p) for p in range(2)}
        return lambda: consumer.assignment() == wanted

    async with consumer:
        await _poll_until([consumer], owns(first), 60, "the pattern's topic assigned")
        group = await _described(kafka_broker, unique_group)
        assert group.members[0].subscribed_pattern == f"{prefix}-a.*"

        # from a pattern to names: the regex must go, or the broker keeps assigning its topics too
        consumer.subscribe([second])
        await _poll_until([consumer], owns(second), 30, "only the named topic assigned")
        member = (await _described(kafka_broker, unique_group)).members[0]
        assert (member.subscription, member.subscribed_pattern) == ((second,), None)
        sent = wire.of("ConsumerGroupHeartbeatRequest")[-1].message
        changed = [
            s.message
            for s in wire.of("ConsumerGroupHeartbeatRequest")
            if s.message.subscribed_topic_names == [second]
        ]
        assert changed, sent
        assert changed[0].subscribed_topic_regex == "", sent

        # unsubscribe: still a member (static), owning nothing; subscribe again: assigned again
        consumer.unsubscribe()
        await _poll_until([consumer], owns(None), 30, "nothing owned after unsubscribe()")
        member = (await _described(kafka_broker, unique_group)).members[0]
        assert (member.group_instance_id, member.subscription, member.assignment) == ("pod-0", (), ())
        consumer.subscribe(pattern=f"{prefix}-a.*")
        await _poll_until([consumer], owns(first), 30, "the pattern's topic assigned again")

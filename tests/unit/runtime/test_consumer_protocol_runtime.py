"""The consumer protocol's runtime pieces without a broker: the ConsumerGroupHeartbeat and topic-id rows of
the request table, the refusal worded with the broker's release, the member id the client generates, and
the instance lock that tells a dead earlier run on this host from a live process."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from staticconsumer.errors import ConsumerProtocolUnsupportedError, ErrorCode
from staticconsumer.membership import IdPartitions, MembershipConfig, RequestToken, actions, events
from staticconsumer.protocol import (
    ConsumerGroupHeartbeatAssignment,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    MetadataRequest,
    MetadataResponse,
    MetadataResponseTopic,
    TopicIdPartitions,
    parse_uuid_text,
)
from staticconsumer.runtime.instance_lock import InstanceLock, lock_path
from staticconsumer.runtime.requests import REQUESTS
from staticconsumer.runtime.thread import new_member_id

CONFIG = MembershipConfig(group_id="g", decode_assignment=lambda data: [])
TOKEN = RequestToken(7, 3, "m")
T, U = uuid.UUID(int=1), uuid.UUID(int=2)
KAFKA_4_3 = {68: (0, 1), 3: (0, 13), 10: (0, 6), 1: (4, 18), 8: (2, 10), 35: (1, 5), 16: (0, 5)}


def _heartbeat(**fields: object) -> actions.SendConsumerGroupHeartbeat:
    values: dict[str, object] = {
        "token": TOKEN,
        "member_id": "m",
        "member_epoch": 3,
        "instance_id": "pod-0",
        "rack_id": None,
        "rebalance_timeout_ms": -1,
        "subscribed_topic_names": None,
        "subscribed_topic_regex": None,
        "server_assignor": None,
        "owned": None,
        "purpose": "heartbeat",
        "request_timeout_ms": 30_000,
    }
    values.update(fields)
    return actions.SendConsumerGroupHeartbeat(**values)  # type: ignore[arg-type]


def test_a_heartbeat_keeps_its_nulls_and_names_owned_partitions_by_topic_id() -> None:
    spec = REQUESTS[actions.SendConsumerGroupHeartbeat]
    partial = spec.build(_heartbeat(), 1, CONFIG)
    assert isinstance(partial, ConsumerGroupHeartbeatRequest)
    assert (partial.group_id, partial.member_id, partial.member_epoch, partial.instance_id) == (
        "g",
        "m",
        3,
        "pod-0",
    )
    assert (partial.subscribed_topic_names, partial.topic_partitions, partial.rebalance_timeout_ms) == (
        None,
        None,
        -1,
    )
    full = spec.build(
        _heartbeat(
            member_epoch=0,
            subscribed_topic_names=("a", "b"),
            subscribed_topic_regex=None,
            owned=(IdPartitions(T, (0, 2)),),
            rebalance_timeout_ms=300_000,
            server_assignor="range",
            rack_id="r1",
        ),
        1,
        CONFIG,
    )
    assert isinstance(full, ConsumerGroupHeartbeatRequest)
    assert full.subscribed_topic_names == ["a", "b"]
    assert full.topic_partitions == [TopicIdPartitions(topic_id=T, partitions=[0, 2])]
    assert (full.server_assignor, full.rack_id, full.rebalance_timeout_ms) == ("range", "r1", 300_000)
    assert ConsumerGroupHeartbeatRequest.decode(full.encode(1), 1) == full


def test_an_answer_becomes_the_machines_event_with_the_assignment_by_topic_id() -> None:
    spec = REQUESTS[actions.SendConsumerGroupHeartbeat]
    response = ConsumerGroupHeartbeatResponse(
        member_id="m",
        member_epoch=4,
        heartbeat_interval_ms=5000,
        assignment=ConsumerGroupHeartbeatAssignment([TopicIdPartitions(T, [1, 0])]),
    )
    event = spec.answer(_heartbeat(), response, 12.5)
    assert event == events.ConsumerGroupHeartbeatResponse(
        now=12.5,
        token=TOKEN,
        member_id="m",
        member_epoch=4,
        heartbeat_interval_ms=5000,
        assignment=(IdPartitions(T, (1, 0)),),
    )
    unchanged = spec.answer(_heartbeat(), ConsumerGroupHeartbeatResponse(member_epoch=4), 1.0)
    assert isinstance(unchanged, events.ConsumerGroupHeartbeatResponse)
    assert unchanged.assignment is None, "null: unchanged since the last heartbeat"


def test_a_broker_without_v1_is_refused_before_anything_is_built_and_a_refusal_names_its_release() -> None:
    spec = REQUESTS[actions.SendConsumerGroupHeartbeat]
    assert spec.check is not None
    assert spec.explain is not None
    with pytest.raises(ConsumerProtocolUnsupportedError) as raised:
        spec.check({68: (0, 0), 10: (0, 6), 16: (0, 5)}, 2)
    assert "broker 2" in str(raised.value)
    refused = spec.explain(
        events.ConsumerGroupHeartbeatResponse(now=1.0, token=TOKEN, error_code=ErrorCode.UNSUPPORTED_VERSION),
        KAFKA_4_3,
        1,
    )
    assert isinstance(refused, events.ConsumerGroupHeartbeatResponse)
    assert refused.error_message is not None
    assert "switched off" in refused.error_message
    assert "broker 1" in refused.error_message
    fine = events.ConsumerGroupHeartbeatResponse(now=1.0, token=TOKEN)
    assert spec.explain(fine, KAFKA_4_3, 1) is fine


def test_topic_ids_are_looked_up_by_id_and_only_known_ones_answered() -> None:
    spec = REQUESTS[actions.ResolveTopicIds]
    assert not spec.to_coordinator
    action = actions.ResolveTopicIds(token=TOKEN, topic_ids=frozenset({T, U}))
    by_id = spec.build(action, 12, CONFIG)
    assert isinstance(by_id, MetadataRequest)
    assert by_id.topics is not None
    assert {(t.topic_id, t.name) for t in by_id.topics} == {(T, None), (U, None)}
    assert not by_id.allow_auto_topic_creation
    every = spec.build(action, 10, CONFIG)
    assert isinstance(every, MetadataRequest)
    assert every.topics is None, "below v12 topics cannot be asked by id: every topic comes with its id"
    response = MetadataResponse(
        topics=[
            MetadataResponseTopic(name="t", topic_id=T),
            MetadataResponseTopic(error_code=ErrorCode.UNKNOWN_TOPIC_ID, name=None, topic_id=U),
            MetadataResponseTopic(name="other", topic_id=uuid.UUID(int=9)),
        ]
    )
    answered = spec.answer(action, response, 2.0)
    assert answered == events.TopicIdsResolved(now=2.0, token=TOKEN, names={T: "t"})


def test_member_ids_are_kafka_uuids_never_starting_with_a_dash() -> None:
    ids = {new_member_id() for _ in range(2000)}
    assert len(ids) == 2000
    for member_id in ids:
        assert len(member_id) == 22
        assert not member_id.startswith("-")
        parse_uuid_text(member_id)


def test_the_instance_lock_tells_a_dead_earlier_run_from_a_live_process(tmp_path: Path) -> None:
    identity = {"cluster": "k:9092", "group": "g", "instance_id": "pod-0", "directory": tmp_path}
    first = InstanceLock.acquire(member_id="A", **identity)  # type: ignore[arg-type]
    assert first.held
    assert first.evidence.previous_member_id is None
    assert first.evidence.live_holder is None
    # while it runs, another process would find it held, by this pid
    second = InstanceLock.acquire(member_id="B", **identity)  # type: ignore[arg-type]
    assert not second.held
    assert second.evidence.live_holder == f"pid {os.getpid()}"
    assert second.evidence.previous_member_id is None
    # once it ended (the kernel drops the lock of a dead process), the next run learns its member id
    first.release()
    third = InstanceLock.acquire(member_id="C", **identity)  # type: ignore[arg-type]
    assert third.held
    assert third.evidence.previous_member_id == "A"
    third.release()
    others = InstanceLock.acquire(member_id="D", **{**identity, "instance_id": "pod-1"})  # type: ignore[arg-type]
    assert others.evidence.previous_member_id is None, "one lock per instance id"
    others.release()
    assert lock_path(tmp_path, "k:9092", "g", "pod-0") != lock_path(tmp_path, "other:9092", "g", "pod-0")


def test_no_writable_directory_means_no_evidence_rather_than_an_error(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    lock = InstanceLock.acquire(cluster="k", group="g", instance_id="p", member_id="A", directory=blocked)
    assert not lock.held
    assert lock.evidence.previous_member_id is None
    assert lock.evidence.live_holder is None

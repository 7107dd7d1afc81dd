"""Regenerate the golden vectors in tests/data/golden from the Java oracle (kafka-clients' own classes).

    .venv/bin/python tests/interop/regenerate_golden.py [--kafka-version 4.3.1]

For every API, direction and version we implement, a handful of deterministic field sets (defaults,
a static member's typical values, edge values, large arrays, unknown tagged fields) are written in
Kafka's JSON form; Java encodes them (body, and header plus body) and decodes its own bytes back.
The files hold what Java produced; tests/unit/protocol/test_golden_vectors.py holds our codec to it
without a JVM, and tests/interop/test_golden_live.py checks the files still match the live oracle.
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from staticconsumer import protocol as p
from staticconsumer.protocol import APIS, Message
from staticconsumer.protocol.kafka_json import from_kafka_json, to_kafka_json

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "data" / "golden"
PAYLOADS_FILE = "ConsumerProtocol.json"

IID_249 = ("pod-" + "abcdefghij._-0123456789" * 11)[:249]
NON_ASCII = "grüppe-日本語-🎉"
LARGE = 130  # > 127 elements forces two-byte compact lengths
BIG_BLOB = bytes(range(256)) + b"\xff" * 44  # 300 bytes: multi-byte lengths
TAGS: tuple[tuple[int, bytes], ...] = ((0, b""), (7, b"\x01\x02\x03"), (1000, bytes(range(200))))

Builder = Callable[[int], dict[str, Message]]

TOPIC_A = uuid.UUID("4f5d8d3a-1c2b-4e6f-8a9b-0c1d2e3f4a5b")
TOPIC_B = uuid.UUID("00000000-0000-0000-0000-000000000002")
MAX_UUID = uuid.UUID(int=2**128 - 1)  # every byte 0xff: sign bits of both Java longs set


def topic_id_for(name: str) -> uuid.UUID:
    """A deterministic topic id per topic name, for the v10 (topic ids) variants of the offset cases."""
    return MAX_UUID if name == NON_ASCII else uuid.uuid5(TOPIC_A, name)


def _topics_by_id(message: Any) -> Any:
    """OffsetCommit/OffsetFetch v10 name topics by id only: every topic struct loses its name (which v10
    cannot carry) and gets its id, so the v9 cases carry over to v10."""
    if isinstance(message, list):
        return [_topics_by_id(item) for item in message]
    if not isinstance(message, msgspec.Struct):
        return message
    changes = {f: _topics_by_id(getattr(message, f)) for f in message.__struct_fields__}
    if "topic_id" in changes and "name" in changes:
        changes["topic_id"] = topic_id_for(changes["name"])
        changes["name"] = ""
    return msgspec.structs.replace(message, **changes)


def _by_id_from_v10(builder: Builder) -> Builder:
    def build(v: int) -> dict[str, Message]:
        built = builder(min(v, 9))
        return {name: _topics_by_id(m) for name, m in built.items()} if v >= 10 else built

    return build


def _on(condition: bool, value: Any, default: Any) -> Any:
    return value if condition else default


def join_group_request(v: int) -> dict[str, Message]:
    meta = p.Subscription(["orders", "payments"], None, [p.TopicPartitions("orders", [0, 2])], 4, "rack-a")
    protocols = [
        p.JoinGroupRequestProtocol("range", meta.encode()),
        p.JoinGroupRequestProtocol("cooperative-sticky", b""),
    ]
    return {
        "defaults": p.JoinGroupRequest(),
        "static": p.JoinGroupRequest(
            "orders-service",
            45000,
            _on(v >= 1, 300000, -1),
            "",
            _on(v >= 5, "pod-0", None),
            "consumer",
            protocols,
            _on(v >= 8, "rebalance failed due to 'MemberIdRequiredException'", None),
        ),
        "edge": p.JoinGroupRequest(
            NON_ASCII,
            -1,
            _on(v >= 1, 2**31 - 1, -1),
            IID_249 + "-" + "0" * 36,
            _on(v >= 5, IID_249, None),
            "",
            [p.JoinGroupRequestProtocol(NON_ASCII, BIG_BLOB)],
            _on(v >= 8, "é" * 255, None),
        ),
        "large": p.JoinGroupRequest(
            "g",
            6000,
            -1,
            "m",
            None,
            "consumer",
            [p.JoinGroupRequestProtocol(f"p{i}", bytes([i % 256])) for i in range(LARGE)],
            _on(v >= 8, "", None),
        ),
    }


def join_group_response(v: int) -> dict[str, Message]:
    members = [
        p.JoinGroupResponseMember(
            "pod-0-" + "a" * 36, _on(v >= 5, "pod-0", None), p.Subscription(["orders"]).encode()
        ),
        p.JoinGroupResponseMember("consumer-1-" + "b" * 36, None, b""),
    ]
    return {
        "defaults": p.JoinGroupResponse(),
        "leader": p.JoinGroupResponse(
            _on(v >= 2, 0, 0),
            0,
            7,
            _on(v >= 7, "consumer", None),
            "range",
            members[0].member_id,
            _on(v >= 9, True, False),
            members[0].member_id,
            members,
        ),
        "member_id_required": p.JoinGroupResponse(
            _on(v >= 2, 100, 0),
            79,
            -1,
            None,
            _on(v >= 7, None, ""),
            "",
            False,
            "consumer-1-" + "c" * 36,
            [],
        ),
        "edge": p.JoinGroupResponse(
            _on(v >= 2, 2**31 - 1, 0),
            -1,
            2**31 - 1,
            _on(v >= 7, "", None),
            NON_ASCII,
            NON_ASCII,
            False,
            IID_249,
            [p.JoinGroupResponseMember(IID_249, _on(v >= 5, IID_249, None), BIG_BLOB)],
        ),
        "large": p.JoinGroupResponse(
            0,
            0,
            1,
            None,
            "range",
            "m0",
            False,
            "m0",
            [
                p.JoinGroupResponseMember(
                    f"m{i}", _on(v >= 5, f"i{i}" if i % 2 else None, None), b"x" * (i % 3)
                )
                for i in range(LARGE)
            ],
        ),
    }


def sync_group_request(v: int) -> dict[str, Message]:
    assignment = p.Assignment([p.TopicPartitions("orders", [0, 1, 2])], None).encode()
    return {
        "defaults": p.SyncGroupRequest(),
        "leader": p.SyncGroupRequest(
            "orders-service",
            7,
            "pod-0-x",
            _on(v >= 3, "pod-0", None),
            _on(v >= 5, "consumer", None),
            _on(v >= 5, "range", None),
            [p.SyncGroupRequestAssignment("pod-0-x", assignment), p.SyncGroupRequestAssignment("m2", b"")],
        ),
        "edge": p.SyncGroupRequest(
            NON_ASCII,
            -1,
            IID_249,
            _on(v >= 3, IID_249, None),
            _on(v >= 5, "", None),
            _on(v >= 5, NON_ASCII, None),
            [],
        ),
        "large": p.SyncGroupRequest(
            "g",
            1,
            "m",
            None,
            None,
            None,
            [p.SyncGroupRequestAssignment(f"m{i}", bytes([i % 256]) * 3) for i in range(LARGE)],
        ),
    }


def sync_group_response(v: int) -> dict[str, Message]:
    return {
        "defaults": p.SyncGroupResponse(),
        "assigned": p.SyncGroupResponse(
            _on(v >= 1, 5, 0),
            0,
            _on(v >= 5, "consumer", None),
            _on(v >= 5, "range", None),
            p.Assignment([p.TopicPartitions("orders", [3])], b"ud").encode(),
        ),
        "fenced": p.SyncGroupResponse(0, 82, None, None, b""),
        "edge": p.SyncGroupResponse(
            _on(v >= 1, -1, 0), -1, _on(v >= 5, "", None), _on(v >= 5, NON_ASCII, None), BIG_BLOB
        ),
    }


def heartbeat_request(v: int) -> dict[str, Message]:
    return {
        "defaults": p.HeartbeatRequest(),
        "static": p.HeartbeatRequest("orders-service", 7, "pod-0-x", _on(v >= 3, "pod-0", None)),
        "edge": p.HeartbeatRequest(NON_ASCII, -(2**31), IID_249, _on(v >= 3, IID_249, None)),
        "empty_instance_id": p.HeartbeatRequest("g", 0, "", _on(v >= 3, "", None)),
    }


def heartbeat_response(v: int) -> dict[str, Message]:
    return {
        "defaults": p.HeartbeatResponse(),
        "rebalancing": p.HeartbeatResponse(_on(v >= 1, 12, 0), 27),
        "fenced": p.HeartbeatResponse(0, 82),
    }


def leave_group_request(v: int) -> dict[str, Message]:
    if v < 3:
        return {
            "empty_member": p.LeaveGroupRequest("", [p.MemberIdentity("")]),
            "dynamic": p.LeaveGroupRequest("orders-service", [p.MemberIdentity("consumer-1-" + "d" * 36)]),
            "edge": p.LeaveGroupRequest(NON_ASCII, [p.MemberIdentity(IID_249)]),
        }
    return {
        "defaults": p.LeaveGroupRequest(),
        "by_instance_id": p.LeaveGroupRequest(
            "orders-service",
            [
                p.MemberIdentity("", "pod-0", _on(v >= 5, "the consumer is being closed", None)),
                p.MemberIdentity("m1", None, None),
            ],
        ),
        "edge": p.LeaveGroupRequest(
            NON_ASCII, [p.MemberIdentity(NON_ASCII, IID_249, _on(v >= 5, "x" * 255, None))]
        ),
        "large": p.LeaveGroupRequest("g", [p.MemberIdentity(f"m{i}", f"i{i}", None) for i in range(LARGE)]),
    }


def leave_group_response(v: int) -> dict[str, Message]:
    cases: dict[str, Message] = {
        "defaults": p.LeaveGroupResponse(),
        "error": p.LeaveGroupResponse(_on(v >= 1, 3, 0), 16),
    }
    if v >= 3:
        cases["members"] = p.LeaveGroupResponse(
            0,
            0,
            [
                p.LeaveGroupMemberResponse("", "pod-0", 0),
                p.LeaveGroupMemberResponse("m1", None, 25),
                p.LeaveGroupMemberResponse(IID_249, IID_249, 82),
                p.LeaveGroupMemberResponse(NON_ASCII, "", 0),
            ],
        )
    return cases


def offset_commit_request(v: int) -> dict[str, Message]:
    def part(i: int, meta: str | None) -> p.OffsetCommitRequestPartition:
        return p.OffsetCommitRequestPartition(i, 1000 * i, _on(v >= 6, i % 5, -1), meta)

    return {
        "defaults": p.OffsetCommitRequest(),
        "static": p.OffsetCommitRequest(
            "orders-service",
            7,
            "pod-0-x",
            _on(v >= 7, "pod-0", None),
            _on(v <= 4, 86400000, -1),
            [
                p.OffsetCommitRequestTopic("orders", [part(0, ""), part(1, None), part(2, "meta")]),
                p.OffsetCommitRequestTopic("payments", []),
            ],
        ),
        "manual_assign": p.OffsetCommitRequest(
            "g", -1, "", None, -1, [p.OffsetCommitRequestTopic("t", [part(0, "")])]
        ),
        "edge": p.OffsetCommitRequest(
            NON_ASCII,
            -(2**31),
            IID_249,
            _on(v >= 7, IID_249, None),
            _on(v <= 4, 2**63 - 1, -1),
            [
                p.OffsetCommitRequestTopic(
                    NON_ASCII,
                    [
                        p.OffsetCommitRequestPartition(
                            2**31 - 1, 2**63 - 1, _on(v >= 6, -(2**31), -1), NON_ASCII
                        )
                    ],
                )
            ],
        ),
        "large": p.OffsetCommitRequest(
            "g", 1, "m", None, -1, [p.OffsetCommitRequestTopic("t", [part(i, "") for i in range(LARGE)])]
        ),
    }


def offset_commit_response(v: int) -> dict[str, Message]:
    return {
        "defaults": p.OffsetCommitResponse(),
        "mixed": p.OffsetCommitResponse(
            _on(v >= 3, 9, 0),
            [
                p.OffsetCommitResponseTopic(
                    "orders", [p.OffsetCommitResponsePartition(0, 0), p.OffsetCommitResponsePartition(1, 82)]
                ),
                p.OffsetCommitResponseTopic(NON_ASCII, []),
            ],
        ),
        "large": p.OffsetCommitResponse(
            0,
            [
                p.OffsetCommitResponseTopic(f"t{i}", [p.OffsetCommitResponsePartition(i, 0)])
                for i in range(LARGE)
            ],
        ),
    }


def offset_fetch_request(v: int) -> dict[str, Message]:
    topics = [p.OffsetFetchRequestTopic("orders", [0, 1, 2]), p.OffsetFetchRequestTopic(NON_ASCII, [])]
    if v <= 7:
        cases: dict[str, Message] = {
            "defaults": p.OffsetFetchRequest(),
            "topics": p.OffsetFetchRequest("orders-service", topics, [], _on(v >= 7, True, False)),
            "large": p.OffsetFetchRequest("g", [p.OffsetFetchRequestTopic("t", list(range(LARGE)))]),
        }
        if v >= 2:
            cases["all_topics"] = p.OffsetFetchRequest(NON_ASCII, None)
        return cases
    return {
        "defaults": p.OffsetFetchRequest(),
        "groups": p.OffsetFetchRequest(
            "",
            [],
            [
                p.OffsetFetchRequestGroup(
                    "orders-service", _on(v >= 9, "pod-0-x", None), _on(v >= 9, 7, -1), topics
                ),
                p.OffsetFetchRequestGroup(NON_ASCII, None, -1, None),
            ],
            True,
        ),
        "large": p.OffsetFetchRequest(
            "", [], [p.OffsetFetchRequestGroup(f"g{i}", None, -1, []) for i in range(LARGE)]
        ),
    }


def offset_fetch_response(v: int) -> dict[str, Message]:
    epoch = v >= 5

    def part(i: int, meta: str | None, error: int = 0) -> p.OffsetFetchResponsePartition:
        return p.OffsetFetchResponsePartition(i, 100 * i - 1, _on(epoch, i, -1), meta, error)

    topics = [p.OffsetFetchResponseTopic("orders", [part(0, ""), part(1, None), part(2, NON_ASCII, 88)])]
    if v <= 7:
        return {
            "defaults": p.OffsetFetchResponse(),
            "topics": p.OffsetFetchResponse(_on(v >= 3, 4, 0), topics, _on(v >= 2, 0, 0)),
            "group_error": p.OffsetFetchResponse(0, [], _on(v >= 2, 30, 0)),
            "large": p.OffsetFetchResponse(
                0, [p.OffsetFetchResponseTopic("t", [part(i, "") for i in range(LARGE)])]
            ),
        }
    return {
        "defaults": p.OffsetFetchResponse(),
        "groups": p.OffsetFetchResponse(
            4,
            [],
            0,
            [
                p.OffsetFetchResponseGroup("orders-service", topics, 0),
                p.OffsetFetchResponseGroup(NON_ASCII, [], 16),
            ],
        ),
        "large": p.OffsetFetchResponse(
            0, [], 0, [p.OffsetFetchResponseGroup(f"g{i}", [], 0) for i in range(LARGE)]
        ),
    }


def describe_groups_request(v: int) -> dict[str, Message]:
    return {
        "defaults": p.DescribeGroupsRequest(),
        "groups": p.DescribeGroupsRequest(["orders-service", NON_ASCII, ""], _on(v >= 3, True, False)),
        "large": p.DescribeGroupsRequest([f"g{i}" for i in range(LARGE)]),
    }


def describe_groups_response(v: int) -> dict[str, Message]:
    members = [
        p.DescribedGroupMember(
            "pod-0-x",
            _on(v >= 4, "pod-0", None),
            "consumer-g-pod-0",
            "/10.0.0.1",
            p.Subscription(["orders"]).encode(),
            p.Assignment([p.TopicPartitions("orders", [0])]).encode(),
        ),
        p.DescribedGroupMember("m1", None, NON_ASCII, "", b"", b""),
        p.DescribedGroupMember(IID_249, _on(v >= 4, IID_249, None), "", "", BIG_BLOB, b""),
    ]
    ops = _on(v >= 3, 0b1010, p.AUTHORIZED_OPERATIONS_OMITTED)
    return {
        "defaults": p.DescribeGroupsResponse(),
        "stable": p.DescribeGroupsResponse(
            _on(v >= 1, 1, 0),
            [
                p.DescribedGroup(0, "orders-service", "Stable", "consumer", "range", members, ops),
                p.DescribedGroup(69, NON_ASCII, "Dead", "", "", [], p.AUTHORIZED_OPERATIONS_OMITTED),
            ],
        ),
        "large": p.DescribeGroupsResponse(
            0,
            [
                p.DescribedGroup(
                    0,
                    "g",
                    "Stable",
                    "consumer",
                    "range",
                    [p.DescribedGroupMember(f"m{i}", None, "c", "h", b"", b"") for i in range(LARGE)],
                )
            ],
        ),
    }


def find_coordinator_request(v: int) -> dict[str, Message]:
    if v <= 3:
        return {
            "defaults": p.FindCoordinatorRequest(),
            "group": p.FindCoordinatorRequest("orders-service"),
            "edge": p.FindCoordinatorRequest(NON_ASCII, _on(v >= 1, p.KEY_TYPE_TRANSACTION, 0)),
        }
    return {
        "defaults": p.FindCoordinatorRequest(),
        "groups": p.FindCoordinatorRequest("", 0, ["orders-service", NON_ASCII, ""]),
        "large": p.FindCoordinatorRequest("", 0, [f"g{i}" for i in range(LARGE)]),
    }


def find_coordinator_response(v: int) -> dict[str, Message]:
    if v <= 3:
        return {
            "defaults": p.FindCoordinatorResponse(),
            "found": p.FindCoordinatorResponse(
                _on(v >= 1, 0, 0), 0, _on(v >= 1, None, None), 1, "broker-1.kafka", 9092
            ),
            "error": p.FindCoordinatorResponse(0, 15, _on(v >= 1, NON_ASCII, None), -1, "", -1),
            "empty_message": p.FindCoordinatorResponse(0, 0, _on(v >= 1, "", None), 2, "h", 1),
        }
    return {
        "defaults": p.FindCoordinatorResponse(),
        "coordinators": p.FindCoordinatorResponse(
            3,
            coordinators=[
                p.Coordinator("orders-service", 1, "broker-1.kafka", 9092, 0, None),
                p.Coordinator(NON_ASCII, -1, "", -1, 15, "COORDINATOR_NOT_AVAILABLE"),
            ],
        ),
        "large": p.FindCoordinatorResponse(
            0, coordinators=[p.Coordinator(f"g{i}", i, "h", 9092) for i in range(LARGE)]
        ),
    }


def consumer_group_heartbeat_request(v: int) -> dict[str, Message]:
    owned = [p.TopicIdPartitions(TOPIC_A, [0, 2, 4]), p.TopicIdPartitions(TOPIC_B, [])]
    return {
        "defaults": p.ConsumerGroupHeartbeatRequest(),
        "static_join": p.ConsumerGroupHeartbeatRequest(
            "orders-service",
            _on(v >= 1, "9f3c1e2a-6b7d-4c8e-9a0b-1c2d3e4f5a6b", ""),
            p.JOIN_EPOCH,
            "pod-0",
            "rack-a",
            300000,
            ["orders", "payments"],
            None,
            "uniform",
            [],
        ),
        "acknowledge": p.ConsumerGroupHeartbeatRequest(
            "orders-service", "m-1", 7, None, None, -1, None, None, None, owned
        ),
        "static_leave": p.ConsumerGroupHeartbeatRequest(
            "orders-service", "m-1", p.STATIC_LEAVE_EPOCH, "pod-0", None, -1, None, None, None, None
        ),
        "regex": p.ConsumerGroupHeartbeatRequest(
            "g", "m", 0, None, None, 45000, [], _on(v >= 1, "orders-.*|" + NON_ASCII, None), "range", []
        ),
        "edge": p.ConsumerGroupHeartbeatRequest(
            NON_ASCII,
            IID_249,
            -(2**31),
            IID_249,
            "",
            2**31 - 1,
            [NON_ASCII, ""],
            _on(v >= 1, "", None),
            "",
            [p.TopicIdPartitions(MAX_UUID, [2**31 - 1, -1]), p.TopicIdPartitions(p.ZERO_UUID, [0])],
        ),
        "large": p.ConsumerGroupHeartbeatRequest(
            "g",
            "m",
            3,
            subscribed_topic_names=[f"t{i}" for i in range(LARGE)],
            topic_partitions=[
                p.TopicIdPartitions(uuid.UUID(int=i), list(range(i % 3))) for i in range(LARGE)
            ],
        ),
    }


def consumer_group_heartbeat_response(v: int) -> dict[str, Message]:
    assigned = p.ConsumerGroupHeartbeatAssignment(
        [p.TopicIdPartitions(TOPIC_A, [1, 3]), p.TopicIdPartitions(TOPIC_B, [0])]
    )
    return {
        "defaults": p.ConsumerGroupHeartbeatResponse(),
        "assigned": p.ConsumerGroupHeartbeatResponse(0, 0, None, "m-1", 12, 5000, assigned),
        "unchanged": p.ConsumerGroupHeartbeatResponse(0, 0, None, "m-1", 12, 5000, None),
        "empty_assignment": p.ConsumerGroupHeartbeatResponse(
            0, 0, None, "m-1", 1, 5000, p.ConsumerGroupHeartbeatAssignment([])
        ),
        "unreleased_instance_id": p.ConsumerGroupHeartbeatResponse(
            0, 111, "Static member pod-0 with instance id is not released yet.", None, 0, 0, None
        ),
        "edge": p.ConsumerGroupHeartbeatResponse(
            2**31 - 1,
            -1,
            NON_ASCII,
            IID_249,
            -2,
            -(2**31),
            p.ConsumerGroupHeartbeatAssignment([p.TopicIdPartitions(MAX_UUID, [2**31 - 1])]),
        ),
        "large": p.ConsumerGroupHeartbeatResponse(
            0,
            0,
            None,
            "m",
            1,
            1000,
            p.ConsumerGroupHeartbeatAssignment(
                [p.TopicIdPartitions(uuid.UUID(int=i + 1), [i]) for i in range(LARGE)]
            ),
        ),
    }


def consumer_group_describe_request(v: int) -> dict[str, Message]:
    return {
        "defaults": p.ConsumerGroupDescribeRequest(),
        "groups": p.ConsumerGroupDescribeRequest(["orders-service", NON_ASCII, ""], True),
        "large": p.ConsumerGroupDescribeRequest([f"g{i}" for i in range(LARGE)]),
    }


def consumer_group_describe_response(v: int) -> dict[str, Message]:
    current = p.DescribedAssignment([p.DescribedTopicPartitions(TOPIC_A, "orders", [0, 1])])
    target = p.DescribedAssignment(
        [
            p.DescribedTopicPartitions(TOPIC_A, "orders", [0]),
            p.DescribedTopicPartitions(TOPIC_B, NON_ASCII, []),
        ]
    )
    members = [
        p.ConsumerGroupDescribedMember(
            "9f3c1e2a-6b7d-4c8e-9a0b-1c2d3e4f5a6b",
            "pod-0",
            "rack-a",
            12,
            "consumer-orders-service-pod-0",
            "/10.0.0.1",
            ["orders"],
            None,
            current,
            target,
            _on(v >= 1, p.MEMBER_TYPE_CONSUMER, p.MEMBER_TYPE_UNKNOWN),
        ),
        p.ConsumerGroupDescribedMember(
            "m2", None, None, 11, NON_ASCII, "", [], "orders-.*", member_type=_on(v >= 1, 0, -1)
        ),
        p.ConsumerGroupDescribedMember(IID_249, IID_249, "", -2, "", "", [NON_ASCII]),
    ]
    return {
        "defaults": p.ConsumerGroupDescribeResponse(),
        "stable": p.ConsumerGroupDescribeResponse(
            3,
            [
                p.ConsumerGroupDescribedGroup(
                    0, None, "orders-service", "Stable", 12, 12, "uniform", members, 0b1010
                ),
                p.ConsumerGroupDescribedGroup(
                    69, "Group dead does not exist.", NON_ASCII, "Dead", -1, -1, "", []
                ),
            ],
        ),
        "large": p.ConsumerGroupDescribeResponse(
            0,
            [
                p.ConsumerGroupDescribedGroup(
                    0,
                    None,
                    "g",
                    "Reconciling",
                    2**31 - 1,
                    -(2**31),
                    "range",
                    [
                        p.ConsumerGroupDescribedMember(f"m{i}", f"i{i}" if i % 2 else None)
                        for i in range(LARGE)
                    ],
                )
            ],
        ),
    }


def metadata_request(v: int) -> dict[str, Message]:
    by_id = [p.MetadataRequestTopic(TOPIC_A, None), p.MetadataRequestTopic(MAX_UUID, None)]
    return {
        "defaults": p.MetadataRequest(),
        "all_topics": p.MetadataRequest(None, False),
        "by_name": p.MetadataRequest(
            [p.MetadataRequestTopic(name="orders"), p.MetadataRequestTopic(name=NON_ASCII)],
            False,
            _on(v <= 10, True, False),
            True,
        ),
        "by_id": p.MetadataRequest(by_id if v >= 12 else []),
        "large": p.MetadataRequest([p.MetadataRequestTopic(name=f"t{i}") for i in range(LARGE)]),
    }


def metadata_response(v: int) -> dict[str, Message]:
    partitions = [
        p.MetadataResponsePartition(0, 0, 1, 7, [1, 2, 3], [1, 2], []),
        p.MetadataResponsePartition(5, 1, -1, -1, [2], [], [2]),
    ]
    topics = [
        p.MetadataResponseTopic(0, "orders", TOPIC_A, False, partitions, 0b11000),
        p.MetadataResponseTopic(0, "__consumer_offsets", TOPIC_B, True, []),
        p.MetadataResponseTopic(3, NON_ASCII, p.ZERO_UUID, False, []),
    ]
    if v >= 12:
        topics.append(p.MetadataResponseTopic(100, None, MAX_UUID, False, []))
    return {
        "defaults": p.MetadataResponse(),
        "cluster": p.MetadataResponse(
            0,
            [
                p.MetadataResponseBroker(1, "broker-1.kafka", 9092, "rack-a"),
                p.MetadataResponseBroker(2, NON_ASCII, 9093, None),
            ],
            "kraft-cluster-id-AAAAAAA",
            1,
            topics,
            _on(v <= 10, 0b101, p.AUTHORIZED_OPERATIONS_OMITTED),
            _on(v >= 13, 0, 0),
        ),
        "error": p.MetadataResponse(7, [], None, -1, [], error_code=_on(v >= 13, 29, 0)),
        "large": p.MetadataResponse(
            0,
            [p.MetadataResponseBroker(i, f"b{i}", 9092 + i) for i in range(LARGE)],
            "c",
            0,
            [
                p.MetadataResponseTopic(
                    0,
                    "t",
                    TOPIC_A,
                    False,
                    [p.MetadataResponsePartition(0, i, i % 3, i, [i % 3], [i % 3]) for i in range(LARGE)],
                )
            ],
        ),
    }


BUILDERS: dict[type[Message], Builder] = {
    p.JoinGroupRequest: join_group_request,
    p.JoinGroupResponse: join_group_response,
    p.SyncGroupRequest: sync_group_request,
    p.SyncGroupResponse: sync_group_response,
    p.HeartbeatRequest: heartbeat_request,
    p.HeartbeatResponse: heartbeat_response,
    p.LeaveGroupRequest: leave_group_request,
    p.LeaveGroupResponse: leave_group_response,
    p.OffsetCommitRequest: _by_id_from_v10(offset_commit_request),
    p.OffsetCommitResponse: _by_id_from_v10(offset_commit_response),
    p.OffsetFetchRequest: _by_id_from_v10(offset_fetch_request),
    p.OffsetFetchResponse: _by_id_from_v10(offset_fetch_response),
    p.DescribeGroupsRequest: describe_groups_request,
    p.DescribeGroupsResponse: describe_groups_response,
    p.FindCoordinatorRequest: find_coordinator_request,
    p.FindCoordinatorResponse: find_coordinator_response,
    p.ConsumerGroupHeartbeatRequest: consumer_group_heartbeat_request,
    p.ConsumerGroupHeartbeatResponse: consumer_group_heartbeat_response,
    p.ConsumerGroupDescribeRequest: consumer_group_describe_request,
    p.ConsumerGroupDescribeResponse: consumer_group_describe_response,
    p.MetadataRequest: metadata_request,
    p.MetadataResponse: metadata_response,
}


def message_cases(
    supported: dict[str, tuple[int, int]] | None = None,
) -> Iterator[tuple[type[Message], int, str, Message]]:
    """Every (class, version, case name, value), plus a tagged-fields case for flexible versions.

    ``supported`` (the oracle's ApiVersions: name -> (oldest, latest)) leaves out versions an older
    kafka-clients does not know (ConsumerGroupHeartbeat v1, Metadata v13 or OffsetCommit v10 on 3.9)."""
    for spec in APIS.values():
        known = (supported or {}).get(spec.name, (spec.min_version, spec.max_version))
        for cls in (spec.request, spec.response):
            for version in range(max(spec.min_version, known[0]), min(spec.max_version, known[1]) + 1):
                built = BUILDERS[cls](version)
                for name, message in built.items():
                    yield cls, version, name, message
                if cls.is_flexible(version):
                    tagged = next(iter(built.values()))
                    yield cls, version, "unknown_tagged_fields", _with_tags(tagged)


def _with_tags(message: Message) -> Message:
    return msgspec.structs.replace(message, unknown_tagged_fields=TAGS)


def payload_cases() -> Iterator[tuple[str, int, str, p.Subscription | p.Assignment]]:
    for version in range(4):
        yield "ConsumerProtocolSubscription", version, "defaults", p.Subscription()
        yield (
            "ConsumerProtocolSubscription",
            version,
            "full",
            p.Subscription(
                ["orders", NON_ASCII],
                b"\x00\x01user",
                _on(
                    version >= 1, [p.TopicPartitions("orders", [0, 3]), p.TopicPartitions(NON_ASCII, [])], []
                ),
                _on(version >= 2, 12, -1),
                _on(version >= 3, "rack-a", None),
            ),
        )
        yield (
            "ConsumerProtocolSubscription",
            version,
            "empty_user_data",
            p.Subscription([f"t{i}" for i in range(LARGE)], b"", [], -1, _on(version >= 3, "", None)),
        )
        yield "ConsumerProtocolAssignment", version, "defaults", p.Assignment()
        yield (
            "ConsumerProtocolAssignment",
            version,
            "full",
            p.Assignment(
                [p.TopicPartitions("orders", list(range(LARGE))), p.TopicPartitions(NON_ASCII, [])], BIG_BLOB
            ),
        )


def generate(oracle: Any) -> dict[str, dict[str, Any]]:
    """All golden files as {file name: content}, produced by ``oracle`` (a JavaOracle)."""
    files: dict[str, dict[str, Any]] = {}
    for cls, version, name, message in message_cases(oracle.api_versions()):
        fields = to_kafka_json(message, version)
        correlation_id = 0x12345 + version
        client_id = None if name == "defaults" else "client-" + NON_ASCII
        body = oracle.encode(cls.API_NAME, cls.KIND, version, fields)
        with_header = oracle.encode_with_header(
            cls.API_NAME, cls.KIND, version, fields, correlation_id=correlation_id, client_id=client_id
        )
        echoed = oracle.decode(cls.API_NAME, cls.KIND, version, body)
        if from_kafka_json(cls, echoed, version) != message:
            raise SystemExit(f"Java did not read back {cls.__name__} v{version} {name}: {echoed}")
        entry = files.setdefault(f"{cls.API_NAME}.json", _header(oracle))
        entry["vectors"].append(
            {
                "kind": cls.KIND,
                "version": version,
                "case": name,
                "fields": fields,
                "body": body.hex(),
                "correlation_id": correlation_id,
                "client_id": client_id if cls.KIND == "request" else None,
                "with_header": with_header.hex(),
            }
        )
    for api, version, name, payload in payload_cases():
        fields = to_kafka_json(payload)
        body = oracle.encode(api, "payload", version, fields)
        entry = files.setdefault(PAYLOADS_FILE, _header(oracle))
        entry["vectors"].append(
            {
                "kind": "payload",
                "api": api,
                "version": version,
                "case": name,
                "fields": fields,
                "body": body.hex(),
            }
        )
    return files


def _header(oracle: Any) -> dict[str, Any]:
    return {
        "generator": "tests/interop/regenerate_golden.py",
        "kafka_clients": oracle.kafka_version,
        "vectors": [],
    }


def serialise(content: dict[str, Any]) -> str:
    """One vector per line: small files, readable diffs."""
    head = {k: v for k, v in content.items() if k != "vectors"}
    lines = [json.dumps(vector, ensure_ascii=False) for vector in content["vectors"]]
    opening = json.dumps(head, ensure_ascii=False)[:-1] + ', "vectors": [\n'
    return opening + ",\n".join(lines) + "\n]}\n"


def main(argv: list[str] | None = None) -> int:
    from staticconsumer.testing.broker import DEFAULT_VERSION
    from tests.interop.oracle import JavaOracle

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--kafka-version", default=DEFAULT_VERSION, help="kafka-clients version for the oracle"
    )
    parser.add_argument("--out", type=Path, default=GOLDEN_DIR)
    args = parser.parse_args(argv)
    with JavaOracle.start(args.kafka_version) as oracle:
        files = generate(oracle)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, content in sorted(files.items()):
        (args.out / name).write_text(serialise(content), encoding="utf-8")
        print(f"{name}: {len(content['vectors'])} vectors", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

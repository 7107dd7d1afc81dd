"""The oracle really is Kafka's own code: hand-checked bytes, Java's version guards, Java's assignors."""

from __future__ import annotations

import struct

import pytest

from staticconsumer.testing.errors import OracleError
from tests.interop.oracle import JavaOracle

pytestmark = pytest.mark.oracle


def test_heartbeat_v0_bytes_are_the_documented_layout(java_oracle: JavaOracle) -> None:
    body = java_oracle.encode("Heartbeat", "request", 0, {"groupId": "g", "generationId": 7, "memberId": "m"})
    assert body == struct.pack(">h1si", 1, b"g", 7) + struct.pack(">h1s", 1, b"m")


def test_flexible_request_header_v2_and_tagged_fields(java_oracle: JavaOracle) -> None:
    full = java_oracle.encode_with_header(
        "Heartbeat",
        "request",
        4,
        {
            "groupId": "g",
            "generationId": 1,
            "memberId": "m",
            "groupInstanceId": None,
            "_unknownTaggedFields": [{"tag": 1000, "data": "AQI="}],
        },
        correlation_id=9,
        client_id="c",
    )
    header = struct.pack(">hhih1s", 12, 4, 9, 1, b"c") + b"\x00"  # v2: client id then empty tag buffer
    assert full.startswith(header)
    body = full[len(header) :]
    # compact strings carry length+1; null compact string is 0; one tagged field: tag 1000 = varint e8 07
    assert body == b"\x02g" + struct.pack(">i", 1) + b"\x02m" + b"\x00" + b"\x01\xe8\x07\x02\x01\x02"
    decoded = java_oracle.decode("Heartbeat", "request", 4, body)
    assert decoded["groupId"] == "g"
    assert decoded["_unknownTaggedFields"] == [{"tag": 1000, "data": "AQI="}]


def test_java_refuses_an_instance_id_below_join_group_v5(java_oracle: JavaOracle) -> None:
    with pytest.raises(OracleError, match="groupInstanceId"):
        java_oracle.encode("JoinGroup", "request", 4, {"groupId": "g", "groupInstanceId": "pod-0"})


def test_java_range_assignor_orders_static_members_by_instance_id(java_oracle: JavaOracle) -> None:
    # Member ids sort the other way round; Java must follow the instance ids (a < b).
    result = java_oracle.assign(
        "range",
        members=[
            {"memberId": "z-member", "groupInstanceId": "a", "topics": ["t"]},
            {"memberId": "a-member", "groupInstanceId": "b", "topics": ["t"]},
        ],
        topics={"t": [{"partition": p} for p in range(3)]},
    )
    assignment = result["assignment"]
    assert assignment["z-member"]["partitions"] == [["t", 0], ["t", 1]]
    assert assignment["a-member"]["partitions"] == [["t", 2]]
    assert result["elapsedNanos"] > 0


def test_sticky_user_data_is_javas_v1_layout(java_oracle: JavaOracle) -> None:
    data = java_oracle.subscription_user_data("sticky", ["t"], [("t", 0)], generation=3)
    # V1: array of (topic, int32 array of partitions), then int32 generation
    assert data == struct.pack(">ih1si", 1, 1, b"t", 1) + struct.pack(">i", 0) + struct.pack(">i", 3)

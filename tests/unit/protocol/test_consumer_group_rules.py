"""KIP-848's messages and the topic-id versions: what each version refuses, drops, or reads leniently."""

from __future__ import annotations

import uuid

import pytest

from staticconsumer import _aiokafka as bridge
from staticconsumer import protocol as p
from staticconsumer.errors import EncodeError, UnsupportedVersionForFieldError

TOPIC = uuid.UUID("4f5d8d3a-1c2b-4e6f-8a9b-0c1d2e3f4a5b")


def test_a_regex_subscription_needs_heartbeat_v1() -> None:
    join = p.ConsumerGroupHeartbeatRequest("g", "m", 0, subscribed_topic_regex="orders-.*")
    with pytest.raises(UnsupportedVersionForFieldError) as info:
        join.encode(0)
    assert (info.value.field, info.value.min_version) == ("subscribed_topic_regex", 1)
    assert p.ConsumerGroupHeartbeatRequest.decode(join.encode(1), 1) == join


def test_heartbeat_nulls_and_empties_are_different_on_the_wire() -> None:
    unchanged = p.ConsumerGroupHeartbeatRequest("g", "m", 3)
    empty = p.ConsumerGroupHeartbeatRequest("g", "m", 3, subscribed_topic_names=[], topic_partitions=[])
    assert unchanged.encode(1) != empty.encode(1)
    assert p.ConsumerGroupHeartbeatRequest.decode(unchanged.encode(1), 1).topic_partitions is None
    assert p.ConsumerGroupHeartbeatRequest.decode(empty.encode(1), 1).topic_partitions == []


@pytest.mark.parametrize("marker", [b"\xff", b"\x80", b"\xfe"])
def test_any_negative_assignment_marker_reads_as_null_like_java(marker: bytes) -> None:
    body = bytearray(p.ConsumerGroupHeartbeatResponse(member_id="m", member_epoch=1).encode(1))
    at = len(body) - 2  # the marker sits before the top-level tag buffer
    assert body[at] == 0xFF
    body[at : at + 1] = marker
    assert p.ConsumerGroupHeartbeatResponse.decode(bytes(body), 1).assignment is None


def test_member_type_and_metadata_error_code_are_dropped_below_their_version() -> None:
    classic = p.ConsumerGroupDescribedMember("m", member_type=p.MEMBER_TYPE_CLASSIC)
    group = p.ConsumerGroupDescribedGroup(group_id="g", members=[classic])
    assert p.ConsumerGroupDescribeResponse(groups=[group]).encode(0) == p.ConsumerGroupDescribeResponse(
        groups=[p.ConsumerGroupDescribedGroup(group_id="g", members=[p.ConsumerGroupDescribedMember("m")])]
    ).encode(0)
    assert p.MetadataResponse(error_code=29).encode(12) == p.MetadataResponse().encode(12)


@pytest.mark.parametrize(
    ("message", "version", "field"),
    [
        (
            p.MetadataRequest(include_cluster_authorized_operations=True),
            11,
            "include_cluster_authorized_operations",
        ),
        (p.MetadataResponse(cluster_authorized_operations=0), 11, "cluster_authorized_operations"),
    ],
)
def test_cluster_authorized_operations_exist_only_up_to_v10(
    message: p.Message, version: int, field: str
) -> None:
    with pytest.raises(UnsupportedVersionForFieldError) as info:
        message.encode(version)
    assert (info.value.field, info.value.max_version) == (field, 10)
    message.encode(10)


def test_a_null_topic_name_needs_metadata_v12() -> None:
    unknown = p.MetadataResponse(topics=[p.MetadataResponseTopic(100, None, TOPIC)])
    with pytest.raises(EncodeError, match="nullable only from v12"):
        unknown.encode(11)
    assert p.MetadataResponse.decode(unknown.encode(12), 12) == unknown


def test_offset_v10_names_topics_by_id_and_drops_the_name() -> None:
    both = p.OffsetCommitRequest("g", 3, "m", topics=[p.OffsetCommitRequestTopic("orders", [], TOPIC)])
    by_id = p.OffsetCommitRequest("g", 3, "m", topics=[p.OffsetCommitRequestTopic("", [], TOPIC)])
    by_name = p.OffsetCommitRequest("g", 3, "m", topics=[p.OffsetCommitRequestTopic("orders", [])])
    assert both.encode(10) == by_id.encode(10)
    assert both.encode(9) == by_name.encode(9)
    assert p.OffsetCommitRequest.decode(both.encode(10), 10) == by_id
    fetch = p.OffsetFetchRequest(
        groups=[p.OffsetFetchRequestGroup("g", topics=[p.OffsetFetchRequestTopic("t", [0], TOPIC)])]
    )
    decoded = p.OffsetFetchRequest.decode(fetch.encode(10), 10)
    assert (decoded.groups[0].topics or [])[0] == p.OffsetFetchRequestTopic("", [0], TOPIC)


@pytest.mark.parametrize(
    "message",
    [
        p.OffsetCommitRequest("g", topics=[p.OffsetCommitRequestTopic("orders", [])]),
        p.OffsetFetchRequest(
            groups=[p.OffsetFetchRequestGroup("g", topics=[p.OffsetFetchRequestTopic("orders")])]
        ),
    ],
    ids=lambda m: type(m).__name__,
)
def test_v10_refuses_a_topic_without_its_id(message: p.Message) -> None:
    with pytest.raises(EncodeError, match="'orders' has no topic_id"):
        message.encode(10)
    message.encode(9)


def test_offset_apis_stop_at_v9_unless_asked_like_java() -> None:
    commit = p.APIS["OffsetCommit"]
    assert (commit.max_version, commit.default_max_version) == (10, 9)
    assert bridge.pick_version(commit, (2, 10)) == 9
    assert bridge.pick_version(commit, (2, 10), max_version=10) == 10
    assert bridge.negotiated_version({9: (1, 10)}, p.OffsetFetchRequest) == 9
    assert bridge.negotiated_version({9: (1, 10)}, p.OffsetFetchRequest, max_version=10) == 10
    heartbeat = p.APIS["ConsumerGroupHeartbeat"]
    assert heartbeat.default_max_version == heartbeat.max_version == 1
    assert bridge.negotiated_version({3: (0, 13)}, p.MetadataRequest) == 13
    assert bridge.negotiated_version({3: (0, 12)}, p.MetadataRequest) == 12


def test_kafka_uuid_text_form() -> None:
    assert p.uuid_text(p.ZERO_UUID) == "AAAAAAAAAAAAAAAAAAAAAA"
    assert p.uuid_text(uuid.UUID(int=2**128 - 1)) == "_____________________w"
    assert p.parse_uuid_text(p.uuid_text(TOPIC)) == TOPIC
    for bad in ("", "AAAA", "A" * 23, "!" * 22):
        with pytest.raises(ValueError, match="not a Kafka Uuid"):
            p.parse_uuid_text(bad)

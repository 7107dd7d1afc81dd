"""Version rules: what each version refuses to carry, and the errors that say so."""

from __future__ import annotations

import pytest

from staticconsumer import protocol as p
from staticconsumer.errors import (
    ApiVersionOutOfRangeError,
    DecodeError,
    EncodeError,
    UnsupportedVersionForFieldError,
)
from staticconsumer.protocol import Message

INSTANCE_ID = "pod-0"


@pytest.mark.parametrize(
    ("message", "first_version"),
    [
        (p.JoinGroupRequest("g", 10000, 30000, "", INSTANCE_ID, "consumer"), 5),
        (p.SyncGroupRequest("g", 1, "m", INSTANCE_ID), 3),
        (p.HeartbeatRequest("g", 1, "m", INSTANCE_ID), 3),
        (p.OffsetCommitRequest("g", 1, "m", INSTANCE_ID), 7),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, Message) else str(value),
)
def test_instance_id_refuses_versions_that_cannot_carry_it(message: Message, first_version: int) -> None:
    cls = type(message)
    for version in range(cls.MIN_VERSION, first_version):
        with pytest.raises(UnsupportedVersionForFieldError) as info:
            message.encode(version)
        error = info.value
        assert (error.field, error.version, error.min_version) == (
            "group_instance_id",
            version,
            first_version,
        )
        assert f"v{first_version} or later" in str(error)
        assert "static membership" in str(error)
    for version in range(first_version, cls.MAX_VERSION + 1):
        assert cls.decode(message.encode(version), version) == message


def test_without_instance_id_every_version_encodes() -> None:
    for cls in (p.JoinGroupRequest, p.SyncGroupRequest, p.HeartbeatRequest, p.OffsetCommitRequest):
        for version in range(cls.MIN_VERSION, cls.MAX_VERSION + 1):
            cls().encode(version)


def test_leave_group_below_v3_takes_exactly_one_member() -> None:
    one = p.LeaveGroupRequest("g", [p.MemberIdentity("m-1")])
    two = p.LeaveGroupRequest("g", [p.MemberIdentity("m-1"), p.MemberIdentity("m-2")])
    none = p.LeaveGroupRequest("g", [])
    for version in (0, 1, 2):
        assert p.LeaveGroupRequest.decode(one.encode(version), version) == one
        # v0-v2 is just GroupId then MemberId
        assert one.encode(version) == b"\x00\x01g\x00\x03m-1"
        for bad in (two, none):
            with pytest.raises(EncodeError, match="exactly one member"):
                bad.encode(version)
        with pytest.raises(UnsupportedVersionForFieldError):
            p.LeaveGroupRequest("g", [p.MemberIdentity("", INSTANCE_ID)]).encode(version)
    for version in (3, 4, 5):
        assert p.LeaveGroupRequest.decode(two.encode(version), version) == two
        assert p.LeaveGroupRequest.decode(none.encode(version), version) == none


def test_reason_is_cut_to_255_characters() -> None:
    long_reason = "é" * 300
    join = p.JoinGroupRequest("g", 10000, reason=long_reason)
    decoded = p.JoinGroupRequest.decode(join.encode(8), 8)
    assert decoded.reason == "é" * 255
    assert join.reason == long_reason  # the caller's object is not modified
    leave = p.LeaveGroupRequest("g", [p.MemberIdentity("m", None, long_reason)])
    decoded_leave = p.LeaveGroupRequest.decode(leave.encode(5), 5)
    assert decoded_leave.members[0].reason == "é" * 255
    exact = "r" * 255
    assert p.JoinGroupRequest.decode(p.JoinGroupRequest(reason=exact).encode(9), 9).reason == exact
    assert p.truncate_reason(None) is None


def test_reason_is_cut_in_utf16_units_like_java() -> None:
    """Java's substring(0, 255) counts UTF-16 units; half an emoji becomes '?' on the wire."""
    assert p.truncate_reason("a" * 253 + "🎉" + "b" * 5) == "a" * 253 + "🎉"
    assert p.truncate_reason("a" * 254 + "🎉" + "b") == "a" * 254 + "?"
    assert p.truncate_reason("🎉" * 200) == "🎉" * 127 + "?"
    short = "🎉" * 127
    assert p.truncate_reason(short) == short  # 254 units: untouched
    wire = p.JoinGroupRequest("g", reason="a" * 254 + "🎉").encode(9)
    assert p.JoinGroupRequest.decode(wire, 9).reason == "a" * 254 + "?"


def test_lone_surrogates_are_written_as_question_marks_like_java() -> None:
    """Java's String.getBytes(UTF_8) replaces an unpaired surrogate with '?'; so do we."""
    assert p.HeartbeatRequest("a\ud83c").encode(4) == p.HeartbeatRequest("a?").encode(4)
    assert p.HeartbeatRequest("a\ud83c").encode(0) == p.HeartbeatRequest("a?").encode(0)


def test_reason_is_dropped_silently_below_its_version() -> None:
    """Reason is ignorable in Kafka's spec: older versions just do not send it."""
    assert p.JoinGroupRequest("g", reason="why").encode(7) == p.JoinGroupRequest("g").encode(7)
    member = p.MemberIdentity("m", None, "why")
    assert p.LeaveGroupRequest("g", [member]).encode(4) == p.LeaveGroupRequest(
        "g", [p.MemberIdentity("m")]
    ).encode(4)


@pytest.mark.parametrize(
    ("message", "version", "field"),
    [
        (p.JoinGroupResponse(skip_assignment=True), 8, "skip_assignment"),
        (p.DescribeGroupsRequest(["g"], True), 2, "include_authorized_operations"),
        (
            p.DescribeGroupsResponse(groups=[p.DescribedGroup(authorized_operations=0)]),
            2,
            "authorized_operations",
        ),
        (p.OffsetFetchRequest("g", require_stable=True), 6, "require_stable"),
        (p.OffsetFetchRequest(groups=[p.OffsetFetchRequestGroup("g")]), 7, "groups"),
        (p.OffsetFetchRequest("g"), 8, "group_id"),
        (p.OffsetFetchResponse(groups=[p.OffsetFetchResponseGroup("g")]), 7, "groups"),
        (p.FindCoordinatorRequest("g", key_type=1), 0, "key_type"),
        (p.FindCoordinatorRequest(coordinator_keys=["g"]), 3, "coordinator_keys"),
        (p.FindCoordinatorRequest("g"), 4, "key"),
        (p.FindCoordinatorResponse(coordinators=[p.Coordinator("g")]), 3, "coordinators"),
        (p.LeaveGroupResponse(members=[p.LeaveGroupMemberResponse("m")]), 2, "members"),
    ],
)
def test_non_ignorable_fields_refuse_old_versions(message: Message, version: int, field: str) -> None:
    with pytest.raises(UnsupportedVersionForFieldError) as info:
        message.encode(version)
    assert info.value.field == field
    assert "static membership" not in str(info.value)


@pytest.mark.parametrize(
    ("message", "version"),
    [
        (p.JoinGroupResponse(protocol_name=None), 6),
        (p.OffsetFetchRequest("g", topics=None), 1),
        (p.FindCoordinatorResponse(node_id=1), 4),
        (p.HeartbeatRequest("g", unknown_tagged_fields=((1, b"x"),)), 3),
        (p.JoinGroupRequest(protocols=[p.JoinGroupRequestProtocol("r", b"", ((0, b""),))]), 5),
        (p.HeartbeatRequest("x" * 40000), 0),
        (p.HeartbeatRequest("g", 2**31), 0),
        (
            p.OffsetCommitRequest(
                topics=[p.OffsetCommitRequestTopic("t", [p.OffsetCommitRequestPartition(0, 2**63)])]
            ),
            9,
        ),
    ],
)
def test_values_that_cannot_be_encoded_raise_encode_error(message: Message, version: int) -> None:
    with pytest.raises(EncodeError):
        message.encode(version)


def test_versions_outside_the_range_are_refused() -> None:
    with pytest.raises(ApiVersionOutOfRangeError):
        p.JoinGroupRequest().encode(10)
    with pytest.raises(ApiVersionOutOfRangeError):
        p.OffsetCommitRequest().encode(1)
    with pytest.raises(ApiVersionOutOfRangeError):
        p.OffsetFetchResponse.decode(b"", 0)
    with pytest.raises(ApiVersionOutOfRangeError):
        p.Subscription().encode(4)


def test_null_in_non_nullable_fields_is_a_decode_error() -> None:
    # JoinGroupResponse v6: ProtocolName becomes nullable only in v7
    wire = bytearray(p.JoinGroupResponse(protocol_name="x").encode(6))
    assert wire[10:12] == b"\x02x"
    with pytest.raises(DecodeError):
        p.JoinGroupResponse.decode(bytes(wire[:10] + b"\x00" + wire[12:]), 6)
    assert (
        p.JoinGroupResponse.decode(bytes(p.JoinGroupResponse(protocol_name=None).encode(7)), 7).protocol_name
        is None
    )


def test_ignorable_fields_are_dropped_below_their_version() -> None:
    """Java drops ignorable fields; so do we (the member's instance id in JoinGroupResponse < v5)."""
    member = p.JoinGroupResponseMember("m", INSTANCE_ID, b"meta")
    old = p.JoinGroupResponse.decode(p.JoinGroupResponse(members=[member]).encode(4), 4)
    assert old.members == [p.JoinGroupResponseMember("m", None, b"meta")]
    assert p.OffsetCommitRequest("g", retention_time_ms=5).encode(5) == p.OffsetCommitRequest("g").encode(5)


def test_unknown_tagged_fields_survive_in_wire_order() -> None:
    tags = ((1000, b"\x01\x02"), (7, b""), (2**32 - 1, b"z" * 200))
    message = p.HeartbeatRequest("g", 3, "m", INSTANCE_ID, tags)
    wire = message.encode(4)
    assert p.HeartbeatRequest.decode(wire, 4).unknown_tagged_fields == tags
    nested = p.JoinGroupResponse(
        members=[p.JoinGroupResponseMember("m", None, b"", tags)], unknown_tagged_fields=tags
    )
    assert p.JoinGroupResponse.decode(nested.encode(9), 9) == nested


def test_sticky_user_data_is_the_assignors_codec_carried_in_a_subscription() -> None:
    """One copy of the sticky userData codec (in ``assignors``), carried intact by our Subscription."""
    import assignors.userdata as owner

    assert p.encode_sticky_user_data is owner.encode_sticky_user_data
    assert p.decode_cooperative_user_data is owner.decode_cooperative_user_data
    user_data = p.encode_sticky_user_data([("orders", 0), ("orders", 3), ("pay", 1)], 7)
    sub = p.Subscription(["orders", "pay"], user_data, [p.TopicPartitions("orders", [0, 3])], 7, None)
    decoded = p.Subscription.decode(sub.encode())
    assert decoded.user_data is not None
    assert p.decode_sticky_user_data(decoded.user_data) == p.StickyMemberData(
        (("orders", 0), ("orders", 3), ("pay", 1)), 7
    )
    cooperative = p.Subscription(["orders"], p.encode_cooperative_user_data(4)).encode()
    assert p.decode_cooperative_user_data(p.Subscription.decode(cooperative).user_data) == 4


def test_decoders_accept_any_bytes_like_input() -> None:
    message = p.SyncGroupRequest(
        "g", 3, "m", INSTANCE_ID, "consumer", "range", [p.SyncGroupRequestAssignment("m", b"a")]
    )
    wire = message.encode(5)
    for data in (wire, bytearray(wire), memoryview(wire)):
        assert p.SyncGroupRequest.decode(data, 5) == message
    assert p.Assignment.decode(memoryview(p.Assignment().encode())) == p.Assignment()

"""Every message, every version: decode(encode(m)) == m, and re-encoding gives the same bytes."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from protocol_strategies import ALL_MESSAGE_VERSIONS, ASSIGNMENT, STRATEGIES, SUBSCRIPTION, case_id

from staticconsumer import protocol as p
from staticconsumer.protocol import Message


@pytest.mark.parametrize("case", ALL_MESSAGE_VERSIONS, ids=case_id)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_round_trip(case: tuple[type[Message], int], data: st.DataObject) -> None:
    cls, version = case
    message = data.draw(STRATEGIES[cls](version))
    encoded = message.encode(version)
    decoded = cls.decode(encoded, version)
    assert decoded == message
    assert decoded.encode(version) == encoded


@pytest.mark.parametrize("case", ALL_MESSAGE_VERSIONS, ids=case_id)
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_round_trip_with_headers(case: tuple[type[Message], int], data: st.DataObject) -> None:
    cls, version = case
    message = data.draw(STRATEGIES[cls](version))
    correlation_id = data.draw(st.integers(0, 2**31 - 1))
    if cls.KIND == "request":
        client_id = data.draw(st.none() | st.text(max_size=10))
        wire = p.encode_request(message, version, correlation_id, client_id)
        header, offset = p.decode_request_header(wire, cls.is_flexible(version))
        assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (
            cls.API_KEY,
            version,
            correlation_id,
            client_id,
        )
        assert cls.decode(wire, version, offset) == message
    else:
        wire = p.encode_response(message, version, correlation_id)
        response_header, body = p.decode_response(cls, wire, version)
        assert response_header.correlation_id == correlation_id
        assert body == message


def test_header_flavours_follow_flexible_versions() -> None:
    """Request header v2/response header v1 exactly for flexible versions: one extra tag-count byte."""
    body = p.HeartbeatRequest("g", 1, "m")
    classic = p.encode_request(body, 3, 7, "c")
    flexible = p.encode_request(body, 4, 7, "c")
    assert classic[:4] == b"\x00\x0c\x00\x03"
    # header v2 keeps ClientId as a classic int16 string, then an empty tag buffer
    assert flexible[8:12] == b"\x00\x01c\x00"
    assert p.encode_response(p.HeartbeatResponse(), 4, 9)[:5] == b"\x00\x00\x00\x09\x00"
    assert p.encode_response(p.HeartbeatResponse(), 3, 9)[:4] == b"\x00\x00\x00\x09"
    assert len(p.encode_response(p.HeartbeatResponse(), 3, 9)) == 4 + 4 + 2


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sub=SUBSCRIPTION, version=st.integers(0, 3))
def test_subscription_round_trip(sub: p.Subscription, version: int) -> None:
    expected = p.Subscription(
        sub.topics,
        sub.user_data,
        sub.owned_partitions if version >= 1 else [],
        sub.generation_id if version >= 2 else -1,
        sub.rack_id if version >= 3 else None,
    )
    data = sub.encode(version)
    assert p.payload_version(data) == version
    assert p.Subscription.decode(data) == expected


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(assignment=ASSIGNMENT, version=st.integers(0, 3))
def test_assignment_round_trip(assignment: p.Assignment, version: int) -> None:
    assert p.Assignment.decode(assignment.encode(version)) == assignment


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sub=SUBSCRIPTION, future=st.integers(4, 2**15 - 1), extra=st.binary(max_size=16))
def test_newer_subscription_version_reads_as_v3(sub: p.Subscription, future: int, extra: bytes) -> None:
    """A v4+ payload is a v3 body followed by fields we do not know: read the v3 part, skip the rest."""
    body = sub.encode(3)[2:] + extra
    data = future.to_bytes(2, "big") + body
    assert p.Subscription.decode(data) == sub
    assignment = p.Assignment([p.TopicPartitions("t", [0, 1])], b"u")
    assert p.Assignment.decode(future.to_bytes(2, "big") + assignment.encode()[2:] + extra) == assignment

"""Hostile input: random, truncated and mutated bytes may only ever raise DecodeError, and quickly."""

from __future__ import annotations

import contextlib
import time
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from protocol_strategies import ALL_MESSAGE_VERSIONS, STRATEGIES, SUBSCRIPTION, case_id

from staticconsumer import protocol as p
from staticconsumer.errors import DecodeError
from staticconsumer.protocol import APIS_BY_KEY, Message


def _decode_or_decode_error(cls: type[Message], data: bytes, version: int) -> None:
    with contextlib.suppress(DecodeError):
        cls.decode(data, version)


# every decoder the package has, including APIs added beside the group protocol (admin tools)
EVERY_DECODER = [
    (cls, v)
    for spec in APIS_BY_KEY.values()
    for cls in (spec.request, spec.response)
    for v in range(spec.min_version, spec.max_version + 1)
]


@pytest.mark.parametrize("case", EVERY_DECODER, ids=case_id)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=300))
def test_random_bytes_only_raise_decode_error(case: tuple[type[Message], int], data: bytes) -> None:
    cls, version = case
    _decode_or_decode_error(cls, data, version)


@pytest.mark.parametrize("case", ALL_MESSAGE_VERSIONS, ids=case_id)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_truncation_and_mutation_only_raises_decode_error(
    case: tuple[type[Message], int], data: st.DataObject
) -> None:
    cls, version = case
    wire = data.draw(STRATEGIES[cls](version)).encode(version)
    for cut in range(len(wire)):
        with pytest.raises(DecodeError):
            cls.decode(wire[:cut], version)
    with pytest.raises(DecodeError):
        cls.decode(wire + b"\x00", version)
    mutated = bytearray(wire)
    for _ in range(data.draw(st.integers(1, 4))):
        if mutated:
            at = data.draw(st.integers(0, len(mutated) - 1))
            mutated[at] = data.draw(st.integers(0, 255))
    _decode_or_decode_error(cls, bytes(mutated), version)


@pytest.mark.parametrize(
    "prefix",
    [
        b"\x7f\xff\xff\xff",  # classic array length 2**31-1
        b"\xff\xff\xff\xff\x0f",  # compact length 2**32-1
        b"\xff\xff\xff\xff\xff\xff\xff\xff\xff",  # a varint that never ends
        b"\x80\x80\x80\x80\x80",  # a varint longer than 5 bytes
    ],
)
def test_forged_huge_lengths_fail_fast(prefix: bytes) -> None:
    """A forged count must be rejected against the bytes left, not looped over or allocated.

    Memory is the deterministic witness (a 2**31-element list would need gigabytes); the time bound
    is loose enough for a busy CI machine yet far below what looping over the forged count would take.
    """
    tracemalloc.start()
    try:
        for cls, version in ALL_MESSAGE_VERSIONS:
            for data in (
                prefix,
                prefix * 4,
                b"\x00\x00\x00\x00" + prefix,
                b"\x00\x01x" + prefix + b"\x00" * 8,
            ):
                tracemalloc.reset_peak()
                started = time.perf_counter()
                _decode_or_decode_error(cls, data, version)
                elapsed = time.perf_counter() - started
                _, peak = tracemalloc.get_traced_memory()
                assert peak < 256 * 1024, (cls.__name__, version, data, peak)
                assert elapsed < 1.0, (cls.__name__, version, data, elapsed)
    finally:
        tracemalloc.stop()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=200))
def test_payloads_only_raise_decode_error(data: bytes) -> None:
    with contextlib.suppress(DecodeError):
        p.Subscription.decode(data)
    with contextlib.suppress(DecodeError):
        p.Assignment.decode(data)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sub=SUBSCRIPTION)
def test_truncated_payloads_raise_decode_error(sub: p.Subscription) -> None:
    wire = sub.encode()
    for cut in range(len(wire)):
        with pytest.raises(DecodeError):
            p.Subscription.decode(wire[:cut])


def test_negative_payload_version_is_malformed() -> None:
    with pytest.raises(DecodeError):
        p.Subscription.decode(b"\xff\xff" + p.Subscription(["t"]).encode()[2:])
    with pytest.raises(DecodeError):
        p.Assignment.decode(b"\x80\x00" + p.Assignment().encode()[2:])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=40), flexible=st.booleans())
def test_headers_only_raise_decode_error(data: bytes, flexible: bool) -> None:
    with contextlib.suppress(DecodeError):
        p.decode_request_header(data, flexible)
    with contextlib.suppress(DecodeError):
        p.decode_response_header(data, flexible)

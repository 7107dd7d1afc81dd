"""Metadata answers' partition rows: the straight-from-bytes read of ordinary rows (issue 27: a fleet's
600-partition topic in every start) gives the same rows and the same errors as the field-by-field one."""

from __future__ import annotations

import uuid

import pytest

from staticconsumer.errors import DecodeError
from staticconsumer.protocol.metadata import (
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)


def _answer(partitions: list[MetadataResponsePartition]) -> MetadataResponse:
    topic = MetadataResponseTopic(0, "orders", uuid.UUID(int=7), False, partitions)
    return MetadataResponse(
        brokers=[MetadataResponseBroker(1, "h", 9092, "r1")], controller_id=1, topics=[topic]
    )


def _mixed(count: int) -> list[MetadataResponsePartition]:
    """Ordinary rows among rows the fast read hands over: long replica lists (16+), a tagged field, a
    partition count past one compact-length byte."""
    rows = []
    for i in range(count):
        replicas = list(range(i % 20))  # 0..19 replicas: both sides of the precompiled lengths
        tagged = ((3, b"x"),) if i % 97 == 5 else ()
        rows.append(
            MetadataResponsePartition(i % 3, i, i % 5, i, replicas, replicas[:2], replicas[2:3], tagged)
        )
    return rows


@pytest.mark.parametrize("version", [10, 11, 12, 13])
@pytest.mark.parametrize("count", [0, 1, 600])
def test_partition_rows_round_trip(version: int, count: int) -> None:
    answer = _answer(_mixed(count))
    assert MetadataResponse.decode(answer.encode(version), version) == answer


def test_a_truncated_answer_is_a_decode_error_wherever_it_is_cut() -> None:
    wire = _answer(_mixed(40)).encode(12)
    for cut in range(len(wire)):
        with pytest.raises(DecodeError):
            MetadataResponse.decode(wire[:cut], 12)


def test_a_null_replica_list_is_refused_as_before() -> None:
    wire = bytearray(_answer([MetadataResponsePartition(0, 0, 1, 0, [1], [1], [])]).encode(12))
    # the partition's replica list: its compact length 2 (one element) then node 1
    at = wire.index(bytes([2, 0, 0, 0, 1]))
    wire[at] = 0  # null
    with pytest.raises(DecodeError, match="null"):
        MetadataResponse.decode(bytes(wire), 12)


def test_an_absurd_partition_count_is_refused_before_reading() -> None:
    wire = bytearray(_answer([]).encode(12))
    at = wire.index(bytes([1]), wire.index(b"orders") + len("orders") + 17)  # empty partitions: length 1
    wire[at : at + 1] = bytes([0xFF, 0xFF, 0xFF, 0x07])  # 2**31 - 2 partitions in a few bytes
    with pytest.raises(DecodeError, match="cannot fit"):
        MetadataResponse.decode(bytes(wire), 12)

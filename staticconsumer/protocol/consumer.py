"""The "consumer" protocol payloads carried inside JoinGroup metadata and SyncGroup assignments.

Both start with an int16 version and are never flexible. As in Java's ConsumerProtocol, a version
newer than v3 is read as v3 (newer versions only append fields, which are then ignored, so trailing
bytes are accepted); a negative version is malformed. The sticky assignors' own userData formats
live in the pure ``assignors`` package.
"""

from __future__ import annotations

import struct
from typing import Self

import msgspec

from staticconsumer import errors as _errors  # ApiVersionOutOfRangeError: defined on first use
from staticconsumer.errors import DecodeError, EncodeError
from staticconsumer.protocol._base import ClassicReader, ClassicWriter

CONSUMER_PROTOCOL_TYPE = "consumer"
MAX_PAYLOAD_VERSION = 3
_DECODE_FAILURES = (struct.error, UnicodeDecodeError, ValueError, OverflowError, IndexError, MemoryError)


class TopicPartitions(msgspec.Struct, gc=False):
    topic: str = ""
    partitions: list[int] = msgspec.field(default_factory=list)


def _write_topic_partitions(w: ClassicWriter, items: list[TopicPartitions]) -> None:
    w.array_len(len(items))
    for tp in items:
        w.string(tp.topic)
        w.int32_array(tp.partitions)


def _read_topic_partitions(r: ClassicReader) -> list[TopicPartitions]:
    return [TopicPartitions(r.string(), r.int32_array()) for _ in range(r.array_len(6))]


def _check_encode_version(name: str, version: int) -> None:
    if not 0 <= version <= MAX_PAYLOAD_VERSION:
        raise _errors.ApiVersionOutOfRangeError(name, version, 0, MAX_PAYLOAD_VERSION)


def payload_version(data: bytes) -> int:
    """The raw int16 version a payload was written with (may exceed what we read it as)."""
    if len(data) < 2:
        raise DecodeError("consumer protocol payload shorter than its version field")
    return int(struct.unpack_from(">h", data)[0])


def _reader(data: bytes | bytearray | memoryview) -> tuple[ClassicReader, int]:
    if not isinstance(data, bytes):
        data = bytes(data)
    version = payload_version(data)
    if version < 0:
        raise DecodeError(f"consumer protocol payload with negative version {version}")
    return ClassicReader(data, 2), min(version, MAX_PAYLOAD_VERSION)


class Subscription(msgspec.Struct):
    """JoinGroup metadata of a member: topics, userData, owned partitions, generation, rack id."""

    topics: list[str] = msgspec.field(default_factory=list)
    user_data: bytes | None = None
    owned_partitions: list[TopicPartitions] = msgspec.field(default_factory=list)
    generation_id: int = -1
    rack_id: str | None = None

    def encode(self, version: int = MAX_PAYLOAD_VERSION) -> bytes:
        """Version-prefixed bytes; fields newer than ``version`` are dropped as Java drops them."""
        _check_encode_version("ConsumerProtocolSubscription", version)
        w = ClassicWriter()
        try:
            w.i16(version)
            w.string_array(self.topics)
            w.nbytes(self.user_data)
            if version >= 1:
                _write_topic_partitions(w, self.owned_partitions)
            if version >= 2:
                w.i32(self.generation_id)
            if version >= 3:
                w.nstring(self.rack_id)
        except struct.error as exc:
            raise EncodeError(f"ConsumerProtocolSubscription: {exc}") from exc
        return bytes(w)

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview) -> Self:
        r, version = _reader(data)
        try:
            topics = r.string_array()
            user_data = r.nbytes()
            owned = _read_topic_partitions(r) if version >= 1 else []
            generation_id = r.i32() if version >= 2 else -1
            rack_id = r.nstring() if version >= 3 else None
        except DecodeError:
            raise
        except _DECODE_FAILURES as exc:
            raise DecodeError(f"ConsumerProtocolSubscription: {type(exc).__name__}: {exc}") from exc
        return cls(topics, user_data, owned, generation_id, rack_id)


class Assignment(msgspec.Struct):
    """What the leader hands each member through SyncGroup. The body is the same in v0-v3."""

    assigned_partitions: list[TopicPartitions] = msgspec.field(default_factory=list)
    user_data: bytes | None = None

    def encode(self, version: int = MAX_PAYLOAD_VERSION) -> bytes:
        _check_encode_version("ConsumerProtocolAssignment", version)
        w = ClassicWriter()
        try:
            w.i16(version)
            _write_topic_partitions(w, self.assigned_partitions)
            w.nbytes(self.user_data)
        except struct.error as exc:
            raise EncodeError(f"ConsumerProtocolAssignment: {exc}") from exc
        return bytes(w)

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview) -> Self:
        r, _version = _reader(data)
        try:
            assigned = _read_topic_partitions(r)
            user_data = r.nbytes()
        except DecodeError:
            raise
        except _DECODE_FAILURES as exc:
            raise DecodeError(f"ConsumerProtocolAssignment: {type(exc).__name__}: {exc}") from exc
        return cls(assigned, user_data)


def assigned_partitions(data: bytes) -> list[tuple[str, int]]:
    """The (topic, partition) pairs of an encoded Assignment; empty bytes (a member given nothing) is none."""
    if not data:
        return []
    return [(tp.topic, p) for tp in Assignment.decode(data).assigned_partitions for p in tp.partitions]


def subscribed_topics(data: bytes) -> list[str]:
    """The topics of an encoded Subscription (a member's JoinGroup metadata)."""
    return list(Subscription.decode(data).topics)

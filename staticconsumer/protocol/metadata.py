"""Metadata (API 3) v10-v13: the versions that carry topic ids.

KIP-848 assignments name topics by id, so a consumer-protocol member resolves them here: by name (v10+
answers every topic with its id), or directly by id (v12+: ``name=None`` and ``topic_id`` set). aiokafka's
own metadata requests are v0-v5 and carry no ids. All four versions are flexible.
"""

from __future__ import annotations

import struct
from typing import ClassVar, Self
from uuid import UUID

import msgspec

from staticconsumer.errors import EncodeError
from staticconsumer.protocol._base import (
    AUTHORIZED_OPERATIONS_OMITTED,
    ZERO_UUID,
    ClassicReader,
    ClassicWriter,
    Message,
    TaggedFields,
    refuse,
)


class MetadataRequestTopic(msgspec.Struct, gc=False):
    """A topic by name, or (v12+) by id with ``name=None``."""

    topic_id: UUID = ZERO_UUID
    name: str | None = ""
    unknown_tagged_fields: TaggedFields = ()


class MetadataRequest(Message):
    """``topics=None`` asks for every topic; ``[]`` for none (brokers and cluster id only)."""

    API_KEY: ClassVar[int] = 3
    API_NAME: ClassVar[str] = "Metadata"
    KIND: ClassVar[str] = "request"
    MIN_VERSION: ClassVar[int] = 10
    MAX_VERSION: ClassVar[int] = 13
    FLEXIBLE_FROM: ClassVar[int] = 9

    topics: list[MetadataRequestTopic] | None = msgspec.field(default_factory=list)
    allow_auto_topic_creation: bool = True
    include_cluster_authorized_operations: bool = False
    include_topic_authorized_operations: bool = False
    unknown_tagged_fields: TaggedFields = ()

    def _write(self, w: ClassicWriter, version: int) -> None:
        if version > 10 and self.include_cluster_authorized_operations:
            refuse("MetadataRequest", version, "include_cluster_authorized_operations", 8, 10)
        if self.topics is None:
            w.null_array()
        else:
            w.array_len(len(self.topics))
            for t in self.topics:
                w.uuid(t.topic_id)
                w.nstring(t.name)
                w.tagged(t.unknown_tagged_fields)
        w.boolean(self.allow_auto_topic_creation)
        if version <= 10:
            w.boolean(self.include_cluster_authorized_operations)
        w.boolean(self.include_topic_authorized_operations)
        w.tagged(self.unknown_tagged_fields)

    @classmethod
    def _read(cls, r: ClassicReader, version: int) -> Self:
        n = r.narray_len(18)
        topics = (
            None if n < 0 else [MetadataRequestTopic(r.uuid(), r.nstring(), r.tagged()) for _ in range(n)]
        )
        allow = r.boolean()
        cluster_ops = r.boolean() if version <= 10 else False
        return cls(topics, allow, cluster_ops, r.boolean(), r.tagged())


class MetadataResponseBroker(msgspec.Struct, gc=False):
    node_id: int = 0
    host: str = ""
    port: int = 0
    rack: str | None = None
    unknown_tagged_fields: TaggedFields = ()


class MetadataResponsePartition(msgspec.Struct, gc=False):
    error_code: int = 0
    partition_index: int = 0
    leader_id: int = 0
    leader_epoch: int = -1
    replica_nodes: list[int] = msgspec.field(default_factory=list)
    isr_nodes: list[int] = msgspec.field(default_factory=list)
    offline_replicas: list[int] = msgspec.field(default_factory=list)
    unknown_tagged_fields: TaggedFields = ()


class MetadataResponseTopic(msgspec.Struct, gc=False):
    """``name`` is None (v12+) for a topic asked for by an id the cluster does not know."""

    error_code: int = 0
    name: str | None = ""
    topic_id: UUID = ZERO_UUID
    is_internal: bool = False
    partitions: list[MetadataResponsePartition] = msgspec.field(default_factory=list)
    topic_authorized_operations: int = AUTHORIZED_OPERATIONS_OMITTED
    unknown_tagged_fields: TaggedFields = ()


class MetadataResponse(Message):
    """``error_code`` (v13+) is ignorable, ``cluster_authorized_operations`` exists only up to v10."""

    API_KEY: ClassVar[int] = 3
    API_NAME: ClassVar[str] = "Metadata"
    KIND: ClassVar[str] = "response"
    MIN_VERSION: ClassVar[int] = 10
    MAX_VERSION: ClassVar[int] = 13
    FLEXIBLE_FROM: ClassVar[int] = 9

    throttle_time_ms: int = 0
    brokers: list[MetadataResponseBroker] = msgspec.field(default_factory=list)
    cluster_id: str | None = None
    controller_id: int = -1
    topics: list[MetadataResponseTopic] = msgspec.field(default_factory=list)
    cluster_authorized_operations: int = AUTHORIZED_OPERATIONS_OMITTED
    error_code: int = 0
    unknown_tagged_fields: TaggedFields = ()

    def _write(self, w: ClassicWriter, version: int) -> None:
        if version > 10 and self.cluster_authorized_operations != AUTHORIZED_OPERATIONS_OMITTED:
            refuse("MetadataResponse", version, "cluster_authorized_operations", 8, 10)
        w.i32(self.throttle_time_ms)
        w.array_len(len(self.brokers))
        for b in self.brokers:
            w.i32(b.node_id)
            w.string(b.host)
            w.i32(b.port)
            w.nstring(b.rack)
            w.tagged(b.unknown_tagged_fields)
        w.nstring(self.cluster_id)
        w.i32(self.controller_id)
        w.array_len(len(self.topics))
        for t in self.topics:
            w.i16(t.error_code)
            if t.name is None and version < 12:
                raise EncodeError(f"MetadataResponse v{version}: a topic name is nullable only from v12")
            w.nstring(t.name)
            w.uuid(t.topic_id)
            w.boolean(t.is_internal)
            w.array_len(len(t.partitions))
            for p in t.partitions:
                w.i16(p.error_code)
                w.i32(p.partition_index)
                w.i32(p.leader_id)
                w.i32(p.leader_epoch)
                w.int32_array(p.replica_nodes)
                w.int32_array(p.isr_nodes)
                w.int32_array(p.offline_replicas)
                w.tagged(p.unknown_tagged_fields)
            w.i32(t.topic_authorized_operations)
            w.tagged(t.unknown_tagged_fields)
        if version <= 10:
            w.i32(self.cluster_authorized_operations)
        if version >= 13:
            w.i16(self.error_code)
        w.tagged(self.unknown_tagged_fields)

    @classmethod
    def _read(cls, r: ClassicReader, version: int) -> Self:
        throttle_time_ms = r.i32()
        brokers = [
            MetadataResponseBroker(r.i32(), r.string(), r.i32(), r.nstring(), r.tagged())
            for _ in range(r.array_len())
        ]
        cluster_id = r.nstring()
        controller_id = r.i32()
        topics = []
        for _ in range(r.array_len()):
            error_code = r.i16()
            name = r.nstring() if version >= 12 else r.string()
            topic_id = r.uuid()
            is_internal = r.boolean()
            partitions = _read_partitions(r)
            topics.append(
                MetadataResponseTopic(
                    error_code, name, topic_id, is_internal, partitions, r.i32(), r.tagged()
                )
            )
        cluster_ops = r.i32() if version <= 10 else AUTHORIZED_OPERATIONS_OMITTED
        error_code = r.i16() if version >= 13 else 0
        return cls(
            throttle_time_ms, brokers, cluster_id, controller_id, topics, cluster_ops, error_code, r.tagged()
        )


def _read_partition(r: ClassicReader) -> MetadataResponsePartition:
    """One partition row, field by field (any encoding the version allows)."""
    return MetadataResponsePartition(
        r.i16(), r.i32(), r.i32(), r.i32(), r.int32_array(), r.int32_array(), r.int32_array(), r.tagged()
    )


_PARTITION_HEAD = struct.Struct(">hiii")
_HEAD_SIZE: int = _PARTITION_HEAD.size
_SHORT_ARRAY = 16
"""Replica lists up to this long are read with one precompiled unpack each (a broker's replication
factor is a handful); longer ones, null ones and rows with tagged fields take :func:`_read_partition`."""
_UNPACK_INTS = tuple(struct.Struct(f">{n}i").unpack_from for n in range(_SHORT_ARRAY))
_MIN_PARTITION_SIZE = _HEAD_SIZE + 4
"""Its fixed fields, three compact array lengths and the tagged-field count: bounds an absurd count."""


def _read_partitions(r: ClassicReader) -> list[MetadataResponsePartition]:
    """A topic's partition rows. Flexible rows (every version here) are read straight from the bytes, one
    unpack for the fixed fields and one per replica list, with :func:`_read_partition` taking over for
    any row out of the ordinary: the field-by-field read cost ~4 ms for a fleet's 600-partition topic, in
    every start of a member before its JoinGroup (issue 27). Same rows, same errors (short input raises
    ``struct.error``/``IndexError``, which ``decode`` reports as DecodeError)."""
    count = r.array_len(_MIN_PARTITION_SIZE if r.flexible else 1)
    if not r.flexible:
        return [_read_partition(r) for _ in range(count)]
    data = r.data
    unpack_head = _PARTITION_HEAD.unpack_from
    unpack_ints = _UNPACK_INTS
    rows: list[MetadataResponsePartition] = []
    append = rows.append
    for _ in range(count):
        start = r.pos
        error_code, index, leader, epoch = unpack_head(data, start)
        pos = start + _HEAD_SIZE
        size = data[pos] - 1  # a compact length below 0x80 is one byte: count + 1 (0: null)
        if 0 <= size < _SHORT_ARRAY:
            replicas = unpack_ints[size](data, pos + 1)
            pos += 1 + 4 * size
            size = data[pos] - 1
            if 0 <= size < _SHORT_ARRAY:
                isr = unpack_ints[size](data, pos + 1)
                pos += 1 + 4 * size
                size = data[pos] - 1
                if 0 <= size < _SHORT_ARRAY:
                    offline = unpack_ints[size](data, pos + 1)
                    pos += 1 + 4 * size
                    if data[pos] == 0:  # no tagged fields
                        r.pos = pos + 1
                        append(
                            MetadataResponsePartition(
                                error_code, index, leader, epoch, list(replicas), list(isr), list(offline), ()
                            )
                        )
                        continue
        r.pos = start
        append(_read_partition(r))
    return rows

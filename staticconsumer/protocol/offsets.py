"""Offset APIs: OffsetCommit v2-v10 and OffsetFetch v1-v10.

v10 (Kafka 4.1+, KIP-848) names topics by id instead of by name. Like Java, a request goes out at v10 only
when the caller names every topic by id: :data:`TOPIC_NAMES_MAX_VERSION` is the default ceiling (Java's
``forTopicNames`` builders), and a caller holding every topic id (a consumer-protocol member, which gets
ids in its assignment) asks for v10 with ``max_version`` (Java's ``forTopicIdsOrNames``). Both the name and
the id are *ignorable*: the one a version cannot carry is left out silently, as Java does.
"""

from __future__ import annotations

import struct
from typing import ClassVar, Final, Self
from uuid import UUID

import msgspec

from staticconsumer.errors import DecodeError, EncodeError
from staticconsumer.protocol._base import (
    ZERO_UUID,
    ClassicReader,
    ClassicWriter,
    FlexWriter,
    Message,
    TaggedFields,
    refuse,
    uvarint_bytes,
)

TOPIC_IDS_FROM_VERSION: Final = 10
"""OffsetCommit and OffsetFetch name topics by id from v10 on, and only by id."""
TOPIC_NAMES_MAX_VERSION: Final = 9
"""The highest version that names topics by name: what is sent unless the caller asks for v10."""


def _refuse_missing_topic_id(api: str, version: int, name: str, topic_id: UUID) -> None:
    """Java's builders refuse v10 with a topic lacking its id (it would commit to no topic at all)."""
    if topic_id == ZERO_UUID:
        raise EncodeError(
            f"{api} v{version} names topics by id, but topic {name!r} has no topic_id; "
            f"send v{TOPIC_NAMES_MAX_VERSION} (by name) or resolve the id through Metadata first"
        )


_PART_V6 = struct.Struct(">iqi")  # partition_index, committed_offset, committed_leader_epoch
_RESP_PART = struct.Struct(">ih")  # partition_index, error_code

# ------------------------------------------------------------------------------------------ OffsetCommit


class OffsetCommitRequestPartition(msgspec.Struct, gc=False):
    partition_index: int = 0
    committed_offset: int = 0
    committed_leader_epoch: int = -1
    committed_metadata: str | None = ""
    unknown_tagged_fields: TaggedFields = ()


class OffsetCommitRequestTopic(msgspec.Struct, gc=False):
    """``name`` up to v9, ``topic_id`` from v10."""

    name: str = ""
    partitions: list[OffsetCommitRequestPartition] = msgspec.field(default_factory=list)
    topic_id: UUID = ZERO_UUID
    unknown_tagged_fields: TaggedFields = ()


_CLASSIC_PART_V2 = struct.Struct(">iqh")  # partition_index, committed_offset, metadata length
_CLASSIC_PART_V6 = struct.Struct(">iqih")  # ... plus committed_leader_epoch before the metadata length
_FLEX_PART_SHORT = struct.Struct(">iqiB")  # flexible: ... plus a one-byte compact metadata length
_MAX_INT16 = 0x7FFF


def _write_partitions(
    w: ClassicWriter, partitions: list[OffsetCommitRequestPartition], with_epoch: bool
) -> None:
    """Hot loop (one entry per committed partition): fixed fields and a short length in one pack,
    pieces gathered in a list and joined once (cheaper than growing the bytearray per field)."""
    parts: list[bytes] = []
    add = parts.append
    data: bytes
    if w.flexible:
        pack = _PART_V6.pack
        pack_short = _FLEX_PART_SHORT.pack
        for q in partitions:
            meta = q.committed_metadata
            if meta is None:
                add(pack_short(q.partition_index, q.committed_offset, q.committed_leader_epoch, 0))
            else:
                data = meta.encode("utf-8", "replace")
                n = len(data)
                if n < 0x7F:
                    add(pack_short(q.partition_index, q.committed_offset, q.committed_leader_epoch, n + 1))
                else:
                    if n > _MAX_INT16:
                        raise EncodeError(f"commit metadata of {n} bytes exceeds the int16 length limit")
                    add(pack(q.partition_index, q.committed_offset, q.committed_leader_epoch))
                    add(uvarint_bytes(n + 1))
                add(data)
            if q.unknown_tagged_fields:
                tags = FlexWriter()
                tags.tagged(q.unknown_tagged_fields)
                add(bytes(tags))
            else:
                add(b"\x00")
        w += b"".join(parts)
        return
    pack_classic = _CLASSIC_PART_V6.pack if with_epoch else _CLASSIC_PART_V2.pack
    for q in partitions:
        if q.unknown_tagged_fields:
            raise EncodeError("unknown tagged fields can only be written in flexible versions")
        meta = q.committed_metadata
        if meta is None:
            n = -1
            data = b""
        else:
            data = meta.encode("utf-8", "replace")
            n = len(data)
            if n > _MAX_INT16:
                raise EncodeError(f"commit metadata of {n} bytes exceeds the int16 length limit")
        if with_epoch:
            add(pack_classic(q.partition_index, q.committed_offset, q.committed_leader_epoch, n))
        else:
            add(pack_classic(q.partition_index, q.committed_offset, n))
        add(data)
    w += b"".join(parts)


def _read_partitions(r: ClassicReader, n: int, with_epoch: bool) -> list[OffsetCommitRequestPartition]:
    """Hot loop twin of :func:`_write_partitions`; lengths are checked against the end first."""
    data = r.data
    pos = r.pos
    end = r.end
    partition = OffsetCommitRequestPartition
    out: list[OffsetCommitRequestPartition] = []
    append = out.append
    meta: str | None
    if r.flexible:
        unpack = _PART_V6.unpack_from
        for _ in range(n):
            index, offset, epoch = unpack(data, pos)
            pos += 16
            if pos < end and data[pos] < 0x80:
                size = data[pos] - 1
                pos += 1
            else:
                r.pos = pos
                size = r.uvarint() - 1
                pos = r.pos
            if size < 0:
                meta = None
            else:
                stop = pos + size
                if stop > end:
                    raise DecodeError("commit metadata longer than the bytes left")
                meta = data[pos:stop].decode("utf-8")
                pos = stop
            if pos < end and data[pos] == 0:
                pos += 1
                append(partition(index, offset, epoch, meta, ()))
            else:
                r.pos = pos
                tags = r.tagged()
                pos = r.pos
                append(partition(index, offset, epoch, meta, tags))
        r.pos = pos
        return out
    if with_epoch:
        unpack6 = _CLASSIC_PART_V6.unpack_from
        for _ in range(n):
            index, offset, epoch, size = unpack6(data, pos)
            pos += 18
            if size < 0:
                if size != -1:
                    raise DecodeError(f"negative string length {size}")
                meta = None
            else:
                stop = pos + size
                if stop > end:
                    raise DecodeError("commit metadata longer than the bytes left")
                meta = data[pos:stop].decode("utf-8")
                pos = stop
            append(partition(index, offset, epoch, meta, ()))
    else:
        unpack2 = _CLASSIC_PART_V2.unpack_from
        for _ in range(n):
            index, offset, size = unpack2(data, pos)
            pos += 14
            if size < 0:
                if size != -1:
                    raise DecodeError(f"negative string length {size}")
                meta = None
            else:
                stop = pos + size
                if stop > end:
                    raise DecodeError("commit metadata longer than the bytes left")
                meta = data[pos:stop].decode("utf-8")
                pos = stop
            append(partition(index, offset, -1, meta, ()))
    r.pos = pos
    return out


class OffsetCommitRequest(Message):
    """Commit offsets; a static member sends its ``group_instance_id`` (v7+) so fencing applies."""

    API_KEY: ClassVar[int] = 8
    API_NAME: ClassVar[str] = "OffsetCommit"
    KIND: ClassVar[str] = "request"
    MIN_VERSION: ClassVar[int] = 2
    MAX_VERSION: ClassVar[int] = 10
    DEFAULT_MAX_VERSION: ClassVar[int | None] = TOPIC_NAMES_MAX_VERSION
    FLEXIBLE_FROM: ClassVar[int] = 8

    group_id: str = ""
    generation_id_or_member_epoch: int = -1
    member_id: str = ""
    group_instance_id: str | None = None
    retention_time_ms: int = -1
    topics: list[OffsetCommitRequestTopic] = msgspec.field(default_factory=list)
    unknown_tagged_fields: TaggedFields = ()

    def _write(self, w: ClassicWriter, version: int) -> None:
        if version < 7 and self.group_instance_id is not None:
            refuse("OffsetCommitRequest", version, "group_instance_id", 7)
        w.string(self.group_id)
        w.i32(self.generation_id_or_member_epoch)
        w.string(self.member_id)
        if version >= 7:
            w.nstring(self.group_instance_id)
        if version <= 4:
            w.i64(self.retention_time_ms)
        w.array_len(len(self.topics))
        with_epoch = version >= 6
        by_id = version >= TOPIC_IDS_FROM_VERSION
        for t in self.topics:
            if by_id:
                _refuse_missing_topic_id("OffsetCommitRequest", version, t.name, t.topic_id)
                w.uuid(t.topic_id)
            else:
                w.string(t.name)
            w.array_len(len(t.partitions))
            _write_partitions(w, t.partitions, with_epoch)
            w.tagged(t.unknown_tagged_fields)
        w.tagged(self.unknown_tagged_fields)

    @classmethod
    def _read(cls, r: ClassicReader, version: int) -> Self:
        group_id = r.string()
        generation = r.i32()
        member_id = r.string()
        group_instance_id = r.nstring() if version >= 7 else None
        retention_time_ms = r.i64() if version <= 4 else -1
        with_epoch = version >= 6
        min_size = 12 if r.flexible else (18 if with_epoch else 14)
        topics = []
        for _ in range(r.array_len()):
            name, topic_id = ("", r.uuid()) if version >= TOPIC_IDS_FROM_VERSION else (r.string(), ZERO_UUID)
            partitions = _read_partitions(r, r.array_len(min_size), with_epoch)
            topics.append(OffsetCommitRequestTopic(name, partitions, topic_id, r.tagged()))
        return cls(group_id, generation, member_id, group_instance_id, retention_time_ms, topics, r.tagged())


class OffsetCommitResponsePartition(msgspec.Struct, gc=False):
    partition_index: int = 0
    error_code: int = 0
    unknown_tagged_fields: TaggedFields = ()


class OffsetCommitResponseTopic(msgspec.Struct, gc=False):
    """``name`` up to v9, ``topic_id`` from v10."""

    name: str = ""
    partitions: list[OffsetCommitResponsePartition] = msgspec.field(default_factory=list)
    topic_id: UUID = ZERO_UUID
    unknown_tagged_fields: TaggedFields = ()


class OffsetCommitResponse(Message):
    API_KEY: ClassVar[int] = 8
    API_NAME: ClassVar[str] = "OffsetCommit"
    KIND: ClassVar[str] = "response"
    MIN_VERSION: ClassVar[int] = 2
    MAX_VERSION: ClassVar[int] = 10
    DEFAULT_MAX_VERSION: ClassVar[int | None] = TOPIC_NAMES_MAX_VERSION
    FLEXIBLE_FROM: ClassVar[int] = 8

    throttle_time_ms: int = 0
    topics: list[OffsetCommitResponseTopic] = msgspec.field(default_factory=list)
    unknown_tagged_fields: TaggedFields = ()

    def _write(self, w: ClassicWriter, version: int) -> None:
        if version >= 3:
            w.i32(self.throttle_time_ms)
        w.array_len(len(self.topics))
        by_id = version >= TOPIC_IDS_FROM_VERSION
        for t in self.topics:
            if by_id:
                w.uuid(t.topic_id)
            else:
                w.string(t.name)
            w.array_len(len(t.partitions))
            for p in t.partitions:
                w += _RESP_PART.pack(p.partition_index, p.error_code)
                w.tagged(p.unknown_tagged_fields)
            w.tagged(t.unknown_tagged_fields)
        w.tagged(self.unknown_tagged_fields)

    @classmethod
    def _read(cls, r: ClassicReader, version: int) -> Self:
        throttle_time_ms = r.i32() if version >= 3 else 0
        data = r.data
        unpack = _RESP_PART.unpack_from
        tagged = r.tagged
        topics: list[OffsetCommitResponseTopic] = []
        by_id = version >= TOPIC_IDS_FROM_VERSION
        for _ in range(r.array_len()):
            name, topic_id = ("", r.uuid()) if by_id else (r.string(), ZERO_UUID)
            partitions: list[OffsetCommitResponsePartition] = []
            for _ in range(r.array_len(6)):
                index, error_code = unpack(data, r.pos)
                r.pos += 6
                partitions.append(OffsetCommitResponsePartition(index, error_code, tagged()))
            topics.append(OffsetCommitResponseTopic(name, partitions, topic_id, tagged()))
        return cls(throttle_time_ms, topics, r.tagged())


# ------------------------------------------------------------------------------------------- OffsetFetch


class OffsetFetchRequestTopic(msgspec.Struct, gc=False):
    """``name`` up to v9, ``topic_id`` from v10 (only in ``groups``)."""

    name: str = ""
    partition_indexes: list[int] = msgspec.field(default_factory=list)
    topic_id: UUID = ZERO_UUID
    unknown_tagged_fields: TaggedFields = ()


class OffsetFetchRequestGroup(msgspec.Struct, gc=False):
    group_id: str = ""
    member_id: str | None = None
    member_epoch: int = -1
    topics: list[OffsetFetchRequestTopic] | None = msgspec.field(default_factory=list)
    unknown_tagged_fields: TaggedFields = ()


def _write_fetch_topics(w: ClassicWriter, topics: list[OffsetFetchRequestTopic], version: int) -> None:
    w.array_len(len(topics))
    by_id = version >= TOPIC_IDS_FROM_VERSION
    for t in topics:
        if by_id:
            _refuse_missing_topic_id("OffsetFetchRequest", version, t.name, t.topic_id)
            w.uuid(t.topic_id)
        else:
            w.string(t.name)
        w.int32_array(t.partition_indexes)
        w.tagged(t.unknown_tagged_fields)


def _read_fetch_topics(r: ClassicReader, version: int) -> list[OffsetFetchRequestTopic] | None:
    n = r.narray_len()
    if n < 0:
        return None
    by_id = version >= TOPIC_IDS_FROM_VERSION
    topics = []
    for _ in range(n):
        name, topic_id = ("", r.uuid()) if by_id else (r.string(), ZERO_UUID)
        topics.append(OffsetFetchRequestTopic(name, r.int32_array(), topic_id, r.tagged()))
    return topics


class OffsetFetchRequest(Message):
    """Fetch committed offsets: one group (``group_id``/``topics``, v1-v7) or a batch (``groups``, v8+).

    ``topics=None`` asks for every topic of the group (v2+).
    """

    API_KEY: ClassVar[int] = 9
    API_NAME: ClassVar[str] = "OffsetFetch"
    KIND: ClassVar[str] = "request"
    MIN_VERSION: ClassVar[int] = 1
    MAX_VERSION: ClassVar[int] = 10
    DEFAULT_MAX_VERSION: ClassVar[int | None] = TOPIC_NAMES_MAX_VERSION
    FLEXIBLE_FROM: ClassVar[int] = 6

    group_id: str = ""
    topics: list[OffsetFetchRequestTopic] | None = msgspec.field(default_factory=list)
    groups: list[OffsetFetchRequestGroup] = msgspec.field(default_factory=list)
    require_stable: bool = False
    unknown_tagged_fields: TaggedFields = ()

    def _write(self, w: ClassicWriter, version: int) -> None:
        if version < 7 and self.require_stable:
            refuse("OffsetFetchRequest", version, "require_stable", 7)
        if version <= 7:
            if self.groups:
                refuse("OffsetFetchRequest", version, "groups", 8)
            w.string(self.group_id)
            if self.topics is None:
                if version < 2:
                    raise EncodeError("OffsetFetchRequest v1 cannot ask for all topics (topics=None)")
                w.null_array()
            else:
                _write_fetch_topics(w, self.topics, version)
        else:
            if self.group_id:
                refuse("OffsetFetchRequest", version, "group_id", 1, 7)
            if self.topics:
                refuse("OffsetFetchRequest", version, "topics", 1, 7)
            w.array_len(len(self.groups))
            for g in self.groups:
                w.string(g.group_id)
                if version >= 9:
                    w.nstring(g.member_id)
                    w.i32(g.member_epoch)
                if g.topics is None:
                    w.null_array()
                else:
                    _write_fetch_topics(w, g.topics, version)
                w.tagged(g.unknown_tagged_fields)
        if version >= 7:
            w.boolean(self.require_stable)
        w.tagged(self.unknown_tagged_fields)

    @classmethod
    def _read(cls, r: ClassicReader, version: int) -> Self:
        group_id = ""
        topics: list[OffsetFetchRequestTopic] | None = []
        groups: list[OffsetFetchRequestGroup] = []
        if version <= 7:
            group_id = r.string()
            topics = _read_fetch_topics(r, version)
            if topics is None and version < 2:
                raise DecodeError("OffsetFetchRequest v1: null topics array")
        else:
            topics = []
            for _ in range(r.array_len()):
                gid = r.string()
                if version >= 9:
                    member_id = r.nstring()
                    member_epoch = r.i32()
                else:
                    member_id, member_epoch = None, -1
                groups.append(
                    OffsetFetchRequestGroup(
                        gid, member_id, member_epoch, _read_fetch_topics(r, version), r.tagged()
                    )
                )
        require_stable = r.boolean() if version >= 7 else False
        return cls(group_id, topics, groups, require_stable, r.tagged())


class OffsetFetchResponsePartition(msgspec.Struct, gc=False):
    partition_index: int = 0
    committed_offset: int = 0
    committed_leader_epoch: int = -1
    metadata: str | None = ""
    error_code: int = 0
    unknown_tagged_fields: TaggedFields = ()


class OffsetFetchResponseTopic(msgspec.Struct, gc=False):
    """``name`` up to v9, ``topic_id`` from v10 (only in ``groups``)."""

    name: str = ""
    partitions: list[OffsetFetchResponsePartition] = msgspec.field(default_factory=list)
    topic_id: UUID = ZERO_UUID
    unknown_tagged_fields: TaggedFields = ()


class OffsetFetchResponseGroup(msgspec.Struct, gc=False):
    group_id: str = ""
    topics: list[OffsetFetchResponseTopic] = msgspec.field(default_factory=list)
    error_code: int = 0
    unknown_tagged_fields: TaggedFields = ()


def _write_fetched_topics(
    w: ClassicWriter, topics: list[OffsetFetchResponseTopic], epoch: bool, by_id: bool = False
) -> None:
    w.array_len(len(topics))
    for t in topics:
        if by_id:
            w.uuid(t.topic_id)
        else:
            w.string(t.name)
        w.array_len(len(t.partitions))
        for p in t.partitions:
            w.i32(p.partition_index)
            w.i64(p.committed_offset)
            if epoch:
                w.i32(p.committed_leader_epoch)
            w.nstring(p.metadata)
            w.i16(p.error_code)
            w.tagged(p.unknown_tagged_fields)
        w.tagged(t.unknown_tagged_fields)


def _read_fetched_topics(
    r: ClassicReader, epoch: bool, by_id: bool = False
) -> list[OffsetFetchResponseTopic]:
    topics: list[OffsetFetchResponseTopic] = []
    for _ in range(r.array_len()):
        name, topic_id = ("", r.uuid()) if by_id else (r.string(), ZERO_UUID)
        partitions = [
            OffsetFetchResponsePartition(
                r.i32(), r.i64(), r.i32() if epoch else -1, r.nstring(), r.i16(), r.tagged()
            )
            for _ in range(r.array_len())
        ]
        topics.append(OffsetFetchResponseTopic(name, partitions, topic_id, r.tagged()))
    return topics


class OffsetFetchResponse(Message):
    API_KEY: ClassVar[int] = 9
    API_NAME: ClassVar[str] = "OffsetFetch"
    KIND: ClassVar[str] = "response"
    MIN_VERSION: ClassVar[int] = 1
    MAX_VERSION: ClassVar[int] = 10
    DEFAULT_MAX_VERSION: ClassVar[int | None] = TOPIC_NAMES_MAX_VERSION
    FLEXIBLE_FROM: ClassVar[int] = 6

    throttle_time_ms: int = 0
    topics: list[OffsetFetchResponseTopic] = msgspec.field(default_factory=list)
    error_code: int = 0
    groups: list[OffsetFetchResponseGroup] = msgspec.field(default_factory=list)
    unknown_tagged_fields: TaggedFields = ()

    def _write(self, w: ClassicWriter, version: int) -> None:
        if version >= 3:
            w.i32(self.throttle_time_ms)
        if version <= 7:
            if self.groups:
                refuse("OffsetFetchResponse", version, "groups", 8)
            _write_fetched_topics(w, self.topics, version >= 5)
            if version >= 2:
                w.i16(self.error_code)
        else:
            if self.topics:
                refuse("OffsetFetchResponse", version, "topics", 1, 7)
            w.array_len(len(self.groups))
            for g in self.groups:
                w.string(g.group_id)
                _write_fetched_topics(w, g.topics, True, version >= TOPIC_IDS_FROM_VERSION)
                w.i16(g.error_code)
                w.tagged(g.unknown_tagged_fields)
        w.tagged(self.unknown_tagged_fields)

    @classmethod
    def _read(cls, r: ClassicReader, version: int) -> Self:
        throttle_time_ms = r.i32() if version >= 3 else 0
        topics: list[OffsetFetchResponseTopic] = []
        groups: list[OffsetFetchResponseGroup] = []
        error_code = 0
        if version <= 7:
            topics = _read_fetched_topics(r, version >= 5)
            if version >= 2:
                error_code = r.i16()
        else:
            groups = [
                OffsetFetchResponseGroup(
                    r.string(),
                    _read_fetched_topics(r, True, version >= TOPIC_IDS_FROM_VERSION),
                    r.i16(),
                    r.tagged(),
                )
                for _ in range(r.array_len())
            ]
        return cls(throttle_time_ms, topics, error_code, groups, r.tagged())

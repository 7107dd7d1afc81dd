"""Group membership APIs: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, DescribeGroups.

Field names and defaults follow Kafka's message specs (``clients/.../common/message/*.json``) in
snake_case. A field the chosen version cannot carry must hold its default; for the fields Java refuses
to drop (instance ids, SkipAssignment, ...) a non-default value raises
:class:`UnsupportedVersionForFieldError`; for the fields Java marks ignorable it is silently left out.
"""

from __future__ import annotations

from typing import ClassVar, Self

import msgspec

from staticconsumer.errors import DecodeError, EncodeError
from staticconsumer.protocol._base import (
    AUTHORIZED_OPERATIONS_OMITTED,
    SMALL_UVARINT,
    ClassicReader,
    ClassicWriter,
    FlexWriter,
    Message,
    TaggedFields,
    pack_i16,
    pack_i32,
    refuse,
    truncate_reason,
    unpack_i16,
    unpack_i32,
    uvarint_bytes,
)

# --------------------------------------------------------------------------------------------- JoinGroup

_MAX_INT16 = 0x7FFF


class JoinGroupRequestProtocol(msgspec.Struct, gc=False):
    name: str = ""
    metadata: bytes = b""
    unknown_tagged_fields: TaggedFields = ()


class JoinGroupRequest(Message):
    """Join or rejoin; ``group_instance_id`` makes the member static (v5+)."""

    API_KEY: ClassVar[int] = 11
    API_NAME: ClassVar[str] = "JoinGroup"
    KIND: ClassVar[str] = "request"
    MIN_VERSION: ClassVar[int] = 0
    MAX_VERSION: ClassVar[int] = 9
    FLEXIBLE_FROM: ClassVar[int] = 6

    group_id: str = ""
    session_timeout_ms: int = 0
    rebalance_timeout_ms: int = -1
    member_id: str = ""
    group_instance_id: str | None = None
    protocol_type: str = ""
    protocols: list[JoinGroupRequestProtocol] = msgspec.field(default_factory=list)
    reason: str | None = None
    unknown_tagged_fields: TaggedFields = ()

    def _write(self, w: ClassicWriter, version: int) -> None:
        if version < 5 and self.group_instance_id is not None:
            refuse("JoinGroupRequest", version, "group_instance_id", 5)
        w.string(self.group_id)
        w.i32(self.session_timeout_ms)
        if version >= 1:
            w.i32(self.rebalance_timeout_ms)
        w.string(self.member_id)
        if version >= 5:
            w.nstring(self.group_instance_id)
        w.string(self.protocol_type)
        w.array_len(len(self.protocols))
        for p in self.protocols:
            w.string(p.name)
            w.raw_bytes(p.metadata)
            w.tagged(p.unknown_tagged_fields)
        if version >= 8:
            w.nstring(truncate_reason(self.reason))
        w.tagged(self.unknown_tagged_fields)

    @classmethod
    def _read(cls, r: ClassicReader, version: int) -> Self:
        group_id = r.string()
        session_timeout_ms = r.i32()
        rebalance_timeout_ms = r.i32() if version >= 1 else -1
        member_id = r.string()
        group_instance_id = r.nstring() if version >= 5 else None
        protocol_type = r.string()
        protocols = [
            JoinGroupRequestProtocol(r.string(), r.raw_bytes(), r.tagged()) for _ in range(r.array_len())
        ]
        reason = r.nstring() if version >= 8 else None
        return cls(
            group_id,
            session_timeout_ms,
            rebalance_timeout_ms,
            member_id,
            group_instance_id,
            protocol_type,
            protocols,
            reason,
            r.tagged(),
        )


class JoinGroupResponseMember(msgspec.Struct, gc=False):
    member_id: str = ""
    group_instance_id: str | None = None
    metadata: bytes = b""
    unknown_tagged_fields: TaggedFields = ()


def _write_members(w: ClassicWriter, members: list[JoinGroupResponseMember], with_iid: bool) -> None:
    """Hot loop (a big group's leader gets every member's metadata): field writes inlined and the
    pieces gathered in a list, joined once (cheaper than growing the bytearray per field)."""
    parts: list[bytes] = []
    add = parts.append
    small = SMALL_UVARINT
    if w.flexible:
        for m in members:
            data = m.member_id.encode("utf-8", "replace")
            n = len(data)
            if n < 0x7F:
                add(small[n + 1])
            else:
                if n > _MAX_INT16:
                    raise EncodeError(f"member id of {n} bytes exceeds the int16 length limit")
                add(uvarint_bytes(n + 1))
            add(data)
            iid = m.group_instance_id
            if iid is None:
                add(b"\x00")
            else:
                data = iid.encode("utf-8", "replace")
                n = len(data)
                if n < 0x7F:
                    add(small[n + 1])
                else:
                    if n > _MAX_INT16:
                        raise EncodeError(f"instance id of {n} bytes exceeds the int16 length limit")
                    add(uvarint_bytes(n + 1))
                add(data)
            data = m.metadata
            n = len(data)
            add(small[n + 1] if n < 0x7F else uvarint_bytes(n + 1))
            add(data)
            if m.unknown_tagged_fields:
                tags = FlexWriter()
                tags.tagged(m.unknown_tagged_fields)
                add(bytes(tags))
            else:
                add(b"\x00")
        w += b"".join(parts)
        return
    for m in members:
        if m.unknown_tagged_fields:
            raise EncodeError("unknown tagged fields can only be written in flexible versions")
        data = m.member_id.encode("utf-8", "replace")
        if len(data) > _MAX_INT16:
            raise EncodeError(f"member id of {len(data)} bytes exceeds the int16 length limit")
        add(pack_i16(len(data)))
        add(data)
        if with_iid:
            iid = m.group_instance_id
            if iid is None:
                add(b"\xff\xff")
            else:
                data = iid.encode("utf-8", "replace")
                if len(data) > _MAX_INT16:
                    raise EncodeError(f"instance id of {len(data)} bytes exceeds the int16 length limit")
                add(pack_i16(len(data)))
                add(data)
        data = m.metadata
        add(pack_i32(len(data)))
        add(data)
    w += b"".join(parts)


def _read_members(r: ClassicReader, n: int, with_iid: bool) -> list[JoinGroupResponseMember]:
    """Hot loop twin of :func:`_write_members`; every length is checked against the end first."""
    data = r.data
    pos = r.pos
    end = r.end
    member = JoinGroupResponseMember
    members: list[JoinGroupResponseMember] = []
    append = members.append
    if r.flexible:
        for _ in range(n):
            if pos < end and data[pos] < 0x80:
                size = data[pos] - 1
                pos += 1
            else:
                r.pos = pos
                size = r.uvarint() - 1
                pos = r.pos
            stop = pos + size
            if size < 0 or stop > end:
                raise DecodeError("member id: null or longer than the bytes left")
            member_id = data[pos:stop].decode("utf-8")
            pos = stop
            if pos < end and data[pos] < 0x80:
                size = data[pos] - 1
                pos += 1
            else:
                r.pos = pos
                size = r.uvarint() - 1
                pos = r.pos
            if size < 0:
                iid = None
            else:
                stop = pos + size
                if stop > end:
                    raise DecodeError("instance id longer than the bytes left")
                iid = data[pos:stop].decode("utf-8")
                pos = stop
            if pos < end and data[pos] < 0x80:
                size = data[pos] - 1
                pos += 1
            else:
                r.pos = pos
                size = r.uvarint() - 1
                pos = r.pos
            stop = pos + size
            if size < 0 or stop > end:
                raise DecodeError("member metadata: null or longer than the bytes left")
            metadata = data[pos:stop]
            pos = stop
            if pos < end and data[pos] == 0:
                pos += 1
                append(member(member_id, iid, metadata, ()))
            else:
                r.pos = pos
                tags = r.tagged()
                pos = r.pos
                append(member(member_id, iid, metadata, tags))
        r.pos = pos
        return members
    for _ in range(n):
        (size,) = unpack_i16(data, pos)
        pos += 2
        stop = pos + size
        if size < 0 or stop > end:
            raise DecodeError("member id: null or longer than the bytes left")
        member_id = data[pos:stop].decode("utf-8")
        pos = stop
        iid = None
        if with_iid:
            (size,) = unpack_i16(data, pos)
            pos += 2
            if size >= 0:
                stop = pos + size
                if stop > end:
                    raise DecodeError("instance id longer than the bytes left")
                iid = data[pos:stop].decode("utf-8")
                pos = stop
            elif size != -1:
                raise DecodeError(f"negative string length {size}")
        (size,) = unpack_i32(data, pos)
        pos += 4
        stop = pos + size
        if size < 0 or stop > end:
            raise DecodeError("member metadata: null or longer than the bytes left")
        append(member(member_id, iid, data[pos:stop], ()))
        pos = stop
    r.pos = pos
    return members


class JoinGroupResponse(Message):
    """The join outcome; ``skip_assignment`` (v9+) tells a returning static leader not to reassign."""

    API_KEY: ClassVar[int] = 11
    API_NAME: ClassVar[str] = "JoinGroup"
    KIND: ClassVar[str] = "response"
    MIN_VERSION: ClassVar[int] = 0
    MAX_VERSION: ClassVar[int] = 9
    FLEXIBLE_FROM: ClassVar[int] = 6

    throttle_time_ms: int = 0
    error_code: int = 0
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = ""
    leader: str = ""
    skip_assignment: bool = False
    member_id: str = ""
    members: list[JoinGroupResponseMember] = msgspec.field(default_factory=list)
    unknown_tagged_fields: TaggedFields = ()

    def _write(self, w: ClassicWriter, version: int) -> None:
        if version < 9 and self.skip_assignment:
            refuse("JoinGroupResponse", version, "skip_assignment", 9)
        if version >= 2:
            w.i32(self.throttle_time_ms)
        w.i16(self.error_code)
        w.i32(self.generation_id)
        if version >= 7:
            w.nstring(self.protocol_type)
            w.nstring(self.protocol_name)
        else:
            if self.protocol_name is None:
                raise EncodeError(f"JoinGroupResponse v{version}: protocol_name is nullable only from v7")
            w.string(self.protocol_name)
        w.string(self.leader)
        if version >= 9:
            w.boolean(self.skip_assignment)
        w.string(self.member_id)
        w.array_len(len(self.members))
        _write_members(w, self.members, version >= 5)
        w.tagged(self.unknown_tagged_fields)

    @classmethod
    def _read(cls, r: ClassicReader, version: int) -> Self:
        throttle_time_ms = r.i32() if version >= 2 else 0
        error_code = r.i16()
        generation_id = r.i32()
        if version >= 7:
            protocol_type = r.nstring()
            protocol_name = r.nstring()
        else:
            protocol_type = None
            protocol_name = r.string()
        leader = r.string()
        skip_assignment = r.boolean() if version >= 9 else False
        member_id = r.string()
        members = _read_members(r, r.array_len(), version >= 5)
        return cls(
            throttle_time_ms,
            error_code,
            generation_id,
            protocol_type,
            protocol_name,
            leader,
            skip_assignment,
            member_id,
            members,
            r.tagged(),
        )


# --------------------------------------------------------------------------------------------- SyncGroup


class SyncGroupRequestAssignment(msgspec.Struct, gc=False):
    member_id: str = ""
    assignment: bytes = b""
    unknown_tagged_fields: TaggedFields = ()


class SyncGroupRequest(Message):
    """Leader sends assignments, followers send none; instance id v3+, protocol type/name v5+."""

    API_KEY: ClassVar[int] = 14
    API_NAME: ClassVar[str] = "SyncGroup"
    KIND: ClassVar[str] = "request"
    MIN_VERSION: ClassVar[int] = 0
    MAX_VERSION: ClassVar[int] = 5
    FLEXIBLE_FROM: ClassVar[int] = 4

    group_id: str = ""
    generation_id: int = 0
    member_id: str = ""
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignments: list[SyncGroupRequestAssignment] = msgspec.field(default_factory=list)
    unknown_tagged_fields: TaggedFields = ()

    def _write(self, w: ClassicWriter, version: int) -> None:
        if version < 3 and self.group_instance_id is not None:
            refuse("SyncGroupRequest", version, "group_instance_id", 3)
        w.string(self.group_id)
        w.i32(self.generation_id)
        w.string(self.member_id)
        if version >= 3:
            w.nstring(self.group_instance_id)
        if version >= 5:
            w.nstring(self.protocol_type)
            w.nstring(self.protocol_name)
        w.array_len(len(self.assignments))
        for a in self.assignments:
            w.string(a.member_id)
            w.raw_bytes(a.assignment)
            w.tagged(a.unknown_tagged_fields)
        w.tagged(self.unknown_tagged_fields)

    @classmethod
    def _read(cls, r: ClassicReader, version: int) -> Self:
        group_id = r.string()
        generation_id = r.i32()
        member_id = r.string()
        group_instance_id = r.nstring() if version >= 3 else None
        if version >= 5:
            protocol_type = r.nstring()
            protocol_name = r.nstring()
        else:
            protocol_type = protocol_name = None
        assignments = [
            SyncGroupRequestAssignment(r.string(), r.raw_bytes(), r.tagged()) for _ in range(r.array_len())
        ]
        return cls(
            group_id,
            generation_id,
            member_id,
            group_instance_id,
            protocol_type,
            protocol_name,
            assignments,
            r.tagged(),
        )


class SyncGroupResponse(Message):
    API_KEY: ClassVar[int] = 14
    API_NAME: ClassVar[str] = "SyncGroup"
    KIND: ClassVar[str] = "response"
    MIN_VERSION: ClassVar[int] = 0
    MAX_VERSION: ClassVar[int] = 5
    FLEXIBLE_FROM: ClassVar[int] = 4

    throttle_time_ms: int = 0
    error_code: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""
    unknown_tagged_fields: TaggedFields = ()

    def _write(self, w: ClassicWriter, version: int) -> None:
        if version >= 1:
            w.i32(self.throttle_time_ms)
        w.i16(self.error_code)
        if version >= 5:
            w.nstring(self.protocol_type)
            w.nstring(self.protocol_name)
        w.raw_bytes(self.assignment)
        w.tagged(self.unknown_tagged_fields)

    @classmethod
    def _read(cls, r: ClassicReader, version: int) -> Self:
        throttle_time_ms = r.i32() if version >= 1 else 0
        error_code = r.i16()
        if version >= 5:
            protocol_type = r.nstring()
            protocol_name = r.nstring()
        else:
            protocol_type = protocol_name = None
        return cls(throttle_time_ms, error_code, protocol_type, protocol_name, r.raw_bytes(), r.tagged())


# --------------------------------------------------------------------------------------------- Heartbeat


class HeartbeatRequest(Message):
    API_KEY: ClassVar[int] = 12
    API_NAME: ClassVar[str] = "Heartbeat"
    KIND: ClassVar[str] = "request"
    MIN_VERSION: ClassVar[int] = 0
    MAX_VERSION: ClassVar[int] = 4
    FLEXIBLE_FROM: ClassVar[int] = 4

    group_id: str = ""
    generation_id: int = 0
    member_id: str = ""
    group_instance_id: str | None = None
    unknown_tagged_fields: TaggedFields = ()

    def _write(self, w: ClassicWriter, version: int) -> None:
        if version < 3 and self.group_instance_id is not None:
            refuse("HeartbeatRequest", version, "group_instance_id", 3)
        w.string(self.group_id)
        w.i32(self.generation_id)
        w.string(self.member_id)
        if version >= 3:
            w.nstring(self.group_instance_id)
        w.tagged(self.unknown_tagged_fields)

    @classmethod
    def _read(cls, r: ClassicReader, version: int) -> Self:
        group_id = r.string()
        generation_id = r.i32()
        member_id = r.string()
        group_instance_id = r.nstring() if version >= 3 else None
        return cls(group_id, generation_id, member_id, group_instance_id, r.tagged())


class HeartbeatResponse(Message):
    API_KEY: ClassVar[int] = 12
    API_NAME: ClassVar[str] = "Heartbeat"
    KIND: ClassVar[str] = "response"
    MIN_VERSION: ClassVar[int] = 0
    MAX_VERSION: ClassVar[int] = 4
    FLEXIBLE_FROM: ClassVar[int] = 4

    throttle_time_ms: int = 0
    error_code: int = 0
    unknown_tagged_fields: TaggedFields = ()

    def _write(self, w: ClassicWriter, version: int) -> None:
        if version >= 1:
            w.i32(self.throttle_time_ms)
        w.i16(self.error_code)
        w.tagged(self.unknown_tagged_fields)

    @classmethod
    def _read(cls, r: ClassicReader, version: int) -> Self:
        throttle_time_ms = r.i32() if version >= 1 else 0
        return cls(throttle_time_ms, r.i16(), r.tagged())


# --------------------------------------------------------------------------------------------- LeaveGroup


class MemberIdentity(msgspec.Struct, gc=False):
    """One leaving member; ``member_id=""`` plus an instance id removes a static member (v3+)."""

    member_id: str = ""
    group_instance_id: str | None = None
    reason: str | None = None
    unknown_tagged_fields: TaggedFields = ()


class LeaveGroupRequest(Message):
    """Leave one member (v0-v2, sent as a bare MemberId) or a batch of identities (v3+).

    Kafka's spec has a top-level MemberId for v0-v2 and a Members array for v3+; here both are the
    ``members`` list so callers do not branch on the version: below v3 it must hold exactly one
    member with no instance id.
    """

    API_KEY: ClassVar[int] = 13
    API_NAME: ClassVar[str] = "LeaveGroup"
    KIND: ClassVar[str] = "request"
    MIN_VERSION: ClassVar[int] = 0
    MAX_VERSION: ClassVar[int] = 5
    FLEXIBLE_FROM: ClassVar[int] = 4

    group_id: str = ""
    members: list[MemberIdentity] = msgspec.field(default_factory=list)
    unknown_tagged_fields: TaggedFields = ()

    def _write(self, w: ClassicWriter, version: int) -> None:
        w.string(self.group_id)
        if version < 3:
            if len(self.members) != 1:
                raise EncodeError(
                    f"LeaveGroupRequest v{version} takes exactly one member, not {len(self.members)} "
                    f"(batched leaves need v3+)"
                )
            only = self.members[0]
            if only.group_instance_id is not None:
                refuse("LeaveGroupRequest", version, "group_instance_id", 3)
            if only.unknown_tagged_fields:
                raise EncodeError(f"LeaveGroupRequest v{version}: member tagged fields need v4+")
            w.string(only.member_id)
        else:
            w.array_len(len(self.members))
            for m in self.members:
                w.string(m.member_id)
                w.nstring(m.group_instance_id)
                if version >= 5:
                    w.nstring(truncate_reason(m.reason))
                w.tagged(m.unknown_tagged_fields)
        w.tagged(self.unknown_tagged_fields)

    @classmethod
    def _read(cls, r: ClassicReader, version: int) -> Self:
        group_id = r.string()
        if version < 3:
            members = [MemberIdentity(r.string())]
        elif version < 5:
            members = [
                MemberIdentity(r.string(), r.nstring(), None, r.tagged()) for _ in range(r.array_len())
            ]
        else:
            members = [
                MemberIdentity(r.string(), r.nstring(), r.nstring(), r.tagged()) for _ in range(r.array_len())
            ]
        return cls(group_id, members, r.tagged())


class LeaveGroupMemberResponse(msgspec.Struct, gc=False):
    member_id: str = ""
    group_instance_id: str | None = None
    error_code: int = 0
    unknown_tagged_fields: TaggedFields = ()


class LeaveGroupResponse(Message):
    API_KEY: ClassVar[int] = 13
    API_NAME: ClassVar[str] = "LeaveGroup"
    KIND: ClassVar[str] = "response"
    MIN_VERSION: ClassVar[int] = 0
    MAX_VERSION: ClassVar[int] = 5
    FLEXIBLE_FROM: ClassVar[int] = 4

    throttle_time_ms: int = 0
    error_code: int = 0
    members: list[LeaveGroupMemberResponse] = msgspec.field(default_factory=list)
    unknown_tagged_fields: TaggedFields = ()

    def _write(self, w: ClassicWriter, version: int) -> None:
        if version < 3 and self.members:
            refuse("LeaveGroupResponse", version, "members", 3)
        if version >= 1:
            w.i32(self.throttle_time_ms)
        w.i16(self.error_code)
        if version >= 3:
            w.array_len(len(self.members))
            for m in self.members:
                w.string(m.member_id)
                w.nstring(m.group_instance_id)
                w.i16(m.error_code)
                w.tagged(m.unknown_tagged_fields)
        w.tagged(self.unknown_tagged_fields)

    @classmethod
    def _read(cls, r: ClassicReader, version: int) -> Self:
        throttle_time_ms = r.i32() if version >= 1 else 0
        error_code = r.i16()
        members = (
            [
                LeaveGroupMemberResponse(r.string(), r.nstring(), r.i16(), r.tagged())
                for _ in range(r.array_len())
            ]
            if version >= 3
            else []
        )
        return cls(throttle_time_ms, error_code, members, r.tagged())


# ----------------------------------------------------------------------------------------- DescribeGroups


class DescribeGroupsRequest(Message):
    API_KEY: ClassVar[int] = 15
    API_NAME: ClassVar[str] = "DescribeGroups"
    KIND: ClassVar[str] = "request"
    MIN_VERSION: ClassVar[int] = 0
    MAX_VERSION: ClassVar[int] = 5
    FLEXIBLE_FROM: ClassVar[int] = 5

    groups: list[str] = msgspec.field(default_factory=list)
    include_authorized_operations: bool = False
    unknown_tagged_fields: TaggedFields = ()

    def _write(self, w: ClassicWriter, version: int) -> None:
        if version < 3 and self.include_authorized_operations:
            refuse("DescribeGroupsRequest", version, "include_authorized_operations", 3)
        w.string_array(self.groups)
        if version >= 3:
            w.boolean(self.include_authorized_operations)
        w.tagged(self.unknown_tagged_fields)

    @classmethod
    def _read(cls, r: ClassicReader, version: int) -> Self:
        groups = r.string_array()
        include = r.boolean() if version >= 3 else False
        return cls(groups, include, r.tagged())


class DescribedGroupMember(msgspec.Struct, gc=False):
    member_id: str = ""
    group_instance_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    member_metadata: bytes = b""
    member_assignment: bytes = b""
    unknown_tagged_fields: TaggedFields = ()


class DescribedGroup(msgspec.Struct):
    error_code: int = 0
    group_id: str = ""
    group_state: str = ""
    protocol_type: str = ""
    protocol_data: str = ""
    members: list[DescribedGroupMember] = msgspec.field(default_factory=list)
    authorized_operations: int = AUTHORIZED_OPERATIONS_OMITTED
    unknown_tagged_fields: TaggedFields = ()


class DescribeGroupsResponse(Message):
    """Group state and members; v4+ lists each member's instance id."""

    API_KEY: ClassVar[int] = 15
    API_NAME: ClassVar[str] = "DescribeGroups"
    KIND: ClassVar[str] = "response"
    MIN_VERSION: ClassVar[int] = 0
    MAX_VERSION: ClassVar[int] = 5
    FLEXIBLE_FROM: ClassVar[int] = 5

    throttle_time_ms: int = 0
    groups: list[DescribedGroup] = msgspec.field(default_factory=list)
    unknown_tagged_fields: TaggedFields = ()

    def _write(self, w: ClassicWriter, version: int) -> None:
        if version >= 1:
            w.i32(self.throttle_time_ms)
        w.array_len(len(self.groups))
        for g in self.groups:
            if version < 3 and g.authorized_operations != AUTHORIZED_OPERATIONS_OMITTED:
                refuse("DescribeGroupsResponse", version, "authorized_operations", 3)
            w.i16(g.error_code)
            w.string(g.group_id)
            w.string(g.group_state)
            w.string(g.protocol_type)
            w.string(g.protocol_data)
            w.array_len(len(g.members))
            for m in g.members:
                w.string(m.member_id)
                if version >= 4:
                    w.nstring(m.group_instance_id)
                w.string(m.client_id)
                w.string(m.client_host)
                w.raw_bytes(m.member_metadata)
                w.raw_bytes(m.member_assignment)
                w.tagged(m.unknown_tagged_fields)
            if version >= 3:
                w.i32(g.authorized_operations)
            w.tagged(g.unknown_tagged_fields)
        w.tagged(self.unknown_tagged_fields)

    @classmethod
    def _read(cls, r: ClassicReader, version: int) -> Self:
        throttle_time_ms = r.i32() if version >= 1 else 0
        groups: list[DescribedGroup] = []
        for _ in range(r.array_len()):
            error_code = r.i16()
            group_id = r.string()
            group_state = r.string()
            protocol_type = r.string()
            protocol_data = r.string()
            members = [
                DescribedGroupMember(
                    r.string(),
                    r.nstring() if version >= 4 else None,
                    r.string(),
                    r.string(),
                    r.raw_bytes(),
                    r.raw_bytes(),
                    r.tagged(),
                )
                for _ in range(r.array_len())
            ]
            authorized = r.i32() if version >= 3 else AUTHORIZED_OPERATIONS_OMITTED
            groups.append(
                DescribedGroup(
                    error_code,
                    group_id,
                    group_state,
                    protocol_type,
                    protocol_data,
                    members,
                    authorized,
                    r.tagged(),
                )
            )
        return cls(throttle_time_ms, groups, r.tagged())

"""Admin-side messages the group tools need: ListGroups v0-v5 and CreateAcls v1-v3.

ListGroups lets ``staticconsumer.admin`` list groups with their state and type; CreateAcls lets the test
broker grant a principal access to a group (KRaft's StandardAuthorizer keeps ACLs in the metadata log, so
they can only be created through the protocol). Same rules as the group messages: a non-default field the
version cannot carry raises, Kafka's *ignorable* fields are silently dropped.
"""

from __future__ import annotations

from typing import ClassVar, Self

import msgspec

from staticconsumer.protocol._base import ClassicReader, ClassicWriter, Message, TaggedFields, refuse

# ------------------------------------------------------------------------------------------ ListGroups


class ListGroupsRequest(Message):
    """All groups of one broker; ``states_filter`` (v4+) and ``types_filter`` (v5+) narrow it down."""

    API_KEY: ClassVar[int] = 16
    API_NAME: ClassVar[str] = "ListGroups"
    KIND: ClassVar[str] = "request"
    MIN_VERSION: ClassVar[int] = 0
    MAX_VERSION: ClassVar[int] = 5
    FLEXIBLE_FROM: ClassVar[int] = 3

    states_filter: list[str] = msgspec.field(default_factory=list)
    types_filter: list[str] = msgspec.field(default_factory=list)
    unknown_tagged_fields: TaggedFields = ()

    def _write(self, w: ClassicWriter, version: int) -> None:
        if version < 4 and self.states_filter:
            refuse("ListGroupsRequest", version, "states_filter", 4)
        if version < 5 and self.types_filter:
            refuse("ListGroupsRequest", version, "types_filter", 5)
        if version >= 4:
            w.string_array(self.states_filter)
        if version >= 5:
            w.string_array(self.types_filter)
        w.tagged(self.unknown_tagged_fields)

    @classmethod
    def _read(cls, r: ClassicReader, version: int) -> Self:
        states = r.string_array() if version >= 4 else []
        types = r.string_array() if version >= 5 else []
        return cls(states, types, r.tagged())


class ListedGroup(msgspec.Struct, gc=False):
    group_id: str = ""
    protocol_type: str = ""
    group_state: str = ""
    group_type: str = ""
    unknown_tagged_fields: TaggedFields = ()


class ListGroupsResponse(Message):
    """``group_state`` (v4+) and ``group_type`` (v5+) are ignorable: dropped below their version."""

    API_KEY: ClassVar[int] = 16
    API_NAME: ClassVar[str] = "ListGroups"
    KIND: ClassVar[str] = "response"
    MIN_VERSION: ClassVar[int] = 0
    MAX_VERSION: ClassVar[int] = 5
    FLEXIBLE_FROM: ClassVar[int] = 3

    throttle_time_ms: int = 0
    error_code: int = 0
    groups: list[ListedGroup] = msgspec.field(default_factory=list)
    unknown_tagged_fields: TaggedFields = ()

    def _write(self, w: ClassicWriter, version: int) -> None:
        if version >= 1:
            w.i32(self.throttle_time_ms)
        w.i16(self.error_code)
        w.array_len(len(self.groups))
        for g in self.groups:
            w.string(g.group_id)
            w.string(g.protocol_type)
            if version >= 4:
                w.string(g.group_state)
            if version >= 5:
                w.string(g.group_type)
            w.tagged(g.unknown_tagged_fields)
        w.tagged(self.unknown_tagged_fields)

    @classmethod
    def _read(cls, r: ClassicReader, version: int) -> Self:
        throttle_time_ms = r.i32() if version >= 1 else 0
        error_code = r.i16()
        groups = []
        for _ in range(r.array_len()):
            group_id = r.string()
            protocol_type = r.string()
            state = r.string() if version >= 4 else ""
            kind = r.string() if version >= 5 else ""
            groups.append(ListedGroup(group_id, protocol_type, state, kind, r.tagged()))
        return cls(throttle_time_ms, error_code, groups, r.tagged())


# ------------------------------------------------------------------------------------------ CreateAcls

RESOURCE_TYPE_TOPIC = 2
RESOURCE_TYPE_GROUP = 3
RESOURCE_TYPE_CLUSTER = 4
PATTERN_TYPE_LITERAL = 3
PATTERN_TYPE_PREFIXED = 4
OPERATION_ALL = 2
OPERATION_READ = 3
OPERATION_WRITE = 4
OPERATION_CREATE = 5
OPERATION_DELETE = 6
OPERATION_ALTER = 7
OPERATION_DESCRIBE = 8
PERMISSION_DENY = 2
PERMISSION_ALLOW = 3


class AclCreation(msgspec.Struct, gc=False):
    """One ACL binding; the numbers are Kafka's ``ResourceType``, ``PatternType``, ``AclOperation`` codes."""

    resource_type: int = 0
    resource_name: str = ""
    resource_pattern_type: int = PATTERN_TYPE_LITERAL
    principal: str = ""
    host: str = ""
    operation: int = 0
    permission_type: int = 0
    unknown_tagged_fields: TaggedFields = ()


class CreateAclsRequest(Message):
    """v1-v3 (v0, without the pattern type, is gone from Kafka 4)."""

    API_KEY: ClassVar[int] = 30
    API_NAME: ClassVar[str] = "CreateAcls"
    KIND: ClassVar[str] = "request"
    MIN_VERSION: ClassVar[int] = 1
    MAX_VERSION: ClassVar[int] = 3
    FLEXIBLE_FROM: ClassVar[int] = 2

    creations: list[AclCreation] = msgspec.field(default_factory=list)
    unknown_tagged_fields: TaggedFields = ()

    def _write(self, w: ClassicWriter, version: int) -> None:
        w.array_len(len(self.creations))
        for c in self.creations:
            w.i8(c.resource_type)
            w.string(c.resource_name)
            w.i8(c.resource_pattern_type)
            w.string(c.principal)
            w.string(c.host)
            w.i8(c.operation)
            w.i8(c.permission_type)
            w.tagged(c.unknown_tagged_fields)
        w.tagged(self.unknown_tagged_fields)

    @classmethod
    def _read(cls, r: ClassicReader, version: int) -> Self:
        creations = [
            AclCreation(r.i8(), r.string(), r.i8(), r.string(), r.string(), r.i8(), r.i8(), r.tagged())
            for _ in range(r.array_len())
        ]
        return cls(creations, r.tagged())


class AclCreationResult(msgspec.Struct, gc=False):
    error_code: int = 0
    error_message: str | None = None
    unknown_tagged_fields: TaggedFields = ()


class CreateAclsResponse(Message):
    """One result per creation, in the request's order."""

    API_KEY: ClassVar[int] = 30
    API_NAME: ClassVar[str] = "CreateAcls"
    KIND: ClassVar[str] = "response"
    MIN_VERSION: ClassVar[int] = 1
    MAX_VERSION: ClassVar[int] = 3
    FLEXIBLE_FROM: ClassVar[int] = 2

    throttle_time_ms: int = 0
    results: list[AclCreationResult] = msgspec.field(default_factory=list)
    unknown_tagged_fields: TaggedFields = ()

    def _write(self, w: ClassicWriter, version: int) -> None:
        w.i32(self.throttle_time_ms)
        w.array_len(len(self.results))
        for result in self.results:
            w.i16(result.error_code)
            w.nstring(result.error_message)
            w.tagged(result.unknown_tagged_fields)
        w.tagged(self.unknown_tagged_fields)

    @classmethod
    def _read(cls, r: ClassicReader, version: int) -> Self:
        throttle_time_ms = r.i32()
        results = [AclCreationResult(r.i16(), r.nstring(), r.tagged()) for _ in range(r.array_len())]
        return cls(throttle_time_ms, results, r.tagged())

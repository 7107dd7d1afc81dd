"""FindCoordinator v0-v6: one key (v0-v3) or a batch of keys (v4+)."""

from __future__ import annotations

from typing import ClassVar, Self

import msgspec

from staticconsumer.errors import EncodeError
from staticconsumer.protocol._base import ClassicReader, ClassicWriter, Message, TaggedFields, refuse

KEY_TYPE_GROUP = 0
KEY_TYPE_TRANSACTION = 1


class FindCoordinatorRequest(Message):
    """``key`` is used up to v3, ``coordinator_keys`` from v4; the other one must stay empty."""

    API_KEY: ClassVar[int] = 10
    API_NAME: ClassVar[str] = "FindCoordinator"
    KIND: ClassVar[str] = "request"
    MIN_VERSION: ClassVar[int] = 0
    MAX_VERSION: ClassVar[int] = 6
    FLEXIBLE_FROM: ClassVar[int] = 3

    key: str = ""
    key_type: int = KEY_TYPE_GROUP
    coordinator_keys: list[str] = msgspec.field(default_factory=list)
    unknown_tagged_fields: TaggedFields = ()

    def _write(self, w: ClassicWriter, version: int) -> None:
        if version < 1 and self.key_type != KEY_TYPE_GROUP:
            refuse("FindCoordinatorRequest", version, "key_type", 1)
        if version <= 3:
            if self.coordinator_keys:
                refuse("FindCoordinatorRequest", version, "coordinator_keys", 4)
            w.string(self.key)
        elif self.key:
            refuse("FindCoordinatorRequest", version, "key", 0, 3)
        if version >= 1:
            w.i8(self.key_type)
        if version >= 4:
            w.string_array(self.coordinator_keys)
        w.tagged(self.unknown_tagged_fields)

    @classmethod
    def _read(cls, r: ClassicReader, version: int) -> Self:
        key = r.string() if version <= 3 else ""
        key_type = r.i8() if version >= 1 else KEY_TYPE_GROUP
        keys = r.string_array() if version >= 4 else []
        return cls(key, key_type, keys, r.tagged())


class Coordinator(msgspec.Struct, gc=False):
    key: str = ""
    node_id: int = 0
    host: str = ""
    port: int = 0
    error_code: int = 0
    error_message: str | None = None
    unknown_tagged_fields: TaggedFields = ()


class FindCoordinatorResponse(Message):
    """Single answer in the top-level fields (v0-v3) or one ``Coordinator`` per key (v4+)."""

    API_KEY: ClassVar[int] = 10
    API_NAME: ClassVar[str] = "FindCoordinator"
    KIND: ClassVar[str] = "response"
    MIN_VERSION: ClassVar[int] = 0
    MAX_VERSION: ClassVar[int] = 6
    FLEXIBLE_FROM: ClassVar[int] = 3

    throttle_time_ms: int = 0
    error_code: int = 0
    error_message: str | None = None
    node_id: int = 0
    host: str = ""
    port: int = 0
    coordinators: list[Coordinator] = msgspec.field(default_factory=list)
    unknown_tagged_fields: TaggedFields = ()

    def _write(self, w: ClassicWriter, version: int) -> None:
        if version >= 1:
            w.i32(self.throttle_time_ms)
        if version <= 3:
            if self.coordinators:
                refuse("FindCoordinatorResponse", version, "coordinators", 4)
            w.i16(self.error_code)
            if version >= 1:
                w.nstring(self.error_message)
            w.i32(self.node_id)
            w.string(self.host)
            w.i32(self.port)
        else:
            if self.error_code or self.node_id or self.host or self.port:
                raise EncodeError(
                    f"FindCoordinatorResponse v{version}: answers go in coordinators, "
                    f"the single-key fields exist only up to v3"
                )
            w.array_len(len(self.coordinators))
            for c in self.coordinators:
                w.string(c.key)
                w.i32(c.node_id)
                w.string(c.host)
                w.i32(c.port)
                w.i16(c.error_code)
                w.nstring(c.error_message)
                w.tagged(c.unknown_tagged_fields)
        w.tagged(self.unknown_tagged_fields)

    @classmethod
    def _read(cls, r: ClassicReader, version: int) -> Self:
        throttle_time_ms = r.i32() if version >= 1 else 0
        if version <= 3:
            error_code = r.i16()
            error_message = r.nstring() if version >= 1 else None
            node_id = r.i32()
            host = r.string()
            port = r.i32()
            return cls(throttle_time_ms, error_code, error_message, node_id, host, port, [], r.tagged())
        coordinators = [
            Coordinator(r.string(), r.i32(), r.string(), r.i32(), r.i16(), r.nstring(), r.tagged())
            for _ in range(r.array_len())
        ]
        return cls(throttle_time_ms, 0, None, 0, "", 0, coordinators, r.tagged())


def find_group_coordinator(group: str, version: int) -> FindCoordinatorRequest:
    """FindCoordinator for a consumer group at ``version`` (the key moved into a batch at v4)."""
    if version >= 4:
        return FindCoordinatorRequest(key_type=KEY_TYPE_GROUP, coordinator_keys=[group])
    if version >= 1:
        return FindCoordinatorRequest(key=group, key_type=KEY_TYPE_GROUP)
    return FindCoordinatorRequest(key=group)


def coordinator_answer(response: FindCoordinatorResponse) -> tuple[int, int]:
    """(error code, coordinator node id) of a one-group FindCoordinator, whatever its version."""
    if response.coordinators:
        found = response.coordinators[0]
        return found.error_code, found.node_id
    return response.error_code, response.node_id

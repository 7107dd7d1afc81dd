"""Wire primitives: big-endian integers, classic and compact strings/arrays, tagged fields.

Readers and writers come in a classic and a flexible flavour so that a message codec picks
the flavour once per call instead of branching on every field. Readers check every length
against the bytes that remain *before* slicing or allocating, so hostile input fails fast
with :class:`DecodeError` instead of allocating or looping on a forged length.

Strings are encoded as Java's ``String.getBytes(UTF_8)`` does: a lone surrogate becomes ``?``.
"""

from __future__ import annotations

import base64
import binascii
import struct
from collections.abc import Sequence
from typing import Final, TypeAlias
from uuid import UUID

from staticconsumer.errors import DecodeError, EncodeError

TaggedFields: TypeAlias = tuple[tuple[int, bytes], ...]
"""Unknown tagged fields, kept in wire order as (tag, raw bytes) so they survive a round trip."""

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")

pack_i8 = _I8.pack
pack_i16 = _I16.pack
pack_i32 = _I32.pack
pack_i64 = _I64.pack
unpack_i8 = _I8.unpack_from
unpack_i16 = _I16.unpack_from
unpack_i32 = _I32.unpack_from
unpack_i64 = _I64.unpack_from

ZERO_UUID: Final = UUID(int=0)
"""Kafka's Uuid.ZERO_UUID: "no topic id" (the default of every uuid field)."""


def uuid_text(value: UUID) -> str:
    """Kafka's text form of a Uuid (topic ids in logs, tools and JSON): URL-safe base64, no padding."""
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode("ascii")


def parse_uuid_text(text: str) -> UUID:
    """The inverse of :func:`uuid_text`, as Kafka's Uuid.fromString: 22 base64 characters, 16 bytes."""
    if len(text) != 22:
        raise ValueError(f"not a Kafka Uuid (22 base64 characters expected): {text!r}")
    try:
        data = base64.urlsafe_b64decode(text + "==")
    except (binascii.Error, ValueError) as error:
        raise ValueError(f"not a Kafka Uuid: {text!r} ({error})") from None
    if len(data) != 16:
        raise ValueError(f"not a Kafka Uuid: {text!r}")
    return UUID(bytes=data)


_MAX_INT16 = 0x7FFF
_MAX_INT32 = 0x7FFFFFFF
_MAX_UVARINT32 = 0xFFFFFFFF


SMALL_UVARINT = [bytes((i,)) for i in range(0x80)]
"""One-byte varints 0..127, prebuilt: most compact lengths in practice."""


def uvarint_bytes(value: int) -> bytes:
    """Unsigned LEB128, as Kafka's ByteUtils.writeUnsignedVarint (32-bit range)."""
    if value < 0 or value > _MAX_UVARINT32:
        raise EncodeError(f"unsigned varint out of range: {value}")
    if value < 0x80:
        return SMALL_UVARINT[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


class ClassicWriter(bytearray):
    """Encoder for non-flexible versions: int16 string lengths, int32 array and bytes lengths."""

    __slots__ = ()

    flexible = False

    def i8(self, value: int) -> None:
        self += pack_i8(value)

    def i16(self, value: int) -> None:
        self += pack_i16(value)

    def i32(self, value: int) -> None:
        self += pack_i32(value)

    def i64(self, value: int) -> None:
        self += pack_i64(value)

    def boolean(self, value: bool) -> None:
        self.append(1 if value else 0)

    def uuid(self, value: UUID) -> None:
        """16 raw bytes, most significant first (Kafka's writeUuid: two big-endian longs)."""
        self += value.bytes

    def string(self, value: str) -> None:
        data = value.encode("utf-8", "replace")
        if len(data) > _MAX_INT16:
            raise EncodeError(f"string of {len(data)} bytes exceeds the int16 length limit")
        self += pack_i16(len(data))
        self += data

    def nstring(self, value: str | None) -> None:
        if value is None:
            self += b"\xff\xff"
        else:
            self.string(value)

    def classic_nstring(self, value: str | None) -> None:
        """Nullable int16-length string in every flavour: RequestHeader's ClientId is never compact."""
        if value is None:
            self += b"\xff\xff"
            return
        data = value.encode("utf-8", "replace")
        if len(data) > _MAX_INT16:
            raise EncodeError(f"string of {len(data)} bytes exceeds the int16 length limit")
        self += pack_i16(len(data))
        self += data

    def raw_bytes(self, value: bytes) -> None:
        self += pack_i32(len(value))
        self += value

    def nbytes(self, value: bytes | None) -> None:
        if value is None:
            self += b"\xff\xff\xff\xff"
        else:
            self.raw_bytes(value)

    def array_len(self, n: int) -> None:
        self += pack_i32(n)

    def null_array(self) -> None:
        self += b"\xff\xff\xff\xff"

    def string_array(self, values: Sequence[str]) -> None:
        self.array_len(len(values))
        for value in values:
            self.string(value)

    def int32_array(self, values: Sequence[int]) -> None:
        self.array_len(len(values))
        if values:
            self += struct.pack(f">{len(values)}i", *values)

    def tagged(self, fields: TaggedFields) -> None:
        """Classic versions have no tagged fields; refuse rather than silently drop them."""
        if fields:
            raise EncodeError("unknown tagged fields can only be written in flexible versions")


class FlexWriter(ClassicWriter):
    """Encoder for flexible versions: compact (unsigned varint N+1) lengths and tagged fields."""

    __slots__ = ()

    flexible = True

    def string(self, value: str) -> None:
        data = value.encode("utf-8", "replace")
        n = len(data)
        if n > _MAX_INT16:
            raise EncodeError(f"string of {n} bytes exceeds the int16 length limit")
        if n < 0x7F:
            self.append(n + 1)
        else:
            self += uvarint_bytes(n + 1)
        self += data

    def nstring(self, value: str | None) -> None:
        if value is None:
            self.append(0)
        else:
            self.string(value)

    def raw_bytes(self, value: bytes) -> None:
        n = len(value)
        if n < 0x7F:
            self.append(n + 1)
        else:
            self += uvarint_bytes(n + 1)
        self += value

    def nbytes(self, value: bytes | None) -> None:
        if value is None:
            self.append(0)
        else:
            self.raw_bytes(value)

    def array_len(self, n: int) -> None:
        if n < 0x7F:
            self.append(n + 1)
        else:
            self += uvarint_bytes(n + 1)

    def null_array(self) -> None:
        self.append(0)

    def tagged(self, fields: TaggedFields) -> None:
        if not fields:
            self.append(0)
            return
        self += uvarint_bytes(len(fields))
        for tag, data in fields:
            self += uvarint_bytes(tag)
            self += uvarint_bytes(len(data))
            self += data


class ClassicReader:
    """Decoder for non-flexible versions. Integer reads rely on ``unpack_from`` raising on short input."""

    __slots__ = ("data", "end", "pos")

    flexible = False

    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data = data
        self.pos = pos
        self.end = len(data)

    def remaining(self) -> int:
        return self.end - self.pos

    def i8(self) -> int:
        pos = self.pos
        (value,) = unpack_i8(self.data, pos)
        self.pos = pos + 1
        return int(value)

    def i16(self) -> int:
        pos = self.pos
        (value,) = unpack_i16(self.data, pos)
        self.pos = pos + 2
        return int(value)

    def i32(self) -> int:
        pos = self.pos
        (value,) = unpack_i32(self.data, pos)
        self.pos = pos + 4
        return int(value)

    def i64(self) -> int:
        pos = self.pos
        (value,) = unpack_i64(self.data, pos)
        self.pos = pos + 8
        return int(value)

    def boolean(self) -> bool:
        pos = self.pos
        if pos >= self.end:
            raise DecodeError("truncated boolean")
        self.pos = pos + 1
        return self.data[pos] != 0

    def uuid(self) -> UUID:
        return UUID(bytes=self._take(16, "uuid"))

    def uvarint(self) -> int:
        """Unsigned varint of at most 5 bytes (Kafka rejects longer ones as malformed)."""
        data = self.data
        pos = self.pos
        end = self.end
        result = 0
        shift = 0
        while True:
            if pos >= end:
                raise DecodeError("truncated varint")
            byte = data[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            if byte < 0x80:
                break
            shift += 7
            if shift > 28:
                raise DecodeError("varint longer than 5 bytes")
        self.pos = pos
        if result > _MAX_UVARINT32:
            raise DecodeError("varint exceeds 32 bits")
        return result

    def _length(self, what: str) -> int:
        """Classic string length (int16); -1 means null."""
        return self.i16()

    def _take(self, n: int, what: str) -> bytes:
        pos = self.pos
        end = pos + n
        if end > self.end:
            raise DecodeError(f"{what} of {n} bytes exceeds the {self.end - pos} bytes remaining")
        self.pos = end
        return self.data[pos:end]

    def string(self) -> str:
        n = self._length("string")
        if n < 0:
            raise DecodeError("null in a non-nullable string")
        return self._take(n, "string").decode("utf-8")

    def nstring(self) -> str | None:
        n = self._length("string")
        if n < 0:
            if n != -1:
                raise DecodeError(f"negative string length {n}")
            return None
        return self._take(n, "string").decode("utf-8")

    def classic_nstring(self) -> str | None:
        """Nullable int16-length string in every flavour (RequestHeader's ClientId)."""
        n = self.i16()
        if n < 0:
            if n != -1:
                raise DecodeError(f"negative string length {n}")
            return None
        return self._take(n, "string").decode("utf-8")

    def _bytes_length(self) -> int:
        return self.i32()

    def raw_bytes(self) -> bytes:
        n = self._bytes_length()
        if n < 0:
            raise DecodeError("null in non-nullable bytes")
        return self._take(n, "bytes")

    def nbytes(self) -> bytes | None:
        n = self._bytes_length()
        if n < 0:
            if n != -1:
                raise DecodeError(f"negative bytes length {n}")
            return None
        return self._take(n, "bytes")

    def _array_length(self) -> int:
        return self.i32()

    def array_len(self, min_item_size: int = 1) -> int:
        """Element count of a non-nullable array, checked against the bytes left."""
        n = self._array_length()
        if n < 0:
            raise DecodeError("null in a non-nullable array")
        if n * min_item_size > self.end - self.pos:
            raise DecodeError(f"array of {n} elements cannot fit in {self.end - self.pos} bytes")
        return n

    def narray_len(self, min_item_size: int = 1) -> int:
        """Element count of a nullable array; -1 for null."""
        n = self._array_length()
        if n < 0:
            if n != -1:
                raise DecodeError(f"negative array length {n}")
            return -1
        if n * min_item_size > self.end - self.pos:
            raise DecodeError(f"array of {n} elements cannot fit in {self.end - self.pos} bytes")
        return n

    def string_array(self) -> list[str]:
        n = self.array_len(2 if not self.flexible else 1)
        string = self.string
        return [string() for _ in range(n)]

    def int32_array(self) -> list[int]:
        n = self.array_len(4)
        pos = self.pos
        values = struct.unpack_from(f">{n}i", self.data, pos)
        self.pos = pos + 4 * n
        return list(values)

    def tagged(self) -> TaggedFields:
        return ()

    def finish(self) -> None:
        if self.pos != self.end:
            raise DecodeError(f"{self.end - self.pos} unexpected trailing bytes")


class FlexReader(ClassicReader):
    """Decoder for flexible versions: compact lengths and tagged fields."""

    __slots__ = ()

    flexible = True

    def _length(self, what: str) -> int:
        pos = self.pos
        if pos < self.end:
            byte = self.data[pos]
            if byte < 0x80:
                self.pos = pos + 1
                return byte - 1
        n = self.uvarint()
        if n > _MAX_INT32:
            raise DecodeError(f"{what} length {n} out of range")
        return n - 1

    def _bytes_length(self) -> int:
        return self._length("bytes")

    def _array_length(self) -> int:
        return self._length("array")

    def tagged(self) -> TaggedFields:
        pos = self.pos
        if pos < self.end and self.data[pos] == 0:
            self.pos = pos + 1
            return ()
        count = self.uvarint()
        if count > self.end - self.pos:
            raise DecodeError(f"{count} tagged fields cannot fit in {self.end - self.pos} bytes")
        fields: list[tuple[int, bytes]] = []
        for _ in range(count):
            tag = self.uvarint()
            size = self.uvarint()
            fields.append((tag, self._take(size, "tagged field")))
        return tuple(fields)

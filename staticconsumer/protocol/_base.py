"""The wire primitives (first), the shared shape of every message: typed fields plus one version-driven
encoder and decoder; and the request and response headers with the whole-frame helpers (below
:class:`Message`).

One module, not three (``protocol._codec`` and ``protocol.headers`` before): every ``import
staticconsumer`` loads all three (through ``_aiokafka``), and each module costs a finder lookup, a stat
and an unmarshal (issue 26).
"""

from __future__ import annotations

import base64
import binascii
import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar, Final, NoReturn, Self, TypeAlias, TypeVar
from uuid import UUID

import msgspec

from staticconsumer import errors as _errors  # ApiVersionOutOfRangeError: defined on first use
from staticconsumer.errors import (
    DecodeError,
    EncodeError,
    UnsupportedVersionForFieldError,
)

# -- Wire primitives (was protocol._codec) ---------------------------------------------------------------
#
# Wire primitives: big-endian integers, classic and compact strings/arrays, tagged fields.
#
# Readers and writers come in a classic and a flexible flavour so that a message codec picks
# the flavour once per call instead of branching on every field. Readers check every length
# against the bytes that remain *before* slicing or allocating, so hostile input fails fast
# with :class:`DecodeError` instead of allocating or looping on a forged length.
#
# Strings are encoded as Java's ``String.getBytes(UTF_8)`` does: a lone surrogate becomes ``?``.

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


# -- Messages ------------------------------------------------------------------------------------------

REASON_MAX_CHARS = 255
"""Java's JoinGroupRequest.maybeTruncateReason limit; LeaveGroup member reasons follow the same rule."""

AUTHORIZED_OPERATIONS_OMITTED = -2147483648
"""INT32_MIN: Kafka's "authorized operations were not requested" sentinel (DescribeGroups, Metadata and
ConsumerGroupDescribe share it: here so that none of them loads another's module for it)."""

# Everything a malformed buffer can make the standard library raise while we read it.
_DECODE_FAILURES = (struct.error, UnicodeDecodeError, ValueError, OverflowError, IndexError, MemoryError)


def truncate_reason(reason: str | None) -> str | None:
    """Cut a rejoin/leave reason to 255 characters, as the Java client does before sending.

    Java counts UTF-16 code units (``String.substring(0, 255)``), so a character outside the BMP
    counts twice and one cut in half leaves a lone surrogate, which Java's UTF-8 encoder writes as
    ``?``. We reproduce that so the bytes stay identical.
    """
    if reason is None or len(reason) <= REASON_MAX_CHARS // 2:
        return reason
    units = reason.encode("utf-16-be", "surrogatepass")
    if len(units) <= 2 * REASON_MAX_CHARS:
        return reason
    cut = units[: 2 * REASON_MAX_CHARS].decode("utf-16-be", "surrogatepass")
    if "\ud800" <= cut[-1] <= "\udbff":
        cut = cut[:-1] + "?"
    return cut


def refuse(api: str, version: int, field: str, min_version: int, max_version: int | None = None) -> NoReturn:
    """Raise the field/version error; Java raises UnsupportedVersionException in the same spots."""
    raise UnsupportedVersionForFieldError(api, version, field, min_version, max_version)


class Message(msgspec.Struct):
    """A request or response body. Subclasses pin their API and implement ``_write``/``_read``."""

    API_KEY: ClassVar[int]
    API_NAME: ClassVar[str]
    KIND: ClassVar[str]
    MIN_VERSION: ClassVar[int]
    MAX_VERSION: ClassVar[int]
    DEFAULT_MAX_VERSION: ClassVar[int | None] = None
    """Highest version sent unless the caller asks for more (None: MAX_VERSION). OffsetCommit and
    OffsetFetch stop at v9 by default because v10 names topics only by id, as Java's builders do."""
    FLEXIBLE_FROM: ClassVar[int]

    @classmethod
    def is_flexible(cls, version: int) -> bool:
        return version >= cls.FLEXIBLE_FROM

    @classmethod
    def check_version(cls, version: int) -> None:
        if not cls.MIN_VERSION <= version <= cls.MAX_VERSION:
            raise _errors.ApiVersionOutOfRangeError(cls.__name__, version, cls.MIN_VERSION, cls.MAX_VERSION)

    def encode(self, version: int) -> bytes:
        """The body (no header, no size prefix) at ``version``."""
        cls = type(self)
        cls.check_version(version)
        writer: ClassicWriter = FlexWriter() if version >= cls.FLEXIBLE_FROM else ClassicWriter()
        try:
            self._write(writer, version)
        except struct.error as exc:
            raise EncodeError(f"{cls.__name__} v{version}: {exc}") from exc
        return bytes(writer)

    def encode_into(self, writer: ClassicWriter, version: int) -> None:
        """Append the body to a writer of the right flavour (used for framing with a header)."""
        cls = type(self)
        cls.check_version(version)
        if writer.flexible != (version >= cls.FLEXIBLE_FROM):
            raise EncodeError(f"{cls.__name__} v{version}: writer flavour does not match the version")
        try:
            self._write(writer, version)
        except struct.error as exc:
            raise EncodeError(f"{cls.__name__} v{version}: {exc}") from exc

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview, version: int, offset: int = 0) -> Self:
        """Read a whole body at ``version``; anything wrong with the bytes raises DecodeError only."""
        cls.check_version(version)
        if not isinstance(data, bytes):
            data = bytes(data)
        reader = FlexReader(data, offset) if version >= cls.FLEXIBLE_FROM else ClassicReader(data, offset)
        try:
            message = cls._read(reader, version)
            reader.finish()
        except DecodeError:
            raise
        except _DECODE_FAILURES as exc:
            raise DecodeError(f"{cls.__name__} v{version}: {type(exc).__name__}: {exc}") from exc
        return message

    def _write(self, w: ClassicWriter, version: int) -> None:
        raise NotImplementedError(type(self).__name__)

    @classmethod
    def _read(cls, r: ClassicReader, version: int) -> Self:
        raise NotImplementedError(cls.__name__)


# -- Headers and frames --------------------------------------------------------------------------------
#
# Request header v1/v2 and response header v0/v1, plus whole-frame helpers.
#
# A flexible message version travels with request header v2 (tagged fields after the client id) and
# response header v1 (tagged fields after the correlation id). ClientId stays a classic int16 string
# even in header v2, exactly as Kafka's RequestHeader.json says (``flexibleVersions: none`` for it).

if TYPE_CHECKING:  # annotations only: a TypeVar costs ~0.02 ms to make (issue 26)
    M = TypeVar("M", bound=Message)


class RequestHeader(msgspec.Struct):
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None = None
    unknown_tagged_fields: TaggedFields = ()


class ResponseHeader(msgspec.Struct):
    correlation_id: int
    unknown_tagged_fields: TaggedFields = ()


def request_header_version(message: type[Message], version: int) -> int:
    return 2 if message.is_flexible(version) else 1


def response_header_version(message: type[Message], version: int) -> int:
    return 1 if message.is_flexible(version) else 0


def _write_request_header(w: ClassicWriter, header: RequestHeader, flexible: bool) -> None:
    w.i16(header.api_key)
    w.i16(header.api_version)
    w.i32(header.correlation_id)
    w.classic_nstring(header.client_id)  # always a classic string, even in header v2
    if flexible:
        w.tagged(header.unknown_tagged_fields)
    elif header.unknown_tagged_fields:
        raise EncodeError("request header v1 cannot carry tagged fields")


def encode_request_header(header: RequestHeader, flexible: bool) -> bytes:
    w: ClassicWriter = FlexWriter() if flexible else ClassicWriter()
    try:
        _write_request_header(w, header, flexible)
    except struct.error as exc:
        raise EncodeError(f"request header: {exc}") from exc
    return bytes(w)


def encode_request(
    message: Message,
    version: int,
    correlation_id: int,
    client_id: str | None,
    header_tagged_fields: TaggedFields = (),
) -> bytes:
    """Header plus body, without the int32 size prefix (see :func:`frame`)."""
    cls = type(message)
    cls.check_version(version)
    flexible = cls.is_flexible(version)
    w: ClassicWriter = FlexWriter() if flexible else ClassicWriter()
    header = RequestHeader(cls.API_KEY, version, correlation_id, client_id, header_tagged_fields)
    try:
        _write_request_header(w, header, flexible)
    except struct.error as exc:
        raise EncodeError(f"request header: {exc}") from exc
    message.encode_into(w, version)
    return bytes(w)


def decode_request_header(data: bytes, flexible: bool) -> tuple[RequestHeader, int]:
    """The header and the offset where the body starts."""
    r = FlexReader(data) if flexible else ClassicReader(data)
    try:
        api_key = r.i16()
        api_version = r.i16()
        correlation_id = r.i32()
        client_id = r.classic_nstring()
        tagged = r.tagged()
    except DecodeError:
        raise
    except (struct.error, UnicodeDecodeError) as exc:
        raise DecodeError(f"request header: {exc}") from exc
    return RequestHeader(api_key, api_version, correlation_id, client_id, tagged), r.pos


def encode_response(
    message: Message, version: int, correlation_id: int, header_tagged_fields: TaggedFields = ()
) -> bytes:
    """Response header plus body, without the size prefix (what a broker would send)."""
    cls = type(message)
    cls.check_version(version)
    flexible = cls.is_flexible(version)
    w: ClassicWriter = FlexWriter() if flexible else ClassicWriter()
    try:
        w.i32(correlation_id)
    except struct.error as exc:
        raise EncodeError(f"response header: {exc}") from exc
    if flexible:
        w.tagged(header_tagged_fields)
    elif header_tagged_fields:
        raise EncodeError("response header v0 cannot carry tagged fields")
    message.encode_into(w, version)
    return bytes(w)


def decode_response_header(data: bytes, flexible: bool) -> tuple[ResponseHeader, int]:
    """The response header (v1 when ``flexible``, else v0) and the offset where the body starts."""
    r = FlexReader(data) if flexible else ClassicReader(data)
    try:
        correlation_id = r.i32()
        tagged = r.tagged()
    except DecodeError:
        raise
    except struct.error as exc:
        raise DecodeError(f"response header: {exc}") from exc
    return ResponseHeader(correlation_id, tagged), r.pos


def decode_response(message: type[M], data: bytes, version: int) -> tuple[ResponseHeader, M]:
    """Split a response frame (without size prefix) into its header and typed body."""
    message.check_version(version)
    header, offset = decode_response_header(data, message.is_flexible(version))
    return header, message.decode(data, version, offset)


def frame(payload: bytes) -> bytes:
    """Prefix a request or response with its int32 size, as it travels on the socket."""
    return pack_i32(len(payload)) + payload

"""The shared shape of every message: typed fields plus one version-driven encoder and decoder; and the
request and response headers with the whole-frame helpers (below :class:`Message`).

One module, not two: every ``import staticconsumer`` loads both (through ``_aiokafka``), and each module
costs a finder lookup, a stat and an unmarshal (issue 26).
"""

from __future__ import annotations

import struct
from typing import ClassVar, NoReturn, Self, TypeVar

import msgspec

from staticconsumer import errors as _errors  # ApiVersionOutOfRangeError: defined on first use
from staticconsumer.errors import (
    DecodeError,
    EncodeError,
    UnsupportedVersionForFieldError,
)
from staticconsumer.protocol._codec import (
    ClassicReader,
    ClassicWriter,
    FlexReader,
    FlexWriter,
    TaggedFields,
    pack_i32,
)

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

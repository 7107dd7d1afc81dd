"""The shared shape of every message: typed fields plus one version-driven encoder and decoder."""

from __future__ import annotations

import struct
from typing import ClassVar, NoReturn, Self

import msgspec

from staticconsumer import errors as _errors  # ApiVersionOutOfRangeError: defined on first use
from staticconsumer.errors import (
    DecodeError,
    EncodeError,
    UnsupportedVersionForFieldError,
)
from staticconsumer.protocol._codec import ClassicReader, ClassicWriter, FlexReader, FlexWriter

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

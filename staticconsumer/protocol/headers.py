"""Request header v1/v2 and response header v0/v1, plus whole-frame helpers.

A flexible message version travels with request header v2 (tagged fields after the client id) and
response header v1 (tagged fields after the correlation id). ClientId stays a classic int16 string
even in header v2, exactly as Kafka's RequestHeader.json says (``flexibleVersions: none`` for it).
"""

from __future__ import annotations

import struct
from typing import TypeVar

import msgspec

from staticconsumer.errors import DecodeError, EncodeError
from staticconsumer.protocol._base import Message
from staticconsumer.protocol._codec import (
    ClassicReader,
    ClassicWriter,
    FlexReader,
    FlexWriter,
    TaggedFields,
    pack_i32,
)

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

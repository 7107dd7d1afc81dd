"""Convert messages to and from the JSON form of Kafka's generated ``*JsonConverter`` classes.

That is the form the Java oracle speaks (lower camelCase field names, ``bytes`` as base64, uuids in
Kafka's text form (URL-safe base64), top-level
unknown tagged fields as ``_unknownTaggedFields``), so golden vectors can hold field values that both
sides read. ``to_kafka_json`` emits every field (Java reads fields outside a version and only refuses
non-default ones when writing); ``from_kafka_json`` fills absent fields with our defaults, which are
Java's defaults.
"""

from __future__ import annotations

import base64
from typing import Any, TypeVar

import msgspec
import msgspec.inspect as mi

from staticconsumer.protocol._base import Message, parse_uuid_text, uuid_text
from staticconsumer.protocol.group import LeaveGroupRequest, MemberIdentity

S = TypeVar("S", bound=msgspec.Struct)

_TAGS = "unknown_tagged_fields"


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _encode_value(info: mi.Type, value: Any) -> Any:
    if value is None:
        return None
    if isinstance(info, mi.UnionType):
        for option in info.types:
            if not isinstance(option, mi.NoneType):
                return _encode_value(option, value)
    if isinstance(info, mi.BytesType):
        return base64.b64encode(value).decode("ascii")
    if isinstance(info, mi.UUIDType):
        return uuid_text(value)
    if isinstance(info, mi.ListType):
        return [_encode_value(info.item_type, item) for item in value]
    if isinstance(info, mi.StructType):
        return _struct_to_json(value, top_level=False)
    return value


def _struct_to_json(value: msgspec.Struct, top_level: bool) -> dict[str, Any]:
    info = mi.type_info(type(value))
    assert isinstance(info, mi.StructType)
    out: dict[str, Any] = {}
    for field in info.fields:
        current = getattr(value, field.name)
        if field.name == _TAGS:
            if current and not top_level:
                raise ValueError("Kafka's JSON form has no place for nested unknown tagged fields")
            if current:
                out["_unknownTaggedFields"] = [
                    {"tag": tag, "data": base64.b64encode(data).decode("ascii")} for tag, data in current
                ]
            continue
        out[camel(field.name)] = _encode_value(field.type, current)
    return out


def _decode_value(info: mi.Type, value: Any) -> Any:
    if value is None:
        return None
    if isinstance(info, mi.UnionType):
        for option in info.types:
            if not isinstance(option, mi.NoneType):
                return _decode_value(option, value)
    if isinstance(info, mi.BytesType):
        return base64.b64decode(value)
    if isinstance(info, mi.UUIDType):
        return parse_uuid_text(value)
    if isinstance(info, mi.ListType):
        return [_decode_value(info.item_type, item) for item in value]
    if isinstance(info, mi.StructType):
        return _struct_from_json(info.cls, value)
    return value


def _struct_from_json(cls: type[S], fields: dict[str, Any]) -> S:
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType)
    kwargs: dict[str, Any] = {}
    for field in info.fields:
        if field.name == _TAGS:
            raw = fields.get("_unknownTaggedFields")
            if raw:
                kwargs[_TAGS] = tuple((int(f["tag"]), base64.b64decode(f["data"])) for f in raw)
            continue
        key = camel(field.name)
        if key in fields:
            kwargs[field.name] = _decode_value(field.type, fields[key])
    return cls(**kwargs)


def to_kafka_json(message: msgspec.Struct, version: int | None = None) -> dict[str, Any]:
    """The Java JSON form of a message (or payload). ``version`` matters only for LeaveGroup v0-v2."""
    if isinstance(message, LeaveGroupRequest):
        out = _struct_to_json(message, top_level=True)
        if version is not None and version < 3:
            out["memberId"] = message.members[0].member_id if len(message.members) == 1 else ""
            out["members"] = []
        else:
            out["memberId"] = ""
        return out
    return _struct_to_json(message, top_level=True)


def from_kafka_json(cls: type[S], fields: dict[str, Any], version: int | None = None) -> S:
    """Build our struct from the Java JSON form; absent fields take their defaults."""
    if cls is LeaveGroupRequest and version is not None and version < 3:
        single = {k: v for k, v in fields.items() if k not in ("memberId", "members")}
        message = _struct_from_json(cls, single)
        assert isinstance(message, LeaveGroupRequest)
        message.members = [MemberIdentity(str(fields.get("memberId", "")))]
        return message
    return _struct_from_json(cls, fields)


def message_class(api: str, kind: str) -> type[Message]:
    """``("JoinGroup", "request")`` -> JoinGroupRequest."""
    from staticconsumer.protocol import APIS

    spec = APIS[api]
    return spec.request if kind == "request" else spec.response

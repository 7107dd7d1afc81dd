"""The sticky assignors' subscription userData, byte-compatible with Java's.

``sticky`` (StickyAssignor) sends V1: ``previous_assignment: [ {topic: string, partitions: [int32]} ]``
then ``generation: int32``; V0 is the same without the generation. ``cooperative-sticky`` sends a single
``int32`` generation. Strings are int16-length-prefixed UTF-8, arrays int32-count-prefixed, all
big-endian (Kafka's old Struct/Schema encoding). The wire codec in ``staticconsumer`` imports these.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from itertools import repeat

import msgspec

from ._builtin import encode_cooperative_user_data as encode_cooperative_user_data
from .model import NO_GENERATION, TopicPartition

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I32_PAIR = struct.Struct(">ii")


class StickyMemberData(msgspec.Struct, frozen=True):
    """A member's previous assignment and generation as the sticky assignors read it.

    ``generation`` is None when the member sent none (no userData, or V0), matching Java's
    ``Optional.empty()``; undecodable userData gives no partitions and generation -1, as in Java.
    """

    partitions: tuple[TopicPartition, ...]
    generation: int | None


def encode_sticky_user_data(partitions: Iterable[TopicPartition], generation: int | None) -> bytes:
    """Java StickyAssignor's userData: V1 when ``generation`` is given, else V0.

    Topics appear in first-seen order; Java groups them in a HashMap, so byte order may differ from a
    Java member's, but both decode to the same assignment.
    """
    grouped: dict[str, list[int]] = {}
    for topic, partition in partitions:
        grouped.setdefault(topic, []).append(partition)
    chunks = [_I32.pack(len(grouped))]
    for topic, parts in grouped.items():
        raw = topic.encode("utf-8")
        if len(raw) > 0x7FFF:
            raise ValueError("topic name longer than 32767 UTF-8 bytes")
        chunks.append(_I16.pack(len(raw)))
        chunks.append(raw)
        chunks.append(_I32.pack(len(parts)))
        chunks.append(struct.pack(f">{len(parts)}i", *parts))
    if generation is not None:
        chunks.append(_I32.pack(generation))
    return b"".join(chunks)


class _Truncated(Exception):
    pass


def _read_assignment(data: bytes, names: dict[bytes, str]) -> tuple[list[TopicPartition], int]:
    """Parse ``previous_assignment``; returns it and the offset after it.

    Written for speed: a leader decodes every member's userData, a million partitions at Java's
    scale test, so topic names are decoded once (``names`` caches them across members) and an
    entry's partition count and first partition are read in one go.
    """
    unpack_i32 = _I32.unpack_from
    unpack_i16 = _I16.unpack_from
    unpack_pair = _I32_PAIR.unpack_from
    end = len(data)
    out: list[TopicPartition] = []
    append = out.append
    try:
        (count,) = unpack_i32(data, 0)
        if count < 0 or count > end:
            raise _Truncated
        off = 4
        for _ in range(count):
            (length,) = unpack_i16(data, off)
            off += 2
            if length < 0 or off + length > end:
                raise _Truncated
            raw = data[off : off + length]
            off += length
            topic = names.get(raw)
            if topic is None:
                # Java decodes invalid UTF-8 with replacement characters rather than failing.
                topic = names[raw] = raw.decode("utf-8", "replace")
            if off + 8 <= end:
                n, first = unpack_pair(data, off)
            else:
                # Room for the count only: valid just for an empty partition list.
                (n,) = unpack_i32(data, off)
                first = 0
                if n != 0:
                    raise _Truncated
            off += 4
            if n == 1:
                append((topic, first))
                off += 4
            elif n:
                if n < 0 or off + 4 * n > end:
                    raise _Truncated
                out.extend(zip(repeat(topic, n), struct.unpack_from(f">{n}i", data, off), strict=True))
                off += 4 * n
    except struct.error:
        raise _Truncated from None
    return out, off


PartitionIds = dict[bytes, tuple[int, int] | None]
"""For :func:`decode_sticky_user_data_ids`: a topic name's UTF-8 bytes -> (id of its partition 0,
partition count), or None for a topic whose claims do not count."""


def decode_sticky_user_data_ids(
    data: bytes | None, ids: PartitionIds, resolve: Callable[[str], tuple[int, int] | None]
) -> tuple[list[int], int | None]:
    """:func:`decode_sticky_user_data` straight into partition ids, for a leader's assignor.

    A claim to topic ``t`` partition ``p`` becomes ``base + p`` where ``ids`` (filled on demand by
    ``resolve(decoded topic name)``) gives ``(base, count)``; claims to unresolved topics and to
    partitions outside ``0 <= p < count`` are dropped. Same V1/V0/undecodable rules (undecodable: no
    claims, generation -1), without a tuple per partition: a leader reads a million of them at Java's
    scale test, mostly one partition per topic entry.
    """
    if not data:
        return [], None
    unpack_i32 = _I32.unpack_from
    unpack_i16 = _I16.unpack_from
    unpack_pair = _I32_PAIR.unpack_from
    end = len(data)
    out: list[int] = []
    append = out.append
    try:
        (count,) = unpack_i32(data, 0)
        if count < 0 or count > end:
            raise _Truncated
        off = 4
        for _ in range(count):
            (length,) = unpack_i16(data, off)
            off += 2
            if length < 0 or off + length > end:
                raise _Truncated
            raw = data[off : off + length]
            off += length
            if raw in ids:
                found = ids[raw]
            else:
                # Java decodes invalid UTF-8 with replacement characters rather than failing.
                found = ids[raw] = resolve(raw.decode("utf-8", "replace"))
            if off + 8 <= end:
                n, first = unpack_pair(data, off)
            else:
                (n,) = unpack_i32(data, off)
                first = 0
                if n != 0:
                    raise _Truncated
            off += 4
            if n == 1:
                if found is not None and 0 <= first < found[1]:
                    append(found[0] + first)
                off += 4
            elif n:
                if n < 0 or off + 4 * n > end:
                    raise _Truncated
                if found is not None:
                    base, limit = found
                    parts = struct.unpack_from(f">{n}i", data, off)
                    if min(parts) >= 0 and max(parts) < limit:
                        out += map(base.__add__, parts) if base else parts
                    else:
                        out += [base + p for p in parts if 0 <= p < limit]
                off += 4 * n
    except struct.error:
        return [], NO_GENERATION
    except _Truncated:
        return [], NO_GENERATION
    if off + 4 <= end:
        (generation,) = _I32.unpack_from(data, off)
        return out, generation
    return out, None


def decode_sticky_user_data(
    data: bytes | None, topic_names: dict[bytes, str] | None = None
) -> StickyMemberData:
    """Read a StickyAssignor member's userData the way Java does: V1, else V0, else nothing.

    ``topic_names`` may be a dict shared across calls, caching decoded topic names: a leader decoding
    thousands of members' userData then decodes each topic name once.
    """
    if not data:
        return StickyMemberData((), None)
    try:
        partitions, off = _read_assignment(data, {} if topic_names is None else topic_names)
    except _Truncated:
        return StickyMemberData((), NO_GENERATION)
    if off + 4 <= len(data):
        (generation,) = _I32.unpack_from(data, off)
        return StickyMemberData(tuple(partitions), generation)
    return StickyMemberData(tuple(partitions), None)


def decode_cooperative_user_data(data: bytes | None) -> int | None:
    """The generation in a CooperativeStickyAssignor userData; -1 if unreadable, None if absent."""
    if data is None:
        return None
    if len(data) < 4:
        return NO_GENERATION
    (generation,) = _I32.unpack_from(data, 0)
    return int(generation)

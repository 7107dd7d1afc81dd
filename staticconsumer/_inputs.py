"""What the application passes to StaticConsumer, checked before anything crosses to the membership
thread or the network.

Bad input is a ``TypeError`` (wrong kind of value) or ``ValueError`` (right kind, impossible value) whose
message names the argument and the entry, so it can never surface later as a network or encoding error
of the membership. The accepted shapes are aiokafka's: a partition is any ``(topic, partition)`` tuple
(aiokafka's ``TopicPartition`` and ours are both NamedTuples), an offset to commit is an ``int``, an
``OffsetAndMetadata`` (aiokafka's or ours) or an ``(offset, metadata)`` tuple.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from staticconsumer.membership import OffsetAndMetadata, TopicPartition

MAX_OFFSET = 2**63 - 1
"""Offsets are int64 on the wire."""


def _kind(value: object) -> str:
    return type(value).__name__


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def partition(value: object, argument: str) -> TopicPartition:
    """A ``(topic, partition)`` pair as our TopicPartition; ``argument`` names it in the error."""
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str) and _is_int(value[1]):
        if value[1] < 0:
            raise ValueError(f"{argument}: partition {value[1]} of topic {value[0]!r} is negative")
        return TopicPartition(value[0], value[1])
    raise TypeError(
        f"{argument} must be a TopicPartition (a (topic: str, partition: int) pair), not {_kind(value)}: "
        f"{value!r}"
    )


def partitions(values: Iterable[object], argument: str) -> tuple[TopicPartition, ...]:
    """Each of ``values`` as a TopicPartition (``argument[i]`` names a bad one)."""
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise TypeError(f"{argument} must be a collection of TopicPartition, not {_kind(values)}")
    return tuple(partition(value, f"{argument}[{index}]") for index, value in enumerate(values))


def offset(value: object, argument: str) -> int:
    """An offset to read from: a non-negative int64."""
    if not _is_int(value):
        raise TypeError(f"{argument} must be an int offset, not {_kind(value)}: {value!r}")
    assert isinstance(value, int)
    if not 0 <= value <= MAX_OFFSET:
        raise ValueError(f"{argument} must be an offset from 0 to 2**63-1, not {value}")
    return value


def _offset_and_metadata(value: object, argument: str) -> OffsetAndMetadata:
    if _is_int(value):
        return OffsetAndMetadata(offset(value, argument))
    if isinstance(value, OffsetAndMetadata):
        found: tuple[object, object] = (value.offset, value.metadata)
    elif isinstance(value, tuple | list) and len(value) == 2:  # aiokafka's OffsetAndMetadata, (offset, meta)
        found = (value[0], value[1])
    else:
        raise TypeError(
            f"{argument} must be an int offset, an OffsetAndMetadata or an (offset, metadata) tuple, not "
            f"{_kind(value)}: {value!r}"
        )
    number, metadata = found
    if not isinstance(metadata, str):
        raise TypeError(f"{argument}: the metadata must be a str, not {_kind(metadata)}: {metadata!r}")
    leader_epoch = value.leader_epoch if isinstance(value, OffsetAndMetadata) else None
    return OffsetAndMetadata(offset(number, f"{argument} offset"), metadata, leader_epoch)


def commit_offsets(offsets: object) -> dict[TopicPartition, OffsetAndMetadata]:
    """``commit(offsets)``'s argument as the membership takes it; every entry checked first."""
    if not isinstance(offsets, Mapping):
        raise TypeError(
            f"offsets must be a mapping of TopicPartition to the next offset to read, not {_kind(offsets)}"
        )
    result: dict[TopicPartition, OffsetAndMetadata] = {}
    for key, value in offsets.items():
        tp = partition(key, f"offsets key {key!r}")
        result[tp] = _offset_and_metadata(value, f"offsets[{tp!r}]")
    return result


def timestamps(values: object) -> dict[TopicPartition, int]:
    """``offsets_for_times(timestamps)``: partition -> milliseconds since the epoch, never negative."""
    if not isinstance(values, Mapping):
        raise TypeError(
            f"timestamps must be a mapping of TopicPartition to milliseconds, not {_kind(values)}"
        )
    result: dict[TopicPartition, int] = {}
    for key, value in values.items():
        tp = partition(key, f"timestamps key {key!r}")
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise TypeError(f"timestamps[{tp!r}] must be milliseconds (int), not {_kind(value)}: {value!r}")
        if value < 0:
            raise ValueError(f"timestamps[{tp!r}] is {value}: a target time cannot be negative")
        result[tp] = int(value)
    return result


def topics(values: object) -> frozenset[str]:
    """A subscription's topic names: a list, tuple or set of non-empty str (a bare str is refused)."""
    if isinstance(values, str | bytes) or not isinstance(values, list | tuple | set | frozenset):
        raise TypeError(
            f"topics must be a list, tuple or set of topic names, not {_kind(values)}: {values!r}"
        )
    for index, topic in enumerate(values):
        if not isinstance(topic, str) or not topic:
            raise TypeError(f"topics[{index}] must be a non-empty str, not {topic!r}")
    return frozenset(values)


def pattern(value: object) -> str:
    """A subscription pattern: a str (or compiled pattern) that compiles."""
    if isinstance(value, re.Pattern):
        value = value.pattern
    if not isinstance(value, str):
        raise TypeError(f"pattern must be a str regular expression, not {_kind(value)}: {value!r}")
    try:
        re.compile(value)
    except re.error as error:
        raise ValueError(f"pattern {value!r} is not a valid regular expression: {error}") from error
    return value


def deserializer(value: object, argument: str) -> Callable[[bytes | None], Any] | None:
    """``key_deserializer``/``value_deserializer``: None (raw bytes) or a callable of one argument."""
    if value is not None and not callable(value):
        raise TypeError(
            f"{argument} must be a callable taking bytes (or None), not {_kind(value)}: {value!r}"
        )
    return value


def listener(value: object) -> object:
    """A rebalance listener: ours, aiokafka's, or any object with at least one of the three callbacks."""
    callbacks = ("on_partitions_revoked", "on_partitions_assigned", "on_partitions_lost")
    if not any(callable(getattr(value, name, None)) for name in callbacks):
        raise TypeError(
            "listener must be a ConsumerRebalanceListener (staticconsumer's or aiokafka's) or an object with "
            f"on_partitions_revoked/on_partitions_assigned, not {_kind(value)}"
        )
    return value

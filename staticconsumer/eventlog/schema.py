"""The membership event log's records: one JSON object per line, schema version 1.

Every record is flat (a ``type`` tag plus fields) so that Spark, jq or a SQL engine reads the log with
one schema. Fields common to all records say who (group, instance, member, session), when (``ts``, wall
clock) and in which generation; ``seq`` orders the records of one session even when clocks disagree.
Additions that old readers can ignore keep version 1; a change of meaning bumps ``SCHEMA_VERSION``.
"""

from __future__ import annotations

from typing import Final

import msgspec

SCHEMA_VERSION: Final = 1


class Partition(msgspec.Struct, frozen=True):
    """One topic partition, as ``{"topic": ..., "partition": ...}`` (a struct column in Spark)."""

    topic: str
    partition: int


class Record(msgspec.Struct, kw_only=True, tag_field="type"):
    """Fields every record carries."""

    v: int = SCHEMA_VERSION
    ts: float
    """Wall-clock seconds since the epoch (``time.time()`` of the writing process)."""
    group: str
    instance: str | None
    """group.instance.id; None for a dynamic member."""
    member: str
    """The member id the coordinator gave this session ("" before the first JoinGroup answer)."""
    generation: int
    """The member's generation after this step; -1 when not in one."""
    session: str
    """Random id of one consumer run (one ``start()``); a restart is a new session."""
    seq: int
    """Position of the record in its session, from 0: the order within a process, whatever the clocks."""
    partitions: list[Partition] = []


class Joining(Record, tag="joining"):
    """The consumer started and begins to join the group (a process start, for the analytics)."""


class Rejoin(Record, tag="rejoin"):
    """A JoinGroup after the first of this session: a rebalance this member takes part in."""

    reason: str


class Synced(Record, tag="sync"):
    """SyncGroup succeeded: the member is in ``generation``; ``leader`` is the leader's member id."""

    leader: str
    is_leader: bool
    skip_assignment: bool
    """The broker told the leader to skip the assignment (KIP-814: a static leader rejoined)."""
    protocol: str | None
    rebalance_protocol: str | None = None
    """``eager`` or ``cooperative`` (KIP-429); absent in logs written before it existed."""


class Assigned(Record, tag="assigned"):
    """The whole assignment of ``generation``: the member owns ``partitions`` from now. Under the
    cooperative protocol that is what it kept plus what it gained (partitions it gave up in this
    generation have a ``revoked`` record before this one)."""


class Revoked(Record, tag="revoked"):
    """The member gives ``partitions`` up cleanly (before a rejoin, or on stop)."""

    reason: str


class Lost(Record, tag="lost"):
    """``partitions`` were taken away without a clean revoke: another member may own them already."""

    reason: str


class Committed(Record, tag="commit"):
    """A commit of ``partitions`` finished; ``error`` None means every offset was committed."""

    error: str | None


class HeartbeatFailed(Record, tag="heartbeat_failed"):
    """A heartbeat answered an error; ``UNKNOWN_MEMBER_ID`` means the session timed out (evicted)."""

    error: str
    code: int


class Fenced(Record, tag="fenced"):
    """Another process now holds this instance id; this consumer is finished."""

    error: str


class Failed(Record, tag="failed"):
    """The consumer stopped on any other fatal error."""

    error: str


class Leaving(Record, tag="leaving"):
    """A LeaveGroup was sent (dynamic members on stop, static members only when asked to)."""

    reason: str


class Stopped(Record, tag="stopped"):
    """The consumer stopped; it owns nothing from here on."""

    error: str | None


class Dropped(Record, tag="dropped"):
    """How many records ``sink`` has dropped so far in this session (a running total, never reset)."""

    sink: str
    dropped: int


AnyRecord = (
    Joining
    | Rejoin
    | Synced
    | Assigned
    | Revoked
    | Lost
    | Committed
    | HeartbeatFailed
    | Fenced
    | Failed
    | Leaving
    | Stopped
    | Dropped
)

RECORD_TYPES: Final[tuple[type[Record], ...]] = (
    Joining,
    Rejoin,
    Synced,
    Assigned,
    Revoked,
    Lost,
    Committed,
    HeartbeatFailed,
    Fenced,
    Failed,
    Leaving,
    Stopped,
    Dropped,
)

_encoder: Final = msgspec.json.Encoder()
_decoder: Final = msgspec.json.Decoder(AnyRecord)


def encode_line(record: Record) -> bytes:
    """One JSON line, newline included."""
    return _encoder.encode(record) + b"\n"


def decode_line(line: bytes | str) -> AnyRecord:
    """Parse one line; raises ``msgspec.ValidationError``/``DecodeError`` for anything not in the schema."""
    record: AnyRecord = _decoder.decode(line)
    return record


def tag_of(record_type: type[Record]) -> str:
    """The ``type`` value a record class is written with."""
    tag = record_type.__struct_config__.tag
    assert isinstance(tag, str)
    return tag

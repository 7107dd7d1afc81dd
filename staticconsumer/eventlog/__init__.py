"""The membership event log: what every consumer did in its group, as versioned JSON-lines records.

Enable it with ``staticconsumer.event.log.path`` and/or ``staticconsumer.event.log.topic`` (see
docs/event-log.md); ``StaticConsumer`` then attaches an :class:`EventLog` observer. The records feed
``staticconsumer analyze`` (docs/analytics.md).
"""

from .observer import EventLog
from .schema import (
    RECORD_TYPES,
    SCHEMA_VERSION,
    AnyRecord,
    Partition,
    Record,
    decode_line,
    encode_line,
    tag_of,
)
from .sinks import KafkaSink, RotatingFileSink, Sink

__all__ = [
    "RECORD_TYPES",
    "SCHEMA_VERSION",
    "AnyRecord",
    "EventLog",
    "KafkaSink",
    "Partition",
    "Record",
    "RotatingFileSink",
    "Sink",
    "decode_line",
    "encode_line",
    "tag_of",
]

"""OpenTelemetry traces and metrics of group membership and of records (opentelemetry-api only).

``StaticConsumer`` attaches a ``TelemetryObserver`` (membership) and a ``RecordTracer`` (records) by
default; both report to the global tracer and meter providers, which do nothing until the application
installs the OpenTelemetry SDK. See docs/telemetry.md for every span, attribute and metric.
"""

from __future__ import annotations

from staticconsumer.membership import MembershipObserver

from . import attributes
from .instruments import partition_lag
from .observer import TelemetryObserver, error_type_of, error_type_of_code
from .records import ProcessParent, RecordLoop, RecordTracer, caller_context


def telemetry_observers(
    telemetry: bool | MembershipObserver, *, client_id: str | None
) -> tuple[MembershipObserver, ...]:
    """What ``StaticConsumer(telemetry=...)`` means: on by default, off with False, or your own observer."""
    if telemetry is True:
        return (TelemetryObserver(client_id=client_id),)
    if telemetry is False:
        return ()
    return (telemetry,)


__all__ = [
    "ProcessParent",
    "RecordLoop",
    "RecordTracer",
    "TelemetryObserver",
    "attributes",
    "caller_context",
    "error_type_of",
    "error_type_of_code",
    "partition_lag",
    "telemetry_observers",
]

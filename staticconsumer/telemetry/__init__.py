"""OpenTelemetry traces and metrics of group membership (opentelemetry-api only).

``StaticConsumer`` attaches a ``TelemetryObserver`` by default; it reports to the global tracer and
meter providers, which do nothing until the application installs the OpenTelemetry SDK. See
docs/telemetry.md for every span, attribute and metric.
"""

from __future__ import annotations

from staticconsumer.membership import MembershipObserver

from . import attributes
from .observer import TelemetryObserver, error_type_of, error_type_of_code


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
    "TelemetryObserver",
    "attributes",
    "error_type_of",
    "error_type_of_code",
    "telemetry_observers",
]

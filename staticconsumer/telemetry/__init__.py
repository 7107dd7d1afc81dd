"""OpenTelemetry traces and metrics of group membership and of records (opentelemetry-api only).

``StaticConsumer`` attaches a ``TelemetryObserver`` (membership) and a ``RecordTracer`` (records) by
default; both report to the global tracer and meter providers, which do nothing until the application
installs the OpenTelemetry SDK. See docs/telemetry.md for every span, attribute and metric.

Nothing here imports OpenTelemetry until it is used: a process that never touches OpenTelemetry
(no SDK, no ``OTEL_*`` configuration) does not pay for its import at start (issue 18). The names
below load their modules on first access.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .deferred import DeferredRecordTracer, RecordLoop, api_imported, caller_context

if TYPE_CHECKING:
    from staticconsumer.membership import MembershipObserver, MemberView
    from staticconsumer.membership.actions import Action
    from staticconsumer.membership.events import Event

    from . import attributes
    from .instruments import partition_lag
    from .observer import TelemetryObserver, error_type_of, error_type_of_code
    from .records import ProcessParent, RecordTracer

_LAZY = {
    "attributes": ".attributes",
    "partition_lag": ".instruments",
    "TelemetryObserver": ".observer",
    "error_type_of": ".observer",
    "error_type_of_code": ".observer",
    "ProcessParent": ".records",
    "RecordTracer": ".records",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    loaded = importlib.import_module(module, __name__)
    value = loaded if module == f".{name}" else getattr(loaded, name)
    globals()[name] = value
    return value


def opentelemetry_in_use() -> bool:
    """Whether this process uses OpenTelemetry: its API is imported (an SDK installed, an instrumented
    library, the application's own spans), or ``OTEL_*`` variables configure it."""
    return api_imported() or any(key.startswith("OTEL_") for key in os.environ)


class DeferredTelemetryObserver:
    """A ``TelemetryObserver`` that comes into being when OpenTelemetry is first used in the process.

    Until then every span and metric would go to the API's no-op providers, so nothing is lost by not
    importing it; from the first membership step after OpenTelemetry is imported (an SDK installed
    after the consumer was built), ``observer`` reports as a ``TelemetryObserver`` built then would.
    Each step looks only at the imported modules (two dict lookups): ``OTEL_*`` variables were read when
    the consumer was built, and scanning the environment at every step cost more than the step.
    """

    def __init__(self, *, client_id: str | None) -> None:
        self._client_id = client_id
        self.observer: TelemetryObserver | None = None

    def observe(self, event: Event, produced: Sequence[Action], view: MemberView) -> None:
        observer = self.observer
        if observer is None:
            if not api_imported():
                return
            from .observer import TelemetryObserver

            observer = self.observer = TelemetryObserver(client_id=self._client_id)
        observer.observe(event, produced, view)


def telemetry_observers(
    telemetry: bool | MembershipObserver, *, client_id: str | None
) -> tuple[MembershipObserver, ...]:
    """What ``StaticConsumer(telemetry=...)`` means: on by default, off with False, or your own observer.

    On by default means a ``TelemetryObserver`` when OpenTelemetry is in use already, else a
    :class:`DeferredTelemetryObserver` that builds one once it is.
    """
    if telemetry is True:
        if opentelemetry_in_use():
            from .observer import TelemetryObserver

            return (TelemetryObserver(client_id=client_id),)
        return (DeferredTelemetryObserver(client_id=client_id),)
    if telemetry is False:
        return ()
    return (telemetry,)


def record_tracer(
    telemetry: bool | MembershipObserver, **options: Any
) -> RecordTracer | DeferredRecordTracer | None:
    """What ``StaticConsumer(telemetry=...)`` means for records (``options``: ``RecordTracer``'s).

    None with False; a ``TelemetryObserver`` given as ``telemetry`` lends its providers, any other
    observer leaves them global. A ``RecordTracer`` when OpenTelemetry is in use already, else a
    :class:`DeferredRecordTracer` that builds one once it is.
    """
    if telemetry is False:
        return None
    observer_module = sys.modules.get(f"{__name__}.observer")  # a TelemetryObserver imported it
    if observer_module is not None and isinstance(telemetry, observer_module.TelemetryObserver):
        options = {
            **options,
            "tracer_provider": telemetry.tracer_provider,
            "meter_provider": telemetry.meter_provider,
        }
    if opentelemetry_in_use():
        from .records import RecordTracer

        return RecordTracer(**options)
    return DeferredRecordTracer(**options)


__all__ = [
    "DeferredRecordTracer",
    "DeferredTelemetryObserver",
    "ProcessParent",
    "RecordLoop",
    "RecordTracer",
    "TelemetryObserver",
    "attributes",
    "caller_context",
    "error_type_of",
    "error_type_of_code",
    "opentelemetry_in_use",
    "partition_lag",
    "record_tracer",
    "telemetry_observers",
]

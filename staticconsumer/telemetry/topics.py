"""The telemetry of subscribed topics that do not exist: one span per change, with an event naming them.

The consumer makes exactly one call here (:func:`report_missing_topics`), on the membership thread, each
time the set of missing subscribed topics changes (some went missing, some appeared). Nothing is
reported without a :class:`TelemetryObserver` (``StaticConsumer(telemetry=False)``), and like every
other span it costs nothing until the application installs an OpenTelemetry SDK.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Status, StatusCode

from . import attributes as a
from .observer import TelemetryObserver


def report_missing_topics(
    observers: Iterable[object],
    *,
    group_id: str,
    missing: Collection[str],
    newly_missing: Collection[str],
    appeared: Collection[str],
) -> None:
    """Span ``staticconsumer.topics.missing`` (status ERROR while any subscribed topic is missing) with
    an event ``topics missing`` and/or ``topics appeared`` listing the topics, for each telemetry
    observer among ``observers`` (its tracer, identity attributes and client id)."""
    for observer in observers:
        if not isinstance(observer, TelemetryObserver):
            continue
        tracer: trace.Tracer = observer._tracer  # the observer's provider, so tests and SDKs see it too
        attributes = {
            a.MESSAGING_SYSTEM: a.MESSAGING_SYSTEM_KAFKA,
            a.MESSAGING_CONSUMER_GROUP_NAME: group_id,
            **observer.span_attributes,  # the identity, once the observer has seen the machine
            a.TOPICS_MISSING: sorted(missing),
        }
        span = tracer.start_span(a.SPAN_TOPICS_MISSING, context=Context(), attributes=attributes)
        if newly_missing:
            span.add_event(a.EVENT_TOPICS_MISSING, {a.TOPICS: sorted(newly_missing)})
        if appeared:
            span.add_event(a.EVENT_TOPICS_APPEARED, {a.TOPICS: sorted(appeared)})
        if missing:
            span.set_status(Status(StatusCode.ERROR, "subscribed topics missing"))
        span.end()

"""The cheap producer context of a record (issue 26), on OpenTelemetry's public API only.

With a ratio sampler most records are not sampled, yet each still needs its producer context read
(downstream spans and logs join that trace, unsampled). ``read_traceparent`` reads the W3C
``traceparent`` header straight from the record's bytes when the configured propagator is the default
one (``tracecontext``, optionally with ``baggage``). It only takes the canonical form (version 00,
lowercase, no ``tracestate``/``baggage`` header); anything else goes to the configured propagator, so
both give the same parent for every record. The sampling decision itself is the SDK's: every span
goes through ``Tracer.start_span``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.propagators.textmap import TextMapPropagator

_TRACEPARENT = re.compile(rb"00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")
"""The canonical version-00 traceparent; matched whole (``fullmatch``)."""
_GENERIC_ONLY = frozenset({"tracestate", "baggage"})
"""Headers the default propagator reads beyond traceparent: their records take the generic path."""
_DEFAULT_FIELDS = (
    frozenset({"traceparent", "tracestate"}),
    frozenset({"traceparent", "tracestate", "baggage"}),
)
"""The public ``fields`` of a composite of the default propagators (W3C trace context, W3C baggage)."""
_ZERO = 0
_EMPTY = Context()
"""The base of every producer context (as the propagator extracts into ``Context()``); contexts are
immutable, so one serves all."""
_TRACE_FLAGS = {f"{flags:02x}".encode(): trace.TraceFlags(flags) for flags in range(256)}
"""Every trace-flags byte as the header spells it (the regex admits lowercase hex only), built once."""

GENERIC = object()
"""``read_traceparent``'s answer when the record is not for the fast path."""


def is_default_w3c(propagator: TextMapPropagator) -> bool:
    """Whether ``propagator`` is OpenTelemetry's default (W3C trace context, with or without W3C
    baggage) and nothing else. Exact types, so a subclass that reads more is never bypassed; a
    composite is judged by its public ``fields``, so any other propagator inside it (one reading
    another header) sends every record to the propagator."""
    from opentelemetry.propagators.composite import CompositePropagator
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    if type(propagator) is TraceContextTextMapPropagator:
        return True
    if type(propagator) is not CompositePropagator:
        return False
    try:
        fields = frozenset(propagator.fields)
    except Exception:  # a propagator that cannot say what it reads is not the default
        return False
    return fields in _DEFAULT_FIELDS


def read_traceparent(headers: Sequence[tuple[str, bytes | None]]) -> Context | object | None:
    """The producer context of a record's headers as the default propagator extracts it (None: the
    record has no traceparent), or ``GENERIC`` when the headers are not in the canonical form."""
    found = read_w3c(headers)
    if isinstance(found, tuple):
        context: Context = found[1]
        return context
    return found


def read_w3c(
    headers: Sequence[tuple[str, bytes | None]],
) -> tuple[trace.SpanContext, Context] | object | None:
    """``read_traceparent``'s answer with the producer's span context beside its context, so the
    per-record path reads it from neither (a context lookup and an ABC check saved per record)."""
    found: bytes | None = None
    for key, value in headers:
        if key == "traceparent":
            if found is None and value is not None:
                found = value
        elif key in _GENERIC_ONLY:
            return GENERIC
    if found is None:
        return None
    match = _TRACEPARENT.fullmatch(found)
    if match is None:
        return GENERIC
    trace_hex, span_hex, flags = match.groups()
    trace_id, span_id = int(trace_hex, 16), int(span_hex, 16)
    if trace_id == _ZERO or span_id == _ZERO:
        return GENERIC
    span_context = trace.SpanContext(trace_id, span_id, True, _TRACE_FLAGS[flags])  # remote
    return span_context, trace.set_span_in_context(trace.NonRecordingSpan(span_context), _EMPTY)

"""The cheap path of a record whose span the sampler drops (issue 26).

With a ratio sampler most records are not sampled, yet each still needs its producer context read
(downstream spans and logs join that trace, unsampled) and a span made current. Two shortcuts make
that cheap without changing what is recorded:

- ``read_traceparent``: the W3C ``traceparent`` header read straight from the record's bytes when the
  configured propagator is the default one (``tracecontext``, optionally with ``baggage``). It only
  takes the canonical form (version 00, lowercase, no ``tracestate``/``baggage`` header); anything
  else goes to the configured propagator, so both give the same parent for every record.
- ``presampler``: the SDK's sampler when its verdict depends on nothing but the parent context and
  the trace id (the SDK's own static, ratio and parent-based samplers). Asked before the span's
  attributes and links are built, a "drop" lets the consumer start a bare span (the SDK still makes
  it, so ids and flags are the SDK's own) and skip the rest. Other samplers may read attributes or
  links, so they always get the full span.

Only ``sys.modules`` is looked at for the SDK: the SDK is never imported from here.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.propagators.textmap import TextMapPropagator

_TRACEPARENT = re.compile(rb"00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")
"""The canonical version-00 traceparent; matched whole (``fullmatch``)."""
_GENERIC_ONLY = frozenset({"tracestate", "baggage"})
"""Headers the default propagator reads beyond traceparent: their records take the generic path."""
_ZERO = 0

GENERIC = object()
"""``read_traceparent``'s answer when the record is not for the fast path."""


def is_default_w3c(propagator: TextMapPropagator) -> bool:
    """Whether ``propagator`` is OpenTelemetry's default (W3C trace context, with or without W3C
    baggage) and nothing else: exact types, so a subclass that reads more is never bypassed."""
    from opentelemetry.baggage.propagation import W3CBaggagePropagator
    from opentelemetry.propagators.composite import CompositePropagator
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    if type(propagator) is TraceContextTextMapPropagator:
        return True
    if type(propagator) is not CompositePropagator:
        return False
    inner = getattr(propagator, "_propagators", None)
    if not isinstance(inner, Sequence):
        return False
    kinds = [type(p) for p in inner]
    return TraceContextTextMapPropagator in kinds and all(
        k in (TraceContextTextMapPropagator, W3CBaggagePropagator) for k in kinds
    )


def read_traceparent(headers: Sequence[tuple[str, bytes | None]]) -> Context | object | None:
    """The producer context of a record's headers as the default propagator extracts it (None: the
    record has no traceparent), or ``GENERIC`` when the headers are not in the canonical form."""
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
    trace_id, span_id = int(match[1], 16), int(match[2], 16)
    if trace_id == _ZERO or span_id == _ZERO:
        return GENERIC
    span_context = trace.SpanContext(
        trace_id=trace_id,
        span_id=span_id,
        is_remote=True,
        trace_flags=trace.TraceFlags(int(match[3], 16)),
    )
    return trace.set_span_in_context(trace.NonRecordingSpan(span_context), Context())


_BLIND_SAMPLERS = (
    "StaticSampler",
    "TraceIdRatioBased",
    "ParentBased",
    "ParentBasedTraceIdRatio",
    "_AlwaysOn",
    "_AlwaysOff",
    "_ParentBasedAlwaysOn",
    "_ParentBasedAlwaysOff",
)
_PARENT_BASED_DELEGATES = (
    "_root",
    "_remote_parent_sampled",
    "_remote_parent_not_sampled",
    "_local_parent_sampled",
    "_local_parent_not_sampled",
)


def presampler(tracer_provider: object) -> Any | None:
    """The provider's sampler if it can drop a span knowing only its parent and trace id; else None
    (no SDK, another sampler, or one that never drops)."""
    sampling = sys.modules.get("opentelemetry.sdk.trace.sampling")
    if sampling is None:
        return None
    sampler = getattr(tracer_provider, "sampler", None)
    if sampler is None or not _attribute_blind(sampling, sampler, depth=0):
        return None
    if isinstance(sampler, sampling.StaticSampler) and getattr(sampler, "_decision", None) is not (
        sampling.Decision.DROP
    ):
        return None  # ALWAYS_ON: asking would only cost
    return sampler


def _attribute_blind(sampling: Any, sampler: object, depth: int) -> bool:
    """The SDK's own samplers, whose verdicts read neither attributes nor links."""
    known = tuple(getattr(sampling, name) for name in _BLIND_SAMPLERS if hasattr(sampling, name))
    if depth > 4 or type(sampler) not in known:
        return False
    if isinstance(sampler, sampling.ParentBased):
        for name in _PARENT_BASED_DELEGATES:
            delegate = getattr(sampler, name, None)
            if delegate is None or not _attribute_blind(sampling, delegate, depth + 1):
                return False
    return True

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


class Presampler:
    """Asks the SDK's sampler about a child of a known parent before the span is built, and makes the
    span it drops: a non-recording span with the SDK's new span id, flags and trace state, exactly
    what ``Tracer.start_span`` makes then (built here only while the SDK's own span metrics are off
    and the tracer enabled; else the SDK makes it)."""

    __slots__ = ("_bare", "_follows_sampled", "_follows_unsampled", "_new_span_id", "_tracer", "sampler")

    def __init__(
        self,
        sampler: Any,
        tracer: Any,
        new_span_id: Any,
        bare: bool,
        follows_unsampled: bool,
        follows_sampled: bool = False,
    ) -> None:
        self.sampler = sampler
        self._tracer = tracer
        self._new_span_id = new_span_id
        self._bare = bare
        self._follows_unsampled = follows_unsampled
        """A ``ParentBased`` sampler that drops every child of an unsampled parent (its default): no
        need to ask it then."""
        self._follows_sampled = follows_sampled
        """... and keeps every child of a sampled one (its default): the full span, without asking."""

    def dropped(
        self, parent: Context, parent_span: trace.SpanContext, name: str, kind: trace.SpanKind, start_ns: int
    ) -> trace.Span | None:
        """The bare span of a child of ``parent_span`` the sampler drops; None when it samples it."""
        sampled = parent_span.trace_flags.sampled
        if self._follows_unsampled and not sampled:
            trace_state = parent_span.trace_state  # what ParentBased's delegate answers: the parent's
        elif self._follows_sampled and sampled:
            return None
        else:
            verdict = self.sampler.should_sample(parent, parent_span.trace_id, name, kind)
            if verdict.decision.is_recording():
                return None
            trace_state = verdict.trace_state
        enabled = getattr(self._tracer, "_is_enabled", None)
        if not self._bare or (enabled is not None and not enabled()):
            span: trace.Span = self._tracer.start_span(name, context=parent, kind=kind, start_time=start_ns)
            return span
        flags = trace.TraceFlags.DEFAULT | (parent_span.trace_flags & _RANDOM_TRACE_ID)
        return trace.NonRecordingSpan(
            trace.SpanContext(
                parent_span.trace_id,
                self._new_span_id(),
                is_remote=False,
                trace_flags=trace.TraceFlags(flags),
                trace_state=trace_state,
            )
        )


_RANDOM_TRACE_ID = 0x02
"""W3C trace context level 2's random flag: a child keeps its parent's (as the SDK does)."""


def presampler(tracer_provider: object, scope: str, version: str) -> Presampler | None:
    """A ``Presampler`` for the provider's sampler if it can drop a span knowing only its parent and
    trace id; else None (no SDK, another sampler, or one that never drops)."""
    sampling = sys.modules.get("opentelemetry.sdk.trace.sampling")
    if sampling is None or getattr(tracer_provider, "_disabled", False):
        return None
    sampler = getattr(tracer_provider, "sampler", None)
    if sampler is None or not _attribute_blind(sampling, sampler, depth=0):
        return None
    if isinstance(sampler, sampling.StaticSampler) and getattr(sampler, "_decision", None) is not (
        sampling.Decision.DROP
    ):
        return None  # ALWAYS_ON: asking would only cost
    tracer = tracer_provider.get_tracer(scope, version)  # type: ignore[attr-defined]
    new_span_id = getattr(getattr(tracer_provider, "id_generator", None), "generate_span_id", None)
    metrics_off = type(getattr(tracer, "_tracer_metrics", None)).__name__ == "NoOpTracerMetrics"
    follows = isinstance(sampler, sampling.ParentBased) and all(
        _drops(sampling, getattr(sampler, name, None))
        for name in ("_remote_parent_not_sampled", "_local_parent_not_sampled")
    )
    keeps = isinstance(sampler, sampling.ParentBased) and all(
        _static(sampling, getattr(sampler, name, None), sampling.Decision.RECORD_AND_SAMPLE)
        for name in ("_remote_parent_sampled", "_local_parent_sampled")
    )
    bare = new_span_id is not None and metrics_off
    return Presampler(
        sampler, tracer, new_span_id, bare=bare, follows_unsampled=follows, follows_sampled=keeps
    )


def _drops(sampling: Any, sampler: object) -> bool:
    """The SDK's static sampler that drops everything (``ALWAYS_OFF``)."""
    return _static(sampling, sampler, sampling.Decision.DROP)


def _static(sampling: Any, sampler: object, decision: object) -> bool:
    """The SDK's static sampler that always answers ``decision``."""
    return isinstance(sampler, sampling.StaticSampler) and getattr(sampler, "_decision", None) is decision


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

"""The consumer's record metrics: consumed messages, process and operation durations, per-partition lag.

Instrument names, units and bucket advice follow the OpenTelemetry messaging conventions
(``attributes.SEMCONV_VERSION``). One set of instruments per meter provider, shared by every consumer
reporting to it, for the same reason as the membership observer's: an SDK keeps only the first
callbacks registered under a gauge's name, so one lag gauge must report every live consumer.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, Protocol, TypeVar

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Meter, MeterProvider, Observation
from opentelemetry.util.types import AttributeValue

from . import attributes as a

_Set = TypeVar("_Set")

log = logging.getLogger("staticconsumer.telemetry")

Attributes = dict[str, AttributeValue]

MESSAGING_DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)
"""The bucket boundaries the conventions ask for on both messaging duration histograms."""


class PartitionKey(Protocol):
    """Anything naming a partition: staticconsumer's or aiokafka's TopicPartition."""

    @property
    def topic(self) -> str: ...

    @property
    def partition(self) -> int: ...


LagCallback = Callable[[], Mapping[Any, int]]
"""Returns the current lag of each partition (keys: PartitionKey). Runs on the SDK's export thread."""


class RecordSource(Protocol):
    """What the observable instruments ask each consumer, once per collection, on the export thread."""

    @property
    def lag_identity(self) -> Attributes: ...

    def current_lag(self) -> Mapping[Any, int]: ...

    def consumed(self) -> list[tuple[int, Attributes]]: ...


def version() -> str:
    """The instrumentation scope's version: the package's own (importlib.metadata costs ~14 ms to import)."""
    from staticconsumer import __version__

    return __version__


def partition_lag(
    partitions: Iterable[PartitionKey],
    position: Callable[[Any], int | None],
    end_offset: Callable[[Any], int | None],
) -> dict[Any, int]:
    """``end_offset - position`` for each partition where both are known (never below zero).

    The consumer's lag callback in one line: ``position`` is the offset after the last record handed
    to the application, ``end_offset`` the high watermark (or, with ``read_committed``, the last
    stable offset) from the latest fetch. A partition whose offsets cannot be read right now (it is
    being reassigned on the event loop while the exporter thread asks) is left out of this reading.
    """
    lag: dict[Any, int] = {}
    for tp in list(partitions):
        try:
            at, end = position(tp), end_offset(tp)
        except Exception:  # a partition revoked under our feet: no reading this time
            continue
        if at is not None and end is not None and at >= 0 and end >= 0:
            lag[tp] = max(0, end - at)
    return lag


class RecordInstruments:
    """The record instruments of one meter provider."""

    def __init__(self, meter: Meter) -> None:
        self._lock = threading.Lock()
        self._sources: weakref.WeakSet[Any] = weakref.WeakSet()
        meter.create_observable_counter(
            a.METRIC_CONSUMED_MESSAGES,
            callbacks=[self._observe_consumed],
            unit="{message}",
            description="Number of messages that were delivered to the application",
        )
        self.process_duration = meter.create_histogram(
            a.METRIC_PROCESS_DURATION,
            unit="s",
            description="Duration of processing operation",
            explicit_bucket_boundaries_advisory=MESSAGING_DURATION_BUCKETS,
        )
        self.operation_duration = meter.create_histogram(
            a.METRIC_OPERATION_DURATION,
            unit="s",
            description="Duration of messaging operation initiated by a producer or consumer client",
            explicit_bucket_boundaries_advisory=MESSAGING_DURATION_BUCKETS,
        )
        meter.create_observable_gauge(
            a.METRIC_CONSUMER_LAG,
            callbacks=[self._observe_lag],
            unit="{message}",
            description="Records between the application's position and the partition's end offset",
        )

    def watch(self, source: RecordSource) -> None:
        with self._lock:
            self._sources.add(source)

    def unwatch(self, source: RecordSource) -> None:
        with self._lock:
            self._sources.discard(source)

    def _snapshot(self) -> list[RecordSource]:
        # Callbacks run on the SDK's export thread while consumers come and go on the event loop.
        with self._lock:
            return list(self._sources)

    def _observe_consumed(self, options: CallbackOptions) -> Iterable[Observation]:
        for source in self._snapshot():
            for total, attributes in source.consumed():
                yield Observation(total, attributes)

    def _observe_lag(self, options: CallbackOptions) -> Iterable[Observation]:
        for source in self._snapshot():
            try:
                readings = dict(source.current_lag())
            except Exception:  # a failing callback must not cost the other consumers their series
                log.debug("lag callback of %r failed", source, exc_info=True)
                continue
            identity = source.lag_identity
            for tp, lag in readings.items():
                yield Observation(
                    lag,
                    {
                        **identity,
                        a.MESSAGING_DESTINATION_NAME: tp.topic,
                        a.MESSAGING_DESTINATION_PARTITION_ID: str(tp.partition),
                    },
                )


class PerProvider(Generic[_Set]):
    """One set of instruments per meter provider, built by ``build`` from that provider's meter.

    Everything that reports to the global provider shares one set, whether it was created before the
    application installed its SDK (API proxies, which bind to the SDK later) or after: a second set would
    register its gauges a second time, and an SDK keeps only the first callbacks.
    """

    def __init__(self, build: Callable[[Meter], _Set]) -> None:
        self._build = build
        self._lock = threading.Lock()
        self._by_provider: weakref.WeakKeyDictionary[MeterProvider, _Set] = weakref.WeakKeyDictionary()
        self._global: _Set | None = None

    def __call__(self, provider: MeterProvider | None) -> _Set:
        with self._lock:
            current_global = metrics.get_meter_provider()
            if provider is None or provider is current_global:
                if self._global is None:
                    self._global = self._build(current_global.get_meter(a.SCOPE, version()))
                return self._global
            found = self._by_provider.get(provider)
            if found is None:
                found = self._build(provider.get_meter(a.SCOPE, version()))
                self._by_provider[provider] = found
            return found


instruments_for: PerProvider[RecordInstruments] = PerProvider(RecordInstruments)
"""The record path's instruments for a meter provider (None: the global one)."""

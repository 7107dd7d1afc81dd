"""The consumer's internal fetcher, out of reach of third-party aiokafka instrumentation.

``StaticConsumer`` fetches records with an ``AIOKafkaConsumer`` that has no group. An aiokafka
instrumentation (opentelemetry-instrumentation-aiokafka) wraps ``AIOKafkaConsumer.getone`` and
``getmany`` on the class (with wrapt), so it would trace that internal fetcher too: ``receive`` spans
that end before the application sees the record, parented to the producer, without the group, beside
the consumer's own ``poll``/``process`` spans. Its wrappers do not honour OpenTelemetry's
suppress-instrumentation context key (and the SDK's tracer does not check it either), so the fetcher
is instead an ``AIOKafkaConsumer`` subclass whose ``getone``/``getmany`` are aiokafka's own functions,
unwrapped: wrapping the base class later does not reach them (the subclass's attributes shadow it),
and wrappers applied before this module was imported are peeled off (they keep the original under
``__wrapped__``, as wrapt and functools.wraps do). The application's own AIOKafkaConsumer and
AIOKafkaProducer objects stay instrumented.
"""

from __future__ import annotations

import inspect
from typing import Any

from aiokafka import AIOKafkaConsumer

_FETCH_METHODS = ("getone", "getmany")


def original(cls: type, name: str) -> Any:
    """The function ``cls`` defines as ``name``, without any ``__wrapped__`` layers put around it."""
    for klass in cls.__mro__:
        if name in vars(klass):
            return inspect.unwrap(vars(klass)[name])
    raise AttributeError(f"{cls.__qualname__} has no {name}")


def _uninstrumented(base: type[AIOKafkaConsumer]) -> type[AIOKafkaConsumer]:
    namespace: dict[str, Any] = {name: original(base, name) for name in _FETCH_METHODS}
    namespace["__doc__"] = "AIOKafkaConsumer whose fetch methods no instrumentation wraps (see this module)."
    namespace["__module__"] = __name__
    return type(f"Uninstrumented{base.__name__}", (base,), namespace)


_made: dict[type[Any], type[AIOKafkaConsumer]] = {}


def uninstrumented(base: type[AIOKafkaConsumer]) -> type[AIOKafkaConsumer]:
    """A subclass of an ``AIOKafkaConsumer`` class whose fetch methods are aiokafka's own, unwrapped;
    made once per base class."""
    found = _made.get(base)
    if found is None:
        found = _made[base] = _uninstrumented(base)
    return found


UninstrumentedFetcher: type[AIOKafkaConsumer] = uninstrumented(AIOKafkaConsumer)
"""Construct a fetcher from this class instead of ``AIOKafkaConsumer`` (same arguments). StaticConsumer
builds ``uninstrumented`` of its bounded-response consumer class (``staticconsumer._aiokafka``)."""


def is_wrapped(cls: type, name: str) -> bool:
    """Whether ``cls.name`` as seen through the class is a wrapper around another function."""
    for klass in cls.__mro__:
        if name in vars(klass):
            return hasattr(vars(klass)[name], "__wrapped__")
    return False

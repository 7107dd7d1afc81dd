"""The internal fetcher class keeps aiokafka's own fetch methods, whenever the instrumentation is applied."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import wrapt
from aiokafka import AIOKafkaConsumer
from opentelemetry.instrumentation.aiokafka import AIOKafkaInstrumentor
from opentelemetry.sdk.trace import TracerProvider

from staticconsumer import telemetry as fetcher


@pytest.fixture
def instrumented() -> Iterator[None]:
    instrumentor = AIOKafkaInstrumentor()
    instrumentor.instrument(tracer_provider=TracerProvider())
    try:
        yield
    finally:
        instrumentor.uninstrument()


def test_a_class_made_while_instrumented_gets_the_unwrapped_functions(instrumented: None) -> None:
    assert fetcher.is_wrapped(AIOKafkaConsumer, "getmany")
    made_now = fetcher._uninstrumented(AIOKafkaConsumer)
    for name in ("getone", "getmany"):
        method = vars(made_now)[name]
        assert not hasattr(method, "__wrapped__")
        assert method is vars(AIOKafkaConsumer)[name].__wrapped__
        assert method.__qualname__ == f"AIOKafkaConsumer.{name}"


def test_the_fetcher_class_is_untouched_by_instrumenting_and_uninstrumenting() -> None:
    before = {name: vars(fetcher.UninstrumentedFetcher)[name] for name in ("getone", "getmany")}
    instrumentor = AIOKafkaInstrumentor()
    instrumentor.instrument(tracer_provider=TracerProvider())
    try:
        assert fetcher.is_wrapped(AIOKafkaConsumer, "getone")
        assert {name: vars(fetcher.UninstrumentedFetcher)[name] for name in before} == before
    finally:
        instrumentor.uninstrument()
    assert not fetcher.is_wrapped(AIOKafkaConsumer, "getone")
    assert issubclass(fetcher.UninstrumentedFetcher, AIOKafkaConsumer), "still an AIOKafkaConsumer"


def test_every_layer_of_wrappers_is_peeled() -> None:
    class Base:
        async def getone(self) -> str:
            return "own"

        async def getmany(self) -> str:
            return "own many"

    def wrapper(wrapped, instance, args, kwargs):  # type: ignore[no-untyped-def]
        return wrapped(*args, **kwargs)

    wrapt.wrap_function_wrapper(Base, "getone", wrapper)
    wrapt.wrap_function_wrapper(Base, "getone", wrapper)
    assert fetcher.original(Base, "getone").__qualname__.endswith("Base.getone")
    assert not hasattr(fetcher.original(Base, "getone"), "__wrapped__")
    with pytest.raises(AttributeError, match="has no poll"):
        fetcher.original(Base, "poll")

"""staticconsumer.telemetry.key.max.length reaches the consumer's RecordTracer: record keys can be kept out of
spans without turning telemetry off (0: never recorded), from a keyword or from the environment."""

from __future__ import annotations

from typing import Any

import pytest
from record_harness import Sdk, record

from staticconsumer import StaticConsumer
from staticconsumer.settings import DEFAULT_TELEMETRY_KEY_MAX_LENGTH
from staticconsumer.telemetry import TelemetryObserver
from staticconsumer.telemetry import attributes as a
from staticconsumer.telemetry.records import DEFAULT_KEY_MAX_LENGTH


def _observer(sdk: Sdk) -> TelemetryObserver:
    return TelemetryObserver(
        client_id="billing-0", tracer_provider=sdk.tracer_provider, meter_provider=sdk.meter_provider
    )


def _key_on_process_span(sdk: Sdk, consumer: StaticConsumer, key: Any) -> object:
    with consumer.processing(record(7, key=key)):
        pass
    (span,) = sdk.spans("process orders")
    assert span.attributes is not None
    return span.attributes.get(a.MESSAGING_KAFKA_MESSAGE_KEY)


def test_the_setting_defaults_to_the_tracers_own_limit() -> None:
    assert DEFAULT_TELEMETRY_KEY_MAX_LENGTH == DEFAULT_KEY_MAX_LENGTH


def test_keys_are_recorded_by_default() -> None:
    sdk = Sdk()
    consumer = StaticConsumer(
        "orders", bootstrap_servers="k:9092", group_id="billing", telemetry=_observer(sdk)
    )
    assert _key_on_process_span(sdk, consumer, b"customer-42") == "customer-42"


def test_zero_keeps_every_key_out_of_the_span() -> None:
    sdk = Sdk()
    consumer = StaticConsumer(
        "orders",
        bootstrap_servers="k:9092",
        group_id="billing",
        telemetry=_observer(sdk),
        telemetry_key_max_length=0,
    )
    assert _key_on_process_span(sdk, consumer, b"customer-42") is None
    (span,) = sdk.spans("process orders")
    assert span.attributes is not None
    assert span.attributes[a.MESSAGING_KAFKA_OFFSET] == 7, "the span itself is still recorded"


@pytest.mark.parametrize(("key", "recorded"), [(b"c-1", "c-1"), (b"customer-42", None)])
def test_the_environment_variable_sets_the_limit(key: bytes, recorded: str | None) -> None:
    sdk = Sdk()
    consumer = StaticConsumer.from_env(
        "orders",
        environ={
            "KAFKA_BOOTSTRAP_SERVERS": "k:9092",
            "KAFKA_GROUP_ID": "billing",
            "KAFKA_STATICCONSUMER_TELEMETRY_KEY_MAX_LENGTH": "5",
        },
        telemetry=_observer(sdk),
    )
    assert consumer.settings.telemetry_key_max_length == 5
    assert _key_on_process_span(sdk, consumer, key) == recorded

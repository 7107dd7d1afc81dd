"""aiokafka's constructor options as a port by one import uses them: accepted where they mean something
(exclude_internal_topics, check_crcs, connections_max_idle_ms, max_poll_records=None, a bootstrap server
without a port), refused with the reason where they do not (api_version, loop); errors that name what the
caller wrote (the keyword argument in the constructor, the variable in from_env); from_env taking the
constructor's options directly."""

from __future__ import annotations

from typing import Any

import pytest
from aiokafka import AIOKafkaClient, AIOKafkaConsumer

from staticconsumer import StaticConsumer
from staticconsumer.errors import SettingsError
from staticconsumer.runtime import Subscription
from staticconsumer.settings import SETTINGS, SPEC_BY_FIELD, Settings

MINIMAL = {"bootstrap_servers": "k:9092", "group_id": "billing"}
MINIMAL_ENV = {"KAFKA_BOOTSTRAP_SERVERS": "k:9092", "KAFKA_GROUP_ID": "billing"}

BAD: dict[str, tuple[str, dict[str, str]]] = {
    "bootstrap_servers": ("k:0", {}),
    "group_id": ("", {}),
    "group_instance_id": ("a/b", {}),
    "session_timeout_ms": ("45s", {}),
    "heartbeat_interval_ms": ("-1", {}),
    "max_poll_interval_ms": ("0", {}),
    "broker_min_session_timeout_ms": ("x", {}),
    "broker_max_session_timeout_ms": ("x", {}),
    "assignors": ("rnage", {}),
    "group_protocol": ("modern", {}),
    "group_remote_assignor": ("uniformly", {}),
    "enable_auto_commit": ("maybe", {}),
    "auto_commit_interval_ms": ("0", {}),
    "auto_offset_reset": ("smallest", {}),
    "isolation_level": ("committed", {}),
    "fetch_min_bytes": ("-1", {}),
    "fetch_max_bytes": ("-1", {}),
    "max_partition_fetch_bytes": ("-1", {}),
    "receive_message_max_bytes": ("1", {}),
    "fetch_max_wait_ms": ("-1", {}),
    "max_poll_records": ("0", {}),
    "check_crcs": ("maybe", {}),
    "exclude_internal_topics": ("maybe", {}),
    "connections_max_idle_ms": ("0", {}),
    "retry_backoff_ms": ("-1", {}),
    "retry_backoff_max_ms": ("-1", {}),
    "reconnect_backoff_ms": ("-1", {}),
    "reconnect_backoff_max_ms": ("-1", {}),
    "request_timeout_ms": ("0", {}),
    "metadata_max_age_ms": ("-1", {}),
    "fail_on_missing_topics": ("maybe", {}),
    "telemetry_key_max_length": ("-1", {}),
    "security_protocol": ("TLS", {}),
    "sasl_mechanism": ("NTLM", {}),
    "sasl_username": ("bob", {}),  # ignored with PLAINTEXT
    "sasl_password": ("pw", {}),  # ignored with PLAINTEXT
    "ssl_ca_location": ("/no/such/ca.pem", {"security_protocol": "SSL"}),
    "ssl_certificate_location": ("/no/such/cert.pem", {"security_protocol": "SSL"}),
    "ssl_key_location": ("/no/such/key.pem", {"security_protocol": "SSL"}),
    "ssl_key_password": ("pw", {}),  # ignored with PLAINTEXT
    "event_log_max_bytes": ("1", {}),
    "event_log_backups": ("0", {}),
    "event_log_buffer_records": ("0", {}),
    "event_log_drop_report_ms": ("0", {}),
}
"""A value each setting refuses (with the other settings it needs to be refused)."""

ANY_TEXT = {
    "client_id",
    "client_rack",
    "event_log_path",
    "event_log_topic",
    "sasl_kerberos_service_name",
    "sasl_kerberos_domain_name",
}
"""Settings that take any string (an empty variable is unset): nothing to refuse."""


def test_every_setting_is_covered() -> None:
    assert set(BAD) | ANY_TEXT == set(SPEC_BY_FIELD)


def _problem_names(error: SettingsError) -> list[str]:
    return [problem.name for problem in error.problems]


@pytest.mark.parametrize("field", sorted(BAD))
def test_constructor_errors_name_the_keyword_argument(field: str) -> None:
    raw, context = BAD[field]
    with pytest.raises(SettingsError) as caught:
        StaticConsumer("orders", **{**MINIMAL, **context, field: raw})
    assert f"{field} (keyword argument)" in _problem_names(caught.value)
    assert "KAFKA_" not in str(caught.value), "nobody set a variable: none is named"


@pytest.mark.parametrize("field", sorted(BAD))
def test_from_env_errors_name_the_variable(field: str) -> None:
    raw, context = BAD[field]
    spec = SPEC_BY_FIELD[field]
    environ = {**MINIMAL_ENV, **{SPEC_BY_FIELD[f].env_var(): v for f, v in context.items()}}
    environ[spec.env_var()] = raw
    with pytest.raises(SettingsError) as caught:
        StaticConsumer.from_env("orders", environ=environ)
    names = _problem_names(caught.value)
    assert spec.env_var() in names, names  # an empty group id reads as unset: named all the same
    assert f"{field} (keyword argument)" not in names


def test_an_object_of_the_wrong_type_is_named_by_keyword_for_every_setting() -> None:
    for spec in SETTINGS:
        with pytest.raises(SettingsError) as caught:
            StaticConsumer("orders", **{**MINIMAL, spec.field: object()})
        assert f"{spec.field} (keyword argument)" in _problem_names(caught.value), spec.field


def test_missing_and_defaulted_settings_are_named_as_keywords_in_the_constructor() -> None:
    with pytest.raises(SettingsError) as caught:
        StaticConsumer("orders", group_id="billing", session_timeout_ms=6_000)
    names = _problem_names(caught.value)
    assert names == [
        "bootstrap_servers (keyword argument)",
        "heartbeat_interval_ms (default)",  # the default 3000 is not below a third of 6000
    ]
    with pytest.raises(SettingsError) as from_env:
        StaticConsumer.from_env("orders", environ={"KAFKA_SESSION_TIMEOUT_MS": "6000"})
    assert _problem_names(from_env.value) == [
        "KAFKA_BOOTSTRAP_SERVERS",
        "KAFKA_GROUP_ID",
        "KAFKA_HEARTBEAT_INTERVAL_MS (default)",
    ]


def test_settings_plus_keywords_still_validate_by_keyword() -> None:
    settings = Settings.from_keywords(**MINIMAL)
    with pytest.raises(SettingsError, match=r"max_poll_records \(keyword argument\)=0"):
        StaticConsumer("orders", settings=settings, max_poll_records=0)


# -- from_env takes the constructor's options ------------------------------------------------------


def test_from_env_takes_constructor_options_as_keywords() -> None:
    def hook(api: str, version: int, message: object) -> None:
        return None

    consumer = StaticConsumer.from_env(
        "orders",
        environ=MINIMAL_ENV,
        value_deserializer=bytes.decode,
        key_deserializer=None,
        consumer_timeout_ms=50,
        telemetry=False,
        observers=(),
        request_hook=hook,
        api_version_caps={"JoinGroup": 8},
        max_poll_records=5,
    )
    assert consumer._fetcher_options["value_deserializer"] is bytes.decode
    assert consumer._fetcher_options["consumer_timeout_ms"] == 50
    assert consumer._records is None, "telemetry=False reached the constructor"
    assert consumer._request_hook is hook
    assert consumer._version_caps == {"JoinGroup": 8}
    assert consumer.settings.max_poll_records == 5


def test_from_env_still_takes_consumer_options() -> None:
    consumer = StaticConsumer.from_env(
        "orders",
        environ=MINIMAL_ENV,
        consumer_options={"value_deserializer": bytes.decode, "telemetry": False},
    )
    assert consumer._fetcher_options["value_deserializer"] is bytes.decode
    assert consumer._records is None


def test_an_option_given_twice_to_from_env_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="telemetry is given twice"):
        StaticConsumer.from_env(
            "orders", environ=MINIMAL_ENV, telemetry=False, consumer_options={"telemetry": True}
        )


def test_from_env_names_an_unknown_keyword() -> None:
    with pytest.raises(SettingsError, match=r"value_deserialiser \(keyword argument\).*not a setting"):
        StaticConsumer.from_env("orders", environ=MINIMAL_ENV, value_deserialiser=bytes.decode)


# -- aiokafka's options --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "reason"),
    [("api_version", "deprecated no-op"), ("loop", "deprecated by aiokafka since 0.7.1")],
)
def test_meaningless_aiokafka_options_are_refused_with_the_reason(option: str, reason: str) -> None:
    with pytest.raises(SettingsError) as caught:
        StaticConsumer("orders", **MINIMAL, **{option: "auto"})
    (problem,) = caught.value.problems
    assert problem.name == f"{option} (keyword argument)"
    assert reason in problem.allowed


def test_a_bootstrap_server_without_a_port_is_on_9092_in_the_constructor_and_the_environment() -> None:
    assert StaticConsumer("orders", bootstrap_servers="kafka", group_id="g").settings.bootstrap_servers == (
        "kafka:9092",
    )
    listed = StaticConsumer("orders", bootstrap_servers=["kafka-0", "kafka-1:9093"], group_id="g")
    assert listed.settings.bootstrap_servers == ("kafka-0:9092", "kafka-1:9093")
    from_env = StaticConsumer.from_env("orders", environ={**MINIMAL_ENV, "KAFKA_BOOTSTRAP_SERVERS": "kafka"})
    assert from_env.settings.bootstrap_servers == ("kafka:9092",)


@pytest.mark.parametrize(("given", "expected"), [(None, None), ("none", None), ("NONE", None), (7, 7)])
def test_max_poll_records_none_means_no_limit(given: Any, expected: int | None) -> None:
    consumer = StaticConsumer("orders", **MINIMAL, max_poll_records=given)
    assert consumer.settings.max_poll_records == expected
    assert consumer._fetcher_kwargs()["max_poll_records"] == expected
    assert consumer.settings.loggable_properties()["max.poll.records"] == (
        "none" if expected is None else "7"
    )


def test_max_poll_records_none_from_the_environment() -> None:
    environ = {**MINIMAL_ENV, "KAFKA_MAX_POLL_RECORDS": "none"}
    assert StaticConsumer.from_env("orders", environ=environ).settings.max_poll_records is None


def test_none_is_refused_where_it_means_nothing() -> None:
    with pytest.raises(
        SettingsError, match=r"fetch_max_bytes \(keyword argument\)=None: None is not allowed"
    ):
        StaticConsumer("orders", **MINIMAL, fetch_max_bytes=None)


async def test_check_crcs_and_idle_connections_reach_the_fetcher_and_every_client() -> None:
    consumer = StaticConsumer("orders", **MINIMAL, check_crcs=False, connections_max_idle_ms=60_000)
    fetcher = AIOKafkaConsumer(**consumer._fetcher_kwargs())
    try:
        assert fetcher._check_crcs is False
        assert fetcher._client._connections_max_idle_ms == 60_000
    finally:
        await fetcher.stop()
    client = AIOKafkaClient(**consumer.settings.aiokafka_client_kwargs())  # membership, admin, event log
    try:
        assert client._connections_max_idle_ms == 60_000
    finally:
        await client.close()
    never = StaticConsumer("orders", **MINIMAL, connections_max_idle_ms=None)
    assert never.settings.aiokafka_client_kwargs()["connections_max_idle_ms"] is None


def test_the_defaults_are_aiokafkas() -> None:
    kwargs = StaticConsumer("orders", **MINIMAL)._fetcher_kwargs()
    assert kwargs["check_crcs"] is True
    assert kwargs["connections_max_idle_ms"] == 540_000


@pytest.mark.parametrize(
    ("exclude", "matched"), [(True, {"orders"}), (False, {"orders", "__consumer_offsets"})]
)
def test_exclude_internal_topics_decides_whether_a_pattern_matches_internal_topics(
    exclude: bool, matched: set[str]
) -> None:
    consumer = StaticConsumer(pattern="orders|__consumer_offsets", **MINIMAL, exclude_internal_topics=exclude)
    subscription: Subscription = consumer._subscription
    assert subscription.exclude_internal is exclude
    subscription.refresh(["orders", "__consumer_offsets", "payments"])
    assert subscription.topics == matched


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({}, 1000),  # twice the 500 ms long poll: no look-again while a fetch waits on the broker
        ({"fetch_max_wait_ms": 3000}, 6000),
        ({"fetch_max_wait_ms": 50}, 200),  # never more often than aiokafka's 200 ms
        ({"consumer_timeout_ms": 200}, 200),  # the application's own value wins
        ({"consumer_timeout_ms": 0, "fetch_max_wait_ms": 3000}, 0),
    ],
)
async def test_the_fetchers_look_again_outlasts_its_long_poll_unless_the_application_sets_it(
    options: dict[str, Any], expected: int
) -> None:
    kwargs = StaticConsumer("orders", **MINIMAL, **options)._fetcher_kwargs()
    assert kwargs["consumer_timeout_ms"] == expected
    fetcher = AIOKafkaConsumer(**kwargs)
    try:
        assert fetcher._consumer_timeout == expected / 1000  # what its Fetcher gets as fetcher_timeout
    finally:
        await fetcher.stop()

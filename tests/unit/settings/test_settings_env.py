"""The environment-to-settings mapping: names, parsing, defaults, prefix and keyword overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from staticconsumer.errors import SettingsError
from staticconsumer.settings import OBJECT_FIELDS, RECORD_FIELDS, SETTINGS, SPEC_BY_FIELD, Secret, Settings


def test_env_var_name_is_prefix_plus_property_upper_cased_with_underscores() -> None:
    assert SPEC_BY_FIELD["group_instance_id"].env_var() == "KAFKA_GROUP_INSTANCE_ID"
    assert SPEC_BY_FIELD["max_partition_fetch_bytes"].env_var("APP_") == "APP_MAX_PARTITION_FETCH_BYTES"
    assert SPEC_BY_FIELD["assignors"].env_var() == "KAFKA_PARTITION_ASSIGNMENT_STRATEGY"


def test_every_struct_field_has_exactly_one_row_in_the_property_table() -> None:
    not_settings = (*RECORD_FIELDS, *OBJECT_FIELDS)
    settings_fields = [name for name in Settings.__struct_fields__ if name not in not_settings]
    assert [spec.field for spec in SETTINGS] == settings_fields
    properties = [spec.kafka_property for spec in SETTINGS]
    assert len(set(properties)) == len(properties)


def test_defaults_are_the_java_clients() -> None:
    settings = Settings(bootstrap_servers=("b:9092",), group_id="g")
    assert settings.session_timeout_ms == 45_000
    assert settings.heartbeat_interval_ms == 3_000
    assert settings.max_poll_interval_ms == 300_000
    # Java's default list, then aiokafka's default (roundrobin), so a group either one formed is joinable
    assert settings.assignors == ("range", "cooperative-sticky", "roundrobin")
    assert settings.enable_auto_commit is True
    assert settings.auto_commit_interval_ms == 5_000
    assert settings.auto_offset_reset == "latest"
    assert settings.isolation_level == "read_uncommitted"
    assert (settings.fetch_min_bytes, settings.fetch_max_bytes) == (1, 52_428_800)
    assert (settings.max_partition_fetch_bytes, settings.fetch_max_wait_ms) == (1_048_576, 500)
    assert settings.max_poll_records == 500
    assert (settings.check_crcs, settings.exclude_internal_topics) == (True, True)
    assert settings.connections_max_idle_ms == 540_000
    assert (settings.retry_backoff_ms, settings.retry_backoff_max_ms) == (100, 1_000)
    assert (settings.reconnect_backoff_ms, settings.reconnect_backoff_max_ms) == (50, 1_000), "Java's"
    assert (settings.request_timeout_ms, settings.metadata_max_age_ms) == (30_000, 300_000)
    assert settings.security_protocol == "PLAINTEXT"
    assert settings.group_instance_id is None


def _every_variable(
    tls_files: dict[str, Path], key_password: str
) -> tuple[dict[str, str], dict[str, object]]:
    """One non-default value per variable, and the field value each must become."""
    ca, cert, key = (str(tls_files[name]) for name in ("cert", "cert", "encrypted_key"))
    raw_and_parsed: dict[str, tuple[str, object]] = {
        "bootstrap_servers": (" b1:9092, b2:9093 ,b3", ("b1:9092", "b2:9093", "b3:9092")),
        "group_id": ("payments", "payments"),
        "group_instance_id": ("payments-3", "payments-3"),
        "client_id": ("billing", "billing"),
        "client_rack": ("eu-west-1a", "eu-west-1a"),
        "session_timeout_ms": ("30000", 30_000),
        "heartbeat_interval_ms": ("2000", 2_000),
        "max_poll_interval_ms": ("60000", 60_000),
        "broker_min_session_timeout_ms": ("500", 500),
        "broker_max_session_timeout_ms": ("600000", 600_000),
        "assignors": ("roundrobin, sticky", ("roundrobin", "sticky")),
        # the consumer protocol's settings are in test_settings_group_protocol.py (they exclude the above)
        "group_protocol": ("classic", "classic"),
        "group_remote_assignor": ("", None),
        "enable_auto_commit": ("FALSE", False),
        "auto_commit_interval_ms": ("1000", 1_000),
        "auto_offset_reset": ("earliest", "earliest"),
        "isolation_level": ("read_committed", "read_committed"),
        "fetch_min_bytes": ("10", 10),
        "fetch_max_bytes": ("1000000", 1_000_000),
        "max_partition_fetch_bytes": ("5000", 5_000),
        "receive_message_max_bytes": ("2000000", 2_000_000),
        "fetch_max_wait_ms": ("0", 0),
        "max_poll_records": ("7", 7),
        "check_crcs": ("false", False),
        "exclude_internal_topics": ("false", False),
        "connections_max_idle_ms": ("none", None),
        "retry_backoff_ms": ("250", 250),
        "retry_backoff_max_ms": ("5000", 5_000),
        "reconnect_backoff_ms": ("80", 80),
        "reconnect_backoff_max_ms": ("3000", 3_000),
        "request_timeout_ms": ("20000", 20_000),
        "metadata_max_age_ms": ("60000", 60_000),
        "fail_on_missing_topics": ("true", True),
        "telemetry_key_max_length": ("0", 0),
        "security_protocol": ("SASL_SSL", "SASL_SSL"),
        "sasl_mechanism": ("SCRAM-SHA-512", "SCRAM-SHA-512"),
        "sasl_username": ("svc-payments", "svc-payments"),
        "sasl_password": ("s3cr3t", Secret("s3cr3t")),
        "sasl_kerberos_service_name": ("kafka-prod", "kafka-prod"),
        "sasl_kerberos_domain_name": ("kafka.example.com", "kafka.example.com"),
        "ssl_ca_location": (ca, ca),
        "ssl_certificate_location": (cert, cert),
        "ssl_key_location": (key, key),
        "ssl_key_password": (key_password, Secret(key_password)),
        "event_log_path": ("/var/log/orders/{instance}.jsonl", "/var/log/orders/{instance}.jsonl"),
        "event_log_max_bytes": ("1048576", 1_048_576),
        "event_log_backups": ("3", 3),
        "event_log_topic": ("membership-events", "membership-events"),
        "event_log_buffer_records": ("500", 500),
        "event_log_drop_report_ms": ("10000", 10_000),
    }
    assert set(raw_and_parsed) == set(SPEC_BY_FIELD), "every field needs a sample here"
    environ = {SPEC_BY_FIELD[field].env_var(): raw for field, (raw, _) in raw_and_parsed.items()}
    return environ, {field: parsed for field, (_, parsed) in raw_and_parsed.items()}


def test_every_variable_reaches_its_field(tls_files: dict[str, Path], key_password: str) -> None:
    environ, expected = _every_variable(tls_files, key_password)
    settings = Settings.from_env(environ)
    assert {field: getattr(settings, field) for field in expected} == expected


def test_a_custom_prefix_reads_only_its_own_variables(tls_files: dict[str, Path], key_password: str) -> None:
    environ, expected = _every_variable(tls_files, key_password)
    prefixed = {"ORDERS_" + name.removeprefix("KAFKA_"): value for name, value in environ.items()}
    prefixed["KAFKA_GROUP_ID"] = "someone-elses"
    settings = Settings.from_env(prefixed, prefix="ORDERS_")
    assert settings.group_id == expected["group_id"]
    assert settings.session_timeout_ms == expected["session_timeout_ms"]


def test_from_env_reads_the_process_environment_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "broker-9:9092")
    monkeypatch.setenv("KAFKA_GROUP_ID", "from-process")
    settings = Settings.from_env()
    assert settings.group_id == "from-process"
    assert settings.bootstrap_servers == ("broker-9:9092",)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("true", True), ("1", True), ("Yes", True), ("on", True), ("false", False), ("0", False), ("NO", False)],
)
def test_booleans_accept_the_usual_spellings(minimal_env: dict[str, str], raw: str, expected: bool) -> None:
    minimal_env["KAFKA_ENABLE_AUTO_COMMIT"] = raw
    assert Settings.from_env(minimal_env).enable_auto_commit is expected


def test_integers_tolerate_surrounding_whitespace(minimal_env: dict[str, str]) -> None:
    minimal_env["KAFKA_SESSION_TIMEOUT_MS"] = " 60000\n"
    assert Settings.from_env(minimal_env).session_timeout_ms == 60_000


def test_an_empty_variable_counts_as_unset(minimal_env: dict[str, str]) -> None:
    minimal_env["KAFKA_SESSION_TIMEOUT_MS"] = ""
    minimal_env["KAFKA_CLIENT_ID"] = "  "
    settings = Settings.from_env(minimal_env)
    assert settings.session_timeout_ms == 45_000
    assert settings.client_id is None


def test_keyword_arguments_override_the_environment(minimal_env: dict[str, str]) -> None:
    minimal_env["KAFKA_GROUP_INSTANCE_ID"] = "from-env"
    minimal_env["KAFKA_SESSION_TIMEOUT_MS"] = "not even a number"
    settings = Settings.from_env(minimal_env, group_instance_id="from-code", session_timeout_ms=60_000)
    assert settings.group_instance_id == "from-code"
    assert settings.session_timeout_ms == 60_000


def test_keyword_arguments_take_python_types_or_environment_text(minimal_env: dict[str, str]) -> None:
    settings = Settings.from_env(
        minimal_env,
        max_poll_records="42",
        enable_auto_commit=False,
        assignors=["sticky", "range"],
        bootstrap_servers="a:1,b:2",
        sasl_password="pw",
        security_protocol="SASL_PLAINTEXT",
        sasl_username="user",
    )
    assert settings.max_poll_records == 42
    assert settings.enable_auto_commit is False
    assert settings.assignors == ("sticky", "range")
    assert settings.bootstrap_servers == ("a:1", "b:2")
    assert settings.sasl_password == Secret("pw")


def test_a_none_keyword_unsets_an_optional_setting(minimal_env: dict[str, str]) -> None:
    minimal_env["KAFKA_GROUP_INSTANCE_ID"] = "pod-0"
    assert Settings.from_env(minimal_env, group_instance_id=None).group_instance_id is None


@pytest.mark.parametrize(
    ("keyword", "value", "complaint"),
    [
        ("session_timeout_ms", 45.5, "wrong type float"),
        ("enable_auto_commit", 1, "wrong type int"),
        ("heartbeat_interval_ms", True, "wrong type bool"),
        ("assignors", ["range", 3], "wrong type list"),
        ("group_id", 5, "wrong type int"),  # None is allowed: a consumer without a group
    ],
)
def test_keyword_arguments_of_the_wrong_type_are_reported_by_keyword(
    minimal_env: dict[str, str], keyword: str, value: object, complaint: str
) -> None:
    with pytest.raises(SettingsError) as raised:
        Settings.from_env(minimal_env, **{keyword: value})
    (problem,) = raised.value.problems
    assert problem.name == f"{keyword} (keyword argument)"
    assert complaint in problem.allowed


def test_the_client_id_defaults_like_the_java_client(minimal_env: dict[str, str]) -> None:
    assert Settings.from_env(minimal_env).effective_client_id == "consumer-orders"
    static = Settings.from_env(minimal_env, group_instance_id="orders-2")
    assert static.effective_client_id == "consumer-orders-orders-2"
    assert static.is_static
    named = Settings.from_env(minimal_env, group_instance_id="orders-2", client_id="billing")
    assert named.effective_client_id == "billing"


def test_loggable_properties_use_kafka_names_and_mask_secrets(minimal_env: dict[str, str]) -> None:
    settings = Settings.from_env(
        minimal_env, security_protocol="SASL_SSL", sasl_username="u", sasl_password="hunter2"
    )
    logged = settings.loggable_properties()
    assert list(logged) == [spec.kafka_property for spec in SETTINGS]
    assert logged["sasl.password"] == "***"
    assert logged["session.timeout.ms"] == "45000"
    assert logged["partition.assignment.strategy"] == "range,cooperative-sticky,roundrobin"
    assert logged["group.instance.id"] == "(unset)"
    assert "hunter2" not in repr(logged)


def test_an_empty_keyword_string_unsets_an_optional_setting(minimal_env: dict[str, str]) -> None:
    settings = Settings.from_env(minimal_env, security_protocol="SSL", ssl_ca_location="", client_id=" ")
    assert settings.ssl_ca_location is None
    assert settings.client_id is None
    assert settings.tls_context() is not None


def test_an_empty_instance_id_keyword_is_not_silently_dynamic(minimal_env: dict[str, str]) -> None:
    with pytest.raises(SettingsError, match="empty; a static member needs a non-empty id"):
        Settings.from_env(minimal_env, group_instance_id="")


def test_empty_tls_paths_built_directly_mean_the_system_cas() -> None:
    settings = Settings(
        bootstrap_servers=("b:9092",),
        group_id="g",
        security_protocol="SSL",
        ssl_ca_location="",
        ssl_certificate_location="",
        ssl_key_location="",
    )
    assert settings.tls_context() is not None

"""Every validation rule, and that one error lists every problem with its variable, value and remedy."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from staticconsumer.errors import ConfigurationError, SettingProblem, SettingsError
from staticconsumer.settings import Settings


def _problems(environ: dict[str, str], **overrides: object) -> list[SettingProblem]:
    with pytest.raises(SettingsError) as raised:
        Settings.from_env(environ, **overrides)
    return list(raised.value.problems)


def _only_problem(environ: dict[str, str], **overrides: object) -> SettingProblem:
    problems = _problems(environ, **overrides)
    assert len(problems) == 1, problems
    return problems[0]


def test_the_minimal_environment_is_valid(minimal_env: dict[str, str]) -> None:
    assert Settings.from_env(minimal_env).group_id == "orders"


def test_settings_error_is_a_configuration_error() -> None:
    assert issubclass(SettingsError, ConfigurationError)
    assert issubclass(SettingsError, ValueError)


@pytest.mark.parametrize(
    "variable",
    ["KAFKA_SESSION_TIMEOUT_MS", "KAFKA_FETCH_MAX_BYTES", "KAFKA_MAX_POLL_RECORDS", "KAFKA_RETRY_BACKOFF_MS"],
)
def test_not_a_number(minimal_env: dict[str, str], variable: str) -> None:
    minimal_env[variable] = "30s"
    problem = _only_problem(minimal_env)
    assert (problem.name, problem.value) == (variable, "'30s'")
    assert problem.allowed.startswith("not a number; expected an integer")


def test_not_a_boolean(minimal_env: dict[str, str]) -> None:
    minimal_env["KAFKA_ENABLE_AUTO_COMMIT"] = "maybe"
    problem = _only_problem(minimal_env)
    assert problem.name == "KAFKA_ENABLE_AUTO_COMMIT"
    assert "not a boolean" in problem.allowed


@pytest.mark.parametrize(
    "variable",
    [
        "KAFKA_HEARTBEAT_INTERVAL_MS",
        "KAFKA_MAX_POLL_INTERVAL_MS",
        "KAFKA_REQUEST_TIMEOUT_MS",
        "KAFKA_AUTO_COMMIT_INTERVAL_MS",
    ],
)
@pytest.mark.parametrize("raw", ["0", "-5"])
def test_zero_or_negative_timeouts(minimal_env: dict[str, str], variable: str, raw: str) -> None:
    minimal_env[variable] = raw
    problem = _only_problem(minimal_env)
    assert (problem.name, problem.value) == (variable, repr(raw))
    assert problem.allowed.startswith("zero;" if raw == "0" else "negative;")
    assert "from 1 to 2147483647" in problem.allowed


def test_zero_is_fine_where_kafka_allows_it(minimal_env: dict[str, str]) -> None:
    for variable in ("KAFKA_FETCH_MAX_WAIT_MS", "KAFKA_RETRY_BACKOFF_MS", "KAFKA_FETCH_MIN_BYTES"):
        minimal_env[variable] = "0"
    assert Settings.from_env(minimal_env).fetch_max_wait_ms == 0


def test_negative_sizes(minimal_env: dict[str, str]) -> None:
    minimal_env["KAFKA_FETCH_MIN_BYTES"] = "-1"
    assert _only_problem(minimal_env).allowed == "negative; expected an integer from 0 to 2147483647"


def test_numbers_beyond_a_java_int(minimal_env: dict[str, str]) -> None:
    minimal_env["KAFKA_FETCH_MAX_BYTES"] = "2147483648"
    assert _only_problem(minimal_env).allowed.startswith("too large;")


@pytest.mark.parametrize("raw", ["5999", "1800001", "1000"])
def test_session_timeouts_outside_the_default_broker_bounds_are_the_brokers_to_judge(
    minimal_env: dict[str, str], raw: str
) -> None:
    """As in aiokafka and Java: the broker refuses a session timeout (INVALID_SESSION_TIMEOUT at start(),
    tests/integration/test_aiokafka_behaviour.py), since only it knows its group.min/max bounds."""
    minimal_env["KAFKA_SESSION_TIMEOUT_MS"] = raw
    minimal_env["KAFKA_HEARTBEAT_INTERVAL_MS"] = "100"
    assert Settings.from_env(minimal_env).session_timeout_ms == int(raw)


def test_a_zero_session_timeout_is_reported_as_zero(minimal_env: dict[str, str]) -> None:
    minimal_env["KAFKA_SESSION_TIMEOUT_MS"] = "0"
    assert _only_problem(minimal_env).allowed.startswith("zero;")


@pytest.mark.parametrize("raw", ["6000", "1800000"])
def test_session_timeout_bounds_are_inclusive(minimal_env: dict[str, str], raw: str) -> None:
    minimal_env["KAFKA_SESSION_TIMEOUT_MS"] = raw
    minimal_env["KAFKA_HEARTBEAT_INTERVAL_MS"] = "1000"
    assert Settings.from_env(minimal_env).session_timeout_ms == int(raw)


def test_a_session_timeout_below_three_heartbeats_is_a_settings_error(minimal_env: dict[str, str]) -> None:
    """Internal consistency stays ours: heartbeats must fit in a session several times."""
    with pytest.raises(SettingsError, match="heartbeat_interval_ms"):
        Settings.from_env(minimal_env, session_timeout_ms=400, heartbeat_interval_ms=200)


def test_broker_session_bounds_must_leave_a_range(minimal_env: dict[str, str]) -> None:
    minimal_env["KAFKA_GROUP_MIN_SESSION_TIMEOUT_MS"] = "60000"
    minimal_env["KAFKA_GROUP_MAX_SESSION_TIMEOUT_MS"] = "30000"
    problem = _only_problem(minimal_env)
    assert (problem.name, problem.value) == ("KAFKA_GROUP_MAX_SESSION_TIMEOUT_MS", "'30000'")
    assert problem.allowed.startswith("below group.min.session.timeout.ms (60000)")


def test_heartbeat_interval_must_be_below_a_third_of_the_session_timeout(minimal_env: dict[str, str]) -> None:
    minimal_env["KAFKA_SESSION_TIMEOUT_MS"] = "30000"
    minimal_env["KAFKA_HEARTBEAT_INTERVAL_MS"] = "10000"
    problem = _only_problem(minimal_env)
    assert (problem.name, problem.value) == ("KAFKA_HEARTBEAT_INTERVAL_MS", "'10000'")
    assert "below a third of session.timeout.ms (30000), i.e. at most 9999" in problem.allowed
    minimal_env["KAFKA_HEARTBEAT_INTERVAL_MS"] = "9999"
    assert Settings.from_env(minimal_env).heartbeat_interval_ms == 9999


def test_a_default_heartbeat_too_slow_for_a_short_session_names_the_default(
    minimal_env: dict[str, str],
) -> None:
    minimal_env["KAFKA_SESSION_TIMEOUT_MS"] = "6000"
    problem = _only_problem(minimal_env)
    assert (problem.name, problem.value) == ("KAFKA_HEARTBEAT_INTERVAL_MS (default)", "3000")


def test_the_heartbeat_rule_waits_for_a_usable_session_timeout(minimal_env: dict[str, str]) -> None:
    minimal_env["KAFKA_SESSION_TIMEOUT_MS"] = "abc"
    minimal_env["KAFKA_HEARTBEAT_INTERVAL_MS"] = "40000"
    assert [problem.name for problem in _problems(minimal_env)] == ["KAFKA_SESSION_TIMEOUT_MS"]


def test_unknown_assignor_suggests_the_closest(minimal_env: dict[str, str]) -> None:
    minimal_env["KAFKA_PARTITION_ASSIGNMENT_STRATEGY"] = "range,roundrobbin"
    problem = _only_problem(minimal_env)
    assert problem.name == "KAFKA_PARTITION_ASSIGNMENT_STRATEGY"
    assert "unknown assignor roundrobbin (did you mean roundrobin?)" in problem.allowed
    assert "range, roundrobin, sticky, cooperative-sticky" in problem.allowed


def test_java_class_names_are_not_assignor_protocol_names(minimal_env: dict[str, str]) -> None:
    minimal_env["KAFKA_PARTITION_ASSIGNMENT_STRATEGY"] = "org.apache.kafka.clients.consumer.RangeAssignor"
    assert "unknown assignor" in _only_problem(minimal_env).allowed


@pytest.mark.parametrize("raw", ["", " , ", "range,range"])
def test_assignors_must_be_a_non_empty_list_without_repeats(minimal_env: dict[str, str], raw: str) -> None:
    problem = _only_problem(minimal_env, assignors=raw)
    assert problem.name == "assignors (keyword argument)"


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("", "empty"),
        (".", "reserved"),
        ("..", "reserved"),
        ("x" * 250, "the limit is 249"),
        ("orders/0", "found '/'"),
        ("orders 0", "found ' '"),
        ("pod-ä", "found 'ä'"),
    ],
)
def test_invalid_instance_id(minimal_env: dict[str, str], raw: str, reason: str) -> None:
    minimal_env["KAFKA_GROUP_INSTANCE_ID"] = raw
    problem = _only_problem(minimal_env)
    assert (problem.name, problem.value) == ("KAFKA_GROUP_INSTANCE_ID", repr(raw))
    assert reason in problem.allowed


@pytest.mark.parametrize("raw", ["a", "x" * 249, "orders-0", "A.b_c-9"])
def test_valid_instance_ids(minimal_env: dict[str, str], raw: str) -> None:
    minimal_env["KAFKA_GROUP_INSTANCE_ID"] = raw
    assert Settings.from_env(minimal_env).group_instance_id == raw


def test_group_id_is_required(minimal_env: dict[str, str]) -> None:
    del minimal_env["KAFKA_GROUP_ID"]
    problem = _only_problem(minimal_env)
    assert (problem.name, problem.value) == ("KAFKA_GROUP_ID", "(unset)")
    assert problem.allowed.startswith("required")


def test_bootstrap_servers_are_required(minimal_env: dict[str, str]) -> None:
    del minimal_env["KAFKA_BOOTSTRAP_SERVERS"]
    problem = _only_problem(minimal_env)
    assert (problem.name, problem.value) == ("KAFKA_BOOTSTRAP_SERVERS", "(unset)")


@pytest.mark.parametrize("raw", ["broker:", "broker:0", "broker:65536", ":9092", "broker:x", "[::1]:"])
def test_bootstrap_servers_need_a_host_and_a_valid_port(minimal_env: dict[str, str], raw: str) -> None:
    minimal_env["KAFKA_BOOTSTRAP_SERVERS"] = f"good:9092,{raw}"
    problem = _only_problem(minimal_env)
    assert problem.allowed == f"{raw!r}: expected host or host:port with a port from 1 to 65535"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("broker", ("broker:9092",)),
        ("broker,other:9093", ("broker:9092", "other:9093")),
        ("10.0.0.7", ("10.0.0.7:9092",)),
        ("[::1]", ("[::1]:9092",)),
        ("::1", ("[::1]:9092",)),
    ],
)
def test_a_bootstrap_server_without_a_port_is_on_9092_as_in_aiokafka(
    minimal_env: dict[str, str], raw: str, expected: tuple[str, ...]
) -> None:
    minimal_env["KAFKA_BOOTSTRAP_SERVERS"] = raw
    assert Settings.from_env(minimal_env).bootstrap_servers == expected
    assert Settings.from_keywords(bootstrap_servers=raw, group_id="g").bootstrap_servers == expected
    assert Settings(bootstrap_servers=tuple(raw.split(",")), group_id="g").bootstrap_servers == expected


def test_ipv6_bootstrap_servers(minimal_env: dict[str, str]) -> None:
    minimal_env["KAFKA_BOOTSTRAP_SERVERS"] = "[::1]:9092"
    assert Settings.from_env(minimal_env).bootstrap_servers == ("[::1]:9092",)


@pytest.mark.parametrize(
    ("variable", "raw", "suggestion"),
    [
        ("KAFKA_AUTO_OFFSET_RESET", "smallest", ""),
        ("KAFKA_AUTO_OFFSET_RESET", "Earliest", " (did you mean earliest?)"),
        ("KAFKA_ISOLATION_LEVEL", "read-committed", " (did you mean read_committed?)"),
        ("KAFKA_SECURITY_PROTOCOL", "sasl_ssl", " (did you mean SASL_SSL?)"),
        ("KAFKA_SASL_MECHANISM", "NTLM", ""),
    ],
)
def test_choices(minimal_env: dict[str, str], variable: str, raw: str, suggestion: str) -> None:
    minimal_env[variable] = raw
    problem = _only_problem(minimal_env)
    assert problem.name == variable
    assert problem.allowed.startswith("one of ")
    assert problem.allowed.endswith(suggestion)


@pytest.mark.parametrize("protocol", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_sasl_without_credentials(minimal_env: dict[str, str], protocol: str) -> None:
    minimal_env["KAFKA_SECURITY_PROTOCOL"] = protocol
    minimal_env["KAFKA_SASL_MECHANISM"] = "SCRAM-SHA-256"
    problems = _problems(minimal_env)
    assert [(p.name, p.value) for p in problems] == [
        ("KAFKA_SASL_USERNAME", "(unset)"),
        ("KAFKA_SASL_PASSWORD", "(unset)"),
    ]
    assert all(f"{protocol} with SCRAM-SHA-256 needs credentials" in p.allowed for p in problems)


def test_sasl_with_an_empty_password(minimal_env: dict[str, str]) -> None:
    problem = _only_problem(minimal_env, security_protocol="SASL_SSL", sasl_username="svc", sasl_password="")
    assert (problem.name, problem.value) == ("sasl_password (keyword argument)", "***")


def test_credentials_that_the_protocol_would_ignore(minimal_env: dict[str, str]) -> None:
    minimal_env["KAFKA_SASL_USERNAME"] = "svc"
    minimal_env["KAFKA_SASL_PASSWORD"] = "pw"
    problems = _problems(minimal_env)
    assert [p.name for p in problems] == ["KAFKA_SASL_USERNAME", "KAFKA_SASL_PASSWORD"]
    assert all("ignored with security.protocol PLAINTEXT" in p.allowed for p in problems)


def test_tls_files_that_the_protocol_would_ignore(minimal_env: dict[str, str], tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("x")
    minimal_env["KAFKA_SSL_CA_LOCATION"] = str(ca)
    minimal_env["KAFKA_SECURITY_PROTOCOL"] = "SASL_PLAINTEXT"
    problem = _only_problem(minimal_env, sasl_username="u", sasl_password="p")
    assert problem.name == "KAFKA_SSL_CA_LOCATION"
    assert "ignored with security.protocol SASL_PLAINTEXT; use SSL or SASL_SSL" in problem.allowed


def test_missing_tls_files(minimal_env: dict[str, str], tmp_path: Path) -> None:
    minimal_env["KAFKA_SECURITY_PROTOCOL"] = "SSL"
    minimal_env["KAFKA_SSL_CA_LOCATION"] = str(tmp_path / "absent.pem")
    problem = _only_problem(minimal_env)
    assert (problem.name, problem.value) == ("KAFKA_SSL_CA_LOCATION", repr(str(tmp_path / "absent.pem")))
    assert problem.allowed.startswith("no such file")


@pytest.mark.parametrize("given", ["KAFKA_SSL_CERTIFICATE_LOCATION", "KAFKA_SSL_KEY_LOCATION"])
def test_mutual_tls_needs_both_certificate_and_key(
    minimal_env: dict[str, str], tmp_path: Path, given: str
) -> None:
    pem = tmp_path / "one.pem"
    pem.write_text("x")
    minimal_env["KAFKA_SECURITY_PROTOCOL"] = "SSL"
    minimal_env[given] = str(pem)
    problem = _only_problem(minimal_env)
    assert problem.name == given
    assert "mutual TLS needs both files" in problem.allowed


def test_a_key_password_without_a_key(minimal_env: dict[str, str]) -> None:
    minimal_env["KAFKA_SECURITY_PROTOCOL"] = "SSL"
    minimal_env["KAFKA_SSL_KEY_PASSWORD"] = "pw"
    problem = _only_problem(minimal_env)
    assert (problem.name, problem.value) == ("KAFKA_SSL_KEY_PASSWORD", "***")


def test_every_problem_is_reported_at_once_in_table_order() -> None:
    environ = {
        "KAFKA_SESSION_TIMEOUT_MS": "4s",
        "KAFKA_GROUP_INSTANCE_ID": "pod/0",
        "KAFKA_PARTITION_ASSIGNMENT_STRATEGY": "stiky",
        "KAFKA_MAX_POLL_RECORDS": "0",
        "KAFKA_GROUP_INSTANCEID": "pod-0",
    }
    with pytest.raises(SettingsError) as raised:
        Settings.from_env(environ, retry_backoff_ms=-1, hearbeat_interval_ms=1000)
    names = [problem.name for problem in raised.value.problems]
    assert names == [
        "KAFKA_BOOTSTRAP_SERVERS",
        "KAFKA_GROUP_ID",
        "KAFKA_GROUP_INSTANCE_ID",
        "KAFKA_SESSION_TIMEOUT_MS",
        "KAFKA_PARTITION_ASSIGNMENT_STRATEGY",
        "KAFKA_MAX_POLL_RECORDS",
        "retry_backoff_ms (keyword argument)",
        "hearbeat_interval_ms (keyword argument)",
        "KAFKA_GROUP_INSTANCEID",
    ]
    message = str(raised.value)
    assert message.startswith("9 configuration problems (nothing was sent to Kafka):\n")
    assert all(f"  - {problem}" in message for problem in raised.value.problems)


def test_direct_construction_validates_and_names_fields() -> None:
    with pytest.raises(SettingsError) as raised:
        Settings(bootstrap_servers=("b:9092",), group_id="g", group_instance_id="..", session_timeout_ms=1)
    assert [(p.name, p.value) for p in raised.value.problems] == [
        ("group_instance_id", "'..'"),
        ("heartbeat_interval_ms", "3000"),
    ]


def test_replacing_a_field_validates_again(minimal_env: dict[str, str]) -> None:
    settings = Settings.from_env(minimal_env)
    with pytest.raises(SettingsError):
        msgspec.structs.replace(settings, heartbeat_interval_ms=20_000)

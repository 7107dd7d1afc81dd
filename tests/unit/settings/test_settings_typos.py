"""Unknown variables under the prefix: misspellings are caught with a suggestion, strangers left alone."""

from __future__ import annotations

import pytest

from staticconsumer.errors import SettingsError
from staticconsumer.settings import Settings


@pytest.mark.parametrize(
    ("typo", "meant"),
    [
        ("KAFKA_GROUP_INSTANCEID", "KAFKA_GROUP_INSTANCE_ID"),
        ("KAFKA_GROUP_INSTANCE", "KAFKA_GROUP_INSTANCE_ID"),
        ("KAFKA_SESION_TIMEOUT_MS", "KAFKA_SESSION_TIMEOUT_MS"),
        ("KAFKA_SESSION_TIMEOUT", "KAFKA_SESSION_TIMEOUT_MS"),
        ("KAFKA_BOOTSTRAP_SERVER", "KAFKA_BOOTSTRAP_SERVERS"),
        ("KAFKA_HEARTBEAT_INTERVAL", "KAFKA_HEARTBEAT_INTERVAL_MS"),
        ("KAFKA_GROUPID", "KAFKA_GROUP_ID"),
        ("KAFKA_SASL_USER", "KAFKA_SASL_USERNAME"),
        ("KAFKA_SSL_KEYPASSWORD", "KAFKA_SSL_KEY_PASSWORD"),
        ("KAFKA_group_instance_id", "KAFKA_GROUP_INSTANCE_ID"),
        ("KAFKA_Session_Timeout_Ms", "KAFKA_SESSION_TIMEOUT_MS"),
    ],
)
def test_a_typo_suggests_the_closest_variable(minimal_env: dict[str, str], typo: str, meant: str) -> None:
    minimal_env[typo] = "value"
    with pytest.raises(SettingsError) as raised:
        Settings.from_env(minimal_env)
    (problem,) = raised.value.problems
    assert problem.name == typo
    assert problem.allowed.startswith(f"unknown variable; did you mean {meant}?")


@pytest.mark.parametrize(
    "stranger",
    [
        # What Kubernetes injects for a Service named "kafka".
        "KAFKA_PORT",
        "KAFKA_SERVICE_HOST",
        "KAFKA_SERVICE_PORT",
        "KAFKA_PORT_9092_TCP",
        "KAFKA_PORT_9092_TCP_PROTO",
        "KAFKA_PORT_9092_TCP_ADDR",
        # The broker image's own and common application variables.
        "KAFKA_HEAP_OPTS",
        "KAFKA_OPTS",
        "KAFKA_JMX_PORT",
        "KAFKA_LOG4J_OPTS",
        "KAFKA_TOPIC",
        "KAFKA_TOPICS",
        "KAFKA_SCHEMA_REGISTRY_URL",
        "KAFKA_GROUP",
    ],
)
def test_unrelated_variables_under_the_prefix_are_ignored(minimal_env: dict[str, str], stranger: str) -> None:
    minimal_env[stranger] = "tcp://10.0.0.1:9092"
    assert Settings.from_env(minimal_env).group_id == "orders"


def test_a_lookalike_that_belongs_to_someone_else_can_be_ignored(minimal_env: dict[str, str]) -> None:
    minimal_env["KAFKA_SASL_USER"] = "used by another library"
    assert Settings.from_env(minimal_env, ignore={"KAFKA_SASL_USER"}).sasl_username is None


def test_typos_are_only_looked_for_under_the_prefix(minimal_env: dict[str, str]) -> None:
    environ = {"APP_" + name.removeprefix("KAFKA_"): value for name, value in minimal_env.items()}
    environ["KAFKA_GROUP_INSTANCEID"] = "x"
    assert Settings.from_env(environ, prefix="APP_").group_id == "orders"
    environ["APP_GROUP_INSTANCEID"] = "x"
    with pytest.raises(SettingsError, match="did you mean APP_GROUP_INSTANCE_ID"):
        Settings.from_env(environ, prefix="APP_")


def test_an_unknown_keyword_suggests_the_field(minimal_env: dict[str, str]) -> None:
    with pytest.raises(SettingsError) as raised:
        Settings.from_env(minimal_env, group_instance=3)
    (problem,) = raised.value.problems
    assert (problem.name, problem.value) == ("group_instance (keyword argument)", "3")
    assert problem.allowed == "not a setting; did you mean group_instance_id?"


def test_an_unknown_keyword_without_a_lookalike(minimal_env: dict[str, str]) -> None:
    with pytest.raises(SettingsError) as raised:
        Settings.from_env(minimal_env, colour="blue")
    assert raised.value.problems[0].allowed == "not a setting"

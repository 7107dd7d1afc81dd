"""group.protocol and group.remote.assignor: values, and Java's refusals of the other protocol's settings.

Java's ConsumerConfig refuses partition.assignment.strategy, session.timeout.ms and heartbeat.interval.ms
under group.protocol=consumer, and group.remote.assignor under classic, whenever they were *set* (its
``originals()``, blank values ignored), even at their default value. So Settings records which fields were
configured (``explicit_fields``).
"""

from __future__ import annotations

import msgspec
import pytest

from staticconsumer.errors import SettingProblem, SettingsError
from staticconsumer.settings import CLASSIC_ONLY_SETTINGS, SPEC_BY_FIELD, Settings


def _problems(environ: dict[str, str], **overrides: object) -> list[SettingProblem]:
    with pytest.raises(SettingsError) as raised:
        Settings.from_env(environ, **overrides)
    return list(raised.value.problems)


def test_defaults_are_classic_without_a_remote_assignor(minimal_env: dict[str, str]) -> None:
    settings = Settings.from_env(minimal_env)
    assert (settings.group_protocol, settings.group_remote_assignor) == ("classic", None)
    assert settings.explicit_fields == {"bootstrap_servers", "group_id"}


def test_the_consumer_protocol_with_a_remote_assignor(minimal_env: dict[str, str]) -> None:
    env = {**minimal_env, "KAFKA_GROUP_PROTOCOL": "consumer", "KAFKA_GROUP_REMOTE_ASSIGNOR": "range"}
    settings = Settings.from_env(env)
    assert (settings.group_protocol, settings.group_remote_assignor) == ("consumer", "range")
    assert {"group_protocol", "group_remote_assignor"} <= settings.explicit_fields
    assert Settings.from_env(minimal_env, group_protocol="consumer").group_remote_assignor is None


@pytest.mark.parametrize(
    ("variable", "value", "property_name"),
    [
        ("KAFKA_PARTITION_ASSIGNMENT_STRATEGY", "range,cooperative-sticky", "group.remote.assignor"),
        ("KAFKA_SESSION_TIMEOUT_MS", "45000", "group.consumer.session.timeout.ms"),
        ("KAFKA_HEARTBEAT_INTERVAL_MS", "3000", "group.consumer.heartbeat.interval.ms"),
    ],
)
def test_classic_settings_are_refused_under_consumer_even_at_their_default(
    minimal_env: dict[str, str], variable: str, value: str, property_name: str
) -> None:
    """The values are the defaults: Java refuses them because they were set, so do we."""
    problems = _problems({**minimal_env, variable: value, "KAFKA_GROUP_PROTOCOL": "consumer"})
    assert len(problems) == 1, problems
    assert problems[0].name == variable
    assert "cannot be set when group.protocol=consumer" in problems[0].allowed
    assert property_name in problems[0].allowed


def test_every_classic_setting_is_listed_at_once(minimal_env: dict[str, str]) -> None:
    problems = _problems(
        minimal_env,
        group_protocol="consumer",
        assignors=["range"],
        session_timeout_ms=10_000,
        heartbeat_interval_ms=1_000,
    )
    assert [p.name for p in problems] == [
        f"{field} (keyword argument)"
        for field in ("session_timeout_ms", "heartbeat_interval_ms", "assignors")
    ]
    assert set(CLASSIC_ONLY_SETTINGS) == {"assignors", "session_timeout_ms", "heartbeat_interval_ms"}


def test_a_blank_variable_is_not_a_setting(minimal_env: dict[str, str]) -> None:
    """Java skips blank originals; an empty KAFKA_SESSION_TIMEOUT_MS is unset here too."""
    env = {**minimal_env, "KAFKA_SESSION_TIMEOUT_MS": "  ", "KAFKA_GROUP_PROTOCOL": "consumer"}
    assert "session_timeout_ms" not in Settings.from_env(env).explicit_fields


def test_the_remote_assignor_is_refused_under_classic(minimal_env: dict[str, str]) -> None:
    for settings in ({"KAFKA_GROUP_REMOTE_ASSIGNOR": "uniform"}, {"KAFKA_GROUP_PROTOCOL": "classic"}):
        env = {**minimal_env, "KAFKA_GROUP_REMOTE_ASSIGNOR": "uniform", **settings}
        (problem,) = _problems(env)
        assert problem.name == "KAFKA_GROUP_REMOTE_ASSIGNOR"
        assert "cannot be set when group.protocol=classic" in problem.allowed


def test_unknown_values_are_refused_with_a_suggestion(minimal_env: dict[str, str]) -> None:
    (problem,) = _problems({**minimal_env, "KAFKA_GROUP_PROTOCOL": "consumr"})
    assert problem.name == "KAFKA_GROUP_PROTOCOL"
    assert "classic, consumer" in problem.allowed
    assert "did you mean consumer?" in problem.allowed
    (problem,) = _problems(minimal_env, group_protocol="consumer", group_remote_assignor="unifrom")
    assert "uniform or range" in problem.allowed
    assert "did you mean uniform?" in problem.allowed


def test_direct_construction_counts_values_other_than_the_default() -> None:
    base = {"bootstrap_servers": ("k:9092",), "group_id": "g", "group_protocol": "consumer"}
    with pytest.raises(SettingsError, match="session_timeout_ms"):
        Settings(**base, session_timeout_ms=10_000)  # type: ignore[arg-type]
    with pytest.raises(SettingsError, match="heartbeat_interval_ms"):
        Settings(**base, explicit_fields=frozenset({"heartbeat_interval_ms"}))  # type: ignore[arg-type]
    assert Settings(**base).configured_fields() == {"bootstrap_servers", "group_id", "group_protocol"}  # type: ignore[arg-type]
    with pytest.raises(SettingsError, match="explicit_fields"):
        Settings(bootstrap_servers=("k:9092",), group_id="g", explicit_fields=frozenset({"nope"}))


def test_revalidating_a_settings_object_keeps_what_was_configured(minimal_env: dict[str, str]) -> None:
    """``from_env(**every field of a Settings, **changes)`` (how StaticConsumer merges options into a
    ready Settings) must not count the carried-over defaults as configured."""
    settings = Settings.from_env({**minimal_env, "KAFKA_GROUP_PROTOCOL": "consumer"})
    fields = {f.name: getattr(settings, f.name) for f in msgspec.structs.fields(settings)}
    merged = Settings.from_env({}, **{**fields, "max_poll_records": 10})
    assert merged.explicit_fields == settings.explicit_fields | {"max_poll_records"}
    (problem,) = _problems({}, **{**fields, "session_timeout_ms": 10_000})
    assert problem.name == "session_timeout_ms (keyword argument)"


def test_worker_settings_keep_the_protocol(minimal_env: dict[str, str]) -> None:
    env = {**minimal_env, "KAFKA_GROUP_PROTOCOL": "consumer", "KAFKA_GROUP_INSTANCE_ID": "orders-0"}
    worker = Settings.from_env(env).for_worker(2)
    assert (worker.group_protocol, worker.group_instance_id) == ("consumer", "orders-0-w2")


def test_the_settings_are_documented_with_their_variables() -> None:
    assert SPEC_BY_FIELD["group_protocol"].env_var() == "KAFKA_GROUP_PROTOCOL"
    assert SPEC_BY_FIELD["group_remote_assignor"].env_var() == "KAFKA_GROUP_REMOTE_ASSIGNOR"
    assert (
        Settings.from_env({}, bootstrap_servers="k:1", group_id="g").loggable_properties()["group.protocol"]
        == "classic"
    )

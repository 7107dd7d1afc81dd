"""Secrets never show: not in repr, str, f-strings, error messages or startup logs."""

from __future__ import annotations

import pickle

import msgspec
import pytest

from staticconsumer.errors import SettingsError
from staticconsumer.settings import Secret, Settings

PASSWORD = "correct-horse-battery-staple"
KEY_PASSWORD = "tr0ub4dor-and-3"


def test_a_secret_shows_only_stars() -> None:
    secret = Secret(PASSWORD)
    assert repr(secret) == str(secret) == f"{secret}" == "***"
    assert secret.reveal() == PASSWORD


def test_secrets_compare_by_value() -> None:
    assert Secret(PASSWORD) == Secret(PASSWORD)
    assert Secret(PASSWORD) != Secret(KEY_PASSWORD)
    assert Secret(PASSWORD) != PASSWORD
    assert len({Secret(PASSWORD), Secret(PASSWORD)}) == 1


def test_an_empty_secret_is_falsy() -> None:
    assert not Secret("")
    assert Secret(PASSWORD)


def _sasl_env() -> dict[str, str]:
    return {
        "KAFKA_BOOTSTRAP_SERVERS": "b:9092",
        "KAFKA_GROUP_ID": "g",
        "KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
        "KAFKA_SASL_USERNAME": "svc",
        "KAFKA_SASL_PASSWORD": PASSWORD,
    }


def test_settings_repr_and_str_mask_secrets() -> None:
    settings = Settings.from_env(_sasl_env())
    assert settings.sasl_password is not None
    assert settings.sasl_password.reveal() == PASSWORD
    for text in (repr(settings), str(settings), f"{settings}", repr(settings.loggable_properties())):
        assert PASSWORD not in text
        assert "sasl_password=***" in text or "'sasl.password': '***'" in text


def test_secrets_never_reach_error_messages() -> None:
    environ = _sasl_env()
    environ["KAFKA_SECURITY_PROTOCOL"] = "PLAINTEXT"
    environ["KAFKA_SSL_KEY_PASSWORD"] = KEY_PASSWORD
    environ["KAFKA_SASL_PASWORD"] = PASSWORD
    with pytest.raises(SettingsError) as raised:
        Settings.from_env(environ, sasl_pasword=PASSWORD, ssl_key_password=KEY_PASSWORD)
    rendered = "\n".join([str(raised.value), repr(raised.value), *map(repr, raised.value.problems)])
    assert PASSWORD not in rendered
    assert KEY_PASSWORD not in rendered
    assert {problem.name for problem in raised.value.problems} >= {
        "KAFKA_SASL_PASSWORD",
        "ssl_key_password (keyword argument)",
        "KAFKA_SASL_PASWORD",
        "sasl_pasword (keyword argument)",
    }


def test_a_wrong_type_for_a_secret_keyword_is_masked_too() -> None:
    with pytest.raises(SettingsError) as raised:
        Settings.from_env(_sasl_env(), sasl_password=12345678)
    assert "12345678" not in str(raised.value)


def test_unknown_variables_that_look_secret_are_masked() -> None:
    environ = _sasl_env()
    environ["KAFKA_SASL_PASSWORDS"] = PASSWORD
    with pytest.raises(SettingsError) as raised:
        Settings.from_env(environ)
    (problem,) = raised.value.problems
    assert (problem.name, problem.value) == ("KAFKA_SASL_PASSWORDS", "***")


def test_a_pickled_secret_stays_a_secret() -> None:
    restored = pickle.loads(pickle.dumps(Secret(PASSWORD)))
    assert repr(restored) == "***"
    assert restored.reveal() == PASSWORD


def test_serialising_settings_refuses_secrets_rather_than_writing_them() -> None:
    settings = Settings.from_env(_sasl_env())
    with pytest.raises(TypeError, match="Secret"):
        msgspec.json.encode(settings)


def test_an_unknown_keyword_whose_value_cannot_be_a_secret_is_shown() -> None:
    """key_deserializer looks secret (KEY) but None or a function is no password: show it as it is."""
    with pytest.raises(SettingsError) as raised:
        Settings.from_env(_sasl_env(), key_deserializer=None, value_deserializer=len, sasl_pasword=1234)
    shown = {problem.name: problem.value for problem in raised.value.problems}
    assert shown["key_deserializer (keyword argument)"] == "None"
    assert shown["value_deserializer (keyword argument)"] == repr(len)
    assert shown["sasl_pasword (keyword argument)"] == "***", "a number may still be a password"

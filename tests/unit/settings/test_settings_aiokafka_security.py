"""aiokafka's security keywords as they are: ssl_context, sasl_plain_*, sasl_oauth_token_provider and the
Kerberos names reach every client; conflicts and misuse are refused naming the culprit, secrets masked."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
from aiokafka.abc import AbstractTokenProvider

from staticconsumer import settings as settings_module
from staticconsumer.consumer import StaticConsumer
from staticconsumer.errors import SettingsError
from staticconsumer.settings import Secret, Settings

BASE = {"bootstrap_servers": "broker-0:9092", "group_id": "orders"}


class Tokens(AbstractTokenProvider):
    async def token(self) -> str:
        return "token-of-orders"

    def __repr__(self) -> str:
        return "Tokens(token-of-orders)"  # a careless provider: its repr must never reach an error


def _problems(**overrides: object) -> dict[str, str]:
    with pytest.raises(SettingsError) as raised:
        Settings.from_env({}, **{**BASE, **overrides})
    return {problem.name: f"{problem.value} {problem.allowed}" for problem in raised.value.problems}


def test_aiokafka_sasl_spellings_set_our_settings_and_keep_the_password_secret() -> None:
    settings = Settings.from_env(
        {},
        **BASE,
        security_protocol="SASL_SSL",
        sasl_mechanism="SCRAM-SHA-256",
        sasl_plain_username="svc",
        sasl_plain_password="pw-of-svc",
    )
    assert settings.sasl_username == "svc"
    assert settings.sasl_password == Secret("pw-of-svc")
    assert "pw-of-svc" not in repr(settings)
    kwargs = settings.aiokafka_client_kwargs()
    assert (kwargs["sasl_plain_username"], kwargs["sasl_plain_password"]) == ("svc", "pw-of-svc")
    assert {"sasl_username", "sasl_password"} <= settings.explicit_fields


def test_both_spellings_of_one_setting_are_refused_naming_both_without_the_password() -> None:
    problems = _problems(
        security_protocol="SASL_SSL",
        sasl_username="svc",
        sasl_plain_username="other",
        sasl_password="pw-one",
        sasl_plain_password="pw-two",
    )
    assert set(problems) == {
        "sasl_plain_username (keyword argument)",
        "sasl_plain_password (keyword argument)",
    }
    assert "sasl_username is given too" in problems["sasl_plain_username (keyword argument)"]
    assert "sasl_password is given too" in problems["sasl_plain_password (keyword argument)"]
    assert "pw-" not in " ".join(problems.values())


def test_a_problem_with_an_aiokafka_spelling_is_reported_under_that_spelling() -> None:
    problems = _problems(security_protocol="PLAINTEXT", sasl_plain_username="svc")
    assert "ignored with security.protocol PLAINTEXT" in problems["sasl_plain_username (keyword argument)"]


def test_a_given_ssl_context_is_used_as_is_by_both_clients_of_the_consumer() -> None:
    context = ssl.create_default_context()
    consumer = StaticConsumer(
        "orders", **BASE, security_protocol="SSL", ssl_context=context, value_deserializer=bytes.decode
    )
    assert consumer.settings.tls_context() is context
    assert consumer.settings.aiokafka_client_kwargs()["ssl_context"] is context  # membership thread, probes
    assert consumer._fetcher_kwargs()["ssl_context"] is context  # the fetcher
    assert "ssl_context" not in consumer.settings.loggable_properties()


def test_a_consumer_given_settings_takes_aiokafka_keywords_beside_them() -> None:
    base = Settings.from_env(
        {},
        **BASE,
        security_protocol="SASL_SSL",
        sasl_mechanism="PLAIN",
        sasl_username="svc",
        sasl_password="pw",
    )
    context = ssl.create_default_context()
    consumer = StaticConsumer("orders", settings=base, ssl_context=context)
    assert consumer.settings.ssl_context is context
    assert consumer.settings.sasl_username == "svc"
    no_user = Settings.from_env({}, **BASE, security_protocol="SSL")
    plain = StaticConsumer(
        "orders",
        settings=no_user,
        security_protocol="SASL_SSL",
        sasl_plain_username="u",
        sasl_plain_password="p",
        ssl_context=context,
    )
    assert (plain.settings.sasl_username, plain.settings.ssl_context) == ("u", context)


def test_ssl_context_is_refused_without_tls_with_the_files_or_when_not_a_context(
    tls_files: dict[str, Path],
) -> None:
    context = ssl.create_default_context()
    where = "ssl_context (keyword argument)"
    assert "ignored with security.protocol PLAINTEXT" in _problems(ssl_context=context)[where]
    both = _problems(security_protocol="SSL", ssl_context=context, ssl_ca_location=str(tls_files["cert"]))
    assert "given together with ssl_ca_location (keyword argument)" in both[where]
    assert "expected an ssl.SSLContext" in _problems(security_protocol="SSL", ssl_context="ca.pem")[where]
    with pytest.raises(SettingsError, match="ssl_context"):
        Settings(bootstrap_servers=("b:9092",), group_id="g", ssl_context=context)  # PLAINTEXT


def test_oauthbearer_carries_the_token_provider_and_needs_one() -> None:
    tokens = Tokens()
    settings = Settings.from_env(
        {},
        **BASE,
        security_protocol="SASL_SSL",
        sasl_mechanism="OAUTHBEARER",
        sasl_oauth_token_provider=tokens,
    )
    kwargs = settings.aiokafka_client_kwargs()
    assert kwargs["sasl_mechanism"] == "OAUTHBEARER"
    assert kwargs["sasl_oauth_token_provider"] is tokens
    assert "sasl_plain_username" not in kwargs, "OAUTHBEARER logs in without a user name"
    assert StaticConsumer("t", settings=settings)._fetcher_kwargs()["sasl_oauth_token_provider"] is tokens
    assert "token-of-orders" not in repr(settings)
    assert "sasl_oauth_token_provider=<Tokens>" in repr(settings)

    missing = _problems(security_protocol="SASL_SSL", sasl_mechanism="OAUTHBEARER")
    assert (
        "needs the keyword argument sasl_oauth_token_provider" in missing["sasl_mechanism (keyword argument)"]
    )
    where = "sasl_oauth_token_provider (keyword argument)"
    unused = _problems(
        security_protocol="SASL_SSL",
        sasl_mechanism="PLAIN",
        sasl_username="u",
        sasl_password="p",
        sasl_oauth_token_provider=tokens,
    )
    assert "ignored with security.protocol SASL_SSL and sasl.mechanism PLAIN" in unused[where]
    assert "token-of-orders" not in " ".join(unused.values())
    wrong = _problems(
        security_protocol="SASL_SSL", sasl_mechanism="OAUTHBEARER", sasl_oauth_token_provider="tok"
    )
    assert "expected an aiokafka.abc.AbstractTokenProvider" in wrong[where]
    assert "tok" not in wrong[where].split()[0], "shown as its type only"
    extra = _problems(
        security_protocol="SASL_SSL",
        sasl_mechanism="OAUTHBEARER",
        sasl_oauth_token_provider=tokens,
        sasl_username="u",
    )
    assert "ignored with sasl.mechanism OAUTHBEARER" in extra["sasl_username (keyword argument)"]


def test_gssapi_says_what_is_missing_and_carries_the_kerberos_names_when_it_can(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(settings_module, "_gssapi_installed", lambda: False)
    problems = _problems(security_protocol="SASL_PLAINTEXT", sasl_mechanism="GSSAPI")
    assert "Python package gssapi, which is not installed" in problems["sasl_mechanism (keyword argument)"]

    monkeypatch.setattr(settings_module, "_gssapi_installed", lambda: True)
    settings = Settings.from_env(
        {"KAFKA_SASL_KERBEROS_SERVICE_NAME": "kafka-prod"},
        **BASE,
        security_protocol="SASL_SSL",
        sasl_mechanism="GSSAPI",
        sasl_kerberos_domain_name="kafka.example.com",
    )
    kwargs = settings.aiokafka_client_kwargs()
    assert (kwargs["sasl_kerberos_service_name"], kwargs["sasl_kerberos_domain_name"]) == (
        "kafka-prod",
        "kafka.example.com",
    )
    assert "sasl_plain_username" not in kwargs


def test_acl_hints_name_the_principal_each_way_of_logging_in_gives() -> None:
    from staticconsumer.connection.access import principal_of

    oauth = Settings.from_env(
        {},
        **BASE,
        security_protocol="SASL_SSL",
        sasl_mechanism="OAUTHBEARER",
        sasl_oauth_token_provider=Tokens(),
    )
    assert principal_of(oauth) == "User:<the subject (sub claim) of your OAuth token>"
    plain = Settings.from_env(
        {}, **BASE, security_protocol="SASL_SSL", sasl_plain_username="svc", sasl_plain_password="pw"
    )
    assert principal_of(plain) == "User:svc"
    context = Settings.from_env({}, **BASE, security_protocol="SSL", ssl_context=ssl.create_default_context())
    assert "certificate your ssl_context presents" in principal_of(context)


def test_a_misspelt_aiokafka_keyword_is_pointed_at_the_right_one_masked() -> None:
    problems = _problems(ssl_contxt=ssl.create_default_context(), sasl_plain_pasword="pw-of-svc")
    assert "did you mean ssl_context?" in problems["ssl_contxt (keyword argument)"]
    assert problems["sasl_plain_pasword (keyword argument)"].startswith("*** ")
    assert "did you mean sasl_plain_password?" in problems["sasl_plain_pasword (keyword argument)"]

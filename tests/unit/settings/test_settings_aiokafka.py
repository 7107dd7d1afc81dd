"""The aiokafka keyword arguments: names aiokafka 0.14 really takes, values it accepts, TLS that loads."""

from __future__ import annotations

import inspect
import ssl
from pathlib import Path

import pytest
from aiokafka import AIOKafkaClient, AIOKafkaConsumer
from aiokafka.coordinator.assignors.range import RangePartitionAssignor
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

from staticconsumer.errors import SettingsError
from staticconsumer.settings import Settings


def _parameters(function: object) -> set[str]:
    return set(inspect.signature(function).parameters)  # type: ignore[arg-type]


def _static(minimal_env: dict[str, str], **overrides: object) -> Settings:
    return Settings.from_env(minimal_env, group_instance_id="orders-0", **overrides)


def test_client_kwargs_are_parameters_of_aiokafka_client(minimal_env: dict[str, str]) -> None:
    sasl = _static(minimal_env, security_protocol="SASL_PLAINTEXT", sasl_username="u", sasl_password="p")
    assert set(sasl.aiokafka_client_kwargs()) <= _parameters(AIOKafkaClient.__init__)


def test_consumer_kwargs_are_parameters_of_aiokafka_consumer(minimal_env: dict[str, str]) -> None:
    kwargs = _static(minimal_env).aiokafka_consumer_kwargs(lambda name: RangePartitionAssignor)
    assert set(kwargs) <= _parameters(AIOKafkaConsumer.__init__)


def test_consumer_kwargs_carry_the_membership_settings(minimal_env: dict[str, str]) -> None:
    settings = _static(
        minimal_env, session_timeout_ms=30_000, max_poll_interval_ms=120_000, client_rack="az1"
    )
    kwargs = settings.aiokafka_consumer_kwargs()
    assert kwargs["bootstrap_servers"] == ["broker-0:9092"]
    assert kwargs["group_id"] == "orders"
    assert kwargs["group_instance_id"] == "orders-0"
    assert kwargs["client_id"] == "consumer-orders-orders-0"
    assert kwargs["session_timeout_ms"] == 30_000
    assert kwargs["max_poll_interval_ms"] == kwargs["rebalance_timeout_ms"] == 120_000
    assert kwargs["max_poll_records"] == 500
    assert kwargs["client_rack"] == "az1"
    assert kwargs["ssl_context"] is None
    assert "sasl_plain_password" not in kwargs
    assert "partition_assignment_strategy" not in kwargs


def test_assignor_names_are_mapped_in_order_of_preference(minimal_env: dict[str, str]) -> None:
    classes = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}
    settings = _static(minimal_env, assignors="roundrobin,range")
    kwargs = settings.aiokafka_consumer_kwargs(classes.__getitem__)
    assert kwargs["partition_assignment_strategy"] == (RoundRobinPartitionAssignor, RangePartitionAssignor)


def test_sasl_credentials_are_revealed_only_to_aiokafka(minimal_env: dict[str, str]) -> None:
    settings = _static(
        minimal_env,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-256",
        sasl_username="svc",
        sasl_password="pw",
    )
    kwargs = settings.aiokafka_client_kwargs()
    assert (kwargs["sasl_mechanism"], kwargs["sasl_plain_username"]) == ("SCRAM-SHA-256", "svc")
    assert kwargs["sasl_plain_password"] == "pw"


async def test_aiokafka_accepts_the_consumer_kwargs_without_connecting(minimal_env: dict[str, str]) -> None:
    settings = _static(minimal_env, security_protocol="SASL_PLAINTEXT", sasl_username="u", sasl_password="p")
    consumer = AIOKafkaConsumer(**settings.aiokafka_consumer_kwargs(lambda name: RangePartitionAssignor))
    try:
        assert consumer._group_instance_id == "orders-0"
        assert consumer._session_timeout_ms == 45_000
    finally:
        await consumer.stop()
    client = AIOKafkaClient(**settings.aiokafka_client_kwargs())
    await client.close()


def _tls(minimal_env: dict[str, str], files: dict[str, Path], key: str, **overrides: object) -> Settings:
    tls: dict[str, object] = {
        "security_protocol": "SSL",
        "ssl_ca_location": str(files["cert"]),
        "ssl_certificate_location": str(files["cert"]),
        "ssl_key_location": str(files[key]),
    }
    return _static(minimal_env, **(tls | overrides))


def test_the_ssl_context_verifies_brokers_and_presents_the_client_certificate(
    minimal_env: dict[str, str], tls_files: dict[str, Path], key_password: str
) -> None:
    context = _tls(minimal_env, tls_files, "encrypted_key", ssl_key_password=key_password).tls_context()
    assert context is not None
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname
    assert [cert["subject"] for cert in context.get_ca_certs()] == [((("commonName", "broker"),),)]


def test_an_unencrypted_key_needs_no_password(
    minimal_env: dict[str, str], tls_files: dict[str, Path]
) -> None:
    assert _tls(minimal_env, tls_files, "key").tls_context() is not None


@pytest.mark.parametrize("password", ["wrong", None])
def test_a_wrong_or_missing_key_password_fails_validation(
    minimal_env: dict[str, str], tls_files: dict[str, Path], password: str | None
) -> None:
    with pytest.raises(SettingsError) as raised:
        _tls(minimal_env, tls_files, "encrypted_key", ssl_key_password=password)
    (problem,) = raised.value.problems
    assert problem.name == "ssl_key_location (keyword argument)"
    assert "wrong or missing ssl.key.password" in problem.allowed


def test_a_key_that_does_not_match_the_certificate_fails_validation(
    minimal_env: dict[str, str], tls_files: dict[str, Path], tmp_path: Path
) -> None:
    with pytest.raises(SettingsError, match="does not match the certificate"):
        _tls(minimal_env, tls_files, "key", ssl_certificate_location=str(tls_files["key"]))


def test_a_ca_file_that_is_not_pem_fails_validation(minimal_env: dict[str, str], tmp_path: Path) -> None:
    garbage = tmp_path / "ca.pem"
    garbage.write_text("this is not a certificate")
    minimal_env["KAFKA_SECURITY_PROTOCOL"] = "SSL"
    minimal_env["KAFKA_SSL_CA_LOCATION"] = str(garbage)
    with pytest.raises(SettingsError) as raised:
        Settings.from_env(minimal_env)
    (problem,) = raised.value.problems
    assert problem.name == "KAFKA_SSL_CA_LOCATION"
    assert problem.allowed.startswith("not a readable PEM file of CA certificates")


async def test_aiokafka_accepts_the_tls_kwargs(
    minimal_env: dict[str, str], tls_files: dict[str, Path]
) -> None:
    settings = _tls(
        minimal_env,
        tls_files,
        "key",
        security_protocol="SASL_SSL",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_username="u",
        sasl_password="p",
    )
    kwargs = settings.aiokafka_client_kwargs()
    assert isinstance(kwargs["ssl_context"], ssl.SSLContext)
    client = AIOKafkaClient(**kwargs)
    await client.close()


def test_plaintext_builds_no_ssl_context(minimal_env: dict[str, str]) -> None:
    assert _static(minimal_env).tls_context() is None


# ------------------------------------------------ aiokafka's partition_assignment_strategy keyword


def test_aiokafka_assignor_classes_become_assignor_names_in_order(minimal_env: dict[str, str]) -> None:
    from aiokafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

    strategy = (RoundRobinPartitionAssignor, StickyPartitionAssignor, RangePartitionAssignor)
    settings = Settings.from_env(minimal_env, partition_assignment_strategy=strategy)
    assert settings.assignors == ("roundrobin", "sticky", "range")
    assert "assignors" in settings.explicit_fields


def test_aiokafka_default_strategy_through_the_consumer_constructor() -> None:
    from staticconsumer import StaticConsumer

    consumer = StaticConsumer(
        "t",
        bootstrap_servers="k:9092",
        group_id="g",
        partition_assignment_strategy=(RoundRobinPartitionAssignor,),
        telemetry=False,
    )
    assert consumer.settings.assignors == ("roundrobin",)
    ready = Settings.from_env({}, bootstrap_servers="k:9092", group_id="g", assignors="range")
    merged = StaticConsumer(
        "t", settings=ready, partition_assignment_strategy=[RangePartitionAssignor()], telemetry=False
    )
    assert merged.settings.assignors == ("range",), "instances too; the keyword replaces the settings' list"


def test_an_aiokafka_assignor_without_equivalent_names_the_class_and_the_assignors_setting(
    minimal_env: dict[str, str],
) -> None:
    from aiokafka.coordinator.assignors.abstract import AbstractPartitionAssignor

    class Homegrown(AbstractPartitionAssignor):  # type: ignore[misc]
        name = "homegrown"
        version = 0

    with pytest.raises(SettingsError) as raised:
        Settings.from_env(minimal_env, partition_assignment_strategy=(RoundRobinPartitionAssignor, Homegrown))
    (problem,) = raised.value.problems
    assert problem.name == "partition_assignment_strategy (keyword argument)"
    assert problem.value == "(RoundRobinPartitionAssignor, " + Homegrown.__qualname__ + ")"
    assert f"{__name__}.{Homegrown.__qualname__} (protocol 'homegrown')" in problem.allowed
    assert "set assignors= (KAFKA_PARTITION_ASSIGNMENT_STRATEGY)" in problem.allowed


def test_a_look_alike_class_is_not_taken_for_aiokafkas(minimal_env: dict[str, str]) -> None:
    class RoundRobinPartitionAssignor:  # same name, not aiokafka's
        name = "roundrobin"

    with pytest.raises(SettingsError, match="no assignor here is equivalent"):
        Settings.from_env(minimal_env, partition_assignment_strategy=(RoundRobinPartitionAssignor,))


def test_both_keywords_or_an_empty_strategy_are_refused(minimal_env: dict[str, str]) -> None:
    with pytest.raises(SettingsError, match="pass one of the two, not both"):
        Settings.from_env(
            minimal_env, assignors="range", partition_assignment_strategy=(RangePartitionAssignor,)
        )
    with pytest.raises(SettingsError, match="list at least one assignor"):
        Settings.from_env(minimal_env, partition_assignment_strategy=())


def test_protocol_names_in_the_strategy_are_checked_as_assignors_are(minimal_env: dict[str, str]) -> None:
    assert Settings.from_env(minimal_env, partition_assignment_strategy=("roundrobin",)).assignors == (
        "roundrobin",
    )
    with pytest.raises(SettingsError, match="unknown assignor rangee"):
        Settings.from_env(minimal_env, partition_assignment_strategy=("rangee",))


def test_aiokafkas_sticky_user_data_and_ours_read_each_other() -> None:
    """What makes mapping StickyPartitionAssignor to our ``sticky`` safe in one group."""
    from aiokafka.coordinator.assignors.sticky.sticky_assignor import StickyAssignorUserDataV1

    from assignors import decode_sticky_user_data, encode_sticky_user_data

    theirs = StickyAssignorUserDataV1([("orders", [0, 2]), ("payments", [1])], 7).encode()
    decoded = decode_sticky_user_data(theirs)
    assert sorted(decoded.partitions) == [("orders", 0), ("orders", 2), ("payments", 1)]
    assert decoded.generation == 7
    ours = encode_sticky_user_data([("orders", 1), ("payments", 0)], 9)
    read = StickyAssignorUserDataV1.decode(ours)
    assert sorted((t, list(p)) for t, p in read.previous_assignment) == [("orders", [1]), ("payments", [0])]
    assert read.generation == 9

"""The embedded broker's TLS listeners as properties: opt-in, beside the first port, SASL_SSL with SASL."""

from __future__ import annotations

from pathlib import Path

import pytest

from staticconsumer.testing.broker import BrokerSettings, EmbeddedKafka, SaslSettings
from staticconsumer.testing.tls import TlsMaterial


def _prepared(kafka: EmbeddedKafka, tmp_path: Path) -> EmbeddedKafka:
    """Ports and paths as ``_launch`` sets them, without a JVM or keytool."""
    kafka.workdir, kafka.port, kafka.controller_port = tmp_path, 9001, 9002
    if kafka.settings.tls:
        kafka.tls_port, kafka.sasl_ssl_port = 9003, 9004 if kafka.sasl_enabled else 0
        kafka._tls = TlsMaterial(tmp_path, tmp_path / "ca.pem", tmp_path / "broker.p12", "store-pw")
    return kafka


def test_a_default_broker_has_no_tls_at_all(tmp_path: Path) -> None:
    kafka = _prepared(EmbeddedKafka(), tmp_path)
    props = kafka._properties()
    assert not [key for key in props if key.startswith("ssl.")]
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:9001,CONTROLLER://127.0.0.1:9002"
    with pytest.raises(ValueError, match=r"BrokerSettings\(tls=True\)"):
        kafka.tls_bootstrap_servers()


def test_tls_adds_an_ssl_listener_and_keeps_the_first_port_as_it_was(tmp_path: Path) -> None:
    kafka = _prepared(EmbeddedKafka(settings=BrokerSettings(tls=True)), tmp_path)
    props = kafka._properties()
    assert props["listeners"].split(",") == [
        "PLAINTEXT://127.0.0.1:9001",
        "CONTROLLER://127.0.0.1:9002",
        "SSL://127.0.0.1:9003",
    ]
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:9001,SSL://127.0.0.1:9003"
    assert props["inter.broker.listener.name"] == "PLAINTEXT"
    assert props["ssl.keystore.location"] == str(tmp_path / "broker.p12")
    assert kafka.tls_bootstrap_servers() == "127.0.0.1:9003"
    assert kafka.tls_settings() == {
        "bootstrap_servers": "127.0.0.1:9003",
        "security_protocol": "SSL",
        "ssl_ca_location": str(tmp_path / "ca.pem"),
    }
    with pytest.raises(ValueError, match="no SASL_SSL listener"):
        kafka.tls_bootstrap_servers(sasl=True)


def test_tls_with_sasl_adds_ssl_and_sasl_ssl_with_the_same_logins(tmp_path: Path) -> None:
    sasl = SaslSettings(users={"alice": "alice-pw"}, mechanisms=("PLAIN", "SCRAM-SHA-256", "OAUTHBEARER"))
    kafka = _prepared(EmbeddedKafka(settings=BrokerSettings(tls=True, sasl=sasl)), tmp_path)
    props = kafka._properties()
    assert props["listeners"].split(",")[2:] == ["SSL://127.0.0.1:9003", "SASL_SSL://127.0.0.1:9004"]
    assert props["listener.security.protocol.map"].split(",") == [
        "SASL_PLAINTEXT:SASL_PLAINTEXT",
        "CONTROLLER:PLAINTEXT",
        "SSL:SSL",
        "SASL_SSL:SASL_SSL",
    ]
    for listener in ("sasl_plaintext", "sasl_ssl"):
        assert 'user_alice="alice-pw"' in props[f"listener.name.{listener}.plain.sasl.jaas.config"]
        assert f"listener.name.{listener}.scram-sha-256.sasl.jaas.config" in props
        assert "OAuthBearerLoginModule" in props[f"listener.name.{listener}.oauthbearer.sasl.jaas.config"]
    assert props["sasl.enabled.mechanisms"] == "PLAIN,SCRAM-SHA-256,OAUTHBEARER"
    settings = kafka.tls_settings("alice", "SCRAM-SHA-256", sasl=True)
    assert (settings["bootstrap_servers"], settings["security_protocol"]) == ("127.0.0.1:9004", "SASL_SSL")
    assert (settings["sasl_username"], settings["sasl_password"]) == ("alice", "alice-pw")


def test_oauthbearer_is_opt_in_on_a_sasl_broker() -> None:
    assert "OAUTHBEARER" not in SaslSettings().mechanisms
    with pytest.raises(ValueError, match="OAUTHBEARER is not enabled"):
        EmbeddedKafka(settings=BrokerSettings(sasl=SaslSettings())).sasl_settings(None, "OAUTHBEARER")

"""SASL users and ACLs for the embedded broker: its properties, SCRAM credentials and client settings."""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
DEFAULT_SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
"""OAUTHBEARER is opt-in: the broker accepts unsecured tokens for it (see ``oauth``), any ``sub`` at all."""
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


@dataclass(frozen=True)
class SaslSettings:
    """A SASL_PLAINTEXT client listener with users, and Kafka's StandardAuthorizer (deny unless allowed).

    ``users`` maps user names to passwords; every user can log in with every mechanism in
    ``mechanisms`` (PLAIN from the listener's JAAS config, SCRAM credentials written at format time with
    the storage tool's ``--add-scram``). ``super_user`` gets a random password unless listed in
    ``users``; the broker uses it for itself and the helpers (topics, ACLs) use it too. OAUTHBEARER, if
    listed, takes Kafka's unsecured tokens (``oauth.UnsecuredTokenProvider``) naming any principal. With
    ``authorizer`` off, any authenticated user may do anything.
    """

    users: Mapping[str, str] = field(default_factory=dict)
    mechanisms: tuple[str, ...] = DEFAULT_SASL_MECHANISMS
    super_user: str = "admin"
    authorizer: bool = True

    def __post_init__(self) -> None:
        unknown = [m for m in self.mechanisms if m not in SASL_MECHANISMS]
        if unknown or not self.mechanisms:
            raise ValueError(f"SASL mechanisms must be among {', '.join(SASL_MECHANISMS)}; got {unknown}")
        for name in [*self.users, self.super_user]:
            if not re.fullmatch(r"[A-Za-z0-9._-]+", name):
                raise ValueError(f"SASL user name {name!r}: use letters, digits, '.', '_' and '-' only")
        for name, password in self.users.items():
            # they go into a JAAS line and the storage tool's --add-scram syntax unescaped
            if not password or re.search(r'["\\,\[\]=\s]', password):
                raise ValueError(
                    f"password of SASL user {name!r}: non-empty, without quotes, , [ ] = or spaces"
                )


class SaslUsers:
    """The users of one broker (or cluster) with their passwords, the super user's generated here."""

    def __init__(self, sasl: SaslSettings | None) -> None:
        self.sasl = sasl
        self.passwords: dict[str, str] = {}
        if sasl is not None:
            self.passwords = {sasl.super_user: secrets.token_urlsafe(18), **sasl.users}

    def broker_properties(self, client_listener: str, client_address: str, controller: str) -> dict[str, str]:
        """Clients and the broker itself on SASL_PLAINTEXT (the broker as the super user over PLAIN);
        the controller listener stays PLAINTEXT on loopback, so the broker's controller connection is
        User:ANONYMOUS, which must be a super user for broker registration to be authorized."""
        sasl = self.sasl
        assert sasl is not None
        props = {
            "listeners": f"{client_listener}://{client_address},CONTROLLER://{controller}",
            "advertised.listeners": f"{client_listener}://{client_address}",
            "inter.broker.listener.name": client_listener,
            "listener.security.protocol.map": f"{client_listener}:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
            "sasl.enabled.mechanisms": ",".join(dict.fromkeys(["PLAIN", *sasl.mechanisms])),
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            **self.listener_logins(client_listener),
        }
        if sasl.authorizer:
            props["authorizer.class.name"] = STANDARD_AUTHORIZER
            props["allow.everyone.if.no.acl.found"] = "false"
            props["super.users"] = f"User:{sasl.super_user};User:ANONYMOUS"
        return props

    def listener_logins(self, listener: str) -> dict[str, str]:
        """The JAAS logins of one SASL listener (``sasl_plaintext``, ``sasl_ssl``): every user by PLAIN
        and by each enabled SCRAM mechanism (SCRAM credentials are in the metadata: ``scram_arguments``)."""
        sasl = self.sasl
        assert sasl is not None
        listener = listener.lower()
        plain_users = " ".join(f'user_{name}="{password}"' for name, password in self.passwords.items())
        props = {
            f"listener.name.{listener}.plain.sasl.jaas.config": (
                "org.apache.kafka.common.security.plain.PlainLoginModule required "
                f'username="{sasl.super_user}" password="{self.passwords[sasl.super_user]}" {plain_users};'
            ),
        }
        for mechanism in sasl.mechanisms:
            if mechanism.startswith("SCRAM-"):
                props[f"listener.name.{listener}.{mechanism.lower()}.sasl.jaas.config"] = (
                    "org.apache.kafka.common.security.scram.ScramLoginModule required;"
                )
        if "OAUTHBEARER" in sasl.mechanisms:  # the default server callback validates unsecured tokens
            props[f"listener.name.{listener}.oauthbearer.sasl.jaas.config"] = (
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                f'unsecuredLoginStringClaim_sub="{sasl.super_user}";'
            )
        return props

    def scram_arguments(self) -> list[str]:
        """``--add-scram`` for every user and SCRAM mechanism (the storage tool writes them at format)."""
        if self.sasl is None:
            return []
        arguments = []
        for mechanism in self.sasl.mechanisms:
            if mechanism.startswith("SCRAM-"):
                for name, password in self.passwords.items():
                    arguments += ["--add-scram", f"{mechanism}=[name={name},password={password}]"]
        return arguments

    def settings(self, user: str | None = None, mechanism: str = "PLAIN") -> dict[str, Any]:
        """``Settings`` fields (``security_protocol``, ``sasl_*``) to connect as ``user`` (default: the
        super user); for OAUTHBEARER a ``sasl_oauth_token_provider`` naming ``user`` instead of the
        password. Empty without SASL. Holds the password: pass it on, never log it."""
        sasl = self.sasl
        if sasl is None:
            return {}
        name = user or sasl.super_user
        if name not in self.passwords:
            raise KeyError(f"no SASL user {name!r} on this broker")
        if mechanism not in sasl.mechanisms and mechanism != "PLAIN":
            raise ValueError(f"{mechanism} is not enabled on this broker ({', '.join(sasl.mechanisms)})")
        if mechanism == "OAUTHBEARER":
            from staticconsumer.testing.oauth import UnsecuredTokenProvider

            return {
                "security_protocol": "SASL_PLAINTEXT",
                "sasl_mechanism": mechanism,
                "sasl_oauth_token_provider": UnsecuredTokenProvider(name),
            }
        return {
            "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": mechanism,
            "sasl_username": name,
            "sasl_password": self.passwords[name],
        }

    def client_kwargs(self, user: str | None = None, mechanism: str = "PLAIN") -> dict[str, Any]:
        """aiokafka client keyword arguments for ``user`` (default: the super user); empty without SASL."""
        fields = self.settings(user, mechanism)
        if not fields or mechanism == "OAUTHBEARER":
            return fields
        return {
            "security_protocol": fields["security_protocol"],
            "sasl_mechanism": fields["sasl_mechanism"],
            "sasl_plain_username": fields["sasl_username"],
            "sasl_plain_password": fields["sasl_password"],
        }

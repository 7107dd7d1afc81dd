"""StaticConsumer's public surface is what docs/consumer.md documents: every member of aiokafka's
AIOKafkaConsumer has a row saying whether it is the same, different or absent, and nothing internal is
public (the membership's callbacks, positions to commit, ... live on private objects)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import aiokafka

from staticconsumer import StaticConsumer
from staticconsumer.connection import explain_authorization
from staticconsumer.errors import GroupAuthorizationFailedError, TopicAuthorizationFailedError
from staticconsumer.settings import Settings

DOCS = Path(__file__).resolve().parents[2] / "docs" / "consumer.md"
DUNDER_API = {"__aenter__", "__aexit__", "__aiter__", "__anext__"}

OURS = {
    "from_env",
    "member_id",
    "generation",
    "is_leader",
    "rebalance_protocol",
    "connection_state",
    "missing_topics",
    "processing",
}
"""Public members aiokafka does not have: membership state, connection diagnosis, a record's span."""


def _public(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


def _section(title: str) -> str:
    text = DOCS.read_text()
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def test_every_aiokafka_consumer_member_has_a_row() -> None:
    table = _section("Coming from aiokafka")
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    documented = {name for row in rows for name in re.findall(r"`(\w+)(?:\(|`)", row.split("|")[1])}
    aiokafka_members = _public(aiokafka.AIOKafkaConsumer) | {"start", "stop"}
    assert aiokafka_members - documented == set(), "every AIOKafkaConsumer member is in the table"


def test_every_aiokafka_option_has_a_row() -> None:
    table = _section("Coming from aiokafka")
    options = set(inspect.signature(aiokafka.AIOKafkaConsumer.__init__).parameters) - {"self"}
    missing = sorted(
        option for option in options if f"`{option}`" not in table and f"`*{option}`" not in table
    )
    assert missing == []


def test_the_public_surface_is_aiokafkas_plus_the_documented_membership_state() -> None:
    ours = _public(StaticConsumer)
    assert ours == (_public(aiokafka.AIOKafkaConsumer) | OURS), ours ^ (
        _public(aiokafka.AIOKafkaConsumer) | OURS
    )
    assert set(dir(StaticConsumer)) >= DUNDER_API
    consumer = StaticConsumer("orders", bootstrap_servers="127.0.0.1:1", group_id="g")
    assert {n for n in vars(consumer) if not n.startswith("_")} == {"settings", "event_log"}
    for name in OURS:
        assert re.search(rf"[`.]{name}\b", DOCS.read_text()), f"{name} is documented"


def test_membership_authorization_errors_name_the_acl() -> None:
    settings = Settings.from_env(
        {},
        bootstrap_servers="k:9092",
        group_id="billing",
        security_protocol="SASL_PLAINTEXT",
        sasl_username="bob",
        sasl_password="secret-of-bob",
    )
    bare = GroupAuthorizationFailedError("JoinGroup answered GROUP_AUTHORIZATION_FAILED")
    explained = explain_authorization(bare, settings, "billing", {"orders"})
    assert isinstance(explained, GroupAuthorizationFailedError)
    assert "User:bob needs READ on Group:billing" in str(explained)
    assert explained.__cause__ is bare
    assert explain_authorization(explained, settings, "billing", {"orders"}) is explained, "explained once"
    topic = explain_authorization(
        TopicAuthorizationFailedError("offset commit failed"), settings, "billing", {"x"}
    )
    assert "User:bob needs READ on Topic:x" in str(topic)
    assert "secret-of-bob" not in str(topic)
    other = ValueError("unrelated")
    assert explain_authorization(other, settings, "billing", {"x"}) is other

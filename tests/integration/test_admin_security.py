"""GroupAdmin on a SASL_PLAINTEXT broker with Kafka's StandardAuthorizer: refusals are clear, typed, and
leave the group as it was; a principal with the right ACLs manages the group over PLAIN and SCRAM."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from staticconsumer.admin import GroupAdmin
from staticconsumer.consumer import StaticConsumer
from staticconsumer.errors import GroupAuthorizationFailedError
from staticconsumer.testing.broker import (
    DEFAULT_VERSION,
    OLD_COORDINATOR_VERSION,
    BrokerSettings,
    EmbeddedKafka,
    SaslSettings,
)

from .support import FAST, eventually

pytestmark = pytest.mark.kafka

USERS = {"alice": "alice-pw-1", "bob": "bob-pw-2", "mallory": "mallory-pw-3"}
VERSIONS = [DEFAULT_VERSION] + (
    [] if os.environ.get("STATICCONSUMER_KAFKA_OLD") == "0" else [OLD_COORDINATOR_VERSION]
)


@pytest.fixture(scope="module", params=VERSIONS, ids=[f"sasl-kafka-{v}" for v in VERSIONS])
def sasl_kafka(request: pytest.FixtureRequest) -> Iterator[EmbeddedKafka]:
    with EmbeddedKafka(request.param, BrokerSettings(sasl=SaslSettings(users=USERS))) as kafka:
        yield kafka


def _admin(kafka: EmbeddedKafka, user: str | None, mechanism: str = "PLAIN") -> GroupAdmin:
    return GroupAdmin(bootstrap_servers=kafka.bootstrap_servers, **kafka.sasl_settings(user, mechanism))


async def _wait_for_acls(kafka: EmbeddedKafka, user: str, mechanism: str, group: str) -> None:
    """ACLs reach the broker's authorizer asynchronously: wait until ``user`` may describe ``group``."""

    async def allowed() -> bool:
        try:
            async with _admin(kafka, user, mechanism) as admin:
                await admin.describe_group(group)
        except GroupAuthorizationFailedError:
            return False
        return True

    await eventually(allowed, 10, f"{user} may describe {group}")


async def test_a_principal_without_access_is_refused_clearly_and_the_group_is_untouched(
    sasl_kafka: EmbeddedKafka, unique_group: str
) -> None:
    group, topic = unique_group, f"{unique_group}-t"
    sasl_kafka.create_topic(topic, 2)
    sasl_kafka.grant("User:alice", "GROUP", group, "READ")  # READ implies DESCRIBE
    sasl_kafka.grant("User:alice", "TOPIC", topic, "READ")
    sasl_kafka.grant("User:bob", "GROUP", group, "DESCRIBE")
    await _wait_for_acls(sasl_kafka, "alice", "SCRAM-SHA-512", group)
    await _wait_for_acls(sasl_kafka, "bob", "SCRAM-SHA-256", group)

    alice = sasl_kafka.sasl_settings("alice", "SCRAM-SHA-512")
    consumers = [
        StaticConsumer(
            topic,
            bootstrap_servers=sasl_kafka.bootstrap_servers,
            group_id=group,
            group_instance_id=f"pod-{i}",
            **FAST,
            **alice,
        )
        for i in range(2)
    ]
    for consumer in consumers:
        await consumer.start()
    try:
        deadline = time.monotonic() + 30
        while not all(c.assignment() for c in consumers):
            assert time.monotonic() < deadline, "the SASL consumers did not get their partitions"
            await asyncio.gather(*(c.getmany(timeout_ms=200) for c in consumers))
        generation = consumers[0].generation

        async with _admin(sasl_kafka, "mallory", "PLAIN") as mallory:
            with pytest.raises(GroupAuthorizationFailedError, match=f"describe group '{group}'") as refused:
                await mallory.describe_group(group)
            assert refused.value.code == 30
            with pytest.raises(GroupAuthorizationFailedError, match=f"remove members of group '{group}'"):
                await mallory.remove_members(group, ["pod-0", "pod-1"], reason="not mine to remove")

        async with _admin(sasl_kafka, "bob", "SCRAM-SHA-256") as bob:
            seen = await bob.describe_group(group)  # DESCRIBE is enough to look ...
            assert sorted(m.group_instance_id or "" for m in seen.members) == ["pod-0", "pod-1"]
            with pytest.raises(GroupAuthorizationFailedError, match="needs READ"):  # ... but not to remove
                await bob.remove_members(group, ["pod-1"])

        await asyncio.gather(*(c.getmany(timeout_ms=1500) for c in consumers))  # a rebalance would show now
        async with _admin(sasl_kafka, None) as superuser:
            after = await superuser.describe_group(group)
        assert after.state == "Stable"
        assert sorted(m.group_instance_id or "" for m in after.members) == ["pod-0", "pod-1"]
        assert consumers[0].generation == generation, "the refused calls must not have rebalanced the group"
        assert all(c.assignment() for c in consumers)

        await consumers[1].stop()
        async with _admin(sasl_kafka, "alice", "SCRAM-SHA-512") as owner:
            result = await owner.remove_members(group, ["pod-1"], reason="scale down")
        assert result.all_removed, result
    finally:
        for consumer in consumers:
            await consumer.stop()


def test_cli_reports_the_refusal_without_showing_the_password(
    sasl_kafka: EmbeddedKafka, unique_group: str
) -> None:
    env = {
        **os.environ,
        "KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
        "KAFKA_SASL_MECHANISM": "SCRAM-SHA-512",
        "KAFKA_SASL_USERNAME": "mallory",
        "KAFKA_SASL_PASSWORD": USERS["mallory"],
    }
    env.pop("KAFKA_BOOTSTRAP_SERVERS", None)
    for command in (["describe", unique_group], ["remove-members", unique_group, "--instance-id", "pod-0"]):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "staticconsumer.cli",
                *command,
                "--bootstrap-server",
                sasl_kafka.bootstrap_servers,
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 2, done
        assert "GroupAuthorizationFailedError" in done.stderr
        assert f"group '{unique_group}'" in done.stderr
        assert USERS["mallory"] not in done.stdout + done.stderr

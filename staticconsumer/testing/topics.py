"""Topic and ACL administration for test brokers: create, grow, wait until every partition is served."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

TOPIC_ALREADY_EXISTS = 36


async def create_topics(
    bootstrap_servers: str,
    topics: Mapping[str, int],
    *,
    wait: bool = True,
    client_kwargs: Mapping[str, Any] | None = None,
    replication_factor: int = 1,
    configs: Mapping[str, str] | None = None,
) -> None:
    """Create topics and wait until metadata shows every partition with a leader and a full ISR."""
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    admin = AIOKafkaAdminClient(
        bootstrap_servers=bootstrap_servers, request_timeout_ms=10_000, **(client_kwargs or {})
    )
    await admin.start()
    try:
        response: Any = await admin.create_topics(
            [
                NewTopic(name, partitions, replication_factor, topic_configs=dict(configs or {}))
                for name, partitions in topics.items()
            ]
        )
        for topic_error in response.topic_errors:
            name, code = topic_error[0], topic_error[1]
            if code not in (0, TOPIC_ALREADY_EXISTS):  # already there: fine for a ready probe
                raise RuntimeError(f"CreateTopics {name!r} failed with error code {code}: {topic_error}")
        if wait:
            await wait_for_partitions(admin, dict(topics), replicas=replication_factor)
    finally:
        await admin.close()


async def add_partitions(
    bootstrap_servers: str,
    topic: str,
    total: int,
    *,
    client_kwargs: Mapping[str, Any] | None = None,
    replication_factor: int = 1,
) -> None:
    """Grow ``topic`` to ``total`` partitions and wait until metadata shows them served."""
    from aiokafka.admin import AIOKafkaAdminClient, NewPartitions

    admin = AIOKafkaAdminClient(
        bootstrap_servers=bootstrap_servers, request_timeout_ms=10_000, **(client_kwargs or {})
    )
    await admin.start()
    try:
        await admin.create_partitions({topic: NewPartitions(total)})
        await wait_for_partitions(admin, {topic: total}, replicas=replication_factor)
    finally:
        await admin.close()


async def wait_for_partitions(
    admin: Any, expected: Mapping[str, int], within: float = 30.0, replicas: int = 1
) -> None:
    """Until each topic has its partitions, each with a leader and ``replicas`` replicas in sync."""
    deadline = time.monotonic() + within
    while True:
        described = await admin.describe_topics(list(expected))
        counts = {
            entry["topic"]: len(entry["partitions"])
            for entry in described
            if entry["error_code"] == 0
            and all(p["leader"] >= 0 and len(p["isr"]) >= replicas for p in entry["partitions"])
        }
        if all(counts.get(name, 0) >= want for name, want in expected.items()):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"partitions not served after {within}s: want {dict(expected)} with {replicas} in sync, "
                f"see {counts}"
            )
        await asyncio.sleep(0.1)


_ACL_RESOURCE_TYPES = {"TOPIC": 2, "GROUP": 3, "CLUSTER": 4, "TRANSACTIONAL_ID": 5}
_ACL_PATTERNS = {"LITERAL": 3, "PREFIXED": 4}
_ACL_OPERATIONS = {
    "ALL": 2,
    "READ": 3,
    "WRITE": 4,
    "CREATE": 5,
    "DELETE": 6,
    "ALTER": 7,
    "DESCRIBE": 8,
    "CLUSTER_ACTION": 9,
    "DESCRIBE_CONFIGS": 10,
    "ALTER_CONFIGS": 11,
    "IDEMPOTENT_WRITE": 12,
}
_ALLOW = 3


async def create_acls(
    bootstrap_servers: str,
    bindings: list[tuple[str, str, str, str, str, str]],
    client_kwargs: Mapping[str, Any] | None = None,
) -> None:
    """Create ALLOW ACLs, each ``(principal, resource type, resource name, operation, pattern, host)``
    with Kafka's names (``GROUP``, ``READ``, ``LITERAL``), through our CreateAcls (aiokafka has none)."""
    from staticconsumer import _aiokafka
    from staticconsumer.protocol import AclCreation, CreateAclsRequest, CreateAclsResponse

    creations = []
    for principal, resource_type, name, operation, pattern, host in bindings:
        try:
            creations.append(
                AclCreation(
                    _ACL_RESOURCE_TYPES[resource_type.upper()],
                    name,
                    _ACL_PATTERNS[pattern.upper()],
                    principal,
                    host,
                    _ACL_OPERATIONS[operation.upper()],
                    _ALLOW,
                )
            )
        except KeyError as error:
            raise ValueError(f"unknown ACL resource type, pattern or operation: {error}") from None
    client = _aiokafka.new_client(bootstrap_servers=bootstrap_servers, **(client_kwargs or {}))
    await client.bootstrap()
    try:
        exchange = await _aiokafka.send(
            client, _aiokafka.any_node(client), CreateAclsRequest(creations), coordination=False
        )
    finally:
        await client.close()
    failed = [r for r in exchange.response_as(CreateAclsResponse).results if r.error_code]
    if failed:
        raise RuntimeError(f"CreateAcls failed: {[(r.error_code, r.error_message) for r in failed]}")

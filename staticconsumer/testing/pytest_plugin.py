"""pytest plugin: real Kafka for your tests, loaded only when a project opts in (there is no ``pytest11``
entry point, so its generic fixture names never land in a run uninvited)::

    pytest_plugins = ["staticconsumer.testing.pytest_plugin"]   # top-level conftest.py
    # or: pytest -p staticconsumer.testing.pytest_plugin

Fixtures (``pytest --fixtures`` shows each one's docstring):
  kafka_broker   session-scoped EmbeddedKafka (or ExternalKafka when STATICCONSUMER_KAFKA_BOOTSTRAP is
                 set). Tests marked ``both_versions`` run once per pinned line (4.x and 3.9.x).
  kafka_cluster  session-scoped 3-node EmbeddedKafkaCluster with a fault proxy per node.
  unique_topic   a topic name no other test uses (not created).
  unique_group   a consumer group id no other test uses.
  create_topic   ``create_topic(name=None, partitions=1) -> name``: creates it on ``kafka_broker``
                 and waits until every partition has a leader.
  add_partitions ``add_partitions(name, total)``: grows a topic and waits for the new partitions.

Nothing starts unless a test asks for a fixture.

When Java, Maven or the jars are missing, tests that need a broker fail with one line saying what is
missing (no traceback), and every other test still runs.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, NoReturn

import pytest

from staticconsumer.testing.broker import (
    DEFAULT_VERSION,
    OLD_COORDINATOR_VERSION,
    EmbeddedKafka,
    ExternalKafka,
    external_bootstrap,
    resolve_version,
)
from staticconsumer.testing.errors import TestInfrastructureError

if TYPE_CHECKING:
    from staticconsumer.testing.cluster import EmbeddedKafkaCluster

OLD_LINE_ENV = "STATICCONSUMER_KAFKA_OLD"
"""Set to 0 to leave out the 3.9.x leg locally; CI never sets it."""


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "kafka: needs the real Kafka broker (started once per session)")
    config.addinivalue_line(
        "markers", "both_versions: also run against the Kafka 3.9.x broker (the old group coordinator)"
    )


def _versions_for(metafunc: pytest.Metafunc) -> list[str]:
    if external_bootstrap():
        return ["external"]
    default = resolve_version(os.environ.get("STATICCONSUMER_KAFKA_VERSION") or DEFAULT_VERSION)
    versions = [default]
    wants_old = metafunc.definition.get_closest_marker("both_versions") is not None
    if wants_old and os.environ.get(OLD_LINE_ENV, "1") != "0" and default != OLD_COORDINATOR_VERSION:
        versions.append(OLD_COORDINATOR_VERSION)
    return versions


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "kafka_broker" in metafunc.fixturenames:
        versions = _versions_for(metafunc)
        metafunc.parametrize(
            "kafka_broker", versions, indirect=True, scope="session", ids=[f"kafka-{v}" for v in versions]
        )


def _fail_in_one_line(error: TestInfrastructureError) -> NoReturn:
    pytest.fail(f"{type(error).__name__}: {error}", pytrace=False)


@pytest.fixture(scope="session")
def kafka_broker(request: pytest.FixtureRequest) -> Iterator[EmbeddedKafka | ExternalKafka]:
    """A real single-node Kafka broker for the whole session (started on first use, stopped at the end).

    ``.bootstrap_servers``, ``.version``, ``.create_topic(name, partitions)``, ``.add_partitions(name,
    total)``, ``.log_tail()``. With STATICCONSUMER_KAFKA_BOOTSTRAP set, that cluster is used instead.
    Tests marked ``both_versions`` get one broker per pinned line (4.x and 3.9.x).
    """
    version: str = getattr(request, "param", DEFAULT_VERSION)
    bootstrap = external_bootstrap()
    if bootstrap:
        yield ExternalKafka(bootstrap)
        return
    broker = EmbeddedKafka(version)
    try:
        broker.start()
    except TestInfrastructureError as error:
        _fail_in_one_line(error)
    try:
        yield broker
    finally:
        broker.stop()


def running_cluster(nodes: int = 3) -> Iterator[EmbeddedKafkaCluster]:
    """The ``kafka_cluster`` fixture's body, for a conftest that wants it in a narrower scope (say,
    ``scope="package"``, so the JVMs stop when that package's tests are done)."""
    from staticconsumer.testing.cluster import EmbeddedKafkaCluster  # the proxy imports our codec: only now

    cluster = EmbeddedKafkaCluster(nodes=nodes, fault_proxies=True)
    try:
        cluster.start()
    except TestInfrastructureError as error:
        _fail_in_one_line(error)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def kafka_cluster() -> Iterator[EmbeddedKafkaCluster]:
    """A real 3-node KRaft cluster with a FaultProxy per node, for the session (started on first use).

    Clients reach every node through its proxy (``kafka_cluster.proxy(node_id)``: blackhole, reset,
    latency, heal, response hooks); ``stop_node``/``kill_node``/``start_node`` and
    ``find_coordinator(group)`` act on the nodes. A test that injects a fault must heal it and restart
    what it stopped: the cluster is shared. Always launched, even with STATICCONSUMER_KAFKA_BOOTSTRAP.
    """
    yield from running_cluster()


def _slug(text: str) -> str:
    return re.sub(r"[^a-zA-Z0-9._-]+", "-", text)[:80].strip("-")


@pytest.fixture
def unique_topic(request: pytest.FixtureRequest) -> str:
    """A topic name derived from the test's name plus random hex, so tests never share a topic."""
    return f"t-{_slug(request.node.name)}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def unique_group(request: pytest.FixtureRequest) -> str:
    """A consumer group id derived from the test's name plus random hex, so tests never share a group."""
    return f"g-{_slug(request.node.name)}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def create_topic(kafka_broker: EmbeddedKafka | ExternalKafka, unique_topic: str) -> Callable[..., str]:
    """``create_topic(name=None, partitions=1) -> name``: create a topic on ``kafka_broker`` (the test's
    unique topic by default) and return once every partition has a leader."""

    def create(name: str | None = None, partitions: int = 1) -> str:
        topic = name or unique_topic
        kafka_broker.create_topic(topic, partitions)
        return topic

    return create


@pytest.fixture
def add_partitions(kafka_broker: EmbeddedKafka | ExternalKafka) -> Callable[[str, int], None]:
    """``add_partitions(name, total)``: grow a topic on ``kafka_broker`` to ``total`` partitions and
    return once metadata shows them."""
    return kafka_broker.add_partitions

"""pytest plugin (auto-loaded through the ``pytest11`` entry point): a real Kafka broker per session.

Fixtures:
  kafka_broker   session-scoped EmbeddedKafka (or ExternalKafka when STATICCONSUMER_KAFKA_BOOTSTRAP is
                 set). Tests marked ``both_versions`` run once per pinned line (4.x and 3.9.x).
  unique_topic   a topic name no other test uses (not created).
  unique_group   a consumer group id no other test uses.
  create_topic   ``create_topic(name=None, partitions=1) -> name``: creates it on ``kafka_broker``
                 and waits until every partition has a leader.
  add_partitions ``add_partitions(name, total)``: grows a topic and waits for the new partitions.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Callable, Iterator

import pytest

from staticconsumer.testing.broker import (
    DEFAULT_VERSION,
    OLD_COORDINATOR_VERSION,
    EmbeddedKafka,
    ExternalKafka,
    external_bootstrap,
    resolve_version,
)

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


@pytest.fixture(scope="session")
def kafka_broker(request: pytest.FixtureRequest) -> Iterator[EmbeddedKafka | ExternalKafka]:
    version: str = getattr(request, "param", DEFAULT_VERSION)
    bootstrap = external_bootstrap()
    if bootstrap:
        yield ExternalKafka(bootstrap)
        return
    broker = EmbeddedKafka(version)
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


def _slug(text: str) -> str:
    return re.sub(r"[^a-zA-Z0-9._-]+", "-", text)[:80].strip("-")


@pytest.fixture
def unique_topic(request: pytest.FixtureRequest) -> str:
    return f"t-{_slug(request.node.name)}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def unique_group(request: pytest.FixtureRequest) -> str:
    return f"g-{_slug(request.node.name)}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def create_topic(kafka_broker: EmbeddedKafka | ExternalKafka, unique_topic: str) -> Callable[..., str]:
    def create(name: str | None = None, partitions: int = 1) -> str:
        topic = name or unique_topic
        kafka_broker.create_topic(topic, partitions)
        return topic

    return create


@pytest.fixture
def add_partitions(kafka_broker: EmbeddedKafka | ExternalKafka) -> Callable[[str, int], None]:
    return kafka_broker.add_partitions

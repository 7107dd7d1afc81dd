"""An existing cluster named by ``STATICCONSUMER_KAFKA_BOOTSTRAP``, behind the same helpers as ours."""

from __future__ import annotations

import os

from staticconsumer.testing.launcher import VERSION_ENV, run_coroutine_blocking
from staticconsumer.testing.topics import add_partitions, create_topics

BOOTSTRAP_ENV = "STATICCONSUMER_KAFKA_BOOTSTRAP"


def external_bootstrap() -> str | None:
    value = os.environ.get(BOOTSTRAP_ENV, "").strip()
    return value or None


class ExternalKafka:
    """An existing cluster named by STATICCONSUMER_KAFKA_BOOTSTRAP, with the same helpers as EmbeddedKafka."""

    def __init__(self, bootstrap_servers: str, version: str | None = None) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.version = version or os.environ.get(VERSION_ENV, "external")
        self.start_seconds = 0.0
        self.resolve_seconds = 0.0

    def create_topic(self, name: str, partitions: int = 1) -> None:
        run_coroutine_blocking(lambda: create_topics(self.bootstrap_servers, {name: partitions}))

    def add_partitions(self, name: str, total: int) -> None:
        run_coroutine_blocking(lambda: add_partitions(self.bootstrap_servers, name, total))

    def log_tail(self, lines: int = 40) -> str:
        return "(external cluster: no broker log here)"

    def stop(self) -> None:
        """Nothing to stop: the cluster is not ours."""

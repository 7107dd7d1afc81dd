"""Repository-only fixtures. The broker fixtures come from the shipped plugin (staticconsumer.testing)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from staticconsumer.testing.broker import DEFAULT_VERSION
from staticconsumer.testing.oracle import JavaOracle


@pytest.fixture(scope="session")
def java_oracle_for() -> Iterator[Callable[[str], JavaOracle]]:
    """``java_oracle_for(kafka_version)``: one oracle JVM per kafka-clients version, kept for the session."""
    started: dict[str, JavaOracle] = {}

    def get(version: str) -> JavaOracle:
        if version not in started:
            started[version] = JavaOracle.start(version)
        return started[version]

    yield get
    for oracle in started.values():
        oracle.close()


@pytest.fixture(scope="session")
def java_oracle(java_oracle_for: Callable[[str], JavaOracle]) -> JavaOracle:
    """The oracle at the default broker version's kafka-clients."""
    return java_oracle_for(DEFAULT_VERSION)

"""Repository-only fixtures. The broker fixtures come from the testing kit's plugin, which this suite opts
into here as any project would (it is never loaded uninvited: no ``pytest11`` entry point)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import pytest

from staticconsumer.testing.broker import DEFAULT_VERSION
from tests.interop.oracle import JavaOracle

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytest_plugins = ["staticconsumer.testing.pytest_plugin"]


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


@pytest.fixture(scope="session")
def spark() -> SparkSession:
    """One local Spark for the whole run (a JVM per test would dominate the time), shared by the unit and
    integration analytics tests: local[2] as on CI, two shuffle partitions, no UI, a 2 GB heap.

    Spark's default 1 GB heap ran out in CI once hundreds of analyses had run in the one JVM
    (broadcast joins allocate their hash maps up front); see ``_spark_cache_released`` too.
    """
    from staticconsumer.analytics.session import spark_session

    return spark_session("local[2]", driver_memory="2g", config={"spark.sql.shuffle.partitions": "2"})


@pytest.fixture(autouse=True)
def _spark_cache_released(request: pytest.FixtureRequest) -> Iterator[None]:
    """Each analysis caches its frames in the shared JVM; drop them after every test that used Spark."""
    yield
    if "spark" in request.fixturenames:
        request.getfixturevalue("spark").catalog.clearCache()

"""One local SparkSession for the whole pytest run: starting a JVM per test would dominate the time."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from staticconsumer.analytics.session import spark_session


@pytest.fixture(scope="session")
def spark() -> SparkSession:
    """local[2] (the CI machines have two cores), two shuffle partitions, no UI; shared by every test."""
    return spark_session("local[2]", config={"spark.sql.shuffle.partitions": "2"})

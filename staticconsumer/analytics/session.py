"""The SparkSession the analysis runs in: local[*] by default, the cluster's under spark-submit."""

from __future__ import annotations

import os
from collections.abc import Mapping

from pyspark.sql import SparkSession


def launched_by_spark_submit() -> bool:
    """spark-submit starts the JVM first and hands its port to the Python driver in this variable."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def spark_session(
    master: str | None = None,
    *,
    app_name: str = "staticconsumer-analyze",
    driver_memory: str | None = None,
    config: Mapping[str, str] | None = None,
) -> SparkSession:
    """A session for the job; an explicit ``master`` wins, else spark-submit's, else ``local[*]``.

    Locally the web UI is off and shuffles use a few partitions, because Spark's default of 200 tiny
    tasks costs more than the work on a laptop or CI machine. On a cluster the defaults (and adaptive
    query execution) are left alone.
    """
    builder = SparkSession.builder.appName(app_name)
    if master is None and not launched_by_spark_submit():
        master = "local[*]"
    if master is not None:
        builder = builder.master(master)
    if master is not None and master.startswith("local"):
        cores = os.cpu_count() or 2
        builder = builder.config("spark.ui.enabled", "false").config(
            "spark.sql.shuffle.partitions", str(max(4, 2 * cores))
        )
    if driver_memory:
        builder = builder.config("spark.driver.memory", driver_memory)
    builder = builder.config("spark.sql.session.timeZone", "UTC").config(
        "spark.ui.showConsoleProgress", "false"
    )
    for key, value in (config or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark

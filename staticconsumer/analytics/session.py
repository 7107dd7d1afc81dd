"""The SparkSession the analysis runs in: local[*] by default, the cluster's under spark-submit.

The same settings hold on every master: adaptive query execution with partition coalescing (so a
shuffle of a few hundred rows becomes one task, on a laptop and on a cluster alike), skew-join
splitting, and cached plans that may change their partitioning. The number of shuffle partitions is
sized from the input by :func:`shuffle_partitions` when the job starts, unless the user set it.
"""

from __future__ import annotations

import math
import os
import re
import socket
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

from pyspark.sql import SparkSession

from staticconsumer.errors import SparkMasterError

ADAPTIVE = {
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.adaptive.coalescePartitions.enabled": "true",
    "spark.sql.adaptive.skewJoin.enabled": "true",
    # Without this Spark keeps a cached frame's shuffle partitions as planned (200 tasks per stage on a
    # cluster, whatever the data): the cause of a 3-minute run on 183 events.
    "spark.sql.optimizer.canChangeCachedPlanOutputPartitioning": "true",
    "spark.sql.session.timeZone": "UTC",
    # The two input-sized cached frames live on local disk (job.BIG): compress them.
    "spark.rdd.compress": "true",
    # Cached blocks are compressed whole (above); the columnar cache's own per-column encodings would
    # only add their statistics pass over every value (a twelfth of the job's CPU at full size).
    "spark.sql.inMemoryColumnarStorage.compressed": "false",
    "spark.ui.showConsoleProgress": "false",
    # The materialized frames (job.materialize) are blocks of rows serialized with this: Kryo writes
    # an UnsafeRow as its bytes, where Java serialization wraps each row as an object (twice the bytes
    # on local disk, and their CPU, read back once per table).
    "spark.serializer": "org.apache.spark.serializer.KryoSerializer",
}

BYTES_PER_SHUFFLE_PARTITION = 32 * 1024 * 1024
"""Input bytes per shuffle partition: the exploded ownership rows are about the input's size again."""
MAX_SHUFFLE_PARTITIONS = 4000

_MASTER = re.compile(
    r"^(local(\[(\*|[1-9]\d*)(,\s*[1-9]\d*)?\])?|local-cluster\[\d+,\s*\d+,\s*\d+\]"
    r"|spark://[^/\s]+|yarn|k8s://\S+|mesos://\S+|connect://\S+)$"
)


def launched_by_spark_submit() -> bool:
    """spark-submit starts the JVM first and hands its port to the Python driver in this variable."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


WORKER_PYTHON = "spark.pyspark.python"
"""Spark's setting for its Python workers' interpreter; PySpark itself only reads ``PYSPARK_PYTHON``."""


def worker_python(config: Mapping[str, str], environ: Mapping[str, str]) -> str:
    """The interpreter Spark's Python workers run: the user's (``--conf spark.pyspark.python`` first, as
    spark-submit ranks them, then ``PYSPARK_PYTHON``), else the driver's own.

    PySpark's default is whatever ``python3`` is on the PATH: from a venv made from another Python the
    first Python task dies with PYTHON_VERSION_MISMATCH.
    """
    return config.get(WORKER_PYTHON) or environ.get("PYSPARK_PYTHON") or sys.executable


@contextmanager
def _pyspark_python(python: str) -> Iterator[None]:
    """``PYSPARK_PYTHON`` set while the SparkContext starts (it reads the variable then, and passes the
    path with every Python function, to local and cluster executors alike); the caller's value after."""
    before = os.environ.get("PYSPARK_PYTHON")
    os.environ["PYSPARK_PYTHON"] = python
    try:
        yield
    finally:
        if before is None:
            del os.environ["PYSPARK_PYTHON"]
        else:
            os.environ["PYSPARK_PYTHON"] = before


def check_master(master: str, timeout: float = 5.0) -> None:
    """Fail fast and clearly on a master URL Spark would reject or wait a minute on.

    Spark answers an unknown URL with a long stack trace, and a ``spark://`` master nobody listens on
    with three 20-second retries; here both are one line naming the URL.
    """
    if not _MASTER.match(master):
        raise SparkMasterError(
            f"--master {master!r} is not a Spark master URL "
            "(local, local[N], local[*], spark://HOST:PORT, yarn, k8s://URL)"
        )
    if master.startswith("spark://"):
        for address in master[len("spark://") :].split(","):
            host, _, port = address.rpartition(":")
            if not host or not port.isdigit():
                raise SparkMasterError(f"--master {master!r}: {address!r} is not HOST:PORT")
            try:
                with socket.create_connection((host, int(port)), timeout=timeout):
                    pass
            except OSError as error:
                reason = error.strerror or type(error).__name__
                raise SparkMasterError(
                    f"--master {master!r}: nothing answers at {host}:{port} ({reason}); "
                    "is the Spark master running there?"
                ) from None


def spark_session(
    master: str | None = None,
    *,
    app_name: str = "staticconsumer-analyze",
    driver_memory: str | None = None,
    config: Mapping[str, str] | None = None,
    packages: Sequence[str] = (),
    jars: Sequence[str] = (),
) -> SparkSession:
    """A session for the job; an explicit ``master`` wins, else spark-submit's, else ``local[*]``.

    ``config`` (``--conf KEY=VALUE``) is applied last, so it overrides anything set here; ``packages``
    are Maven coordinates Spark resolves at start (``spark.jars.packages``), ``jars`` local jar files.
    Both only take effect when this call starts the JVM (under spark-submit, give them to spark-submit).
    Python workers run on this interpreter unless the user named another (:func:`worker_python`); under
    spark-submit its own rules choose.
    """
    builder = SparkSession.builder.appName(app_name)
    if master is None and not launched_by_spark_submit():
        master = "local[*]"
    if master is not None:
        check_master(master)
        builder = builder.master(master)
    if master is not None and master.startswith("local"):
        builder = builder.config("spark.ui.enabled", "false")
        # The driver JVM is a child of this process: without a cap glibc gives each of its threads
        # an arena of its own, and the JVM's resident size grows gigabytes past its heap.
        os.environ.setdefault("MALLOC_ARENA_MAX", "2")
    if driver_memory:
        builder = builder.config("spark.driver.memory", driver_memory)
    for key, value in ADAPTIVE.items():
        builder = builder.config(key, value)
    if packages:
        builder = builder.config("spark.jars.packages", ",".join(packages))
    if jars:
        builder = builder.config("spark.jars", ",".join(jars))
    for key, value in (config or {}).items():
        builder = builder.config(key, value)
    if launched_by_spark_submit():
        spark = builder.getOrCreate()
    else:
        with _pyspark_python(worker_python(config or {}, os.environ)):
            spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def shuffle_partitions(input_bytes: int, parallelism: int) -> int:
    """Shuffle partitions for an input of this size: at least one per core, one per 32 MB of input.

    Adaptive execution then coalesces the small shuffles (windows, generations, the summary) to a
    task or two, so the number only bounds the big one (the exploded partitions).
    """
    by_size = math.ceil(input_bytes / BYTES_PER_SHUFFLE_PARTITION)
    return max(parallelism, min(MAX_SHUFFLE_PARTITIONS, by_size))

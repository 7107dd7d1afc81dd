"""Spark's Python workers run on the driver's own interpreter unless the user named another: PySpark's
default (``python3`` on the PATH) is another Python in a venv made from another version, and the job then
dies with PYTHON_VERSION_MISMATCH at its first Python task."""

from __future__ import annotations

import os
import sys
from typing import Any

import pytest
from pyspark.sql import SparkSession

from staticconsumer.analytics import session
from staticconsumer.analytics.session import worker_python


def test_the_driver_interpreter_unless_the_user_names_one() -> None:
    assert worker_python({}, {}) == sys.executable
    assert worker_python({}, {"PYSPARK_PYTHON": "/opt/py/bin/python"}) == "/opt/py/bin/python"
    both = {"spark.pyspark.python": "/conf/python"}
    assert worker_python(both, {"PYSPARK_PYTHON": "/env/python"}) == "/conf/python", "spark-submit's order"
    assert worker_python({"spark.pyspark.python": ""}, {}) == sys.executable, "an empty value names nothing"


def test_the_shared_session_runs_its_workers_on_this_interpreter(spark: SparkSession) -> None:
    expected = os.environ.get("PYSPARK_PYTHON", sys.executable)
    assert spark.sparkContext.pythonExec == expected
    ran_on = spark.sparkContext.parallelize([0], 1).map(lambda _: sys.executable).collect()
    assert ran_on == [expected]


class _Started(Exception):
    """Raised by the stand-in for getOrCreate with the PYSPARK_PYTHON the context would have read."""

    def __init__(self, seen: str | None) -> None:
        super().__init__(seen)
        self.seen = seen


def _start(monkeypatch: pytest.MonkeyPatch, master: str, config: dict[str, str] | None = None) -> str | None:
    """What PYSPARK_PYTHON was when ``spark_session`` started the JVM (without starting one)."""

    def get_or_create(self: Any) -> SparkSession:
        raise _Started(os.environ.get("PYSPARK_PYTHON"))

    monkeypatch.setattr(SparkSession.Builder, "getOrCreate", get_or_create)
    monkeypatch.setattr(session, "check_master", lambda master: None)
    with pytest.raises(_Started) as started:
        session.spark_session(master, config=config)
    return started.value.seen


@pytest.mark.parametrize("master", ["local[2]", "spark://127.0.0.1:7077"])
def test_spark_session_sets_workers_for_local_and_cluster_masters(
    monkeypatch: pytest.MonkeyPatch, master: str
) -> None:
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    assert _start(monkeypatch, master) == sys.executable
    assert "PYSPARK_PYTHON" not in os.environ, "the caller's environment is left as it was"
    monkeypatch.setenv("PYSPARK_PYTHON", "/users/own/python")
    assert _start(monkeypatch, master) == "/users/own/python"
    assert os.environ["PYSPARK_PYTHON"] == "/users/own/python"
    conf = {"spark.pyspark.python": "/conf/python"}
    assert _start(monkeypatch, master, conf) == "/conf/python"
    assert os.environ["PYSPARK_PYTHON"] == "/users/own/python"


def test_under_spark_submit_its_own_rules_choose(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "1")
    assert _start(monkeypatch, "local[2]") is None

"""examples/settings_from_env.py keeps running and keeps its secrets."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "settings_from_env.py"


def _run(*args: str, environ: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLE), *args], env=environ, capture_output=True, text=True, timeout=60
    )


def _without_kafka_variables() -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if not name.startswith("KAFKA_")}


def test_the_example_runs_and_shows_the_worker_ids_and_the_error() -> None:
    result = _run(environ=_without_kafka_variables())
    assert result.returncode == 0, result.stderr
    assert "orders-0-w2  (client.id consumer-orders-orders-0-w2)" in result.stdout
    assert "4 configuration problems (nothing was sent to Kafka):" in result.stdout
    assert "from-a-kubernetes-secret" not in result.stdout
    assert "a typo that still must not be printed" not in result.stdout


def test_the_example_reads_the_real_environment_when_asked() -> None:
    environ = _without_kafka_variables() | {"KAFKA_BOOTSTRAP_SERVERS": "b:9092", "KAFKA_GROUP_ID": "mine"}
    result = _run("--from-os-environ", environ=environ)
    assert result.returncode == 0, result.stderr
    assert "  group.id=mine\n" in result.stdout
    del environ["KAFKA_GROUP_ID"]
    failed = _run("--from-os-environ", environ=environ)
    assert failed.returncode == 2
    assert "KAFKA_GROUP_ID=(unset): required" in failed.stderr

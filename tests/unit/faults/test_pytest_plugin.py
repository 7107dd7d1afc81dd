"""The testing kit's pytest plugin, in a project that opts in: documented fixtures, and a machine without
Java gets one line per broker test instead of a traceback; so does the CLI. (That a project which does not
opt in gets none of it is tested on an installed wheel: tests/packaging/test_distribution.py.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from staticconsumer.cli import main

NEEDS_BROKER = """
def test_needs_a_broker(kafka_broker):
    assert kafka_broker.bootstrap_servers

def test_needs_nothing():
    assert True
"""


OPT_IN = 'pytest_plugins = ["staticconsumer.testing.pytest_plugin"]\n'


def _pytest(
    directory: Path, *args: str, path: str | None = None, opt_in: bool = True
) -> subprocess.CompletedProcess[str]:
    """pytest in a project of its own; ``opt_in`` writes the conftest.py line a project opts in with."""
    if opt_in:
        (directory / "conftest.py").write_text(OPT_IN)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STATICCONSUMER_", "PYTEST_"))}
    if path is not None:
        env["PATH"] = path
        env.pop("JAVA_HOME", None)
    return subprocess.run(
        # no:staticconsumer: an install older than the opt-in may still declare the plugin's entry point
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:staticconsumer", *args],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_every_fixture_is_listed_with_its_docstring(tmp_path: Path) -> None:
    (tmp_path / "test_sample.py").write_text("def test_nothing():\n    pass\n")
    listed = _pytest(tmp_path, "--fixtures").stdout
    for fixture, words in {
        "kafka_broker": "single-node Kafka broker",
        "kafka_cluster": "3-node KRaft cluster",
        "unique_topic": "never share a topic",
        "unique_group": "never share a group",
        "create_topic": "every partition has a leader",
        "add_partitions": "metadata shows them",
    }.items():
        assert fixture in listed, f"{fixture} not offered"
        assert words in listed, f"{fixture}'s docstring missing"


def test_without_the_opt_in_a_broker_fixture_is_not_found(tmp_path: Path) -> None:
    (tmp_path / "test_sample.py").write_text(NEEDS_BROKER)
    result = _pytest(tmp_path, opt_in=False)
    assert "fixture 'kafka_broker' not found" in result.stdout
    assert "1 passed, 1 error" in result.stdout


def test_the_opt_in_on_the_command_line_offers_the_fixtures_too(tmp_path: Path) -> None:
    (tmp_path / "test_sample.py").write_text("def test_nothing():\n    pass\n")
    listed = _pytest(
        tmp_path, "-p", "staticconsumer.testing.pytest_plugin", "--fixtures", opt_in=False
    ).stdout
    assert "kafka_broker" in listed


def test_without_java_a_broker_test_fails_in_one_line_and_the_others_run(tmp_path: Path) -> None:
    (tmp_path / "test_sample.py").write_text(NEEDS_BROKER)
    result = _pytest(tmp_path, "-rE", path=str(tmp_path))
    assert "1 passed, 1 error" in result.stdout
    assert "JavaNotFoundError: no 'java' found" in result.stdout
    assert "Traceback" not in result.stdout
    assert "staticconsumer/testing/" not in result.stdout, "a traceback into the plugin was shown"


def test_the_broker_command_says_what_is_missing_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("STATICCONSUMER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    assert main(["broker", "prefetch", "--kafka-version", "4.3.1"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "staticconsumer broker prefetch: Maven ('mvn') is not on PATH; it is needed once to fetch Kafka's "
        "jars from Maven Central (apt-get install maven, or set STATICCONSUMER_KAFKA_BOOTSTRAP to use an "
        "existing cluster)"
    ]
    handler = signal.getsignal(signal.SIGTERM)  # ``broker run`` installs its own
    try:
        assert main(["broker", "run"]) == 2
    finally:
        signal.signal(signal.SIGTERM, handler)
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1
    assert error[0].startswith("staticconsumer broker run: no 'java' found")

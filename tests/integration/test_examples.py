"""The runnable examples in examples/ keep running. Those that can run on a broker they are given
(``--bootstrap-server``) use the session's: a JVM of their own would add its start to every run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from staticconsumer.testing import EmbeddedKafka, ExternalKafka

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.kafka
def test_consumer_quickstart_restarts_without_rebalance(kafka_broker: EmbeddedKafka | ExternalKafka) -> None:
    result = subprocess.run(
        [
            sys.executable,
            str(EXAMPLES / "consumer_quickstart.py"),
            "--bootstrap-server",
            kafka_broker.bootstrap_servers,
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.count("consumed order-") == 10
    assert "restarted: generation 1" in result.stdout


@pytest.mark.kafka
def test_the_aiokafka_dropin_example_serves_both_topics(kafka_broker: EmbeddedKafka | ExternalKafka) -> None:
    result = subprocess.run(
        [
            sys.executable,
            str(EXAMPLES / "aiokafka_dropin.py"),
            "--bootstrap-server",
            kafka_broker.bootstrap_servers,
        ],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "clicks committed [10, 10, 10] highwater [10, 10, 10]" in result.stdout
    assert "views committed [10, 10, 10] highwater [10, 10, 10]" in result.stdout


@pytest.mark.kafka
def test_cooperative_rebalance_moves_only_what_the_newcomer_takes() -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "cooperative_rebalance.py")],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "protocol: cooperative" in result.stdout
    assert result.stdout.count("fetching throughout, gave up") == 2


@pytest.mark.kafka
def test_the_sasl_ssl_example_consumes_with_aiokafkas_security_keywords() -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "sasl_ssl_consumer.py")],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.count("over SASL_SSL") == 5
    assert "billing-secret" not in result.stdout + result.stderr


@pytest.mark.kafka
def test_the_sync_worker_blocks_past_its_session_and_restarts_without_rebalance(
    kafka_broker: EmbeddedKafka | ExternalKafka,
) -> None:
    result = subprocess.run(
        [
            sys.executable,
            str(EXAMPLES / "sync_worker.py"),
            "--bootstrap-server",
            kafka_broker.bootstrap_servers,
        ],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.count("handled invoice-") == 6
    assert "still generation 1" in result.stdout
    assert "restarted: generation 1, partitions 3" in result.stdout

"""examples/consumer_protocol_check.py keeps running: against the session's broker (no JVM of its own)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from staticconsumer.testing import EmbeddedKafka, ExternalKafka

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "consumer_protocol_check.py"

pytestmark = [pytest.mark.kafka, pytest.mark.both_versions]


def test_consumer_protocol_check_example(kafka_broker: EmbeddedKafka | ExternalKafka) -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLE), "--bootstrap-server", kafka_broker.bootstrap_servers],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "settings: group.protocol=consumer, group.remote.assignor=range" in result.stdout
    assert "KAFKA_SESSION_TIMEOUT_MS='45000': cannot be set when group.protocol=consumer" in result.stdout
    if kafka_broker.version.startswith("3."):
        assert result.returncode == 1, result.stderr[-3000:]
        assert "NO consumer protocol" in result.stdout
        assert "(Kafka 3.9, derived from its API versions)" in result.stdout
    else:
        assert result.returncode == 0, result.stderr[-3000:]
        assert "ConsumerGroupHeartbeat v1: ok" in result.stdout

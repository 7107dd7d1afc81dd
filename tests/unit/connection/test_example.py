"""examples/connection_errors.py keeps running and keeps showing the two typed errors it promises."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "connection_errors.py"


def test_the_connection_errors_example_shows_both_errors_with_their_causes() -> None:
    result = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "BrokerUnreachableError after 0." in result.stdout
    assert "nothing is listening there (connection refused)" in result.stdout
    assert "BrokerNotRespondingError after 2." in result.stdout
    assert "did not answer the Kafka handshake within 2000 ms" in result.stdout

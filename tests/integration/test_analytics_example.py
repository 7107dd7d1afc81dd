"""examples/analyze_events.py keeps running and finds what its synthetic rollout contains."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "analyze_events.py"


def test_analyze_events_example_reports_the_rollout() -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=900, check=False
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[0] == "26 events read; 0 malformed lines skipped"
    rollout = next(line for line in lines if "orders deploy 1 " in line)
    assert "1 rebalances (generation 2)" in rollout
    assert "2 restarts (1 without a rebalance)" in rollout
    assert "vanished 1" in rollout
    assert "1 SkipAssignment" in rollout
    assert "  orders-2: 0.5s (dead owner's end inferred: True)" in lines
    assert "  orders-3: 0.5s (dead owner's end inferred: True)" in lines

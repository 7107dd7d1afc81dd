"""examples/telemetry_console.py keeps running and shows what docs/telemetry.md says it shows."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "telemetry_console.py"


@pytest.mark.kafka
def test_console_example_prints_a_join_a_rebalance_and_a_restart_without_rebalance() -> None:
    result = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr[-3000:]
    spans = [line.split() for line in result.stdout.splitlines() if line.startswith("span ")]
    roots = Counter(
        (words[1], next(w for w in words if w.startswith("instance_id=")))
        for words in spans
        if words[1] in ("join", "rebalance", "rejoin")
    )
    # b's join and a's rebalance end at about the same time, so only the counts are certain.
    assert roots == Counter(
        {("join", "instance_id=a"): 1, ("rebalance", "instance_id=a"): 1, ("join", "instance_id=b"): 2}
    ), result.stdout
    assert any(words[1] == "commit" for words in spans)
    metrics = [line for line in result.stdout.splitlines() if line.startswith("metric ")]
    rebalances = [line for line in metrics if line.startswith("metric staticconsumer.rebalances ")]
    assert len(rebalances) == 1, metrics
    assert "'instance_id': 'a'" in rebalances[0]
    assert rebalances[0].endswith(" 1"), "one rebalance, for a, when b first joined; none for the restart"
    assert any(line.startswith("metric staticconsumer.heartbeat.time_since_last ") for line in metrics)
    assert "a is still in generation" in result.stdout

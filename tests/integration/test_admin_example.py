"""examples/remove_static_member.py keeps running and keeps showing the fast takeover."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "remove_static_member.py"


@pytest.mark.kafka
def test_remove_static_member_example() -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=240, check=False
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "remove orders-1: removed" in result.stdout
    assert "remove orders-9: UNKNOWN_MEMBER_ID (25)" in result.stdout
    took = re.search(r"partitions \[[\d, ]+\] ([\d.]+) s after it stopped", result.stdout)
    assert took is not None, result.stdout
    assert float(took.group(1)) < 10, "well before the 30 s session timeout"

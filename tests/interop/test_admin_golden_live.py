"""Drift check of the admin APIs' golden vectors (ListGroups, CreateAcls) against live kafka-clients.

Both pinned lines must reproduce the committed bytes: a wire format of a given version must not change
between client releases. Regenerate with tests/interop/regenerate_admin_golden.py.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from staticconsumer.testing.broker import PINNED_VERSIONS
from tests.interop.oracle import JavaOracle

sys.path.insert(0, str(Path(__file__).resolve().parent))
from regenerate_admin_golden import GOLDEN_DIR, generate

pytestmark = pytest.mark.oracle


@pytest.mark.parametrize("kafka_version", PINNED_VERSIONS)
def test_admin_golden_vectors_match_the_live_oracle(
    java_oracle_for: Callable[[str], JavaOracle], kafka_version: str
) -> None:
    fresh = generate(java_oracle_for(kafka_version))
    assert set(fresh) == {"ListGroups.json", "CreateAcls.json"}
    for name, content in fresh.items():
        committed = json.loads((GOLDEN_DIR / name).read_text(encoding="utf-8"))
        assert len(content["vectors"]) == len(committed["vectors"]), name
        for ours, theirs in zip(content["vectors"], committed["vectors"], strict=True):
            assert ours == theirs, f"{name}: {ours['kind']} v{ours['version']} {ours['case']} drifted"

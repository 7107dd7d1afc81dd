"""Drift check: regenerate the golden vectors against the live Java oracle and compare with the files.

Run for both pinned kafka-clients lines: a wire format of a given version must not change between
client releases, so both must reproduce the committed bytes exactly.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from regenerate_golden import GOLDEN_DIR, generate

from staticconsumer.testing.broker import PINNED_VERSIONS
from staticconsumer.testing.oracle import JavaOracle

pytestmark = pytest.mark.oracle


@pytest.mark.parametrize("kafka_version", PINNED_VERSIONS)
def test_committed_golden_vectors_match_the_live_oracle(
    java_oracle_for: Callable[[str], JavaOracle], kafka_version: str
) -> None:
    fresh = generate(java_oracle_for(kafka_version))
    committed_names = sorted(path.name for path in GOLDEN_DIR.glob("*.json"))
    assert sorted(fresh) == committed_names
    for name, content in fresh.items():
        committed = json.loads((GOLDEN_DIR / name).read_text(encoding="utf-8"))
        assert len(content["vectors"]) == len(committed["vectors"]), name
        for ours, theirs in zip(content["vectors"], committed["vectors"], strict=True):
            assert ours == theirs, f"{name}: {ours['kind']} v{ours['version']} {ours['case']} drifted"

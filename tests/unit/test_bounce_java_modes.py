"""The rolling bounce's Java modes run Kafka's consumer from the Java oracle, which lives under tests/ and
is never installed: where it is missing (an installed package, no checkout), the mode says so by name."""

from __future__ import annotations

import sys

import pytest

from staticconsumer import bounce
from staticconsumer.testing.errors import OracleError


def test_a_java_mode_without_the_repository_names_what_it_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tests.interop.oracle", None)  # importing it now fails, as when absent
    with pytest.raises(OracleError, match=r"mode java-static .*tests/interop/oracle\.py.*checkout"):
        bounce._java_member(bounce.MODES["java-static"], 0, "127.0.0.1:9", "t", "g", bounce.BounceSettings())

"""The rolling bounce's Java modes run Kafka's consumer from the Java oracle, which lives under tests/ and
is never installed: where it is missing (an installed package, no checkout), the mode says so by name. The
same for the Python clients that are no dependency of the package (kafka-python, confluent-kafka): a mode
whose client is not installed says so before any member process starts."""

from __future__ import annotations

import asyncio
import importlib.util
import sys

import pytest

from staticconsumer import bounce
from staticconsumer.testing.errors import ClientNotInstalledError, OracleError


def test_a_java_mode_without_the_repository_names_what_it_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tests.interop.oracle", None)  # importing it now fails, as when absent
    with pytest.raises(OracleError, match=r"mode java-static .*tests/interop/oracle\.py.*checkout"):
        bounce._java_member(bounce.MODES["java-static"], 0, "127.0.0.1:9", "t", "g", bounce.BounceSettings())


@pytest.mark.parametrize(
    ("name", "requirement"),
    [
        ("confluent-static", "confluent-kafka==2.16.1"),
        ("confluent-consumer", "confluent-kafka==2.16.1"),
        ("confluent-sync-static", "confluent-kafka==2.16.1"),
        ("kafka-python-static", "kafka-python==3.0.12"),
    ],
)
def test_a_python_mode_without_its_client_says_which_before_any_member_starts(
    monkeypatch: pytest.MonkeyPatch, name: str, requirement: str
) -> None:
    mode = bounce.MODES[name]
    missing = bounce.THIRD_PARTY[mode.client][0]
    found = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == missing else found(n, *a))
    spawned: list[int] = []
    monkeypatch.setitem(bounce.SPAWNERS, mode.client, lambda *args: spawned.append(1))
    with pytest.raises(
        ClientNotInstalledError, match=rf"mode {name} runs {requirement}, which is not installed"
    ):
        asyncio.run(bounce.bounce(mode, "127.0.0.1:9", "t", "g", bounce.BounceSettings()))
    assert spawned == []


@pytest.mark.parametrize("name", ["confluent-static", "confluent-consumer", "confluent-sync-static"])
def test_an_installed_client_is_required_silently(name: str) -> None:
    bounce.require_client(bounce.MODES[name])  # confluent-kafka is in the dev extra

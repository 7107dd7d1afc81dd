"""The rolling bounce is fair: each member process imports only its own client."""

from __future__ import annotations

import json
import subprocess
import sys

from staticconsumer.bounce import MEMBER_SCRIPT, TIMELINE, Member, timeline


def _imports(client: str) -> list[str]:
    run = subprocess.run(
        [sys.executable, str(MEMBER_SCRIPT), "--client", client, "--list-imports"],
        capture_output=True,
        text=True,
        check=True,
    )
    modules: list[str] = json.loads(run.stdout)
    return modules


def test_aiokafka_member_never_imports_this_repository() -> None:
    assert _imports("aiokafka") == []


def test_staticconsumer_member_imports_the_package_as_an_application_does() -> None:
    assert "staticconsumer" in _imports("staticconsumer")


def test_timeline_is_seconds_from_spawn_of_each_first_step() -> None:
    events = [
        {"e": "imported", "t": 10.5},
        {"e": "started", "t": 10.75},
        {"e": "joined", "t": 11.0},
        {"e": "joined", "t": 12.0},
        {"e": "first_record", "t": 11.5},
    ]
    steps = timeline(Member(0, 10.0, events, lambda: None))
    assert steps == {"imported": 0.5, "started": 0.75, "joined": 1.0, "first_record": 1.5}
    assert set(steps) <= set(TIMELINE)

"""The rolling bounce is fair: each member process imports only its own client."""

from __future__ import annotations

import ast
import inspect
import json
import logging
import subprocess
import sys
from types import SimpleNamespace

import kafka.coordinator.base
import kafka.coordinator.consumer
import pytest

from staticconsumer import _bounce_member
from staticconsumer.bounce import MEMBER_SCRIPT, MODES, PYTHON_CLIENTS, SPAWNERS, TIMELINE, Member, timeline


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


def test_kafka_python_member_never_imports_this_repository() -> None:
    assert _imports("kafka-python") == []


def test_staticconsumer_member_imports_the_package_as_an_application_does() -> None:
    assert "staticconsumer" in _imports("staticconsumer")


def test_sync_member_imports_the_sync_consumer_as_an_application_does() -> None:
    assert "staticconsumer.sync" in _imports("staticconsumer-sync")


@pytest.mark.parametrize(
    ("name", "client"),
    [("staticconsumer-sync-static", "staticconsumer-sync"), ("kafka-python-static", "kafka-python")],
)
def test_the_synchronous_modes_are_static_classic_members_of_their_own_client(name: str, client: str) -> None:
    mode = MODES[name]
    assert (mode.client, mode.static, mode.group_protocol) == (client, True, "classic")
    assert client in PYTHON_CLIENTS
    assert SPAWNERS[client] is SPAWNERS["aiokafka"], "a Python member process"


def _logged_formats(module: object) -> set[str]:
    """The format strings a module passes to its log calls (implicitly joined literals joined)."""
    tree = ast.parse(inspect.getsource(module))  # type: ignore[arg-type]
    return {
        node.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("debug", "info")
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    }


def test_kafka_python_hooks_match_messages_its_source_logs() -> None:
    """The timeline's kafka-python steps are its own log calls: a reworded one would lose its step."""
    modules = {
        "kafka.coordinator": kafka.coordinator.base,
        "kafka.coordinator.consumer": kafka.coordinator.consumer,
    }
    for logger, (_, messages) in _bounce_member.KAFKA_PYTHON_STEPS.items():
        assert set(messages) <= _logged_formats(modules[logger]), logger


def _record(message: str, *args: object) -> logging.LogRecord:
    return logging.LogRecord("kafka.coordinator", logging.DEBUG, __file__, 1, message, args, None)


def test_a_logged_response_with_an_error_is_not_a_step() -> None:
    steps = _bounce_member.Steps()
    hook = _bounce_member._LogSteps(steps, {"Received SyncGroup response: %s": "synced"})
    hook.emit(_record("Received SyncGroup response: %s", SimpleNamespace(error_code=27)))
    assert steps.seen == set()
    hook.emit(_record("Received SyncGroup response: %s", SimpleNamespace(error_code=0)))
    assert steps.seen == {"synced"}


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

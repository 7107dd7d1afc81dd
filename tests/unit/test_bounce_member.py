"""The rolling bounce is fair: each member process imports only its own client."""

from __future__ import annotations

import ast
import inspect
import json
import logging
import subprocess
import sys
from pathlib import Path
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


@pytest.mark.parametrize("client", ["confluent-aio", "confluent"])
def test_confluent_members_never_import_this_repository(client: str) -> None:
    assert _imports(client) == []


@pytest.mark.parametrize(
    ("name", "client", "protocol"),
    [
        ("confluent-static", "confluent-aio", "classic"),
        ("confluent-consumer", "confluent-aio", "consumer"),
        ("confluent-sync-static", "confluent", "classic"),
    ],
)
def test_the_confluent_modes_are_static_members_of_their_own_client(
    name: str, client: str, protocol: str
) -> None:
    mode = MODES[name]
    assert (mode.client, mode.static, mode.group_protocol) == (client, True, protocol)
    assert SPAWNERS[client] is SPAWNERS["aiokafka"], "a Python member process"


LIBRDKAFKA_LINES = {
    # librdkafka's format string (as in its shared library) -> a line it wrote, with the step it is
    'Group "%.*s" coordinator is %s:%i id %d': (
        "CGRPCOORD",
        '[thrd:main]: 127.0.0.1:9092/bootstrap: Group "g" coordinator is 127.0.0.1:9092 id 1',
        "coordinator",
    ),
    "JoinGroup response: GenerationId %d, Protocol %.*s, LeaderId %.*s%s, my MemberId %.*s, member "
    "metadata count %d: %s": (
        "JOINGROUP",
        "[thrd:main]: JoinGroup response: GenerationId 7, Protocol range, LeaderId m0-1 (me), my MemberId "
        "m0-1, member metadata count 2: (no error)",
        "joined",
    ),
    "SyncGroup response: %s (%d bytes of MemberState data)": (
        "SYNCGROUP",
        "[thrd:main]: SyncGroup response: Success (36 bytes of MemberState data)",
        "synced",
    ),
    'ConsumerGroupHeartbeat response received for member id "%.*s" with epoch %d': (
        "HEARTBEAT",
        '[thrd:main]: ConsumerGroupHeartbeat response received for member id "oKfvg7IoTg" with epoch 9',
        "joined",
    ),
    'Group "%s": delegating incremental %s of %d partition(s) to application on queue %s: %s': (
        "ASSIGN",
        '[thrd:main]: Group "g": delegating incremental assign of 4 partition(s) to application on queue '
        "rd_kafka_cgrp_new: sync group assign",
        "synced",
    ),
    "Adding %s [%d] back to pending list with offset %s": (
        "OFFSETFETCH",
        "[thrd:main]: Adding t [0] back to pending list with offset INVALID",
        "offsets",
    ),
}


def _librdkafka_binary() -> bytes:
    import confluent_kafka

    libraries = Path(confluent_kafka.__file__).parents[1] / "confluent_kafka.libs"
    (library,) = libraries.glob("librdkafka*.so*")
    return library.read_bytes()


def test_confluent_hooks_match_lines_librdkafka_writes() -> None:
    """The timeline's librdkafka steps are its own debug lines: a reworded one would lose its step."""
    binary = _librdkafka_binary()
    for fmt, (facility, text, step) in LIBRDKAFKA_LINES.items():
        assert fmt.encode() in binary, fmt
        steps = _bounce_member.Steps()
        _bounce_member.LibrdkafkaSteps(steps).log(7, "%s [%s] %s", facility, "rdkafka#consumer-1", text)
        assert steps.seen == {step}, text


def test_librdkafka_generation_is_the_last_join_or_epoch_and_a_failed_join_is_no_step() -> None:
    steps = _bounce_member.Steps()
    hook = _bounce_member.LibrdkafkaSteps(steps)
    failed = (
        "JoinGroup response: GenerationId -1, Protocol , LeaderId , my MemberId m0-1, member metadata "
        "count 0: Broker: Specified group generation id is not valid"
    )
    hook.log(7, "%s [%s] %s", "JOINGROUP", "rdkafka#consumer-1", failed)
    assert (steps.seen, hook.generation) == (set(), -1)
    _, joined, _ = LIBRDKAFKA_LINES[next(f for f in LIBRDKAFKA_LINES if f.startswith("JoinGroup"))]
    hook.log(7, "%s [%s] %s", "JOINGROUP", "rdkafka#consumer-1", joined)
    assert (steps.seen, hook.generation) == ({"joined"}, 7)
    hook.log(7, "%s [%s] %s", "SYNCGROUP", "rdkafka#consumer-1", "SyncGroup response: Broker: Unknown member")
    assert "synced" not in steps.seen

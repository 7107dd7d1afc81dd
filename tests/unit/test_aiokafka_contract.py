"""The contract with aiokafka: every private name and signature ``staticconsumer._aiokafka`` relies on
(its ``AIOKAFKA_INTERNALS``) exists in the installed aiokafka, and a missing one fails here naming it.

Instance attributes are looked up on fresh objects (a client, a connection, a consumer, a fetcher, cluster
metadata) that connect to nothing.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import aiokafka
import pytest
from aiokafka.client import AIOKafkaClient
from aiokafka.cluster import ClusterMetadata
from aiokafka.conn import AIOKafkaConnection
from aiokafka.consumer.consumer import AIOKafkaConsumer
from aiokafka.consumer.fetcher import Fetcher
from aiokafka.consumer.subscription_state import SubscriptionState
from aiokafka.protocol.metadata import MetadataRequest

from staticconsumer import _aiokafka
from staticconsumer._aiokafka import AIOKAFKA_INTERNALS, Internal

NOWHERE = "127.0.0.1:9"  # discard port: nothing here connects anyway


def _resolve(path: str) -> Any:
    """A module or a class (or any attribute of a module) by dotted path."""
    try:
        return importlib.import_module(path)
    except ModuleNotFoundError:
        module, _, name = path.rpartition(".")
        return getattr(importlib.import_module(module), name)


def _parameter_names(function: Any) -> list[str]:
    return [name for name in inspect.signature(function).parameters if name not in ("self", "cls")]


def broken_internals(internals: Iterable[Internal], instances: dict[str, Any]) -> list[str]:
    """One line per internal the installed aiokafka lacks (or whose signature moved), naming it."""
    problems = []
    for internal in internals:
        where = f"{internal.owner}.{internal.name}"
        try:
            owner = _resolve(internal.owner)
        except (ImportError, AttributeError) as error:
            problems.append(f"{where}: its owner {internal.owner} is gone ({error})")
            continue
        holder = instances[internal.owner] if internal.instance else owner
        if not hasattr(holder, internal.name):
            made = " on a fresh instance" if internal.instance else ""
            problems.append(f"{where}: missing{made}")
            continue
        if internal.parameters is None:
            continue
        try:
            found = _parameter_names(getattr(holder, internal.name))
        except (TypeError, ValueError) as error:
            problems.append(f"{where}: no signature to read ({error})")
            continue
        if found[: len(internal.parameters)] != list(internal.parameters):
            relied = ", ".join(internal.parameters)
            problems.append(f"{where}: signature is ({', '.join(found)}); relied on: ({relied}, ...)")
    return problems


@pytest.fixture
async def instances() -> AsyncIterator[dict[str, Any]]:
    """A fresh object of every class whose instance attributes the contract names."""
    client = AIOKafkaClient(bootstrap_servers=NOWHERE)
    consumer = AIOKafkaConsumer(bootstrap_servers=NOWHERE)
    fetcher = Fetcher(client, SubscriptionState())
    yield {
        "aiokafka.client.AIOKafkaClient": client,
        "aiokafka.conn.AIOKafkaConnection": AIOKafkaConnection("127.0.0.1", 9),
        "aiokafka.cluster.ClusterMetadata": ClusterMetadata(),
        "aiokafka.consumer.consumer.AIOKafkaConsumer": consumer,
        "aiokafka.consumer.fetcher.Fetcher": fetcher,
        "aiokafka.protocol.metadata.MetadataRequest": MetadataRequest(["t"]),
    }
    await fetcher.close()
    await consumer.stop()
    await client.close()


def _fail_with(problems: list[str]) -> str:
    return (
        f"aiokafka {aiokafka.__version__} breaks staticconsumer._aiokafka's contract "
        "(AIOKAFKA_INTERNALS):\n  " + "\n  ".join(problems)
    )


async def test_the_installed_aiokafka_has_every_internal_we_rely_on(instances: dict[str, Any]) -> None:
    problems = broken_internals(AIOKAFKA_INTERNALS, instances)
    assert not problems, _fail_with(problems)


async def test_a_method_taken_away_fails_the_contract_naming_it(
    instances: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delattr(AIOKafkaClient, "_md_synchronizer")
    assert broken_internals(AIOKAFKA_INTERNALS, instances) == [
        "aiokafka.client.AIOKafkaClient._md_synchronizer: missing"
    ]


async def test_an_instance_attribute_taken_away_fails_the_contract_naming_it(
    instances: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delattr(instances["aiokafka.conn.AIOKafkaConnection"], "_versions")
    monkeypatch.delattr(instances["aiokafka.cluster.ClusterMetadata"], "_partitions")
    assert broken_internals(AIOKAFKA_INTERNALS, instances) == [
        "aiokafka.conn.AIOKafkaConnection._versions: missing on a fresh instance",
        "aiokafka.cluster.ClusterMetadata._partitions: missing on a fresh instance",
    ]


async def test_a_moved_signature_or_a_lost_module_function_fails_the_contract_naming_it(
    instances: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    def handle_frame(self: Any, frame: bytes, correlation_id: int) -> None: ...

    monkeypatch.setattr(AIOKafkaConnection, "_handle_frame", handle_frame)
    monkeypatch.delattr(aiokafka.client, "create_conn")
    problems = broken_internals(AIOKAFKA_INTERNALS, instances)
    assert problems == [
        "aiokafka.client.create_conn: missing",
        "aiokafka.conn.AIOKafkaConnection._handle_frame: signature is (frame, correlation_id); "
        "relied on: (resp, ...)",
    ]
    assert "aiokafka.client.create_conn: missing" in _fail_with(problems)


def test_a_class_gone_from_aiokafka_fails_the_contract_naming_it() -> None:
    gone = Internal("aiokafka.conn.NoSuchConnection", "_versions")
    (problem,) = broken_internals([gone], {})
    assert problem.startswith(
        "aiokafka.conn.NoSuchConnection._versions: its owner aiokafka.conn.NoSuchConnection"
    )


# -- the list is complete: every private aiokafka name the module touches is in it ---------------------


def _private_attributes(tree: ast.AST) -> set[str]:
    return {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
    }


def _defined_here(tree: ast.Module) -> set[str]:
    """Names the module gives itself: functions, classes, module globals, and the attributes its own
    classes (those not derived from an aiokafka class) set on ``self``."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        if isinstance(node, ast.ClassDef) and not [b for b in node.bases if "AIOKafka" in ast.unparse(b)]:
            for inner in ast.walk(node):
                targets = inner.targets if isinstance(inner, ast.Assign) else []
                names.update(
                    t.attr for t in targets if isinstance(t, ast.Attribute) and ast.unparse(t.value) == "self"
                )
    for node in tree.body:
        for target in node.targets if isinstance(node, ast.Assign) else []:
            if isinstance(target, ast.Name):
                names.add(target.id)
    return names


def test_every_private_aiokafka_name_the_module_uses_is_in_the_contract() -> None:
    tree = ast.parse(Path(_aiokafka.__file__).read_text())
    unlisted = _private_attributes(tree) - _defined_here(tree) - {i.name for i in AIOKAFKA_INTERNALS}
    assert not unlisted, (
        f"staticconsumer/_aiokafka.py uses aiokafka internals not in AIOKAFKA_INTERNALS: {unlisted}"
    )

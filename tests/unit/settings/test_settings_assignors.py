"""partition.assignment.strategy accepts exactly what the assignor registry holds, custom ones included."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest

import assignors
from assignors import BUILT_IN, Assignor, GroupAssignment, Member, MemberAssignment, TopicInfo
from staticconsumer.errors import SettingsError
from staticconsumer.settings import SPEC_BY_FIELD, Settings
from staticconsumer.settings._doc import markdown_table


class Nothing(Assignor):
    name = "test-settings-assign-nothing"

    def assign(self, members: Sequence[Member], topics: Mapping[str, TopicInfo]) -> GroupAssignment:
        return {m.member_id: MemberAssignment() for m in members}


@pytest.fixture
def custom() -> Iterator[str]:
    assignors.register(Nothing)
    try:
        yield Nothing.name
    finally:
        assignors._REGISTRY.pop(Nothing.name, None)


def test_a_custom_assignor_registered_before_the_settings_is_accepted_from_the_environment(
    minimal_env: dict[str, str], custom: str
) -> None:
    minimal_env["KAFKA_PARTITION_ASSIGNMENT_STRATEGY"] = f"{custom},range"
    assert Settings.from_env(minimal_env).assignors == (custom, "range")


def test_a_custom_assignor_is_accepted_as_a_keyword_and_by_the_constructor(custom: str) -> None:
    built = Settings(bootstrap_servers=("k:9092",), group_id="g", assignors=(custom,))
    assert built.assignors == (custom,)
    assert Settings.from_env({}, bootstrap_servers="k:9092", group_id="g", assignors=[custom]).assignors == (
        custom,
    )


def test_an_unregistered_name_is_refused_listing_what_is_registered(
    minimal_env: dict[str, str], custom: str
) -> None:
    minimal_env["KAFKA_PARTITION_ASSIGNMENT_STRATEGY"] = "test-settings-assign-nothin"
    with pytest.raises(SettingsError) as raised:
        Settings.from_env(minimal_env)
    (problem,) = raised.value.problems
    assert problem.name == "KAFKA_PARTITION_ASSIGNMENT_STRATEGY"
    assert f"(did you mean {custom}?)" in problem.allowed
    assert "registered: range, roundrobin, sticky, cooperative-sticky, " in problem.allowed, "built-ins first"
    listed = problem.allowed.split("registered: ")[1].split(" (register")[0].split(", ")
    assert custom in listed[4:], "then the custom ones (other tests may have registered more)"
    assert "assignors.register" in problem.allowed


def test_a_name_is_refused_once_nothing_registers_it(minimal_env: dict[str, str]) -> None:
    minimal_env["KAFKA_PARTITION_ASSIGNMENT_STRATEGY"] = Nothing.name
    with pytest.raises(SettingsError, match=f"unknown assignor {Nothing.name}"):
        Settings.from_env(minimal_env)


def test_the_docs_list_the_built_in_assignors_whatever_else_is_registered(custom: str) -> None:
    row = next(r for r in markdown_table().splitlines() if "KAFKA_PARTITION_ASSIGNMENT_STRATEGY" in r)
    assert ", ".join(BUILT_IN) in row
    assert custom not in row
    assert SPEC_BY_FIELD["assignors"].allowed().endswith("or your own (assignors.register)")


def test_built_in_names_are_the_registry_s() -> None:
    assert set(BUILT_IN) <= set(assignors.names())
    assert BUILT_IN == ("range", "roundrobin", "sticky", "cooperative-sticky")


def test_the_custom_assignor_example_runs_its_story_end_to_end() -> None:
    example = Path(__file__).resolve().parents[3] / "examples" / "custom_assignor.py"
    result = subprocess.run([sys.executable, str(example)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "settings accept it: partition.assignment.strategy=example-rendezvous,cooperative-sticky" in (
        result.stdout
    )
    assert "all to pod-3: True" in result.stdout

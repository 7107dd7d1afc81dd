"""The sync consumer's input checks, before anything connects: a clear typed error naming the culprit,
and no loop thread left behind (real-broker behaviour: tests/integration/test_sync_consumer.py)."""

from __future__ import annotations

import threading

import pytest
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

from staticconsumer.errors import ConfigurationError, SettingsError
from staticconsumer.sync import StaticConsumer, _kafka_python_options

LOCAL = {"bootstrap_servers": "localhost:1", "group_id": "g", "group_instance_id": "g-0"}


def test_kafka_pythons_assignor_classes_become_our_protocol_names() -> None:
    options = _kafka_python_options(
        {"partition_assignment_strategy": (RangePartitionAssignor, RoundRobinPartitionAssignor)}
    )
    assert options["partition_assignment_strategy"] == ("range", "roundrobin")
    assert _kafka_python_options({"partition_assignment_strategy": StickyPartitionAssignor}) == {
        "partition_assignment_strategy": ("sticky",)
    }


def test_a_foreign_assignor_class_is_left_for_the_settings_to_refuse_by_name() -> None:
    class Mine:
        name = "range"

    with pytest.raises(SettingsError, match="partition_assignment_strategy"):
        StaticConsumer("t", partition_assignment_strategy=(Mine,), **LOCAL)
    assert _portal_threads() == []


def test_an_unknown_keyword_is_a_settings_error_naming_it_and_leaves_no_thread() -> None:
    with pytest.raises(SettingsError, match="api_versionn"):
        StaticConsumer("t", api_versionn=(2, 8), **LOCAL)
    assert _portal_threads() == []


def test_a_listener_without_callbacks_is_refused_by_kind() -> None:
    with pytest.raises(TypeError, match="not int"):
        StaticConsumer("t", listener=3, **LOCAL)


@pytest.mark.parametrize("bad", [-1, "10"])
def test_consumer_timeout_ms_must_be_milliseconds(bad: object) -> None:
    with pytest.raises(ConfigurationError, match="consumer_timeout_ms"):
        StaticConsumer("t", consumer_timeout_ms=bad, **LOCAL)


def _portal_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name == "staticconsumer-sync"]


def test_from_env_names_the_variable_that_is_wrong_and_leaves_no_thread() -> None:
    environ = {
        "KAFKA_BOOTSTRAP_SERVERS": "localhost:1",
        "KAFKA_GROUP_ID": "g",
        "KAFKA_SESSION_TIMEOUT_MS": "soon",
    }
    with pytest.raises(SettingsError, match="KAFKA_SESSION_TIMEOUT_MS"):
        StaticConsumer.from_env("t", environ=environ)
    assert _portal_threads() == []

"""Several consumers in one process: each gets its own stable, valid instance id."""

from __future__ import annotations

import pytest

from staticconsumer.errors import InvalidGroupInstanceIdError
from staticconsumer.settings import Settings, instance_id_for


def test_worker_ids_append_the_index() -> None:
    assert instance_id_for("pod-0", 1) == "pod-0-w1"
    assert instance_id_for("pod-0", 0) == "pod-0-w0"
    assert instance_id_for("orders-12", 15) == "orders-12-w15"


def test_worker_ids_are_distinct_and_stable() -> None:
    first = [instance_id_for("orders-3", index) for index in range(32)]
    again = [instance_id_for("orders-3", index) for index in range(32)]
    assert first == again
    assert len(set(first)) == 32


def test_worker_ids_of_different_pods_never_collide() -> None:
    ids = {instance_id_for(f"orders-{pod}", worker) for pod in range(12) for worker in range(12)}
    assert len(ids) == 144


def test_a_negative_index_is_rejected() -> None:
    with pytest.raises(InvalidGroupInstanceIdError, match="must not be negative"):
        instance_id_for("pod-0", -1)


def test_a_base_too_long_for_the_suffix_is_rejected() -> None:
    assert instance_id_for("p" * 246, 9) == "p" * 246 + "-w9"
    with pytest.raises(InvalidGroupInstanceIdError, match="room for the '-w10' suffix"):
        instance_id_for("p" * 246, 10)


def test_an_invalid_base_is_rejected() -> None:
    with pytest.raises(InvalidGroupInstanceIdError, match="found '/'"):
        instance_id_for("pod/0", 1)


def test_for_worker_changes_only_the_instance_id(minimal_env: dict[str, str]) -> None:
    settings = Settings.from_env(minimal_env, group_instance_id="orders-0", client_id="billing")
    worker = settings.for_worker(2)
    assert worker.group_instance_id == "orders-0-w2"
    assert worker.client_id == "billing"
    assert worker.session_timeout_ms == settings.session_timeout_ms
    assert settings.group_instance_id == "orders-0"


def test_for_worker_derives_the_default_client_id_from_the_new_instance_id(
    minimal_env: dict[str, str],
) -> None:
    worker = Settings.from_env(minimal_env, group_instance_id="orders-0").for_worker(1)
    assert worker.effective_client_id == "consumer-orders-orders-0-w1"


def test_dynamic_members_need_no_distinct_ids(minimal_env: dict[str, str]) -> None:
    settings = Settings.from_env(minimal_env)
    assert settings.for_worker(3) is settings

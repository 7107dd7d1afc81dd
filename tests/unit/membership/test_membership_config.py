"""group.instance.id rules (JoinGroupRequestTest) and config sanity, all before any request."""

from __future__ import annotations

import pytest
from membership_harness import Harness, decode_assignment

from staticconsumer.errors import ConfigurationError, InvalidGroupInstanceIdError
from staticconsumer.membership import MembershipConfig, validate_group_instance_id


@pytest.mark.parametrize(
    "instance_id",
    ["a", "pod-0", "Valid_Id.1-2", "x" * 249, "...", "-", "_"],
)
def test_accepts_valid_group_instance_ids(instance_id: str) -> None:
    validate_group_instance_id(instance_id)
    assert MembershipConfig(group_id="g", group_instance_id=instance_id, decode_assignment=decode_assignment)


@pytest.mark.parametrize(
    ("instance_id", "reason_fragment"),
    [
        ("", "empty"),
        (".", "reserved"),
        ("..", "reserved"),
        ("x" * 250, "250 characters"),
        ("has space", "' '"),
        ("colon:", "':'"),
        ("equals=", "'='"),
        ("ünïcode", "allowed"),
        ("slash/", "'/'"),
    ],
)
def test_rejects_invalid_group_instance_ids(instance_id: str, reason_fragment: str) -> None:
    with pytest.raises(InvalidGroupInstanceIdError) as raised:
        validate_group_instance_id(instance_id)
    assert reason_fragment in str(raised.value)
    assert raised.value.instance_id == instance_id


def test_invalid_instance_id_fails_at_construction_before_any_action() -> None:
    with pytest.raises(InvalidGroupInstanceIdError):
        Harness(instance_id="bad id")


def test_invalid_instance_id_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError):
        MembershipConfig(group_id="g", group_instance_id="..", decode_assignment=decode_assignment)


@pytest.mark.parametrize(
    "overrides",
    [
        {"heartbeat_interval_ms": 10_000, "session_timeout_ms": 10_000},
        {"session_timeout_ms": 0},
        {"max_poll_interval_ms": -1},
        {"retry_backoff_ms": 500, "retry_backoff_max_ms": 100},
        {"group_id": ""},
    ],
)
def test_rejects_inconsistent_timing(overrides: dict[str, int]) -> None:
    settings: dict[str, object] = {"group_id": "g", "decode_assignment": decode_assignment}
    settings.update(overrides)
    with pytest.raises(ConfigurationError):
        MembershipConfig(**settings)  # type: ignore[arg-type]


def test_join_request_timeout_covers_the_rebalance_timeout() -> None:
    config = MembershipConfig(
        group_id="g",
        decode_assignment=decode_assignment,
        max_poll_interval_ms=300_000,
        request_timeout_ms=30_000,
    )
    assert config.join_request_timeout_ms == 305_000
    short = MembershipConfig(
        group_id="g",
        decode_assignment=decode_assignment,
        max_poll_interval_ms=1_000,
        request_timeout_ms=30_000,
    )
    assert short.join_request_timeout_ms == 30_000

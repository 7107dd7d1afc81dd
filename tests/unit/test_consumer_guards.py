"""StaticConsumer refuses what it cannot do properly, before any group request."""

from __future__ import annotations

from typing import Any

import pytest

from staticconsumer import _aiokafka
from staticconsumer.consumer import StaticConsumer
from staticconsumer.errors import ConfigurationError, StaticMembershipUnsupportedError
from staticconsumer.runtime.thread import check_static_membership_supported


@pytest.mark.parametrize(("api_key", "offered"), [(11, (0, 4)), (14, (0, 2)), (12, (0, 2)), (8, (2, 6))])
async def test_broker_too_old_for_instance_ids_is_refused_at_start(
    monkeypatch: pytest.MonkeyPatch, api_key: int, offered: tuple[int, int]
) -> None:
    modern = {11: (0, 9), 14: (0, 5), 12: (0, 4), 8: (2, 9)}

    async def versions(client: Any, node: int, *, coordination: bool = True) -> dict[int, tuple[int, int]]:
        return {**modern, api_key: offered}

    monkeypatch.setattr(_aiokafka, "any_node", lambda client: 1)
    monkeypatch.setattr(_aiokafka, "broker_versions", versions)
    with pytest.raises(StaticMembershipUnsupportedError, match=r"group\.instance\.id needs v\d\+"):
        await check_static_membership_supported(object())


async def test_the_probes_versions_are_checked_without_asking_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bootstrap probe's ApiVersions answer the check: no connection of the client's is needed."""

    async def versions(client: Any, node: int, *, coordination: bool = True) -> dict[int, tuple[int, int]]:
        raise AssertionError("asked the brokers again")

    monkeypatch.setattr(_aiokafka, "broker_versions", versions)
    await check_static_membership_supported(object(), {11: (0, 9), 14: (0, 5), 12: (0, 4), 8: (2, 9)})
    with pytest.raises(StaticMembershipUnsupportedError, match=r"JoinGroup up to v4"):
        await check_static_membership_supported(object(), {11: (0, 4), 14: (0, 5), 12: (0, 4), 8: (2, 9)})


def test_topics_and_pattern_together_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="not both"):
        StaticConsumer("t", pattern="x.*", bootstrap_servers="127.0.0.1:1", group_id="g")


def test_a_subclass_requires_a_group() -> None:
    """StaticConsumer itself takes a group_id left out as aiokafka's None (no group); a subclass of it is
    a group member by definition, so there a missing group_id is an error naming the keyword."""

    class Billing(StaticConsumer):
        pass

    with pytest.raises(ConfigurationError, match=r"group_id \(keyword argument\)=\(unset\): required"):
        Billing("t", bootstrap_servers="127.0.0.1:1")

"""A pattern subscription is matched against fresh metadata before each classic JoinGroup: a rebalance
started by a member that saw a new topic first gives this member that topic in the same generation."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from runtime_loops import loop_for

from staticconsumer import _aiokafka
from staticconsumer.membership import RebalanceProtocol, actions
from staticconsumer.membership.types import RequestToken
from staticconsumer.protocol import subscribed_topics
from staticconsumer.runtime import Subscription
from staticconsumer.runtime.loop import MembershipLoop


def pattern_loop() -> MembershipLoop:
    loop = loop_for(RebalanceProtocol.EAGER)
    loop._topics = Subscription((), "t-.*")
    loop._topics.refresh(["t-a", "other"])
    return loop


def join_of(loop: MembershipLoop) -> actions.SendJoinGroup:
    return actions.SendJoinGroup(
        token=RequestToken(1, -1, ""),
        member_id="",
        group_instance_id="pod-0",
        session_timeout_ms=45_000,
        rebalance_timeout_ms=300_000,
        protocol_type="consumer",
        protocols=loop.protocols(),
        reason="",
        request_timeout_ms=30_000,
    )


async def sent_join(loop: MembershipLoop, monkeypatch: pytest.MonkeyPatch, metadata: Any) -> set[str]:
    """Dispatch a JoinGroup; the topics its subscription carried when it went out."""
    sent: list[actions.SendJoinGroup] = []

    async def request(action: Any, spec: Any) -> None:
        sent.append(action)

    monkeypatch.setattr(_aiokafka, "topic_partitions", metadata)
    monkeypatch.setattr(loop, "_request", request)
    monkeypatch.setattr(loop, "_rejoining", lambda: None)
    posted: list[object] = []
    monkeypatch.setattr(loop, "post", posted.append)
    async with asyncio.TaskGroup() as group:
        loop._task_group = group
        loop._dispatch(join_of(loop))
    assert not posted, "the join carries the new match: no UpdateProtocols, so no second join"
    [join] = sent
    return set(subscribed_topics(join.protocols[0].metadata))


async def test_the_join_carries_topics_that_appeared_since_the_last_refresh(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loop = pattern_loop()

    async def metadata(client: Any, topics: Any, *, internal: bool = False) -> dict[str, list[Any]]:
        return {"t-a": [], "t-b": [], "other": []}

    assert await sent_join(loop, monkeypatch, metadata) == {"t-a", "t-b"}
    assert loop._topics.refresh(["t-a", "t-b", "other"]) is None, "the periodic watch finds no change"


async def test_a_failed_metadata_read_joins_with_the_last_match(monkeypatch: pytest.MonkeyPatch) -> None:
    loop = pattern_loop()

    async def metadata(client: Any, topics: Any, *, internal: bool = False) -> dict[str, list[Any]]:
        raise ConnectionError("broker went away")

    assert await sent_join(loop, monkeypatch, metadata) == {"t-a"}

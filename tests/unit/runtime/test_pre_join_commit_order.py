"""The pre-join commit and the JoinGroup go out back to back: the runtime writes the JoinGroup only after
every OffsetCommit the machine asked for before it, even when the commit's connection is slow to get
ready, because the coordinator handles one connection's requests in order and so applies the commit
before it reads the join."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from runtime_loops import loop_for

from staticconsumer.membership import (
    OffsetAndMetadata,
    RebalanceProtocol,
    RequestToken,
    TopicPartition,
    actions,
)
from staticconsumer.runtime import loop as loop_module

VERSIONS = {"OffsetCommit": 8, "JoinGroup": 9}


def commit(request_id: int) -> actions.SendOffsetCommit:
    return actions.SendOffsetCommit(
        token=RequestToken(request_id=request_id, generation=3, member_id="m"),
        commit_id=None,
        generation=3,
        member_id="m",
        group_instance_id="pod-0",
        offsets={TopicPartition("t", 0): OffsetAndMetadata(5)},
    )


def join(request_id: int) -> actions.SendJoinGroup:
    return actions.SendJoinGroup(
        token=RequestToken(request_id=request_id, generation=3, member_id="m"),
        member_id="m",
        group_instance_id="pod-0",
        session_timeout_ms=10_000,
        rebalance_timeout_ms=30_000,
        protocol_type="consumer",
        protocols=(),
        reason="r",
        request_timeout_ms=35_000,
    )


class Wire:
    """Records what is written, in order; the first connection check waits until ``ready`` is set."""

    def __init__(self) -> None:
        self.written: list[str] = []
        self.ready = asyncio.Event()
        self.checks = 0

    async def broker_versions(self, client: Any, node: int, *, coordination: bool = True) -> dict[int, Any]:
        self.checks += 1
        if self.checks == 1:
            await self.ready.wait()
        return {}

    async def send(self, client: Any, node: int, message: Any, **_: Any) -> Any:
        self.written.append(message.API_NAME)
        raise ConnectionError("no broker in this test")


@pytest.mark.parametrize("slow_commit", [False, True])
async def test_the_join_is_written_after_the_commit_the_machine_sent_before_it(
    monkeypatch: pytest.MonkeyPatch, slow_commit: bool
) -> None:
    wire = Wire()
    if not slow_commit:
        wire.ready.set()
    monkeypatch.setattr(loop_module._aiokafka, "broker_versions", wire.broker_versions)
    monkeypatch.setattr(loop_module._aiokafka, "send", wire.send)
    monkeypatch.setattr(
        loop_module._aiokafka, "negotiated_version", lambda versions, cls, cap=None: VERSIONS[cls.API_NAME]
    )
    loop = loop_for(RebalanceProtocol.EAGER)
    loop._coordinator = 1
    loop._rejoining = lambda: None  # type: ignore[method-assign]  # no metadata read-ahead here
    async with asyncio.TaskGroup() as group:
        loop._task_group = group
        loop._dispatch(commit(1))
        loop._dispatch(join(2))
        for _ in range(5):
            await asyncio.sleep(0)
        if slow_commit:
            assert wire.written == [], "the join waits while the commit's connection gets ready"
            wire.ready.set()
    assert wire.written == ["OffsetCommit", "JoinGroup"]
    assert loop._commits_unsent == []

"""The leader runs a built-in assignor on a small group on the membership loop itself: a worker thread's
hand-off each way cost more than the assignment (every member waits for the leader's SyncGroup, owning
nothing). A user's assignor, or a big group, still runs on a worker thread, so a slow one never holds up
the heartbeats of the process's other consumers."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from runtime_loops import loop_for

import assignors as assignor_lib
from staticconsumer._aiokafka import PartitionReplicas
from staticconsumer.membership import JoinGroupMember, RebalanceProtocol, actions, events
from staticconsumer.protocol import Subscription
from staticconsumer.runtime import loop as loop_module


def members(n: int) -> list[assignor_lib.Member]:
    return [
        assignor_lib.Member(
            member_id=f"m{i}",
            topics=frozenset({"t"}),
            group_instance_id=None,
            owned_partitions=(),
            generation=-1,
            rack=None,
            user_data=None,
        )
        for i in range(n)
    ]


def topics(partitions: int) -> dict[str, assignor_lib.TopicInfo]:
    return {"t": assignor_lib.TopicInfo.with_racks([[] for _ in range(partitions)])}


class Mine(assignor_lib.CooperativeStickyAssignor):
    """A user's assignor (here a subclass of a built-in one): its cost is unknown."""


def test_only_built_in_assignors_on_small_groups_run_inline() -> None:
    assert loop_module._quick(assignor_lib.RangeAssignor(), members(12), topics(48))
    assert loop_module._quick(assignor_lib.CooperativeStickyAssignor(), members(100), topics(200))
    assert not loop_module._quick(assignor_lib.RangeAssignor(), members(100), topics(201))
    assert not loop_module._quick(Mine(), members(2), topics(2))


@pytest.mark.parametrize("user_assignor", [False, True])
async def test_the_leader_assigns_on_the_membership_loop_unless_the_assignor_is_the_users(
    monkeypatch: pytest.MonkeyPatch, user_assignor: bool
) -> None:
    threads: list[str] = []
    compute = loop_module.compute_assignment

    def recorded(*args: Any) -> dict[str, bytes]:
        threads.append(threading.current_thread().name)
        return compute(*args)

    monkeypatch.setattr(loop_module, "compute_assignment", recorded)
    loop = loop_for(RebalanceProtocol.COOPERATIVE)
    if user_assignor:
        loop._assignors["cooperative-sticky"] = Mine()

    async def read(names: frozenset[str]) -> dict[str, list[PartitionReplicas]]:
        return {"t": [PartitionReplicas(p, frozenset()) for p in range(8)]}

    loop._metadata._read = read
    posted: list[events.Event] = []
    loop.post = posted.append  # type: ignore[method-assign]
    joined = tuple(JoinGroupMember(f"m{i}", None, Subscription(topics=["t"]).encode()) for i in range(3))
    here = threading.current_thread().name
    async with asyncio.TaskGroup() as group:
        loop._task_group = group
        await loop._assign(
            actions.RunAssignor(
                generation=4,
                protocol_name="cooperative-sticky",
                members=joined,
                group_topics=frozenset({"t"}),
            )
        )
    computed = posted[-1]
    assert isinstance(computed, events.AssignmentComputed)
    assert sorted(computed.assignments) == ["m0", "m1", "m2"]
    assert len(threads) == 1
    if user_assignor:
        assert threads[0] != here, "a user's assignor runs on a worker thread"
    else:
        assert threads[0] == here, "a built-in one on a small group runs on the membership loop"

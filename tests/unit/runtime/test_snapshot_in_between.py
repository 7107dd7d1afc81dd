"""A snapshot in between two assignments (JoinGroup answered, SyncGroup not yet) does not wake the
application's loop on its own: it goes with the next call or snapshot, in order (issue 26: in an eager
rebalance that wake-up came as every member was answered its JoinGroup at once, owning nothing)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

from staticconsumer.membership import MemberState, ReleaseReason, TopicPartition
from staticconsumer.runtime import MemberSnapshot
from staticconsumer.runtime.thread import _OnApplicationLoop

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


class Owner:
    """Notes what reaches the application's loop, in order."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []

    def membership_changed(self, snapshot: MemberSnapshot) -> None:
        self.seen.append(("snapshot", (snapshot.state, snapshot.generation)))

    def stop_fetching(self, partitions: Any) -> None:
        self.seen.append(("stop_fetching", partitions))

    async def revoke(self, partitions: Any, reason: Any, collect: bool) -> dict[Any, Any]:
        self.seen.append(("revoke", partitions))
        return {}

    async def lose(self, partitions: Any, reason: Any) -> None:
        self.seen.append(("lose", partitions))

    async def assign(self, partitions: Any, owned: Any, generation: int, committed: Any) -> None:
        self.seen.append(("assign", generation))


def snapshot(
    state: MemberState,
    generation: int,
    assignment: frozenset[TopicPartition] = frozenset(),
    fatal_error: Exception | None = None,
    subscription: frozenset[str] = frozenset({"t"}),
) -> MemberSnapshot:
    return MemberSnapshot(
        state=state,
        member_id=f"m-{generation}",
        generation=generation,
        assignment=assignment,
        fatal_error=fatal_error,
        subscription=subscription,
    )


async def turns() -> None:
    for _ in range(3):
        await asyncio.sleep(0)


async def test_the_joingroup_answer_goes_with_the_assign_not_on_its_own() -> None:
    owner = Owner()
    boundary = _OnApplicationLoop(owner, asyncio.get_running_loop())
    boundary.membership_changed(snapshot(MemberState.STABLE, 1, frozenset({T0})))
    boundary.membership_changed(snapshot(MemberState.PREPARING_REBALANCE, 1))  # eager: nothing owned
    revoking: Awaitable[Any] = boundary.revoke(frozenset({T0}), ReleaseReason.REBALANCE, True)
    await revoking
    await turns()
    before = list(owner.seen)
    assert before == [
        ("snapshot", (MemberState.STABLE, 1)),
        ("snapshot", (MemberState.PREPARING_REBALANCE, 1)),
        ("revoke", frozenset({T0})),
    ], "the assignment changed: sent at once"

    boundary.membership_changed(snapshot(MemberState.COMPLETING_REBALANCE, 2))  # JoinGroup answered
    await turns()
    assert owner.seen == before, "kept back: the application's loop is not woken for it"

    boundary.membership_changed(snapshot(MemberState.STABLE, 2, frozenset({T1})))
    await boundary.assign(frozenset({T1}), frozenset({T1}), 2, {})
    await turns()
    assert owner.seen[len(before) :] == [
        ("snapshot", (MemberState.STABLE, 2)),
        ("assign", 2),
    ], "a newer snapshot replaces the one kept, which the application would have read just before it"


async def test_a_kept_snapshot_goes_before_the_next_call_in_order() -> None:
    owner = Owner()
    boundary = _OnApplicationLoop(owner, asyncio.get_running_loop())
    boundary.membership_changed(snapshot(MemberState.STABLE, 3))
    boundary.membership_changed(snapshot(MemberState.COMPLETING_REBALANCE, 4))
    await turns()
    assert owner.seen == [("snapshot", (MemberState.STABLE, 3))]
    boundary.stop_fetching(None)
    await boundary.lose(frozenset({T0}), ReleaseReason.MEMBERSHIP_LOST)
    await turns()
    assert owner.seen == [
        ("snapshot", (MemberState.STABLE, 3)),
        ("snapshot", (MemberState.COMPLETING_REBALANCE, 4)),
        ("stop_fetching", None),
        ("lose", frozenset({T0})),
    ]


async def test_what_the_application_waits_for_is_never_kept_back() -> None:
    owner = Owner()
    boundary = _OnApplicationLoop(owner, asyncio.get_running_loop())
    error = RuntimeError("fenced")
    boundary.membership_changed(snapshot(MemberState.COMPLETING_REBALANCE, 1, fatal_error=error))
    boundary.membership_changed(snapshot(MemberState.COMPLETING_REBALANCE, 2, frozenset({T0})))
    boundary.membership_changed(
        snapshot(MemberState.COMPLETING_REBALANCE, 3, frozenset({T0}), subscription=frozenset({"u"}))
    )
    boundary.membership_changed(
        snapshot(MemberState.UNJOINED, 4, frozenset({T0}), subscription=frozenset({"u"}))
    )
    await turns()
    assert owner.seen == [
        ("snapshot", (MemberState.COMPLETING_REBALANCE, 1)),  # an error
        ("snapshot", (MemberState.COMPLETING_REBALANCE, 2)),  # the assignment changed
        ("snapshot", (MemberState.COMPLETING_REBALANCE, 3)),  # the subscription changed
        ("snapshot", (MemberState.UNJOINED, 4)),  # not in between two assignments
    ]

"""An eager join that owns nothing (every start's first join) still tells the listener of the empty
revoke, but the JoinGroup does not wait for the application's loop to run it; the next partition call
(the assignment) does, so the listener hears revoked before assigned, as always."""

from __future__ import annotations

import asyncio
from typing import Any

from runtime_loops import loop_for

from staticconsumer.membership import RebalanceProtocol, ReleaseReason, TopicPartition, actions, events
from staticconsumer.runtime.loop import MembershipLoop

T0 = TopicPartition("t", 0)


class SlowOwner:
    """The application's side, with a revoke callback that runs only once ``release`` is set."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.calls: list[tuple[str, frozenset[TopicPartition]]] = []

    async def revoke(
        self, partitions: frozenset[TopicPartition], reason: Any, collect: bool
    ) -> dict[Any, Any]:
        await self.release.wait()
        self.calls.append(("revoked", partitions))
        return {}

    async def assign(
        self, partitions: frozenset[TopicPartition], owned: Any, generation: int, committed: Any
    ) -> None:
        self.calls.append(("assigned", partitions))

    def membership_changed(self, snapshot: Any) -> None:
        pass


def _loop(owner: SlowOwner) -> MembershipLoop:
    loop = loop_for(RebalanceProtocol.EAGER)
    loop._owner = owner  # type: ignore[assignment]
    return loop


async def test_the_join_goes_on_while_the_listener_hears_of_an_empty_revoke() -> None:
    owner = SlowOwner()
    loop = _loop(owner)
    async with asyncio.TaskGroup() as group:
        loop._task_group = group
        loop._dispatch(
            actions.PartitionsRevoked(callback_id=1, partitions=frozenset(), reason=ReleaseReason.REBALANCE)
        )
        finished = await asyncio.wait_for(loop._inbox.get(), 1)
        assert isinstance(finished, events.CallbackFinished)
        assert finished.callback_id == 1
        assert owner.calls == [], "the callback has not run yet: the join did not wait for it"
        assigning = asyncio.ensure_future(loop._told())
        await asyncio.sleep(0.01)
        assert not assigning.done(), "the next partition call waits for the listener"
        owner.release.set()
        await asyncio.wait_for(assigning, 1)
        assert owner.calls == [("revoked", frozenset())]
        loop._task_group = None


async def test_a_revoke_of_owned_partitions_still_holds_the_join_until_it_ran() -> None:
    owner = SlowOwner()
    loop = _loop(owner)
    async with asyncio.TaskGroup() as group:
        loop._task_group = group
        revoked = frozenset({T0})
        loop._dispatch(
            actions.PartitionsRevoked(callback_id=2, partitions=revoked, reason=ReleaseReason.REBALANCE)
        )
        get = asyncio.ensure_future(loop._inbox.get())
        await asyncio.sleep(0.01)
        assert not get.done(), "no CallbackFinished before the callback ran"
        owner.release.set()
        finished = await asyncio.wait_for(get, 1)
        assert isinstance(finished, events.CallbackFinished)
        assert owner.calls == [("revoked", revoked)]
        loop._task_group = None

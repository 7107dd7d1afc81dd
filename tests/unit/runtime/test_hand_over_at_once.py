"""A rebalance's partition calls reach the application in the turn of the membership loop that decided
them, after the snapshot, so the application's thread is woken once for them all (issue 26: the revoke's
round trip is on the path of the member's JoinGroup, the assign's on the path of its first fetch)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Mapping
from types import SimpleNamespace
from typing import Any

from runtime_loops import loop_for

from staticconsumer.membership import (
    MemberState,
    RebalanceProtocol,
    ReleaseReason,
    TopicPartition,
    actions,
    events,
)
from staticconsumer.runtime.loop import MembershipLoop
from staticconsumer.runtime.thread import _OnApplicationLoop

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


class RecordingOwner:
    """Notes each call as it is made (a plain function returning an awaitable, as the thread's side is)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.release = asyncio.Event()

    def revoke(self, partitions: frozenset[TopicPartition], reason: Any, collect: bool) -> Awaitable[Any]:
        self.calls.append(("revoke", partitions))
        return self._after_release({T0: 5})

    def lose(self, partitions: frozenset[TopicPartition], reason: Any) -> Awaitable[None]:
        self.calls.append(("lose", partitions))
        return self._after_release(None)

    def assign(
        self, partitions: frozenset[TopicPartition], owned: Any, generation: int, committed: Any
    ) -> Awaitable[None]:
        self.calls.append(("assign", dict(committed)))
        return self._after_release(None)

    async def _after_release(self, value: Any) -> Any:
        await self.release.wait()
        return value

    def membership_changed(self, snapshot: Any) -> None:
        self.calls.append(("snapshot", snapshot.state))


def _loop(owner: RecordingOwner) -> MembershipLoop:
    loop = loop_for(RebalanceProtocol.EAGER)
    loop._owner = owner  # type: ignore[assignment]
    return loop


def _kinds(owner: RecordingOwner) -> list[str]:
    return [kind for kind, _ in owner.calls]


async def test_a_revoke_is_handed_over_in_the_turn_that_decided_it_after_the_snapshot() -> None:
    owner = RecordingOwner()
    loop = _loop(owner)
    async with asyncio.TaskGroup() as group:
        loop._task_group = group
        loop._dispatch(
            actions.PartitionsRevoked(
                callback_id=1, partitions=frozenset({T0}), reason=ReleaseReason.REBALANCE
            )
        )
        assert _kinds(owner) == ["snapshot", "revoke"], "made before the loop turned, the snapshot first"
        get = asyncio.ensure_future(loop._inbox.get())
        await asyncio.sleep(0.01)
        assert not get.done(), "the JoinGroup still waits for the callback to have run"
        owner.release.set()
        finished = await asyncio.wait_for(get, 1)
        assert isinstance(finished, events.CallbackFinished)
        assert (finished.callback_id, dict(finished.offsets_to_commit)) == (1, {T0: 5})
        loop._task_group = None


async def test_a_call_waits_for_an_empty_revoke_still_being_told() -> None:
    owner = RecordingOwner()
    loop = _loop(owner)
    telling: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    loop._telling = telling
    async with asyncio.TaskGroup() as group:
        loop._task_group = group
        loop._dispatch(
            actions.PartitionsLost(callback_id=2, partitions=frozenset({T0}), reason=ReleaseReason.STOP)
        )
        await asyncio.sleep(0.01)
        assert "lose" not in _kinds(owner), "the listener hears of the empty revoke first"
        telling.set_result(None)
        owner.release.set()
        finished = await asyncio.wait_for(loop._inbox.get(), 1)
        assert isinstance(finished, events.CallbackFinished)
        assert _kinds(owner)[-1] == "lose"
        loop._task_group = None


async def test_an_assign_is_handed_over_at_once_when_the_read_ahead_answered_for_it() -> None:
    owner = RecordingOwner()
    owner.release.set()
    loop = _loop(owner)
    answer: asyncio.Future[Mapping[TopicPartition, int] | None] = asyncio.get_running_loop().create_future()
    answer.set_result({T0: 7, T1: -1})
    loop._prefetch = (3, answer)
    async with asyncio.TaskGroup() as group:
        loop._task_group = group
        loop._dispatch(
            actions.PartitionsAssigned(
                callback_id=4, partitions=frozenset({T0, T1}), generation=3, owned=frozenset({T0, T1})
            )
        )
        assert owner.calls[-1] == ("assign", {T0: 7, T1: -1}), "made before the loop turned"
        assert loop._prefetch is None, "the read ahead is used once"
        finished = await asyncio.wait_for(loop._inbox.get(), 1)
        assert isinstance(finished, events.CallbackFinished)
        assert finished.callback_id == 4
        loop._task_group = None


async def test_an_assign_waits_for_a_read_ahead_still_out_and_uses_its_answer() -> None:
    owner = RecordingOwner()
    owner.release.set()
    loop = _loop(owner)
    answer: asyncio.Future[Mapping[TopicPartition, int] | None] = asyncio.get_running_loop().create_future()
    loop._prefetch = (3, answer)
    async with asyncio.TaskGroup() as group:
        loop._task_group = group
        loop._dispatch(
            actions.PartitionsAssigned(
                callback_id=5, partitions=frozenset({T0}), generation=3, owned=frozenset({T0})
            )
        )
        await asyncio.sleep(0.01)
        assert "assign" not in _kinds(owner), "no committed offset known yet: the assign waits"
        answer.set_result({T0: 9})
        finished = await asyncio.wait_for(loop._inbox.get(), 1)
        assert isinstance(finished, events.CallbackFinished)
        assert owner.calls[-1] == ("assign", {T0: 9})
        loop._task_group = None


def test_the_application_loop_gets_a_call_as_it_is_made_not_when_it_is_awaited() -> None:
    app = asyncio.new_event_loop()
    running = threading.Thread(target=app.run_forever, daemon=True)
    running.start()
    ran = threading.Event()

    class AppOwner:
        async def revoke(self, partitions: Any, reason: Any, collect: bool) -> dict[Any, Any]:
            assert asyncio.get_running_loop() is app
            ran.set()
            return {T0: 1}

    async def membership_side() -> dict[Any, Any]:
        revoking = _OnApplicationLoop(AppOwner(), app).revoke(  # type: ignore[arg-type]
            frozenset({T0}), ReleaseReason.REBALANCE, True
        )
        # not awaited yet (the old coroutine function would not have started): it runs on the other loop
        assert await asyncio.to_thread(ran.wait, 5), "the call ran on the application's loop"
        return await revoking

    try:
        assert asyncio.run(membership_side()) == {T0: 1}
    finally:
        app.call_soon_threadsafe(app.stop)
        running.join(5)
        app.close()


def _stable(generation: int) -> Any:
    """What ``_publish`` reads of a machine, stable in ``generation``."""
    return SimpleNamespace(
        state=MemberState.STABLE,
        member_id="m-1",
        generation=generation,
        is_leader=False,
        leadership_guessed=False,
        protocol_name="range",
        rebalance_protocol=RebalanceProtocol.EAGER,
        assignment=frozenset({T0}),
        fatal_error=None,
    )


async def test_the_snapshot_of_an_assign_waiting_for_its_offsets_goes_with_it_not_before() -> None:
    owner = RecordingOwner()
    owner.release.set()
    loop = _loop(owner)
    loop.machine = _stable(3)
    answer: asyncio.Future[Mapping[TopicPartition, int] | None] = asyncio.get_running_loop().create_future()
    loop._prefetch = (3, answer)
    async with asyncio.TaskGroup() as group:
        loop._task_group = group
        loop._dispatch(
            actions.PartitionsAssigned(
                callback_id=6, partitions=frozenset({T0}), generation=3, owned=frozenset({T0})
            )
        )
        loop._publish()  # the end of the machine's step
        await asyncio.sleep(0.01)
        assert owner.calls == [], "one wake-up of the application later, for both"
        answer.set_result({T0: 9})
        finished = await asyncio.wait_for(loop._inbox.get(), 1)
        assert isinstance(finished, events.CallbackFinished)
        assert _kinds(owner) == ["snapshot", "assign"]
        assert loop._held_for is None
        loop._task_group = None


async def test_a_held_snapshot_still_goes_at_once_when_the_member_moved_on() -> None:
    owner = RecordingOwner()
    loop = _loop(owner)
    loop.machine = _stable(3)
    answer: asyncio.Future[Mapping[TopicPartition, int] | None] = asyncio.get_running_loop().create_future()
    loop._prefetch = (3, answer)
    async with asyncio.TaskGroup() as group:
        loop._task_group = group
        loop._dispatch(
            actions.PartitionsAssigned(
                callback_id=7, partitions=frozenset({T0}), generation=3, owned=frozenset({T0})
            )
        )
        loop._publish()
        assert owner.calls == []
        loop.machine = _stable(4)  # a new generation (or a rejoin, or an error) is never held back
        loop._publish()
        assert _kinds(owner) == ["snapshot"]
        await asyncio.sleep(0)
        for child in list(loop._children):  # the loop ends while the assign waits for its offsets
            child.cancel()
        await asyncio.sleep(0)
        assert loop._held_for is None, "snapshots go again"
        loop._task_group = None

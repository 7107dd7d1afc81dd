"""Polls reach the machine without waking the membership thread (issue 27: idle CPU): the loop reads the
application's last poll time at each step and tells the machine of a newer one first, once."""

from __future__ import annotations

from typing import Any

from runtime_loops import loop_for

from staticconsumer.membership import RebalanceProtocol, events
from staticconsumer.runtime.loop import MembershipLoop


def _quiet(loop: MembershipLoop) -> MembershipLoop:
    loop._publish = lambda: None  # type: ignore[method-assign]  # no owner to tell snapshots to
    return loop


class Recorder:
    def __init__(self) -> None:
        self.seen: list[events.Event] = []

    def observe(self, event: events.Event, produced: Any, machine: Any) -> None:
        self.seen.append(event)


async def test_a_poll_since_the_last_step_is_told_before_the_next_step_and_only_once() -> None:
    polled = [float("-inf")]
    recorder = Recorder()
    loop = _quiet(loop_for(RebalanceProtocol.EAGER, polled=lambda: polled[0], observers=[recorder]))
    await loop._step(events.Tick(now=10.0))
    assert recorder.seen == [events.Tick(now=10.0)], "no poll yet: nothing to tell"
    polled[0] = 11.5
    await loop._step(events.Tick(now=12.0))
    await loop._step(events.Tick(now=13.0))
    assert recorder.seen[1:] == [events.PollCalled(now=11.5), events.Tick(now=12.0), events.Tick(now=13.0)]


async def test_a_posted_poll_is_not_told_again_and_time_never_runs_backwards() -> None:
    polled = [5.0]
    recorder = Recorder()
    loop = _quiet(loop_for(RebalanceProtocol.EAGER, polled=lambda: polled[0], observers=[recorder]))
    await loop._step(events.PollCalled(now=5.0))  # after a pause the application posts it at once
    await loop._step(events.Tick(now=6.0))
    assert recorder.seen == [events.PollCalled(now=5.0), events.Tick(now=6.0)]
    polled[0] = 5.5  # noted just before the machine's step at 6.0 was taken (a race across threads)
    await loop._step(events.Tick(now=7.0))
    assert recorder.seen[2] == events.PollCalled(now=6.0), "told at the last step's time, not before it"

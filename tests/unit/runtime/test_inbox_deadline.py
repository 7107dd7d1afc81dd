"""The membership loop's inbox waits for the next event or the machine's deadline on one future, with a
timer armed once per deadline (issue 27: idle CPU): an event before the deadline is handed over, the
deadline alone gives None, and an unchanged deadline keeps its timer across the loop's turns."""

from __future__ import annotations

import asyncio
import time

from staticconsumer.membership import events
from staticconsumer.runtime.loop import _Inbox


def _event() -> events.Event:
    return events.Tick(now=time.monotonic())


async def test_an_event_before_the_deadline_is_handed_over() -> None:
    inbox = _Inbox()
    now = time.monotonic()
    get = asyncio.ensure_future(inbox.get(now + 5, now))
    await asyncio.sleep(0)
    sent = _event()
    inbox.put(sent)
    assert await asyncio.wait_for(get, 1) is sent
    inbox.close()


async def test_the_deadline_without_an_event_gives_none() -> None:
    inbox = _Inbox()
    now = time.monotonic()
    began = time.monotonic()
    assert await asyncio.wait_for(inbox.get(now + 0.05, now), 1) is None
    assert time.monotonic() - began >= 0.04, "not before the deadline"
    assert await inbox.get(now, now) is None, "a deadline already passed gives None at once"


async def test_queued_events_come_first_in_order_even_past_the_deadline() -> None:
    inbox = _Inbox()
    first, second = _event(), _event()
    inbox.put(first)
    inbox.put(second)
    now = time.monotonic()
    assert await inbox.get(now - 1, now) is first
    assert await inbox.get(now - 1, now) is second
    assert await inbox.get(now - 1, now) is None


async def test_an_unchanged_deadline_keeps_its_timer_and_a_new_one_replaces_it() -> None:
    inbox = _Inbox()
    now = time.monotonic()
    deadline = now + 30
    get = asyncio.ensure_future(inbox.get(deadline, now))
    await asyncio.sleep(0)
    timer = inbox._timer
    assert timer is not None
    inbox.put(_event())
    await get
    get = asyncio.ensure_future(inbox.get(deadline, time.monotonic()))
    await asyncio.sleep(0)
    assert inbox._timer is timer, "the same deadline: the same timer, not one more per turn"
    inbox.put(_event())
    await get
    get = asyncio.ensure_future(inbox.get(deadline + 1, time.monotonic()))
    await asyncio.sleep(0)
    assert inbox._timer is not timer, "a new deadline: a new timer"
    assert timer.cancelled(), "the old deadline's timer is cancelled"
    inbox.put(_event())
    await get
    get = asyncio.ensure_future(inbox.get(None, time.monotonic()))
    await asyncio.sleep(0)
    assert inbox._timer is None, "no deadline: no timer"
    inbox.put(_event())
    await get
    inbox.close()

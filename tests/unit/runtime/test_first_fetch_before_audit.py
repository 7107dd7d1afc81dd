"""A restarting member's first fetch goes out before the leader duties' first round (the audit's
DescribeGroups and Metadata): that round waits for the first assignment to reach the application and for
the application's poll begun after it to return, or for a short grace when the application polls no more."""

from __future__ import annotations

import asyncio

import pytest
from runtime_loops import loop_for

from staticconsumer.membership import RebalanceProtocol
from staticconsumer.runtime import loop as loop_module
from staticconsumer.runtime.duties import LeaderDuties


class Application:
    """When the application last began a poll, as the membership thread reads it."""

    def __init__(self) -> None:
        self.polled = float("-inf")

    def poll(self) -> None:
        self.polled = loop_module.MembershipLoop.now()


async def settle() -> None:
    await asyncio.sleep(5 * loop_module.FIRST_FETCH_CHECK_SECONDS)


async def test_the_first_round_waits_for_the_hand_over_and_the_poll_after_it() -> None:
    app = Application()
    loop = loop_for(RebalanceProtocol.EAGER, polled=lambda: app.polled)
    app.poll()  # the application polls before it owns anything: not the first fetch
    waiting = asyncio.ensure_future(loop._first_fetched())
    await settle()
    assert not waiting.done()
    loop._hand_over_done()
    await settle()
    assert not waiting.done()
    app.poll()  # waits for the first fetch
    await settle()
    assert not waiting.done()
    app.poll()  # the first fetch's records were taken
    await asyncio.wait_for(waiting, 1)


async def test_an_application_that_polls_no_more_delays_the_round_by_the_grace_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(loop_module, "FIRST_FETCH_GRACE_SECONDS", 0.2)
    app = Application()
    loop = loop_for(RebalanceProtocol.EAGER, polled=lambda: app.polled)
    loop._hand_over_done()
    began = loop.now()
    await asyncio.wait_for(loop._first_fetched(), 2)
    assert loop.now() - began >= 0.2


async def test_the_audit_asks_nothing_before_the_first_fetch_and_later_rounds_do_not_wait() -> None:
    gate = asyncio.Event()
    waited: list[int] = []
    described: list[int] = []

    async def first_fetched() -> None:
        waited.append(1)
        await gate.wait()

    async def describe() -> None:
        described.append(1)

    async def counts(topics: frozenset[str]) -> dict[str, int]:
        return {}

    duties = LeaderDuties(
        own_topics=lambda: frozenset({"t"}),
        refresh_interval=60,
        partition_counts=counts,
        describe=describe,
        rejoin=lambda reason: None,
        first_fetched=first_fetched,
    )
    duties.assigned(1, leading=False)
    step = asyncio.ensure_future(duties.step())
    await asyncio.sleep(0.05)
    assert described == []
    gate.set()
    await asyncio.wait_for(step, 1)
    assert described == [1]
    duties.assigned(2, leading=False)
    await asyncio.wait_for(duties.step(), 1)  # no second wait
    assert described == [1, 1]
    assert waited == [1]

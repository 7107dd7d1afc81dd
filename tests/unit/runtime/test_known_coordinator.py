"""The coordinator the start-up access check found answers the machine's first FindCoordinator, once and
only while fresh, so the first join does not pay a second round trip; any later lookup asks the brokers."""

from __future__ import annotations

from typing import Any

from runtime_loops import loop_for

from staticconsumer.connection.access import CoordinatorAddress
from staticconsumer.errors import ErrorCode
from staticconsumer.membership import (
    RebalanceProtocol,
    RequestToken,
    actions,
    events,
)
from staticconsumer.runtime.loop import KNOWN_COORDINATOR_SECONDS, MembershipLoop
from staticconsumer.runtime.requests import REQUESTS

FOUND = CoordinatorAddress(7, "broker-7.kafka", 9093)


class NoClient:
    """Any request that reaches the network fails here: the test sees it as a RequestFailed event."""

    def __getattr__(self, name: str) -> Any:
        raise ConnectionError("no broker in this test")


def loop_knowing(coordinator: CoordinatorAddress | None) -> MembershipLoop:
    return loop_for(RebalanceProtocol.EAGER, client=NoClient(), known_coordinator=coordinator)


async def find(loop: MembershipLoop, request_id: int) -> events.Event:
    action = actions.FindCoordinator(token=RequestToken(request_id=request_id, generation=-1, member_id=""))
    await loop._request(action, REQUESTS[actions.FindCoordinator])
    return await loop._inbox.get()


async def test_the_first_lookup_is_answered_from_the_access_check_then_the_brokers_are_asked() -> None:
    loop = loop_knowing(FOUND)
    answer = await find(loop, 1)
    assert answer == events.FindCoordinatorResponse(
        now=answer.now,
        token=RequestToken(request_id=1, generation=-1, member_id=""),
        error_code=ErrorCode.NONE,
        node_id=7,
        host="broker-7.kafka",
        port=9093,
    )
    assert loop._coordinator == 7
    again = await find(loop, 2)
    assert isinstance(again, events.RequestFailed), "only the first lookup may be answered without asking"


async def test_a_coordinator_found_too_long_ago_is_looked_up_again() -> None:
    loop = loop_knowing(FOUND)
    loop._known_until = loop.now() - KNOWN_COORDINATOR_SECONDS  # the first subscribe() came much later
    assert isinstance(await find(loop, 1), events.RequestFailed)
    assert loop._coordinator is None


async def test_without_an_access_check_answer_the_brokers_are_asked() -> None:
    assert isinstance(await find(loop_knowing(None), 1), events.RequestFailed)

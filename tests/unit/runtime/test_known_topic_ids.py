"""KIP-848: the topic ids the bootstrap probe's answer named resolve the assignment's ids without a
Metadata request (issue 27: at N=300 that request and its connection were ~10 ms of a restart); an id
the probe did not name is asked of the brokers, as before."""

from __future__ import annotations

import uuid
from typing import Any

from runtime_loops import loop_for

from staticconsumer.membership import RebalanceProtocol, RequestToken, actions, events
from staticconsumer.runtime.loop import MembershipLoop
from staticconsumer.runtime.requests import REQUESTS

ORDERS, PAYMENTS, OTHER = uuid.UUID(int=1), uuid.UUID(int=2), uuid.UUID(int=3)


class NoClient:
    """Any request that reaches the network fails here: the test sees it as a RequestFailed event."""

    def __getattr__(self, name: str) -> Any:
        raise ConnectionError("no broker in this test")


async def resolve(loop: MembershipLoop, *ids: uuid.UUID) -> events.Event:
    action = actions.ResolveTopicIds(
        token=RequestToken(request_id=1, generation=-1, member_id=""), topic_ids=frozenset(ids)
    )
    await loop._request(action, REQUESTS[actions.ResolveTopicIds])
    return await loop._inbox.get()


def loop_knowing(ids: dict[uuid.UUID, str] | None) -> MembershipLoop:
    return loop_for(RebalanceProtocol.COOPERATIVE, client=NoClient(), known_topic_ids=ids)


async def test_ids_the_probe_named_are_resolved_without_asking_every_time() -> None:
    loop = loop_knowing({ORDERS: "orders", PAYMENTS: "payments"})
    for _ in range(2):  # an id never names another topic: still good later
        answer = await resolve(loop, ORDERS)
        assert isinstance(answer, events.TopicIdsResolved)
        assert answer.names == {ORDERS: "orders"}
        assert answer.token.request_id == 1


async def test_an_id_the_probe_did_not_name_is_asked_of_the_brokers() -> None:
    assert isinstance(await resolve(loop_knowing({ORDERS: "orders"}), ORDERS, OTHER), events.RequestFailed)
    assert isinstance(await resolve(loop_knowing(None), ORDERS), events.RequestFailed)

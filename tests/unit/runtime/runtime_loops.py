"""A membership loop without a broker, for tests of the driver's own decisions."""

from __future__ import annotations

from typing import Any

import assignors as assignor_lib
from staticconsumer.connection.access import CoordinatorAddress
from staticconsumer.membership import MembershipConfig, RebalanceProtocol, new_machine
from staticconsumer.protocol import subscribed_topics
from staticconsumer.runtime import Subscription as Topics
from staticconsumer.runtime.loop import MembershipLoop, decode_assignment


class NoOwner:
    """The loop under test never dispatches ownership calls here."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"unexpected owner call {name}")


def loop_for(
    protocol: RebalanceProtocol,
    *,
    client: Any = None,
    known_coordinator: CoordinatorAddress | None = None,
    **options: Any,
) -> MembershipLoop:
    """Static member ``pod-0`` of group ``g`` subscribed to ``t``, with the cooperative-sticky assignor."""
    config = MembershipConfig(
        group_id="g",
        group_instance_id="pod-0",
        decode_assignment=decode_assignment,
        decode_subscription=subscribed_topics,
    )
    return MembershipLoop(
        machine=new_machine(config, protocol),
        client=client,
        owner=NoOwner(),  # type: ignore[arg-type]
        assignors=[assignor_lib.CooperativeStickyAssignor()],
        topics=Topics(("t",), None),
        client_rack=None,
        auto_commit_on_revoke=True,
        known_coordinator=known_coordinator,
        **options,
    )

"""The runtime around a cooperative machine: the subscription each JoinGroup carries (owned partitions and
generation as the member joins, KAFKA-12984), and the leader's audit tolerating partitions in transfer."""

from __future__ import annotations

from typing import Any

from runtime_loops import loop_for

import assignors as assignor_lib
from staticconsumer.errors import ErrorCode
from staticconsumer.leader import DescribedMember, GroupView
from staticconsumer.membership import (
    RebalanceProtocol,
    TopicPartition,
    actions,
    events,
)
from staticconsumer.protocol import Assignment, Subscription, TopicPartitions
from staticconsumer.runtime.duties import LeaderDuties
from staticconsumer.runtime.loop import MembershipLoop

T0, T1, T2 = (TopicPartition("t", p) for p in range(3))


def step(loop: MembershipLoop, cls: type[events.Event], **fields: Any) -> list[actions.Action]:
    return loop.machine.handle(cls(now=100.0, **fields))


def first(out: list[actions.Action], cls: type[Any]) -> Any:
    return next(a for a in out if isinstance(a, cls))


def encoded(*partitions: TopicPartition) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return Assignment(
        assigned_partitions=[TopicPartitions(topic=t, partitions=p) for t, p in by_topic.items()]
    ).encode()


def become_stable(
    loop: MembershipLoop, generation: int, *partitions: TopicPartition
) -> actions.SendJoinGroup:
    """Start (or rejoin), join ``generation`` as a follower, sync ``partitions``; returns the join sent."""
    if loop.machine.state.value == "not started":
        lookup = first(step(loop, events.Start, protocols=loop.protocols()), actions.FindCoordinator)
        out = step(loop, events.FindCoordinatorResponse, token=lookup.token, node_id=1)
        prepared = [a for a in out if isinstance(a, actions.PartitionsRevoked)]
        if prepared:  # eager: the (empty) revoke callback before the first join, as aiokafka's
            done = prepared[0].callback_id
            out = step(loop, events.CallbackFinished, callback_id=done, offsets_to_commit={})
        join = first(out, actions.SendJoinGroup)
    else:
        join = first(step(loop, events.RequestRejoin, reason="r"), actions.SendJoinGroup)
    sent = loop.joining(join)
    sync = first(
        step(
            loop,
            events.JoinGroupResponse,
            token=join.token,
            error_code=ErrorCode.NONE,
            generation=generation,
            protocol_type="consumer",
            protocol_name="cooperative-sticky",
            leader_id="other",
            member_id="pod-0-AAAAAAAAAAAAAAAAAAAAAA",
            skip_assignment=False,
            members=(),
        ),
        actions.SendSyncGroup,
    )
    out = step(
        loop,
        events.SyncGroupResponse,
        token=sync.token,
        error_code=ErrorCode.NONE,
        protocol_type="consumer",
        protocol_name="cooperative-sticky",
        assignment=encoded(*partitions),
    )
    assigned = first(out, actions.PartitionsAssigned)
    step(loop, events.CallbackFinished, callback_id=assigned.callback_id, offsets_to_commit={})
    return sent


def subscription_of(join: actions.SendJoinGroup) -> Subscription:
    return Subscription.decode(join.protocols[0].metadata)


async def test_each_join_says_what_a_cooperative_member_owns_and_from_which_generation() -> None:
    loop = loop_for(RebalanceProtocol.COOPERATIVE)
    first_join = become_stable(loop, 4, T0, T1)
    sub = subscription_of(first_join)
    assert (sub.owned_partitions, sub.generation_id) == ([], -1), "a new member claims nothing"

    rejoin = first(step(loop, events.RequestRejoin, reason="a member joined"), actions.SendJoinGroup)
    sub = subscription_of(loop.joining(rejoin))
    claims = {(o.topic, p) for o in sub.owned_partitions for p in o.partitions}
    assert claims == {("t", 0), ("t", 1)}
    assert sub.generation_id == 4, "Subscription v2: the claims' generation (KAFKA-12984)"
    assert sub.topics == ["t"]


async def test_an_eager_member_claims_nothing_as_it_joins_since_it_revoked_everything_first() -> None:
    loop = loop_for(RebalanceProtocol.EAGER)
    become_stable(loop, 2, T0)
    protocols_while_owning = loop.protocols()  # what an early encoding would have sent: a stale claim
    assert Subscription.decode(protocols_while_owning[0].metadata).owned_partitions
    out = step(loop, events.RequestRejoin, reason="r")
    revoked = first(out, actions.PartitionsRevoked)
    join = first(
        step(loop, events.CallbackFinished, callback_id=revoked.callback_id, offsets_to_commit={}),
        actions.SendJoinGroup,
    )
    assert subscription_of(loop.joining(join)).owned_partitions == []


async def test_the_assignors_user_data_is_that_of_the_last_assignment() -> None:
    loop = loop_for(RebalanceProtocol.COOPERATIVE)
    become_stable(loop, 9, T0)
    cooperative = loop._assignors["cooperative-sticky"]
    cooperative.on_assignment(assignor_lib.MemberAssignment([("t", 0)]), 9)  # what the runtime does in _take
    rejoin = first(step(loop, events.RequestRejoin, reason="r"), actions.SendJoinGroup)
    user_data = subscription_of(loop.joining(rejoin)).user_data
    assert assignor_lib.decode_cooperative_user_data(user_data) == 9


# ---------------------------------------------------------------- the audit


class Cluster:
    def __init__(self, view: GroupView) -> None:
        self.view = view
        self.rejoins: list[str] = []

    async def counts(self, topics: frozenset[str]) -> dict[str, int]:
        return {"t": 3}

    async def describe(self) -> GroupView:
        return self.view


def duties(cluster: Cluster) -> LeaderDuties:
    return LeaderDuties(
        own_topics=lambda: frozenset({"t"}),
        refresh_interval=60,
        partition_counts=cluster.counts,
        describe=cluster.describe,
        rejoin=cluster.rejoins.append,
    )


async def test_a_partition_in_transfer_between_two_cooperative_rounds_is_not_a_reason_to_rejoin() -> None:
    """Round one leaves t-2 unassigned: its old owner still claims it and rejoins for round two. An audit
    that called it 'owned by no member' would add a third rebalance."""
    cluster = Cluster(
        GroupView(
            "Stable",
            (
                DescribedMember("a", "a", frozenset({"t"}), (T0,), claimed=(T0, T2)),
                DescribedMember("b", "b", frozenset({"t"}), (T1,), claimed=(T1,)),
                DescribedMember("c", "c", frozenset({"t"}), (), claimed=()),
            ),
        )
    )
    member = duties(cluster)
    member.assigned(5, leading=False)
    await member.step()
    assert cluster.rejoins == []


async def test_a_partition_nobody_owns_or_claims_is_still_found() -> None:
    cluster = Cluster(
        GroupView(
            "Stable",
            (
                DescribedMember("a", "a", frozenset({"t"}), (T0,), claimed=(T0,)),
                DescribedMember("b", "b", frozenset({"t"}), (T1,), claimed=(T1,)),
            ),
        )
    )
    member = duties(cluster)
    member.assigned(5, leading=False)
    await member.step()
    assert cluster.rejoins == ["1 subscribed partitions owned by no member: t-2"]

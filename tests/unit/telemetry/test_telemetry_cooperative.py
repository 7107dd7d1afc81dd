"""A cooperative rebalance as telemetry sees it: the protocol on the span, only the delta counted."""

from __future__ import annotations

from telemetry_harness import MEMBER, T0, T1, Member, Telemetry, named, one

from staticconsumer.membership import RebalanceProtocol, TopicPartition
from staticconsumer.membership import actions as act
from staticconsumer.membership import events as ev
from staticconsumer.telemetry import attributes as a

T2 = TopicPartition("t", 2)


def test_the_rebalance_span_names_the_protocol_and_counts_only_what_moved() -> None:
    otel = Telemetry()
    member = Member(otel, rebalance_protocol=RebalanceProtocol.COOPERATIVE)
    member.join_as_follower(partitions=(T0, T1), generation=1)
    assert (otel.span(named("join")).attributes or {})[a.REBALANCE_PROTOCOL] == "cooperative"

    member.now += 1.0
    join = one(member.feed(ev.RequestRejoin, reason="a member joined"), act.SendJoinGroup)
    sync = one(member.join_answer(join, generation=2, member_id=MEMBER), act.SendSyncGroup)
    revoked = one(member.sync_answer(sync, [T1, T2]), act.PartitionsRevoked)
    assigned = one(member.finish(revoked), act.PartitionsAssigned)
    member.finish(assigned)

    attrs = otel.span(named("rebalance")).attributes or {}
    assert attrs[a.REBALANCE_PROTOCOL] == "cooperative"
    assert attrs[a.PARTITIONS_REVOKED] == 1, "only T0 moved away"
    assert attrs[a.PARTITIONS_ASSIGNED] == 1, "only T2 is new"
    assert (attrs[a.GENERATION_BEFORE], attrs[a.GENERATION_AFTER]) == (1, 2)


def test_an_eager_member_says_so_too() -> None:
    otel = Telemetry()
    Member(otel).join_as_follower()
    assert (otel.span(named("join")).attributes or {})[a.REBALANCE_PROTOCOL] == "eager"

"""How an INCONSISTENT_GROUP_PROTOCOL refusal describes the group's side, from DescribeGroups."""

from __future__ import annotations

from staticconsumer.protocol import DescribedGroup, DescribedGroupMember
from staticconsumer.runtime.loop import describe_protocols


def _members(count: int) -> list[DescribedGroupMember]:
    return [
        DescribedGroupMember(
            member_id=f"m{i}", client_id=f"aiokafka-{i}", group_instance_id="pod-0" if i == 0 else None
        )
        for i in range(count)
    ]


def test_a_stable_group_names_its_protocol_and_members() -> None:
    group = DescribedGroup(
        group_state="Stable", protocol_type="consumer", protocol_data="roundrobin", members=_members(2)
    )
    assert describe_protocols(group) == (
        "the group uses protocol 'roundrobin' (2 members: aiokafka-0 (instance pod-0), aiokafka-1)"
    )


def test_a_rebalancing_group_says_no_protocol_is_chosen_and_long_lists_are_cut() -> None:
    group = DescribedGroup(group_state="PreparingRebalance", protocol_type="consumer", members=_members(7))
    text = describe_protocols(group)
    assert text.startswith("the group is PreparingRebalance with no protocol chosen yet (7 members: ")
    assert text.endswith("aiokafka-4 and 2 more)")


def test_a_group_of_another_protocol_type_says_so() -> None:
    group = DescribedGroup(
        group_state="Stable", protocol_type="connect", protocol_data="sessioned", members=_members(1)
    )
    assert describe_protocols(group) == (
        "the group is not a consumer group: its protocol type is 'connect' "
        "(1 member: aiokafka-0 (instance pod-0))"
    )

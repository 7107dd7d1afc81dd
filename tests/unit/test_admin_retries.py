"""GroupAdmin's retry policy and request building, with the broker scripted at the bridge boundary.

The real-broker behaviour is in tests/integration/test_admin*.py; here the answers a healthy single-node
broker never gives (coordinator moved or loading, a dropped connection) are scripted, so the policy
Java's admin follows can be checked: rediscover on NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE, back off
and retry on COORDINATOR_LOAD_IN_PROGRESS, never resend a LeaveGroup that may have been applied.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiokafka.errors import NodeNotReadyError, RequestTimedOutError

from staticconsumer import _aiokafka
from staticconsumer import admin as admin_module
from staticconsumer.admin import AdminTimeoutError, GroupAdmin
from staticconsumer.errors import GroupAuthorizationFailedError, UnsupportedVersionForFieldError
from staticconsumer.protocol import (
    DescribedGroup,
    DescribeGroupsResponse,
    FindCoordinatorResponse,
    LeaveGroupMemberResponse,
    LeaveGroupResponse,
    Message,
)

VERSIONS = {10: (0, 6), 13: (0, 5), 15: (0, 5), 16: (0, 5)}


class FakeClient:
    def get_random_node(self) -> int:
        return 0


class Script:
    """Answers (or exceptions) per request type, in order; records what was sent where."""

    def __init__(self, answers: dict[str, list[Any]], versions: dict[int, tuple[int, int]] | None = None):
        self.answers = answers
        self.versions = versions or VERSIONS
        self.sent: list[tuple[int, str, int, Message]] = []
        self.sleeps: list[float] = []

    async def broker_versions(self, client: Any, node: int, *, coordination: bool = True) -> dict[int, Any]:
        return self.versions

    async def send(self, client: Any, node: int, message: Message, **kwargs: Any) -> _aiokafka.Exchange:
        name = type(message).__name__
        self.sent.append((node, name, kwargs["max_version"], message))
        answer = self.answers[name].pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return _aiokafka.Exchange(kwargs["max_version"], answer)

    def apis(self) -> list[tuple[int, str]]:
        return [(node, name) for node, name, _, _ in self.sent]


@pytest.fixture
def script(monkeypatch: pytest.MonkeyPatch) -> Script:
    holder = Script({})
    monkeypatch.setattr(admin_module._aiokafka, "broker_versions", holder.broker_versions)
    monkeypatch.setattr(admin_module._aiokafka, "send", holder.send)
    real_sleep = asyncio.sleep

    async def sleep(seconds: float) -> None:
        holder.sleeps.append(seconds)
        await real_sleep(seconds)

    monkeypatch.setattr(admin_module.asyncio, "sleep", sleep)
    return holder


def _admin(api_timeout_ms: int = 5_000) -> GroupAdmin:
    admin = GroupAdmin(
        bootstrap_servers="127.0.0.1:9",
        retry_backoff_ms=10,
        retry_backoff_max_ms=40,
        api_timeout_ms=api_timeout_ms,
    )
    admin._client = FakeClient()
    return admin


def _found(node: int, code: int = 0) -> FindCoordinatorResponse:
    from staticconsumer.protocol import Coordinator

    return FindCoordinatorResponse(coordinators=[Coordinator("g", node, "h", 9092, code)])


def _described(code: int = 0) -> DescribeGroupsResponse:
    return DescribeGroupsResponse(groups=[DescribedGroup(code, "g", "Stable", "consumer", "range")])


async def test_not_coordinator_rediscovers_and_retries_at_the_new_coordinator(script: Script) -> None:
    script.answers = {
        "FindCoordinatorRequest": [_found(1), _found(2)],
        "DescribeGroupsRequest": [_described(16), _described()],
    }
    described = await _admin().describe_group("g")
    assert (described.state, described.coordinator) == ("Stable", 2)
    assert script.apis() == [
        (0, "FindCoordinatorRequest"),
        (1, "DescribeGroupsRequest"),
        (0, "FindCoordinatorRequest"),
        (2, "DescribeGroupsRequest"),
    ]
    assert script.sleeps == [0.01]


async def test_load_in_progress_backs_off_at_the_same_coordinator(script: Script) -> None:
    script.answers = {
        "FindCoordinatorRequest": [_found(1)],
        "DescribeGroupsRequest": [_described(14), _described(14), _described()],
    }
    await _admin().describe_group("g")
    assert [name for _, name in script.apis()].count("FindCoordinatorRequest") == 1
    assert script.sleeps == [0.01, 0.02]


async def test_a_coordinator_that_never_appears_gives_up_at_the_api_timeout(script: Script) -> None:
    script.answers = {"FindCoordinatorRequest": [_found(-1, 15) for _ in range(100)]}
    with pytest.raises(AdminTimeoutError, match="COORDINATOR_NOT_AVAILABLE"):
        await _admin(api_timeout_ms=300).describe_group("g")
    assert script.sleeps[:4] == [0.01, 0.02, 0.04, 0.04], "doubling from retry.backoff.ms up to the max"


async def test_a_leave_that_may_have_been_applied_is_not_resent(script: Script) -> None:
    script.answers = {"FindCoordinatorRequest": [_found(1)], "LeaveGroupRequest": [RequestTimedOutError()]}
    with pytest.raises(RequestTimedOutError):
        await _admin().remove_members("g", ["pod-0"])
    assert [name for _, name in script.apis()].count("LeaveGroupRequest") == 1


async def test_a_leave_that_never_left_is_retried(script: Script) -> None:
    answer = LeaveGroupResponse(members=[LeaveGroupMemberResponse("pod-0-x", "pod-0", 0)])
    script.answers = {
        "FindCoordinatorRequest": [_found(1), _found(1)],
        "LeaveGroupRequest": [NodeNotReadyError("down"), answer],
    }
    result = await _admin().remove_members("g", ["pod-0"])
    assert result.all_removed


async def test_leave_is_one_batch_by_instance_id_with_the_reason_from_v5(script: Script) -> None:
    answer = LeaveGroupResponse(
        members=[
            LeaveGroupMemberResponse("", "a", 25),
            LeaveGroupMemberResponse("b-1", "b", 0),
            LeaveGroupMemberResponse("", "c", 82),
        ]
    )
    script.answers = {"FindCoordinatorRequest": [_found(1)], "LeaveGroupRequest": [answer]}
    result = await _admin().remove_members("g", ["a", "b", "a", "c"], reason="why")
    leave = script.sent[-1]
    assert leave[2] == 5
    assert [(m.member_id, m.group_instance_id, m.reason) for m in leave[3].members] == [
        ("", "a", "why"),
        ("", "b", "why"),
        ("", "c", "why"),
    ]
    assert [m.group_instance_id for m in result.removed] == ["b"]
    assert [(m.group_instance_id, m.error.error_name if m.error else None) for m in result.failed] == [
        ("a", "UNKNOWN_MEMBER_ID"),
        ("c", "FENCED_INSTANCE_ID"),
    ]


async def test_leave_v4_carries_no_reason_and_v2_is_refused_before_sending(script: Script) -> None:
    answer = LeaveGroupResponse(members=[LeaveGroupMemberResponse("a-1", "a", 0)])
    script.answers = {"FindCoordinatorRequest": [_found(1), _found(1)], "LeaveGroupRequest": [answer]}
    script.versions = {**VERSIONS, 13: (0, 4)}
    await _admin().remove_members("g", ["a"], reason="why")
    assert script.sent[-1][3].members[0].reason is None
    script.versions = {**VERSIONS, 13: (0, 2)}
    with pytest.raises(UnsupportedVersionForFieldError, match="group_instance_id"):
        await _admin().remove_members("g", ["a"])
    assert [name for _, name in script.apis()].count("LeaveGroupRequest") == 1


async def test_refused_leave_names_the_group_and_the_acl(script: Script) -> None:
    script.answers = {
        "FindCoordinatorRequest": [_found(1)],
        "LeaveGroupRequest": [LeaveGroupResponse(error_code=30)],
    }
    with pytest.raises(GroupAuthorizationFailedError, match=r"remove members of group 'g'.*needs READ"):
        await _admin().remove_members("g", ["a"])


async def test_remove_needs_non_empty_instance_ids(script: Script) -> None:
    with pytest.raises(ValueError, match="at least one"):
        await _admin().remove_members("g", [])
    with pytest.raises(ValueError, match="empty"):
        await _admin().remove_members("g", ["a", ""])
    assert script.sent == []


# -- describe for both protocols: ConsumerGroupDescribe first where offered, as Java's admin does --------

CONSUMER_VERSIONS = {**VERSIONS, 69: (0, 1)}


def _consumer_group(code: int = 0) -> Any:
    import uuid

    from staticconsumer import protocol as p

    topic = uuid.UUID(int=7)
    now = p.DescribedAssignment([p.DescribedTopicPartitions(topic, "orders", [2, 0])])
    target = p.DescribedAssignment([p.DescribedTopicPartitions(topic, "orders", [0])])
    members = [
        p.ConsumerGroupDescribedMember(
            "m-0",
            "pod-0",
            "rack-a",
            5,
            "c-0",
            "/10.0.0.1",
            ["orders"],
            None,
            now,
            target,
            p.MEMBER_TYPE_CONSUMER,
        ),
        p.ConsumerGroupDescribedMember(
            "m-1", "pod-1", None, -2, "c-1", "/10.0.0.2", [], "ord.*", target, target, p.MEMBER_TYPE_CLASSIC
        ),
    ]
    group = p.ConsumerGroupDescribedGroup(
        code, None, "g", "Reconciling", 6, 6, "uniform", members if not code else []
    )
    return p.ConsumerGroupDescribeResponse(groups=[group])


async def test_a_consumer_protocol_group_is_described_with_epochs_and_targets(script: Script) -> None:
    script.versions = CONSUMER_VERSIONS
    script.answers = {
        "FindCoordinatorRequest": [_found(1)],
        "ConsumerGroupDescribeRequest": [_consumer_group()],
    }
    group = await _admin().describe_group("g")
    assert script.apis() == [(0, "FindCoordinatorRequest"), (1, "ConsumerGroupDescribeRequest")]
    assert (group.group_type, group.state, group.protocol, group.group_epoch, group.assignment_epoch) == (
        "consumer",
        "Reconciling",
        "uniform",
        6,
        6,
    )
    assert group.exists
    reconciling, returning = group.members
    assert (reconciling.member_epoch, reconciling.rack, reconciling.member_protocol) == (
        5,
        "rack-a",
        "consumer",
    )
    assert [(tp.topic, tp.partitions) for tp in reconciling.assignment] == [("orders", [0, 2])]
    assert [(tp.topic, tp.partitions) for tp in reconciling.target_assignment] == [("orders", [0])]
    assert (returning.member_epoch, returning.subscribed_pattern, returning.member_protocol) == (
        -2,
        "ord.*",
        "classic",
    )
    assert group.member("pod-1") is returning


@pytest.mark.parametrize("code", [69, 35])
async def test_a_group_that_is_not_a_consumer_group_falls_back_to_describe_groups(
    script: Script, code: int
) -> None:
    """69: a classic group (or none) on Kafka 4; 35: a 3.9 broker advertises API 69 but has it off."""
    script.versions = CONSUMER_VERSIONS
    script.answers = {
        "FindCoordinatorRequest": [_found(1)],
        "ConsumerGroupDescribeRequest": [_consumer_group(code)],
        "DescribeGroupsRequest": [_described()],
    }
    group = await _admin().describe_group("g")
    assert script.apis()[1:] == [(1, "ConsumerGroupDescribeRequest"), (1, "DescribeGroupsRequest")]
    assert (group.group_type, group.state, group.group_epoch) == ("classic", "Stable", None)


async def test_a_consumer_group_describe_refusal_names_the_acl(script: Script) -> None:
    script.versions = CONSUMER_VERSIONS
    script.answers = {
        "FindCoordinatorRequest": [_found(1)],
        "ConsumerGroupDescribeRequest": [_consumer_group(30)],
    }
    with pytest.raises(GroupAuthorizationFailedError, match="DESCRIBE"):
        await _admin().describe_group("g")

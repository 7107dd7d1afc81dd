"""Kafka wire protocol for the classic group APIs, byte-identical to the Java client.

Every message is a typed msgspec Struct with ``encode(version) -> bytes`` and
``decode(data, version)``. :data:`APIS` lists what is implemented; the versions actually sent are the
highest common ones with each broker (see ``staticconsumer._aiokafka``). The sticky assignors' userData
codecs are re-exported from the pure ``assignors`` package, which owns them.
"""

from __future__ import annotations

from typing import NamedTuple

from assignors.userdata import (
    StickyMemberData,
    decode_cooperative_user_data,
    decode_sticky_user_data,
    encode_cooperative_user_data,
    encode_sticky_user_data,
)
from staticconsumer.protocol._base import REASON_MAX_CHARS, Message, truncate_reason
from staticconsumer.protocol._codec import TaggedFields
from staticconsumer.protocol.admin import (
    AclCreation,
    AclCreationResult,
    CreateAclsRequest,
    CreateAclsResponse,
    ListedGroup,
    ListGroupsRequest,
    ListGroupsResponse,
)
from staticconsumer.protocol.consumer import (
    CONSUMER_PROTOCOL_TYPE,
    MAX_PAYLOAD_VERSION,
    Assignment,
    Subscription,
    TopicPartitions,
    assigned_partitions,
    payload_version,
    subscribed_topics,
)
from staticconsumer.protocol.coordinator import (
    KEY_TYPE_GROUP,
    KEY_TYPE_TRANSACTION,
    Coordinator,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    coordinator_answer,
    find_group_coordinator,
)
from staticconsumer.protocol.group import (
    AUTHORIZED_OPERATIONS_OMITTED,
    DescribedGroup,
    DescribedGroupMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    JoinGroupResponseMember,
    LeaveGroupMemberResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberIdentity,
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    SyncGroupResponse,
)
from staticconsumer.protocol.headers import (
    RequestHeader,
    ResponseHeader,
    decode_request_header,
    decode_response,
    decode_response_header,
    encode_request,
    encode_request_header,
    encode_response,
    frame,
)
from staticconsumer.protocol.offsets import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponseTopic,
)


class ApiSpec(NamedTuple):
    """One API: its key, our request/response classes and the version range we implement."""

    name: str
    key: int
    request: type[Message]
    response: type[Message]
    min_version: int
    max_version: int
    flexible_from: int


def _spec(request: type[Message], response: type[Message]) -> ApiSpec:
    assert request.API_KEY == response.API_KEY
    assert (request.MIN_VERSION, request.MAX_VERSION) == (response.MIN_VERSION, response.MAX_VERSION)
    return ApiSpec(
        request.API_NAME,
        request.API_KEY,
        request,
        response,
        request.MIN_VERSION,
        request.MAX_VERSION,
        request.FLEXIBLE_FROM,
    )


APIS: dict[str, ApiSpec] = {
    s.name: s
    for s in (
        _spec(JoinGroupRequest, JoinGroupResponse),
        _spec(SyncGroupRequest, SyncGroupResponse),
        _spec(HeartbeatRequest, HeartbeatResponse),
        _spec(LeaveGroupRequest, LeaveGroupResponse),
        _spec(OffsetCommitRequest, OffsetCommitResponse),
        _spec(OffsetFetchRequest, OffsetFetchResponse),
        _spec(DescribeGroupsRequest, DescribeGroupsResponse),
        _spec(FindCoordinatorRequest, FindCoordinatorResponse),
    )
}
ADMIN_APIS: dict[str, ApiSpec] = {
    s.name: s
    for s in (
        _spec(ListGroupsRequest, ListGroupsResponse),
        _spec(CreateAclsRequest, CreateAclsResponse),
    )
}
"""Admin and test-broker APIs (``staticconsumer.admin``, ACLs for the SASL test broker): sendable through
the bridge like the group APIs, kept out of :data:`APIS` so the group-protocol tables stay what they are."""
APIS_BY_KEY: dict[int, ApiSpec] = {s.key: s for s in (*APIS.values(), *ADMIN_APIS.values())}

__all__ = [
    "ADMIN_APIS",
    "APIS",
    "APIS_BY_KEY",
    "AUTHORIZED_OPERATIONS_OMITTED",
    "CONSUMER_PROTOCOL_TYPE",
    "KEY_TYPE_GROUP",
    "KEY_TYPE_TRANSACTION",
    "MAX_PAYLOAD_VERSION",
    "REASON_MAX_CHARS",
    "AclCreation",
    "AclCreationResult",
    "ApiSpec",
    "Assignment",
    "Coordinator",
    "CreateAclsRequest",
    "CreateAclsResponse",
    "DescribeGroupsRequest",
    "DescribeGroupsResponse",
    "DescribedGroup",
    "DescribedGroupMember",
    "FindCoordinatorRequest",
    "FindCoordinatorResponse",
    "HeartbeatRequest",
    "HeartbeatResponse",
    "JoinGroupRequest",
    "JoinGroupRequestProtocol",
    "JoinGroupResponse",
    "JoinGroupResponseMember",
    "LeaveGroupMemberResponse",
    "LeaveGroupRequest",
    "LeaveGroupResponse",
    "ListGroupsRequest",
    "ListGroupsResponse",
    "ListedGroup",
    "MemberIdentity",
    "Message",
    "OffsetCommitRequest",
    "OffsetCommitRequestPartition",
    "OffsetCommitRequestTopic",
    "OffsetCommitResponse",
    "OffsetCommitResponsePartition",
    "OffsetCommitResponseTopic",
    "OffsetFetchRequest",
    "OffsetFetchRequestGroup",
    "OffsetFetchRequestTopic",
    "OffsetFetchResponse",
    "OffsetFetchResponseGroup",
    "OffsetFetchResponsePartition",
    "OffsetFetchResponseTopic",
    "RequestHeader",
    "ResponseHeader",
    "StickyMemberData",
    "Subscription",
    "SyncGroupRequest",
    "SyncGroupRequestAssignment",
    "SyncGroupResponse",
    "TaggedFields",
    "TopicPartitions",
    "assigned_partitions",
    "coordinator_answer",
    "decode_cooperative_user_data",
    "decode_request_header",
    "decode_response",
    "decode_response_header",
    "decode_sticky_user_data",
    "encode_cooperative_user_data",
    "encode_request",
    "encode_request_header",
    "encode_response",
    "encode_sticky_user_data",
    "find_group_coordinator",
    "frame",
    "payload_version",
    "subscribed_topics",
    "truncate_reason",
]

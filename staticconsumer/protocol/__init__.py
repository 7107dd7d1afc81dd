"""Kafka wire protocol for the consumer group APIs (classic and KIP-848), byte-identical to the Java client.

Internal: not part of the public API, it may change in any release (docs/consumer.md, "What is
public", lists what is).

Every message is a typed msgspec Struct with ``encode(version) -> bytes`` and
``decode(data, version)``. :data:`APIS` lists what is implemented; the versions actually sent are the
highest common ones with each broker (see ``staticconsumer._aiokafka``). The sticky assignors' userData
codecs are re-exported from the pure ``assignors`` package, which owns them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from staticconsumer.protocol._base import REASON_MAX_CHARS, Message, truncate_reason
from staticconsumer.protocol._codec import ZERO_UUID, TaggedFields, parse_uuid_text, uuid_text
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
from staticconsumer.protocol.consumer_group import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    MEMBER_TYPE_CLASSIC,
    MEMBER_TYPE_CONSUMER,
    MEMBER_TYPE_UNKNOWN,
    STATIC_LEAVE_EPOCH,
    ConsumerGroupDescribedGroup,
    ConsumerGroupDescribedMember,
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatAssignment,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    DescribedAssignment,
    DescribedTopicPartitions,
    TopicIdPartitions,
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
from staticconsumer.protocol.metadata import (
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from staticconsumer.protocol.offsets import (
    TOPIC_IDS_FROM_VERSION,
    TOPIC_NAMES_MAX_VERSION,
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

if TYPE_CHECKING:
    from assignors.userdata import (
        StickyMemberData,
        decode_cooperative_user_data,
        decode_sticky_user_data,
        encode_cooperative_user_data,
        encode_sticky_user_data,
    )
else:
    _USER_DATA = frozenset(
        {
            "StickyMemberData",
            "decode_cooperative_user_data",
            "decode_sticky_user_data",
            "encode_cooperative_user_data",
            "encode_sticky_user_data",
        }
    )
    """Re-exported from ``assignors.userdata`` on first access: only a sticky assignor's leader needs them."""

    def __getattr__(name: str) -> Any:
        if name not in _USER_DATA:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        from assignors import userdata

        value = getattr(userdata, name)
        globals()[name] = value
        return value


class ApiSpec(NamedTuple):
    """One API: its key, our request/response classes and the version range we implement.

    ``default_max_version`` is the highest version sent when the caller sets no ``max_version``
    (below ``max_version`` only for OffsetCommit/OffsetFetch, whose v10 needs topic ids).
    """

    name: str
    key: int
    request: type[Message]
    response: type[Message]
    min_version: int
    max_version: int
    flexible_from: int
    default_max_version: int


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
        request.MAX_VERSION if request.DEFAULT_MAX_VERSION is None else request.DEFAULT_MAX_VERSION,
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
        _spec(ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse),
        _spec(ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse),
        _spec(MetadataRequest, MetadataResponse),
    )
}
"""What a consumer speaks with our codec: the classic group APIs, KIP-848's ConsumerGroupHeartbeat and
ConsumerGroupDescribe, the offset APIs, and Metadata v10+ (topic ids, for KIP-848 assignments)."""
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
    "JOIN_EPOCH",
    "KEY_TYPE_GROUP",
    "KEY_TYPE_TRANSACTION",
    "LEAVE_EPOCH",
    "MAX_PAYLOAD_VERSION",
    "MEMBER_TYPE_CLASSIC",
    "MEMBER_TYPE_CONSUMER",
    "MEMBER_TYPE_UNKNOWN",
    "REASON_MAX_CHARS",
    "STATIC_LEAVE_EPOCH",
    "TOPIC_IDS_FROM_VERSION",
    "TOPIC_NAMES_MAX_VERSION",
    "ZERO_UUID",
    "AclCreation",
    "AclCreationResult",
    "ApiSpec",
    "Assignment",
    "ConsumerGroupDescribeRequest",
    "ConsumerGroupDescribeResponse",
    "ConsumerGroupDescribedGroup",
    "ConsumerGroupDescribedMember",
    "ConsumerGroupHeartbeatAssignment",
    "ConsumerGroupHeartbeatRequest",
    "ConsumerGroupHeartbeatResponse",
    "Coordinator",
    "CreateAclsRequest",
    "CreateAclsResponse",
    "DescribeGroupsRequest",
    "DescribeGroupsResponse",
    "DescribedAssignment",
    "DescribedGroup",
    "DescribedGroupMember",
    "DescribedTopicPartitions",
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
    "MetadataRequest",
    "MetadataRequestTopic",
    "MetadataResponse",
    "MetadataResponseBroker",
    "MetadataResponsePartition",
    "MetadataResponseTopic",
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
    "TopicIdPartitions",
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
    "parse_uuid_text",
    "payload_version",
    "subscribed_topics",
    "truncate_reason",
    "uuid_text",
]

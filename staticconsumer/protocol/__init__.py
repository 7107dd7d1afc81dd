"""Kafka wire protocol for the consumer group APIs (classic and KIP-848), byte-identical to the Java client.

Internal: not part of the public API, it may change in any release (docs/consumer.md, "What is
public", lists what is).

Every message is a typed msgspec Struct with ``encode(version) -> bytes`` and
``decode(data, version)``. :data:`APIS` lists what is implemented; the versions actually sent are the
highest common ones with each broker (see ``staticconsumer._aiokafka``). The sticky assignors' userData
codecs are re-exported from the pure ``assignors`` package, which owns them.

Every name here loads its module on first access (issue 26): a consumer loads the messages of the APIs
it sends and no others (a classic member never loads KIP-848's ``consumer_group`` nor ``admin``), and
:data:`APIS`, :data:`ADMIN_APIS` and :data:`APIS_BY_KEY`, which name every message class, are built
when first read. Code on a consumer's path imports from the submodule or uses
:func:`staticconsumer.protocol.api_keys.spec_for_key`.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assignors.userdata import (
        StickyMemberData,
        decode_cooperative_user_data,
        decode_sticky_user_data,
        encode_cooperative_user_data,
        encode_sticky_user_data,
    )
    from staticconsumer.protocol._base import (  # the headers
        AUTHORIZED_OPERATIONS_OMITTED,
        REASON_MAX_CHARS,
        ZERO_UUID,
        Message,
        RequestHeader,
        ResponseHeader,
        TaggedFields,
        decode_request_header,
        decode_response,
        decode_response_header,
        encode_request,
        encode_request_header,
        encode_response,
        frame,
        parse_uuid_text,
        truncate_reason,
        uuid_text,
    )
    from staticconsumer.protocol.admin import (
        AclCreation,
        AclCreationResult,
        CreateAclsRequest,
        CreateAclsResponse,
        ListedGroup,
        ListGroupsRequest,
        ListGroupsResponse,
    )
    from staticconsumer.protocol.api_keys import ApiSpec
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

_MODULE_OF_NAME: dict[str, str] = {
    "REASON_MAX_CHARS": "_base",
    "Message": "_base",
    "truncate_reason": "_base",
    "ZERO_UUID": "_base",
    "TaggedFields": "_base",
    "parse_uuid_text": "_base",
    "uuid_text": "_base",
    "AclCreation": "admin",
    "AclCreationResult": "admin",
    "CreateAclsRequest": "admin",
    "CreateAclsResponse": "admin",
    "ListedGroup": "admin",
    "ListGroupsRequest": "admin",
    "ListGroupsResponse": "admin",
    "CONSUMER_PROTOCOL_TYPE": "consumer",
    "MAX_PAYLOAD_VERSION": "consumer",
    "Assignment": "consumer",
    "Subscription": "consumer",
    "TopicPartitions": "consumer",
    "assigned_partitions": "consumer",
    "payload_version": "consumer",
    "subscribed_topics": "consumer",
    "JOIN_EPOCH": "consumer_group",
    "LEAVE_EPOCH": "consumer_group",
    "MEMBER_TYPE_CLASSIC": "consumer_group",
    "MEMBER_TYPE_CONSUMER": "consumer_group",
    "MEMBER_TYPE_UNKNOWN": "consumer_group",
    "STATIC_LEAVE_EPOCH": "consumer_group",
    "ConsumerGroupDescribedGroup": "consumer_group",
    "ConsumerGroupDescribedMember": "consumer_group",
    "ConsumerGroupDescribeRequest": "consumer_group",
    "ConsumerGroupDescribeResponse": "consumer_group",
    "ConsumerGroupHeartbeatAssignment": "consumer_group",
    "ConsumerGroupHeartbeatRequest": "consumer_group",
    "ConsumerGroupHeartbeatResponse": "consumer_group",
    "DescribedAssignment": "consumer_group",
    "DescribedTopicPartitions": "consumer_group",
    "TopicIdPartitions": "consumer_group",
    "KEY_TYPE_GROUP": "coordinator",
    "KEY_TYPE_TRANSACTION": "coordinator",
    "Coordinator": "coordinator",
    "FindCoordinatorRequest": "coordinator",
    "FindCoordinatorResponse": "coordinator",
    "coordinator_answer": "coordinator",
    "find_group_coordinator": "coordinator",
    "AUTHORIZED_OPERATIONS_OMITTED": "_base",
    "DescribedGroup": "group",
    "DescribedGroupMember": "group",
    "DescribeGroupsRequest": "group",
    "DescribeGroupsResponse": "group",
    "HeartbeatRequest": "group",
    "HeartbeatResponse": "group",
    "JoinGroupRequest": "group",
    "JoinGroupRequestProtocol": "group",
    "JoinGroupResponse": "group",
    "JoinGroupResponseMember": "group",
    "LeaveGroupMemberResponse": "group",
    "LeaveGroupRequest": "group",
    "LeaveGroupResponse": "group",
    "MemberIdentity": "group",
    "SyncGroupRequest": "group",
    "SyncGroupRequestAssignment": "group",
    "SyncGroupResponse": "group",
    "RequestHeader": "_base",
    "ResponseHeader": "_base",
    "decode_request_header": "_base",
    "decode_response": "_base",
    "decode_response_header": "_base",
    "encode_request": "_base",
    "encode_request_header": "_base",
    "encode_response": "_base",
    "frame": "_base",
    "MetadataRequest": "metadata",
    "MetadataRequestTopic": "metadata",
    "MetadataResponse": "metadata",
    "MetadataResponseBroker": "metadata",
    "MetadataResponsePartition": "metadata",
    "MetadataResponseTopic": "metadata",
    "TOPIC_IDS_FROM_VERSION": "offsets",
    "TOPIC_NAMES_MAX_VERSION": "offsets",
    "OffsetCommitRequest": "offsets",
    "OffsetCommitRequestPartition": "offsets",
    "OffsetCommitRequestTopic": "offsets",
    "OffsetCommitResponse": "offsets",
    "OffsetCommitResponsePartition": "offsets",
    "OffsetCommitResponseTopic": "offsets",
    "OffsetFetchRequest": "offsets",
    "OffsetFetchRequestGroup": "offsets",
    "OffsetFetchRequestTopic": "offsets",
    "OffsetFetchResponse": "offsets",
    "OffsetFetchResponseGroup": "offsets",
    "OffsetFetchResponsePartition": "offsets",
    "OffsetFetchResponseTopic": "offsets",
    "StickyMemberData": "assignors.userdata",
    "decode_cooperative_user_data": "assignors.userdata",
    "decode_sticky_user_data": "assignors.userdata",
    "encode_cooperative_user_data": "assignors.userdata",
    "encode_sticky_user_data": "assignors.userdata",
    "ApiSpec": "api_keys",
}
"""Where each public name lives: a submodule of this package, or ``assignors.userdata`` (the sticky
assignors' userData codecs, which only a sticky leader needs)."""

_API_ORDER = (11, 14, 12, 13, 8, 9, 15, 10, 68, 69, 3)
"""The consumer's APIs in the order :data:`APIS` has always listed them."""


def _tables() -> dict[str, Any]:
    from staticconsumer.protocol.api_keys import ADMIN_KEYS, spec_for_key

    def spec(key: int) -> ApiSpec:
        found = spec_for_key(key)
        assert found is not None, key
        return found

    apis = {s.name: s for s in map(spec, _API_ORDER)}
    admin = {s.name: s for s in map(spec, sorted(ADMIN_KEYS))}
    return {
        "APIS": apis,
        "ADMIN_APIS": admin,
        "APIS_BY_KEY": {s.key: s for s in (*apis.values(), *admin.values())},
    }


if TYPE_CHECKING:
    APIS: dict[str, ApiSpec]
    """What a consumer speaks with our codec: the classic group APIs, KIP-848's ConsumerGroupHeartbeat and
    ConsumerGroupDescribe, the offset APIs, and Metadata v10+ (topic ids, for KIP-848 assignments)."""
    ADMIN_APIS: dict[str, ApiSpec]
    """Admin and test-broker APIs (``staticconsumer.admin``, ACLs for the SASL test broker): sendable
    through the bridge like the group APIs, kept out of :data:`APIS` so the group tables stay as they are."""
    APIS_BY_KEY: dict[int, ApiSpec]
    """Both tables by API key: loads every message module; the bridge uses ``api_keys.spec_for_key``."""
else:

    def __getattr__(name: str) -> Any:
        if name in ("APIS", "ADMIN_APIS", "APIS_BY_KEY"):
            tables = _tables()
            globals().update(tables)
            return tables[name]
        module = _MODULE_OF_NAME.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        if "." not in module:
            module = f"{__name__}.{module}"
        # __import__, not importlib.import_module: the C import path, which -X importtime reports.
        __import__(module)
        value = getattr(sys.modules[module], name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    """What is loaded so far and every public name, loaded or not (for completion and ``help``)."""
    return sorted({*globals(), *__all__})


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

"""Sans-IO group membership for static (KIP-345) and dynamic members: events in, actions out.

See docs/membership.md for the states, the events, the actions and the error table.
"""

from . import actions, events
from .commit_errors import CommitFailedError, OffsetRegressionError
from .config import (
    MAX_GROUP_INSTANCE_ID_LENGTH,
    AssignmentDecoder,
    MembershipConfig,
    SubscriptionDecoder,
    validate_group_instance_id,
)
from .machine import MAX_REASON_LENGTH, MembershipMachine, truncate_reason
from .types import (
    NO_GENERATION,
    NO_MEMBER_ID,
    FailureKind,
    GroupProtocol,
    JoinGroupMember,
    MemberState,
    OffsetAndMetadata,
    ReleaseReason,
    RequestToken,
    TopicPartition,
)

__all__ = [
    "MAX_GROUP_INSTANCE_ID_LENGTH",
    "MAX_REASON_LENGTH",
    "NO_GENERATION",
    "NO_MEMBER_ID",
    "AssignmentDecoder",
    "CommitFailedError",
    "FailureKind",
    "GroupProtocol",
    "JoinGroupMember",
    "MemberState",
    "MembershipConfig",
    "MembershipMachine",
    "OffsetAndMetadata",
    "OffsetRegressionError",
    "ReleaseReason",
    "RequestToken",
    "SubscriptionDecoder",
    "TopicPartition",
    "actions",
    "events",
    "truncate_reason",
    "validate_group_instance_id",
]

"""Pure partition assignors (range, roundrobin, sticky, cooperative-sticky), Java-compatible.

No I/O and no import of ``staticconsumer``: this package is usable on its own. Every assignor orders
members the same way (static members by instance id, then dynamic ones by member id), so results do
not depend on the member ids the broker hands out.
"""

from .model import (
    NO_GENERATION,
    Assignor,
    GroupAssignment,
    Member,
    MemberAssignment,
    RebalanceProtocol,
    TopicInfo,
    TopicPartition,
    java_key,
    member_sort_key,
    sorted_members,
)
from .range import RangeAssignor
from .registry import create, names, register
from .roundrobin import RoundRobinAssignor
from .sticky import CooperativeStickyAssignor, StickyAssignor
from .userdata import (
    StickyMemberData,
    decode_cooperative_user_data,
    decode_sticky_user_data,
    encode_cooperative_user_data,
    encode_sticky_user_data,
)

__all__ = [
    "NO_GENERATION",
    "Assignor",
    "CooperativeStickyAssignor",
    "GroupAssignment",
    "Member",
    "MemberAssignment",
    "RangeAssignor",
    "RebalanceProtocol",
    "RoundRobinAssignor",
    "StickyAssignor",
    "StickyMemberData",
    "TopicInfo",
    "TopicPartition",
    "create",
    "decode_cooperative_user_data",
    "decode_sticky_user_data",
    "encode_cooperative_user_data",
    "encode_sticky_user_data",
    "java_key",
    "member_sort_key",
    "names",
    "register",
    "sorted_members",
]

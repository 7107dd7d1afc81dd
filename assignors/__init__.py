"""Pure partition assignors (range, roundrobin, sticky, cooperative-sticky), Java-compatible.

No I/O and no import of ``staticconsumer``: this package is usable on its own. Every assignor orders
members the same way (static members by instance id, then dynamic ones by member id), so results do
not depend on the member ids the broker hands out.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
else:
    _LAZY = {
        "NO_GENERATION": ".model",
        "Assignor": ".model",
        "GroupAssignment": ".model",
        "Member": ".model",
        "MemberAssignment": ".model",
        "RebalanceProtocol": ".model",
        "TopicInfo": ".model",
        "TopicPartition": ".model",
        "java_key": ".model",
        "member_sort_key": ".model",
        "sorted_members": ".model",
        "RangeAssignor": "._builtin",
        "create": ".registry",
        "names": ".registry",
        "register": ".registry",
        "RoundRobinAssignor": "._builtin",
        "CooperativeStickyAssignor": "._builtin",
        "StickyAssignor": "._builtin",
        "StickyMemberData": ".userdata",
        "decode_cooperative_user_data": ".userdata",
        "decode_sticky_user_data": ".userdata",
        "encode_cooperative_user_data": ".userdata",
        "encode_sticky_user_data": ".userdata",
    }
    """Public name -> module: each loads on first access, so a consumer that runs no assignor (KIP-848's
    consumer protocol) and ``import staticconsumer`` do not load the assignors' code."""

    def __getattr__(name: str) -> Any:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(module, __name__), name)
        globals()[name] = value
        return value


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

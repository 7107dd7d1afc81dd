"""Pure partition assignors (range, roundrobin, sticky, cooperative-sticky), Java-compatible.

No I/O and no import of ``staticconsumer``: this package is usable on its own. Every assignor orders
members the same way (static members by instance id, then dynamic ones by member id), so results do
not depend on the member ids the broker hands out.

Assignors are found by protocol name (``create``, ``register``, ``names``), so a consumer can be configured
with names as in Java. The built-in assignors load on first use (``create``, or ``register`` of a
clashing name): a consumer on KIP-848's consumer protocol runs none of them, and ``import
staticconsumer`` should not pay for them. The registry lives here, not in a module of its own: every
consumer's settings read it, and a module costs ~0.1 ms to find and load (issue 26).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Final

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
        value = getattr(importlib.import_module(module, __name__), name)
        globals()[name] = value
        return value


_REGISTRY: dict[str, type[Assignor]] = {}

_BUILT_IN_MODULES: Final[dict[str, tuple[str, str]]] = {
    "range": ("._builtin", "RangeAssignor"),
    "roundrobin": ("._builtin", "RoundRobinAssignor"),
    "sticky": ("._builtin", "StickyAssignor"),
    "cooperative-sticky": ("._builtin", "CooperativeStickyAssignor"),
}
"""Built-in name -> (module, class), registered when first looked up. The classes' algorithms load on
their first ``assign`` (``assignors._builtin``): a member joins with names and user data only."""

BUILT_IN: Final[tuple[str, ...]] = tuple(_BUILT_IN_MODULES)
"""The protocol names this package ships, in Java's order: what docs list, whatever else is registered."""


def _built_in(name: str) -> type[Assignor] | None:
    """The built-in class for ``name``, imported and registered now; None when ``name`` is not built in."""
    where = _BUILT_IN_MODULES.get(name)
    if where is None:
        return None
    cls: type[Assignor] = getattr(importlib.import_module(where[0], __package__), where[1])
    _REGISTRY.setdefault(name, cls)
    return cls


def register(cls: type[Assignor], *, replace: bool = False) -> type[Assignor]:
    """Make ``cls`` available under ``cls.name``; usable as a class decorator for custom assignors."""
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise ValueError(f"{cls.__qualname__} needs a non-empty class attribute 'name'")
    if name not in _REGISTRY and name in _BUILT_IN_MODULES and not replace:
        _built_in(name)
    if name in _REGISTRY and _REGISTRY[name] is not cls and not replace:
        raise ValueError(f"an assignor named {name!r} is already registered")
    _REGISTRY[name] = cls
    return cls


def create(name: str) -> Assignor:
    """A fresh assignor instance (one per consumer: sticky assignors keep per-member state)."""
    cls = _REGISTRY.get(name) or _built_in(name)
    if cls is None:
        raise KeyError(f"unknown assignor {name!r}; known: {', '.join(names())}") from None
    return cls()


def names() -> list[str]:
    """Registered protocol names."""
    return sorted({*_REGISTRY, *_BUILT_IN_MODULES})


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

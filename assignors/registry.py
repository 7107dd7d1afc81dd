"""Assignors by protocol name, so a consumer can be configured with names as in Java."""

from __future__ import annotations

from typing import Final

from .model import Assignor
from .range import RangeAssignor
from .roundrobin import RoundRobinAssignor
from .sticky import CooperativeStickyAssignor, StickyAssignor

_REGISTRY: dict[str, type[Assignor]] = {}


def register(cls: type[Assignor], *, replace: bool = False) -> type[Assignor]:
    """Make ``cls`` available under ``cls.name``; usable as a class decorator for custom assignors."""
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise ValueError(f"{cls.__qualname__} needs a non-empty class attribute 'name'")
    if name in _REGISTRY and _REGISTRY[name] is not cls and not replace:
        raise ValueError(f"an assignor named {name!r} is already registered")
    _REGISTRY[name] = cls
    return cls


def create(name: str) -> Assignor:
    """A fresh assignor instance (one per consumer: sticky assignors keep per-member state)."""
    try:
        cls = _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown assignor {name!r}; known: {', '.join(sorted(_REGISTRY))}") from None
    return cls()


def names() -> list[str]:
    """Registered protocol names."""
    return sorted(_REGISTRY)


_BUILT_IN_CLASSES: Final = (RangeAssignor, RoundRobinAssignor, StickyAssignor, CooperativeStickyAssignor)

BUILT_IN: Final[tuple[str, ...]] = tuple(cls.name for cls in _BUILT_IN_CLASSES)
"""The protocol names this package ships, in Java's order: what docs list, whatever else is registered."""

for _cls in _BUILT_IN_CLASSES:
    register(_cls)

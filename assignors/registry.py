"""Assignors by protocol name, so a consumer can be configured with names as in Java.

The built-in assignors load on first use (``create``, or ``register`` of a clashing name): a consumer on
KIP-848's consumer protocol runs none of them, and ``import staticconsumer`` should not pay for them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from .model import Assignor

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

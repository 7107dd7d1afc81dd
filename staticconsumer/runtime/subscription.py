"""What this member subscribes to: a fixed set of topics, or a pattern resolved against cluster metadata.

Read from both threads (the application's commit explains its errors with ``topics``), written on one at a
time (the application's before the membership thread runs, the membership thread's afterwards): its whole
state is one immutable value swapped by a single reference assignment, so a reader never sees the names of
one subscription with the pattern or the matches of another.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import msgspec


class _Wanted(msgspec.Struct, frozen=True):
    """One subscription's whole state: names or a compiled pattern, and what the pattern matched."""

    names: frozenset[str] = frozenset()
    pattern: re.Pattern[str] | None = None
    matched: frozenset[str] = frozenset()


class Subscription:
    """Topics by name, or by a regular expression (matched whole; internal ``__`` topics only when
    ``exclude_internal`` is off: exclude.internal.topics=false)."""

    def __init__(
        self, topics: Iterable[str] = (), pattern: str | None = None, *, exclude_internal: bool = True
    ) -> None:
        self.exclude_internal = exclude_internal
        self._wanted = _Wanted(frozenset(topics), re.compile(pattern) if pattern else None)

    def replace(self, topics: Iterable[str] = (), pattern: str | None = None) -> None:
        """Subscribe to something else (``consumer.subscribe``/``unsubscribe``): by the application before
        the membership thread runs, by the membership thread after; a new pattern matches nothing until the
        next ``refresh``."""
        self._wanted = _Wanted(frozenset(topics), re.compile(pattern) if pattern else None)

    @property
    def names(self) -> frozenset[str]:
        return self._wanted.names

    @property
    def pattern(self) -> re.Pattern[str] | None:
        return self._wanted.pattern

    @property
    def named(self) -> frozenset[str]:
        """The topics subscribed by name; none for a pattern (checked for existence and access)."""
        wanted = self._wanted
        return wanted.names if wanted.pattern is None else frozenset()

    @property
    def is_empty(self) -> bool:
        """Nothing subscribed: no topic and no pattern (aiokafka's consumer started before subscribe())."""
        wanted = self._wanted
        return not wanted.names and wanted.pattern is None

    @property
    def topics(self) -> frozenset[str]:
        """The topics subscribed right now (for a pattern, those it matched at the last refresh)."""
        wanted = self._wanted
        return wanted.matched if wanted.pattern is not None else wanted.names

    def refresh(self, existing: Iterable[str]) -> tuple[frozenset[str], frozenset[str]] | None:
        """Match the pattern against ``existing`` topics; (added, removed) when that changed the topics.
        Membership thread only."""
        wanted = self._wanted
        if wanted.pattern is None:
            return None
        pattern, internal_too = wanted.pattern, not self.exclude_internal
        matched = frozenset(t for t in existing if pattern.fullmatch(t) and (internal_too or t[:2] != "__"))
        if matched == wanted.matched:
            return None
        self._wanted = msgspec.structs.replace(wanted, matched=matched)
        return matched - wanted.matched, wanted.matched - matched

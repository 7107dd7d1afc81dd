"""What this member subscribes to: a fixed set of topics, or a pattern resolved against cluster metadata."""

from __future__ import annotations

import re
from collections.abc import Iterable


class Subscription:
    """Topics by name, or by a regular expression (matched whole; internal ``__`` topics only when
    ``exclude_internal`` is off: exclude.internal.topics=false)."""

    def __init__(
        self, topics: Iterable[str] = (), pattern: str | None = None, *, exclude_internal: bool = True
    ) -> None:
        self.exclude_internal = exclude_internal
        self.names = frozenset(topics)
        self.pattern = re.compile(pattern) if pattern else None
        self._matched: frozenset[str] = frozenset()

    def replace(self, topics: Iterable[str] = (), pattern: str | None = None) -> None:
        """Subscribe to something else (``consumer.subscribe``/``unsubscribe``). Called on the membership
        thread, which reads this object; a new pattern matches nothing until the next ``refresh``."""
        self.names = frozenset(topics)
        self.pattern = re.compile(pattern) if pattern else None
        self._matched = frozenset()

    @property
    def is_empty(self) -> bool:
        """Nothing subscribed: no topic and no pattern (aiokafka's consumer started before subscribe())."""
        return not self.names and self.pattern is None

    @property
    def topics(self) -> frozenset[str]:
        """The topics subscribed right now (for a pattern, those it matched at the last refresh)."""
        return self._matched if self.pattern is not None else self.names

    def refresh(self, existing: Iterable[str]) -> tuple[frozenset[str], frozenset[str]] | None:
        """Match the pattern against ``existing`` topics; (added, removed) when that changed the topics."""
        if self.pattern is None:
            return None
        pattern, internal_too = self.pattern, not self.exclude_internal
        matched = frozenset(t for t in existing if pattern.fullmatch(t) and (internal_too or t[:2] != "__"))
        if matched == self._matched:
            return None
        added, removed = matched - self._matched, self._matched - matched
        self._matched = matched
        return added, removed

"""A subscribed topic that does not exist: say so, keep saying so (less and less often), or fail.

Without this, a consumer subscribed to a missing topic joins, gets nothing, and waits forever with one
INFO line as the only sign. :class:`MissingTopics` turns each metadata refresh into: a WARNING as soon
as a subscribed topic is missing, repeated with a doubling interval while it stays missing, a WARNING
when it appears, the current set as :attr:`~MissingTopics.missing` (``consumer.missing_topics``), and,
with ``staticconsumer.fail.on.missing.topics``, a :class:`~staticconsumer.errors.MissingTopicsError`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection

import msgspec

from staticconsumer.errors import MissingTopicsError

log = logging.getLogger(__name__)

FIRST_REPEAT_S = 10.0
"""The first repetition of the WARNING comes this long after the first one; each next waits twice longer."""
MAX_REPEAT_S = 300.0
"""The WARNING about a topic that stays missing repeats at least this often (5 minutes)."""


class TopicsChange(msgspec.Struct, frozen=True):
    """What one :meth:`MissingTopics.update` found: topics newly missing and topics that appeared."""

    missing: frozenset[str]
    newly_missing: frozenset[str]
    appeared: frozenset[str]


class MissingTopics:
    """Tracks which subscribed topics are missing across metadata refreshes; see the module doc.

    ``update(subscribed, existing)`` after every metadata refresh (``existing``: the topics the metadata
    lists). A topic the principal may not DESCRIBE is indistinguishable from a missing one in such
    metadata, so the WARNING says both; :func:`staticconsumer.connection.check_access` tells them apart.
    """

    def __init__(
        self,
        group_id: str,
        *,
        fail: bool = False,
        logger: logging.Logger = log,
        clock: Callable[[], float] = time.monotonic,
        first_repeat_s: float = FIRST_REPEAT_S,
        max_repeat_s: float = MAX_REPEAT_S,
    ) -> None:
        self.group_id = group_id
        self.fail = fail
        self._logger = logger
        self._clock = clock
        self._first_repeat = first_repeat_s
        self._max_repeat = max(max_repeat_s, first_repeat_s)
        self._missing: frozenset[str] = frozenset()
        self._since: float = 0.0
        self._next_warning: float = 0.0
        self._interval: float = first_repeat_s

    @property
    def missing(self) -> frozenset[str]:
        """Subscribed topics missing at the last update."""
        return self._missing

    def update(self, subscribed: Collection[str], existing: Collection[str]) -> TopicsChange:
        """Compare the subscription with the metadata; log, or raise when ``fail`` and a topic is missing."""
        now = self._clock()
        missing = frozenset(subscribed) - frozenset(existing)
        newly = missing - self._missing
        appeared = (self._missing - missing) & frozenset(subscribed)
        change = TopicsChange(missing, newly, appeared)
        if not self._missing and missing:
            self._since = now
        self._missing = missing
        if appeared:
            self._logger.warning(
                "group %r: subscribed topic(s) %s exist now%s",
                self.group_id,
                _listing(appeared),
                f"; still missing: {_listing(missing)}" if missing else "",
            )
        if not missing:
            return change
        if self.fail:
            raise MissingTopicsError(
                sorted(missing),
                f"group {self.group_id!r}: subscribed topic(s) {_listing(missing)} do not exist (or this "
                "principal may not DESCRIBE them), and staticconsumer.fail.on.missing.topics is true; "
                "create them, fix the subscription, or let the consumer wait for them",
            )
        if newly:
            self._interval = self._first_repeat
        elif now < self._next_warning:
            return change
        self._logger.warning(
            "group %r: subscribed topic(s) %s do not exist (or this principal may not DESCRIBE them); "
            "nothing is consumed from them until they are created (waiting %.0f s so far; next reminder "
            "in %.0f s)",
            self.group_id,
            _listing(missing),
            now - self._since,
            self._interval,
        )
        self._next_warning = now + self._interval
        self._interval = min(self._interval * 2, self._max_repeat)
        return change


def _listing(topics: Collection[str]) -> str:
    return ", ".join(repr(topic) for topic in sorted(topics))

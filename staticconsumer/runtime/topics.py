"""The subscribed topics against the cluster, on the membership thread: missing ones are warned about
(with backoff), exposed as ``consumer.missing_topics``, reported to telemetry, or fatal.

The consumer's all-topics metadata cannot tell a topic that does not exist from one the principal may
not see, so each check is a Metadata request naming the subscribed topics (never creating them). A
pattern subscription only ever names topics that exist, so it has nothing to check.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Collection

from staticconsumer import _aiokafka
from staticconsumer.connection import MissingTopics, TopicsChange, topic_authorization_error
from staticconsumer.errors import ErrorCode, MissingTopicsError, TopicAuthorizationFailedError
from staticconsumer.runtime import Subscription
from staticconsumer.settings import Settings

log = logging.getLogger("staticconsumer.runtime")

RECHECK_WHILE_MISSING_S = 5.0
"""While a subscribed topic is missing, it is looked for this often (metadata.max.age.ms if shorter)."""

_NOT_THERE = frozenset({int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), 17})
"""UNKNOWN_TOPIC_OR_PARTITION, and INVALID_TOPIC_EXCEPTION (17): a name no topic can have."""


class TopicWatch:
    """Checks ``subscription`` at start and after every ``interval_s`` (sooner while topics are missing,
    and at once after ``wake()``); ``report`` is called when the missing set changes."""

    def __init__(
        self,
        *,
        client: object,
        settings: Settings,
        subscription: Subscription,
        report: Callable[[TopicsChange], None],
    ) -> None:
        self._client = client
        self._settings = settings
        self._subscription = subscription
        self._report = report
        self.missing = MissingTopics(settings.group_id, fail=settings.fail_on_missing_topics)
        self._interval = settings.metadata_max_age_ms / 1000
        self._wake: asyncio.Event | None = None

    def _named(self) -> frozenset[str]:
        return self._subscription.named

    def started(self, missing: Collection[str]) -> None:
        """The access check at start found ``missing``; raises MissingTopicsError when told to fail."""
        topics = self._named()
        self._changed(self.missing.update(topics, topics - frozenset(missing)))

    def wake(self) -> None:
        """Check now (the subscription changed). Membership thread only."""
        if self._wake is not None:
            self._wake.set()

    async def check(self) -> TopicsChange:
        """One look at the cluster; raises MissingTopicsError (when told to fail) or
        TopicAuthorizationFailedError (a subscribed topic this principal may not DESCRIBE)."""
        topics = self._named()
        existing: set[str] = set()
        if topics:
            codes = await _aiokafka.topic_errors(self._client, sorted(topics))
            denied = sorted(t for t, code in codes.items() if code == ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            if denied:
                raise topic_authorization_error(self._settings, denied)
            existing = {t for t, code in codes.items() if code not in _NOT_THERE}
        change = self.missing.update(topics, existing)
        self._changed(change)
        return change

    def _changed(self, change: TopicsChange) -> None:
        if change.newly_missing or change.appeared:
            try:
                self._report(change)
            except Exception:
                log.exception("reporting missing topics failed; ignoring it")

    async def run(self, fail: Callable[[Exception], None]) -> None:
        """Until cancelled, or until a check is fatal: then ``fail(error)`` and return."""
        self._wake = asyncio.Event()
        while True:
            interval = self._interval
            if self.missing.missing:
                interval = min(interval, RECHECK_WHILE_MISSING_S)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), interval)
            self._wake.clear()
            try:
                await self.check()
            except (MissingTopicsError, TopicAuthorizationFailedError) as error:
                fail(error)
                return
            except Exception as error:  # the connection is down: the monitor reports that
                log.info("checking the subscribed topics failed: %r", error)

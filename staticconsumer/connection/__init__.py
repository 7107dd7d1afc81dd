"""Connecting to Kafka with failures that say why, and watching the connection afterwards.

Internal: not part of the public API, it may change in any release (docs/consumer.md, "What is
public", lists what is). docs/connection.md shows these helpers on a plain ``AIOKafkaClient`` for
diagnosis; the consumer uses them for you.

- :func:`bootstrap` replaces ``client.bootstrap()``: every bootstrap server probed at once, bounded by
  ``request.timeout.ms``, and a typed error naming each server's fate (nothing listening, silent server,
  refused credentials, wrong security protocol).
- :func:`check_access` finds missing ACLs at start and names them; it also reports missing topics.
- :class:`ConnectionMonitor` folds aiokafka's per-retry ERROR lines into one WARNING per broker state
  change and exposes :class:`ConnectionState`.
- :class:`MissingTopics` warns, with backoff, about subscribed topics that do not exist, or fails.
- ``reconnect``: Java's per-broker reconnect backoff with jitter, shared by a consumer's clients;
  :class:`CauseLog` (defined here): one WARNING per broker and cause per minute for faults that repeat
  at every retry.

See docs/connection.md.
"""

import logging
import threading
import time
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from staticconsumer.connection.access import (
        AccessReport,
        acl_hint,
        check_access,
        explain_authorization,
        group_authorization_error,
        principal_of,
        topic_authorization_error,
    )
    from staticconsumer.connection.bootstrapping import bootstrap, bootstrap_answered
    from staticconsumer.connection.monitor import BrokerOutage, ConnectionMonitor, ConnectionState
    from staticconsumer.connection.topics import MissingTopics, TopicsChange
else:
    _LAZY = {
        "AccessReport": "access",
        "acl_hint": "access",
        "check_access": "access",
        "explain_authorization": "access",
        "group_authorization_error": "access",
        "principal_of": "access",
        "topic_authorization_error": "access",
        "bootstrap": "bootstrapping",
        "bootstrap_answered": "bootstrapping",
        "BrokerOutage": "monitor",
        "ConnectionMonitor": "monitor",
        "ConnectionState": "monitor",
        "MissingTopics": "topics",
        "TopicsChange": "topics",
    }
    """Each name loads its module on first use (issue 26): a start's bootstrap probe needs
    ``bootstrapping`` only, and the access check (with the group messages it reads) loads while the
    probe waits on the network."""

    def __getattr__(name: str) -> Any:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        globals()[name] = value
        return value


__all__ = [
    "AccessReport",
    "BrokerOutage",
    "ConnectionMonitor",
    "ConnectionState",
    "MissingTopics",
    "TopicsChange",
    "acl_hint",
    "bootstrap",
    "bootstrap_answered",
    "check_access",
    "explain_authorization",
    "group_authorization_error",
    "principal_of",
    "topic_authorization_error",
]


# -- CauseLog: one log record per cause per minute, with a count, for faults that repeat at every retry
# (issue 27).
#
# A coordinator that answers garbage, or a peer that claims a 2 GiB frame, fails every retry the same way;
# logging each (aiokafka printed a full traceback every time) buries the one fact that matters. The first
# occurrence of a cause is logged at once; repeats are counted and logged at most once per interval, with
# the count since the last record. The clock is an input, so this is tested without sleeping.
#
# Defined in the package itself, not a module of its own: every import of staticconsumer loads it
# (through _aiokafka), and a module costs a finder lookup, a stat and an unmarshal (issue 26).

REPORT_INTERVAL_S = 60.0


class CauseLog:
    """Rate-limited WARNINGs keyed by cause (callers key by broker and cause, so each broker is named)."""

    def __init__(
        self,
        logger: logging.Logger,
        *,
        interval_s: float = REPORT_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._logger = logger
        self._interval_s = interval_s
        self._clock = clock
        self._lock = threading.Lock()
        self._last: dict[Hashable, tuple[float, int]] = {}

    def warning(self, key: Hashable, message: str, *args: object) -> bool:
        """Log ``message % args`` if ``key`` was never logged or last logged an interval ago (with how
        many times it happened since); otherwise only count it. True when a record was written."""
        now = self._clock()
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last[0] < self._interval_s:
                self._last[key] = (last[0], last[1] + 1)
                return False
            count = 1 if last is None else last[1] + 1
            self._last[key] = (now, 0)
        if last is None:
            self._logger.warning(
                "%s (repeats are counted and logged at most once every %.0f s)",
                message % args,
                self._interval_s,
            )
        else:
            self._logger.warning("%s (%d times in the last %.0f s)", message % args, count, now - last[0])
        return True

    def pending(self, key: Hashable) -> int:
        """Occurrences of ``key`` counted but not logged yet."""
        with self._lock:
            last = self._last.get(key)
            return 0 if last is None else last[1]

"""One log record per cause per minute, with a count, for faults that repeat at every retry (issue 27).

A coordinator that answers garbage, or a peer that claims a 2 GiB frame, fails every retry the same way;
logging each (aiokafka printed a full traceback every time) buries the one fact that matters. The first
occurrence of a cause is logged at once; repeats are counted and logged at most once per interval, with
the count since the last record. The clock is an input, so this is tested without sleeping.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable

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

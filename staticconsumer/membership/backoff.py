"""The one retry policy of the SDK: exponential backoff, as the Java client's ``retry.backoff.ms`` and
``retry.backoff.max.ms`` describe it.

The membership machine (coordinator lookups, join retries, heartbeats), the committed-offset fetch and the
admin client all back off with this, so one pair of settings means the same thing everywhere.
"""

from __future__ import annotations

import msgspec


class Backoff(msgspec.Struct, frozen=True):
    """``retry_backoff_ms`` doubling per consecutive failure, capped at ``retry_backoff_max_ms``.

    No jitter: the machine is deterministic so its timers can be tested without sleeping.
    """

    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1_000

    def seconds(self, attempts: int) -> float:
        """How long to wait after ``attempts`` consecutive failures (the first failure waits the base)."""
        ms = self.retry_backoff_ms * (1 << min(max(0, attempts - 1), 30))
        return min(ms, max(self.retry_backoff_max_ms, self.retry_backoff_ms)) / 1000.0

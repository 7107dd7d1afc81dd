"""Where the group coordinator is: known or not, which discovery round, and when to look again.

The epoch counts discoveries, so an error or a lost connection from a request sent to a coordinator that
has since been replaced never drops the new one.
"""

from __future__ import annotations

import msgspec

from .backoff import Backoff


class CoordinatorLookup(msgspec.Struct):
    backoff: Backoff
    known: bool = False
    epoch: int = 0
    attempts: int = 0
    retry_at: float | None = None

    def may_look_up(self, now: float) -> bool:
        """Whether a FindCoordinator may go out now (the caller checks none is in flight)."""
        return not self.known and (self.retry_at is None or now >= self.retry_at)

    def found(self) -> None:
        self.known = True
        self.epoch += 1
        self.attempts = 0
        self.retry_at = None

    def lookup_failed(self, now: float) -> None:
        self.attempts += 1
        self.retry_at = now + self.backoff.seconds(self.attempts)

    def lose(self) -> bool:
        """Forget the coordinator; False when it was not known (nothing to disconnect)."""
        if not self.known:
            return False
        self.known = False
        self.attempts = 0
        self.retry_at = None
        return True

    def is_current(self, epoch: int | None) -> bool:
        """Whether a request sent at ``epoch`` went to the coordinator we know now."""
        return epoch is None or epoch == self.epoch

"""How much memory this process holds now, and the most it held during a block: for tests that
assert a fault cannot make the client buffer without bound."""

from __future__ import annotations

import os
import threading
from types import TracebackType

_PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_bytes() -> int:
    """Resident set size of this process now (Linux ``/proc/self/statm``)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * _PAGE


class RssWatch:
    """Samples RSS on a thread while the ``with`` block runs; ``growth`` is the peak minus the start.

    ``ru_maxrss`` will not do: it is the peak of the whole process life, already high from earlier tests.
    """

    def __init__(self, interval: float = 0.005) -> None:
        self.interval = interval
        self.start = 0
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="rss-watch", daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, rss_bytes())

    def __enter__(self) -> RssWatch:
        self.start = self.peak = rss_bytes()
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_bytes())

    @property
    def growth(self) -> int:
        return self.peak - self.start

"""Maven, the one tool that fetches Java jars for us: Kafka's broker (the testing kit) and Spark's Kafka
source (analytics). What both need lives here, so neither imports the other: the cache directory, a lock
per resolution, the ``mvn`` on PATH, and progress lines while Maven (silent with ``-q``) downloads.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


def cache_root() -> Path:
    """``$STATICCONSUMER_CACHE_DIR`` or ``$XDG_CACHE_HOME/staticconsumer`` (default ``~/.cache``)."""
    explicit = os.environ.get("STATICCONSUMER_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "staticconsumer"


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive inter-process lock, so two processes never resolve into one directory at once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def find_maven(missing: Callable[[], Exception]) -> str:
    """The ``mvn`` on PATH; else raises ``missing()``, the caller's own error saying what Maven was for."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise missing()
    return mvn


class maven_progress:
    """Lines on stderr while Maven downloads (it is silent with -q): what, then every 10 s, then done."""

    def __init__(self, what: str, *, quiet: bool = False, every: float = 10.0) -> None:
        self.what = what
        self.quiet = quiet
        self.every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, daemon=True)
        self.started = 0.0

    def say(self, text: str) -> None:
        if not self.quiet:
            print(f"maven: {text}", file=sys.stderr, flush=True)

    def _tick(self) -> None:
        while not self._stop.wait(self.every):
            self.say(f"still resolving {self.what} ({time.monotonic() - self.started:.0f}s)")

    def __enter__(self) -> maven_progress:
        self.started = time.monotonic()
        self.say(f"resolving {self.what} and its dependencies from Maven Central (first time only) ...")
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.say(f"{self.what}: finished in {time.monotonic() - self.started:.1f}s")

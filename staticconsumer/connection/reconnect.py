"""Reconnect backoff per broker, as Java's ``ClusterConnectionStates`` does it (issue 27).

aiokafka reconnects to a broker whenever anything asks for it (the metadata refresh, the fetcher, our
requests), so while a broker was down each consumer made 24-43 connection attempts a second and a fleet
would greet the recovering broker with a storm. Java waits ``reconnect.backoff.ms`` after the first failed
attempt, doubling per consecutive failure up to ``reconnect.backoff.max.ms``, each wait scaled by a random
factor in [0.8, 1.2] so a fleet does not retry in step; a successful connect resets it.

A successful connect is also news for every other consumer of the process waiting on the same broker:
with a hundred consumers per process (a fleet's pod), the broker's return was otherwise noticed by each
only when its own wait ran out, up to ``reconnect.backoff.max.ms`` x 1.2 later, and under the CPU burst
of the reconnects some members reported ``connected`` 3.9 s after the broker answered (issue 27). So the
first good connect to a broker ends the waits of every backoff of the process for that broker (a fresh
sign of life, as a successful request is). Not all at the same instant, though: the hundred consumers
told at once then connected within 10 ms, with the other processes of the fleet doing the same, and the
broker's listen queue (``socket.listen.backlog.size``, 50) dropped the excess SYNs, which the kernel
sends again only after 1 s, then 3 s: members read ``connected`` up to 5 s after the broker answered
(issue 27, N=300). So each told backoff retries at a random point of a window as wide as its own
jitter at the ceiling (``2 x JITTER x reconnect_backoff_max_ms``, 0.4 s by default), never later than
its own wait would have. (A cap on the attempts under way at once per process was tried and made it
worse: a broker just started took 3 s per connection on the loaded machine, and members waiting for a
free slot read ``connected`` 15 s after its return.) Only a broker that answered is retried early, so
the attempts while it is down stay as Java's.

Nothing here connects: an attempt starts when something asks. The requests that ask came about once a
second per client, so an attempt started up to a second after its wait had ended; the connection monitor
asks at the end of each wait instead (``wait``, ``attempting``, and ``on_told`` for a wait shortened by
another consumer's connect).

Pure arithmetic: the clock and the random factor are inputs, so it is tested without sleeping.
"""

from __future__ import annotations

import math
import random
import threading
import weakref
from collections.abc import Callable, Hashable

DEFAULT_RECONNECT_BACKOFF_MS = 50
DEFAULT_RECONNECT_BACKOFF_MAX_MS = 1_000
JITTER = 0.2
"""Each wait is scaled by a factor drawn from [1 - JITTER, 1 + JITTER] (Java's CONNECTION_SETUP jitter)."""


def reconnect_delay_ms(failures: int, base_ms: int, max_ms: int, factor: float = 1.0) -> float:
    """The wait after ``failures`` consecutive failed attempts (1 for the first): ``base_ms`` doubled per
    failure after the first, capped at ``max_ms`` (never below ``base_ms``), times the jitter ``factor``."""
    if base_ms <= 0:
        return 0.0
    ceiling = max(max_ms, base_ms)
    exponent = min(max(failures - 1, 0), math.ceil(math.log2(ceiling / base_ms)) if ceiling > base_ms else 0)
    return min(base_ms * (1 << exponent), ceiling) * factor


class ReconnectBackoff:
    """When each broker (any hashable key; the clients use ``host:port``) may be connected to again.

    One per consumer, shared by its clients (the membership thread's and the fetcher's), so the consumer
    as a whole makes one attempt per broker per wait, not one per client. ``begin(key, now)`` before an
    attempt (False: not now), then ``failed(key, now)`` or ``connected(key)``. A broker that has not
    failed is never held back, and attempts to it may run side by side (a healthy start pays nothing);
    once it failed, one attempt at a time, each after the wait. Thread-safe; times are seconds on one
    monotonic clock for all callers.
    """

    def __init__(
        self,
        base_ms: int = DEFAULT_RECONNECT_BACKOFF_MS,
        max_ms: int = DEFAULT_RECONNECT_BACKOFF_MAX_MS,
        *,
        jitter: Callable[[], float] | None = None,
        stagger: Callable[[], float] | None = None,
    ) -> None:
        """``jitter``: the factor of each wait, in [1 - JITTER, 1 + JITTER]; ``stagger``: where in the
        window (0 to 1) a broker's return, told by another consumer, lets this one retry. Both random by
        default; inputs so tests decide them."""
        if base_ms < 0 or max_ms < 0:
            raise ValueError(f"reconnect backoff must not be negative, got {base_ms} ms and {max_ms} ms")
        self.base_ms = base_ms
        self.max_ms = max_ms
        self._jitter = jitter if jitter is not None else _uniform_jitter
        self._stagger = stagger if stagger is not None else random.random
        self._lock = threading.Lock()
        self._failures: dict[Hashable, int] = {}
        self._not_before: dict[Hashable, float] = {}
        self._connecting: set[Hashable] = set()
        self._told: list[Callable[[Hashable], None]] = []
        with _LIVE_LOCK:
            _LIVE.add(self)

    def begin(self, key: Hashable, now: float) -> bool:
        """Whether to attempt a connection to ``key`` at ``now``; if so, the caller must report how it
        went (``failed`` or ``connected``), and until then no other attempt to a failed broker starts."""
        with self._lock:
            if key not in self._failures:
                return True
            if key in self._connecting or now < self._not_before[key]:
                return False
            self._connecting.add(key)
            return True

    def wait(self, key: Hashable, now: float) -> float:
        """Seconds until an attempt to ``key`` is allowed (0 when it is now)."""
        with self._lock:
            return max(self._not_before.get(key, now) - now, 0.0)

    def attempting(self, key: Hashable) -> bool:
        """Whether an attempt to a failed ``key`` is under way (no other may start until it ends)."""
        with self._lock:
            return key in self._connecting

    def failures(self, key: Hashable) -> int:
        """Consecutive failed attempts to ``key`` since its last good connect."""
        with self._lock:
            return self._failures.get(key, 0)

    def failed(self, key: Hashable, now: float) -> float:
        """An attempt to ``key`` failed at ``now``: returns the wait (seconds) before the next one."""
        with self._lock:
            failures = self._failures.get(key, 0) + 1
            self._failures[key] = failures
            delay = reconnect_delay_ms(failures, self.base_ms, self.max_ms, self._jitter()) / 1000
            self._not_before[key] = now + delay
            self._connecting.discard(key)
            return delay

    def connected(self, key: Hashable, now: float) -> None:
        """A connect to ``key`` worked at ``now``: it is not held back, and its next outage starts from
        the base. If it had failed since (not only been told of another's), every other backoff of the
        process waiting on ``key`` waits no longer than its stagger (:meth:`alive`): one message per
        outage and consumer, not one per pair."""
        with self._lock:
            was_down = self._failures.pop(key, 0) > 0
            self._not_before.pop(key, None)
            self._connecting.discard(key)
        if was_down:
            with _LIVE_LOCK:
                others = [b for b in _LIVE if b is not self]
            for other in others:
                other.alive(key, now)

    @property
    def stagger_s(self) -> float:
        """The window over which backoffs told of a broker's return at once retry (seconds): as wide as
        the jitter of a wait at the ceiling, so a fleet told together spreads as its own waits would."""
        return 2 * JITTER * max(self.max_ms, self.base_ms) / 1000

    def alive(self, key: Hashable, now: float) -> None:
        """``key`` answered someone else at ``now``: an attempt to it may start at a random point of the
        next :attr:`stagger_s` (or sooner, if its own wait ends first; one at a time still), and a
        failure of it starts again from the base wait, as after a good connect. Listeners
        (:meth:`on_told`) hear of the new wait, so an attempt starts when it ends."""
        with self._lock:
            if key not in self._failures:
                return
            self._failures[key] = 0
            told = now + self.stagger_s * self._stagger()
            self._not_before[key] = min(self._not_before.get(key, told), told)
            listeners = list(self._told)
        for listener in listeners:
            listener(key)

    def on_told(self, listener: Callable[[Hashable], None], *, remove: bool = False) -> None:
        """Call ``listener(key)`` (on the thread of the consumer that connected) whenever :meth:`alive`
        shortens a wait: the connection monitor wakes its loops to attempt when the new wait ends, where
        the next request that happened to ask came up to a second later (issue 27). ``remove``: stop."""
        with self._lock:
            if remove:
                self._told = [f for f in self._told if f != listener]
            elif listener not in self._told:
                self._told.append(listener)


_LIVE: weakref.WeakSet[ReconnectBackoff] = weakref.WeakSet()
"""Every backoff of the process (one per consumer), for :meth:`ReconnectBackoff.connected`'s news."""
_LIVE_LOCK = threading.Lock()


def _uniform_jitter() -> float:
    return random.uniform(1 - JITTER, 1 + JITTER)  # spreading retries, not a secret

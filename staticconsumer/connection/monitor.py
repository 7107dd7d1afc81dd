"""One WARNING per broker state change instead of aiokafka's ERROR flood, and the state as a value.

While a broker is down, aiokafka logs about 40 ERROR lines a second ("Unable connect to node...",
"Unable to update metadata...", "Failed fetch messages...") and ``getmany`` keeps returning ``{}``, so
the one fact that matters (the broker is unreachable, since when, and whether it came back) drowns.
:class:`ConnectionMonitor` folds those records: the first one for a broker becomes one WARNING, the rest
are counted, and the broker coming back is one INFO with the outage's length, the number of connection
attempts made during it (spaced by the clients' reconnect backoff) and the count of folded records.
Its :attr:`~ConnectionMonitor.state` is what ``consumer.connection_state`` reports.

A request that timed out because the application blocked the event loop it runs on (the loop's lag,
measured by :meth:`ConnectionMonitor.run` on that loop) is named as such, rate-limited, and is no outage.

Records are recognised by :func:`staticconsumer._aiokafka.classify_record` and claimed by a monitor only
for brokers of the clients it watches; records nobody claims pass through untouched, so aiokafka used
elsewhere in the process logs as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import enum
import ipaddress
import logging
import threading
import time
from collections.abc import Callable, Collection, Iterator
from typing import Any, ClassVar

import msgspec

from staticconsumer import _aiokafka
from staticconsumer.connection import CauseLog

log = logging.getLogger(__name__)

LOOP_LAG_THRESHOLD_S = 1.0
"""A loop that did not run for this long (beyond its tick) is blocked: its timeouts are the loop's fault."""
LOOP_LAG_GRACE_S = 2.0
"""How long after a block ends the timeouts it caused may still be reported (they fire as it ends)."""
BUSY_TICK_S = 0.5
"""How often :meth:`ConnectionMonitor.run` turns while a broker is down or a topic lost: reconnects are
due and recovery is to be noticed."""
IDLE_TICK_S = 1.0
"""How often it turns on a loop whose lag it measures while all is well, unless told (:func:`lag_tick_s`)."""


def lag_tick_s(request_timeout_ms: int) -> float:
    """How often :meth:`ConnectionMonitor.run` measures an application loop's lag while all is well.

    A block is measured to within one turn, and only a block about as long as request.timeout.ms makes a
    request time out: a quarter of it (0.5 to 10 s) still measures such a block as at least 3/4 of it,
    above the threshold, while an idle consumer's loop is not woken every half second (issue 27)."""
    return min(10.0, max(BUSY_TICK_S, request_timeout_ms / 4000))


_OWNER: contextvars.ContextVar[ConnectionMonitor | None] = contextvars.ContextVar(
    "staticconsumer_connection_monitor", default=None
)
"""The monitor whose clients run in this context (see :meth:`ConnectionMonitor.owning`)."""


class ConnectionState(enum.Enum):
    """How much of the cluster the consumer can reach."""

    CONNECTED = "connected"
    """Every broker the consumer uses answers (or nothing has failed since the start)."""
    DEGRADED = "degraded"
    """Some brokers are unreachable: partitions they lead are not fetched, requests to them retry."""
    DISCONNECTED = "disconnected"
    """No known broker is reachable: nothing is fetched or committed until one comes back."""


class BrokerOutage(msgspec.Struct):
    """One unreachable broker: since when (monotonic seconds), the first cause, records folded since."""

    address: str
    node_id: int
    since: float
    cause: str
    suppressed: int = 0
    stale: tuple[object, ...] = ()
    attempts: int = 0
    """Failed connection attempts to it during the outage (aiokafka logs one record per attempt)."""
    """The connections to it that existed when it failed: one of them still looking open (its close not
    noticed yet, or another client's) is no sign of recovery; only a connection made since is."""


class ConnectionMonitor:
    """Watches aiokafka clients' brokers through aiokafka's own failure records; see the module doc.

    ``monitor.watch(client)`` for each ``AIOKafkaClient`` (the consumer's and its fetcher's),
    ``monitor.install()`` to start folding records, ``await monitor.run()`` in a task to notice recovery
    (it also asks the client to reconnect, with backoff, so a broker nobody sends to is noticed too),
    ``monitor.close()`` at stop. Thread-safe: aiokafka may log from another thread's event loop.
    """

    def __init__(
        self,
        name: str,
        *,
        logger: logging.Logger = log,
        clock: Callable[[], float] = time.monotonic,
        on_change: Callable[[ConnectionState], None] | None = None,
        reconnect_backoff_s: float = 1.0,
        reconnect_backoff_max_s: float = 30.0,
    ) -> None:
        self.name = name
        self._logger = logger
        self._clock = clock
        self._on_change = on_change
        self._lock = threading.Lock()
        self._clients: list[Any] = []
        self._outages: dict[str, BrokerOutage] = {}
        self._state = ConnectionState.CONNECTED
        self._backoff = (reconnect_backoff_s, reconnect_backoff_max_s)
        self._next_reconnect: dict[str, tuple[float, float]] = {}
        self._installed = False
        self._topics: frozenset[str] = frozenset()
        self._lost_topics: dict[str, int] = {}
        self._ticks: dict[asyncio.AbstractEventLoop, tuple[float, float]] = {}
        """Per loop running :meth:`run`: when it last ticked, and its tick interval."""
        self._blocks: dict[asyncio.AbstractEventLoop, tuple[float, float]] = {}
        """Per loop: when its last block ended, and how long it was."""
        self._lag_log = CauseLog(logger, clock=clock)
        self._wakers: dict[asyncio.AbstractEventLoop, asyncio.Event] = {}
        """Per loop running :meth:`run`: set (thread-safely) when an outage or a lost topic begins, so an
        idle loop sleeps instead of polling for them."""

    # -- what the consumer reads --------------------------------------------------------------------

    @property
    def state(self) -> ConnectionState:
        return self._state

    @property
    def lost_topics(self) -> frozenset[str]:
        """Watched topics aiokafka reported missing from the metadata and not seen back since."""
        with self._lock:
            return frozenset(self._lost_topics)

    @property
    def outages(self) -> dict[str, BrokerOutage]:
        """Unreachable brokers by ``host:port`` (a copy)."""
        with self._lock:
            return {address: _copy(outage) for address, outage in self._outages.items()}

    # -- wiring -------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def owning(self) -> Iterator[None]:
        """Within it, tasks created (and a thread's loop run) belong to this monitor's clients: aiokafka's
        failure records they log are folded by this monitor only. Without it, every monitor watching the
        same broker claims every record, so in a process of many consumers one consumer's failure (a
        fetch to a node its backoff still holds) reopened the outage of every consumer that had just
        recovered (issue 27: the state lagged the records by seconds in a fleet of 100 per process)."""
        token = _OWNER.set(self)
        try:
            yield
        finally:
            _OWNER.reset(token)

    def watch(self, client: Any) -> None:
        """Claim failure records for this ``AIOKafkaClient``'s brokers and check them for recovery."""
        with self._lock:
            if client not in self._clients:
                self._clients.append(client)
        _aiokafka.report_answers(client, self.answered)
        backoff = _aiokafka.reconnect_backoff_of(client)
        if backoff is not None:
            backoff.on_told(self._told)

    def watch_topics(self, topics: Collection[str]) -> None:
        """Also fold aiokafka's "Topic X not found in cluster metadata" flood for these (the subscription)."""
        with self._lock:
            self._topics = frozenset(topics)
            for topic in set(self._lost_topics) - self._topics:
                del self._lost_topics[topic]

    def install(self) -> None:
        """Start folding aiokafka's failure records (process-wide filter, shared by all monitors)."""
        if not self._installed:
            _NoiseFilter.register(self)
            self._installed = True

    def close(self) -> None:
        """Stop folding; a broker still down is logged as such one last time."""
        if self._installed:
            _NoiseFilter.unregister(self)
            self._installed = False
        with self._lock:
            pending = [o for o in self._outages.values() if o.suppressed]
            clients, self._clients = self._clients, []
        for client in clients:
            _aiokafka.report_answers(client, None)
            backoff = _aiokafka.reconnect_backoff_of(client)
            if backoff is not None:
                backoff.on_told(self._told, remove=True)
        for outage in pending:
            self._logger.warning(
                "%s: stopping while Kafka broker %s (node %d) is still unreachable (%d more connection "
                "errors since the last report)",
                self.name,
                outage.address,
                outage.node_id,
                outage.suppressed,
            )

    async def run(
        self,
        client: Any | None = None,
        interval_s: float = BUSY_TICK_S,
        *,
        watch_lag: bool = True,
        idle_interval_s: float = IDLE_TICK_S,
    ) -> None:
        """Until cancelled: notice brokers that answer again, and ask the clients to reconnect to the
        unreachable ones with backoff (reconnect failures are folded like any other).

        It turns every ``interval_s`` only while something is down. Otherwise it turns every
        ``idle_interval_s`` to measure the loop's lag (``watch_lag``, for the application's loop), or
        sleeps until an outage begins (the membership thread's loop, which the application cannot
        block): an idle consumer's loops are not woken for nothing.

        A client may only be driven from its own event loop: with clients on several loops (the
        membership thread's and the application's), run one ``run(client)`` on each loop.
        """
        reconnects: set[asyncio.Task[bool]] = set()
        loop = asyncio.get_running_loop()
        wake = asyncio.Event()
        with self._lock:
            self._wakers[loop] = wake
        try:
            while True:
                due, soonest = self._due_reconnects(client)
                for owner, node_id in due:
                    task = asyncio.create_task(_aiokafka.reconnect(owner, node_id))
                    reconnects.add(task)
                    task.add_done_callback(reconnects.discard)
                    task.add_done_callback(lambda _: wake.set())  # a failure starts the next wait
                self.check_recovery()
                wake.clear()
                wait = self._next_wait(interval_s, idle_interval_s if watch_lag else None)
                if soonest is not None and (wait is None or soonest < wait):
                    wait = soonest
                if watch_lag:
                    self._tick(loop, idle_interval_s if wait is None else wait)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(wait):
                        await wake.wait()
        finally:
            with self._lock:
                self._ticks.pop(loop, None)
                self._blocks.pop(loop, None)
                self._wakers.pop(loop, None)
            for task in list(reconnects):
                task.cancel()
            for task in list(reconnects):
                with contextlib.suppress(BaseException):
                    await task

    def _next_wait(self, busy_s: float, idle_s: float | None) -> float | None:
        """Until the next turn of :meth:`run`: ``busy_s`` while a broker is down or a topic lost."""
        with self._lock:
            busy = bool(self._outages or self._lost_topics)
        return busy_s if busy else idle_s

    def _wake(self) -> None:
        """An outage or a lost topic began: every loop running :meth:`run` turns now (from any thread)."""
        with self._lock:
            wakers = list(self._wakers.items())
        for loop, wake in wakers:
            with contextlib.suppress(RuntimeError):  # that loop is closing
                loop.call_soon_threadsafe(wake.set)

    # -- transitions (also callable directly, e.g. by the consumer on its own request failures) ------

    def failed(self, node_id: int, address: str, cause: str, *, attempt: bool = False) -> None:
        """A connection to ``address`` failed (``attempt``: a failed attempt to connect, not a request
        failing on it): the first failure of an outage is logged, the rest counted."""
        with self._lock:
            outage = self._outages.get(address)
            if outage is not None:
                outage.suppressed += 1
                outage.attempts += attempt
                return
            stale = tuple(conn for c in self._clients for conn in _aiokafka.node_connections(c, node_id))
            self._outages[address] = BrokerOutage(
                address, node_id, self._clock(), cause, stale=stale, attempts=int(attempt)
            )
            self._next_reconnect[address] = (self._clock() + self._backoff[0], self._backoff[0])
            state, changed = self._restate()
            known = self._known_addresses()
        down = len(self._outages)
        self._logger.warning(
            "%s: Kafka broker %s (node %d) is unreachable: %s. The consumer keeps retrying and resumes "
            "when it is back; until then, repeats of this error are not logged (%d of %d known brokers "
            "unreachable, connection state %s)",
            self.name,
            address,
            node_id,
            cause,
            down,
            max(len(known), down),
            state.value,
        )
        self._wake()
        if changed and self._on_change is not None:
            self._on_change(state)

    def recovered(self, address: str) -> None:
        """``address`` answers again: one INFO with the outage's length, the connection attempts made
        during it and how much was folded (the outage's start was the WARNING)."""
        with self._lock:
            outage = self._outages.pop(address, None)
            self._next_reconnect.pop(address, None)
            if outage is None:
                return
            state, changed = self._restate()
        self._logger.info(
            "%s: Kafka broker %s (node %d) is reachable again after %.1f s and %d failed connection "
            "attempts (%d connection errors were not logged); connection state %s",
            self.name,
            address,
            outage.node_id,
            self._clock() - outage.since,
            outage.attempts,
            outage.suppressed,
            state.value,
        )
        if changed and self._on_change is not None:
            self._on_change(state)

    def answered(self, node_id: int, sent_at: float) -> None:
        """A request to broker ``node_id`` sent at ``sent_at`` (this monitor's clock) was answered, a new
        connection's ApiVersions included: an outage of that broker that began before it was sent ends
        now, not at :meth:`run`'s next turn (issue 27: the state read ``disconnected`` for seconds while
        records flowed). A request sent before the outage began proves nothing (a controlled shutdown
        answers some in-flight requests). Free while nothing is down: clients call it per answer."""
        if not self._outages:  # unlocked read: a dict's truth value is atomic
            return
        with self._lock:
            address = next(
                (o.address for o in self._outages.values() if o.node_id == node_id and o.since <= sent_at),
                None,
            )
        if address is not None:
            self.recovered(address)

    def check_recovery(self) -> None:
        """Mark recovered every unreachable broker to which a watched client has a live connection, and
        every lost topic that a client's metadata lists again."""
        with self._lock:
            clients = list(self._clients)
            down = {o.node_id: o.address for o in self._outages.values()}
            stale = {o.node_id: o.stale for o in self._outages.values()}
            lost = dict(self._lost_topics)
        for topic, folded in lost.items():
            if any(topic in _aiokafka.metadata_topics(client) for client in clients):
                with self._lock:
                    self._lost_topics.pop(topic, None)
                self._logger.warning(
                    "%s: topic %r is back in the cluster metadata (%d errors about it were not logged)",
                    self.name,
                    topic,
                    folded,
                )
        if not down:
            return
        back: set[str] = set()
        for client in clients:
            addresses = _aiokafka.broker_addresses(client)
            back.update(
                down[node]
                for node, conns in _aiokafka.live_connections(client).items()
                if node in down
                and addresses.get(node) == down[node]
                and any(all(conn is not old for old in stale[node]) for conn in conns)
            )
        for address in back:
            self.recovered(address)

    # -- record folding -----------------------------------------------------------------------------

    def claim(self, noise: _aiokafka.AiokafkaNoise) -> bool:
        """Whether this record is about one of our brokers or watched topics (then it is folded here)."""
        if noise.kind == "topic":
            return self._claim_topic(noise)
        with self._lock:
            clients = list(self._clients)
        ours: dict[int, str] = {}
        for client in clients:
            ours.update(_aiokafka.broker_addresses(client))
        nodes = [n for n in noise.node_ids if n in ours and _same_broker(noise.address, ours[n])]
        if not nodes:
            return False
        if noise.peer_fault:
            return True  # the broker answered: already one rate-limited WARNING where it was read
        lag = self.loop_lag() if noise.timeout else 0.0
        if lag >= LOOP_LAG_THRESHOLD_S:
            for node in nodes:
                self._lag_log.warning(
                    ("loop lag", ours[node]),
                    "%s: a request to Kafka broker %s (node %d) timed out because the application blocked "
                    "its event loop for %.1f s (the loop's lag; keep blocking work off the loop, e.g. "
                    "asyncio.to_thread): the broker is not unreachable",
                    self.name,
                    ours[node],
                    node,
                    lag,
                )
            return True
        for node in nodes:
            self.failed(node, ours[node], noise.cause, attempt=noise.attempt)
        return True

    def _claim_topic(self, noise: _aiokafka.AiokafkaNoise) -> bool:
        """aiokafka repeats "Topic X not found in cluster metadata" ~100 times a second while a partition
        of a deleted topic is still assigned: one WARNING, then count, until the topic is back."""
        topic = noise.topic or ""
        with self._lock:
            if topic not in self._topics:
                return False
            if topic in self._lost_topics:
                self._lost_topics[topic] += 1
                return True
            self._lost_topics[topic] = 0
        self._wake()
        why = "this principal may not DESCRIBE it" if noise.unauthorized else "deleted?"
        self._logger.warning(
            "%s: topic %r is missing from the cluster metadata (%s); its partitions are not fetched, and "
            "repeats of this error are not logged until it is back",
            self.name,
            topic,
            why,
        )
        return True

    def loop_lag(self) -> float:
        """How long the running event loop (one that runs :meth:`run`) was blocked: the lag since its
        last tick, or a block that ended moments ago; 0 on a loop not watched."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return 0.0
        now = self._clock()
        with self._lock:
            tick = self._ticks.get(loop)
            block = self._blocks.get(loop)
        current = 0.0 if tick is None else now - tick[0] - tick[1]
        recent = block[1] if block is not None and now - block[0] <= LOOP_LAG_GRACE_S else 0.0
        return max(current, recent, 0.0)

    def _tick(self, loop: asyncio.AbstractEventLoop, interval_s: float) -> None:
        """One turn of :meth:`run` on ``loop``: a turn late by a threshold or more was a blocked loop."""
        now = self._clock()
        with self._lock:
            last = self._ticks.get(loop)
            if last is not None and now - last[0] - last[1] >= LOOP_LAG_THRESHOLD_S:
                self._blocks[loop] = (now, now - last[0] - last[1])
            self._ticks[loop] = (now, interval_s)

    def _due_reconnects(self, only: Any | None) -> tuple[list[tuple[Any, int]], float | None]:
        """(client, node id) pairs whose reconnect backoff has run out, and the seconds until the next
        one of a client of ours does (None: no such wait).

        A client of ours is asked the moment its own reconnect backoff (Java's, shared by the consumer's
        clients) lets an attempt start: the requests that otherwise ask came about once a second, so an
        attempt started up to a second after its wait had ended, and after a broker's return most of the
        members late by 2 s had waited that way (issue 27). Other clients are asked on this monitor's
        own backoff (``reconnect_backoff_s``, doubling per broker up to ``reconnect_backoff_max_s``)."""
        now = self._clock()
        due: list[tuple[Any, int]] = []
        soonest: float | None = None
        with self._lock:
            clients = [c for c in self._clients if only is None or c is only]
            for address, (at, wait) in list(self._next_reconnect.items()):
                outage = self._outages[address]
                owner = next(
                    (c for c in clients if _aiokafka.broker_addresses(c).get(outage.node_id) == address), None
                )
                if owner is None:
                    continue
                paced = _aiokafka.reconnect_wait(owner, outage.node_id)
                if paced is not None:
                    if paced > 0:  # waiting, or an attempt under way (infinite: the busy turn)
                        soonest = paced if soonest is None else min(soonest, paced)
                    else:
                        due.append((owner, outage.node_id))
                    continue
                if now < at:
                    continue
                due.append((owner, outage.node_id))
                grown = min(wait * 2, self._backoff[1])
                self._next_reconnect[address] = (now + grown, grown)
        return due, soonest

    def _told(self, key: object) -> None:
        """A consumer of the process reached a broker this one waits on (:meth:`ReconnectBackoff.alive`):
        every loop running :meth:`run` turns now and sleeps only until the shortened wait ends."""
        self._wake()

    def _known_addresses(self) -> set[str]:
        known: set[str] = set()
        for client in self._clients:
            known.update(_aiokafka.broker_addresses(client).values())
        return known

    def _restate(self) -> tuple[ConnectionState, bool]:
        """Recompute the state under the lock; (new state, whether it changed)."""
        known = self._known_addresses()
        if not self._outages:
            state = ConnectionState.CONNECTED
        elif known and not known - set(self._outages):
            state = ConnectionState.DISCONNECTED
        else:
            state = ConnectionState.DEGRADED
        changed, self._state = state is not self._state, state
        return state, changed


def _same_broker(named: str | None, broker: str) -> bool:
    """Whether an error's address is this broker's. Errors name resolved IPs while metadata may hold host
    names (Kubernetes), so a host name matches any IP with the same port."""
    if named is None or named == broker:
        return True
    host, _, port = broker.rpartition(":")
    return named.rpartition(":")[2] == port and not _is_ip(host)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def _copy(outage: BrokerOutage) -> BrokerOutage:
    return BrokerOutage(
        outage.address,
        outage.node_id,
        outage.since,
        outage.cause,
        outage.suppressed,
        outage.stale,
        outage.attempts,
    )


class _NoiseFilter(logging.Filter):
    """The one process-wide filter on aiokafka's loggers: offers each recognised record to the monitors."""

    _lock: ClassVar[threading.Lock] = threading.Lock()
    _monitors: ClassVar[list[ConnectionMonitor]] = []
    _instance: ClassVar[_NoiseFilter | None] = None

    def filter(self, record: logging.LogRecord) -> bool:
        noise = _aiokafka.classify_record(record)
        if noise is None:
            return True
        owner = _OWNER.get()
        with _NoiseFilter._lock:
            monitors = list(_NoiseFilter._monitors)
        if owner is not None and owner in monitors and owner.claim(noise):
            return False  # its own client's: not another consumer's outage
        claimed = False
        for monitor in monitors:
            if monitor is not owner:
                claimed = monitor.claim(noise) or claimed
        return not claimed

    @classmethod
    def register(cls, monitor: ConnectionMonitor) -> None:
        with cls._lock:
            cls._monitors.append(monitor)
            if cls._instance is None:
                cls._instance = cls()
                for name in _aiokafka.NOISY_LOGGERS:
                    logging.getLogger(name).addFilter(cls._instance)

    @classmethod
    def unregister(cls, monitor: ConnectionMonitor) -> None:
        with cls._lock:
            if monitor in cls._monitors:
                cls._monitors.remove(monitor)
            if not cls._monitors and cls._instance is not None:
                for name in _aiokafka.NOISY_LOGGERS:
                    logging.getLogger(name).removeFilter(cls._instance)
                cls._instance = None

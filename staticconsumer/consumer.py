"""StaticConsumer: an aiokafka-style consumer whose group membership is ours, not aiokafka's.

Records are fetched by an ``AIOKafkaConsumer`` without a group (manually assigned the partitions the
group gives us), on the application's event loop. Joining, heartbeats, commits and rebalances run on a
membership thread of their own (staticconsumer/runtime/), over the sans-IO membership machine
(staticconsumer/membership/), so an application that blocks its loop never delays a heartbeat.
aiokafka's own group coordinator is never used: it lacks the static membership behaviour this SDK exists
for (fencing, KIP-394's exact double join, instance ids on heartbeats and commits, SkipAssignment).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from aiokafka import AIOKafkaConsumer, ConsumerRecord
from aiokafka.structs import OffsetAndTimestamp
from aiokafka.structs import TopicPartition as KafkaTopicPartition

import assignors as assignor_lib
from staticconsumer import _aiokafka, _inputs
from staticconsumer._partitions import ApplicationPartitions, Partitions, RecordIteration
from staticconsumer.connection.monitor import ConnectionMonitor, ConnectionState, lag_tick_s
from staticconsumer.connection.reconnect import ReconnectBackoff
from staticconsumer.errors import (
    ConfigurationError,
    ConsumerStoppedError,
    DuplicateInstanceIdError,
    IllegalStateError,
    StaticMembershipUnsupportedError,
)
from staticconsumer.listener import ConsumerRebalanceListener
from staticconsumer.membership import OffsetAndMetadata, TopicPartition
from staticconsumer.runtime import Subscription
from staticconsumer.settings import Settings, rebalance_protocol_of, translate_assignment_strategy
from staticconsumer.telemetry import (
    NO_PROCESSING,
    DeferredRecordTracer,
    NoProcessing,
    caller_context,
    record_tracer,
    telemetry_observers,
    uninstrumented,
)

if TYPE_CHECKING:
    from staticconsumer._partitions import Records
    from staticconsumer.eventlog import EventLog
    from staticconsumer.membership import MembershipObserver
    from staticconsumer.protocol import Message
    from staticconsumer.runtime.thread import MembershipThread
    from staticconsumer.telemetry.records import ProcessingBlock, RecordTracer

log = logging.getLogger("staticconsumer")

FETCHER_OPTIONS = ("key_deserializer", "value_deserializer", "consumer_timeout_ms")
"""aiokafka consumer options that are not settings: they configure how records are fetched and decoded
(callables and a polling detail), so they go to the fetcher as given, never into Settings or the env."""

CONSTRUCTOR_OPTIONS = ("request_hook", "observers", "telemetry", "api_version_caps", *FETCHER_OPTIONS)
"""Options of the constructor that are not settings (objects and callables, never in the environment):
``from_env`` takes them as keywords too and hands them to the constructor."""

POLL_TICK = 0.01
"""Seconds between two rounds of the per-poll work (the liveness report, the auto-commit check, the
record tracer's look for an SDK) while ``getone``/``async for`` hand over buffered records: each is
cheap, but not cheap enough for every record. Liveness is reported at most every 50 ms anyway. A loop
body that never awaits does it once a segment (``ApplicationPartitions.handing_over``)."""

AIOKAFKA_CONSUMER_TIMEOUT_MS = 200
"""aiokafka's default ``consumer_timeout_ms``: how long its fetch routine waits for an event before it
looks again."""


def consumer_timeout_ms(fetch_max_wait_ms: int) -> int:
    """The fetcher's ``consumer_timeout_ms`` unless given: twice the broker's long poll (1 s by default).

    aiokafka's fetch routine wakes on every event that can make a fetch due (a fetch answered, records
    consumed, a seek or offset reset, an assignment, a resume, a metadata refresh it asked for, the end
    of a buffered partition's backoff); ``consumer_timeout_ms`` is only its look-again when none came.
    At aiokafka's 200 ms, an idle consumer's routine also woke twice during each 500 ms long poll, for
    nothing: 4 of its 6 wake-ups a second (issue 27: idle CPU). Below a long poll of 100 ms it stays
    aiokafka's."""
    return max(AIOKAFKA_CONSUMER_TIMEOUT_MS, 2 * fetch_max_wait_ms)


class _Changed(asyncio.Event):
    """The ownership changed (an assignment, a revoke, stop): an Event that also calls the callbacks
    :meth:`call_on_set` registers, so a fetch is interrupted without a task of its own per getmany (an
    idle consumer polls about once a second; issue 27: idle CPU)."""

    def __init__(self) -> None:
        super().__init__()
        self._callbacks: list[Callable[[], None]] = []

    def set(self) -> None:
        super().set()
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def call_on_set(self, callback: Callable[[], None]) -> None:
        """``callback()`` at the next set() (once), unless :meth:`uncall` first."""
        self._callbacks.append(callback)

    def uncall(self, callback: Callable[[], None]) -> None:
        with contextlib.suppress(ValueError):
            self._callbacks.remove(callback)


class StaticConsumer:
    """An asyncio Kafka consumer with static group membership (KIP-345/394/814).

    ``StaticConsumer("orders", bootstrap_servers="k:9092", group_id="billing",
    group_instance_id="billing-0")``; any other setting by its field name in
    ``staticconsumer.settings.Settings``, or a ready ``settings=``. ``pattern=`` subscribes by regex;
    with neither topics nor pattern, call ``subscribe()`` (before or after ``start()``, as in aiokafka).
    ``key_deserializer``, ``value_deserializer`` and ``consumer_timeout_ms`` are aiokafka's, and so are
    its security keywords (``ssl_context``, ``sasl_plain_username``, ``sasl_oauth_token_provider``...):
    settings too, used by every connection of the consumer (docs/configuration.md, security section).

    ``request_hook(api_name, version, message)`` sees every group request just before it is sent
    (diagnostics and tests; it runs on the membership thread and must not block). ``observers`` see
    every membership event and the actions it caused (telemetry and event logs plug in here; see
    ``staticconsumer.membership.MembershipObserver``). ``api_version_caps`` (e.g. ``{"JoinGroup": 8}``)
    caps a group API's version, to behave like an older client or to see what brokers answer older
    clients.
    """

    _running_identities: ClassVar[set[tuple[str, str]]] = set()

    def __new__(cls, *topics: str, settings: Settings | None = None, **options: Any) -> StaticConsumer:
        """``group_id=None`` (or group-less ``settings``) builds aiokafka's consumer without a group,
        ``staticconsumer._groupless.GrouplessConsumer``; its module loads only then."""
        if cls is StaticConsumer and _without_group(settings, options):
            from staticconsumer._groupless import GrouplessConsumer

            return super().__new__(GrouplessConsumer)
        return super().__new__(cls)

    def __init__(
        self,
        *topics: str,
        pattern: str | None = None,
        settings: Settings | None = None,
        listener: ConsumerRebalanceListener | None = None,
        request_hook: Callable[[str, int, Message], None] | None = None,
        observers: Sequence[MembershipObserver] = (),
        telemetry: bool | MembershipObserver = True,
        api_version_caps: Mapping[str, int] | None = None,
        **options: Any,
    ) -> None:
        self.settings, fetcher_options = _settings_from(settings, options)
        if not self.settings.group_id:
            raise ConfigurationError("group_id is required: StaticConsumer always joins a consumer group")
        if topics and pattern:
            raise ConfigurationError("subscribe to topics or to a pattern, not both")
        self._fetcher_options = _fetcher_options(fetcher_options)
        names = _inputs.topics(topics) if topics else frozenset()
        regex = _inputs.pattern(pattern) if pattern is not None else None
        self._subscription = Subscription(
            names, regex, exclude_internal=self.settings.exclude_internal_topics
        )
        self._wanted: tuple[frozenset[str], str | None] = (names, regex)
        self._request_hook = request_hook
        self.event_log = _event_log(self.settings)
        """The membership event log when the settings enable one (its ``dropped`` counts lost records)."""
        self._observers = (
            tuple(observers)
            + ((self.event_log,) if self.event_log is not None else ())
            + telemetry_observers(telemetry, client_id=self.settings.effective_client_id)
        )
        self._records = self._record_tracer(telemetry)
        self._version_caps = dict(api_version_caps or {})
        self._assignors = [assignor_lib.create(name) for name in self.settings.assignors]
        self._rebalance_protocol = rebalance_protocol_of(self._assignors)
        self._changed = _Changed()
        self._partitions = ApplicationPartitions(
            ConsumerRebalanceListener() if listener is None else _inputs.listener(listener), self._changed.set
        )
        self._partitions.topics = names
        self._fetcher: AIOKafkaConsumer | None = None
        self._monitor: ConnectionMonitor | None = None
        self._monitor_task: asyncio.Task[None] | None = None
        self._warm_task: asyncio.Task[None] | None = None
        """Connects the fetcher to its topics' leaders while the group is joined (``start()``)."""
        self._membership: MembershipThread | None = None
        self._identity: tuple[str, str] | None = None
        self._stopping = False
        self._last_auto_commit = time.monotonic()
        self._auto_committed: dict[TopicPartition, OffsetAndMetadata] = {}
        """What the last auto-commit committed: the same offsets again are not sent (an idle consumer's
        commit every 5 s crossed to the membership thread and back for nothing; issue 27: idle CPU).
        Kafka keeps a live group's offsets however long ago they were committed (KIP-211)."""
        self._auto_commit_task: asyncio.Task[None] | None = None

    def _record_tracer(
        self, telemetry: bool | MembershipObserver
    ) -> RecordTracer | DeferredRecordTracer | None:
        """Spans and metrics of records (None with ``telemetry=False``); OpenTelemetry is imported
        when the process uses it, not before (``telemetry.record_tracer``)."""
        s = self.settings
        return record_tracer(
            telemetry,
            group_id=s.group_id,
            client_id=s.effective_client_id,
            group_instance_id=s.group_instance_id,
            bootstrap_servers=s.bootstrap_servers,
            key_max_length=s.telemetry_key_max_length,
            lag=self._partition_lag,
        )

    @classmethod
    def from_env(
        cls,
        *topics: str,
        prefix: str = "KAFKA_",
        environ: Mapping[str, str] | None = None,
        pattern: str | None = None,
        listener: ConsumerRebalanceListener | None = None,
        consumer_options: Mapping[str, Any] | None = None,
        **overrides: Any,
    ) -> StaticConsumer:
        """Settings from ``<prefix>*`` environment variables; keyword arguments (setting fields) win.

        The constructor's options that are not settings (``telemetry``, ``observers``, ``request_hook``,
        ``api_version_caps``, ``key_deserializer``, ``value_deserializer``, ``consumer_timeout_ms``)
        are keywords here too, as in the constructor; ``consumer_options`` (a mapping of them) still
        works. Errors name the environment variable, or the keyword argument that was given.
        """
        options = dict(consumer_options or {})
        for name in CONSTRUCTOR_OPTIONS:
            if name in overrides:
                if name in options:
                    raise TypeError(f"{name} is given twice: as a keyword argument and in consumer_options")
                options[name] = overrides.pop(name)
        settings = Settings.from_env(environ, prefix, **overrides)
        return cls(*topics, pattern=pattern, settings=settings, listener=listener, **options)

    # -- lifecycle ------------------------------------------------------------------------------

    async def __aenter__(self) -> StaticConsumer:
        await self.start()
        return self

    async def __aexit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        if self._records is not None:  # the exception that left the loop body, if any, is the record's
            self._records.close(exc)
        await self.stop()

    async def start(self) -> None:
        """Connect, check the broker can carry static membership and that the principal may consume,
        join, and (with a subscription) return once the first assignment is in, as aiokafka's start().

        The membership thread bootstraps first: every bootstrap server probed at once, a typed error
        that says why within request.timeout.ms (nothing listening, a silent server, refused
        credentials, a missing ACL, a missing topic with fail_on_missing_topics); then the fetcher
        bootstraps from the server that answered, taking the metadata its probe read. Either one's
        failure is raised here, and so is what ends the membership before the first assignment
        (fenced, a session timeout the brokers refuse, ...).
        """
        s = self.settings
        if s.group_instance_id is not None:
            identity = (s.group_id, s.group_instance_id)
            if identity in StaticConsumer._running_identities:
                raise DuplicateInstanceIdError(
                    f"another StaticConsumer in this process already runs as group.instance.id "
                    f"{s.group_instance_id!r} in group {s.group_id!r}; the two would fence each other. "
                    f"Give each consumer its own id (Settings.for_worker(index))"
                )
            StaticConsumer._running_identities.add(identity)
            self._identity = identity
        self._monitor = ConnectionMonitor(f"group {s.group_id!r}")
        with self._monitor.owning():  # the fetcher's tasks, made here, log failures for this consumer only
            await self._start(s)

    async def _start(self, s: Settings) -> None:
        """start() once the monitor exists, in its :meth:`~ConnectionMonitor.owning` context."""
        assert self._monitor is not None
        # Loaded here, not at import: a consumer's construction does not need it (issue 26); what
        # it needs after the bootstrap probe loads while the probe waits (MembershipThread._preload).
        from staticconsumer.runtime.thread import MembershipThread

        self._reconnect_backoff = ReconnectBackoff(s.reconnect_backoff_ms, s.reconnect_backoff_max_ms)
        self._membership = MembershipThread(
            monitor=self._monitor,
            reconnect_backoff=self._reconnect_backoff,
            settings=s,
            owner=self._partitions,
            assignors=self._assignors,
            subscription=self._subscription,
            rebalance_protocol=self._rebalance_protocol,
            observers=self._observers,
            on_request=self._forward_request,
            version_caps=self._version_caps,
            closers=(self.event_log.aclose,) if self.event_log is not None else (),
        )
        self._fetcher = fetcher = _aiokafka.new_fetcher(
            max_response_bytes=s.response_limits()[1],
            reconnect_backoff=self._reconnect_backoff,
            subclass=uninstrumented,
            **self._fetcher_kwargs(),
        )
        membership = self._membership
        ready = asyncio.ensure_future(membership.start())
        fetcher_started: asyncio.Future[None] | None = None
        try:
            try:  # the fetcher bootstraps while the membership checks access
                address, answer = await membership.bootstrapped()
                fetcher_started = asyncio.ensure_future(
                    _aiokafka.start_consumer_from(fetcher, address, answer)
                )
                await ready
                await fetcher_started
            finally:
                for pending in (ready, fetcher_started):
                    if pending is None:
                        continue
                    if not pending.done():
                        pending.cancel()
                    with contextlib.suppress(BaseException):
                        await pending  # settles it: no "exception was never retrieved"
            client = _aiokafka.fetcher_client(fetcher)
            self._monitor.watch(client)
            self._monitor_task = asyncio.create_task(
                self._monitor.run(client, idle_interval_s=lag_tick_s(s.request_timeout_ms))
            )
            await self._partitions.attach(fetcher)
            if self._subscription.pattern is None:  # a pattern's topics are known only once matched
                self._warm_task = asyncio.create_task(
                    _aiokafka.warm_fetcher(fetcher, self._subscription.names)
                )
            if not self._subscription.is_empty:
                await self._first_assignment(membership)
        except BaseException:
            await self._shut_down(leave_group=False)
            raise

    async def _first_assignment(self, membership: MembershipThread) -> None:
        """Wait for the first completed join (its assignment may be empty) and its assigned callback, as
        aiokafka's start() does, so assignment(), position() and seek() work once start() returns. What
        ends the membership meanwhile (fenced, unsupported, refused) is raised."""
        ended = asyncio.ensure_future(membership.ended())
        try:
            while self._partitions.assignments == 0:
                self._changed.clear()
                fatal = self._partitions.snapshot.fatal_error
                if fatal is not None:
                    raise fatal
                if self._partitions.assignments:
                    break
                if ended.done():
                    raise ended.result() or ConsumerStoppedError(
                        "the consumer's membership ended before its first assignment"
                    )
                changed = asyncio.ensure_future(self._changed.wait())
                try:
                    await asyncio.wait({changed, ended}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    changed.cancel()
        finally:
            ended.cancel()

    def _forward_request(self, api: str, version: int, message: Message) -> None:
        """The request hook as set now (tests and diagnostics may swap it on a running consumer)."""
        hook = self._request_hook
        if hook is not None:
            hook(api, version, message)

    def _fetcher_kwargs(self) -> dict[str, Any]:
        s = self.settings
        kwargs = s.aiokafka_client_kwargs()
        kwargs.update(
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset=s.auto_offset_reset,
            isolation_level=s.isolation_level,
            fetch_min_bytes=s.fetch_min_bytes,
            fetch_max_bytes=s.fetch_max_bytes,
            max_partition_fetch_bytes=s.max_partition_fetch_bytes,
            fetch_max_wait_ms=s.fetch_max_wait_ms,
            max_poll_records=s.max_poll_records,
            check_crcs=s.check_crcs,
            **self._fetcher_options,
        )
        kwargs.setdefault("consumer_timeout_ms", consumer_timeout_ms(s.fetch_max_wait_ms))
        return kwargs

    async def stop(self, leave_group: bool = False) -> None:
        """Commit (with auto-commit) and stop. A static member sends no LeaveGroup unless ``leave_group``.

        ``leave_group=True`` names this instance id in a LeaveGroup so the group rebalances at once:
        use it for scale-down, when this instance will not come back.
        """
        if self._records is not None:  # in ``finally:`` after a loop, the exception leaving it
            self._records.close(sys.exc_info()[1])
        if self._stopping:
            return
        self._stopping = True
        self._partitions.end_tick()
        if self._auto_commit_task is not None:
            with contextlib.suppress(Exception):
                await self._auto_commit_task
        await self._shut_down(leave_group)

    async def _shut_down(self, leave_group: bool) -> None:
        membership = self._membership  # kept while stopping: the revoke callback may still commit
        if self._monitor is not None:  # a broker back since the monitor's last tick is reported as back
            self._monitor.check_recovery()
        try:
            if membership is not None and membership.started:
                await membership.stop(leave_group, self.settings.request_timeout_ms / 1000)
            elif self.event_log is not None:  # the membership thread closes it when it ran
                await self.event_log.aclose()
        finally:
            self._membership = None
            self._partitions.stop_fetching(None)
            monitor, task = self._monitor, self._monitor_task
            self._monitor, self._monitor_task = None, None
            for background in (task, self._warm_task):
                if background is not None:
                    background.cancel()
                    with contextlib.suppress(BaseException):
                        await background
            self._warm_task = None
            if self._fetcher is not None:
                with contextlib.suppress(Exception):
                    await self._fetcher.stop()
            if monitor is not None:  # after the clients closed: their last failures stay folded
                monitor.close()
            if self._identity is not None:
                StaticConsumer._running_identities.discard(self._identity)
                self._identity = None
            self._changed.set()

    # -- read-only state ------------------------------------------------------------------------

    @property
    def member_id(self) -> str:
        return self._partitions.snapshot.member_id

    @property
    def generation(self) -> int:
        return self._partitions.snapshot.generation

    @property
    def is_leader(self) -> bool:
        return self._partitions.snapshot.is_leader

    @property
    def rebalance_protocol(self) -> str:
        """How this member moves partitions in a rebalance: ``cooperative`` when every configured assignor
        supports it (``cooperative-sticky``), else ``eager``; fixed when the consumer is built."""
        return self._rebalance_protocol.value

    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions this member currently owns and fetches."""
        return self._partitions.fetching

    @property
    def connection_state(self) -> ConnectionState:
        """How much of the cluster this consumer reaches: ``CONNECTED``, ``DEGRADED`` (some brokers
        unreachable) or ``DISCONNECTED`` (none, or not running). Each change is logged once, as a WARNING."""
        monitor = self._monitor
        return ConnectionState.DISCONNECTED if monitor is None else monitor.state

    @property
    def missing_topics(self) -> frozenset[str]:
        """Subscribed topics that did not exist at the last check (a WARNING repeats while they are
        missing; ``fail_on_missing_topics`` makes them fatal instead)."""
        membership = self._membership
        return frozenset() if membership is None else membership.missing_topics

    # -- records --------------------------------------------------------------------------------

    async def getmany(
        self, *partitions: TopicPartition, timeout_ms: int = 0, max_records: int | None = None
    ) -> dict[TopicPartition, list[ConsumerRecord[Any, Any]]]:
        """Records from owned partitions; waits up to ``timeout_ms`` (rebalances included)."""
        records = self._records
        started = records.requested() if records is not None else 0
        self._poll_started()
        wanted = frozenset(partitions)
        result = self._partitions.take(wanted, max_records)
        if not result:
            try:
                result = await self._fetch(wanted, timeout_ms, max_records)
            except ConsumerStoppedError:
                if not self._stopping:
                    raise
                return {}  # stop() ended the wait: aiokafka's getmany returns nothing then
        self._partitions.returned(result)
        if records is not None:
            records.polled(result, started)
        return result

    async def getone(self, *partitions: TopicPartition) -> ConsumerRecord[Any, Any]:
        """The next record from owned partitions, waiting as long as it takes.

        Served from a local buffer filled a whole fetch at a time, so iterating record by record costs
        about what getmany does; buffered records of a partition that is revoked or sought are dropped,
        never returned, and so never committed past.
        """
        if not partitions:  # the per-record fast path, as in __anext__
            record = self._partitions.take_one()
            if record is not None:
                records = self._records
                if records is not None and records.per_record:
                    records.delivered(record)
                return record
        return await self._getone(frozenset(partitions))

    async def _getone(self, wanted: Partitions) -> ConsumerRecord[Any, Any]:
        records = self._records
        if records is not None:
            records.requested()
        while True:
            self._poll_started()
            if wanted:
                taken = self._partitions.take(wanted, 1)
                self._partitions.returned(taken)
                record = next(iter(taken.values()))[0] if taken else None
            else:
                record = self._partitions.take_one()
            if record is not None:
                if records is not None:
                    records.delivered(record)
                return record
            # What the fetcher holds (a poll's worth at most) is taken at once and held back (no read
            # ahead while buffered, as aiokafka's getone): a seek is served by one fetch. Taken without
            # suspending when it is there already (nothing can read ahead before ``buffer`` pauses the
            # partitions: one fetcher call a refill, not two); else one record is waited for, so that
            # aiokafka still holds the rest and sends no read ahead before the pause, and the rest is
            # taken after it. Capped: with more records alive at once than the garbage collector's
            # first threshold (700), every refill set off collections (a tenth of ``async for``'s CPU
            # with two polls' worth).
            limit = self.settings.max_poll_records or 500
            rest = self._fetched_now(wanted, limit) if self._fetcher is not None else {}
            if not rest:
                first = await self._fetch(wanted, 1000, 1)
                rest = self._fetched_now(wanted, limit)
                self._partitions.buffer(first)
            self._partitions.buffer(rest)

    def _poll_started(self) -> None:
        membership = self._raise_if_unusable()
        membership.poll_called()
        now = time.monotonic()
        # Records already buffered are handed over without this work until the next tick. A fatal
        # error, a revoke or stop() empties the buffers or ends the tick first, so none is missed.
        self._partitions.tick(now, POLL_TICK)
        self._maybe_auto_commit(now)

    async def _fetch(self, wanted: Partitions, timeout_ms: int, max_records: int | None) -> Records:
        """Fetch from owned partitions, waiting through rebalances; nothing is marked returned here."""
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            self._raise_if_unusable()
            fetching = self._partitions.fetching
            owned = fetching if not wanted else fetching & wanted
            if owned:
                # Records already fetched are taken without suspending: waiting on the fetcher (two tasks
                # and an asyncio.wait) costs several loop iterations a poll, a tenth of getmany's
                # throughput. ``owned`` goes to the fetcher as it is: our TopicPartition hashes and
                # compares as aiokafka's, and the fetcher only asks ``tp in owned`` of each partition
                # it holds records of (a list of aiokafka's built for every poll, scanned once per such
                # partition, was most of getmany's cost beyond aiokafka's own, issue 26). Nothing can
                # change hands in between: no suspension.
                ready = self._ready_in(owned, max_records)
                if ready:
                    return ready
            remaining = max(0.0, deadline - time.monotonic())
            if not owned:
                if remaining <= 0:
                    return {}
                await self._wait_for_change(remaining)
                continue
            holding = self._partitions.holding(owned)
            fetch_from = [KafkaTopicPartition(tp.topic, tp.partition) for tp in owned]
            records = await self._interruptible_fetch(fetch_from, remaining, max_records)
            self._raise_if_unusable()
            if records is None:
                if time.monotonic() >= deadline:
                    return {}
                continue
            # Records of a partition still held as it was when the fetch began are delivered, whatever
            # the generation (a cooperative member keeps fetching through rebalances; dropping them
            # would skip them, as the fetcher has moved past them). Those of a partition revoked, lost
            # or assigned anew meanwhile are dropped: they are read again from the committed offset.
            result = {}
            for tp, batch in records.items():
                ours = TopicPartition(tp.topic, tp.partition)
                token = holding.get(ours)
                if batch and token is not None and self._partitions.still_held(ours, token):
                    result[ours] = batch
            if result or time.monotonic() >= deadline:
                return result

    def _fetched_now(self, wanted: Partitions, limit: int) -> Records:
        """What the fetcher has already fetched from owned partitions, ``limit`` records at most,
        without waiting (so nothing can read ahead between this and ``buffer``); records of partitions
        no longer fetching are dropped."""
        assert self._fetcher is not None
        fetching = self._partitions.fetching
        owned = fetching if not wanted else fetching & wanted
        if not owned or limit <= 0:
            return {}
        return self._ready_in(owned, limit)

    def _ready_in(self, owned: Partitions, max_records: int | None) -> Records:
        """The records the fetcher already holds for ``owned`` (``max_records`` at most), taken without
        suspending; those of partitions no longer fetching are dropped (read again from the committed
        offset by their next owner)."""
        ready = _aiokafka.fetched_now(self._fetcher, owned, max_records)
        return self._partitions.still_fetching(ready) if ready else {}

    async def _interruptible_fetch(
        self, owned: list[KafkaTopicPartition], seconds: float, max_records: int | None
    ) -> dict[KafkaTopicPartition, list[ConsumerRecord[Any, Any]]] | None:
        """One fetch from ``owned``, or None when the ownership changed while it waited.

        The fetch runs in the caller's task; a change cancels that task's wait, as ``asyncio.timeout``
        does, and the cancellation is taken back here (``uncancel``), so a cancellation from elsewhere
        still propagates. A task and an ``asyncio.wait`` per fetch were three loop callbacks per idle
        poll more than aiokafka's getmany (issue 27: idle CPU)."""
        assert self._fetcher is not None
        self._changed.clear()
        task = asyncio.current_task()
        assert task is not None
        interrupted = False

        def interrupt() -> None:
            nonlocal interrupted
            if asyncio.current_task() is task:
                return  # set() within the fetch itself: it returns what it has, as it would have anyway
            interrupted = True
            task.cancel()

        self._changed.call_on_set(interrupt)
        try:
            result: dict[KafkaTopicPartition, list[ConsumerRecord[Any, Any]]] = await self._fetcher.getmany(
                *owned, timeout_ms=int(seconds * 1000), max_records=max_records
            )
        except asyncio.CancelledError:
            if interrupted and task.uncancel() == 0:
                return None
            raise
        finally:
            self._changed.uncall(interrupt)
        if interrupted:  # the fetcher swallowed the cancellation and returned: its records stand
            task.uncancel()
        return result

    async def _wait_for_change(self, seconds: float) -> None:
        self._changed.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), seconds)

    def __aiter__(self) -> AsyncIterator[ConsumerRecord[Any, Any]]:
        if self._stopping:  # as aiokafka: a loop that iterates again after stop() must not spin forever
            raise ConsumerStoppedError("the consumer was stopped: iterate a consumer that is running")
        # Records at hand come straight from the buffer; the loop object also notices the loop being
        # left, so the record's span ends there.
        return RecordIteration(self._partitions, self.__anext__, self._records)

    async def __anext__(self) -> ConsumerRecord[Any, Any]:
        record = self._partitions.take_one()  # the per-record fast path (see _poll_started)
        if record is not None:
            records = self._records
            if records is not None and records.per_record:
                records.delivered(record)
            return record
        if self._stopping and self._partitions.snapshot.fatal_error is None:
            self._loop_ended()
            raise StopAsyncIteration
        try:
            return await self._getone(_ALL)
        except ConsumerStoppedError:
            self._loop_ended()
            raise StopAsyncIteration from None

    def _loop_ended(self) -> None:
        if self._records is not None:
            self._records.end()

    def processing(self, record: ConsumerRecord[Any, Any]) -> ProcessingBlock | NoProcessing:
        """``with consumer.processing(record):`` runs the block inside the record's ``process`` span
        (its producer's trace) and records an exception leaving the block on it.

        For records from ``getmany``; inside ``async for`` it takes over the span the loop opened for
        the record, so an exception is recorded whatever catches it later. Costs nothing measurable
        until an OpenTelemetry SDK is installed (see docs/telemetry.md).
        """
        if self._records is None:
            return NO_PROCESSING
        return self._records.processing(record)

    def _partition_lag(self) -> dict[TopicPartition, int]:
        """Per partition: the end offset of the latest fetch (the high watermark, or the last stable
        offset with read_committed) minus the consumed position. Runs on the SDK's exporter thread."""
        fetcher = self._fetcher
        if fetcher is None:
            return {}
        end = (
            fetcher.last_stable_offset
            if self.settings.isolation_level == "read_committed"
            else fetcher.highwater
        )
        from staticconsumer.telemetry.instruments import partition_lag  # only an SDK asks

        return partition_lag(
            self._partitions.fetching,
            self._partitions.consumed_position,
            lambda tp: end(KafkaTopicPartition(tp.topic, tp.partition)),
        )

    # -- offsets --------------------------------------------------------------------------------

    async def commit(self, offsets: Mapping[Any, Any] | None = None) -> None:
        """Commit ``offsets`` (the next offset to read per partition), or the positions of every record
        returned so far.

        Each value is an ``int``, an ``OffsetAndMetadata`` (aiokafka's or ours) or an ``(offset,
        metadata)`` tuple, as in aiokafka. Bad input is a TypeError or ValueError naming the entry,
        raised before anything is sent. An empty mapping sends nothing (as in aiokafka and Java), but a
        fenced, failed or stopped consumer still raises why it cannot commit.
        """
        to_commit = None if offsets is None else _inputs.commit_offsets(offsets)
        caller = caller_context()  # the commit span's parent: the span current here, if any
        fatal = self._partitions.snapshot.fatal_error
        if fatal is not None:
            raise fatal
        membership = self._membership  # still there while stop() runs the revoke callback
        if membership is None:
            raise ConsumerStoppedError("the consumer is not running: call start() first, or it was stopped")
        if to_commit is None:
            to_commit = self._partitions.positions()
            if not to_commit:
                if self._nothing_subscribed():
                    raise IllegalStateError("commit(): this consumer is not subscribed to any topics")
                return
        if not to_commit:
            return
        self._auto_committed = {}  # the group's offsets may differ from the last auto-commit's now
        await membership.commit(to_commit, caller=caller)

    def _maybe_auto_commit(self, now: float) -> None:
        membership = self._membership
        if not self.settings.enable_auto_commit or membership is None:
            return
        if now - self._last_auto_commit < self.settings.auto_commit_interval_ms / 1000:
            return
        if self._auto_commit_task is not None and not self._auto_commit_task.done():
            return
        self._last_auto_commit = now
        offsets = self._partitions.positions()
        if offsets and offsets != self._auto_committed:
            self._auto_commit_task = asyncio.create_task(self._auto_commit(membership, offsets))

    async def _auto_commit(
        self, membership: MembershipThread, offsets: dict[TopicPartition, OffsetAndMetadata]
    ) -> None:
        try:
            await membership.commit(offsets)
        except Exception as error:
            self._auto_committed = {}
            log.info("auto-commit of %d offsets did not complete: %s", len(offsets), error)
        else:
            self._auto_committed = offsets

    async def committed(self, partition: TopicPartition) -> int | None:
        """The group's committed offset of ``partition`` (any partition, owned or not), None when the
        group never committed one. Read from the coordinator, within request.timeout.ms."""
        tp = _inputs.partition(partition, "partition")
        membership = self._raise_if_unusable()
        offset = (await membership.committed(frozenset({tp}))).get(tp, -1)
        return None if offset < 0 else offset

    async def position(self, partition: TopicPartition) -> int:
        """The offset of the next record ``getmany``/``getone`` will return from ``partition`` (owned):
        after the last record returned, else the committed offset, else where the reset policy puts it."""
        (tp,) = self._owned((_inputs.partition(partition, "partition"),), "position")
        return await self._partitions.position(tp)

    def highwater(self, partition: TopicPartition) -> int | None:
        """The partition's high watermark (offset of the next record produced) as of the last fetch
        from it; None before the first fetch."""
        return self._fetch_state(partition, "highwater", AIOKafkaConsumer.highwater)

    def last_stable_offset(self, partition: TopicPartition) -> int | None:
        """The last stable offset as of the last fetch (read_committed; -1 with read_uncommitted)."""
        return self._fetch_state(partition, "last_stable_offset", AIOKafkaConsumer.last_stable_offset)

    def last_poll_timestamp(self, partition: TopicPartition) -> int | None:
        """When (ms since the epoch) ``highwater`` and ``last_stable_offset`` were last updated."""
        return self._fetch_state(partition, "last_poll_timestamp", AIOKafkaConsumer.last_poll_timestamp)

    def _fetch_state(
        self, partition: TopicPartition, call: str, read: Callable[[AIOKafkaConsumer, Any], int | None]
    ) -> int | None:
        (tp,) = self._owned((_inputs.partition(partition, "partition"),), call)
        fetched = self._partitions.fetch_state(tp)
        if fetched is None or self._fetcher is None:
            return None
        return read(self._fetcher, fetched)

    async def beginning_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """The first offset of each partition (any partition); positions are not changed."""
        wanted = _inputs.partitions(partitions, "partitions")
        answer = await self._require_fetcher().beginning_offsets([_kafka(tp) for tp in wanted])
        return {TopicPartition(tp.topic, tp.partition): offset for tp, offset in answer.items()}

    async def end_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """The offset of the next record to be produced to each partition (any partition)."""
        wanted = _inputs.partitions(partitions, "partitions")
        answer = await self._require_fetcher().end_offsets([_kafka(tp) for tp in wanted])
        return {TopicPartition(tp.topic, tp.partition): offset for tp, offset in answer.items()}

    async def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """The earliest offset whose timestamp is at least the given one (ms since the epoch), per
        partition (any partition); None where there is no such record. ``timestamps`` is not modified."""
        wanted = _inputs.timestamps(timestamps)
        answer = await self._require_fetcher().offsets_for_times(
            {_kafka(tp): ms for tp, ms in wanted.items()}
        )
        return {TopicPartition(tp.topic, tp.partition): found for tp, found in answer.items()}

    def _require_fetcher(self) -> AIOKafkaConsumer:
        if self._fetcher is None or self._membership is None or self._stopping:
            raise ConsumerStoppedError("the consumer is not running: call start() first, or it was stopped")
        return self._fetcher

    def _owned(self, partitions: tuple[TopicPartition, ...], call: str) -> tuple[TopicPartition, ...]:
        """``partitions`` if this member owns them all (every owned one when empty), else
        IllegalStateError naming the others; before start() nothing is owned yet."""
        if self._membership is None or self._fetcher is None:
            listed = ", ".join(f"{tp.topic}[{tp.partition}]" for tp in partitions) or "partitions"
            raise IllegalStateError(
                f"{call}({listed}): this consumer is not running, so it owns no partitions. Call start() "
                "first; partitions come from the group (seek in on_partitions_assigned, for example)"
            )
        return self._partitions.require(partitions, call)

    def seek(self, partition: TopicPartition, offset: int) -> None:
        """Read ``partition`` (owned) from ``offset`` on: next getmany/getone and commits go from there."""
        tp = _inputs.partition(partition, "partition")
        try:
            where = _inputs.offset(offset, "offset")
        except TypeError as error:  # aiokafka: ValueError for any offset that is not an int >= 0
            raise ValueError(str(error)) from None
        self._owned((tp,), "seek")
        self._partitions.sought(tp, where)
        if self._partitions.fetch_state(tp) is not None:
            self._require_fetcher().seek(_kafka(tp), where)

    async def seek_to_beginning(self, *partitions: TopicPartition) -> bool:
        """Read from the oldest available offset of each partition (every owned one when none given)."""
        return await self._seek_to(partitions, "seek_to_beginning", "earliest")

    async def seek_to_end(self, *partitions: TopicPartition) -> bool:
        """Read only records produced from now on (every owned partition when none given)."""
        return await self._seek_to(partitions, "seek_to_end", "latest")

    async def _seek_to(self, partitions: tuple[TopicPartition, ...], call: str, where: str) -> bool:
        wanted = self._owned(_inputs.partitions(partitions, "partitions"), call)
        self._partitions.reset(wanted, where)
        fetched = [ktp for tp in wanted if (ktp := self._partitions.fetch_state(tp)) is not None]
        if not fetched:
            return True  # not fetched yet: done when the fetcher starts (see ApplicationPartitions.attach)
        fetcher = self._require_fetcher()
        seek = fetcher.seek_to_beginning if where == "earliest" else fetcher.seek_to_end
        return bool(await seek(*fetched))

    async def seek_to_committed(self, *partitions: TopicPartition) -> dict[TopicPartition, int | None]:
        """Read each partition (every owned one when none given) from the group's committed offset;
        returns those offsets (None: nothing committed, the position is left as it is)."""
        wanted = self._owned(_inputs.partitions(partitions, "partitions"), "seek_to_committed")
        membership = self._raise_if_unusable()
        committed = await membership.committed(frozenset(wanted))
        result: dict[TopicPartition, int | None] = {}
        for tp in wanted:
            offset = committed.get(tp, -1)
            result[tp] = None if offset < 0 else offset
            if offset >= 0 and self._partitions.holds(tp):  # it may have been revoked meanwhile
                self.seek(tp, offset)
        return result

    def pause(self, *partitions: TopicPartition) -> None:
        """Stop returning records of these owned partitions until ``resume`` (no rebalance)."""
        wanted = self._owned(_inputs.partitions(partitions, "partitions"), "pause") if partitions else ()
        self._partitions.pause(wanted)
        fetched = [ktp for tp in wanted if (ktp := self._partitions.fetch_state(tp)) is not None]
        if fetched:
            self._require_fetcher().pause(*fetched)

    def resume(self, *partitions: TopicPartition) -> None:
        """Return records of these paused partitions again."""
        wanted = self._owned(_inputs.partitions(partitions, "partitions"), "resume") if partitions else ()
        self._partitions.resume(wanted)
        fetched = [ktp for tp in wanted if (ktp := self._partitions.fetch_state(tp)) is not None]
        if fetched:
            self._require_fetcher().resume(*fetched)

    def paused(self) -> frozenset[TopicPartition]:
        """The partitions paused with ``pause`` (and still owned)."""
        return self._partitions.paused()

    # -- subscription and metadata ----------------------------------------------------------------

    def subscribe(
        self, topics: Sequence[str] | frozenset[str] = (), pattern: str | None = None, listener: Any = None
    ) -> None:
        """Subscribe to ``topics`` or to a regex ``pattern`` instead of what was subscribed before, and
        make ``listener`` (None: none) the rebalance listener, as aiokafka's ``subscribe`` does.

        Before ``start()`` this is what the consumer will join with. On a running consumer the member
        rejoins with the new subscription (the rebalance it needs); partitions of topics no longer
        subscribed stop being fetched at once and are revoked by that rebalance.
        """
        if topics and pattern:
            raise TypeError("subscribe() takes topics or a pattern, not both")
        if not topics and not pattern:
            raise TypeError("subscribe() needs topics or a pattern; unsubscribe() drops the subscription")
        names = _inputs.topics(topics) if topics else frozenset()
        regex = _inputs.pattern(pattern) if pattern else None
        chosen = ConsumerRebalanceListener() if listener is None else _inputs.listener(listener)
        self._partitions.listener = chosen
        described = f"pattern {regex!r}" if regex is not None else f"topics {sorted(names)}"
        self._resubscribe(names, regex, f"the application subscribed to {described}")

    def unsubscribe(self) -> None:
        """Subscribe to nothing: the partitions are revoked by a rebalance and none are assigned again.

        Unlike aiokafka, the member stays in its group (a static member keeps its instance id and sends
        no LeaveGroup); ``subscribe()`` again to get partitions. ``stop(leave_group=True)`` leaves.
        """
        self._resubscribe(frozenset(), None, "the application unsubscribed")

    def _resubscribe(self, names: frozenset[str], regex: str | None, reason: str) -> None:
        if (names, regex) == self._wanted:
            return
        self._wanted = (names, regex)
        self._partitions.topics = names
        membership = self._membership
        if membership is None or self._stopping:  # read by the membership thread when it starts
            self._subscription.replace(names, regex)
            return
        gone = frozenset(tp for tp in self._partitions.fetching if regex is None and tp.topic not in names)
        if gone:
            self._partitions.stop_fetching(gone)
        membership.change_subscription(names, regex, reason)
        if self._fetcher is not None:
            _aiokafka.track_topics(self._fetcher, names)

    def subscription(self) -> frozenset[str]:
        """The topics subscribed: those given, or those the pattern matched at the last metadata refresh."""
        names, regex = self._wanted
        if regex is None:
            return names
        return self._partitions.snapshot.subscription

    def _nothing_subscribed(self) -> bool:
        names, regex = self._wanted
        return not names and regex is None

    def assign(self, partitions: Sequence[TopicPartition]) -> None:
        """Not supported with a group: a StaticConsumer's partitions come from its group.

        aiokafka's manual assignment within a group (committing through the group's coordinator as no
        member) would bypass the membership this SDK is for. Without a group, ``StaticConsumer(...,
        group_id=None)`` assigns as aiokafka does.
        """
        raise IllegalStateError(
            "assign() is not supported with a group: a StaticConsumer with a group_id takes its partitions "
            "from its consumer group (subscribe() to topics or a pattern). For manual assignment, build it "
            "with group_id=None (no group, no commits), as aiokafka's AIOKafkaConsumer(group_id=None)"
        )

    async def topics(self) -> set[str]:
        """Every topic this principal may see (fresh cluster metadata; internal topics left out)."""
        return set(await self._require_fetcher().topics())

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        """The partition ids of ``topic`` from the consumer's metadata (which holds the subscribed and
        the assigned topics), or None when the metadata does not know the topic (or before start())."""
        if not isinstance(topic, str):
            raise TypeError(f"topic must be a str, not {type(topic).__name__}: {topic!r}")
        if self._fetcher is None:
            return None
        found = self._fetcher.partitions_for_topic(topic)
        return None if found is None else set(found)

    def _raise_if_unusable(self) -> MembershipThread:
        fatal = self._partitions.snapshot.fatal_error
        if fatal is not None:
            raise fatal
        membership = self._membership
        if membership is None or self._stopping:
            raise ConsumerStoppedError("the consumer is not running: call start() first, or it was stopped")
        return membership


def _event_log(settings: Settings) -> EventLog | None:
    """The event log the settings ask for; only a consumer that has one imports the module."""
    if not settings.event_log_path and not settings.event_log_topic:
        return None
    from staticconsumer.eventlog import EventLog

    return EventLog.from_settings(settings)


def _without_group(settings: Settings | None, options: Mapping[str, Any]) -> bool:
    """Whether the constructor's arguments ask for a consumer without a group, as aiokafka's do:
    ``group_id=None``, ``group_id`` left out with no ``settings`` (aiokafka's default is None), or
    settings made group-less and no ``group_id`` keyword overriding them."""
    if "group_id" in options:
        return options["group_id"] is None
    return settings is None or settings.groupless


def _kafka(tp: TopicPartition) -> KafkaTopicPartition:
    return KafkaTopicPartition(tp.topic, tp.partition)


def _fetcher_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """aiokafka's fetcher options, checked: deserializers are callables (or None), the timeout a number."""
    checked: dict[str, Any] = {}
    for name in ("key_deserializer", "value_deserializer"):
        if name in options:
            checked[name] = _inputs.deserializer(options[name], name)
    if "consumer_timeout_ms" in options:
        timeout = options["consumer_timeout_ms"]
        if not isinstance(timeout, int | float) or isinstance(timeout, bool):
            raise TypeError(f"consumer_timeout_ms must be a number of milliseconds, not {timeout!r}")
        if timeout < 0:
            raise ValueError(f"consumer_timeout_ms must not be negative, not {timeout}")
        checked["consumer_timeout_ms"] = timeout
    return checked


_ALL: Partitions = frozenset()
"""No partitions named: any owned partition."""


def _settings_from(settings: Settings | None, options: Mapping[str, Any]) -> tuple[Settings, dict[str, Any]]:
    """The settings a constructor's keywords make (over ``settings``, when given), and the fetcher's own
    options taken out of them; aiokafka's ``partition_assignment_strategy`` becomes ``assignors`` names."""
    options = translate_assignment_strategy(options)
    fetcher_options = {name: options.pop(name) for name in FETCHER_OPTIONS if name in options}
    if settings is not None and options:
        settings = Settings.from_keywords(**{**_settings_fields(settings), **options})
    return settings or Settings.from_keywords(**options), fetcher_options


def _settings_fields(settings: Settings) -> dict[str, Any]:
    """Every field's value (``__struct_fields__``: ``msgspec.structs.fields`` would resolve all the
    annotations too, ~0.6 ms)."""
    return {name: getattr(settings, name) for name in settings.__struct_fields__}


__all__ = [
    "ConsumerRebalanceListener",
    "ConsumerStoppedError",
    "DuplicateInstanceIdError",
    "StaticConsumer",
    "StaticMembershipUnsupportedError",
]

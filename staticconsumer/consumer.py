"""StaticConsumer: an aiokafka-style consumer whose group membership is ours, not aiokafka's.

Records are fetched by an ``AIOKafkaConsumer`` without a group (manually assigned the partitions the
group gives us); joining, heartbeats, commits and rebalances are run by ``GroupDriver`` over the
sans-IO membership machine. aiokafka's own group coordinator is never used: it lacks the static
membership behaviour this SDK exists for (fencing, KIP-394's exact double join, instance ids on
heartbeats and commits, SkipAssignment).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import inspect
import logging
import re
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, ClassVar

from aiokafka import AIOKafkaConsumer, ConsumerRecord
from aiokafka.structs import TopicPartition as KafkaTopicPartition

import assignors as assignor_lib
from staticconsumer import _aiokafka
from staticconsumer.driver import (
    GroupDriver,
    MembershipObserver,
    StaticMembershipUnsupportedError,
    decode_assignment,
    decode_subscription_topics,
)
from staticconsumer.errors import ConfigurationError, StaticConsumerError
from staticconsumer.eventlog import EventLog
from staticconsumer.membership import MembershipConfig, OffsetAndMetadata, TopicPartition
from staticconsumer.protocol import Message
from staticconsumer.settings import Settings
from staticconsumer.telemetry import telemetry_observers

log = logging.getLogger("staticconsumer")

Partitions = frozenset[TopicPartition]

MIN_VERSIONS_FOR_STATIC = {"JoinGroup": 5, "SyncGroup": 3, "Heartbeat": 3, "OffsetCommit": 7}
_API_KEYS = {"JoinGroup": 11, "SyncGroup": 14, "Heartbeat": 12, "OffsetCommit": 8}


class DuplicateInstanceIdError(ConfigurationError):
    """Two consumers in one process with the same group and instance id would fence each other forever."""


class ConsumerStoppedError(StaticConsumerError):
    """The consumer is not running (never started, or stopped)."""


class ConsumerRebalanceListener:
    """Override any of these (plain or ``async``); each gets a frozenset of TopicPartition.

    ``on_partitions_lost`` runs when partitions were taken away without a clean revoke (fencing, a
    missed session or poll deadline): another member may own them already, so do not commit them. By
    default it does what ``on_partitions_revoked`` does, as in the Java client.
    """

    def on_partitions_revoked(self, revoked: Partitions) -> Awaitable[None] | None:
        return None

    def on_partitions_assigned(self, assigned: Partitions) -> Awaitable[None] | None:
        return None

    def on_partitions_lost(self, lost: Partitions) -> Awaitable[None] | None:
        return self.on_partitions_revoked(lost)


class StaticConsumer:
    """An asyncio Kafka consumer with static group membership (KIP-345/394/814).

    ``StaticConsumer("orders", bootstrap_servers="k:9092", group_id="billing",
    group_instance_id="billing-0")``; any other setting by its field name in
    ``staticconsumer.settings.Settings``, or a ready ``settings=``. ``pattern=`` subscribes by regex.

    ``request_hook(api_name, version, message)`` sees every group request just before it is sent
    (diagnostics and tests; it must not block). ``observers`` see every membership event and the
    actions it caused (telemetry and event logs plug in here; see driver.MembershipObserver).
    ``api_version_caps`` (e.g. ``{"JoinGroup": 8}``) caps a group API's version, to behave like an
    older client or to see what brokers answer older clients.
    """

    _running_identities: ClassVar[set[tuple[str, str]]] = set()

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
        if settings is not None and options:
            settings = Settings.from_env(environ={}, **{**_settings_fields(settings), **options})
        self.settings = settings or Settings.from_env(environ={}, **options)
        if not self.settings.group_id:
            raise ConfigurationError("group_id is required: StaticConsumer always joins a consumer group")
        if topics and pattern:
            raise ConfigurationError("subscribe to topics or to a pattern, not both")
        if not topics and not pattern:
            raise ConfigurationError("give at least one topic or a pattern to subscribe to")
        self._topics: frozenset[str] = frozenset(topics)
        self._pattern = re.compile(pattern) if pattern else None
        self._pattern_topics: frozenset[str] = frozenset()
        self._listener = listener or ConsumerRebalanceListener()
        self._request_hook = request_hook
        self.event_log = EventLog.from_settings(self.settings)
        """The membership event log when the settings enable one (its ``dropped`` counts lost records)."""
        self._observers = (
            tuple(observers)
            + ((self.event_log,) if self.event_log is not None else ())
            + telemetry_observers(telemetry, client_id=self.settings.effective_client_id)
        )
        self._version_caps = dict(api_version_caps or {})
        self._assignors = [assignor_lib.create(name) for name in self.settings.assignors]
        self._fetcher: AIOKafkaConsumer | None = None
        self._client: Any = None
        self._driver: GroupDriver | None = None
        self._driver_task: asyncio.Task[None] | None = None
        self._watch_task: asyncio.Task[None] | None = None
        self._identity: tuple[str, str] | None = None
        self._fetching: Partitions = frozenset()
        self._positions: dict[TopicPartition, int] = {}
        self._pending: dict[TopicPartition, collections.deque[ConsumerRecord[Any, Any]]] = {}
        self._released_positions: dict[TopicPartition, int] = {}
        self._fatal: Exception | None = None
        self._changed = asyncio.Event()
        self._stopping = False
        self._last_auto_commit = time.monotonic()
        self._auto_commit_task: asyncio.Task[None] | None = None

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

        ``consumer_options`` passes constructor options that are not settings (``telemetry``,
        ``observers``, ``request_hook``, ``api_version_caps``).
        """
        settings = Settings.from_env(environ, prefix, **overrides)
        return cls(
            *topics, pattern=pattern, settings=settings, listener=listener, **dict(consumer_options or {})
        )

    # -- lifecycle ------------------------------------------------------------------------------

    async def __aenter__(self) -> StaticConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    async def start(self) -> None:
        """Connect, check the broker can carry static membership, and start joining (non-blocking)."""
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
        try:
            await self._connect()
        except BaseException:
            await self._close_connections()
            self._release_identity()
            raise

    async def _connect(self) -> None:
        s = self.settings
        config = MembershipConfig(
            group_id=s.group_id,
            group_instance_id=s.group_instance_id,
            decode_assignment=decode_assignment,
            decode_subscription=decode_subscription_topics,
            session_timeout_ms=s.session_timeout_ms,
            heartbeat_interval_ms=s.heartbeat_interval_ms,
            max_poll_interval_ms=s.max_poll_interval_ms,
            retry_backoff_ms=s.retry_backoff_ms,
            retry_backoff_max_ms=s.retry_backoff_max_ms,
            request_timeout_ms=s.request_timeout_ms,
        )
        self._client = _aiokafka.new_client(**s.aiokafka_client_kwargs())
        await self._client.bootstrap()
        if s.group_instance_id is not None:
            await self._check_static_membership_supported()
        self._fetcher = AIOKafkaConsumer(**self._fetcher_kwargs())
        await self._fetcher.start()
        self._driver = GroupDriver(
            config=config,
            client=self._client,
            owner=self,
            assignors=self._assignors,
            topics=self._subscribed_topics,
            client_rack=s.client_rack,
            auto_commit_on_revoke=s.enable_auto_commit,
            on_request=self._request_hook,
            observers=self._observers,
            metadata_refresh_ms=s.metadata_max_age_ms,
            version_caps=self._version_caps,
        )
        if self._pattern is not None:
            self._pattern_topics = await self._topics_matching_pattern()
        self._driver_task = asyncio.create_task(self._driver.run(), name=f"staticconsumer-{s.group_id}")
        if self._pattern is not None:
            self._watch_task = asyncio.create_task(self._watch_pattern())

    async def _check_static_membership_supported(self) -> None:
        node = _aiokafka.any_node(self._client)
        versions = await _aiokafka.broker_versions(self._client, node, coordination=False)
        for api, needed in MIN_VERSIONS_FOR_STATIC.items():
            offered = versions.get(_API_KEYS[api])
            if offered is None or offered[1] < needed:
                raise StaticMembershipUnsupportedError(
                    f"the broker offers {api} {'not at all' if offered is None else f'up to v{offered[1]}'}, "
                    f"but group.instance.id needs v{needed}+ (Kafka 2.3 or later). Refusing to fall back "
                    f"to dynamic membership silently; unset group_instance_id to join as a dynamic member"
                )

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
        )
        return kwargs

    async def stop(self, leave_group: bool = False) -> None:
        """Commit (with auto-commit) and stop. A static member sends no LeaveGroup unless ``leave_group``.

        ``leave_group=True`` names this instance id in a LeaveGroup so the group rebalances at once:
        use it for scale-down, when this instance will not come back.
        """
        if self._stopping:
            return
        self._stopping = True
        try:
            if self._auto_commit_task is not None:
                with contextlib.suppress(Exception):
                    await self._auto_commit_task
            if self._watch_task is not None:
                self._watch_task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._watch_task
            if self._driver is not None and self._driver_task is not None and not self._driver_task.done():
                self._driver.stop(leave_group)
                try:
                    await asyncio.wait_for(
                        asyncio.shield(self._driver_task), self.settings.request_timeout_ms / 1000
                    )
                except TimeoutError:
                    log.warning("membership did not stop within request.timeout.ms; abandoning it")
                    self._driver_task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await self._driver_task
        finally:
            self.stop_fetching()
            await self._close_connections()
            self._release_identity()
            self._changed.set()
            if self.event_log is not None:
                await self.event_log.aclose()

    async def _close_connections(self) -> None:
        if self._fetcher is not None:
            with contextlib.suppress(Exception):
                await self._fetcher.stop()
        if self._client is not None:
            with contextlib.suppress(Exception):
                await self._client.close()

    def _release_identity(self) -> None:
        if self._identity is not None:
            StaticConsumer._running_identities.discard(self._identity)
            self._identity = None

    # -- read-only state ------------------------------------------------------------------------

    @property
    def member_id(self) -> str:
        return self._driver.machine.member_id if self._driver else ""

    @property
    def generation(self) -> int:
        return self._driver.machine.generation if self._driver else -1

    @property
    def is_leader(self) -> bool:
        return self._driver.machine.is_leader if self._driver else False

    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions this member currently owns and fetches."""
        return self._fetching

    # -- records --------------------------------------------------------------------------------

    async def getmany(
        self, *partitions: TopicPartition, timeout_ms: int = 0, max_records: int | None = None
    ) -> dict[TopicPartition, list[ConsumerRecord[Any, Any]]]:
        """Records from owned partitions; waits up to ``timeout_ms`` (rebalances included)."""
        self._poll_started()
        wanted = frozenset(partitions)
        result = self._take_pending(wanted, max_records)
        if not result:
            result = await self._fetch(wanted, timeout_ms, max_records)
        self._mark_returned(result)
        return result

    async def getone(self, *partitions: TopicPartition) -> ConsumerRecord[Any, Any]:
        """The next record from owned partitions, waiting as long as it takes.

        Served from a local buffer filled a whole fetch at a time, so iterating record by record costs
        about what getmany does; buffered records of a partition that is revoked or sought are dropped,
        never returned, and so never committed past.
        """
        wanted = frozenset(partitions)
        while True:
            self._poll_started()
            taken = self._take_pending(wanted, 1)
            if taken:
                self._mark_returned(taken)
                return next(iter(taken.values()))[0]
            for tp, rows in (await self._fetch(wanted, 1000, None)).items():
                self._pending.setdefault(tp, collections.deque()).extend(rows)

    def _poll_started(self) -> None:
        self._raise_if_unusable()
        assert self._driver is not None
        self._driver.poll_called()
        self._maybe_auto_commit()

    def _take_pending(
        self, wanted: Partitions, max_records: int | None
    ) -> dict[TopicPartition, list[ConsumerRecord[Any, Any]]]:
        """Buffered records of owned partitions (up to ``max_records``), oldest first per partition."""
        result: dict[TopicPartition, list[ConsumerRecord[Any, Any]]] = {}
        budget = max_records if max_records is not None else sys.maxsize
        for tp in list(self._pending):
            if budget <= 0:
                break
            if wanted and tp not in wanted:
                continue
            queue = self._pending[tp]
            rows = [queue.popleft() for _ in range(min(budget, len(queue)))]
            if not queue:
                del self._pending[tp]
            if rows:
                result[tp] = rows
                budget -= len(rows)
        return result

    def _mark_returned(self, result: Mapping[TopicPartition, list[ConsumerRecord[Any, Any]]]) -> None:
        """Records handed to the application move the positions that commits will use."""
        for tp, rows in result.items():
            self._positions[tp] = rows[-1].offset + 1

    async def _fetch(
        self, wanted: Partitions, timeout_ms: int, max_records: int | None
    ) -> dict[TopicPartition, list[ConsumerRecord[Any, Any]]]:
        """Fetch from owned partitions, waiting through rebalances; nothing is marked returned here."""
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            self._raise_if_unusable()
            owned = self._fetching if not wanted else self._fetching & wanted
            remaining = max(0.0, deadline - time.monotonic())
            if not owned:
                if remaining <= 0:
                    return {}
                await self._wait_for_change(remaining)
                continue
            generation = self.generation
            records = await self._interruptible_fetch(owned, remaining, max_records)
            self._raise_if_unusable()
            if records is None or generation != self.generation:
                # Interrupted by a rebalance: what was fetched for old partitions is dropped and will be
                # read again from the committed offset by whoever owns it next. Nothing is skipped.
                if time.monotonic() >= deadline:
                    return {}
                continue
            result: dict[TopicPartition, list[ConsumerRecord[Any, Any]]] = {}
            for tp, batch in records.items():
                ours = TopicPartition(tp.topic, tp.partition)
                if batch and ours in self._fetching:
                    result[ours] = batch
            if result or time.monotonic() >= deadline:
                return result

    async def _interruptible_fetch(
        self, owned: Partitions, seconds: float, max_records: int | None
    ) -> dict[KafkaTopicPartition, list[ConsumerRecord[Any, Any]]] | None:
        assert self._fetcher is not None
        self._changed.clear()
        fetch = asyncio.ensure_future(
            self._fetcher.getmany(
                *(KafkaTopicPartition(tp.topic, tp.partition) for tp in owned),
                timeout_ms=int(seconds * 1000),
                max_records=max_records,
            )
        )
        interrupt = asyncio.ensure_future(self._changed.wait())
        try:
            await asyncio.wait({fetch, interrupt}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            interrupt.cancel()
        if fetch.done():
            result: dict[KafkaTopicPartition, list[ConsumerRecord[Any, Any]]] = fetch.result()
            return result
        fetch.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await fetch
        return None

    async def _wait_for_change(self, seconds: float) -> None:
        self._changed.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), seconds)

    def __aiter__(self) -> StaticConsumer:
        return self

    async def __anext__(self) -> ConsumerRecord[Any, Any]:
        if self._stopping and self._fatal is None:
            raise StopAsyncIteration
        try:
            return await self.getone()
        except ConsumerStoppedError:
            raise StopAsyncIteration from None

    # -- offsets --------------------------------------------------------------------------------

    async def commit(self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata] | None = None) -> None:
        """Commit ``offsets`` (next offset to read), or the positions of every record returned so far."""
        self._raise_if_unusable()
        assert self._driver is not None
        if offsets is None:
            to_commit = self.positions_to_commit()
        else:
            to_commit = {
                TopicPartition(tp[0], tp[1]): o if isinstance(o, OffsetAndMetadata) else OffsetAndMetadata(o)
                for tp, o in offsets.items()
            }
        if not to_commit:
            return
        await self._driver.commit(to_commit)

    def _maybe_auto_commit(self) -> None:
        if not self.settings.enable_auto_commit or self._driver is None:
            return
        if time.monotonic() - self._last_auto_commit < self.settings.auto_commit_interval_ms / 1000:
            return
        if self._auto_commit_task is not None and not self._auto_commit_task.done():
            return
        self._last_auto_commit = time.monotonic()
        offsets = self.positions_to_commit()
        if offsets:
            self._auto_commit_task = asyncio.create_task(self._auto_commit(offsets))

    async def _auto_commit(self, offsets: dict[TopicPartition, OffsetAndMetadata]) -> None:
        assert self._driver is not None
        try:
            await self._driver.commit(offsets)
        except Exception as error:
            log.info("auto-commit of %d offsets did not complete: %s", len(offsets), error)

    def positions_to_commit(self) -> dict[TopicPartition, OffsetAndMetadata]:
        """Positions after the records returned to the application: owned partitions, plus those being
        revoked right now (fetching stops before the revoke callback, but their progress must still be
        committed by it or inside it)."""
        owned = {tp: pos for tp, pos in self._positions.items() if tp in self._fetching}
        return {tp: OffsetAndMetadata(pos) for tp, pos in {**self._released_positions, **owned}.items()}

    def seek(self, partition: TopicPartition, offset: int) -> None:
        assert self._fetcher is not None
        self._pending.pop(TopicPartition(partition.topic, partition.partition), None)
        self._fetcher.seek(KafkaTopicPartition(partition.topic, partition.partition), offset)

    async def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        assert self._fetcher is not None
        self._drop_pending(partitions)
        await self._fetcher.seek_to_beginning(
            *(KafkaTopicPartition(p.topic, p.partition) for p in partitions)
        )

    async def seek_to_end(self, *partitions: TopicPartition) -> None:
        assert self._fetcher is not None
        self._drop_pending(partitions)
        await self._fetcher.seek_to_end(*(KafkaTopicPartition(p.topic, p.partition) for p in partitions))

    def _drop_pending(self, partitions: tuple[TopicPartition, ...]) -> None:
        for partition in partitions or tuple(self._pending):
            self._pending.pop(TopicPartition(partition.topic, partition.partition), None)

    def pause(self, *partitions: TopicPartition) -> None:
        assert self._fetcher is not None
        self._fetcher.pause(*(KafkaTopicPartition(p.topic, p.partition) for p in partitions))

    def resume(self, *partitions: TopicPartition) -> None:
        assert self._fetcher is not None
        self._fetcher.resume(*(KafkaTopicPartition(p.topic, p.partition) for p in partitions))

    # -- PartitionOwner: called by the driver ---------------------------------------------------

    def stop_fetching(self) -> None:
        self._pending.clear()
        self._released_positions.update({tp: p for tp, p in self._positions.items() if tp in self._fetching})
        self._fetching = frozenset()
        self._positions.clear()
        if self._fetcher is not None:
            with contextlib.suppress(Exception):
                self._fetcher.assign([])
        self._changed.set()

    async def take_partitions(self, partitions: Partitions, generation: int) -> None:
        assert self._driver is not None
        assert self._fetcher is not None
        committed = await self._driver.fetch_committed(partitions) if partitions else {}
        self._fetcher.assign([KafkaTopicPartition(tp.topic, tp.partition) for tp in partitions])
        self._pending.clear()
        self._positions = {}
        self._released_positions = {}
        for tp in partitions:
            offset = committed.get(tp, -1)
            if offset >= 0:
                self._fetcher.seek(KafkaTopicPartition(tp.topic, tp.partition), offset)
                self._positions[tp] = offset
        self._fetching = partitions
        self._changed.set()

    async def run_listener(self, kind: str, partitions: Partitions) -> None:
        if kind == "lost":
            self._released_positions = {}  # another member may own them already: never commit these
        method = {
            "revoked": self._listener.on_partitions_revoked,
            "assigned": self._listener.on_partitions_assigned,
            "lost": self._listener.on_partitions_lost,
        }[kind]
        result = method(partitions)
        if inspect.isawaitable(result):
            await result

    def became_fatal(self, error: Exception) -> None:
        self._fatal = error
        self.stop_fetching()
        self._released_positions = {}

    def membership_changed(self) -> None:
        self._changed.set()

    # -- subscription ---------------------------------------------------------------------------

    def _subscribed_topics(self) -> frozenset[str]:
        if self._pattern is not None:
            return self._pattern_topics
        return self._topics

    async def _topics_matching_pattern(self) -> frozenset[str]:
        assert self._pattern is not None
        metadata = await _aiokafka.topic_partitions(self._client, None)
        return frozenset(t for t in metadata if self._pattern.fullmatch(t) and not t.startswith("__"))

    async def _watch_pattern(self) -> None:
        """Rejoin with a new subscription when topics matching the pattern appear or disappear."""
        interval = self.settings.metadata_max_age_ms / 1000
        while True:
            await asyncio.sleep(interval)
            try:
                matching = await self._topics_matching_pattern()
            except Exception as error:
                log.info("metadata refresh for the subscription pattern failed: %s", error)
                continue
            if matching != self._pattern_topics and self._driver is not None:
                added, removed = (
                    sorted(matching - self._pattern_topics),
                    sorted(self._pattern_topics - matching),
                )
                self._pattern_topics = matching
                self._driver.update_protocols(f"subscription pattern now matches +{added} -{removed}")

    def _raise_if_unusable(self) -> None:
        if self._fatal is not None:
            raise self._fatal
        if self._driver is None or self._stopping:
            raise ConsumerStoppedError("the consumer is not running: call start() first, or it was stopped")


def _settings_fields(settings: Settings) -> dict[str, Any]:
    import msgspec

    return {f.name: getattr(settings, f.name) for f in msgspec.structs.fields(settings)}


__all__ = [
    "ConsumerRebalanceListener",
    "ConsumerStoppedError",
    "DuplicateInstanceIdError",
    "StaticConsumer",
    "StaticMembershipUnsupportedError",
]

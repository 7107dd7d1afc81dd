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
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from aiokafka import AIOKafkaConsumer, ConsumerRecord
from aiokafka.structs import TopicPartition as KafkaTopicPartition

import assignors as assignor_lib
from staticconsumer import _aiokafka
from staticconsumer._partitions import ApplicationPartitions, Partitions, Records
from staticconsumer.errors import (
    ConfigurationError,
    ConsumerStoppedError,
    DuplicateInstanceIdError,
    StaticMembershipUnsupportedError,
)
from staticconsumer.listener import ConsumerRebalanceListener
from staticconsumer.membership import MembershipObserver, OffsetAndMetadata, TopicPartition
from staticconsumer.protocol import Message
from staticconsumer.runtime.subscription import Subscription
from staticconsumer.runtime.thread import MembershipThread
from staticconsumer.settings import Settings
from staticconsumer.telemetry import telemetry_observers

if TYPE_CHECKING:
    from staticconsumer.eventlog import EventLog

log = logging.getLogger("staticconsumer")


class StaticConsumer:
    """An asyncio Kafka consumer with static group membership (KIP-345/394/814).

    ``StaticConsumer("orders", bootstrap_servers="k:9092", group_id="billing",
    group_instance_id="billing-0")``; any other setting by its field name in
    ``staticconsumer.settings.Settings``, or a ready ``settings=``. ``pattern=`` subscribes by regex.

    ``request_hook(api_name, version, message)`` sees every group request just before it is sent
    (diagnostics and tests; it runs on the membership thread and must not block). ``observers`` see
    every membership event and the actions it caused (telemetry and event logs plug in here; see
    ``staticconsumer.membership.MembershipObserver``). ``api_version_caps`` (e.g. ``{"JoinGroup": 8}``)
    caps a group API's version, to behave like an older client or to see what brokers answer older
    clients.
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
        self._subscription = Subscription(topics, pattern)
        self._request_hook = request_hook
        self.event_log = _event_log(self.settings)
        """The membership event log when the settings enable one (its ``dropped`` counts lost records)."""
        self._observers = (
            tuple(observers)
            + ((self.event_log,) if self.event_log is not None else ())
            + telemetry_observers(telemetry, client_id=self.settings.effective_client_id)
        )
        self._version_caps = dict(api_version_caps or {})
        self._assignors = [assignor_lib.create(name) for name in self.settings.assignors]
        self._changed = asyncio.Event()
        self._partitions = ApplicationPartitions(listener or ConsumerRebalanceListener(), self._changed.set)
        self._fetcher: AIOKafkaConsumer | None = None
        self._membership: MembershipThread | None = None
        self._identity: tuple[str, str] | None = None
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
        """Connect, check the broker can carry static membership, and start joining (non-blocking).

        The membership thread bootstraps its coordinator connection while the fetcher bootstraps its
        own; either one's failure is raised here.
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
        self._membership = MembershipThread(
            settings=s,
            owner=self._partitions,
            assignors=self._assignors,
            subscription=self._subscription,
            observers=self._observers,
            on_request=self._forward_request,
            version_caps=self._version_caps,
            closers=(self.event_log.aclose,) if self.event_log is not None else (),
        )
        self._fetcher = _aiokafka.new_fetcher(
            max_response_bytes=s.response_limits()[1], **self._fetcher_kwargs()
        )
        self._partitions.fetcher = self._fetcher
        started = await asyncio.gather(
            self._membership.start(), self._fetcher.start(), return_exceptions=True
        )
        failure = next((r for r in started if isinstance(r, BaseException)), None)
        if failure is not None:
            await self._shut_down(leave_group=False)
            raise failure

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
        if self._auto_commit_task is not None:
            with contextlib.suppress(Exception):
                await self._auto_commit_task
        await self._shut_down(leave_group)

    async def _shut_down(self, leave_group: bool) -> None:
        membership, self._membership = self._membership, None
        try:
            if membership is not None and membership.started:
                await membership.stop(leave_group, self.settings.request_timeout_ms / 1000)
            elif self.event_log is not None:  # the membership thread closes it when it ran
                await self.event_log.aclose()
        finally:
            self._partitions.stop_fetching(None)
            if self._fetcher is not None:
                with contextlib.suppress(Exception):
                    await self._fetcher.stop()
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
        """How this member moves partitions in a rebalance: ``eager`` or ``cooperative``."""
        return self._partitions.snapshot.rebalance_protocol

    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions this member currently owns and fetches."""
        return self._partitions.fetching

    # -- records --------------------------------------------------------------------------------

    async def getmany(
        self, *partitions: TopicPartition, timeout_ms: int = 0, max_records: int | None = None
    ) -> dict[TopicPartition, list[ConsumerRecord[Any, Any]]]:
        """Records from owned partitions; waits up to ``timeout_ms`` (rebalances included)."""
        self._poll_started()
        wanted = frozenset(partitions)
        result = self._partitions.take(wanted, max_records)
        if not result:
            result = await self._fetch(wanted, timeout_ms, max_records)
        self._partitions.returned(result)
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
            taken = self._partitions.take(wanted, 1)
            if taken:
                self._partitions.returned(taken)
                return next(iter(taken.values()))[0]
            self._partitions.buffer(await self._fetch(wanted, 1000, None))

    def _poll_started(self) -> None:
        membership = self._raise_if_unusable()
        membership.poll_called()
        self._maybe_auto_commit()

    async def _fetch(self, wanted: Partitions, timeout_ms: int, max_records: int | None) -> Records:
        """Fetch from owned partitions, waiting through rebalances; nothing is marked returned here."""
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            self._raise_if_unusable()
            fetching = self._partitions.fetching
            owned = fetching if not wanted else fetching & wanted
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
            result: Records = {}
            fetching = self._partitions.fetching
            for tp, batch in records.items():
                ours = TopicPartition(tp.topic, tp.partition)
                if batch and ours in fetching:
                    result[ours] = batch
            if result or time.monotonic() >= deadline:
                return result

    async def _interruptible_fetch(
        self, owned: Partitions, seconds: float, max_records: int | None
    ) -> dict[KafkaTopicPartition, list[ConsumerRecord[Any, Any]]] | None:
        """One fetch from ``owned``, or None when the ownership changed while it waited."""
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
        if self._stopping and self._partitions.snapshot.fatal_error is None:
            raise StopAsyncIteration
        try:
            return await self.getone()
        except ConsumerStoppedError:
            raise StopAsyncIteration from None

    # -- offsets --------------------------------------------------------------------------------

    async def commit(self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata] | None = None) -> None:
        """Commit ``offsets`` (next offset to read), or the positions of every record returned so far."""
        membership = self._raise_if_unusable()
        if offsets is None:
            to_commit = self._partitions.positions()
        else:
            to_commit = {
                TopicPartition(tp[0], tp[1]): o if isinstance(o, OffsetAndMetadata) else OffsetAndMetadata(o)
                for tp, o in offsets.items()
            }
        if not to_commit:
            return
        await membership.commit(to_commit)

    def _maybe_auto_commit(self) -> None:
        membership = self._membership
        if not self.settings.enable_auto_commit or membership is None:
            return
        if time.monotonic() - self._last_auto_commit < self.settings.auto_commit_interval_ms / 1000:
            return
        if self._auto_commit_task is not None and not self._auto_commit_task.done():
            return
        self._last_auto_commit = time.monotonic()
        offsets = self._partitions.positions()
        if offsets:
            self._auto_commit_task = asyncio.create_task(self._auto_commit(membership, offsets))

    @staticmethod
    async def _auto_commit(
        membership: MembershipThread, offsets: dict[TopicPartition, OffsetAndMetadata]
    ) -> None:
        try:
            await membership.commit(offsets)
        except Exception as error:
            log.info("auto-commit of %d offsets did not complete: %s", len(offsets), error)

    def _require_fetcher(self) -> AIOKafkaConsumer:
        if self._fetcher is None:
            raise ConsumerStoppedError("the consumer is not running: call start() first")
        return self._fetcher

    def seek(self, partition: TopicPartition, offset: int) -> None:
        fetcher = self._require_fetcher()
        self._partitions.sought(TopicPartition(partition.topic, partition.partition), offset)
        fetcher.seek(KafkaTopicPartition(partition.topic, partition.partition), offset)

    async def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        fetcher = self._require_fetcher()
        self._partitions.drop_buffered(partitions)
        await fetcher.seek_to_beginning(*(KafkaTopicPartition(p.topic, p.partition) for p in partitions))

    async def seek_to_end(self, *partitions: TopicPartition) -> None:
        fetcher = self._require_fetcher()
        self._partitions.drop_buffered(partitions)
        await fetcher.seek_to_end(*(KafkaTopicPartition(p.topic, p.partition) for p in partitions))

    def pause(self, *partitions: TopicPartition) -> None:
        fetcher = self._require_fetcher()
        self._partitions.pause(partitions)
        fetcher.pause(*(KafkaTopicPartition(p.topic, p.partition) for p in partitions))

    def resume(self, *partitions: TopicPartition) -> None:
        fetcher = self._require_fetcher()
        self._partitions.resume(partitions)
        fetcher.resume(*(KafkaTopicPartition(p.topic, p.partition) for p in partitions))

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

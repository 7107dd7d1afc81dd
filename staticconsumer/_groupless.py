"""``StaticConsumer(group_id=None)``: aiokafka's consumer without a group, for services ported from it.

There is no group to be a static member of, so there is no membership thread, no group request and no
instance lock: the consumer is the fetcher every StaticConsumer already has (an ``AIOKafkaConsumer``
without a group), driven directly. ``assign()`` picks partitions by hand; ``subscribe()`` takes every
partition of the subscribed topics (aiokafka's ``NoGroupCoordinator`` follows their metadata). Calls that
need a group (``commit``, ``committed``, ``seek_to_committed``) raise aiokafka's ``IllegalOperation``.

Loaded only when a consumer without a group is built, so the group consumer's import stays as it was.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn

from aiokafka import AIOKafkaConsumer, ConsumerRecord
from aiokafka.errors import ConsumerStoppedError as KafkaConsumerStoppedError
from aiokafka.errors import IllegalOperation
from aiokafka.structs import TopicPartition as KafkaTopicPartition

from staticconsumer import _aiokafka, _inputs
from staticconsumer.connection import ConnectionMonitor, ConnectionState
from staticconsumer.connection.monitor import lag_tick_s
from staticconsumer.connection.reconnect import ReconnectBackoff
from staticconsumer.consumer import StaticConsumer, _fetcher_options, _settings_from
from staticconsumer.errors import ConfigurationError, ConsumerStoppedError, IllegalStateError
from staticconsumer.listener import ConsumerRebalanceListener
from staticconsumer.membership import MembershipObserver, TopicPartition
from staticconsumer.protocol import Message
from staticconsumer.settings import Settings
from staticconsumer.telemetry import NO_PROCESSING, NoProcessing, uninstrumented

NOT_STARTED = "the consumer is not running: call start() first, or it was stopped"


class GrouplessConsumer(StaticConsumer):
    """What ``StaticConsumer(..., group_id=None)`` builds: every call behaves as on aiokafka's
    ``AIOKafkaConsumer(group_id=None)``, with this SDK's typed errors for bad input and unowned partitions.

    A subclass so ``isinstance(consumer, StaticConsumer)`` holds; it keeps none of the group consumer's
    state, and overrides every method that would reach for it.
    """

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
        # Group-only options would silently do nothing: refused, naming the option.
        for name, given in (
            ("request_hook", request_hook is not None),
            ("observers", bool(observers)),
            ("api_version_caps", bool(api_version_caps)),
            ("telemetry", not isinstance(telemetry, bool)),  # an observer of membership events
        ):
            if given:
                raise ConfigurationError(
                    f"{name} watches a consumer group, and this consumer has none (group_id=None); "
                    f"leave {name} out, or give the consumer a group_id"
                )
        if settings is None:
            options.setdefault("group_id", None)  # left out: aiokafka's default, no group
        self.settings, fetcher_options = _settings_from(settings, options)
        if not self.settings.groupless:
            raise ConfigurationError(
                "GrouplessConsumer is StaticConsumer(group_id=None); these settings have a group_id"
            )
        if topics and pattern:
            raise ConfigurationError("subscribe to topics or to a pattern, not both")
        self.event_log = None
        """No membership, so no membership event log (event_log_* settings are ignored)."""
        self._fetcher_options = _fetcher_options(fetcher_options)
        self._records = None  # record telemetry is the group consumer's (docs/consumer.md)
        self._fetcher: AIOKafkaConsumer | None = None
        self._monitor: ConnectionMonitor | None = None
        self._monitor_task: asyncio.Task[None] | None = None
        self._stopping = False
        self._listener: object = None
        self._topics: frozenset[str] = frozenset()
        self._pattern: str | None = None
        self._assigned: tuple[TopicPartition, ...] | None = None
        """Partitions given to ``assign()`` before ``start()`` (None: no manual assignment)."""
        if topics or pattern is not None:
            self.subscribe(topics, pattern, listener)

    # -- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        """Connect and fetch metadata, as aiokafka's ``start()`` does without a group: with a
        subscription, wait for its topics and take all their partitions."""
        if self._fetcher is not None or self._stopping:
            raise IllegalStateError(
                "start(): this consumer was started already (a stopped one cannot restart)"
            )
        s = self.settings
        fetcher = _aiokafka.new_fetcher(
            max_response_bytes=s.response_limits()[1],
            reconnect_backoff=ReconnectBackoff(s.reconnect_backoff_ms, s.reconnect_backoff_max_ms),
            subclass=uninstrumented,
            **self._fetcher_kwargs(),
        )
        if self._pattern is not None:
            fetcher.subscribe(pattern=self._pattern)
        elif self._topics:
            fetcher.subscribe(topics=sorted(self._topics))
        elif self._assigned is not None:
            fetcher.assign([_kafka(tp) for tp in self._assigned])
        self._fetcher = fetcher
        self._monitor = monitor = ConnectionMonitor("consumer without a group")
        with monitor.owning():  # the fetcher's tasks, made here, log failures for this consumer only
            try:
                await fetcher.start()
            except BaseException:
                await self._shut_down(leave_group=False)
                self._fetcher, self._stopping = None, False  # start() may be tried again, as in aiokafka
                raise
            client = _aiokafka.fetcher_client(fetcher)
            monitor.watch(client)
            monitor.watch_topics(self._topics)
            monitor.install()
            self._monitor_task = asyncio.create_task(
                monitor.run(client, idle_interval_s=lag_tick_s(s.request_timeout_ms))
            )

    async def stop(self, leave_group: bool = False) -> None:
        """Close the connections. ``leave_group`` is accepted for the group consumer's signature; there is
        no group to leave."""
        if self._stopping:
            return
        self._stopping = True
        await self._shut_down(leave_group)

    async def _shut_down(self, leave_group: bool) -> None:
        self._stopping = True
        task, monitor = self._monitor_task, self._monitor
        self._monitor_task, self._monitor = None, None
        if monitor is not None:  # a broker back since the monitor's last tick is reported as back
            monitor.check_recovery()
        if task is not None:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        if self._fetcher is not None:
            with contextlib.suppress(Exception):
                await self._fetcher.stop()
        if monitor is not None:
            monitor.close()

    def _require_fetcher(self) -> AIOKafkaConsumer:
        if self._fetcher is None or self._stopping:
            raise ConsumerStoppedError(NOT_STARTED)
        return self._fetcher

    # -- state without a group ------------------------------------------------------------------

    @property
    def member_id(self) -> str:
        """Always empty: a consumer without a group is no group's member."""
        return ""

    @property
    def generation(self) -> int:
        """Always -1 (Kafka's "no generation")."""
        return -1

    @property
    def is_leader(self) -> bool:
        return False

    @property
    def rebalance_protocol(self) -> str:
        """``none``: without a group nothing rebalances."""
        return "none"

    @property
    def connection_state(self) -> ConnectionState:
        monitor = self._monitor
        return ConnectionState.DISCONNECTED if monitor is None or self._stopping else monitor.state

    @property
    def missing_topics(self) -> frozenset[str]:
        """Subscribed topics the consumer's metadata does not hold."""
        fetcher = self._fetcher
        if fetcher is None or self._stopping:
            return frozenset()
        return frozenset(topic for topic in self._topics if fetcher.partitions_for_topic(topic) is None)

    def processing(self, record: ConsumerRecord[Any, Any]) -> NoProcessing:
        """A no-op block: record spans are made by the group consumer only."""
        return NO_PROCESSING

    # -- assignment and subscription ------------------------------------------------------------

    def assign(self, partitions: Sequence[TopicPartition]) -> None:
        """Fetch exactly ``partitions`` from now on (replacing any earlier assignment), from the
        position each had, else where auto_offset_reset puts it; not allowed while subscribed."""
        wanted = _inputs.partitions(partitions, "partitions")
        if self._topics or self._pattern is not None:
            raise IllegalStateError(
                "assign(): this consumer is subscribed (subscribe() or topics given to the constructor); "
                "call unsubscribe() first: a consumer either subscribes or assigns, as in aiokafka"
            )
        self._assigned = wanted
        if self._fetcher is not None and not self._stopping:
            self._fetcher.assign([_kafka(tp) for tp in wanted])

    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions fetched now: those assigned, or all of the subscribed topics' once known."""
        if self._fetcher is not None:
            return frozenset(TopicPartition(tp.topic, tp.partition) for tp in self._fetcher.assignment())
        return frozenset(self._assigned or ())

    def subscribe(
        self, topics: Sequence[str] | frozenset[str] = (), pattern: str | None = None, listener: Any = None
    ) -> None:
        """Fetch every partition of ``topics`` (or of the topics matching ``pattern``), following their
        metadata as partitions are added; not allowed after ``assign()``. Without a group nothing
        rebalances, so ``listener`` is accepted but never called (as in aiokafka)."""
        if topics and pattern:
            raise TypeError("subscribe() takes topics or a pattern, not both")
        if not topics and not pattern:
            raise TypeError("subscribe() needs topics or a pattern; unsubscribe() drops the subscription")
        names = _inputs.topics(topics) if topics else frozenset()
        regex = _inputs.pattern(pattern) if pattern else None
        chosen = None if listener is None else _inputs.listener(listener)
        if self._assigned is not None:
            raise IllegalStateError(
                "subscribe(): partitions were assigned with assign(); call unsubscribe() first: "
                "a consumer either subscribes or assigns, as in aiokafka"
            )
        self._topics, self._pattern, self._listener = names, regex, chosen
        fetcher = self._fetcher
        if fetcher is not None and not self._stopping:
            if regex is not None:
                fetcher.subscribe(pattern=regex)
            else:
                fetcher.subscribe(topics=sorted(names))
        if self._monitor is not None:
            self._monitor.watch_topics(names)

    def unsubscribe(self) -> None:
        """Drop the subscription or the manual assignment: nothing is fetched until the next
        ``subscribe()`` or ``assign()``."""
        self._topics, self._pattern, self._assigned, self._listener = frozenset(), None, None, None
        if self._fetcher is not None and not self._stopping:
            self._fetcher.unsubscribe()

    def subscription(self) -> frozenset[str]:
        """The topics subscribed: those given, or those the pattern matched (empty when assigned)."""
        if self._fetcher is not None and self._pattern is not None:
            return frozenset(self._fetcher.subscription())
        return self._topics

    # -- records --------------------------------------------------------------------------------

    async def getmany(
        self, *partitions: TopicPartition, timeout_ms: int = 0, max_records: int | None = None
    ) -> dict[TopicPartition, list[ConsumerRecord[Any, Any]]]:
        """Records from the assigned partitions (or the given ones), waiting up to ``timeout_ms``."""
        wanted = [_kafka(tp) for tp in _inputs.partitions(partitions, "partitions")]
        fetcher = self._require_fetcher()
        try:
            answer = await fetcher.getmany(*wanted, timeout_ms=timeout_ms, max_records=max_records)
        except KafkaConsumerStoppedError:
            raise ConsumerStoppedError(NOT_STARTED) from None
        return {TopicPartition(tp.topic, tp.partition): batch for tp, batch in answer.items()}

    async def getone(self, *partitions: TopicPartition) -> ConsumerRecord[Any, Any]:
        """The next record from the assigned partitions (or the given ones), waiting as long as it takes."""
        wanted = [_kafka(tp) for tp in _inputs.partitions(partitions, "partitions")]
        fetcher = self._require_fetcher()
        try:
            record: ConsumerRecord[Any, Any] = await fetcher.getone(*wanted)
        except KafkaConsumerStoppedError:
            raise ConsumerStoppedError(NOT_STARTED) from None
        return record

    def __aiter__(self) -> GrouplessConsumer:
        if self._stopping:  # as aiokafka: a loop that iterates again after stop() must not spin forever
            raise ConsumerStoppedError(NOT_STARTED)
        return self

    async def __anext__(self) -> ConsumerRecord[Any, Any]:
        """aiokafka's iteration (its own ``__anext__``): ends when the consumer stops, and at once on a
        consumer that is not running."""
        if self._fetcher is None or self._stopping:
            raise StopAsyncIteration
        record: ConsumerRecord[Any, Any] = await self._fetcher.__anext__()
        return record

    # -- positions ------------------------------------------------------------------------------

    def _owned(self, partitions: tuple[TopicPartition, ...], call: str) -> tuple[TopicPartition, ...]:
        """``partitions`` if all are assigned (every assigned one when empty), else IllegalStateError
        naming the others."""
        if self._fetcher is None or self._stopping:
            listed = ", ".join(f"{tp.topic}[{tp.partition}]" for tp in partitions) or "partitions"
            raise IllegalStateError(f"{call}({listed}): this consumer is not running; call start() first")
        assigned = self.assignment()
        if not partitions:
            return tuple(sorted(assigned))
        others = [tp for tp in partitions if tp not in assigned]
        if others:
            listed = ", ".join(f"{tp.topic}[{tp.partition}]" for tp in others)
            raise IllegalStateError(
                f"{call}({listed}): not assigned to this consumer; assign() them, or subscribe() to "
                "their topic"
            )
        return partitions

    async def position(self, partition: TopicPartition) -> int:
        """The offset of the next record ``getmany``/``getone`` will return from ``partition`` (assigned)."""
        (tp,) = self._owned((_inputs.partition(partition, "partition"),), "position")
        return int(await self._require_fetcher().position(_kafka(tp)))

    def _fetch_state(
        self, partition: TopicPartition, call: str, read: Callable[[AIOKafkaConsumer, Any], int | None]
    ) -> int | None:
        (tp,) = self._owned((_inputs.partition(partition, "partition"),), call)
        return read(self._require_fetcher(), _kafka(tp))

    def seek(self, partition: TopicPartition, offset: int) -> None:
        """Read ``partition`` (assigned) from ``offset`` on."""
        tp = _inputs.partition(partition, "partition")
        where = _inputs.offset(offset, "offset")
        self._owned((tp,), "seek")
        self._require_fetcher().seek(_kafka(tp), where)

    async def _seek_to(self, partitions: tuple[TopicPartition, ...], call: str, where: str) -> bool:
        wanted = self._owned(_inputs.partitions(partitions, "partitions"), call)
        if not wanted:
            return True
        fetcher = self._require_fetcher()
        seek = fetcher.seek_to_beginning if where == "earliest" else fetcher.seek_to_end
        return bool(await seek(*(_kafka(tp) for tp in wanted)))

    def pause(self, *partitions: TopicPartition) -> None:
        """Stop returning records of these assigned partitions until ``resume``."""
        wanted = self._owned(_inputs.partitions(partitions, "partitions"), "pause") if partitions else ()
        if wanted:
            self._require_fetcher().pause(*(_kafka(tp) for tp in wanted))

    def resume(self, *partitions: TopicPartition) -> None:
        """Return records of these paused partitions again."""
        wanted = self._owned(_inputs.partitions(partitions, "partitions"), "resume") if partitions else ()
        if wanted:
            self._require_fetcher().resume(*(_kafka(tp) for tp in wanted))

    def paused(self) -> frozenset[TopicPartition]:
        """The partitions paused with ``pause`` (and still assigned)."""
        if self._fetcher is None:
            return frozenset()
        return frozenset(TopicPartition(tp.topic, tp.partition) for tp in self._fetcher.paused())

    # -- what needs a group ---------------------------------------------------------------------

    async def commit(self, offsets: Mapping[Any, Any] | None = None) -> None:
        """Refused: offsets are committed to a group (aiokafka: ``IllegalOperation``)."""
        _requires_group("commit()")

    async def committed(self, partition: TopicPartition) -> int | None:
        """Refused: committed offsets are a group's (aiokafka: ``IllegalOperation``)."""
        _requires_group("committed()")

    async def seek_to_committed(self, *partitions: TopicPartition) -> dict[TopicPartition, int | None]:
        """Refused: committed offsets are a group's (aiokafka: ``IllegalOperation``). As in aiokafka,
        bad or unassigned partitions are reported first (TypeError, IllegalStateError)."""
        wanted = _inputs.partitions(partitions, "partitions")
        if self._fetcher is not None and not self._stopping:
            self._owned(wanted, "seek_to_committed")
        _requires_group("seek_to_committed()")


def _requires_group(call: str) -> NoReturn:
    raise IllegalOperation(
        f"{call} requires a group_id: this consumer was built with group_id=None, so there is no group "
        "to commit offsets to or read them from (aiokafka raises the same IllegalOperation). Keep offsets "
        "elsewhere and seek() to them, or give the consumer a group_id"
    )


def _kafka(tp: TopicPartition) -> KafkaTopicPartition:
    return KafkaTopicPartition(tp.topic, tp.partition)

"""The mailbox loop that runs one sans-IO membership machine against a real coordinator.

One task owns the machine: it waits for the next event (a response, an application call, a finished
callback) or the machine's next deadline, feeds it in, and carries out the actions that come back.
Requests and callbacks run as child tasks of one task group (``asyncio.TaskGroup``) and answer with
events, so the loop never blocks on the network or on the application, and nothing outlives ``run()``.
The standard library's structured concurrency, not anyio's: this thread always runs asyncio, and
anyio's asyncio backend took ~15 ms of CPU to import on the membership thread, on the path of every
restart. The loop runs on the membership thread (thread.py); it is not thread-safe itself.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

import assignors as assignor_lib
from staticconsumer import _aiokafka
from staticconsumer.connection.access import CoordinatorAddress
from staticconsumer.errors import (
    ConsumerProtocolUnsupportedError,
    DecodeError,
    EncodeError,
    ErrorCode,
    NoCommonApiVersionError,
    StaticConsumerError,
    UnsupportedVersionForFieldError,
)
from staticconsumer.membership import (
    FailureKind,
    GroupProtocol,
    MembershipObserver,
    MemberState,
    OffsetAndMetadata,
    RequestToken,
    TopicPartition,
    actions,
    events,
)
from staticconsumer.protocol import (
    DescribedGroup,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    Message,
    Subscription,
    TopicPartitions,
    assigned_partitions,
    subscribed_topics,
)
from staticconsumer.runtime import MemberSnapshot
from staticconsumer.runtime import Subscription as Topics

from .duties import LeaderDuties
from .metadata import TopicMetadata, TopicReplicas
from .offsets import fetch_committed
from .requests import REQUESTS, RequestSpec

if TYPE_CHECKING:
    from uuid import UUID

    from staticconsumer.leader import GroupView
    from staticconsumer.membership import AnyMachine
    from staticconsumer.runtime import PartitionOwner

log = logging.getLogger("staticconsumer.runtime")

CommitDone = Callable[[Exception | None], None]


def encode_subscription(
    topics: frozenset[str],
    user_data: bytes | None,
    rack: str | None,
    owned: frozenset[TopicPartition],
    generation: int,
) -> bytes:
    """ConsumerProtocolSubscription v3, as the Java client writes it (topics sorted, owned sorted)."""
    by_topic: dict[str, list[int]] = {}
    for tp in sorted(owned):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return Subscription(
        topics=sorted(topics),
        user_data=user_data,
        owned_partitions=[TopicPartitions(topic=t, partitions=p) for t, p in by_topic.items()],
        generation_id=generation,
        rack_id=rack,
    ).encode()


def _claimed(metadata: bytes | None) -> tuple[TopicPartition, ...]:
    """The partitions a member said it owned when it joined (cooperative members; empty for eager)."""
    if not metadata:
        return ()
    try:
        owned = Subscription.decode(metadata).owned_partitions
    except Exception:
        return ()
    return tuple(TopicPartition(o.topic, p) for o in owned for p in o.partitions)


KNOWN_COORDINATOR_SECONDS = 5.0
"""How long the coordinator the access check found stands in for the machine's first FindCoordinator."""

FIRST_FETCH_GRACE_SECONDS = 1.0
"""How long the leader duties' first round waits, after the first assignment reached the application,
for its next poll (its first fetch's records taken) before asking the coordinator anyway."""
FIRST_FETCH_CHECK_SECONDS = 0.02
"""How often that wait looks at the application's last poll."""

INLINE_ASSIGNMENT_MAX = 20_000
"""Members times partitions up to which a built-in assignor runs on the membership loop itself rather than
on a worker thread: at most ~1 ms of CPU (cooperative-sticky, 100 members x 200 partitions: 0.3 ms),
against a thread hand-off each way that cost the leader 6-12 ms under load (N=12 dynamic rolling
bounce), while every member of the group waited, owning nothing, for its SyncGroup answer."""

PREFETCH_MAX_PARTITIONS = 256
"""Above this many partitions in the subscription, committed offsets are read only for the assignment,
after SyncGroup: reading every partition's offset costs the member ~1.8 us of CPU per partition on its
membership thread (request built, answer decoded: ~1.1 ms at 600, on the restart's critical path) and the
coordinator a read per partition per member, more than the one round trip it saves (issue 27: was 2,000).
Measured against that round trip (``benchmarks/prefetch_bound.py``, every partition committed, load 19):
reading 256 ahead was the quicker in 141 of 300 repeats (about even), 384 in 125, 600 in 98 (median 2.71
ms against 1.87 for the round trip after SyncGroup): the bound sits near the break-even, and a fleet's
600-partition topic is past it."""


class _Inbox:
    """The loop's events in arrival order: one reader, never bounded.

    The reader waits for the next event or the machine's next deadline on one plain future, woken by
    :meth:`put` or by a timer that is armed once per deadline (kept while the deadline stays, as it does
    between a heartbeat's request and its answer) rather than an ``asyncio.timeout`` per turn, whose
    expiry cancels the reader and unwinds an exception (issue 27: an idle member's thread wakes for
    little else than its heartbeats, so those turns were most of its CPU)."""

    def __init__(self) -> None:
        self._events: deque[events.Event] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: float | None = None

    def put(self, event: events.Event) -> None:
        self._events.append(event)
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _expired(self) -> None:
        self._timer, self._timer_at = None, None
        self._wake()

    async def get(self, deadline: float | None = None, now: float = 0.0) -> events.Event | None:
        """The next event; None once ``deadline`` (monotonic seconds, as ``now``) passed without one."""
        if not self._events:
            if deadline is not None and deadline <= now:
                return None
            loop = asyncio.get_running_loop()
            if deadline != self._timer_at:
                if self._timer is not None:
                    self._timer.cancel()
                self._timer, self._timer_at = None, deadline
                if deadline is not None:
                    self._timer = loop.call_later(deadline - now, self._expired)
            self._waiter = waiter = loop.create_future()
            try:
                await waiter  # woken by put() or by the deadline's timer
            finally:
                self._waiter = None
            if not self._events:
                return None
        return self._events.popleft()

    def close(self) -> None:
        """Cancel the deadline's timer (the loop ended)."""
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._timer_at = None, None


def decode_assignment(data: bytes) -> list[TopicPartition]:
    """A SyncGroup assignment as partitions (an empty one means the leader gave this member nothing).

    Defined here, where every classic member needs it, not with the leader's step (``assignment``): a
    member that computes no assignment (a follower, a static leader told SkipAssignment) never loads
    that module (issue 26)."""
    return [TopicPartition(topic, partition) for topic, partition in assigned_partitions(data)]


def compute_assignment(
    assignor: assignor_lib.Assignor,
    members: Sequence[assignor_lib.Member],
    topics: Mapping[str, assignor_lib.TopicInfo],
) -> dict[str, bytes]:
    """The leader's step (``assignment.compute_assignment``), loaded on a leader's first computation."""
    from .assignment import compute_assignment as compute

    return compute(assignor, members, topics)


class MembershipLoop:
    """Owns one membership machine and the coordinator connection of one consumer."""

    def __init__(
        self,
        *,
        machine: AnyMachine,
        client: Any,
        owner: PartitionOwner,
        assignors: Sequence[assignor_lib.Assignor],
        topics: Topics,
        client_rack: str | None,
        auto_commit_on_revoke: bool,
        on_request: Callable[[str, int, Message], None] | None = None,
        observers: Sequence[MembershipObserver] = (),
        metadata_refresh_ms: int = 300_000,
        version_caps: Mapping[str, int] | None = None,
        known_coordinator: CoordinatorAddress | None = None,
        polled: Callable[[], float] | None = None,
        known_metadata: tuple[frozenset[str], TopicReplicas] | None = None,
        known_topic_ids: Mapping[UUID, str] | None = None,
    ) -> None:
        self.machine = machine
        self._polled = polled
        """When the application last polled (monotonic seconds), read at every step: polls since the last
        step are told to the machine then, rather than each waking this thread (issue 27: idle CPU). The
        machine steps at least every heartbeat interval while joined, and at its poll deadline."""
        self._poll_told = float("-inf")
        self._last_now = float("-inf")
        self._known_coordinator = known_coordinator
        """Found by the access check a moment before: answers the machine's first FindCoordinator, if that
        comes within :data:`KNOWN_COORDINATOR_SECONDS` (not after a wait for the first subscribe())."""
        self._known_until = self.now() + KNOWN_COORDINATOR_SECONDS
        self.config = machine.config
        self._client = client
        self._owner = owner
        self._assignors = {a.name: a for a in assignors}
        self._assignor_order = [a.name for a in assignors]
        self._topics = topics
        self._rack = client_rack
        self._auto_commit_on_revoke = auto_commit_on_revoke
        self._on_request = on_request
        self._observers = tuple(observers)
        self._version_caps = dict(version_caps or {})
        self._refresh_seconds = metadata_refresh_ms / 1000
        self._metadata = TopicMetadata(
            lambda topics: _aiokafka.topic_partitions(self._client, topics), now=self.now
        )
        self._known_topic_ids = dict(known_topic_ids or {})
        """KIP-848: topic ids the bootstrap probe's answer named (an id never names another topic), so
        resolving the first assignment's ids costs no Metadata request (and no connection for it): at
        N=300 that request took ~7 ms of a restart's ~50 against ~1 ms at N=3 (600 partitions, issue 27)."""
        if known_metadata is not None:
            # The bootstrap probe named the subscribed topics a moment ago: the first join's read-ahead and
            # committed-offset prefetch use its answer instead of sending the same Metadata request again.
            self._metadata.seed(*known_metadata)
        self._rebalance_began: float | None = None
        """When this member sent the first JoinGroup since its last assignment."""
        self._prefetch: tuple[int, asyncio.Future[Mapping[TopicPartition, int] | None]] | None = None
        """Committed offsets of the subscription, read once the generation was joined (see
        :meth:`_prefetch_committed`): the generation and the answer (None if that read failed)."""
        self.duties = LeaderDuties(
            own_topics=lambda: self._topics.topics,
            refresh_interval=self._refresh_seconds,
            partition_counts=self._partition_counts,
            describe=self._describe_group,
            rejoin=self.update_protocols,
            first_fetched=self._first_fetched,
        )
        self._telling: asyncio.Future[None] | None = None
        """An empty revoke the listener is still being told of (:meth:`_revoke_nothing`): the
        application's next partition call waits for it, so the listener's calls keep their order."""
        self._handed_over: asyncio.Future[float] | None = None
        """When the first assignment reached the application (its fetcher), for :meth:`_first_fetched`."""
        self._held_for: int | None = None
        """The generation whose snapshot waits for its assign (:meth:`_publish`): None when none does."""
        self._coordinator: int | None = None
        self._inbox = _Inbox()
        self._commits: dict[int, CommitDone] = {}
        self._commits_unsent: list[asyncio.Future[None]] = []
        """OffsetCommits not yet handed to the connection: a JoinGroup waits for them (:meth:`_request`)."""
        self._next_commit_id = 0
        self._task_group: asyncio.TaskGroup | None = None
        self._children: set[asyncio.Task[None]] = set()
        self._consumer_protocol = machine.group_protocol == "consumer"
        """KIP-848: the broker assigns and resolves patterns; no client-side assignor, no leader duties."""
        self._snapshot = MemberSnapshot(
            rebalance_protocol=machine.rebalance_protocol.value,
            group_protocol="consumer" if self._consumer_protocol else "classic",
        )
        self.stopped = asyncio.Event()
        self.stop_error: Exception | None = None

    # -- inputs (called on the membership thread) ------------------------------------------------

    @staticmethod
    def now() -> float:
        return time.monotonic()

    @property
    def snapshot(self) -> MemberSnapshot:
        return self._snapshot

    def post(self, event: events.Event) -> None:
        """Hand an event to the loop; never blocks."""
        self._inbox.put(event)

    def begin_commit(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        done: CommitDone,
        caller: object | None = None,
    ) -> None:
        """Commit ``offsets``; ``done(error)`` is called with the machine's verdict. ``caller`` rides on
        the event for observers (the trace context the application committed in)."""
        if self.stopped.is_set():
            done(self.stop_error or StaticConsumerError("consumer stopped"))
            return
        self._next_commit_id += 1
        self._commits[self._next_commit_id] = done
        self.post(
            events.CommitRequested(
                now=self.now(), commit_id=self._next_commit_id, offsets=dict(offsets), caller=caller
            )
        )

    def stop(self, leave_group: bool) -> None:
        self.post(events.Stop(now=self.now(), leave_group=leave_group))

    def update_protocols(self, reason: str) -> None:
        """Rejoin with fresh subscription metadata (the subscription changed, or the leader rebalances)."""
        topics, pattern = self._subscribed()
        self.post(
            events.UpdateProtocols(
                now=self.now(), protocols=self.protocols(), reason=reason, topics=topics, pattern=pattern
            )
        )

    def _subscribed(self) -> tuple[frozenset[str], str | None]:
        """The subscription as the consumer protocol sends it: topic names, or the pattern itself (the
        broker resolves it); the classic machine reads ``protocols()`` instead."""
        pattern = self._topics.pattern
        return self._topics.names, None if pattern is None else pattern.pattern

    def resubscribe(self, reason: str) -> None:
        """The application replaced the subscription (``Subscription.replace``): match a new pattern
        against fresh metadata first, then rejoin with the new subscription metadata."""
        self._spawn(lambda: self._resubscribe(reason))

    async def _resubscribe(self, reason: str) -> None:
        if self._topics.pattern is not None:
            try:
                self._topics.refresh(
                    await _aiokafka.topic_partitions(
                        self._client, None, internal=not self._topics.exclude_internal
                    )
                )
            except Exception as error:  # matched at the next refresh instead
                log.info("metadata for the new subscription pattern failed: %s", error)
        self.update_protocols(reason)

    async def committed(self, partitions: frozenset[TopicPartition]) -> Mapping[TopicPartition, int]:
        """The group's committed offsets (-1: none), read on the coordinator connection; retried until
        it succeeds (the caller bounds it)."""
        return await self._fetch_committed(partitions)

    def joining(self, join: actions.SendJoinGroup) -> actions.SendJoinGroup:
        """The JoinGroup with the subscription encoded as the member joins (Java's ``metadata()``): what a
        cooperative member still owns, the generation it owns it from, and the assignors' user data of
        the assignment it last received. Encoded earlier, any of these would be stale."""
        return msgspec.structs.replace(join, protocols=self.protocols())

    def protocols(self) -> tuple[GroupProtocol, ...]:
        topics = self._topics.topics
        owned = self.machine.assignment
        generation = self.machine.generation
        return tuple(
            GroupProtocol(
                name,
                encode_subscription(
                    topics,
                    self._assignors[name].subscription_user_data(topics),
                    self._rack,
                    owned,
                    generation,
                ),
            )
            for name in self._assignor_order
        )

    # -- the loop -------------------------------------------------------------------------------

    async def run(self) -> None:
        """Run until the machine reports Stopped. Cancel the calling scope to abandon it."""
        try:
            async with asyncio.TaskGroup() as task_group:
                self._task_group = task_group
                self._spawn(self.duties.run)
                if self._topics.pattern is not None and not self._consumer_protocol:
                    await self._refresh_pattern()
                if not self._consumer_protocol:
                    self._spawn(self._watch_pattern)  # idle until subscribe(pattern=...)
                topics, pattern = self._subscribed()
                await self._step(
                    events.Start(now=self.now(), protocols=self.protocols(), topics=topics, pattern=pattern)
                )
                while not self.stopped.is_set():
                    event = await self._inbox.get(self.machine.next_deadline(), self.now())
                    await self._step(event or events.Tick(now=self.now()))  # None: the deadline came
                for child in list(self._children):  # requests, callbacks, duties: done with the machine
                    child.cancel()
        finally:
            self._task_group = None
            self._inbox.close()
            waiting, self._commits = self._commits, {}
            for done in waiting.values():
                done(self.stop_error or StaticConsumerError("consumer stopped"))
            self.stopped.set()

    async def _step(self, event: events.Event) -> None:
        if isinstance(event, events.PollCalled):
            self._poll_told = max(self._poll_told, event.now)
        elif self._polled is not None and not isinstance(event, events.Start):
            polled = self._polled()
            if polled > self._poll_told:
                self._poll_told = polled
                await self._step(events.PollCalled(now=max(polled, self._last_now)))
        self._last_now = max(self._last_now, event.now)
        produced = self.machine.handle(event)
        for observer in self._observers:
            try:
                observer.observe(event, produced, self.machine)
            except Exception:
                log.exception("membership observer %r failed; ignoring it for this event", observer)
        for action in produced:
            self._dispatch(action)
        self._publish()

    def _publish(self) -> None:
        m = self.machine
        if (
            self._held_for is not None
            and m.generation == self._held_for
            and m.state is MemberState.STABLE
            and m.fatal_error is None
        ):
            # The assign of this generation waits for its committed offsets: the snapshot goes with it,
            # so the application's thread is woken once for both, not once now and again for the
            # assign (issue 26). Anything else (a new generation, a rejoin, an error) goes at once.
            return
        snapshot = MemberSnapshot(
            state=m.state,
            member_id=m.member_id,
            generation=m.generation,
            is_leader=m.is_leader,
            leadership_guessed=m.leadership_guessed,
            protocol_name=m.protocol_name,
            rebalance_protocol=m.rebalance_protocol.value,
            group_protocol=self._snapshot.group_protocol,
            assignment=m.assignment,
            fatal_error=m.fatal_error,
            subscription=self._topics.topics,
        )
        if snapshot != self._snapshot:
            self._snapshot = snapshot
            self._owner.membership_changed(snapshot)

    def _spawn(self, work: Callable[[], Coroutine[Any, Any, None]]) -> None:
        assert self._task_group is not None
        self._children.add(self._task_group.create_task(self._child(work)))

    async def _child(self, work: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """A spawned task leaves ``_children`` as it ends, rather than by a done callback, which cost each
        request (an idle member's heartbeat) one more turn of the membership loop (issue 27: idle CPU).
        One cancelled before its first step stays there, cancelled: only the loop's end reads them."""
        try:
            await work()
        finally:
            task = asyncio.current_task()
            if task is not None:
                self._children.discard(task)

    def _dispatch(self, action: actions.Action) -> None:
        if isinstance(action, actions.SendJoinGroup):
            self._rejoining()
            if self._topics.pattern is not None:
                join = action
                self._spawn(lambda: self._join_matched(join))
                return
            action = self.joining(action)
        spec = REQUESTS.get(type(action))
        if spec is not None:
            if isinstance(action, actions.SendOffsetCommit):
                unsent: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                self._commits_unsent.append(unsent)
                self._spawn(lambda: self._request(action, spec, unsent))
                return
            if not isinstance(action, actions.SendSyncGroup):
                self._spawn(lambda: self._request(action, spec))
                return
            # A follower reads ahead first: its OffsetFetch is answered while the leader assigns, so the
            # SyncGroup answer finds the assignment's offsets known; the leader's read goes behind its
            # SyncGroup, which every member's answer waits for (see _prefetch_committed).
            leads = self._leads(action)
            if not leads:
                self._prefetch_committed(action.generation)
            self._spawn(lambda: self._request(action, spec))
            if leads:
                self._prefetch_committed(action.generation)
        elif isinstance(action, actions.DisconnectCoordinator):
            log.info("coordinator unknown: %s", action.reason)
            if self._coordinator is not None:
                _aiokafka.drop_connection(self._client, self._coordinator)
            self._coordinator = None
        elif isinstance(action, actions.LeaderElected):
            if action.skip_assignment:
                self.duties.leader_elected(action.generation, action.group_topics, None)
        elif isinstance(action, actions.RunAssignor):
            # No read ahead here: the coordinator serves one connection's requests in order, so the leader's
            # SyncGroup, which every member's SyncGroup answer waits for, would queue behind an OffsetFetch.
            self._spawn(lambda: self._assign(action))
        elif isinstance(action, actions.LeadershipGuessed):
            log.info(
                "JoinGroup below v9 named %s leader of generation %d; it carries our instance id, "
                "so this member takes up the leader's duties",
                action.leader_id,
                action.generation,
            )
            self.duties.leadership_guessed(action.generation)
        elif isinstance(action, actions.StopFetching):
            if action.partitions is None:
                self.duties.membership_lost()
            self._owner.stop_fetching(action.partitions)
        elif isinstance(action, actions.PartitionsRevoked):
            if action.partitions:
                revoking = self._hand_now(
                    lambda: self._owner.revoke(action.partitions, action.reason, self._auto_commit_on_revoke)
                )
                self._spawn(lambda: self._revoke(action, revoking))
            else:
                self._revoke_nothing(action)
        elif isinstance(action, actions.PartitionsLost):
            losing = self._hand_now(lambda: self._owner.lose(action.partitions, action.reason))
            self._spawn(lambda: self._lose(action, losing))
        elif isinstance(action, actions.PartitionsAssigned):
            committed = self._committed_known(action)
            assigning = (
                None
                if committed is None
                else self._hand_now(
                    lambda: self._owner.assign(action.partitions, action.owned, action.generation, committed)
                )
            )
            if committed is None and action.partitions and self._held_for is None:
                self._held_for = action.generation
            self._spawn(lambda: self._take(action, assigning, committed))
        elif isinstance(action, actions.CommitCompleted):
            self._commit_completed(action)
        elif isinstance(action, actions.Fatal):
            self.stop_error = action.error
        elif isinstance(action, actions.Stopped):
            self.stop_error = action.error or self.stop_error
            self.stopped.set()
        else:  # pragma: no cover - a new action type must be handled here
            raise AssertionError(f"unhandled action {action!r}")

    # -- requests -------------------------------------------------------------------------------

    def _failed(self, token: RequestToken, kind: FailureKind, error: BaseException) -> None:
        # DEBUG: the machine logs what it does about a failure, and the connection monitor an outage once;
        # at INFO, an outage's retries were a line a second.
        log.debug("request %d failed (%s): %r", token.request_id, kind.value, error)
        self.post(events.RequestFailed(now=self.now(), token=token, kind=kind, detail=str(error)))

    async def _request(
        self, action: Any, spec: RequestSpec, unsent: asyncio.Future[None] | None = None
    ) -> None:
        """Send one request action at the version the broker speaks; answer the machine with its event.

        A JoinGroup goes on the wire after every OffsetCommit the machine asked for before it (``unsent``
        is resolved as the commit is handed to the connection, which writes it without suspending): the
        machine sends the pre-join commit and the JoinGroup back to back, and the coordinator handles one
        connection's requests in order, so the commit is applied before the join is read."""
        try:
            if isinstance(action, actions.SendJoinGroup):
                for commit in tuple(self._commits_unsent):
                    await commit
            await self._exchange(action, spec, unsent)
        finally:
            if unsent is not None:
                if not unsent.done():
                    unsent.set_result(None)
                self._commits_unsent.remove(unsent)

    async def _exchange(self, action: Any, spec: RequestSpec, unsent: asyncio.Future[None] | None) -> None:
        token: RequestToken = action.token
        known, self._known_coordinator = self._known_coordinator, None
        fresh = known is not None and self.now() < self._known_until
        if known is not None and fresh and isinstance(action, actions.FindCoordinator):
            # Just found by the access check, its coordination connection open: asking again would cost
            # a round trip on the way to the first join. Were it stale, the join says NOT_COORDINATOR.
            self._coordinator = known.node_id
            self.post(
                events.FindCoordinatorResponse(
                    now=self.now(), token=token, node_id=known.node_id, host=known.host, port=known.port
                )
            )
            return
        if isinstance(action, actions.ResolveTopicIds) and action.topic_ids <= self._known_topic_ids.keys():
            names = {topic_id: self._known_topic_ids[topic_id] for topic_id in action.topic_ids}
            self.post(events.TopicIdsResolved(now=self.now(), token=token, names=names))
            return
        try:
            if spec.to_coordinator:
                if self._coordinator is None:
                    raise ConnectionError("coordinator unknown")
                node = self._coordinator
            else:
                node = _aiokafka.any_node(self._client)
            coordination = spec.to_coordinator
            versions = await _aiokafka.broker_versions(self._client, node, coordination=coordination)
            if spec.check is not None:
                spec.check(versions, node)
            api = spec.message.API_NAME
            version = _aiokafka.negotiated_version(versions, spec.message, self._version_caps.get(api))
            message = spec.build(action, version, self.config)
            if self._on_request is not None:
                self._on_request(type(message).__name__, version, message)
            if unsent is not None:
                unsent.set_result(None)  # a join waiting for it resumes after this task's write below
            exchange = await _aiokafka.send(
                self._client,
                node,
                message,
                coordination=coordination,
                max_version=version,
                timeout_ms=spec.timeout_ms(action, self.config),
            )
            event = spec.answer(action, exchange.response, self.now())
            if spec.explain is not None:
                event = spec.explain(event, versions, node)
        except (
            UnsupportedVersionForFieldError,
            NoCommonApiVersionError,
            ConsumerProtocolUnsupportedError,
        ) as error:
            self._failed(token, FailureKind.UNSUPPORTED_VERSION, error)
        except EncodeError as error:
            self._failed(token, FailureKind.INVALID_REQUEST, error)
        except DecodeError as error:
            _aiokafka.report_unreadable(self._client, node, error)  # rate-limited: it fails every retry
            self._failed(token, FailureKind.DISCONNECTED, error)
        except Exception as error:  # connection lost, timeout, node not ready: the machine decides
            kind = FailureKind.TIMED_OUT if _aiokafka.is_timeout(error) else FailureKind.DISCONNECTED
            self._failed(token, kind, error)
        else:
            if isinstance(event, events.FindCoordinatorResponse) and event.error_code == ErrorCode.NONE:
                self._coordinator = event.node_id
            if (
                isinstance(event, events.JoinGroupResponse)
                and event.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
            ):
                event = msgspec.structs.replace(event, refusal_detail=await self._group_protocols())
            self.post(event)

    # -- the leader's step ------------------------------------------------------------------------

    async def _assign(self, a: actions.RunAssignor) -> None:
        from .assignment import decode_members, topic_infos  # the leader's step: loaded by a leader only

        name = a.protocol_name or self._assignor_order[0]
        try:
            assignor = self._assignors[name]
            members = decode_members(a.members)
            began = self.now() if self._rebalance_began is None else self._rebalance_began
            metadata = await self._metadata.read_since(began, a.group_topics)
            topics = topic_infos(metadata)
            self.duties.leader_elected(
                a.generation, a.group_topics, {topic: info.partitions for topic, info in topics.items()}
            )
            if _quick(assignor, members, topics):
                encoded = compute_assignment(assignor, members, topics)
            else:
                # On a worker thread: the membership thread is shared by every consumer of the process, and
                # an assignor (a user's own, or a huge group) that takes seconds must not hold up their
                # heartbeats.
                encoded = await asyncio.to_thread(compute_assignment, assignor, members, topics)
        except Exception as error:
            log.error("the assignment for generation %d failed: %s", a.generation, error, exc_info=error)
            self.post(events.AssignmentFailed(now=self.now(), generation=a.generation, error=error))
            return
        self.post(events.AssignmentComputed(now=self.now(), generation=a.generation, assignments=encoded))

    def _rejoining(self) -> None:
        """The last generation's leader will most likely lead the next: it reads the group's topics now,
        while the JoinGroup barrier waits for the other members, not after it lifts. A member that has
        never read its own topics reads them too, for :meth:`_prefetch_committed` (once: any later read
        of them, the leader's or the audit's, keeps them known)."""
        if self._rebalance_began is None:
            self._rebalance_began = self.now()
        if self._consumer_protocol:
            return
        led = self.duties.led
        ahead = led if led and not self._metadata.reading(led) else frozenset()
        if ahead:
            self._spawn(lambda: self._read_ahead(ahead))
        own = self._topics.topics
        if own and not own <= ahead and not self._metadata.covers(own):
            self._spawn(lambda: self._read_ahead(own))

    async def _read_ahead(self, topics: frozenset[str]) -> None:
        try:
            await self._metadata.fresh(topics)
        except Exception as error:  # the assignment reads again
            log.info("reading the group's topics ahead of the assignment failed: %r", error)

    # -- ownership, carried out by the application ------------------------------------------------

    def _finished(
        self, callback_id: int, offsets: Mapping[TopicPartition, OffsetAndMetadata] | None = None
    ) -> None:
        self.post(
            events.CallbackFinished(now=self.now(), callback_id=callback_id, offsets_to_commit=offsets or {})
        )

    def _hand_now(self, call: Callable[[], Awaitable[Any]]) -> Awaitable[Any] | None:
        """Make a partition call now, in the turn of the loop that decided it, rather than in the first
        turn of the task that awaits it: the application's thread then gets it in the same wake-up as the
        snapshot and StopFetching sent before it, instead of being woken again a turn later (issue 26: a
        rebalance's JoinGroup waits for the revoke to come back, every member's first fetch for the
        assign, and on a loaded machine each wake-up of the other thread cost milliseconds).

        The snapshot is published first, as it reached the application before the call when the call
        came a turn later. None when an empty revoke told before is still running (the call waits for
        it, :meth:`_told`); a call that fails at once fails its awaitable."""
        telling = self._telling
        if telling is not None:
            if not telling.done():
                return None
            self._telling = None
        self._publish()
        try:
            return call()
        except Exception as error:
            failed: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            failed.set_exception(error)
            return failed

    async def _revoke(
        self,
        a: actions.PartitionsRevoked,
        revoking: Awaitable[dict[TopicPartition, OffsetAndMetadata]] | None = None,
    ) -> None:
        if revoking is None:
            await self._told()
        offsets: Mapping[TopicPartition, OffsetAndMetadata] = {}
        try:
            if revoking is None:
                revoking = self._owner.revoke(a.partitions, a.reason, self._auto_commit_on_revoke)
            offsets = await revoking
        except Exception:
            log.exception("revoking %d partitions failed in the application; continuing", len(a.partitions))
        self._finished(a.callback_id, offsets)

    def _revoke_nothing(self, a: actions.PartitionsRevoked) -> None:
        """An eager (re)join that owns nothing, every start's first join among them: the listener still
        hears ``on_partitions_revoked`` with no partitions, as aiokafka's does (Java's skips it on a first
        join, which has no generation; dropping it measured no gain, see benchmarks/import_cost.md), but
        the JoinGroup does not wait for the application's loop to run it (a start's loop is busy starting
        the fetcher then): nothing is released, nothing is committed. The next partition call waits."""
        told: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        previous, self._telling = self._telling, told

        async def tell() -> None:
            try:
                if previous is not None:
                    await previous
                await self._owner.revoke(a.partitions, a.reason, self._auto_commit_on_revoke)
            except Exception:
                log.exception("revoking 0 partitions failed in the application; continuing")
            finally:
                told.set_result(None)

        self._spawn(tell)
        self._finished(a.callback_id)

    async def _told(self) -> None:
        """Wait until the listener has heard of an empty revoke told before (:meth:`_revoke_nothing`)."""
        telling = self._telling
        if telling is not None:
            await telling
            if self._telling is telling:
                self._telling = None

    async def _lose(self, a: actions.PartitionsLost, losing: Awaitable[None] | None = None) -> None:
        if losing is None:
            await self._told()
        try:
            await (losing if losing is not None else self._owner.lose(a.partitions, a.reason))
        except Exception:
            log.exception("giving up %d lost partitions failed in the application", len(a.partitions))
        self._finished(a.callback_id)

    def _leads(self, sync: actions.SendSyncGroup) -> bool:
        """This SyncGroup is the leader's (it carries the assignment, or the member leads without one)."""
        return bool(sync.assignments) or self.machine.is_leader or self.machine.leadership_guessed

    def _prefetch_committed(self, generation: int) -> None:
        """Read the committed offsets of every partition of the subscription as soon as ``generation`` is
        joined. A follower sends the read just before its SyncGroup on the same connection: the
        coordinator serves a connection's requests in order, so it is answered while the SyncGroup waits
        for the leader's, and the SyncGroup answer, which comes after it, finds the offsets of the
        assignment known and hands it over in the same turn. The leader asks only once its SyncGroup is
        out, right behind it: that SyncGroup, every member's answer waits for.

        Otherwise OffsetFetch follows SyncGroup, and every member's assigned callback (so its first
        fetch) waits one round trip more, in the one interval of a rebalance in which no partition has
        an owner. Reading before SyncGroup answers is as safe as after it: the JoinGroup answer comes
        once the barrier has lifted, so every member giving a partition up (eager: all of them; a
        cooperative revoke: in the previous round) committed before it rejoined, on the connection its
        JoinGroup then took, and the coordinator refuses commits from the old generation from then on.
        Partitions the last metadata read did not know (a topic just grown) are read after SyncGroup as
        before; so is everything when this read fails or the subscription is above
        :data:`PREFETCH_MAX_PARTITIONS`.
        """
        if self._prefetch is not None and self._prefetch[0] == generation:
            return
        known = self._metadata.known(self._topics.topics)
        if sum(len(rows) for rows in known.values()) > PREFETCH_MAX_PARTITIONS:
            return  # counted before any is built: 600 TopicPartitions cost 0.18 ms per restart (issue 27)
        partitions = frozenset(
            TopicPartition(topic, row.partition) for topic, rows in known.items() for row in rows
        )
        if not partitions:
            return
        answer: asyncio.Future[Mapping[TopicPartition, int] | None] = (
            asyncio.get_running_loop().create_future()
        )
        self._prefetch = (generation, answer)

        async def prefetch() -> None:
            try:
                answer.set_result(await self._fetch_committed(partitions, once=True))
            except Exception as error:  # read again, with retries, once assigned
                log.info("reading committed offsets ahead of SyncGroup failed: %r", error)
            finally:
                if not answer.done():
                    answer.set_result(None)

        self._spawn(prefetch)

    async def _committed_of(self, a: actions.PartitionsAssigned) -> Mapping[TopicPartition, int]:
        """The committed offsets of ``a.partitions``: from the read made when the generation was joined,
        the rest (if any) asked for now."""
        prefetch, self._prefetch = self._prefetch, None
        committed: dict[TopicPartition, int] = {}
        if prefetch is not None and prefetch[0] == a.generation:
            answer = await prefetch[1]
            if answer is not None:
                committed = {tp: answer[tp] for tp in a.partitions if tp in answer}
        missing = a.partitions - committed.keys()
        if missing:
            committed.update(await self._fetch_committed(frozenset(missing)))
        return committed

    def _release_snapshot(self, generation: int) -> None:
        """The assign of ``generation`` no longer waits for its committed offsets: snapshots go again."""
        if self._held_for == generation:
            self._held_for = None

    def _committed_known(self, a: actions.PartitionsAssigned) -> Mapping[TopicPartition, int] | None:
        """The committed offsets of ``a.partitions`` when the read made as the generation was joined has
        answered for every one of them already (so the assign can be handed over at once); else None."""
        if not a.partitions:
            return {}
        prefetch = self._prefetch
        if prefetch is None or prefetch[0] != a.generation or not prefetch[1].done():
            return None
        answer = prefetch[1].result()
        if answer is None or not a.partitions <= answer.keys():
            return None
        self._prefetch = None
        return {tp: answer[tp] for tp in a.partitions}

    async def _take(
        self,
        a: actions.PartitionsAssigned,
        assigning: Awaitable[None] | None = None,
        committed: Mapping[TopicPartition, int] | None = None,
    ) -> None:
        """Committed offsets first (here, on the coordinator connection), then the application fetches.
        ``assigning``: the call already handed over (:meth:`_hand_now`), with ``committed``."""
        self._rebalance_began = None
        if committed is None:
            try:
                committed = await self._committed_of(a) if a.partitions else {}
            except StaticConsumerError as error:
                self.post(events.Unrecoverable(now=self.now(), error=error))
                return
            finally:
                self._release_snapshot(a.generation)
        if assigning is None:
            await self._told()
            if self._held_for is None:
                self._publish()  # the snapshot held for this assign, just before it
        try:
            await (
                assigning
                if assigning is not None
                else self._owner.assign(a.partitions, a.owned, a.generation, committed)
            )
        except Exception:
            log.exception("assigning %d partitions failed in the application", len(a.partitions))
        self._hand_over_done()
        assignor = None if self._consumer_protocol else self._assignors.get(self.machine.protocol_name or "")
        if assignor is not None:
            assignor.on_assignment(
                assignor_lib.MemberAssignment(
                    partitions=[(tp.topic, tp.partition) for tp in sorted(a.owned)]
                ),
                a.generation,
            )
        self.duties.assigned(a.generation, self.machine.is_leader or self.machine.leadership_guessed)
        self._finished(a.callback_id)

    async def _first_fetched(self) -> None:
        """Until the first assignment reached the application and a poll begun after that returned (it
        took the first fetch's records, or its timeout passed first): the application began another
        one. At most :data:`FIRST_FETCH_GRACE_SECONDS` after the hand-over.

        The audit's DescribeGroups lists every member and its Metadata names the group's topics: sent as
        the member restarts, they compete with its first fetch (for the coordinator, and for the
        interpreter while their answers decode), and they grow with the group. The audit checks the
        generation as it is then, later just as well."""
        if self._handed_over is None:
            self._handed_over = asyncio.get_running_loop().create_future()
        since = await self._handed_over
        until = since + FIRST_FETCH_GRACE_SECONDS
        polls = 0
        # Looked at, not awaited: the application's thread notes its polls without waking this one (issue 27).
        while self._polled is not None and polls < 2 and self.now() < until:
            polled = self._polled()
            if polled > since:  # a poll began: the second one began after the first returned
                since, polls = polled, polls + 1
                continue
            await asyncio.sleep(FIRST_FETCH_CHECK_SECONDS)

    def _hand_over_done(self) -> None:
        if self._handed_over is None:
            self._handed_over = asyncio.get_running_loop().create_future()
        if not self._handed_over.done():
            self._handed_over.set_result(self.now())

    async def _fetch_committed(
        self, partitions: frozenset[TopicPartition], *, once: bool = False
    ) -> Mapping[TopicPartition, int]:
        return await fetch_committed(
            self._client,
            self.config.group_id,
            partitions,
            coordinator=lambda: self._coordinator,
            # a read ahead leaves the machine alone: the assignment's own read reports a moved coordinator
            coordinator_moved=(lambda: None) if once else self._coordinator_moved,
            backoff=self.machine.backoff,
            request_timeout_ms=self.config.request_timeout_ms,
            once=once,
        )

    def _coordinator_moved(self) -> None:
        self.post(events.CoordinatorDisconnected(now=self.now()))

    def _commit_completed(self, a: actions.CommitCompleted) -> None:
        if a.commit_id is None:
            if a.error is not None:
                log.warning(
                    "commit of %d offsets while releasing partitions failed: %s", len(a.offsets), a.error
                )
            return
        done = self._commits.pop(a.commit_id, None)
        if done is not None:
            done(a.error)

    # -- metadata, for the leader's duties and pattern subscriptions --------------------------------

    async def _partition_counts(self, topics: frozenset[str]) -> dict[str, int]:
        metadata = await self._metadata.fresh(topics)
        return {topic: len(rows) for topic, rows in metadata.items()}

    async def _describe_group(self) -> GroupView | None:
        """The coordinator's view: each member's subscribed topics and its current assignment."""
        from staticconsumer.leader import DescribedMember, GroupView

        if self._coordinator is None:
            return None
        versions = await _aiokafka.broker_versions(self._client, self._coordinator)
        version = _aiokafka.negotiated_version(versions, DescribeGroupsRequest)
        exchange = await _aiokafka.send(
            self._client,
            self._coordinator,
            DescribeGroupsRequest(groups=[self.config.group_id]),
            max_version=version,
            timeout_ms=self.config.request_timeout_ms,
        )
        group = exchange.response_as(DescribeGroupsResponse).groups[0]
        if group.error_code != ErrorCode.NONE:
            return None
        members = tuple(
            DescribedMember(
                m.member_id,
                m.group_instance_id,
                frozenset(subscribed_topics(m.member_metadata)) if m.member_metadata else frozenset(),
                tuple(decode_assignment(m.member_assignment)),
                _claimed(m.member_metadata),
            )
            for m in group.members
        )
        return GroupView(group.group_state, members)

    async def _group_protocols(self) -> str:
        """What the group uses, for an INCONSISTENT_GROUP_PROTOCOL error: DescribeGroups names the
        protocol of a stable group and its members (client and instance ids, never credentials).
        Empty when the coordinator cannot say; the error is then raised without it."""
        try:
            if self._coordinator is None:
                return ""
            versions = await _aiokafka.broker_versions(self._client, self._coordinator)
            exchange = await _aiokafka.send(
                self._client,
                self._coordinator,
                DescribeGroupsRequest(groups=[self.config.group_id]),
                max_version=_aiokafka.negotiated_version(versions, DescribeGroupsRequest),
                timeout_ms=self.config.request_timeout_ms,
            )
            group = exchange.response_as(DescribeGroupsResponse).groups[0]
        except Exception as error:  # the refusal is what matters; its detail is a courtesy
            log.info(
                "could not describe group %s after INCONSISTENT_GROUP_PROTOCOL: %r",
                self.config.group_id,
                error,
            )
            return ""
        if group.error_code != ErrorCode.NONE:
            return ""
        return describe_protocols(group)

    async def _refresh_pattern(self) -> None:
        metadata = await _aiokafka.topic_partitions(
            self._client, None, internal=not self._topics.exclude_internal
        )
        changed = self._topics.refresh(metadata)
        if changed is not None and self.machine.state is not MemberState.NOT_STARTED:
            added, removed = changed
            self.update_protocols(f"subscription pattern now matches +{sorted(added)} -{sorted(removed)}")

    async def _join_matched(self, join: actions.SendJoinGroup) -> None:
        """Join with the pattern matched against fresh metadata, as aiokafka and Java do: the rebalance may
        come from a member that saw a new topic before this one did. Joining with the old match would get
        none of that topic, and this member's own refresh would rebalance the group once more. The machine
        is not told (an UpdateProtocols would ask for one more join); the periodic watch then finds no
        change. A failed read joins with the last match."""
        try:
            async with asyncio.timeout(self.config.request_timeout_ms / 1000):
                existing = await _aiokafka.topic_partitions(
                    self._client, None, internal=not self._topics.exclude_internal
                )
            changed = self._topics.refresh(existing)
            if changed is not None:
                added, removed = changed
                log.info("joining with the pattern now matching +%s -%s", sorted(added), sorted(removed))
        except Exception as error:
            log.info("metadata for the subscription pattern before joining failed: %r", error)
        await self._request(self.joining(join), REQUESTS[actions.SendJoinGroup])

    async def _watch_pattern(self) -> None:
        """Rejoin with a new subscription when topics matching the pattern appear or disappear."""
        while True:
            await asyncio.sleep(self._refresh_seconds)
            if self._topics.pattern is None:
                continue
            try:
                await self._refresh_pattern()
            except Exception as error:
                log.info("metadata refresh for the subscription pattern failed: %s", error)


_MEMBERS_SHOWN = 5
"""Members named in an INCONSISTENT_GROUP_PROTOCOL message; the rest are counted."""


def describe_protocols(group: DescribedGroup) -> str:
    """The group's side of an INCONSISTENT_GROUP_PROTOCOL refusal, in words."""
    members = [
        m.client_id + (f" (instance {m.group_instance_id})" if m.group_instance_id else "")
        for m in group.members
    ]
    shown = ", ".join(members[:_MEMBERS_SHOWN]) + (
        f" and {len(members) - _MEMBERS_SHOWN} more" if len(members) > _MEMBERS_SHOWN else ""
    )
    who = f"{len(members)} member{'' if len(members) == 1 else 's'}: {shown}" if members else "no members"
    if group.protocol_type and group.protocol_type != "consumer":
        return f"the group is not a consumer group: its protocol type is {group.protocol_type!r} ({who})"
    if group.protocol_data:
        return f"the group uses protocol {group.protocol_data!r} ({who})"
    return f"the group is {group.group_state} with no protocol chosen yet ({who})"


def _quick(
    assignor: assignor_lib.Assignor,
    members: Sequence[assignor_lib.Member],
    topics: Mapping[str, assignor_lib.TopicInfo],
) -> bool:
    """A built-in assignor (its class from the ``assignors`` package, not a user's subclass) on a group
    small enough (:data:`INLINE_ASSIGNMENT_MAX`) to run on the membership loop without a worker thread."""
    if not type(assignor).__module__.startswith("assignors."):
        return False
    partitions = sum(info.partitions for info in topics.values())
    return len(members) * partitions <= INLINE_ASSIGNMENT_MAX

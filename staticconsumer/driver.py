"""The thin async layer that runs the sans-IO MembershipMachine against a real coordinator.

One task owns the machine: it waits for the next event (a response, an application call, a finished
callback) or the machine's next deadline, feeds it in, and carries out the actions that come back.
Requests and callbacks run as child tasks of one anyio task group and answer with events, so the loop
never blocks on the network or on user code, and nothing outlives ``run()``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

import assignors as assignor_lib
from staticconsumer import _aiokafka
from staticconsumer.errors import (
    DecodeError,
    ErrorCode,
    NoCommonApiVersionError,
    StaticConsumerError,
    UnsupportedVersionForFieldError,
)
from staticconsumer.leader import DescribedMember, GroupView, LeaderDuties
from staticconsumer.membership import (
    FailureKind,
    GroupProtocol,
    JoinGroupMember,
    MembershipConfig,
    MembershipMachine,
    OffsetAndMetadata,
    RequestToken,
    TopicPartition,
    actions,
    events,
)
from staticconsumer.protocol import (
    KEY_TYPE_GROUP,
    Assignment,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberIdentity,
    Message,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
    Subscription,
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    SyncGroupResponse,
    TopicPartitions,
)

log = logging.getLogger("staticconsumer.driver")

M = TypeVar("M", bound=Message)

POLL_REPORT_INTERVAL = 0.05
"""Seconds between two PollCalled events; a poll in between changes nothing the machine decides."""

OFFSET_FETCH_MAX_VERSION = 7
"""v7 carries RequireStable with the single-group layout; v8+ only batches groups, which we do not need."""


class StaticMembershipUnsupportedError(StaticConsumerError):
    """The broker is too old to carry group.instance.id; refusing beats silently joining as dynamic."""


class PartitionOwner(Protocol):
    """What the driver needs from the consumer that fetches records (see consumer.StaticConsumer)."""

    def stop_fetching(self) -> None: ...

    async def take_partitions(self, partitions: frozenset[TopicPartition], generation: int) -> None: ...

    async def run_listener(self, kind: str, partitions: frozenset[TopicPartition]) -> None: ...

    def positions_to_commit(self) -> dict[TopicPartition, OffsetAndMetadata]: ...

    def became_fatal(self, error: Exception) -> None: ...

    def membership_changed(self) -> None: ...


class MembershipObserver(Protocol):
    """Sees every event the machine handles and the actions it returned (telemetry, event logs).

    Called on the membership loop after each step, with the machine already updated; it must be quick
    and must not block. An observer that raises is logged and skipped: observing never breaks the
    consumer.
    """

    def observe(
        self, event: events.Event, produced: Sequence[actions.Action], machine: MembershipMachine
    ) -> None: ...


@dataclass
class Outcome:
    """How a commit ended, handed back to the caller waiting in ``commit``."""

    error: Exception | None = None


def encode_subscription(
    topics: Iterable[str],
    user_data: bytes | None,
    rack: str | None,
    owned: Iterable[TopicPartition],
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


def decode_assignment(data: bytes) -> list[TopicPartition]:
    """An empty SyncGroup assignment (a member the leader gave nothing) means no partitions."""
    if not data:
        return []
    assignment = Assignment.decode(data)
    return [TopicPartition(tp.topic, p) for tp in assignment.assigned_partitions for p in tp.partitions]


def decode_subscription_topics(data: bytes) -> list[str]:
    return list(Subscription.decode(data).topics)


class GroupDriver:
    """Owns one MembershipMachine and the coordinator connection for one consumer."""

    def __init__(
        self,
        *,
        config: MembershipConfig,
        client: Any,
        owner: PartitionOwner,
        assignors: list[assignor_lib.Assignor],
        topics: Callable[[], frozenset[str]],
        client_rack: str | None,
        auto_commit_on_revoke: bool,
        on_request: Callable[[str, int, Message], None] | None = None,
        observers: Sequence[MembershipObserver] = (),
        metadata_refresh_ms: int = 300_000,
        version_caps: Mapping[str, int] | None = None,
    ) -> None:
        self.config = config
        self.machine = MembershipMachine(config)
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
        self.duties = LeaderDuties(
            own_topics=topics,
            refresh_interval=metadata_refresh_ms / 1000,
            partition_counts=self._partition_counts,
            describe=self._describe_group,
            rejoin=self.update_protocols,
        )
        self._coordinator: int | None = None
        self._send: MemoryObjectSendStream[events.Event]
        self._receive: MemoryObjectReceiveStream[events.Event]
        self._send, self._receive = anyio.create_memory_object_stream[events.Event](max_buffer_size=1000)
        self._commits: dict[int, tuple[anyio.Event, Outcome]] = {}
        self._last_poll_posted = float("-inf")
        self._next_commit_id = 0
        self._task_group: TaskGroup | None = None
        self.stopped = anyio.Event()
        self.stop_error: Exception | None = None

    # -- inputs from the application ------------------------------------------------------------

    @staticmethod
    def now() -> float:
        return time.monotonic()

    def post(self, event: events.Event) -> None:
        """Hand an event to the loop; never blocks (the buffer is far larger than what is in flight)."""
        self._send.send_nowait(event)

    def poll_called(self) -> None:
        """Tell the machine the application is alive, at most every 50 ms: record-by-record loops
        would otherwise flood the loop, and max.poll.interval is minutes, not milliseconds."""
        now = self.now()
        if now - self._last_poll_posted >= POLL_REPORT_INTERVAL:
            self._last_poll_posted = now
            self.post(events.PollCalled(now=now))

    async def commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        """Commit and wait for the verdict; raises what the machine decided (fenced, rebalancing, ...)."""
        self._next_commit_id += 1
        commit_id = self._next_commit_id
        done, outcome = anyio.Event(), Outcome()
        self._commits[commit_id] = (done, outcome)
        self.post(events.CommitRequested(now=self.now(), commit_id=commit_id, offsets=dict(offsets)))
        await done.wait()
        if outcome.error is not None:
            raise outcome.error

    def stop(self, leave_group: bool) -> None:
        self.post(events.Stop(now=self.now(), leave_group=leave_group))

    def request_rejoin(self, reason: str) -> None:
        self.post(events.RequestRejoin(now=self.now(), reason=reason))

    def update_protocols(self, reason: str) -> None:
        self.post(events.UpdateProtocols(now=self.now(), protocols=self.protocols(), reason=reason))

    def protocols(self) -> tuple[GroupProtocol, ...]:
        topics = self._topics()
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
            async with anyio.create_task_group() as task_group:
                self._task_group = task_group
                task_group.start_soon(self.duties.run)
                await self._step(events.Start(now=self.now(), protocols=self.protocols()))
                while not self.stopped.is_set():
                    deadline = self.machine.next_deadline()
                    event: events.Event | None = None
                    wait = None if deadline is None else max(0.0, deadline - self.now())
                    with anyio.move_on_after(wait):
                        event = await self._receive.receive()
                    await self._step(event or events.Tick(now=self.now()))
                task_group.cancel_scope.cancel()
        finally:
            self._task_group = None
            for done, outcome in self._commits.values():
                outcome.error = outcome.error or self.stop_error or StaticConsumerError("consumer stopped")
                done.set()
            self._commits.clear()
            self.stopped.set()

    async def _step(self, event: events.Event) -> None:
        produced = self.machine.handle(event)
        for observer in self._observers:
            try:
                observer.observe(event, produced, self.machine)
            except Exception:
                log.exception("membership observer %r failed; ignoring it for this event", observer)
        await self._apply(produced)

    async def _apply(self, todo: list[actions.Action]) -> None:
        for action in todo:
            self._dispatch(action)
        self._owner.membership_changed()

    def _spawn(self, work: Callable[[], Coroutine[Any, Any, None]]) -> None:
        assert self._task_group is not None
        self._task_group.start_soon(work)

    def _dispatch(self, action: actions.Action) -> None:
        if isinstance(action, actions.FindCoordinator):
            self._spawn(lambda: self._find_coordinator(action.token))
        elif isinstance(action, actions.DisconnectCoordinator):
            log.info("coordinator unknown: %s", action.reason)
            self._coordinator = None
        elif isinstance(action, actions.SendJoinGroup):
            self._spawn(lambda: self._join(action))
        elif isinstance(action, actions.SendSyncGroup):
            self._spawn(lambda: self._sync(action))
        elif isinstance(action, actions.SendHeartbeat):
            self._spawn(lambda: self._heartbeat(action))
        elif isinstance(action, actions.SendOffsetCommit):
            self._spawn(lambda: self._commit(action))
        elif isinstance(action, actions.SendLeaveGroup):
            self._spawn(lambda: self._leave(action))
        elif isinstance(action, actions.LeaderElected):
            if action.skip_assignment:
                self.duties.leader_elected(action.generation, action.group_topics, None)
        elif isinstance(action, actions.RunAssignor):
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
            self.duties.membership_lost()
            self._owner.stop_fetching()
        elif isinstance(
            action, actions.PartitionsRevoked | actions.PartitionsLost | actions.PartitionsAssigned
        ):
            self._spawn(lambda: self._callback(action))
        elif isinstance(action, actions.CommitCompleted):
            self._commit_completed(action)
        elif isinstance(action, actions.Fatal):
            self.stop_error = action.error
            self._owner.became_fatal(action.error)
        elif isinstance(action, actions.Stopped):
            self.stop_error = action.error or self.stop_error
            self.stopped.set()
        else:  # pragma: no cover - a new action type must be handled here
            raise AssertionError(f"unhandled action {action!r}")

    # -- requests -------------------------------------------------------------------------------

    async def _exchange(
        self,
        node: int,
        build: Callable[[int], M],
        cls: type[M],
        *,
        timeout_ms: int,
        coordination: bool = True,
    ) -> Any:
        """Build the request for the version this broker speaks, send it, return the typed response."""
        versions = await _aiokafka.broker_versions(self._client, node, coordination=coordination)
        version = _aiokafka.negotiated_version(versions, cls, self._version_caps.get(cls.API_NAME))
        message = build(version)
        if self._on_request is not None:
            self._on_request(type(message).__name__, version, message)
        exchange = await _aiokafka.send(
            self._client, node, message, coordination=coordination, max_version=version, timeout_ms=timeout_ms
        )
        return exchange.response

    def _failed(self, token: RequestToken, error: BaseException) -> None:
        kind = FailureKind.TIMED_OUT if _aiokafka.is_timeout(error) else FailureKind.DISCONNECTED
        log.info("request %d failed (%s): %r", token.request_id, kind.value, error)
        self.post(events.RequestFailed(now=self.now(), token=token, kind=kind))

    async def _guarded(self, token: RequestToken, work: Callable[[], Awaitable[None]]) -> None:
        try:
            await work()
        except (UnsupportedVersionForFieldError, NoCommonApiVersionError) as error:
            self.stop_error = StaticMembershipUnsupportedError(str(error))
            self._owner.became_fatal(self.stop_error)
            self.post(events.Stop(now=self.now(), leave_group=False))
        except DecodeError as error:
            self._failed(token, error)
        except Exception as error:  # connection lost, timeout, node not ready: the machine decides
            self._failed(token, error)

    async def _find_coordinator(self, token: RequestToken) -> None:
        group = self.config.group_id

        def build(version: int) -> FindCoordinatorRequest:
            if version >= 4:
                return FindCoordinatorRequest(key_type=KEY_TYPE_GROUP, coordinator_keys=[group])
            if version >= 1:
                return FindCoordinatorRequest(key=group, key_type=KEY_TYPE_GROUP)
            return FindCoordinatorRequest(key=group)

        async def work() -> None:
            response: FindCoordinatorResponse = await self._exchange(
                _aiokafka.any_node(self._client),
                build,
                FindCoordinatorRequest,
                timeout_ms=self.config.request_timeout_ms,
                coordination=False,
            )
            if response.coordinators:
                found = response.coordinators[0]
                code, node = found.error_code, found.node_id
            else:
                code, node = response.error_code, response.node_id
            self._coordinator = node if code == ErrorCode.NONE else None
            self.post(
                events.FindCoordinatorResponse(
                    now=self.now(),
                    token=token,
                    error_code=code,
                    node_id=node if code == ErrorCode.NONE else None,
                )
            )

        await self._guarded(token, work)

    def _coordinator_node(self) -> int:
        if self._coordinator is None:
            raise ConnectionError("coordinator unknown")
        return self._coordinator

    async def _join(self, a: actions.SendJoinGroup) -> None:
        def build(version: int) -> JoinGroupRequest:
            return JoinGroupRequest(
                group_id=self.config.group_id,
                session_timeout_ms=a.session_timeout_ms,
                rebalance_timeout_ms=a.rebalance_timeout_ms,
                member_id=a.member_id,
                group_instance_id=a.group_instance_id,
                protocol_type=a.protocol_type,
                protocols=[JoinGroupRequestProtocol(name=p.name, metadata=p.metadata) for p in a.protocols],
                reason=a.reason if version >= 8 else None,
            )

        async def work() -> None:
            r: JoinGroupResponse = await self._exchange(
                self._coordinator_node(), build, JoinGroupRequest, timeout_ms=a.request_timeout_ms
            )
            self.post(
                events.JoinGroupResponse(
                    now=self.now(),
                    token=a.token,
                    error_code=r.error_code,
                    generation=r.generation_id,
                    protocol_type=r.protocol_type,
                    protocol_name=r.protocol_name,
                    leader_id=r.leader,
                    member_id=r.member_id,
                    skip_assignment=r.skip_assignment,
                    members=tuple(
                        JoinGroupMember(m.member_id, m.group_instance_id, m.metadata) for m in r.members
                    ),
                )
            )

        await self._guarded(a.token, work)

    async def _sync(self, a: actions.SendSyncGroup) -> None:
        def build(version: int) -> SyncGroupRequest:
            return SyncGroupRequest(
                group_id=self.config.group_id,
                generation_id=a.generation,
                member_id=a.member_id,
                group_instance_id=a.group_instance_id,
                protocol_type=a.protocol_type if version >= 5 else None,
                protocol_name=a.protocol_name if version >= 5 else None,
                assignments=[
                    SyncGroupRequestAssignment(member_id=s.member_id, assignment=s.assignment)
                    for s in a.assignments
                ],
            )

        async def work() -> None:
            r: SyncGroupResponse = await self._exchange(
                self._coordinator_node(),
                build,
                SyncGroupRequest,
                timeout_ms=self.config.join_request_timeout_ms,
            )
            self.post(
                events.SyncGroupResponse(
                    now=self.now(),
                    token=a.token,
                    error_code=r.error_code,
                    protocol_type=r.protocol_type,
                    protocol_name=r.protocol_name,
                    assignment=r.assignment,
                )
            )

        await self._guarded(a.token, work)

    async def _heartbeat(self, a: actions.SendHeartbeat) -> None:
        def build(version: int) -> HeartbeatRequest:
            return HeartbeatRequest(
                group_id=self.config.group_id,
                generation_id=a.generation,
                member_id=a.member_id,
                group_instance_id=a.group_instance_id,
            )

        async def work() -> None:
            r: HeartbeatResponse = await self._exchange(
                self._coordinator_node(), build, HeartbeatRequest, timeout_ms=self.config.request_timeout_ms
            )
            self.post(events.HeartbeatResponse(now=self.now(), token=a.token, error_code=r.error_code))

        await self._guarded(a.token, work)

    async def _commit(self, a: actions.SendOffsetCommit) -> None:
        by_topic: dict[str, list[OffsetCommitRequestPartition]] = {}
        for tp, committed in sorted(a.offsets.items()):
            by_topic.setdefault(tp.topic, []).append(
                OffsetCommitRequestPartition(
                    partition_index=tp.partition,
                    committed_offset=committed.offset,
                    committed_leader_epoch=-1 if committed.leader_epoch is None else committed.leader_epoch,
                    committed_metadata=committed.metadata,
                )
            )

        def build(version: int) -> OffsetCommitRequest:
            return OffsetCommitRequest(
                group_id=self.config.group_id,
                generation_id_or_member_epoch=a.generation,
                member_id=a.member_id,
                group_instance_id=a.group_instance_id,
                topics=[OffsetCommitRequestTopic(name=t, partitions=ps) for t, ps in by_topic.items()],
            )

        async def work() -> None:
            r: OffsetCommitResponse = await self._exchange(
                self._coordinator_node(),
                build,
                OffsetCommitRequest,
                timeout_ms=self.config.request_timeout_ms,
            )
            errors = {
                TopicPartition(t.name, p.partition_index): p.error_code
                for t in r.topics
                for p in t.partitions
            }
            self.post(events.OffsetCommitResponse(now=self.now(), token=a.token, partition_errors=errors))

        await self._guarded(a.token, work)

    async def _leave(self, a: actions.SendLeaveGroup) -> None:
        def build(version: int) -> LeaveGroupRequest:
            return LeaveGroupRequest(
                group_id=self.config.group_id,
                members=[
                    MemberIdentity(
                        member_id=m.member_id,
                        group_instance_id=m.group_instance_id if version >= 3 else None,
                        reason=m.reason if version >= 5 else None,
                    )
                    for m in a.members
                ],
            )

        async def work() -> None:
            r: LeaveGroupResponse = await self._exchange(
                self._coordinator_node(), build, LeaveGroupRequest, timeout_ms=self.config.request_timeout_ms
            )
            code = r.error_code or next((m.error_code for m in r.members if m.error_code), 0)
            self.post(events.LeaveGroupResponse(now=self.now(), token=a.token, error_code=code))

        await self._guarded(a.token, work)

    async def fetch_committed(self, partitions: frozenset[TopicPartition]) -> dict[TopicPartition, int]:
        """Committed offsets (stable, so pending transactional commits are waited for); -1 = none."""
        by_topic: dict[str, list[int]] = {}
        for tp in sorted(partitions):
            by_topic.setdefault(tp.topic, []).append(tp.partition)

        def build(version: int) -> OffsetFetchRequest:
            return OffsetFetchRequest(
                group_id=self.config.group_id,
                topics=[OffsetFetchRequestTopic(name=t, partition_indexes=ps) for t, ps in by_topic.items()],
                require_stable=version >= 7,
            )

        for attempt in range(20):
            try:
                node = self._coordinator_node()
                versions = await _aiokafka.broker_versions(self._client, node)
                version = min(
                    OFFSET_FETCH_MAX_VERSION, _aiokafka.negotiated_version(versions, OffsetFetchRequest)
                )
                message = build(version)
                exchange = await _aiokafka.send(
                    self._client,
                    node,
                    message,
                    max_version=version,
                    timeout_ms=self.config.request_timeout_ms,
                )
                response = exchange.response_as(OffsetFetchResponse)
                codes = {p.error_code for t in response.topics for p in t.partitions} | {response.error_code}
                retriable = codes & {
                    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                    ErrorCode.UNSTABLE_OFFSET_COMMIT,
                    ErrorCode.NOT_COORDINATOR,
                    ErrorCode.COORDINATOR_NOT_AVAILABLE,
                }
                if retriable:
                    raise ConnectionError(f"OffsetFetch answered {sorted(retriable)}")
                return {
                    TopicPartition(t.name, p.partition_index): p.committed_offset
                    for t in response.topics
                    for p in t.partitions
                }
            except Exception as error:  # retriable codes, timeouts, and aiokafka's connection errors
                log.info("OffsetFetch attempt %d failed: %r", attempt + 1, error)
                await anyio.sleep(min(1.0, self.config.retry_backoff_ms / 1000 * (attempt + 1)))
        raise StaticConsumerError(f"could not fetch committed offsets of group {self.config.group_id!r}")

    # -- leader and callbacks -------------------------------------------------------------------

    async def _assign(self, a: actions.RunAssignor) -> None:
        try:
            name = a.protocol_name or self._assignor_order[0]
            assignor = self._assignors[name]
            members = []
            for m in a.members:
                sub = Subscription.decode(m.metadata)
                members.append(
                    assignor_lib.Member(
                        member_id=m.member_id,
                        topics=frozenset(sub.topics),
                        group_instance_id=m.group_instance_id,
                        owned_partitions=tuple(
                            (o.topic, p) for o in sub.owned_partitions for p in o.partitions
                        ),
                        generation=sub.generation_id,
                        rack=sub.rack_id,
                        user_data=sub.user_data,
                    )
                )
            metadata = await _aiokafka.topic_partitions(self._client, a.group_topics)
            topics = {
                topic: assignor_lib.TopicInfo.with_racks([sorted(p.replica_racks) for p in rows])
                for topic, rows in metadata.items()
            }
            self.duties.leader_elected(
                a.generation, a.group_topics, {topic: info.partitions for topic, info in topics.items()}
            )
            plan = assignor.assign(members, topics)
            encoded = {}
            for member in members:
                given = plan.get(member.member_id)
                partitions = given.partitions if given is not None else []
                by_topic: dict[str, list[int]] = {}
                for topic, partition in partitions:
                    by_topic.setdefault(topic, []).append(partition)
                encoded[member.member_id] = Assignment(
                    assigned_partitions=[TopicPartitions(topic=t, partitions=p) for t, p in by_topic.items()],
                    user_data=given.user_data if given is not None else None,
                ).encode()
            self.post(events.AssignmentComputed(now=self.now(), generation=a.generation, assignments=encoded))
        except Exception as error:
            log.exception("assignor failed for generation %d", a.generation)
            self.post(events.AssignmentFailed(now=self.now(), generation=a.generation, error=error))

    async def _callback(
        self, a: actions.PartitionsRevoked | actions.PartitionsLost | actions.PartitionsAssigned
    ) -> None:
        to_commit: dict[TopicPartition, OffsetAndMetadata] = {}
        try:
            if isinstance(a, actions.PartitionsAssigned):
                await self._owner.take_partitions(a.partitions, a.generation)
                await self._owner.run_listener("assigned", a.partitions)
                assignor = self._assignors.get(self.machine.protocol_name or "")
                if assignor is not None:
                    assignor.on_assignment(
                        assignor_lib.MemberAssignment(
                            partitions=[(tp.topic, tp.partition) for tp in sorted(a.partitions)]
                        ),
                        a.generation,
                    )
                self.duties.assigned(a.generation, self.machine.is_leader or self.machine.leadership_guessed)
            elif isinstance(a, actions.PartitionsRevoked):
                await self._owner.run_listener("revoked", a.partitions)
                if self._auto_commit_on_revoke:
                    to_commit = {
                        tp: o for tp, o in self._owner.positions_to_commit().items() if tp in a.partitions
                    }
            else:
                await self._owner.run_listener("lost", a.partitions)
        except Exception:
            log.exception("rebalance listener failed (%s); continuing", type(a).__name__)
        self.post(
            events.CallbackFinished(now=self.now(), callback_id=a.callback_id, offsets_to_commit=to_commit)
        )

    async def _partition_counts(self, topics: frozenset[str]) -> dict[str, int]:
        metadata = await _aiokafka.topic_partitions(self._client, topics)
        return {topic: len(rows) for topic, rows in metadata.items()}

    async def _describe_group(self) -> GroupView | None:
        """The coordinator's view: each member's subscribed topics and its current assignment."""
        if self._coordinator is None:
            return None
        response: DescribeGroupsResponse = await self._exchange(
            self._coordinator,
            lambda version: DescribeGroupsRequest(groups=[self.config.group_id]),
            DescribeGroupsRequest,
            timeout_ms=self.config.request_timeout_ms,
        )
        group = response.groups[0]
        if group.error_code != ErrorCode.NONE:
            return None
        members = []
        for m in group.members:
            topics = (
                frozenset(Subscription.decode(m.member_metadata).topics) if m.member_metadata else frozenset()
            )
            members.append(
                DescribedMember(
                    m.member_id, m.group_instance_id, topics, tuple(decode_assignment(m.member_assignment))
                )
            )
        return GroupView(group.group_state, tuple(members))

    def _commit_completed(self, a: actions.CommitCompleted) -> None:
        if a.commit_id is None:
            if a.error is not None:
                log.warning(
                    "commit of %d offsets while releasing partitions failed: %s", len(a.offsets), a.error
                )
            return
        waiting = self._commits.pop(a.commit_id, None)
        if waiting is not None:
            done, outcome = waiting
            outcome.error = a.error
            done.set()

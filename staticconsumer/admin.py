"""Group administration: see static members, and remove them on purpose.

A static member that never comes back keeps its partitions unserved for the whole session timeout
(45 s by default), because static members send no LeaveGroup (classic protocol) or leave with epoch -2
(KIP-848's consumer protocol), which keeps their assignment. :class:`GroupAdmin` removes such members
by instance id in one LeaveGroup v3+ batch (KIP-345's RemoveMemberFromConsumerGroup, what Java's
``Admin.removeMembersFromConsumerGroup`` and Kafka Streams' ``CloseOptions.leaveGroup`` send; brokers
apply it to groups of both protocols), so the group reassigns at once, and reports each member's own
outcome. It also describes a group of either protocol with its instance ids and decoded assignments (for
a consumer-protocol group: member epochs and target assignments too), and lists groups.

Everything goes over aiokafka connections with the consumer's security settings (TLS, SASL PLAIN/SCRAM)
through ``staticconsumer._aiokafka``, with our own wire codec at the highest version each broker speaks.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from types import TracebackType
from typing import Any, TypeVar

import msgspec

from staticconsumer import _aiokafka
from staticconsumer.connection import bootstrap
from staticconsumer.errors import (
    BrokerError,
    CoordinatorLoadInProgressError,
    DecodeError,
    ErrorCode,
    GroupAuthorizationFailedError,
    NoCommonApiVersionError,
    StaticConsumerError,
    UnsupportedVersionForFieldError,
    error_class_for,
)
from staticconsumer.membership.backoff import Backoff
from staticconsumer.protocol import (
    CONSUMER_PROTOCOL_TYPE,
    MEMBER_TYPE_CLASSIC,
    MEMBER_TYPE_CONSUMER,
    Assignment,
    ConsumerGroupDescribedGroup,
    ConsumerGroupDescribedMember,
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    DescribedAssignment,
    DescribedGroupMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListGroupsRequest,
    ListGroupsResponse,
    MemberIdentity,
    Message,
    Subscription,
    TopicPartitions,
    coordinator_answer,
    find_group_coordinator,
)
from staticconsumer.settings import DEFAULT_PREFIX, Settings

log = logging.getLogger(__name__)

M = TypeVar("M", bound=Message)
T = TypeVar("T")

ADMIN_CLIENT_ID = "staticconsumer-admin"
"""client.id of admin connections unless one is configured: shows up in broker logs and quotas."""
_PLACEHOLDER_GROUP = "staticconsumer-admin"
"""Settings needs a group.id; the admin never joins it, it only names groups per call."""

_COORDINATOR_ERRORS = frozenset(
    {ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}
)
_REDISCOVER = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE})


class GroupAdminError(StaticConsumerError):
    """The admin could not complete a call (not a broker verdict on one member)."""


class AdminTimeoutError(GroupAdminError, TimeoutError):
    """Retriable failures (coordinator moving or loading, broker unreachable) lasted past the api timeout."""

    def __init__(self, what: str, timeout_ms: int, last: BaseException | None) -> None:
        self.last = last
        super().__init__(f"{what}: gave up after {timeout_ms} ms; last error: {last!r}")


GROUP_TYPE_CLASSIC = "classic"
GROUP_TYPE_CONSUMER = "consumer"
"""A group's type as ListGroups v5 and ConsumerGroupDescribe tell it: the protocol its coordinator runs."""


class MemberDescription(msgspec.Struct, frozen=True):
    """One group member as the coordinator sees it, payloads decoded for consumer groups.

    Classic groups: ``assignment`` and ``subscription`` are empty while a rebalance is in progress (the
    coordinator has no assignment yet) and for groups of other protocol types (Connect, ...), whose payloads
    are not ours to read; the raw bytes stay available.

    Consumer-protocol groups (KIP-848): ``assignment`` is what the member owns now, ``target_assignment``
    what the coordinator wants it to own (the two differ while it reconciles); ``member_epoch`` is -2 for a
    static member that left for a restart (its assignment is kept until the session timeout);
    ``member_protocol`` is ``consumer`` or, for a classic member in a consumer-protocol group (an online
    migration, Kafka 4.0+), ``classic``. These stay None or empty for classic groups.
    """

    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: tuple[TopicPartitions, ...] = ()
    subscription: tuple[str, ...] = ()
    metadata_bytes: bytes = b""
    assignment_bytes: bytes = b""
    member_epoch: int | None = None
    target_assignment: tuple[TopicPartitions, ...] = ()
    subscribed_pattern: str | None = None
    rack: str | None = None
    member_protocol: str | None = None

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None


class GroupDescription(msgspec.Struct, frozen=True):
    """A group of either protocol.

    ``group_type`` is ``classic`` or ``consumer``. ``state``: classic groups ``Stable``,
    ``PreparingRebalance``, ``CompletingRebalance``, ``Empty``, ``Dead``; consumer-protocol groups
    ``Empty``, ``Assigning``, ``Reconciling``, ``Stable``. ``protocol`` is the assignor (the classic
    leader's choice, or the broker's server-side assignor). ``group_epoch`` and ``assignment_epoch`` (the
    epoch of the target assignment) exist only for consumer-protocol groups.
    """

    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: tuple[MemberDescription, ...]
    coordinator: int
    group_type: str = GROUP_TYPE_CLASSIC
    group_epoch: int | None = None
    assignment_epoch: int | None = None

    @property
    def exists(self) -> bool:
        """False for ``Dead``: the coordinator knows nothing about the group (DescribeGroups v5 says so)."""
        return self.state != "Dead"

    def member(self, group_instance_id: str) -> MemberDescription | None:
        return next((m for m in self.members if m.group_instance_id == group_instance_id), None)


class GroupListing(msgspec.Struct, frozen=True):
    """``state`` needs ListGroups v4+ (Kafka 2.6+) and ``group_type`` v5+ (3.8+); empty when older."""

    group_id: str
    protocol_type: str
    state: str = ""
    group_type: str = ""


class MemberRemoval(msgspec.Struct, frozen=True):
    """One instance id's outcome; ``error`` is the broker's typed verdict for this member, None if removed.

    UNKNOWN_MEMBER_ID: the group has no member with this instance id (already gone, never there, or the
    group does not exist). FENCED_INSTANCE_ID: the instance id maps to another member id than was named.
    """

    group_instance_id: str
    member_id: str
    error: BrokerError | None = None

    @property
    def removed(self) -> bool:
        return self.error is None


class RemoveMembersResult(msgspec.Struct, frozen=True):
    group_id: str
    members: tuple[MemberRemoval, ...]

    @property
    def removed(self) -> tuple[MemberRemoval, ...]:
        return tuple(m for m in self.members if m.removed)

    @property
    def failed(self) -> tuple[MemberRemoval, ...]:
        return tuple(m for m in self.members if not m.removed)

    @property
    def all_removed(self) -> bool:
        return not self.failed

    def error_for(self, group_instance_id: str) -> BrokerError | None:
        for member in self.members:
            if member.group_instance_id == group_instance_id:
                return member.error
        raise KeyError(group_instance_id)


def admin_settings(
    environ: Mapping[str, str] | None = None, prefix: str = DEFAULT_PREFIX, **overrides: Any
) -> Settings:
    """Consumer settings read for admin use: ``KAFKA_GROUP_ID`` may be absent, client.id defaults to ours.

    Connection and security come from the same ``KAFKA_*`` variables as the consumer's, so an operator
    runs the admin with the pod's own environment.
    """
    env = os.environ if environ is None else environ
    defaults: dict[str, Any] = {}
    if not env.get(prefix + "GROUP_ID", "").strip() and "group_id" not in overrides:
        defaults["group_id"] = _PLACEHOLDER_GROUP
    if not env.get(prefix + "CLIENT_ID", "").strip() and "client_id" not in overrides:
        defaults["client_id"] = ADMIN_CLIENT_ID
    # an instance id in the pod's environment is the consumer's business, not the admin's
    ignore = {prefix + "GROUP_INSTANCE_ID"}
    return Settings.from_env(
        {k: v for k, v in env.items() if k not in ignore}, prefix, **defaults, **overrides
    )


def _decode_member(protocol_type: str, raw: DescribedGroupMember) -> MemberDescription:
    topics: tuple[str, ...] = ()
    assignment: tuple[TopicPartitions, ...] = ()
    if protocol_type == CONSUMER_PROTOCOL_TYPE:
        if raw.member_metadata:
            try:
                topics = tuple(Subscription.decode(raw.member_metadata).topics)
            except DecodeError as error:
                log.warning("member %s: undecodable subscription: %s", raw.member_id, error)
        if raw.member_assignment:
            try:
                assignment = tuple(Assignment.decode(raw.member_assignment).assigned_partitions)
            except DecodeError as error:
                log.warning("member %s: undecodable assignment: %s", raw.member_id, error)
    return MemberDescription(
        member_id=raw.member_id,
        group_instance_id=raw.group_instance_id,
        client_id=raw.client_id,
        host=raw.client_host,
        assignment=assignment,
        subscription=topics,
        metadata_bytes=raw.member_metadata,
        assignment_bytes=raw.member_assignment,
    )


def _topic_partitions(assignment: DescribedAssignment) -> tuple[TopicPartitions, ...]:
    return tuple(
        TopicPartitions(t.topic_name, sorted(t.partitions))
        for t in sorted(assignment.topic_partitions, key=lambda t: t.topic_name)
    )


_MEMBER_PROTOCOLS = {MEMBER_TYPE_CONSUMER: GROUP_TYPE_CONSUMER, MEMBER_TYPE_CLASSIC: GROUP_TYPE_CLASSIC}


def _consumer_member(raw: ConsumerGroupDescribedMember) -> MemberDescription:
    return MemberDescription(
        member_id=raw.member_id,
        group_instance_id=raw.instance_id,
        client_id=raw.client_id,
        host=raw.client_host,
        assignment=_topic_partitions(raw.assignment),
        subscription=tuple(raw.subscribed_topic_names),
        member_epoch=raw.member_epoch,
        target_assignment=_topic_partitions(raw.target_assignment),
        subscribed_pattern=raw.subscribed_topic_regex or None,
        rack=raw.rack_id,
        member_protocol=_MEMBER_PROTOCOLS.get(raw.member_type),
    )


def _consumer_group(described: ConsumerGroupDescribedGroup, coordinator: int) -> GroupDescription:
    return GroupDescription(
        group_id=described.group_id,
        state=described.group_state,
        protocol_type=CONSUMER_PROTOCOL_TYPE,
        protocol=described.assignor_name,
        members=tuple(_consumer_member(m) for m in described.members),
        coordinator=coordinator,
        group_type=GROUP_TYPE_CONSUMER,
        group_epoch=described.group_epoch,
        assignment_epoch=described.assignment_epoch,
    )


_NOT_A_CONSUMER_GROUP = frozenset({ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.UNSUPPORTED_VERSION})
"""ConsumerGroupDescribe's answer for a classic group or no group (69), or on a broker whose consumer
protocol is off (35, e.g. Kafka 3.9's default): then DescribeGroups tells, as Java's admin falls back."""


def _authorization_error(group: str, action: str, needs: str) -> GroupAuthorizationFailedError:
    return GroupAuthorizationFailedError(
        f"not allowed to {action} group {group!r}: the principal needs {needs} on Group:{group} "
        f"(ask for an ACL, e.g. kafka-acls --add --allow-principal User:<you> --operation {needs} "
        f"--group {group})"
    )


class _Retry(Exception):
    """Internal: the attempt hit a retriable condition; ``rediscover`` drops the cached coordinator."""

    def __init__(self, cause: BaseException, rediscover: bool) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.rediscover = rediscover


class GroupAdmin:
    """Describe, list and remove members of consumer groups. Use ``async with`` or start()/close().

    ``GroupAdmin(settings)`` or ``GroupAdmin(bootstrap_servers="kafka:9092", security_protocol=...)``
    (any :class:`Settings` field; ``group_id`` is not needed). ``GroupAdmin.from_env()`` reads the same
    ``KAFKA_*`` variables as the consumer. ``api_timeout_ms`` bounds each call including its retries
    (Java's default.api.timeout.ms, 60 s).
    """

    def __init__(
        self, settings: Settings | None = None, *, api_timeout_ms: int = 60_000, **fields: Any
    ) -> None:
        if settings is not None and fields:
            raise TypeError("pass either settings or setting fields, not both")
        self.settings = settings if settings is not None else admin_settings({}, **fields)
        self.api_timeout_ms = api_timeout_ms
        self._client: Any = None
        self._coordinators: dict[str, int] = {}

    @classmethod
    def from_env(
        cls,
        environ: Mapping[str, str] | None = None,
        prefix: str = DEFAULT_PREFIX,
        *,
        api_timeout_ms: int = 60_000,
        **overrides: Any,
    ) -> GroupAdmin:
        return cls(admin_settings(environ, prefix, **overrides), api_timeout_ms=api_timeout_ms)

    async def start(self) -> GroupAdmin:
        """Connect; a typed ``BrokerConnectionError`` says why not, within the smaller of
        request.timeout.ms and ``api_timeout_ms`` (the CLI's ``--timeout-ms``)."""
        if self._client is None:
            limit = self.settings.response_limits()[0]
            client = _aiokafka.new_client(max_response_bytes=limit, **self.settings.aiokafka_client_kwargs())
            try:
                await bootstrap(client, self.settings, timeout_ms=self.api_timeout_ms)
            except BaseException:
                await client.close()
                raise
            self._client = client
        return self

    async def close(self) -> None:
        client, self._client = self._client, None
        self._coordinators.clear()
        if client is not None:
            await client.close()

    async def __aenter__(self) -> GroupAdmin:
        return await self.start()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # -- public calls -------------------------------------------------------------------------------

    async def describe_group(self, group: str) -> GroupDescription:
        """Describe a group of either protocol; state ``Dead`` (``exists`` False) if there is no such group.

        As Java's admin does: ConsumerGroupDescribe first where the coordinator offers it (a KIP-848 group
        answers with epochs and target assignments), else, or when it says the group is not a consumer
        group, DescribeGroups (classic groups; instance ids need v4+).
        """

        async def attempt(coordinator: int) -> GroupDescription:
            if await self._offers(coordinator, ConsumerGroupDescribeRequest):
                described = await self._describe_consumer_group(coordinator, group)
                if described is not None:
                    return described
            return await self._describe_classic_group(coordinator, group)

        return await self._with_coordinator(group, ("describe", "DESCRIBE"), attempt)

    async def _describe_consumer_group(self, coordinator: int, group: str) -> GroupDescription | None:
        """The KIP-848 view of ``group``, or None when the coordinator says it is not a consumer group."""
        response = await self._exchange(
            coordinator,
            ConsumerGroupDescribeRequest,
            lambda v: ConsumerGroupDescribeRequest(group_ids=[group]),
        )
        assert isinstance(response, ConsumerGroupDescribeResponse)
        described = next((g for g in response.groups if g.group_id == group), None)
        if described is None:
            raise GroupAdminError(f"ConsumerGroupDescribe answered without group {group!r}")
        if described.error_code in _NOT_A_CONSUMER_GROUP:
            return None
        self._check(described.error_code, group, "describe", "DESCRIBE")
        return _consumer_group(described, coordinator)

    async def _describe_classic_group(self, coordinator: int, group: str) -> GroupDescription:
        response = await self._exchange(
            coordinator, DescribeGroupsRequest, lambda v: DescribeGroupsRequest(groups=[group])
        )
        assert isinstance(response, DescribeGroupsResponse)
        described = next((g for g in response.groups if g.group_id == group), None)
        if described is None:
            raise GroupAdminError(f"DescribeGroups answered without group {group!r}")
        self._check(described.error_code, group, "describe", "DESCRIBE")
        return GroupDescription(
            group_id=group,
            state=described.group_state,
            protocol_type=described.protocol_type,
            protocol=described.protocol_data,
            members=tuple(_decode_member(described.protocol_type, m) for m in described.members),
            coordinator=coordinator,
        )

    async def list_groups(self) -> list[GroupListing]:
        """Every group of every broker (each lists the groups it coordinates), sorted by id."""
        deadline = self._deadline()
        client = self._require_client()
        listings: dict[str, GroupListing] = {}
        for node in await _aiokafka.broker_nodes(client):
            response = await self._until(
                deadline, f"list groups on broker {node}", functools.partial(self._list_on, node)
            )
            for g in response.groups:
                listings[g.group_id] = GroupListing(g.group_id, g.protocol_type, g.group_state, g.group_type)
        return [listings[name] for name in sorted(listings)]

    async def remove_members(
        self, group: str, instance_ids: Iterable[str], reason: str | None = None
    ) -> RemoveMembersResult:
        """Remove static members by instance id in ONE LeaveGroup (v3+, MemberId "" + GroupInstanceId).

        Each member's own outcome comes back in the result (``error`` None when removed): one unknown id
        does not stop the others. ``reason`` (v5+, Kafka 3.2+) shows in the broker's log; cut to 255
        characters. Raises :class:`GroupAuthorizationFailedError` when the principal may not touch the
        group (nothing was removed then).
        """
        ids = list(dict.fromkeys(instance_ids))
        if not ids:
            raise ValueError("remove_members needs at least one instance id")
        if any(not i for i in ids):
            raise ValueError("an instance id cannot be empty")
        leave_reason = reason if reason is not None else "removed by staticconsumer admin"

        def build(version: int) -> LeaveGroupRequest:
            if version < 3:
                raise UnsupportedVersionForFieldError("LeaveGroupRequest", version, "group_instance_id", 3)
            return LeaveGroupRequest(
                group_id=group,
                members=[MemberIdentity("", i, leave_reason if version >= 5 else None) for i in ids],
            )

        async def attempt(coordinator: int) -> RemoveMembersResult:
            response = await self._exchange(coordinator, LeaveGroupRequest, build, resend_safe=False)
            assert isinstance(response, LeaveGroupResponse)
            self._check(response.error_code, group, "remove members of", "READ")
            by_id = {m.group_instance_id: m for m in response.members}
            outcomes = []
            for instance_id in ids:
                answer = by_id.get(instance_id)
                if answer is None:
                    raise GroupAdminError(f"LeaveGroup answered without instance id {instance_id!r}")
                cls = error_class_for(answer.error_code)
                error = None if cls is None else cls(f"instance id {instance_id!r} in group {group!r}")
                outcomes.append(MemberRemoval(instance_id, answer.member_id, error))
            return RemoveMembersResult(group, tuple(outcomes))

        return await self._with_coordinator(group, ("remove members of", "READ"), attempt)

    # -- plumbing -----------------------------------------------------------------------------------

    def _require_client(self) -> Any:
        if self._client is None:
            raise GroupAdminError(
                "GroupAdmin is not started: use 'async with GroupAdmin(...)' or await start()"
            )
        return self._client

    async def _offers(self, node: int, cls: type[Message]) -> bool:
        """Whether broker ``node`` advertises any version of ``cls`` that we speak."""
        try:
            versions = await _aiokafka.broker_versions(self._require_client(), node, coordination=False)
            _aiokafka.negotiated_version(versions, cls)
        except NoCommonApiVersionError:
            return False
        except Exception as error:
            if _aiokafka.is_connection_failure(error):
                raise _Retry(error, rediscover=True) from error
            raise
        return True

    def _deadline(self) -> float:
        return time.monotonic() + self.api_timeout_ms / 1000

    def _check(self, code: int, group: str, action: str, needs: str) -> None:
        """Raise the typed error for a group-level code; coordinator errors become a retry."""
        if code == ErrorCode.NONE:
            return
        if code in _COORDINATOR_ERRORS:
            cls = error_class_for(code)
            assert cls is not None
            raise _Retry(cls(f"group {group!r}"), rediscover=code in _REDISCOVER)
        if code == ErrorCode.GROUP_AUTHORIZATION_FAILED:
            raise _authorization_error(group, action, needs)
        cls = error_class_for(code)
        assert cls is not None
        raise cls(f"{action} group {group!r}")

    async def _exchange(
        self, node: int, cls: type[M], build: Callable[[int], M], *, resend_safe: bool = True
    ) -> Message:
        """Build ``cls`` for the version this broker speaks and send it. A connection failure becomes a
        retry when resending cannot do harm (``resend_safe``, or the request never left)."""
        client = self._require_client()
        try:
            versions = await _aiokafka.broker_versions(client, node, coordination=False)
            version = _aiokafka.negotiated_version(versions, cls)
            exchange = await _aiokafka.send(
                client,
                node,
                build(version),
                coordination=False,
                max_version=version,
                timeout_ms=self.settings.request_timeout_ms,
            )
        except Exception as error:
            if _aiokafka.is_connection_failure(error) and (resend_safe or _aiokafka.was_not_sent(error)):
                raise _Retry(error, rediscover=True) from error
            raise
        return exchange.response

    async def _list_on(self, node: int) -> ListGroupsResponse:
        response = await self._exchange(node, ListGroupsRequest, lambda v: ListGroupsRequest())
        assert isinstance(response, ListGroupsResponse)
        if response.error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            raise _Retry(CoordinatorLoadInProgressError(f"broker {node}"), rediscover=False)
        if response.error_code != ErrorCode.NONE:
            cls = error_class_for(response.error_code)
            assert cls is not None
            raise cls(f"ListGroups on broker {node}")
        return response

    async def _find_coordinator(self, group: str, access: tuple[str, str]) -> int:
        """FindCoordinator needs DESCRIBE on the group; a refusal names what the caller meant to do."""
        cached = self._coordinators.get(group)
        if cached is not None:
            return cached

        response = await self._exchange(
            _aiokafka.any_node(self._require_client()),
            FindCoordinatorRequest,
            functools.partial(find_group_coordinator, group),
        )
        assert isinstance(response, FindCoordinatorResponse)
        code, node = coordinator_answer(response)
        self._check(code, group, *access)
        self._coordinators[group] = node
        return node

    async def _with_coordinator(
        self, group: str, access: tuple[str, str], call: Callable[[int], Awaitable[T]]
    ) -> T:
        """``access`` is (what the call does, the ACL operation it needs), for retry logs and refusals."""
        what = f"{access[0]} group {group!r}"

        async def attempt() -> T:
            return await call(await self._find_coordinator(group, access))

        def forget() -> None:
            self._coordinators.pop(group, None)

        return await self._until(self._deadline(), what, attempt, on_rediscover=forget)

    async def _until(
        self,
        deadline: float,
        what: str,
        attempt: Callable[[], Awaitable[T]],
        on_rediscover: Callable[[], None] | None = None,
    ) -> T:
        """Run ``attempt`` until it succeeds or raises for good, backing off between retriable failures
        with the SDK's one retry policy (retry.backoff.ms doubling up to retry.backoff.max.ms, as Java)."""
        policy = Backoff(self.settings.retry_backoff_ms, self.settings.retry_backoff_max_ms)
        failures = 0
        while True:
            try:
                return await attempt()
            except _Retry as retry:
                log.info("%s: %r; retrying", what, retry.cause)
                if retry.rediscover and on_rediscover is not None:
                    on_rediscover()
                failures += 1
                backoff = policy.seconds(failures)
                if time.monotonic() + backoff > deadline:
                    raise AdminTimeoutError(what, self.api_timeout_ms, retry.cause) from retry.cause
                await asyncio.sleep(backoff)

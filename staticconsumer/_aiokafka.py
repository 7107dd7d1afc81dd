"""The one place that touches aiokafka internals (pinned to 0.14).

Our messages travel over aiokafka's own connections, so TLS, SASL, idle handling and the ApiVersions
handshake stay aiokafka's. What aiokafka 0.14 expects, read from ``aiokafka/conn.py``:

* ``AIOKafkaConnection.send(request)`` calls ``request.prepare(conn._versions)`` (the ApiVersions
  ranges the broker advertised on this connection) and gets a "request struct" back;
* it writes ``struct.build_request_header(correlation_id=, client_id=).encode() + struct.encode()``;
* for the answer it calls ``struct.parse_response_header(BytesIO)`` (which must leave the stream at the
  body and expose ``correlation_id``) and then ``struct.RESPONSE_TYPE.decode(BytesIO)``.

:class:`ProtocolRequest` provides exactly that duck type: ``prepare`` picks the highest version both
sides speak and encodes at once (so a version rule fails before anything is written), the header is
request header v2 for flexible versions (v1 otherwise) and the response header v1 (v0 otherwise).
A body that fails to decode does not kill aiokafka's reader task: it comes back as :class:`DecodeError`
from :func:`send` and the connection stays usable, since frames are delimited by their size prefix.

Responses are bounded before they are buffered (see "Bounded responses" below): aiokafka's reader
reads whatever size a frame's prefix claims, so every client this module builds reads with a reader of
its own that refuses a frame larger than the connection's limit, unread, and closes the connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import copy
import functools
import io
import logging
import re
import struct
import time
import weakref
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal, TypeVar

import msgspec

from staticconsumer.connection import CauseLog
from staticconsumer.connection.reconnect import ReconnectBackoff
from staticconsumer.errors import (
    DecodeError,
    EncodeError,
    NoCommonApiVersionError,
    ProtocolError,
    ResponseTooLargeError,
)
from staticconsumer.protocol._base import (
    Message,
    RequestHeader,
    TaggedFields,
    decode_response_header,
    encode_request_header,
)
from staticconsumer.protocol.api_keys import ApiSpec, api_name, spec_for_key

if TYPE_CHECKING:
    from uuid import UUID

    from staticconsumer.protocol.coordinator import FindCoordinatorResponse

    R = TypeVar("R", bound=Message)  # annotations only: a TypeVar costs ~0.02 ms to make (issue 26)


def spec_for(message: Message) -> ApiSpec:
    return _spec_of(type(message))


def _spec_of(cls: type[Message]) -> ApiSpec:
    """The API table's entry for a message class; its module is loaded already, being the class's."""
    spec = spec_for_key(cls.API_KEY)
    if spec is None:
        raise LookupError(f"{cls.__name__}: API key {cls.API_KEY} is not in protocol.api_keys")
    return spec


def pick_version(spec: ApiSpec, broker: tuple[int, int] | None, max_version: int | None = None) -> int:
    """Highest version in both our range (capped by ``max_version``, else by the API's default ceiling:
    v9 for OffsetCommit/OffsetFetch, whose v10 names topics by id only) and the broker's range."""
    ceiling = spec.default_max_version if max_version is None else min(max_version, spec.max_version)
    ours = (spec.min_version, ceiling)
    if broker is None:
        raise NoCommonApiVersionError(spec.name, ours, None)
    high = min(ours[1], broker[1])
    if high < max(ours[0], broker[0]):
        raise NoCommonApiVersionError(spec.name, ours, broker)
    return high


class _EncodedHeader:
    __slots__ = ("_data",)

    def __init__(self, data: bytes) -> None:
        self._data = data

    def encode(self) -> bytes:
        return self._data


class _ParsedResponseHeader:
    __slots__ = ("correlation_id", "unknown_tagged_fields")

    def __init__(self, correlation_id: int, unknown_tagged_fields: TaggedFields) -> None:
        self.correlation_id = correlation_id
        self.unknown_tagged_fields = unknown_tagged_fields


class _Undecodable:
    """Stands in for a response whose body did not decode, so the error reaches the caller, not the reader."""

    __slots__ = ("error",)

    def __init__(self, error: DecodeError) -> None:
        self.error = error


class _ResponseDecoder:
    """``RESPONSE_TYPE`` for aiokafka: decodes the rest of the frame at the version that was sent."""

    __slots__ = ("cls", "version")

    def __init__(self, cls: type[Message], version: int) -> None:
        self.cls = cls
        self.version = version

    def decode(self, stream: io.BytesIO) -> Message | _Undecodable:
        try:
            return self.cls.decode(stream.read(), self.version)
        except DecodeError as error:
            return _Undecodable(error)


class _PreparedRequest:
    """The "request struct" aiokafka's connection writes; the body is already encoded."""

    def __init__(self, message: Message, spec: ApiSpec, version: int) -> None:
        self.API_KEY = spec.key
        self.API_VERSION = version
        self.FLEXIBLE_VERSION = version >= spec.flexible_from
        self.RESPONSE_TYPE = _ResponseDecoder(spec.response, version)
        self._message = message
        try:
            self._body = message.encode(version)
        except ProtocolError:
            raise
        except Exception as error:  # a field of the wrong type: say so, never look like a network failure
            raise EncodeError(f"{type(message).__name__} v{version} cannot be encoded: {error!r}") from error

    def build_request_header(self, correlation_id: int, client_id: str | None) -> _EncodedHeader:
        header = RequestHeader(self.API_KEY, self.API_VERSION, correlation_id, client_id)
        return _EncodedHeader(encode_request_header(header, self.FLEXIBLE_VERSION))

    def encode(self) -> bytes:
        return self._body

    def parse_response_header(self, stream: io.BytesIO) -> _ParsedResponseHeader:
        start = stream.tell()
        data = stream.read()
        header, offset = decode_response_header(data, self.FLEXIBLE_VERSION)
        stream.seek(start + offset)
        return _ParsedResponseHeader(header.correlation_id, header.unknown_tagged_fields)

    def __repr__(self) -> str:
        return f"{type(self._message).__name__}(v{self.API_VERSION}) {self._message!r}"


class ProtocolRequest:
    """An aiokafka-sendable wrapper around one of our request messages.

    ``version`` is set by ``prepare`` (called by the connection) to the version actually sent.
    """

    def __init__(self, message: Message, *, max_version: int | None = None) -> None:
        if message.KIND != "request":
            raise TypeError(f"{type(message).__name__} is not a request")
        self.message = message
        self.spec = spec_for(message)
        self.API_KEY = self.spec.key
        self.max_version = max_version
        self.version: int | None = None

    def prepare(self, versions: dict[int, tuple[int, int]]) -> _PreparedRequest:
        version = pick_version(self.spec, versions.get(self.spec.key), self.max_version)
        prepared = _PreparedRequest(self.message, self.spec, version)
        self.version = version
        return prepared


class Exchange(msgspec.Struct, frozen=True):
    """The version a request went out at and the typed response it got."""

    version: int
    response: Message

    def response_as(self, cls: type[R]) -> R:
        if not isinstance(self.response, cls):
            raise TypeError(f"expected {cls.__name__}, got {type(self.response).__name__}")
        return self.response


def _unwrap(request: ProtocolRequest, result: Any) -> Exchange:
    if isinstance(result, _Undecodable):
        raise result.error
    if not isinstance(result, Message) or request.version is None:
        raise TypeError(f"unexpected response object {type(result).__name__}")
    return Exchange(request.version, result)


def _connection_group(coordination: bool) -> Any:
    from aiokafka.client import ConnectionGroup

    return ConnectionGroup.COORDINATION if coordination else ConnectionGroup.DEFAULT


async def send(
    client: Any,
    node_id: int,
    message: Message,
    *,
    coordination: bool = True,
    max_version: int | None = None,
    timeout_ms: int | None = None,
) -> Exchange:
    """Send through an ``AIOKafkaClient`` (group coordination connection by default).

    ``timeout_ms`` overrides the client's request timeout for this request only. A JoinGroup needs it:
    the broker may hold it for the whole rebalance, and Java waits max(request.timeout.ms, rebalance
    timeout + 5 s) where aiokafka would give up after its fixed request timeout.
    """
    request = ProtocolRequest(message, max_version=max_version)
    group = _connection_group(coordination)
    if timeout_ms is None:
        result = await client.send(node_id, request, group=group)
        return _unwrap(request, result)
    if not await client.ready(node_id, group=group):
        from aiokafka.errors import NodeNotReadyError

        raise NodeNotReadyError(f"broker {node_id} is not ready")
    return await _send_with_timeout(client._conns[(node_id, group)], request, timeout_ms)


async def send_on_connection(
    conn: Any, message: Message, *, max_version: int | None = None, timeout_ms: int | None = None
) -> Exchange:
    """Send over one ``AIOKafkaConnection`` (from ``aiokafka.conn.create_conn``)."""
    request = ProtocolRequest(message, max_version=max_version)
    if timeout_ms is None:
        return _unwrap(request, await conn.send(request))
    return await _send_with_timeout(conn, request, timeout_ms)


async def _send_with_timeout(conn: Any, request: ProtocolRequest, timeout_ms: int) -> Exchange:
    """``conn.send`` binds ``conn._request_timeout`` into its waiter when called, synchronously; swapping
    the attribute around that one call gives this request its own timeout without touching others."""
    from aiokafka.conn import CloseReason
    from aiokafka.errors import RequestTimedOutError

    saved = conn._request_timeout
    conn._request_timeout = timeout_ms / 1000
    try:
        waiter = conn.send(request)
    finally:
        conn._request_timeout = saved
    try:
        result = await waiter
    except TimeoutError as exc:
        # as AIOKafkaClient.send does: the connection may hold a late answer, so renew it
        conn.close(reason=CloseReason.CONNECTION_TIMEOUT)
        raise RequestTimedOutError() from exc
    return _unwrap(request, result)


def connection_versions(conn: Any) -> dict[int, tuple[int, int]]:
    """The ApiVersions ranges aiokafka negotiated on a connection (api key -> (min, max))."""
    versions: dict[int, tuple[int, int]] = dict(conn._versions)
    return versions


async def broker_versions(
    client: Any, node_id: int, *, coordination: bool = True
) -> dict[int, tuple[int, int]]:
    """Connect if needed and return what that broker advertised on the given connection group."""
    group = _connection_group(coordination)
    if not await client.ready(node_id, group=group):
        from aiokafka.errors import NodeNotReadyError

        raise NodeNotReadyError(f"broker {node_id} is not ready")
    return connection_versions(client._conns[(node_id, group)])


def negotiated_version(
    versions: dict[int, tuple[int, int]], cls: type[Message], max_version: int | None = None
) -> int:
    """The version :class:`ProtocolRequest` would use for ``cls`` given a broker's ranges."""
    spec = _spec_of(cls)
    return pick_version(spec, versions.get(spec.key), max_version)


# -- What the consumer driver needs from aiokafka's client (metadata, nodes) --------------------------


class PartitionReplicas(msgspec.Struct, frozen=True):
    """One partition as cluster metadata shows it: its number and the racks of its replicas (a Struct:
    ~15 us to define against ~90 for a ``NamedTuple``, on the import path; nothing unpacks it)."""

    partition: int
    replica_racks: frozenset[str]


def new_client(*, max_response_bytes: int | None = None, **kwargs: Any) -> Any:
    """An ``AIOKafkaClient`` for group coordination and metadata (separate from the fetcher's).

    Its connections refuse response frames larger than ``max_response_bytes`` (default
    :data:`GROUP_RESPONSE_MAX_BYTES`) with :class:`~staticconsumer.errors.ResponseTooLargeError`.
    It reconnects to a failed broker only as ``reconnect_backoff`` (a
    :class:`~staticconsumer.connection.reconnect.ReconnectBackoff`, shared with the consumer's other
    client; default: one of its own with Java's defaults) allows.
    """
    limit = GROUP_RESPONSE_MAX_BYTES if max_response_bytes is None else max_response_bytes
    return _bounded()[1](max_response_bytes=limit, **kwargs)


def any_node(client: Any) -> int:
    """A broker to ask cluster-wide questions (FindCoordinator): any one aiokafka knows."""
    node: int | None = client.get_random_node()
    if node is None:
        from aiokafka.errors import NoBrokersAvailable

        raise NoBrokersAvailable("no broker known from the bootstrap servers")
    return node


async def topic_partitions(
    client: Any, topics: frozenset[str] | None, *, internal: bool = False
) -> dict[str, list[PartitionReplicas]]:
    """Fresh metadata: partitions and replica racks per topic (all topics when ``topics`` is None;
    internal ones such as ``__consumer_offsets`` among them only with ``internal``).

    Named topics are asked for by name, never auto-created: a leader in a cluster of thousands of
    topics asks for its group's few, not for all of them before every assignment. A topic that does
    not exist is left out.
    """
    if topics is None:
        cluster = await client.fetch_all_metadata()
        brokers = cluster.brokers()
        wanted = cluster.topics(exclude_internal_topics=not internal)
        return _with_racks(
            {broker.nodeId: broker.rack for broker in brokers if broker.rack},
            (
                (
                    topic,
                    {
                        p: getattr(row, "replicas", ())
                        for p, row in cluster._partitions.get(topic, {}).items()
                    },
                )
                for topic in sorted(wanted)
            ),
        )
    if not topics:
        return {}
    from aiokafka.protocol.metadata import MetadataRequest

    response = await client.send(
        any_node(client), MetadataRequest(sorted(topics), allow_auto_topic_creation=False)
    )
    return metadata_partitions(response)


def metadata_partitions(response: Any) -> dict[str, list[PartitionReplicas]]:
    """The partitions and replica racks of the topics an aiokafka MetadataResponse (any version) found,
    read from its rows as ``ClusterMetadata.update_metadata`` would hold them, without building one (a
    600-partition answer costs ~1 ms to apply, for rows read once, issue 27): the one reader of a named
    Metadata answer, for the bootstrap probe's (:meth:`ProbeAnswer.topic_partitions`) and the membership's
    (:func:`topic_partitions`). An answer naming no broker is ignored there, so nothing is known here."""
    if not response.brokers:
        return {}
    at = 2 if response.API_VERSION == 0 else 3  # a topic row's partitions, as update_metadata reads them
    return _with_racks(
        {int(b[0]): str(b[3]) for b in response.brokers if len(b) > 3 and b[3]},
        ((str(row[1]), {int(p[1]): p[3] for p in row[at]}) for row in response.topics if row[0] == 0),
    )


def _with_racks(
    racks_of: Mapping[int, str], topics: Iterable[tuple[str, Mapping[int, Iterable[int] | None]]]
) -> dict[str, list[PartitionReplicas]]:
    """Each topic's partitions in order with the racks of their replicas (``racks_of``: node -> rack of
    the brokers that have one); a topic without partitions is left out, as ClusterMetadata does."""
    no_racks: frozenset[str] = frozenset()
    result: dict[str, list[PartitionReplicas]] = {}
    for topic, replicas_of in topics:
        if not replicas_of:
            continue
        if not racks_of:  # no broker has a rack (most clusters): nothing to look up per replica
            result[topic] = [PartitionReplicas(p, no_racks) for p in sorted(replicas_of)]
            continue
        result[topic] = [
            PartitionReplicas(p, frozenset(racks_of[n] for n in replicas_of[p] or () if n in racks_of))
            for p in sorted(replicas_of)
        ]
    return result


def drop_connection(client: Any, node_id: int) -> None:
    """Close the coordination connection to ``node_id``: its requests in flight fail at once."""
    from aiokafka.client import ConnectionGroup
    from aiokafka.conn import CloseReason

    conn = client._conns.get((node_id, ConnectionGroup.COORDINATION))
    if conn is not None:
        conn.close(reason=CloseReason.CONNECTION_BROKEN)


def is_timeout(error: BaseException) -> bool:
    """Whether a failed send timed out (aiokafka's RequestTimedOutError or a plain TimeoutError)."""
    from aiokafka.errors import RequestTimedOutError

    return isinstance(error, TimeoutError | RequestTimedOutError)


# -- What the admin tools need (staticconsumer.admin) ---------------------------------------------------


async def broker_nodes(client: Any) -> list[int]:
    """Every broker in fresh cluster metadata: ListGroups must ask each one, as each lists only its groups."""
    cluster = await client.fetch_all_metadata()
    return sorted(int(broker.nodeId) for broker in cluster.brokers())


def was_not_sent(error: BaseException) -> bool:
    """Whether a failed send never reached the broker (no connection), so resending cannot repeat it."""
    from aiokafka.errors import NodeNotReadyError

    return isinstance(error, NodeNotReadyError)


def is_connection_failure(error: BaseException) -> bool:
    """Whether a send failed on the connection (refused, dropped, timed out), not on a broker verdict.

    An oversized response is not one of those, though it closes the connection: resending would get
    the same answer, so it goes to the caller as :class:`ResponseTooLargeError` at once."""
    from aiokafka.errors import KafkaConnectionError, NodeNotReadyError, RequestTimedOutError

    if isinstance(error, ResponseTooLargeError):
        return False
    return isinstance(error, KafkaConnectionError | NodeNotReadyError | RequestTimedOutError | TimeoutError)


# -- What connection diagnosis needs (staticconsumer.connection) ----------------------------------------


def bootstrap_addresses(client: Any) -> list[tuple[str, int]]:
    """The bootstrap servers of an ``AIOKafkaClient``, as (host, port), in the order it would try them."""
    return [(str(host), int(port)) for host, port, _ in client.hosts]


async def bootstrap_from(client: Any, host: str, port: int) -> None:
    """``client.bootstrap()`` from one server only: the one a probe just found answering.

    aiokafka walks its whole list in order, paying a connect timeout (and an ERROR line) for every
    dead server before a live one; narrowing the list for this one call skips that. The list is restored
    afterwards, for any later re-bootstrap.
    """
    saved = client._bootstrap_servers  # ``client.hosts`` is computed (and shuffled) from it on every read
    client._bootstrap_servers = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    try:
        await client.bootstrap()
    finally:
        client._bootstrap_servers = saved


def adopt_bootstrap(client: Any, metadata: ProbeAnswer, *, topics: bool = True) -> bool:
    """Bootstrap ``client`` from the cluster metadata a probe just read, without a connection of its own.

    ``client.bootstrap()`` would open a connection, say ApiVersions and ask for the same metadata again
    on every start. Applied here as ``bootstrap()`` applies its answer (then its periodic refresh
    starts); False, with nothing changed, when the answer names no broker (a cluster that is still
    forming), for which ``bootstrap()`` keeps its connection: call :func:`bootstrap_from` then.
    ``topics=False``: the brokers only, for a client that never reads partitions from its own metadata
    (the membership's: it asks for the topics it needs): a 600-partition topic costs ~0.6 ms to apply,
    in every start of a fleet member before its JoinGroup (issue 27).
    """
    response = metadata.cluster_metadata()
    if not topics and response.topics:
        response = copy.copy(response)
        response.topics = []
    if not response.brokers:  # what ClusterMetadata.update_metadata ignores; checked without applying it
        return False  # (applying a 600-partition answer twice cost every start of a fleet member, issue 27)
    client.cluster.update_metadata(response)
    if not topics and hasattr(client, "brokers_only"):
        client.brokers_only = True
    if client._sync_task is None:
        client._sync_task = asyncio.ensure_future(client._md_synchronizer())
    return True


if TYPE_CHECKING:  # annotations only: each Literal[...] costs ~0.02-0.05 ms at import (issue 26)
    ProbeStage = Literal["handshake", "metadata"]
    ProbeKind = Literal["timeout", "authentication", "mechanism", "closed", "tls", "other"]


class ProbeFailure(msgspec.Struct, frozen=True):
    """Why one broker could not be used, in aiokafka-neutral terms (see :func:`probe_broker`)."""

    kind: ProbeKind
    stage: ProbeStage
    message: str


class ProbeAnswer(msgspec.Struct, frozen=True):
    """A broker that answered a probe, with its Metadata response (for :func:`adopt_bootstrap`)."""

    response: Any
    named_topics: bool = False
    """The request named the topics to check (``probe_broker(topics=...)``): :meth:`topic_errors` is
    their answer, so the access check need not ask again."""
    versions: Mapping[int, tuple[int, int]] | None = None
    """What that broker advertised in the probe's ApiVersions (api key -> (min, max)), so the checks a
    start makes on the cluster's release need no connection of their own."""
    coordinator: FindCoordinatorResponse | None = None
    """The group's FindCoordinator answer (``probe_broker(group_id=...)``), sent right behind the
    Metadata request on the same connection; None when not asked or not readable (ask again then)."""
    connection: Any = None
    """The probe's connection, still open, with ``probe_broker(keep_for=client)``: the caller hands it to its
    client (:func:`adopt_connection`) or closes it. Never share an answer carrying it with another loop."""

    def close_connection(self) -> None:
        """Close the connection the probe kept (:attr:`connection`), when it is not handed on."""
        if self.connection is not None:
            self.connection.close()

    def topic_errors(self) -> dict[str, int] | None:
        """Kafka's error code per named topic, as :func:`topic_errors` reads them; None when the probe
        named none (an all-topics answer leaves out the topics the principal may not see)."""
        if not self.named_topics:
            return None
        return {str(row[1]): int(row[0]) for row in self.response.topics}

    def topic_partitions(self) -> dict[str, list[PartitionReplicas]] | None:
        """The named topics' partitions as :func:`topic_partitions` reads them (those that exist), so the
        membership need not ask the same question again at start; None when the probe named none."""
        if not self.named_topics:
            return None
        return metadata_partitions(self.response)

    def topic_ids(self) -> dict[UUID, str]:
        """The named topics' ids -> names, as a KIP-848 member resolves the ids of its assignment: so its
        first assignment needs no Metadata request (nor the connection for it) to name them. Empty when
        the probe named none, or read an answer without ids (aiokafka's, before Kafka 2.8)."""
        if not self.named_topics:
            return {}
        return dict(getattr(self.response, "topic_ids", None) or {})

    def found_topics(self) -> list[str]:
        """The named topics the answer found, as the keys of :meth:`topic_partitions` but without building
        their partitions (O(partitions) per start, twice, for a fleet's 600-partition topic: issue 27)."""
        if not self.named_topics:
            return []
        return [str(row[1]) for row in self.response.topics if row[0] == 0]

    def cluster_metadata(self) -> Any:
        """The response to bootstrap a client from: without the named topics that came with an error (a
        client applying those would log each one as an error; the access check reports them itself)."""
        if not self.named_topics:
            return self.response
        found = copy.copy(self.response)
        found.topics = [row for row in self.response.topics if row[0] == 0]
        return found


_PROBE_CONNECTION_KWARGS = (
    "client_id",
    "ssl_context",
    "security_protocol",
    "sasl_mechanism",
    "sasl_plain_username",
    "sasl_plain_password",
    "sasl_oauth_token_provider",
    "sasl_kerberos_service_name",
    "sasl_kerberos_domain_name",
)


async def probe_broker(
    host: str,
    port: int,
    *,
    request_timeout_ms: int,
    client_kwargs: dict[str, Any],
    topics: Sequence[str] = (),
    group_id: str | None = None,
    keep_for: Any = None,
) -> ProbeFailure | ProbeAnswer:
    """Open one connection the way ``AIOKafkaClient`` would (TCP, TLS, ApiVersions, SASL) and ask for
    cluster metadata on it; the answer when all of that worked, else what went wrong and at which stage.

    ``topics``: named in the Metadata request (never auto-created), so the answer carries their error
    codes too and a starting consumer's access check makes no Metadata request of its own.
    ``group_id``: FindCoordinator for it is sent right behind the Metadata request (pipelined, no round
    trip of its own), so a starting consumer knows its coordinator without opening another connection
    to ask; its failure never fails the probe (:attr:`ProbeAnswer.coordinator` is None then).
    ``client_kwargs`` are ``Settings.aiokafka_client_kwargs()``; only the connection's own are used.
    Every failure aiokafka can raise on this path is mapped here, so callers never see its classes.
    ``keep_for``: a client of ours that may take the connection over (:func:`adopt_connection`): it is
    opened with that client's own settings (frame bound, request timeout, idle limit), the answer
    carries it, open (:attr:`ProbeAnswer.connection`), and a failure closes it.
    """
    import ssl

    from aiokafka import errors
    from aiokafka.protocol.metadata import MetadataRequest

    kwargs = {key: client_kwargs[key] for key in _PROBE_CONNECTION_KWARGS if key in client_kwargs}
    stage: ProbeStage = "handshake"
    conn = None
    versions: Mapping[int, tuple[int, int]] | None = None  # set last: everything was answered
    found: asyncio.Future[FindCoordinatorResponse | None] | None = None
    try:
        if keep_for is not None:
            # built as the client would build its own (aiokafka's create_conn arguments), so taking it
            # over changes nothing on it; the caller's deadline still bounds the probe
            kwargs.update(
                max_response_bytes=keep_for.max_response_bytes,
                max_idle_ms=keep_for._connections_max_idle_ms,
                on_close=_ClosedHandover(),
            )
            request_timeout_ms = keep_for._request_timeout_ms
        conn = await open_connection(host, port, request_timeout_ms=request_timeout_ms, **kwargs)
        stage = "metadata"
        named = sorted(set(topics))
        ours = _own_metadata_request(connection_versions(conn), named)
        if ours is not None:
            asked = conn.send(ours)
        else:  # a broker before Kafka 2.8 (no Metadata v10): aiokafka's request and decoder
            asked = conn.send(
                MetadataRequest(named, allow_auto_topic_creation=False) if named else MetadataRequest([])
            )
        if group_id is not None:
            found = asyncio.ensure_future(_coordinator_of(_send_now(conn, _find_coordinator(group_id))))
        response = await asked
        if ours is not None:
            from staticconsumer.protocol.metadata import MetadataResponse as OwnMetadataResponse

            response = _MetadataRows.of(_unwrap(ours, response).response_as(OwnMetadataResponse))
        coordinator = await found if found is not None else None
        versions = connection_versions(conn)
    except (TimeoutError, errors.KafkaTimeoutError, errors.RequestTimedOutError):
        return ProbeFailure("timeout", stage, "no answer")
    except errors.SaslAuthenticationFailed as failure:
        return ProbeFailure("authentication", stage, _broker_message(failure))
    except (errors.UnsupportedSaslMechanismError, errors.IllegalSaslStateError) as failure:
        return ProbeFailure("mechanism", stage, _broker_message(failure))
    except ssl.SSLError as failure:
        return ProbeFailure("tls", stage, str(failure))
    except (errors.KafkaConnectionError, ConnectionError, EOFError) as failure:
        return ProbeFailure("closed", stage, str(failure) or type(failure).__name__)
    except (errors.KafkaError, OSError, DecodeError) as failure:
        return ProbeFailure("other", stage, f"{type(failure).__name__}: {failure}")
    finally:
        if conn is not None and not (keep_for is not None and versions is not None):
            conn.close()  # fails an unanswered FindCoordinator: ``found`` then ends with None by itself
    return ProbeAnswer(response, bool(named), versions, coordinator, conn if keep_for is not None else None)


def _own_metadata_request(
    versions: Mapping[int, tuple[int, int]], named: list[str]
) -> ProtocolRequest | None:
    """The probe's Metadata request in our own codec (v10+), or None when the broker has no such version.

    aiokafka decodes a Metadata answer field by field in Python: 2.1 ms for a fleet's 600-partition topic
    (quiet; 3.7 ms at load 9) in every start before its JoinGroup, ours ~1.2 ms less (issue 27)."""
    from staticconsumer.protocol.metadata import MetadataRequest, MetadataRequestTopic

    if not _speaks_own_metadata(versions):
        return None
    topics = [MetadataRequestTopic(name=name) for name in named]
    return ProtocolRequest(MetadataRequest(topics, allow_auto_topic_creation=False))


_refresh_without_topics: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "staticconsumer_refresh_without_topics", default=False
)
"""Set while a brokers-only client runs aiokafka's refresh of its own metadata: ask for no topic."""


async def read_metadata(conn: Any, topics: list[str] | None) -> Any:
    """Ask ``conn``'s broker (Metadata v10+, which the caller checked) for cluster metadata (``topics``:
    those named, None every topic, [] none), decoded by our codec into the shape
    ``ClusterMetadata.update_metadata`` applies. A named topic may be auto-created where the broker allows
    it, as in aiokafka's own refresh."""
    from staticconsumer.protocol.metadata import MetadataRequest, MetadataRequestTopic
    from staticconsumer.protocol.metadata import MetadataResponse as OwnMetadataResponse

    named = None if topics is None else [MetadataRequestTopic(name=name) for name in topics]
    ours = ProtocolRequest(MetadataRequest(named))
    return _MetadataRows.of(_unwrap(ours, await conn.send(ours)).response_as(OwnMetadataResponse))


def _speaks_own_metadata(versions: Mapping[int, tuple[int, int]]) -> bool:
    """Whether a broker with these ApiVersions answers the Metadata version our codec reads (v10+)."""
    from staticconsumer.protocol.metadata import MetadataRequest

    supported = versions.get(3)
    return supported is not None and supported[1] >= MetadataRequest.MIN_VERSION


class _MetadataRows:
    """Our decoded Metadata answer (v10+) in the shape of aiokafka's v1+ response, which
    ``ClusterMetadata.update_metadata`` applies and :class:`ProbeAnswer` reads: brokers
    ``(node, host, port, rack)``, topics ``(error, name, internal, partitions)``, partitions
    ``(error, partition, leader, replicas, isr, offline)``."""

    __slots__ = ("brokers", "controller_id", "topic_ids", "topics")
    API_VERSION: ClassVar[int] = 5
    """Any version but 0 (which update_metadata reads without racks or internal flags)."""

    def __init__(
        self,
        brokers: list[Any],
        controller_id: int,
        topics: list[Any],
        topic_ids: dict[UUID, str] | None = None,
    ) -> None:
        self.brokers = brokers
        self.controller_id = controller_id
        self.topics = topics
        self.topic_ids = topic_ids or {}
        """Each found topic's id -> its name (the rows above have no column for it)."""

    @classmethod
    def of(cls, response: Any) -> _MetadataRows:
        return cls(
            [(b.node_id, b.host, b.port, b.rack) for b in response.brokers],
            response.controller_id,
            [
                (
                    t.error_code,
                    t.name,
                    t.is_internal,
                    [
                        (
                            p.error_code,
                            p.partition_index,
                            p.leader_id,
                            p.replica_nodes,
                            p.isr_nodes,
                            p.offline_replicas,
                        )
                        for p in t.partitions
                    ],
                )
                for t in response.topics
            ],
            {t.topic_id: t.name for t in response.topics if t.error_code == 0 and t.name and t.topic_id.int},
        )


FIND_COORDINATOR_MAX_VERSION: Final = 3
"""FindCoordinator v4+ batch the keys; one group's lookup asks v3 at most."""


def _find_coordinator(group_id: str) -> ProtocolRequest:
    from staticconsumer.protocol import FindCoordinatorRequest

    return ProtocolRequest(FindCoordinatorRequest(key=group_id), max_version=FIND_COORDINATOR_MAX_VERSION)


async def find_coordinator(client: Any, group_id: str) -> FindCoordinatorResponse:
    """The FindCoordinatorResponse for ``group_id``, asked of any broker on its default connection.
    Its ``error_code`` is the caller's to judge."""
    from staticconsumer.protocol import FindCoordinatorRequest, FindCoordinatorResponse

    exchange = await send(
        client,
        any_node(client),
        FindCoordinatorRequest(key=group_id),
        coordination=False,
        max_version=FIND_COORDINATOR_MAX_VERSION,
    )
    return exchange.response_as(FindCoordinatorResponse)


def _send_now(conn: Any, request: ProtocolRequest) -> tuple[ProtocolRequest, Any]:
    """Write ``request`` on ``conn`` now (its answer is awaited later), or keep what stopped it."""
    try:
        return request, conn.send(request)
    except Exception as error:
        return request, error


async def _coordinator_of(sent: tuple[ProtocolRequest, Any]) -> FindCoordinatorResponse | None:
    """The FindCoordinatorResponse of a request :func:`_send_now` wrote, or None when it failed in any
    way (the access check then asks again, and reports what it gets)."""
    request, waiter = sent
    try:
        if isinstance(waiter, Exception):
            raise waiter
        exchange = _unwrap(request, await waiter)
    except Exception as error:  # never the probe's failure: the access check asks again
        logging.getLogger("staticconsumer.connection").debug(
            "FindCoordinator behind the bootstrap probe failed: %r", error
        )
        return None
    from staticconsumer.protocol import FindCoordinatorResponse

    return exchange.response_as(FindCoordinatorResponse)


class _ClosedHandover:
    """The closing callback of a probe's kept connection: nothing until a client takes the connection
    over, then that client's own (aiokafka refreshes its metadata when a connection of its breaks)."""

    __slots__ = ("client_callback",)

    def __init__(self) -> None:
        self.client_callback: Callable[[Any, Any], None] | None = None

    def __call__(self, conn: Any, reason: Any) -> None:
        if self.client_callback is not None:
            self.client_callback(conn, reason)


def adopt_connection(client: Any, answer: ProbeAnswer, node_id: int) -> bool:
    """Make the connection a probe kept for ``client`` (``probe_broker(keep_for=client)``) its coordination
    connection to ``node_id`` (the group's coordinator), when it reached that very broker: the join then
    sends on it at once, where opening one (TCP, ApiVersions, SASL) waited for a round trip or more, and
    for the loop busy starting, before its JoinGroup (3-15 ms at N=12 in a rolling bounce). It was opened
    with the client's own settings, so only its closing callback is forwarded from here. False when it
    was not that broker (a host or port other than the metadata's), or is closed, or the client has one
    already; the caller then closes it."""
    from aiokafka.client import ConnectionGroup

    conn = answer.connection
    key = (node_id, ConnectionGroup.COORDINATION)
    broker = client.cluster.broker_metadata(node_id)
    handover = getattr(conn, "_on_close_cb", None)  # None once closed (aiokafka drops it then)
    if (
        conn is None
        or not isinstance(handover, _ClosedHandover)
        or broker is None
        or (broker.host, broker.port) != (conn.host, conn.port)
        or not conn.connected()
        or key in client._conns
    ):
        return False
    handover.client_callback = client._on_connection_closed
    client._conns[key] = conn
    backoff = reconnect_backoff_of(client)
    if backoff is not None:
        backoff.connected(_backoff_key(client, node_id), time.monotonic())
    return True


async def open_early(client: Any, node_id: int, *, coordination: bool = True) -> None:
    """Connect to ``node_id`` now (TCP, TLS, ApiVersions, SASL) because a request will soon need it, so
    that request does not wait for the handshake. Best effort: that request connects (and reports a
    failure) itself, and aiokafka serialises attempts, so it waits for this one rather than open a second.
    """
    with contextlib.suppress(Exception):
        await client.ready(node_id, group=_connection_group(coordination))


def _broker_message(error: BaseException) -> str:
    """The broker's own words from an aiokafka error, without aiokafka's class-name prefix."""
    text = error.args[0] if error.args and isinstance(error.args[0], str) else ""
    return text or getattr(error, "description", "") or type(error).__name__


async def topic_errors(client: Any, topics: list[str]) -> dict[str, int]:
    """Kafka's error code per topic from a Metadata request naming them, without auto-creating any:
    0 exists, 3 UNKNOWN_TOPIC_OR_PARTITION, 29 TOPIC_AUTHORIZATION_FAILED (no DESCRIBE), ...

    The all-topics metadata the consumer refreshes silently leaves out topics the principal may not
    see, so only a request naming them tells "missing" from "not allowed".
    """
    from aiokafka.protocol.metadata import MetadataRequest

    response = await client.send(any_node(client), MetadataRequest(topics, allow_auto_topic_creation=False))
    return {str(row[1]): int(row[0]) for row in response.topics}  # every version: (error_code, name, ...)


def broker_addresses(client: Any) -> dict[int, str]:
    """Every broker in the client's current metadata: node id -> "host:port"."""
    return {int(b.nodeId): f"{b.host}:{b.port}" for b in client.cluster.brokers()}


def metadata_topics(client: Any) -> set[str]:
    """Topics in the client's current cluster metadata."""
    return set(client.cluster.topics())


def node_connections(client: Any, node_id: int) -> list[Any]:
    """The client's connection objects to ``node_id`` (any connection group, open or not)."""
    return [conn for (node, _), conn in list(client._conns.items()) if node == node_id]


def live_connections(client: Any) -> dict[int, list[Any]]:
    """Node id -> the client's open connections to it (any connection group)."""
    live: dict[int, list[Any]] = {}
    for (node, _), conn in list(client._conns.items()):
        if isinstance(node, int) and conn.connected():
            live.setdefault(node, []).append(conn)
    return live


def live_nodes(client: Any) -> set[int]:
    """Node ids to which the client holds an open connection right now (any connection group)."""
    return {
        node for (node, _), conn in list(client._conns.items()) if isinstance(node, int) and conn.connected()
    }


def report_answers(client: Any, on_answered: Callable[[int, float], None] | None) -> None:
    """Have a client of ours call ``on_answered(node_id, sent_at)`` (``time.monotonic()`` seconds) for
    every request a broker answers, a new connection's ApiVersions included; None: stop. Other clients
    (aiokafka's own, test doubles) are left alone: their recovery is noticed by the monitor's tick."""
    if hasattr(client, "on_answered"):
        client.on_answered = on_answered


def reconnect_backoff_of(client: Any) -> ReconnectBackoff | None:
    """The reconnect backoff of a client of ours (shared by a consumer's clients); None for others."""
    backoff = getattr(client, "reconnect_backoff", None)
    return backoff if isinstance(backoff, ReconnectBackoff) else None


def _backoff_key(client: Any, node_id: Any) -> str:
    """The broker's key in the reconnect backoff: ``host:port`` (the node id while it is unknown)."""
    broker = client.cluster.broker_metadata(node_id)
    return f"{broker.host}:{broker.port}" if broker is not None else str(node_id)


def reconnect_wait(client: Any, node_id: int) -> float | None:
    """Seconds until a client of ours may attempt a connection to ``node_id`` (0: now; infinite while an
    attempt is under way, its end unknown); None for a client without a reconnect backoff."""
    backoff = reconnect_backoff_of(client)
    if backoff is None:
        return None
    key = _backoff_key(client, node_id)
    return float("inf") if backoff.attempting(key) else backoff.wait(key, time.monotonic())


async def reconnect(client: Any, node_id: int) -> bool:
    """Ask the client to connect to ``node_id`` now (a no-op when connected); True when it is."""
    ready: bool = await client.ready(node_id)
    return ready


async def start_consumer_from(consumer: Any, address: str | None, answer: ProbeAnswer | None = None) -> None:
    """``consumer.start()`` (an ``AIOKafkaConsumer``) bootstrapping from ``address`` only (``host:port``,
    a server the membership's bootstrap just found answering), so a dead or silent server listed first
    costs the fetcher nothing either; with that server's probe ``answer``, from its metadata without a
    connection of its own (:func:`adopt_bootstrap`), tracking the subscribed topics that answer found. The
    client's list is restored afterwards."""
    client = consumer._client
    saved = client._bootstrap_servers
    if address is not None:
        host, _, port = address.rpartition(":")
        client._bootstrap_servers = [f"[{host}]:{port}" if ":" in host else address]
    if answer is not None:
        connect_to_bootstrap = client.bootstrap

        async def bootstrap() -> None:
            if not adopt_bootstrap(client, answer):
                await connect_to_bootstrap()
                return
            found = answer.found_topics()
            if found and not client._topics:
                # The answer named the subscribed topics: the fetcher tracks those it found from the start,
                # so warming it up (track_topics) does not ask for their metadata a second time.
                client._topics = set(found)

        client.bootstrap = bootstrap
    try:
        await consumer.start()
    finally:
        client._bootstrap_servers = saved
        if answer is not None:
            del client.bootstrap  # the class's own again, for any later re-bootstrap


def track_topics(consumer: Any, topics: frozenset[str]) -> asyncio.Future[Any] | None:
    """Keep ``topics`` (the subscription) in the fetcher's metadata besides its assigned partitions'
    topics, as a subscribed aiokafka consumer does, so ``partitions_for_topic`` knows them. Returns the
    metadata refresh this asked for (done at once when no topic is new), or None if nothing changed."""
    client = consumer._client
    assigned = {tp.topic for tp in consumer.assignment()}
    wanted = assigned | set(topics)
    if wanted and wanted != client._topics:
        refreshed: asyncio.Future[Any] = client.set_topics(wanted)
        return refreshed
    return None


def fetch_partitions(consumer: Any, partitions: list[Any], topics: frozenset[str]) -> None:
    """Point the fetcher at ``partitions``, keeping ``topics`` (the subscription) in its metadata.

    Not ``AIOKafkaConsumer.assign``: that hands the client exactly the assigned topics, and an empty
    list (an eager revoke: fetch nothing until the new assignment) makes aiokafka refresh metadata for
    *every* topic in the cluster, then again for the group's when the assignment arrives. Every member
    did both at every rebalance, at the moment all of them compete for the CPU. Here the client keeps
    tracking the subscription, so nothing needs refreshing unless an assigned topic is new to it.
    """
    consumer._subscription.assign_from_user(partitions)
    track_topics(consumer, topics)


def fetched_now(
    consumer: Any, partitions: Collection[Any], max_records: int | None = None
) -> dict[Any, list[Any]]:
    """The records the fetcher has already fetched from ``partitions`` (up to ``max_records``, else
    max_poll_records), taken without suspending: so the caller can hold the partitions back before the
    fetcher reads ahead, and a poll whose records are ready costs no task and no loop iteration.

    ``partitions`` is any collection of partitions equal to aiokafka's (``(topic, partition)`` tuples);
    the fetcher asks of each partition it holds records of whether it is in it, so a set is the cheap
    one. Empty means every partition assigned to the fetcher, as in ``getmany()``.

    ``getmany(timeout_ms=0)`` does the same but is a coroutine the caller would have to await; this
    drives aiokafka's ``fetched_records`` for its one synchronous step. Errors of the fetch (offset out
    of range, authorization) are raised as ``getmany`` raises them.
    """
    fetcher = getattr(consumer, "_fetcher", None)
    if fetcher is None:  # not aiokafka's consumer (a test double): the caller fetches as usual
        return {}
    limit = max_records or consumer._max_poll_records
    coroutine = fetcher.fetched_records(partitions, 0, max_records=limit)
    try:
        coroutine.send(None)
    except StopIteration as done:
        result: dict[Any, list[Any]] = done.value
        return result
    coroutine.close()  # it would wait (a reassignment, never in a group-less fetcher): nothing now
    return {}


async def warm_fetcher(consumer: Any, topics: frozenset[str]) -> None:
    """Before the first assignment: load ``topics``' metadata into the fetcher and connect to their
    partitions' leaders, while the membership joins on its own thread.

    Otherwise the first fetch after SyncGroup waits for a Metadata request (the topics are new to the
    fetcher) and then for a new connection (TCP, ApiVersions) to each leader: ~10 ms a restarting
    static member paid between knowing its positions and its first record. aiokafka serialises
    connection attempts, so a fetch that comes while one is under way uses it rather than opening a
    second. Best effort: what fails here the fetch path retries and reports as it always did.
    """
    if not topics:
        return
    client = consumer._client
    refreshed = track_topics(consumer, topics)
    if refreshed is not None:
        await refreshed
    # Each partition's leader read from the rows ClusterMetadata keeps (what leader_for_partition reads):
    # a TopicPartition and two lookups per partition cost 0.4 ms per start for a fleet's 600-partition
    # topic, on the application's loop while the membership joins (issue 27).
    rows = client.cluster._partitions
    leaders = {row.leader for topic in topics for row in rows.get(topic, {}).values()}
    await asyncio.gather(
        *(client.ready(node) for node in leaders if node is not None and node >= 0), return_exceptions=True
    )


def fetcher_client(consumer: Any) -> Any:
    """The ``AIOKafkaClient`` inside an ``AIOKafkaConsumer`` (it fetches over its own connections)."""
    return consumer._client


class AiokafkaNoise(msgspec.Struct, frozen=True):
    """An aiokafka log record recognised as a symptom: a broker it cannot reach, or a topic it lost.

    ``kind`` is "connection" (``node_ids`` failed, ``cause`` says how; ``address`` when the error names
    one) or "topic" (``topic`` missing from metadata, or ``unauthorized``).
    """

    kind: Literal["connection", "topic"]
    node_ids: tuple[int, ...] = ()
    cause: str = ""
    address: str | None = None
    topic: str | None = None
    unauthorized: bool = False
    attempt: bool = False
    """A failed attempt to connect (one record per attempt), not a request failing on a connection."""
    timeout: bool = False
    """It failed by timing out: what a request gets when its own event loop did not run in time."""
    peer_fault: bool = False
    """The broker answered, but unreadably or oversized: reported (rate-limited) where it was read, and
    no sign that the broker is unreachable."""


_CONNECT_FAILED = "Unable connect to node with id %s: %s"
_METADATA_FAILED = "Unable to update metadata from %s"
_METADATA_REQUEST_FAILED = "Unable to request metadata from node with id %s: %r"
_FETCH_FAILED = ("Failed fetch messages from %s: %s", "Failed fetch offsets from %s: %s")
_TOPIC_NOT_FOUND = "Topic %s not found in cluster metadata"
_TOPIC_NOT_AUTHORIZED = "Topic %s is not authorized for this client"
_ADDRESS_IN_ERROR = r"\('([^']+)', (\d+)\)|at ([^\s:]+):(\d+)"

NOISY_LOGGERS = ("aiokafka", "aiokafka.consumer.fetcher", "aiokafka.cluster")
"""The loggers whose records :func:`classify_record` knows (a logger's filters see only its own records)."""


def classify_record(record: logging.LogRecord) -> AiokafkaNoise | None:
    """What an aiokafka 0.14 log record means, or None when it is none of the floods we fold.

    While a broker is down aiokafka repeats these about 40 times a second (connect, metadata and fetch
    failures); a deleted topic under an assigned partition repeats "not found" about 100 times a second.
    """
    from aiokafka import errors

    args: tuple[Any, ...] = record.args if isinstance(record.args, tuple) else ()
    try:
        if record.name == "aiokafka" and record.msg == _CONNECT_FAILED:
            return _connection_noise([args[0]], args[1], attempt=True)
        if record.name == "aiokafka" and record.msg == _METADATA_REQUEST_FAILED:
            return _connection_noise([args[0]], args[1])
        if record.name == "aiokafka" and record.msg == _METADATA_FAILED:
            return _connection_noise(list(args[0]), "metadata update failed")
        if record.name == "aiokafka.consumer.fetcher" and record.msg in _FETCH_FAILED:
            connection_errors = (
                errors.KafkaConnectionError,
                errors.NodeNotReadyError,
                errors.RequestTimedOutError,
            )
            if isinstance(args[1], connection_errors):
                return _connection_noise([args[0]], args[1])
        if record.name == "aiokafka.cluster" and record.msg in (_TOPIC_NOT_FOUND, _TOPIC_NOT_AUTHORIZED):
            return AiokafkaNoise(
                "topic", topic=str(args[0]), unauthorized=record.msg == _TOPIC_NOT_AUTHORIZED
            )
    except (IndexError, TypeError, ValueError):
        return None
    return None


def _connection_noise(nodes: list[Any], error: object, *, attempt: bool = False) -> AiokafkaNoise | None:
    node_ids = tuple(int(node) for node in nodes if isinstance(node, int) or str(node).isdigit())
    if not node_ids:
        return None
    cause = str(error) if not isinstance(error, str) else error
    if isinstance(error, BaseException) and not str(error):
        cause = type(error).__name__
    from aiokafka.errors import KafkaTimeoutError, RequestTimedOutError

    timeout = isinstance(error, TimeoutError | RequestTimedOutError | KafkaTimeoutError)
    peer_fault = isinstance(error, BaseException) and is_peer_fault(error)
    match = re.search(_ADDRESS_IN_ERROR, cause)  # compiled on the first failure, not at import
    address = None
    if match:
        host, port = (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
        address = f"{host}:{port}"
    return AiokafkaNoise(
        "connection",
        node_ids=node_ids,
        cause=cause,
        address=address,
        attempt=attempt,
        timeout=timeout,
        peer_fault=peer_fault,
    )


def is_peer_fault(error: BaseException) -> bool:
    """Whether a failed request failed on what the broker sent (an oversized frame, or a response our
    reader could not parse, which aiokafka reports as the cause of its "connection closed" error)."""
    if isinstance(error, ResponseTooLargeError):
        return True
    cause = error.__cause__
    return cause is not None and not isinstance(cause, OSError | EOFError | ConnectionError | TimeoutError)


# -- Bounded responses ----------------------------------------------------------------------------------
#
# aiokafka 0.14's ``AIOKafkaConnection._read`` does ``readexactly(size)`` for whatever size a frame claims,
# so a broken or hostile peer that claims 2 GiB and trickles bytes makes the client buffer all of it.
# Our clients (``new_client``, ``new_fetcher``) create their connections while a context variable holds
# their limit; ``aiokafka.client.create_conn`` is replaced once by a function that, only when that variable
# is set, builds a connection whose reader task checks the size prefix before reading the frame. Any
# other aiokafka client in the process gets aiokafka's own connection, unchanged.

GROUP_RESPONSE_MAX_BYTES: Final = 104_857_600
"""Ceiling for group, coordination, admin and metadata responses: 100 MiB, the broker's own default
``socket.request.max.bytes`` (the largest request it accepts, so the largest member metadata it holds)."""

FETCH_RESPONSE_OVERHEAD_BYTES: Final = 1_048_576
"""What a fetch response may carry beyond fetch.max.bytes: per-partition headers and aborted-transaction
lists, and a first record batch larger than the fetch limit (which Kafka returns anyway; topics allow 1 MiB
per batch by default)."""

MAX_FRAME_BYTES: Final = 2_147_483_647
"""A frame's size prefix is an int32: nothing larger can be genuine."""

RESPONSE_LIMIT_SETTING: Final = "receive.message.max.bytes (KAFKA_RECEIVE_MESSAGE_MAX_BYTES)"

_response_limit: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "staticconsumer_response_limit", default=None
)


def fetch_response_limit(fetch_max_bytes: int, max_partition_fetch_bytes: int) -> int:
    """The default limit of a fetcher's connections: the larger fetch bound plus the overhead."""
    return min(
        MAX_FRAME_BYTES, max(fetch_max_bytes, max_partition_fetch_bytes) + FETCH_RESPONSE_OVERHEAD_BYTES
    )


def _api_name(request_struct: Any) -> str | None:
    key = getattr(request_struct, "API_KEY", None)
    if key is None:
        return None
    return api_name(key)


async def _read_bounded(self_ref: Any, limit: int) -> None:
    """aiokafka's reader loop, with the size prefix checked against ``limit`` before the frame is read."""
    from aiokafka.conn import CloseReason

    self = self_ref()
    if self is None:
        return
    reader = self._reader
    del self
    while True:
        prefix = await reader.readexactly(4)
        (size,) = struct.unpack(">I", prefix)  # unsigned: a "negative" size is a huge claim too
        self = self_ref()
        if self is None:
            return
        if size > limit:
            head = self._requests[0] if self._requests else None
            error = _oversized_error_class()(
                size,
                limit,
                f"{self.host}:{self.port}",
                _api_name(head[1]) if head else None,
                RESPONSE_LIMIT_SETTING,
            )
            if head is not None and not head[2].done():
                head[2].set_exception(error)
            PEER_FAULTS.warning(
                (error.broker, "oversized", error.api),
                "Kafka broker %s sent an oversized response: %s",
                error.broker,
                error,
            )
            self.close(reason=CloseReason.OUT_OF_SYNC, exc=error)
            return
        del self
        frame = await reader.readexactly(size)
        self = self_ref()
        if self is None:
            return
        self._handle_frame(frame)
        del self


PEER_FAULTS: Final = CauseLog(logging.getLogger("staticconsumer.connection"))
"""Garbled and oversized responses: one WARNING per broker and cause per minute, with a count."""


_UNREADABLE = (
    "Kafka broker %s sent a response that could not be read (%s); the connection was closed and the "
    "request is retried"
)


def report_unreadable(client: Any, node_id: int, error: BaseException) -> None:
    """A response of ours from ``node_id`` did not decode: one rate-limited WARNING naming the broker."""
    address = broker_addresses(client).get(node_id, f"node {node_id}")
    cause = f"{type(error).__name__}: {error}"[:300]
    PEER_FAULTS.warning((address, "unreadable", type(error).__name__), _UNREADABLE, address, cause)


def _on_read_done(self_ref: Any, read_task: asyncio.Task[None]) -> None:
    """aiokafka's ``_on_read_task_error`` without its traceback per failure: a response that cannot be
    parsed (a garbling peer) fails every retry alike, so it is one rate-limited WARNING naming the
    broker and the cause; the connection is closed as aiokafka closes it, and its requests retried."""
    from aiokafka.conn import CloseReason

    if read_task.cancelled():
        return
    error = read_task.exception()
    if error is None:
        return
    self = self_ref()
    if self is None:
        return
    if not isinstance(error, OSError | EOFError | ConnectionError):
        address = f"{self.host}:{self.port}"
        cause = f"{type(error).__name__}: {error}"[:300]
        PEER_FAULTS.warning((address, "unreadable", type(error).__name__), _UNREADABLE, address, cause)
    self.close(reason=CloseReason.CONNECTION_BROKEN, exc=error)


@functools.cache
def _oversized_error_class() -> type[ResponseTooLargeError]:
    """ResponseTooLargeError that aiokafka's own loops also treat as a connection error (they retry
    on ``KafkaError`` and would otherwise die, as the metadata synchroniser task would)."""
    from aiokafka.errors import KafkaConnectionError

    class AiokafkaResponseTooLargeError(ResponseTooLargeError, KafkaConnectionError):  # type: ignore[misc]
        def __str__(self) -> str:
            return str(self.args[0]) if self.args else type(self).__name__

    AiokafkaResponseTooLargeError.__name__ = AiokafkaResponseTooLargeError.__qualname__ = (
        "ResponseTooLargeError"
    )
    return AiokafkaResponseTooLargeError


@functools.cache
def _bounded() -> tuple[Any, Any, Any]:
    """The connection, client and consumer classes with bounded responses, built on first use (so
    importing this module does not import aiokafka), and ``create_conn`` replaced once."""
    import aiokafka.client
    from aiokafka import AIOKafkaConsumer
    from aiokafka.client import AIOKafkaClient, ConnectionGroup
    from aiokafka.conn import AIOKafkaConnection
    from aiokafka.errors import KafkaConnectionError
    from aiokafka.protocol.metadata import MetadataRequest as TheirMetadataRequest
    from aiokafka.structs import TopicPartition as KafkaTopicPartition

    class BoundedConnection(AIOKafkaConnection):  # type: ignore[misc]
        max_response_bytes = MAX_FRAME_BYTES

        def _create_reader_task(self) -> asyncio.Task[None]:
            self_ref = weakref.ref(self)
            read_task = asyncio.create_task(_read_bounded(self_ref, self.max_response_bytes))
            read_task.add_done_callback(functools.partial(_on_read_done, self_ref))
            return read_task

        def authenticator_oauth(self) -> Any:
            return _OAuthBearerExchange(super().authenticator_oauth())

        def send(self, request: Any, expect_response: bool = True) -> Any:
            """aiokafka's Metadata requests (bootstrap, periodic and forced refreshes: at a broker's return
            a fleet's every client at once) go out as ours and are read by our codec from Kafka 2.8's v10
            on: a 600-partition topic in ~0.6 ms instead of aiokafka's ~2.1 ms (issue 27). The answer has
            the shape aiokafka applies; anything else, and an older broker, is aiokafka's own."""
            if (
                expect_response
                and type(request) is TheirMetadataRequest
                and _speaks_own_metadata(connection_versions(self))
            ):
                topics = [] if _refresh_without_topics.get() else request._topics
                return self._read_metadata(None if topics is None else list(topics))
            return super().send(request, expect_response)

        async def _read_metadata(self, topics: list[str] | None) -> Any:
            try:
                return await read_metadata(super(), topics)
            except DecodeError as error:  # as aiokafka's refresh knows it: that broker failed, try another
                raise KafkaConnectionError(f"undecodable Metadata answer: {error}") from error

    aiokafka_create_conn = aiokafka.client.create_conn

    async def create_conn(host: str, port: int, **kwargs: Any) -> Any:
        limit = _response_limit.get()
        if limit is None:
            return await aiokafka_create_conn(host, port, **kwargs)
        conn = BoundedConnection(host, port, **kwargs)
        conn.max_response_bytes = limit
        await conn.connect()
        return conn

    aiokafka.client.create_conn = create_conn

    class BoundedClient(AIOKafkaClient):  # type: ignore[misc]
        """Connections made by this client (bootstrap and per node) refuse frames over the limit."""

        def __init__(
            self,
            *,
            max_response_bytes: int,
            reconnect_backoff: ReconnectBackoff | None = None,
            **kwargs: Any,
        ) -> None:
            if not 0 < max_response_bytes <= MAX_FRAME_BYTES:
                raise ValueError(
                    f"max_response_bytes must be 1 to {MAX_FRAME_BYTES}, got {max_response_bytes}"
                )
            super().__init__(**kwargs)
            self.max_response_bytes = max_response_bytes
            self.on_oversized: Callable[[Any, ResponseTooLargeError], None] | None = None
            self.on_answered: Callable[[int, float], None] | None = None
            """See :func:`report_answers`."""
            self.reconnect_backoff = reconnect_backoff or ReconnectBackoff()
            self.brokers_only = False
            """Set by :func:`adopt_bootstrap` (``topics=False``): its own refreshes name no topic."""

        async def bootstrap(self) -> None:
            token = _response_limit.set(self.max_response_bytes)
            try:
                await super().bootstrap()
            finally:
                _response_limit.reset(token)

        async def _get_conn(
            self, node_id: Any, *, group: Any = ConnectionGroup.DEFAULT, no_hint: bool = False
        ) -> Any:
            """aiokafka connects whenever anything asks (metadata refresh, fetcher, our requests): tens of
            attempts a second to a broker that is down. Here a broker that failed is not tried again
            before its reconnect backoff has passed (Java's ClusterConnectionStates); None meanwhile, as
            for a failed attempt, so every caller retries as it already does."""
            existing = self._conns.get((node_id, group))
            if existing is not None and existing.connected():
                return existing
            key = _backoff_key(self, node_id)
            began = time.monotonic()
            if not self.reconnect_backoff.begin(key, began):
                return None
            conn = None
            token = _response_limit.set(self.max_response_bytes)
            try:
                conn = await super()._get_conn(node_id, group=group, no_hint=no_hint)
            finally:
                _response_limit.reset(token)
                if conn is None:
                    self.reconnect_backoff.failed(key, time.monotonic())
                else:
                    self.reconnect_backoff.connected(key, time.monotonic())
            if conn is not None and existing is not conn and self.on_answered is not None:
                self.on_answered(node_id, began)  # its ApiVersions was answered
            return conn

        async def _metadata_update(self, cluster_metadata: Any, topics: Any) -> bool:
            """aiokafka's refresh, unchanged, except that a client which tracks no topic and took its
            brokers only (:func:`adopt_bootstrap` with ``topics=False``: the membership's) asks for none,
            where aiokafka asks for every topic of the cluster (issue 27). :func:`fetch_all_metadata`
            (another ``cluster_metadata``) still reads every topic."""
            token = _refresh_without_topics.set(
                self.brokers_only and cluster_metadata is self.cluster and not topics
            )
            try:
                return bool(await super()._metadata_update(cluster_metadata, topics))
            finally:
                _refresh_without_topics.reset(token)

        async def send(self, node_id: Any, request: Any, *, group: Any = ConnectionGroup.DEFAULT) -> Any:
            sent = time.monotonic()
            try:
                response = await super().send(node_id, request, group=group)
            except ResponseTooLargeError as error:
                if self.on_oversized is not None:
                    self.on_oversized(request, error)
                raise
            if self.on_answered is not None and isinstance(node_id, int):
                self.on_answered(node_id, sent)
            return response

    client_parameters = frozenset(_parameters(AIOKafkaClient.__init__))

    class BoundedConsumer(AIOKafkaConsumer):  # type: ignore[misc]
        """aiokafka's consumer on a :class:`BoundedClient`; an oversized fetch response is raised from
        ``getmany``/``getone`` for the partitions it was for (as aiokafka raises per-partition errors),
        instead of being retried silently for ever."""

        def __init__(
            self,
            *,
            max_response_bytes: int,
            reconnect_backoff: ReconnectBackoff | None = None,
            **kwargs: Any,
        ) -> None:
            super().__init__(**kwargs)
            client_kwargs = {k: v for k, v in kwargs.items() if k in client_parameters}
            self._client = BoundedClient(
                max_response_bytes=max_response_bytes,
                reconnect_backoff=reconnect_backoff,
                **client_kwargs,
            )
            self._client.on_oversized = self._oversized

        def _oversized(self, request: Any, error: ResponseTooLargeError) -> None:
            fetcher = self._fetcher
            if fetcher is None or getattr(request, "API_KEY", None) != 1:
                return
            for topic, partitions in request.topics:
                for partition in partitions:
                    tp = KafkaTopicPartition(topic, partition[0])
                    if tp not in fetcher._records:
                        fetcher._set_error(tp, error)
            for waiter in list(fetcher._fetch_waiters):
                fetcher._notify(waiter)

    return BoundedConnection, BoundedClient, BoundedConsumer


class _OAuthBearerExchange:
    """aiokafka's OAUTHBEARER exchange, finished as RFC 7628 (3.2.2) asks when the broker rejects the token.

    aiokafka sends the token and takes any answer for success. A broker that rejects it answers with an
    error challenge (``{"status":"invalid_token"}``) and waits for the client's ``%x01`` before failing
    the exchange; without that reply the connection stays mid-authentication and the broker answers the
    next request (FindCoordinator, JoinGroup, Fetch) with ILLEGAL_SASL_STATE, which names nothing useful.
    Replying makes the broker fail the exchange with SASL_AUTHENTICATION_FAILED and its reason, which
    aiokafka raises as an authentication failure (the bootstrap reports it; later connections retry with a
    fresh token from the provider)."""

    def __init__(self, token_step: Any) -> None:
        self._token_step = token_step
        self._token_sent = False
        self._rejection_answered = False

    async def step(self, payload: bytes | None) -> tuple[bytes, bool] | None:
        if self._token_sent and payload:
            if self._rejection_answered:
                return None
            self._rejection_answered = True
            return b"\x01", True
        result: tuple[bytes, bool] | None = await self._token_step.step(payload)
        if result is not None:
            self._token_sent = True
        return result


def _parameters(function: Callable[..., Any]) -> list[str]:
    import inspect

    return [name for name in inspect.signature(function).parameters if name != "self"]


async def open_connection(
    host: str, port: int, *, max_response_bytes: int = GROUP_RESPONSE_MAX_BYTES, **kwargs: Any
) -> Any:
    """One ``AIOKafkaConnection`` (ApiVersions done) that refuses frames over ``max_response_bytes``."""
    import aiokafka.client

    _bounded()
    token = _response_limit.set(max_response_bytes)
    try:
        return await aiokafka.client.create_conn(host, port, **kwargs)
    finally:
        _response_limit.reset(token)


def new_fetcher(
    *,
    max_response_bytes: int | None = None,
    subclass: Callable[[type[Any]], type[Any]] | None = None,
    **kwargs: Any,
) -> Any:
    """An ``AIOKafkaConsumer`` (built from the same keyword arguments) whose connections refuse response
    frames over ``max_response_bytes``; by default :func:`fetch_response_limit` of its fetch settings.
    ``subclass`` derives the class actually built (the consumer's: one no instrumentation reaches)."""
    if max_response_bytes is None:
        max_response_bytes = fetch_response_limit(
            kwargs.get("fetch_max_bytes", 52_428_800), kwargs.get("max_partition_fetch_bytes", 1_048_576)
        )
    cls = _bounded()[2]
    if subclass is not None:
        cls = subclass(cls)
    return cls(max_response_bytes=max_response_bytes, **kwargs)


# -- Wire tracing (diagnostics) --------------------------------------------------------------------------


def trace_wire(
    on_request: Callable[[int, int | None, int, float, float], None],
    on_connect: Callable[[int, float, float], None],
    *,
    on_error: Callable[[int | None, int, float, str], None] | None = None,
) -> None:
    """Report every request and every connection made through aiokafka in this process, for good.

    For ``staticconsumer.bounce --trace`` (benchmarks/join_trace.py), never for a measured run: both
    clients send through aiokafka's connections, so wrapping ``AIOKafkaConnection.send`` and ``connect``
    shows either client's requests the same way. ``on_request(api_key, version, port, sent, took)`` runs
    when a request's answer (or failure) is in; ``version`` is None for a request class that cannot be
    traced (``__slots__``). ``on_connect(port, began, took)`` runs when a connection attempt ends.
    ``on_error(api_key, port, sent, error)`` also runs for a request (``api_key`` None: a connection
    attempt) that failed, with the error's class name: whether a member waited on a timeout, a refused
    connect or a closed connection (the fleet benchmark's broker-restart timeline).
    """
    import time

    import aiokafka.conn

    connection = aiokafka.conn.AIOKafkaConnection
    original_send = connection.send

    def send(self: Any, request: Any, expect_response: bool = True) -> Any:
        sent = time.time()
        version: list[int] = []
        prepare = request.prepare

        def traced_prepare(versions: Any) -> Any:
            prepared = prepare(versions)
            version.append(int(prepared.API_VERSION))
            return prepared

        with contextlib.suppress(AttributeError):  # a request class with __slots__: no version then
            request.prepare = traced_prepare
        waiter = original_send(self, request, expect_response)

        async def answered() -> Any:
            try:
                return await waiter
            except BaseException as error:
                if on_error is not None:
                    on_error(int(request.API_KEY), self._port, sent, type(error).__name__)
                raise
            finally:
                on_request(
                    int(request.API_KEY),
                    version[0] if version else None,
                    self._port,
                    sent,
                    time.time() - sent,
                )

        return answered()

    original_connect = connection.connect

    async def connect(self: Any) -> Any:
        # the connection's own connect, not create_conn: the bounded clients build their connections
        # themselves (``_bounded``), so a create_conn wrapped after them would never see theirs
        began = time.time()
        try:
            return await original_connect(self)
        except BaseException as error:
            if on_error is not None:
                on_error(None, self._port, began, type(error).__name__)
            raise
        finally:
            on_connect(self._port, began, time.time() - began)

    connection.send = send
    connection.connect = connect


# -- The contract with aiokafka ----------------------------------------------------------------------
#
# Every name below is aiokafka's and not its public API, yet this module relies on it (nothing else in
# staticconsumer may touch aiokafka's internals). tests/unit/test_aiokafka_contract.py checks each one
# against the installed aiokafka and names the one that is missing or whose signature moved, so a new
# aiokafka fails there, loudly, before it fails anywhere else. A new private use is listed here first.


class Internal(msgspec.Struct, frozen=True):
    """One aiokafka internal relied on: ``owner`` is a module or class path, ``name`` an attribute of it.

    ``instance``: set in ``__init__`` only, so it is looked up on a fresh instance. ``parameters``: for a
    function we call, wrap or override, the names its signature must start with (after ``self``/``cls``)."""

    owner: str
    name: str
    instance: bool = False
    parameters: tuple[str, ...] | None = None


AIOKAFKA_INTERNALS: Final[tuple[Internal, ...]] = (
    # the client: its connections, bootstrap list, metadata refresh and per-node connection making
    Internal("aiokafka.client.AIOKafkaClient", "_conns", instance=True),
    Internal("aiokafka.client.AIOKafkaClient", "_bootstrap_servers", instance=True),
    Internal("aiokafka.client.AIOKafkaClient", "_sync_task", instance=True),
    Internal("aiokafka.client.AIOKafkaClient", "_topics", instance=True),
    Internal("aiokafka.client.AIOKafkaClient", "_md_synchronizer", parameters=()),
    Internal("aiokafka.client.AIOKafkaClient", "_metadata_update", parameters=("cluster_metadata", "topics")),
    Internal("aiokafka.protocol.metadata.MetadataRequest", "_topics", instance=True),
    Internal("aiokafka.conn.AIOKafkaConnection", "send", parameters=("request", "expect_response")),
    Internal("aiokafka.client.AIOKafkaClient", "_get_conn", parameters=("node_id", "group", "no_hint")),
    Internal("aiokafka.client.AIOKafkaClient", "send", parameters=("node_id", "request", "group")),
    Internal("aiokafka.client.AIOKafkaClient", "ready", parameters=("node_id", "group")),
    Internal("aiokafka.client.AIOKafkaClient", "bootstrap", parameters=()),
    Internal("aiokafka.client.ConnectionGroup", "COORDINATION"),
    # a probe's connection opened with the client's settings and handed to it (adopt_connection)
    Internal("aiokafka.client.AIOKafkaClient", "_request_timeout_ms", instance=True),
    Internal("aiokafka.client.AIOKafkaClient", "_connections_max_idle_ms", instance=True),
    Internal("aiokafka.client.AIOKafkaClient", "_on_connection_closed", parameters=("conn", "reason")),
    Internal("aiokafka.conn.AIOKafkaConnection", "_on_close_cb", instance=True),
    Internal("aiokafka.client.ConnectionGroup", "DEFAULT"),
    # create_conn, replaced process-wide in the client's module (the client calls it by that name)
    Internal("aiokafka.client", "create_conn", parameters=("host", "port")),
    Internal("aiokafka.conn", "create_conn", parameters=("host", "port")),
    # a connection: negotiated versions, per-call timeout, the reader task we replace, requests in flight
    Internal("aiokafka.conn.AIOKafkaConnection", "_versions", instance=True),
    Internal("aiokafka.conn.AIOKafkaConnection", "_request_timeout", instance=True),
    Internal("aiokafka.conn.AIOKafkaConnection", "_reader", instance=True),
    Internal("aiokafka.conn.AIOKafkaConnection", "_requests", instance=True),
    Internal("aiokafka.conn.AIOKafkaConnection", "_port", instance=True),
    Internal("aiokafka.conn.AIOKafkaConnection", "_create_reader_task", parameters=()),
    Internal("aiokafka.conn.AIOKafkaConnection", "_handle_frame", parameters=("resp",)),
    Internal("aiokafka.conn.AIOKafkaConnection", "send", parameters=("request", "expect_response")),
    Internal("aiokafka.conn.AIOKafkaConnection", "connect", parameters=()),
    Internal("aiokafka.conn.AIOKafkaConnection", "close", parameters=("reason", "exc")),
    # the OAUTHBEARER exchange, wrapped so a rejected token fails the authentication (_OAuthBearerExchange)
    Internal("aiokafka.conn.AIOKafkaConnection", "authenticator_oauth", parameters=()),
    Internal("aiokafka.conn.OAuthAuthenticator", "step", parameters=("payload",)),
    Internal("aiokafka.conn.CloseReason", "CONNECTION_BROKEN"),
    Internal("aiokafka.conn.CloseReason", "CONNECTION_TIMEOUT"),
    Internal("aiokafka.conn.CloseReason", "OUT_OF_SYNC"),
    # cluster metadata: replicas per partition
    Internal("aiokafka.cluster.ClusterMetadata", "_partitions", instance=True),
    # the consumer used as fetcher: its client, subscription, fetcher and poll limit
    Internal("aiokafka.consumer.consumer.AIOKafkaConsumer", "_client", instance=True),
    Internal("aiokafka.consumer.consumer.AIOKafkaConsumer", "_subscription", instance=True),
    Internal("aiokafka.consumer.consumer.AIOKafkaConsumer", "_fetcher", instance=True),
    Internal("aiokafka.consumer.consumer.AIOKafkaConsumer", "_max_poll_records", instance=True),
    # read (never patched) by _bounce_member's aiokafka member for its generation: that process must not
    # import staticconsumer, so it names the attribute itself; listed here to be checked all the same
    Internal("aiokafka.consumer.consumer.AIOKafkaConsumer", "_coordinator", instance=True),
    Internal(
        "aiokafka.consumer.subscription_state.SubscriptionState",
        "assign_from_user",
        parameters=("partitions",),
    ),
    Internal("aiokafka.consumer.fetcher.Fetcher", "_records", instance=True),
    Internal("aiokafka.consumer.fetcher.Fetcher", "_fetch_waiters", instance=True),
    Internal("aiokafka.consumer.fetcher.Fetcher", "_set_error", parameters=("tp", "error")),
    Internal("aiokafka.consumer.fetcher.Fetcher", "_notify", parameters=("future",)),
    Internal(
        "aiokafka.consumer.fetcher.Fetcher",
        "fetched_records",
        parameters=("partitions", "timeout", "max_records"),
    ),
)

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
"""

from __future__ import annotations

import io
from typing import Any, NamedTuple, TypeVar

from staticconsumer.errors import DecodeError, NoCommonApiVersionError
from staticconsumer.protocol import APIS_BY_KEY, ApiSpec, Message
from staticconsumer.protocol._codec import TaggedFields
from staticconsumer.protocol.headers import (
    RequestHeader,
    decode_response_header,
    encode_request_header,
)

R = TypeVar("R", bound=Message)


def spec_for(message: Message) -> ApiSpec:
    return APIS_BY_KEY[type(message).API_KEY]


def pick_version(spec: ApiSpec, broker: tuple[int, int] | None, max_version: int | None = None) -> int:
    """Highest version in both our range (optionally capped) and the broker's advertised range."""
    ours = (spec.min_version, spec.max_version if max_version is None else min(max_version, spec.max_version))
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
        self._body = message.encode(version)

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


class Exchange(NamedTuple):
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
    spec = APIS_BY_KEY[cls.API_KEY]
    return pick_version(spec, versions.get(spec.key), max_version)


# -- What the consumer driver needs from aiokafka's client (metadata, nodes) --------------------------


class PartitionReplicas(NamedTuple):
    """One partition as cluster metadata shows it: its number and the racks of its replicas."""

    partition: int
    replica_racks: frozenset[str]


def new_client(**kwargs: Any) -> Any:
    """An ``AIOKafkaClient`` for group coordination and metadata (separate from the fetcher's)."""
    from aiokafka.client import AIOKafkaClient

    return AIOKafkaClient(**kwargs)


def any_node(client: Any) -> int:
    """A broker to ask cluster-wide questions (FindCoordinator): any one aiokafka knows."""
    node: int | None = client.get_random_node()
    if node is None:
        from aiokafka.errors import NoBrokersAvailable

        raise NoBrokersAvailable("no broker known from the bootstrap servers")
    return node


async def topic_partitions(client: Any, topics: frozenset[str] | None) -> dict[str, list[PartitionReplicas]]:
    """Fresh metadata: partitions and replica racks per topic (all topics when ``topics`` is None)."""
    cluster = await client.fetch_all_metadata()
    wanted = cluster.topics() if topics is None else topics
    result: dict[str, list[PartitionReplicas]] = {}
    for topic in wanted:
        partitions = cluster.partitions_for_topic(topic)
        if not partitions:
            continue
        details = cluster._partitions.get(topic, {})
        rows = []
        for partition in sorted(partitions):
            replicas = getattr(details.get(partition), "replicas", ()) or ()
            racks = {
                broker.rack
                for broker in (cluster.broker_metadata(node) for node in replicas)
                if broker is not None and broker.rack
            }
            rows.append(PartitionReplicas(partition, frozenset(racks)))
        result[topic] = rows
    return result


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
    """Whether a send failed on the connection (refused, dropped, timed out), not on a broker verdict."""
    from aiokafka.errors import KafkaConnectionError, NodeNotReadyError, RequestTimedOutError

    return isinstance(error, KafkaConnectionError | NodeNotReadyError | RequestTimedOutError | TimeoutError)

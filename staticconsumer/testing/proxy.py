"""A loopback TCP proxy in front of a Kafka broker that injects network faults, for tests.

Kafka clients learn every broker's address from metadata, so a proxy only helps if the broker
*advertises* it: :class:`~staticconsumer.testing.cluster.EmbeddedKafkaCluster` with
``fault_proxies=True`` starts one proxy per node before the node and advertises the proxy's port on
the client listener (brokers replicate over a second, direct listener, so faults cut clients only).

Faults, each optionally limited to the connections of one ``client.id`` (read from the first request
of a connection, so a single member of a group can be cut off while the rest keep working):

* :meth:`FaultProxy.blackhole`: nothing is forwarded in either direction and new connections are
  accepted but never reach the broker; bytes are held, not dropped, like TCP over a dead link, and flow
  again on :meth:`FaultProxy.heal` (unless a side gave up and closed meanwhile);
* :meth:`FaultProxy.reset`: existing connections and every new one are closed with a TCP RST;
* :meth:`FaultProxy.latency`: each frame is delayed, per direction;
* :meth:`FaultProxy.on_response`: a hook sees every response frame with the API key and version of
  its request (matched by correlation id) and may replace it, decode and re-encode it with
  ``staticconsumer.protocol``, or answer with a :class:`StreamedFrame` that claims a huge size and then
  trickles bytes.

The proxies run on one background thread with its own event loop (:class:`ProxyLoop`), so they keep
forwarding whatever the test's own loop does; every method may be called from any other thread and
returns once the change is in effect.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import socket
import struct
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from staticconsumer.protocol import APIS_BY_KEY, Message
from staticconsumer.protocol._base import decode_response, encode_response

_T = TypeVar("_T")

MAX_FRAME_CLAIM = 0xFFFFFFFF


@dataclass(frozen=True)
class StreamedFrame:
    """A reply whose size header claims ``claimed_size`` bytes, followed by zeros at
    ``bytes_per_second`` until the client closes the connection (or ``total_bytes`` were sent).

    The default claims 2 GiB - 1 (the largest positive int32 size) and trickles 1 MiB/s: a client
    that buffers frames before checking their size holds all of it until its request times out.
    """

    claimed_size: int = 2**31 - 1
    bytes_per_second: int = 1 << 20
    chunk_bytes: int = 64 * 1024
    total_bytes: int | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.claimed_size <= MAX_FRAME_CLAIM:
            raise ValueError(f"claimed_size must fit 32 bits, got {self.claimed_size}")
        if self.bytes_per_second <= 0 or self.chunk_bytes <= 0:
            raise ValueError("bytes_per_second and chunk_bytes must be positive")


@dataclass(frozen=True)
class ResponseFrame:
    """One response on its way to the client, with what the proxy saw of its request."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    payload: bytes
    """Response header and body, without the size prefix."""

    def message_class(self) -> type[Message]:
        return APIS_BY_KEY[self.api_key].response

    def decode(self) -> Message:
        """The body, decoded with ``staticconsumer.protocol`` at the version of the request."""
        _, message = decode_response(self.message_class(), self.payload, self.api_version)
        return message

    def encode(self, message: Message) -> bytes:
        """``message`` as this frame's replacement: same correlation id and version."""
        return encode_response(message, self.api_version, self.correlation_id)


ResponseHook = Callable[[ResponseFrame], bytes | StreamedFrame | None]
"""Returns None to forward the frame as is, bytes to send instead (header and body, no size
prefix), or a :class:`StreamedFrame`."""


@dataclass(frozen=True)
class ClosedConnection:
    """What happened to one proxied connection: who ended it and how many bytes each way."""

    client_id: str | None
    ended_by: str
    """``client``, ``broker`` or ``proxy`` (a reset, a refused upstream, or the proxy closing)."""
    bytes_to_client: int
    bytes_to_broker: int


class ProxyLoop:
    """A daemon thread running the asyncio loop that serves proxies."""

    def __init__(self, name: str = "staticconsumer-fault-proxy") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def call(self, factory: Callable[[], Coroutine[Any, Any, _T]], timeout: float = 30.0) -> _T:
        """Run a coroutine on the proxy loop and wait for its result (from any other thread)."""
        if threading.current_thread() is self._thread:
            raise RuntimeError("FaultProxy methods block; do not call them from a response hook")
        return asyncio.run_coroutine_threadsafe(factory(), self.loop).result(timeout)

    def close(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        self.loop.close()


@dataclass
class _Rules:
    blackhole: set[str | None] = field(default_factory=set)
    reset: set[str | None] = field(default_factory=set)
    latency: dict[str | None, tuple[float, float]] = field(default_factory=dict)


_STOP = object()


class _Connection:
    def __init__(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        self.client_reader = client_reader
        self.client_writer = client_writer
        self.broker_reader: asyncio.StreamReader | None = None
        self.broker_writer: asyncio.StreamWriter | None = None
        self.client_id: str | None = None
        self.requests: dict[int, tuple[int, int]] = {}
        self.to_broker: asyncio.Queue[Any] = asyncio.Queue(maxsize=64)
        self.to_client: asyncio.Queue[Any] = asyncio.Queue(maxsize=64)
        self.bytes_to_client = 0
        self.bytes_to_broker = 0
        self.ended_by: str | None = None
        self.tasks: list[asyncio.Task[None]] = []
        self.done = asyncio.Event()

    def end(self, by: str, *, rst: bool = False) -> None:
        if self.ended_by is None:
            self.ended_by = by
        for writer in (self.client_writer, self.broker_writer):
            if writer is None or writer.is_closing():
                continue
            if rst:
                sock = writer.get_extra_info("socket")
                if sock is not None:
                    with contextlib.suppress(OSError):
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                writer.transport.abort()
            else:
                writer.close()
        for task in self.tasks:
            if task is not asyncio.current_task():
                task.cancel()
        self.done.set()


class FaultProxy:
    """Forwards 127.0.0.1:``port`` to ``upstream_host``:``upstream_port`` and injects faults on demand.

    Use as a context manager or call :meth:`start` / :meth:`close`. Without ``loop`` each proxy starts
    its own :class:`ProxyLoop` thread; a cluster passes one loop to all its proxies.
    """

    def __init__(
        self,
        upstream_host: str,
        upstream_port: int,
        *,
        port: int = 0,
        loop: ProxyLoop | None = None,
        name: str | None = None,
    ) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.requested_port = port
        self.port = 0
        self.name = name or f"proxy->{upstream_host}:{upstream_port}"
        self._own_loop = loop is None
        self._loop = loop
        self._server: asyncio.Server | None = None
        self._rules = _Rules()
        self._changed: asyncio.Condition | None = None
        self._hooks: list[ResponseHook] = []
        self._connections: set[_Connection] = set()
        self.closed_connections: list[ClosedConnection] = []
        self.hook_errors: list[BaseException] = []

    # -- lifecycle ---------------------------------------------------------------------------------

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> FaultProxy:
        if self._loop is None:
            self._loop = ProxyLoop(name=f"staticconsumer-{self.name}")
        self._loop.call(self._start)
        return self

    async def _start(self) -> None:
        self._changed = asyncio.Condition()
        self._server = await asyncio.start_server(
            self._serve, "127.0.0.1", self.requested_port, reuse_address=True
        )
        self.port = int(self._server.sockets[0].getsockname()[1])

    def close(self) -> None:
        """Stop listening and close every connection; stops the loop thread if this proxy owns it."""
        if self._loop is None or self._server is None:
            return
        self._loop.call(self._close)
        if self._own_loop:
            self._loop.close()

    async def _close(self) -> None:
        assert self._server is not None
        self._server.close()
        for conn in list(self._connections):
            conn.end("proxy")
        await self._server.wait_closed()

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def retarget(self, upstream_host: str, upstream_port: int) -> None:
        """Forward new connections elsewhere (existing ones keep their broker)."""
        self.upstream = (upstream_host, upstream_port)

    # -- faults ------------------------------------------------------------------------------------

    def blackhole(self, client_id: str | None = None) -> None:
        """Hold every byte both ways (all connections, or those of ``client_id``) until :meth:`heal`."""
        self._change(lambda: self._rules.blackhole.add(client_id))

    def reset(self, client_id: str | None = None) -> None:
        """RST existing connections and every new one (all, or those of ``client_id``) until :meth:`heal`."""
        self._change(lambda: self._rules.reset.add(client_id))

    def latency(
        self, *, to_broker_ms: float = 0, to_client_ms: float = 0, client_id: str | None = None
    ) -> None:
        """Delay each frame by this much in each direction (all connections, or those of ``client_id``)."""
        self._change(
            lambda: self._rules.latency.__setitem__(client_id, (to_broker_ms / 1000, to_client_ms / 1000))
        )

    def heal(self) -> None:
        """Remove every fault: held bytes flow again, new connections reach the broker."""
        self._change(lambda: setattr(self, "_rules", _Rules()))

    def on_response(self, hook: ResponseHook) -> None:
        """Call ``hook`` for every response frame from now on (hooks run in the order added)."""
        self._run(lambda: self._set_hooks([*self._hooks, hook]))

    def clear_response_hooks(self) -> None:
        self._run(lambda: self._set_hooks([]))

    async def _set_hooks(self, hooks: list[ResponseHook]) -> None:
        self._hooks = hooks

    def _change(self, edit: Callable[[], object]) -> None:
        async def apply() -> None:
            edit()
            for conn in list(self._connections):
                if self._matches(self._rules.reset, conn):
                    conn.end("proxy", rst=True)
            assert self._changed is not None
            async with self._changed:
                self._changed.notify_all()

        self._run(lambda: apply())

    def _run(self, factory: Callable[[], Coroutine[Any, Any, _T]]) -> _T:
        if self._loop is None:
            raise RuntimeError(f"{self.name} is not started")
        return self._loop.call(factory)

    # -- what tests read ---------------------------------------------------------------------------

    def client_ids(self) -> set[str | None]:
        """Client ids of the connections open now."""
        return {conn.client_id for conn in list(self._connections)}

    @property
    def open_connections(self) -> int:
        return len(self._connections)

    # -- forwarding --------------------------------------------------------------------------------

    @staticmethod
    def _matches(selectors: set[str | None] | dict[str | None, Any], conn: _Connection) -> bool:
        return None in selectors or (conn.client_id is not None and conn.client_id in selectors)

    def _delay(self, conn: _Connection, to_broker: bool) -> float:
        delays = [d for key, d in self._rules.latency.items() if key is None or key == conn.client_id]
        if not delays:
            return 0.0
        return max(d[0] if to_broker else d[1] for d in delays)

    async def _until_open(self, conn: _Connection) -> None:
        """Wait while a blackhole covers this connection."""
        assert self._changed is not None
        async with self._changed:
            await self._changed.wait_for(lambda: not self._matches(self._rules.blackhole, conn))

    async def _serve(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        conn = _Connection(client_reader, client_writer)
        self._connections.add(conn)
        try:
            await self._relay(conn)
        finally:
            self._connections.discard(conn)
            if conn.ended_by is None:
                conn.end("proxy")
            self.closed_connections.append(
                ClosedConnection(
                    conn.client_id, conn.ended_by or "proxy", conn.bytes_to_client, conn.bytes_to_broker
                )
            )

    async def _relay(self, conn: _Connection) -> None:
        if self._matches(self._rules.reset, conn):
            conn.end("proxy", rst=True)
            return
        try:
            first = await _read_frame(conn.client_reader)
        except (asyncio.IncompleteReadError, ConnectionError):
            conn.end("client")
            return
        self._note_request(conn, first)
        if self._matches(self._rules.reset, conn):
            conn.end("proxy", rst=True)
            return
        await self._until_open(conn)
        try:
            conn.broker_reader, conn.broker_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            conn.end("proxy", rst=True)  # the broker is down: the client sees the connection reset
            return
        await conn.to_broker.put((time.monotonic() + self._delay(conn, True), first))
        loop = asyncio.get_running_loop()
        conn.tasks = [
            loop.create_task(self._read_requests(conn)),
            loop.create_task(self._write(conn, to_broker=True)),
            loop.create_task(self._read_responses(conn)),
            loop.create_task(self._write(conn, to_broker=False)),
        ]
        await conn.done.wait()

    def _note_request(self, conn: _Connection, frame: bytes) -> None:
        """Remember api key and version by correlation id, and the connection's client id."""
        if len(frame) < 8:
            return
        api_key, api_version, correlation_id = struct.unpack_from(">hhi", frame, 0)
        conn.requests[correlation_id] = (api_key, api_version)
        if len(frame) >= 10:
            (length,) = struct.unpack_from(">h", frame, 8)
            if conn.client_id is None and 0 <= length <= len(frame) - 10:
                conn.client_id = frame[10 : 10 + length].decode("utf-8", "replace")

    async def _read_requests(self, conn: _Connection) -> None:
        try:
            while True:
                frame = await _read_frame(conn.client_reader)
                self._note_request(conn, frame)
                if self._matches(self._rules.reset, conn):
                    conn.end("proxy", rst=True)
                    return
                await conn.to_broker.put((time.monotonic() + self._delay(conn, True), frame))
        except (asyncio.IncompleteReadError, ConnectionError):
            conn.end("client")

    async def _read_responses(self, conn: _Connection) -> None:
        assert conn.broker_reader is not None
        try:
            while True:
                frame = await _read_frame(conn.broker_reader)
                item: bytes | StreamedFrame = self._apply_hooks(conn, frame)
                await conn.to_client.put((time.monotonic() + self._delay(conn, False), item))
        except (asyncio.IncompleteReadError, ConnectionError):
            conn.end("broker")

    def _apply_hooks(self, conn: _Connection, frame: bytes) -> bytes | StreamedFrame:
        if len(frame) < 4:
            return frame
        (correlation_id,) = struct.unpack_from(">i", frame, 0)
        request = conn.requests.pop(correlation_id, None)
        if request is None or not self._hooks:
            return frame
        view = ResponseFrame(request[0], request[1], correlation_id, conn.client_id, frame)
        for hook in self._hooks:
            try:
                replacement = hook(view)
            except Exception as error:  # a broken hook must not look like a broken client
                self.hook_errors.append(error)
                continue
            if replacement is not None:
                return replacement
        return frame

    async def _write(self, conn: _Connection, *, to_broker: bool) -> None:
        queue = conn.to_broker if to_broker else conn.to_client
        writer = conn.broker_writer if to_broker else conn.client_writer
        assert writer is not None
        try:
            while True:
                due, item = await queue.get()
                wait = due - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                await self._until_open(conn)
                if isinstance(item, StreamedFrame):
                    await self._stream(conn, writer, item)
                    return
                writer.write(struct.pack(">i", len(item)) + item)
                await writer.drain()
                if to_broker:
                    conn.bytes_to_broker += len(item) + 4
                else:
                    conn.bytes_to_client += len(item) + 4
        except (ConnectionError, OSError):
            conn.end("broker" if to_broker else "client")

    async def _stream(self, conn: _Connection, writer: asyncio.StreamWriter, frame: StreamedFrame) -> None:
        writer.write(struct.pack(">I", frame.claimed_size))
        conn.bytes_to_client += 4
        zeros = bytes(frame.chunk_bytes)
        sent = 0
        started = time.monotonic()
        while frame.total_bytes is None or sent < frame.total_bytes:
            if writer.is_closing() or conn.client_reader.at_eof():
                conn.end("client")
                return
            writer.write(zeros)
            await writer.drain()
            sent += len(zeros)
            conn.bytes_to_client += len(zeros)
            ahead = sent / frame.bytes_per_second - (time.monotonic() - started)
            await asyncio.sleep(max(ahead, 0.001))


async def _read_frame(reader: asyncio.StreamReader) -> bytes:
    header = await reader.readexactly(4)
    (size,) = struct.unpack(">i", header)
    if size < 0:
        raise ConnectionError(f"negative frame size {size}")
    return await reader.readexactly(size)


def wait_for(predicate: Callable[[], object], within: float, what: str) -> None:
    """Poll ``predicate`` (sync) until true; AssertionError naming ``what`` after ``within`` seconds."""
    deadline = time.monotonic() + within
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {within}s: {what}")
        time.sleep(0.05)


async def wait_for_async(
    predicate: Callable[[], object | Awaitable[object]], within: float, what: str
) -> None:
    """The same from a coroutine, without blocking its loop."""
    deadline = time.monotonic() + within
    while True:
        result = predicate()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {within}s: {what}")
        await asyncio.sleep(0.05)

"""A scripted in-process peer that speaks Kafka framing, for the fault proxy's and the reader's tests.

It answers aiokafka's ApiVersions v0 handshake, decodes requests with our codec and answers with our
encoder, or with whatever ``respond`` returns; it is not a broker and no integration test uses it.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Callable
from dataclasses import dataclass, field

from staticconsumer import protocol as p
from staticconsumer.protocol import APIS_BY_KEY, Message

Responder = Callable[[Message, int], Message]

RANGES = {10: (0, 4), 11: (0, 9), 12: (0, 4), 18: (0, 3)}


def answer(message: Message, version: int) -> Message:
    """Plausible answers: FindCoordinator names node 1, JoinGroup elects the caller with "range"."""
    if isinstance(message, p.FindCoordinatorRequest):
        return p.FindCoordinatorResponse(node_id=1, host="127.0.0.1", port=1)
    if isinstance(message, p.JoinGroupRequest):
        return p.JoinGroupResponse(
            generation_id=1,
            protocol_type="consumer",
            protocol_name="range",
            leader="m-1",
            member_id="m-1",
            members=[p.JoinGroupResponseMember("m-1", message.group_instance_id, b"meta")],
        )
    if isinstance(message, p.HeartbeatRequest):
        return p.HeartbeatResponse()
    raise AssertionError(f"no scripted answer for {type(message).__name__}")


@dataclass
class ScriptedBroker:
    respond: Responder = answer
    received: list[tuple[str | None, Message]] = field(default_factory=list)
    connections: int = 0
    server: asyncio.Server | None = None

    @property
    def port(self) -> int:
        assert self.server is not None
        return int(self.server.sockets[0].getsockname()[1])

    async def start(self) -> ScriptedBroker:
        self.server = await asyncio.start_server(self.handle, "127.0.0.1", 0)
        return self

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                frame = await reader.readexactly(size)
                api_key, version, correlation_id = struct.unpack_from(">hhi", frame)
                if api_key == 18:  # ApiVersions v0: error code, then (key, min, max) triples
                    body = struct.pack(">ihi", correlation_id, 0, len(RANGES)) + b"".join(
                        struct.pack(">hhh", key, low, high) for key, (low, high) in RANGES.items()
                    )
                    writer.write(p.frame(body))
                    continue
                spec = APIS_BY_KEY[api_key]
                header, offset = p.decode_request_header(frame, version >= spec.flexible_from)
                message = spec.request.decode(frame, version, offset)
                self.received.append((header.client_id, message))
                writer.write(
                    p.frame(p.encode_response(self.respond(message, version), version, correlation_id))
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


class RawClient:
    """Writes request frames and reads response frames, with nothing in between."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client_id: str) -> None:
        self.reader = reader
        self.writer = writer
        self.client_id = client_id
        self.correlation_id = 0

    @classmethod
    async def connect(cls, port: int, client_id: str = "raw-client") -> RawClient:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return cls(reader, writer, client_id)

    async def send(self, message: Message, version: int) -> int:
        self.correlation_id += 1
        self.writer.write(p.frame(p.encode_request(message, version, self.correlation_id, self.client_id)))
        await self.writer.drain()
        return self.correlation_id

    async def receive(self, response: type[Message], version: int, within: float = 5.0) -> Message:
        (size,) = struct.unpack(">i", await asyncio.wait_for(self.reader.readexactly(4), within))
        frame = await asyncio.wait_for(self.reader.readexactly(size), within)
        _, message = p.decode_response(response, frame, version)
        return message

    def close(self) -> None:
        self.writer.close()

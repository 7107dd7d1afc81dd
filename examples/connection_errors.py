"""What a consumer or the admin says when it cannot connect: typed errors, each with its cause.

Run:  python examples/connection_errors.py   (no broker needed: a closed port and a silent server)
"""

from __future__ import annotations

import asyncio
import socket
import time

from aiokafka import AIOKafkaClient

from staticconsumer.connection import bootstrap
from staticconsumer.errors import BrokerConnectionError
from staticconsumer.settings import Settings


async def try_to_connect(servers: str) -> None:
    settings = Settings.from_env({}, bootstrap_servers=servers, group_id="orders", request_timeout_ms=2000)
    client = AIOKafkaClient(**settings.aiokafka_client_kwargs())
    started = time.monotonic()
    try:
        await bootstrap(client, settings)
    except BrokerConnectionError as error:
        print(f"{type(error).__name__} after {time.monotonic() - started:.1f} s:\n{error}\n")
    finally:
        await client.close()


async def main() -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        closed_port = closed.getsockname()[1]  # released again: nothing listens there
    await try_to_connect(f"127.0.0.1:{closed_port}")

    async def never_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # takes the connection, never sends a byte

    server = await asyncio.start_server(never_answer, "127.0.0.1", 0)
    async with server:
        silent = f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
        await try_to_connect(f"{silent},127.0.0.1:{closed_port}")


if __name__ == "__main__":
    asyncio.run(main())

"""Where event log records go: rotating JSON-lines files and a Kafka topic.

Both take encoded lines and must never hold up the membership loop. The file sink writes one short
line per membership step (page cache, no fsync), so a killed process loses nothing already written. The
Kafka sink only puts the line in a bounded queue; a background task produces it. A record that cannot be
kept (queue full, producer error, disk error) is counted in ``dropped``, never silently lost: the
observer reports the count in ``dropped`` records and through ``EventLog.dropped``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from pathlib import Path
from typing import Any, Protocol

log = logging.getLogger("staticconsumer.eventlog")


class Sink(Protocol):
    """A destination for encoded records."""

    name: str

    @property
    def dropped(self) -> int: ...

    def write(self, line: bytes, key: bytes) -> None: ...

    async def aclose(self) -> None: ...


class RotatingFileSink:
    """Appends lines to ``path``; past ``max_bytes`` it shifts ``path`` to ``path.1`` (``.1`` newest).

    Like logging's RotatingFileHandler, but for bytes and without its lock: one process owns the file
    (give each process its own path, e.g. with ``{session}``). Spark reads the rotated files too when
    pointed at the directory.
    """

    def __init__(self, path: str | os.PathLike[str], max_bytes: int, backups: int) -> None:
        self.path = Path(path)
        self.name = f"file:{self.path}"
        self.max_bytes = max_bytes
        self.backups = backups
        self._dropped = 0
        self._file: Any = None
        self._size = 0
        self._complained = False

    @property
    def dropped(self) -> int:
        return self._dropped

    def _open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "ab")  # noqa: SIM115 (kept open across writes, closed in aclose)
        self._size = self._file.tell()

    def _rotate(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        for index in range(self.backups - 1, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{index}")
            if older.exists():
                os.replace(older, self.path.with_name(f"{self.path.name}.{index + 1}"))
        if self.path.exists():
            os.replace(self.path, self.path.with_name(f"{self.path.name}.1"))

    def write(self, line: bytes, key: bytes) -> None:
        try:
            if self._file is None:
                self._open()
            if self._size and self._size + len(line) > self.max_bytes:
                self._rotate()
                self._open()
            self._file.write(line)
            self._file.flush()
            self._size += len(line)
        except OSError as error:
            self._dropped += 1
            if not self._complained:
                self._complained = True
                log.warning(
                    "event log file %s is not writable (%s); counting dropped records", self.path, error
                )

    async def aclose(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None


class KafkaSink:
    """Produces lines to ``topic`` from a bounded queue, keyed by group so a group's records keep order.

    ``write`` never waits: when ``capacity`` lines are already queued the new one is dropped and
    counted. The producer runs in a task on the caller's event loop, started by the first write; a
    broker that is slow or away therefore fills the queue and costs drops, not consumer latency.
    """

    def __init__(
        self,
        topic: str,
        producer_kwargs: dict[str, Any],
        capacity: int,
        close_timeout: float = 10.0,
    ) -> None:
        self.topic = topic
        self.name = f"kafka:{topic}"
        self.capacity = capacity
        self.close_timeout = close_timeout
        self._producer_kwargs = producer_kwargs
        self._queue: asyncio.Queue[tuple[bytes, bytes]] | None = None
        self._task: asyncio.Task[None] | None = None
        self._dropped = 0
        self._sent = 0
        self._closing = False

    @property
    def dropped(self) -> int:
        return self._dropped

    @property
    def sent(self) -> int:
        """Records the broker acknowledged."""
        return self._sent

    @property
    def queued(self) -> int:
        return 0 if self._queue is None else self._queue.qsize()

    def write(self, line: bytes, key: bytes) -> None:
        if self._closing:
            self._dropped += 1
            return
        if self._queue is None:
            self._queue = asyncio.Queue(maxsize=self.capacity)
            self._task = asyncio.get_running_loop().create_task(self._run(), name=f"eventlog-{self.topic}")
        try:
            self._queue.put_nowait((key, line.rstrip(b"\n")))
        except asyncio.QueueFull:
            self._dropped += 1

    def _delivered(self, future: asyncio.Future[Any]) -> None:
        if future.cancelled() or future.exception() is not None:
            self._dropped += 1
        else:
            self._sent += 1

    async def _run(self) -> None:
        from aiokafka import AIOKafkaProducer

        assert self._queue is not None
        producer = AIOKafkaProducer(**self._producer_kwargs, acks=1, linger_ms=50)
        backoff = 0.5
        while True:
            try:
                await producer.start()
                break
            except Exception as error:
                log.warning("event log producer cannot start (%s); retrying in %.1fs", error, backoff)
                with contextlib.suppress(Exception):
                    await producer.stop()
                producer = AIOKafkaProducer(**self._producer_kwargs, acks=1, linger_ms=50)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 10.0)
        try:
            while True:
                key, value = await self._queue.get()
                try:
                    delivery = await producer.send(self.topic, value, key=key)
                    delivery.add_done_callback(self._delivered)
                except Exception as error:
                    self._dropped += 1
                    log.debug("event log record not sent: %s", error)
                finally:
                    self._queue.task_done()
        finally:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(producer.stop(), self.close_timeout)

    async def aclose(self) -> None:
        """Send what is queued (within ``close_timeout`` seconds), then stop; the rest counts as dropped."""
        self._closing = True
        if self._queue is None or self._task is None:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._queue.join(), self.close_timeout)
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task
        left = self._queue.qsize()
        if left:
            self._dropped += left
            log.warning("event log: %d records to %s not sent before close", left, self.topic)

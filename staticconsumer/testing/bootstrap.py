"""``KafkaBootstrap``: the brokers a demo or a script runs on, given or embedded.

Scripts that run "on your brokers, or on a throwaway one" all need the same few lines: use the bootstrap
servers given (``--bootstrap-server``), else start an embedded KRaft broker and stop it at the end, and
create the topics they use. This is those lines, once, for ``with`` and ``async with``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from types import TracebackType

from staticconsumer.testing.broker import BrokerSettings, EmbeddedKafka
from staticconsumer.testing.launcher import run_coroutine_blocking
from staticconsumer.testing.topics import create_topics

__all__ = ["KafkaBootstrap"]


class KafkaBootstrap:
    """Yields bootstrap servers: ``bootstrap_servers`` when given, else those of an ``EmbeddedKafka``
    started on entry and stopped on exit. ``topics`` (name to partition count) are created either way;
    one that exists already is kept as it is if it has at least that many partitions (a run again on
    the same brokers), else entry fails after 30 s naming the partitions it has. ``version`` and
    ``settings`` are the embedded broker's, and ignored for given brokers.

    ``async with`` starts and stops the broker on a worker thread, so the event loop keeps running.
    """

    def __init__(
        self,
        bootstrap_servers: str | None = None,
        *,
        topics: Mapping[str, int] | None = None,
        version: str | None = None,
        settings: BrokerSettings | None = None,
    ) -> None:
        if bootstrap_servers is not None and not bootstrap_servers.strip():
            raise ValueError("bootstrap_servers is empty: give host:port, or None for an embedded broker")
        self.given = bootstrap_servers.strip() if bootstrap_servers is not None else None
        self.topics = dict(topics or {})
        self.embedded: EmbeddedKafka | None = (
            None if self.given is not None else EmbeddedKafka(version, settings)
        )
        """The embedded broker (None when brokers were given); running between entry and exit."""

    @property
    def bootstrap_servers(self) -> str:
        if self.embedded is not None:
            return self.embedded.bootstrap_servers
        assert self.given is not None
        return self.given

    def __enter__(self) -> str:
        if self.embedded is not None:
            self.embedded.start()
        try:
            if self.topics:
                run_coroutine_blocking(lambda: self._create_topics())
        except BaseException:
            self._stop()
            raise
        return self.bootstrap_servers

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop()

    async def __aenter__(self) -> str:
        if self.embedded is not None:
            await asyncio.to_thread(self.embedded.start)
        try:
            if self.topics:
                await self._create_topics()
        except BaseException:
            await asyncio.to_thread(self._stop)
            raise
        return self.bootstrap_servers

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await asyncio.to_thread(self._stop)

    async def _create_topics(self) -> None:
        kwargs = self.embedded.client_kwargs() if self.embedded is not None else None
        await create_topics(self.bootstrap_servers, self.topics, client_kwargs=kwargs)

    def _stop(self) -> None:
        if self.embedded is not None:
            self.embedded.stop()

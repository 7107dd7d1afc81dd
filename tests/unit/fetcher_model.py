"""A fetcher that behaves like aiokafka's (positions move when records are returned; ``assign`` forgets
them; ``seek`` sets them) and a StaticConsumer wired to it without a broker: shared by the unit tests of
the application side (cooperative fetches, getmany's ready records)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from aiokafka import ConsumerRecord
from aiokafka.structs import TopicPartition as KafkaTopicPartition

from staticconsumer.consumer import StaticConsumer
from staticconsumer.membership import MemberState, TopicPartition
from staticconsumer.runtime import MemberSnapshot


def record(tp: TopicPartition, offset: int) -> ConsumerRecord[Any, Any]:
    return ConsumerRecord(tp.topic, tp.partition, offset, 0, 0, None, b"v", None, 1, 0, [])


class MetadataClient:
    """aiokafka's client as the fetcher's metadata sees it: the topics it keeps metadata for."""

    def __init__(self) -> None:
        self._topics: set[str] = set()

    def set_topics(self, topics: set[str]) -> None:
        self._topics = set(topics)


class AiokafkaLikeFetcher:
    """Every partition holds offsets 0..999. Position: the next offset ``getmany`` returns."""

    def __init__(self) -> None:
        self._client = MetadataClient()
        self._positions: dict[KafkaTopicPartition, int | None] = {}
        self.paused: set[KafkaTopicPartition] = set()
        self.during_fetch: Callable[[], None] | None = None
        self.batch = 5

    def assignment(self) -> set[KafkaTopicPartition]:
        return set(self._positions)

    @property
    def _subscription(self) -> Any:
        """aiokafka's SubscriptionState: staticconsumer assigns through its ``assign_from_user``."""
        return self

    def assign_from_user(self, partitions: list[KafkaTopicPartition]) -> None:
        self.assign(partitions)

    def assign(self, partitions: list[KafkaTopicPartition]) -> None:
        self._positions = dict.fromkeys(partitions)  # aiokafka forgets positions on assign
        self.paused = set()

    def seek(self, tp: KafkaTopicPartition, offset: int) -> None:
        self._positions[tp] = offset

    async def position(self, tp: KafkaTopicPartition) -> int:
        if self._positions[tp] is None:
            await asyncio.sleep(0)  # the reset policy (earliest) takes a round trip
            self._positions[tp] = 0
        position = self._positions[tp]
        assert position is not None
        return position

    def pause(self, *tps: KafkaTopicPartition) -> None:
        self.paused.update(tps)

    def resume(self, *tps: KafkaTopicPartition) -> None:
        self.paused.difference_update(tps)

    async def getmany(
        self, *tps: KafkaTopicPartition, timeout_ms: int = 0, max_records: int | None = None
    ) -> dict[KafkaTopicPartition, list[ConsumerRecord[Any, Any]]]:
        await asyncio.sleep(0)
        hook, self.during_fetch = self.during_fetch, None
        out = {}
        for tp in tps:
            if tp in self.paused or tp not in self._positions:
                continue
            start = self._positions[tp] or 0
            out[tp] = [
                record(TopicPartition(tp.topic, tp.partition), o) for o in range(start, start + self.batch)
            ]
            self._positions[tp] = start + self.batch  # returned to the caller: the position moves on
        if hook is not None:
            hook()  # the membership thread's calls land while this fetch was out
        return out


class Membership:
    def poll_called(self) -> None:
        pass


def consumer_with(fetcher: AiokafkaLikeFetcher) -> StaticConsumer:
    consumer = StaticConsumer("t", bootstrap_servers="127.0.0.1:1", group_id="g", group_instance_id="pod-0")
    consumer._fetcher = fetcher  # type: ignore[assignment]
    consumer._partitions.fetcher = fetcher  # type: ignore[assignment]
    consumer._membership = Membership()  # type: ignore[assignment]
    return consumer


def stable(consumer: StaticConsumer, generation: int, owned: frozenset[TopicPartition]) -> None:
    consumer._partitions.membership_changed(
        MemberSnapshot(state=MemberState.STABLE, generation=generation, assignment=owned)
    )

"""A started consumer dropped without stop() is collected, warns ``ResourceWarning: Unclosed ...`` as
aiokafka's AIOKafkaConsumer does, and what it left running (membership thread, fetcher, background tasks)
ends instead of leaking; a stopped one warns nothing."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import threading
import time
import warnings
import weakref
from collections.abc import Iterator
from typing import Any

import pytest

from staticconsumer import StaticConsumer
from staticconsumer.sync import StaticConsumer as SyncStaticConsumer
from staticconsumer.testing import EmbeddedKafka, ExternalKafka

from .support import FAST, committed_offsets, consume, produce

pytestmark = pytest.mark.kafka


def _membership_threads(group: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == f"staticconsumer-membership-{group}"]


@contextlib.contextmanager
def _resource_warnings() -> Iterator[list[warnings.WarningMessage]]:
    """The ResourceWarnings raised in the block (the last reference dropped, then gc.collect()).

    Garbage left by earlier tests (an unclosed socket, say) is collected first, with its warnings
    ignored, so only what the block drops can warn here."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gc.collect()
    unclosed: list[warnings.WarningMessage] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield unclosed
        gc.collect()
    unclosed.extend(w for w in caught if issubclass(w.category, ResourceWarning))


async def _until(condition: Any, within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {within} s: {what}")
        await asyncio.sleep(0.05)


async def _until_tasks_end(tasks_before: set[asyncio.Task[Any]], within: float = 15) -> None:
    """Every task started since ``tasks_before`` ends (the dropped consumer's fetcher and monitor closing
    on the loop); a failure names those left."""
    deadline = time.monotonic() + within
    while left := asyncio.all_tasks() - tasks_before:
        if time.monotonic() > deadline:
            names = sorted(repr(task.get_coro()) for task in left)
            raise AssertionError(f"not within {within} s, tasks left: {names}")
        await asyncio.sleep(0.05)


async def test_a_started_consumer_dropped_without_stop_warns_and_ends_its_membership(
    kafka_broker: EmbeddedKafka | ExternalKafka, create_topic: Any, unique_group: str
) -> None:
    topic = create_topic(partitions=2)
    tasks_before = asyncio.all_tasks()
    consumer = StaticConsumer(
        topic,
        bootstrap_servers=kafka_broker.bootstrap_servers,
        group_id=unique_group,
        group_instance_id="dropped-0",
        **FAST,
    )
    await consumer.start()
    assert consumer.assignment()
    assert len(_membership_threads(unique_group)) == 1
    await produce(kafka_broker.bootstrap_servers, topic, 4)
    assert len(await consume(consumer, 4)) == 4
    loop = asyncio.get_running_loop()
    heard: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _, context: heard.append(context))
    ref = weakref.ref(consumer)
    try:
        with _resource_warnings() as unclosed:
            del consumer
        await _until(lambda: heard, 5, "the loop's exception handler heard of it")
    finally:
        loop.set_exception_handler(None)

    assert [str(w.message).split(" ")[:2] for w in unclosed] == [["Unclosed", "StaticConsumer"]]
    assert type(unclosed[0].source).__name__ == "StaticConsumer"
    assert [context["message"] for context in heard] == ["Unclosed StaticConsumer"], "as aiokafka tells it"
    del unclosed
    gc.collect()
    assert ref() is None, "collected once the warning is gone"
    await _until(lambda: not _membership_threads(unique_group), 5, "the membership thread ended")
    committed = await committed_offsets(kafka_broker.bootstrap_servers, unique_group)
    assert sum(committed.values()) == 4, "auto-commit on revoke committed what was consumed, as stop() does"
    await _until_tasks_end(tasks_before)
    # Its instance id is free again in this process: a replacement may start.
    async with StaticConsumer(
        topic,
        bootstrap_servers=kafka_broker.bootstrap_servers,
        group_id=unique_group,
        group_instance_id="dropped-0",
        **FAST,
    ) as replacement:
        assert replacement.assignment()


async def test_a_stopped_consumer_is_collected_without_a_warning(
    kafka_broker: EmbeddedKafka | ExternalKafka, create_topic: Any, unique_group: str
) -> None:
    topic = create_topic(partitions=1)
    consumer = StaticConsumer(
        topic,
        bootstrap_servers=kafka_broker.bootstrap_servers,
        group_id=unique_group,
        group_instance_id="stopped-0",
        **FAST,
    )
    await consumer.start()
    await consumer.stop()
    ref = weakref.ref(consumer)
    with _resource_warnings() as unclosed:
        del consumer

    assert unclosed == []
    assert ref() is None


async def test_a_consumer_never_started_is_collected_without_a_warning() -> None:
    consumer = StaticConsumer("orders", bootstrap_servers="127.0.0.1:1", group_id="g", group_instance_id="i")
    ref = weakref.ref(consumer)
    with _resource_warnings() as unclosed:
        del consumer

    assert unclosed == []
    assert ref() is None


async def test_a_groupless_consumer_dropped_without_stop_warns_and_closes(
    kafka_broker: EmbeddedKafka | ExternalKafka, create_topic: Any
) -> None:
    topic = create_topic(partitions=1)
    tasks_before = asyncio.all_tasks()
    consumer = StaticConsumer(topic, bootstrap_servers=kafka_broker.bootstrap_servers, group_id=None)
    await consumer.start()
    ref = weakref.ref(consumer)
    with _resource_warnings() as unclosed:
        del consumer

    assert [str(w.message).split(" ")[:2] for w in unclosed] == [["Unclosed", "GrouplessConsumer"]]
    del unclosed
    gc.collect()
    assert ref() is None
    await _until_tasks_end(tasks_before)


def _sync_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("staticconsumer-sync")]


class _Revokes:
    """A kafka-python style listener: the sync consumer's own wrapper of it must not keep it alive."""

    def __init__(self) -> None:
        self.revoked: list[frozenset[Any]] = []

    def on_partitions_assigned(self, assigned: frozenset[Any]) -> None:
        pass

    def on_partitions_revoked(self, revoked: frozenset[Any]) -> None:
        self.revoked.append(revoked)


def test_a_sync_consumer_dropped_without_close_warns_once_and_ends_its_threads(
    kafka_broker: EmbeddedKafka | ExternalKafka, create_topic: Any, unique_group: str
) -> None:
    topic = create_topic(partitions=2)
    threads_before = set(_sync_threads())
    listener = _Revokes()
    consumer = SyncStaticConsumer(
        topic,
        bootstrap_servers=kafka_broker.bootstrap_servers,
        group_id=unique_group,
        group_instance_id="sync-dropped-0",
        listener=listener,
        **FAST,
    )
    assert consumer.assignment()
    ref = weakref.ref(consumer)
    with _resource_warnings() as unclosed:
        del consumer

    assert [str(w.message).split(" ")[:2] for w in unclosed] == [["Unclosed", "StaticConsumer"]]
    assert type(unclosed[0].source).__module__ == "staticconsumer.sync"
    del unclosed
    gc.collect()
    assert ref() is None
    deadline = time.monotonic() + 10
    while _membership_threads(unique_group) or set(_sync_threads()) - threads_before:
        assert time.monotonic() < deadline, "the membership thread and the loop's thread ended"
        time.sleep(0.05)
    assert listener.revoked, "its partitions were revoked, as close() revokes them"


def test_a_closed_sync_consumer_is_collected_without_a_warning(
    kafka_broker: EmbeddedKafka | ExternalKafka, create_topic: Any, unique_group: str
) -> None:
    consumer = SyncStaticConsumer(
        create_topic(partitions=1),
        bootstrap_servers=kafka_broker.bootstrap_servers,
        group_id=unique_group,
        group_instance_id="sync-closed-0",
        **FAST,
    )
    consumer.close()
    ref = weakref.ref(consumer)
    with _resource_warnings() as unclosed:
        del consumer

    assert unclosed == []
    assert ref() is None

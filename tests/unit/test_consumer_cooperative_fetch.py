"""The application side through cooperative rebalances, against a fetcher that behaves like aiokafka's
(positions move when records are returned; ``assign`` forgets them; ``seek`` sets them).

Each test would catch a skipped or re-read record: a partition kept through a rebalance must deliver every
offset exactly once and in order, even when a fetch returns across the generation change; a revoked one
must never commit past what the application saw.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiokafka import ConsumerRecord
from aiokafka.structs import TopicPartition as KafkaTopicPartition

from staticconsumer.consumer import StaticConsumer
from staticconsumer.membership import ReleaseReason, TopicPartition
from tests.unit.fetcher_model import AiokafkaLikeFetcher, consumer_with, stable

T0, T1, T2 = (TopicPartition("t", p) for p in range(3))


async def delivered(consumer: StaticConsumer, into: dict[TopicPartition, list[int]]) -> None:
    batch = await consumer.getmany(timeout_ms=50)
    for tp, rows in batch.items():
        into.setdefault(tp, []).extend(r.offset for r in rows)


async def test_records_fetched_across_a_cooperative_generation_change_are_delivered_not_skipped() -> None:
    fetcher = AiokafkaLikeFetcher()
    consumer = consumer_with(fetcher)
    partitions = consumer._partitions
    await partitions.assign(frozenset({T0, T1}), frozenset({T0, T1}), 1, {T0: 0, T1: 0})
    stable(consumer, 1, frozenset({T0, T1}))
    seen: dict[TopicPartition, list[int]] = {}
    await delivered(consumer, seen)

    # The second round of a cooperative rebalance lands while a fetch is out: generation 2, T0 and T1
    # kept, T2 added. The fetch's records of T0/T1 are past the fetcher's position already.
    fetcher.during_fetch = lambda: stable(consumer, 2, frozenset({T0, T1}))
    await delivered(consumer, seen)
    await partitions.assign(frozenset({T2}), frozenset({T0, T1, T2}), 2, {T2: 0})
    for _ in range(3):
        await delivered(consumer, seen)

    for tp in (T0, T1):
        assert seen[tp] == list(range(len(seen[tp]))), f"{tp}: every offset once, in order"
        assert len(seen[tp]) == 25
    assert seen[T2] == list(range(len(seen[T2])))
    assert consumer._partitions.positions()[T0].offset == 25


async def test_a_partial_revoke_keeps_the_others_positions_and_pauses() -> None:
    fetcher = AiokafkaLikeFetcher()
    consumer = consumer_with(fetcher)
    partitions = consumer._partitions
    await partitions.assign(frozenset({T0, T1, T2}), frozenset({T0, T1, T2}), 1, {T0: 0, T1: 100, T2: 0})
    stable(consumer, 1, frozenset({T0, T1, T2}))
    consumer.pause(T2)
    seen: dict[TopicPartition, list[int]] = {}
    await delivered(consumer, seen)
    assert set(seen) == {T0, T1}, "T2 is paused"

    # Round one: T1 moves away. Stop fetching it at once; the others go on while its revoke runs.
    partitions.stop_fetching(frozenset({T1}))
    await delivered(consumer, seen)
    assert seen[T1] == list(range(100, 105)), "nothing of T1 after it stopped"
    positions = await partitions.revoke(frozenset({T1}), ReleaseReason.REBALANCE, collect_positions=True)
    assert positions[T1].offset == 105, "exactly what the application saw is committed"
    assert consumer.assignment() == {T0, T2}
    assert T2 in {TopicPartition(tp.topic, tp.partition) for tp in fetcher.paused}, "T2 stays paused"

    await delivered(consumer, seen)
    await delivered(consumer, seen)
    assert seen[T0] == list(range(20)), "T0 continued from where it was, no re-read after the reassign"
    assert T2 not in seen
    consumer.resume(T2)
    await delivered(consumer, seen)
    assert seen[T2] == list(range(5))


async def test_records_of_a_partition_revoked_while_the_fetch_was_out_are_dropped_and_not_committed() -> None:
    fetcher = AiokafkaLikeFetcher()
    consumer = consumer_with(fetcher)
    partitions = consumer._partitions
    await partitions.assign(frozenset({T0, T1}), frozenset({T0, T1}), 1, {T0: 0, T1: 0})
    stable(consumer, 1, frozenset({T0, T1}))
    seen: dict[TopicPartition, list[int]] = {}
    await delivered(consumer, seen)
    fetcher.during_fetch = lambda: partitions.stop_fetching(frozenset({T1}))
    await delivered(consumer, seen)
    positions = await partitions.revoke(frozenset({T1}), ReleaseReason.REBALANCE, collect_positions=True)
    assert seen[T1] == list(range(5)), "the fetch that raced the revoke delivered nothing of T1"
    assert positions[T1].offset == 5, "the next owner starts right after what this one processed"
    assert seen[T0] == list(range(10))


async def test_the_per_record_path_keeps_buffered_records_of_kept_partitions_and_drops_revoked_ones() -> None:
    """getone/async for hand records from the local buffer (``take_one``): a cooperative rebalance must
    not drop what is buffered for a partition kept, nor hand out what was buffered for one revoked."""
    fetcher = AiokafkaLikeFetcher()
    consumer = consumer_with(fetcher)
    partitions = consumer._partitions
    await partitions.assign(frozenset({T0, T1}), frozenset({T0, T1}), 1, {T0: 0, T1: 0})
    stable(consumer, 1, frozenset({T0, T1}))
    seen: dict[TopicPartition, list[int]] = {}

    async def one() -> None:
        r = await consumer.getone()
        seen.setdefault(TopicPartition(r.topic, r.partition), []).append(r.offset)

    await one()  # one fetch buffered 5 records of each partition; one of them handed over
    # Round one of a cooperative rebalance: T1 moves away while records of both are buffered.
    partitions.stop_fetching(frozenset({T1}))
    t1_seen = list(seen.get(T1, []))
    for _ in range(6):  # the application goes on while T1's revoke callback is pending
        await one()
    revoked = await partitions.revoke(frozenset({T1}), ReleaseReason.REBALANCE, collect_positions=True)
    assert revoked.get(T1, None) is None or revoked[T1].offset == (t1_seen[-1] + 1 if t1_seen else 0)
    # Round two: generation 2, T0 kept, T2 added.
    stable(consumer, 2, frozenset({T0}))
    await partitions.assign(frozenset({T2}), frozenset({T0, T2}), 2, {T2: 0})
    for _ in range(30):
        await one()
    assert seen.get(T1, []) == t1_seen, "nothing of T1 after it stopped"
    assert seen[T0] == list(range(len(seen[T0]))), "T0: every offset once, in order, through the rebalance"
    assert seen[T2] == list(range(len(seen[T2])))
    assert len(seen[T0]) + len(seen[T2]) + len(t1_seen) == 37, "every getone returned one record"


class WaitingFetcher(AiokafkaLikeFetcher):
    """A fetch that waits its whole timeout (no records arrive), counting the fetches begun."""

    def __init__(self) -> None:
        super().__init__()
        self.fetches = 0

    async def getmany(
        self, *tps: KafkaTopicPartition, timeout_ms: int = 0, max_records: int | None = None
    ) -> dict[KafkaTopicPartition, list[ConsumerRecord[Any, Any]]]:
        self.fetches += 1
        await asyncio.sleep(timeout_ms / 1000)
        return {}


async def test_an_ownership_change_interrupts_a_waiting_fetch_and_a_cancel_from_elsewhere_still_cancels() -> (
    None
):
    fetcher = WaitingFetcher()
    consumer = consumer_with(fetcher)
    await consumer._partitions.assign(frozenset({T0}), frozenset({T0}), 1, {T0: 0})
    stable(consumer, 1, frozenset({T0}))
    polling = asyncio.ensure_future(consumer.getmany(timeout_ms=5000))
    await asyncio.sleep(0.05)
    assert fetcher.fetches == 1
    asyncio.get_running_loop().call_soon(consumer._changed.set)  # as the membership's calls land
    await asyncio.sleep(0.05)
    assert fetcher.fetches == 2, "the change ended the first fetch's wait; the poll fetched afresh"
    assert not polling.done(), "...and kept waiting out its own timeout, not cancelled"
    assert polling.cancelling() == 0, "the change's cancellation was taken back"
    polling.cancel()
    await asyncio.gather(polling, return_exceptions=True)
    assert polling.cancelled(), "a cancellation from elsewhere is not taken for a change"

"""getmany's path for records the fetcher has already fetched (``_aiokafka.fetched_now``), and ``take``'s
skip of the buffers while none holds a record (issue 26: getmany's cost per poll).

The fetcher here keeps aiokafka's contract for ``Fetcher.fetched_records``: it holds fetched records per
partition, returns (and moves past) those of the partitions asked for, ``partitions and tp not in
partitions`` deciding, and keeps the others for a later call. Every test would catch a record skipped
(taken from the fetcher but not delivered) or delivered for a partition this member no longer fetches.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from aiokafka import ConsumerRecord
from aiokafka.structs import TopicPartition as KafkaTopicPartition

from staticconsumer.membership import TopicPartition
from tests.unit.fetcher_model import AiokafkaLikeFetcher, consumer_with, record, stable

T0, T1, T2 = (TopicPartition("t", p) for p in range(3))
Rows = list[ConsumerRecord[Any, Any]]


class ReadyRecords:
    """aiokafka's ``Fetcher`` as ``fetched_now`` drives it: records already fetched, per partition."""

    def __init__(self) -> None:
        self._records: dict[KafkaTopicPartition, Rows] = {}
        self.asked: list[Collection[Any]] = []

    def hold(self, tp: TopicPartition, offsets: range) -> None:
        self._records[KafkaTopicPartition(tp.topic, tp.partition)] = [record(tp, o) for o in offsets]

    async def fetched_records(
        self,
        partitions: Collection[Any],
        timeout: float = 0,  # noqa: ASYNC109 (aiokafka's signature)
        max_records: int | None = None,
    ) -> dict[KafkaTopicPartition, Rows]:
        self.asked.append(partitions)
        budget = max_records if max_records is not None else 1 << 30
        drained: dict[KafkaTopicPartition, Rows] = {}
        for tp in list(self._records):
            if partitions and tp not in partitions:
                continue
            rows = self._records[tp]
            drained[tp], rest = rows[:budget], rows[budget:]
            if rest:
                self._records[tp] = rest
            else:
                del self._records[tp]
            budget -= len(drained[tp])
            if budget == 0:
                break
        return drained

    def left(self, tp: TopicPartition) -> list[int]:
        return [r.offset for r in self._records.get(KafkaTopicPartition(tp.topic, tp.partition), [])]


class FetcherWithReadyRecords(AiokafkaLikeFetcher):
    def __init__(self) -> None:
        super().__init__()
        self._fetcher = ReadyRecords()
        self._max_poll_records = 500


async def started(owned: frozenset[TopicPartition]) -> tuple[Any, FetcherWithReadyRecords]:
    fetcher = FetcherWithReadyRecords()
    consumer = consumer_with(fetcher)
    await consumer._partitions.assign(owned, owned, 1, dict.fromkeys(owned, 0))
    stable(consumer, 1, owned)
    return consumer, fetcher


def offsets(batch: dict[TopicPartition, Rows]) -> dict[TopicPartition, list[int]]:
    return {tp: [r.offset for r in rows] for tp, rows in batch.items()}


async def test_ready_records_are_asked_for_the_owned_partitions_and_keyed_by_ours() -> None:
    consumer, fetcher = await started(frozenset({T0, T1}))
    fetcher._fetcher.hold(T0, range(3))
    fetcher._fetcher.hold(T1, range(2))
    batch = await consumer.getmany(timeout_ms=0)
    assert offsets(batch) == {T0: [0, 1, 2], T1: [0, 1]}
    assert all(type(tp) is TopicPartition for tp in batch), "keys are staticconsumer's TopicPartition"
    asked = fetcher._fetcher.asked[0]
    assert set(asked) == {T0, T1}
    assert KafkaTopicPartition("t", 0) in asked, "aiokafka's partitions match ours"
    assert consumer._partitions.positions()[T0].offset == 3, "the commit position follows what was returned"


async def test_a_partition_filter_takes_nothing_of_the_other_partitions_from_the_fetcher() -> None:
    consumer, fetcher = await started(frozenset({T0, T1}))
    fetcher._fetcher.hold(T0, range(3))
    fetcher._fetcher.hold(T1, range(4))
    assert offsets(await consumer.getmany(T1, timeout_ms=0)) == {T1: [0, 1, 2, 3]}
    assert fetcher._fetcher.left(T0) == [0, 1, 2], "T0's records stay with the fetcher: none skipped"
    assert offsets(await consumer.getmany(timeout_ms=0)) == {T0: [0, 1, 2]}


async def test_max_records_is_kept_across_partitions_and_the_rest_comes_next() -> None:
    consumer, fetcher = await started(frozenset({T0, T1}))
    fetcher._fetcher.hold(T0, range(3))
    fetcher._fetcher.hold(T1, range(3))
    first = offsets(await consumer.getmany(timeout_ms=0, max_records=4))
    second = offsets(await consumer.getmany(timeout_ms=0, max_records=4))
    assert first == {T0: [0, 1, 2], T1: [0]}
    assert second == {T1: [1, 2]}


async def test_records_of_a_partition_no_longer_fetched_are_never_returned() -> None:
    consumer, fetcher = await started(frozenset({T0, T1}))
    consumer._partitions.stop_fetching(frozenset({T1}))  # a revoke began: T1 is not asked for any more
    fetcher._fetcher.hold(T0, range(2))
    fetcher._fetcher.hold(T1, range(2))
    assert offsets(await consumer.getmany(timeout_ms=0)) == {T0: [0, 1]}
    assert T1 not in fetcher._fetcher.asked[-1]
    # Even were the fetcher to hand them over, records of a partition not fetched are dropped.
    stray = {KafkaTopicPartition("t", 1): [record(T1, 0)], KafkaTopicPartition("t", 0): [record(T0, 2)]}
    assert offsets(consumer._partitions.still_fetching(stray)) == {T0: [2]}


async def test_take_finds_records_buffered_after_it_found_none_and_keeps_paused_or_over_budget_ones() -> None:
    consumer, _ = await started(frozenset({T0, T1, T2}))
    partitions = consumer._partitions
    assert partitions.take(frozenset(), None) == {}, "nothing buffered"
    partitions.buffer({T2: [record(T2, o) for o in range(3)]})
    assert offsets(partitions.take(frozenset(), 2)) == {T2: [0, 1]}
    assert offsets(partitions.take(frozenset(), 2)) == {T2: [2]}, "the rest of a batch cut by max_records"
    partitions.buffer({T0: [record(T0, 0)], T1: [record(T1, 0)]})
    # Which of the two comes first follows the assignment's order (a set's: it varies with the hash seed).
    first, second = offsets(partitions.take(frozenset(), 1)), offsets(partitions.take(frozenset(), 1))
    assert [len(first), len(second)] == [1, 1], "one record a take, one partition each"
    assert first | second == {T0: [0], T1: [0]}, "the partition max_records left out came next"
    partitions.buffer({T0: [record(T0, o) for o in range(3)], T1: [record(T1, o) for o in range(2)]})
    partitions.pause((T1,))
    assert offsets(partitions.take(frozenset(), 2)) == {T0: [0, 1]}
    assert offsets(partitions.take(frozenset(), None)) == {T0: [2]}, "the rest of T0, T1 is paused"
    assert partitions.take(frozenset(), None) == {}
    partitions.resume((T1,))
    assert offsets(partitions.take(frozenset(), None)) == {T1: [0, 1]}, "T1's records were kept while paused"
    partitions.buffer({T2: [record(T2, 0)]})
    assert offsets(partitions.take(frozenset({T0}), None)) == {}, "another partition's records"
    assert offsets(partitions.take(frozenset(), None)) == {T2: [0]}


async def test_take_finds_what_a_segment_handed_out_record_by_record_left_behind() -> None:
    consumer, _ = await started(frozenset({T0}))
    partitions = consumer._partitions
    partitions.buffer({T0: [record(T0, o) for o in range(4)]})
    assert offsets(partitions.take(frozenset(), None)) == {T0: [0, 1, 2, 3]}
    partitions.buffer({T0: [record(T0, o) for o in range(4, 8)]})
    partitions.tick(0.0, float("inf"))
    handed = [partitions.take_one(), partitions.take_one()]  # a segment out of T0's buffer
    assert [r.offset for r in handed if r is not None] == [4, 5]
    assert offsets(partitions.take(frozenset(), None)) == {T0: [6, 7]}, "the segment's rest, folded back"

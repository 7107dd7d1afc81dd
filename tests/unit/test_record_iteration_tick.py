"""``async for``/``getone`` hand buffered records over without the per-poll work (liveness, auto-commit)
during a tick of POLL_TICK seconds; the per-record path reads a flag, not the clock (issue 26). The tick
must still end on time: by a timer when the loop body awaits, at the next segment when it never does."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from aiokafka import ConsumerRecord
from aiokafka.structs import TopicPartition as KafkaTopicPartition

from staticconsumer._partitions import ApplicationPartitions
from staticconsumer.consumer import POLL_TICK, StaticConsumer
from staticconsumer.membership import MemberState, TopicPartition
from staticconsumer.runtime import MemberSnapshot

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


class Fetcher:
    """Each partition holds offsets 0..; every fetch returns the next ``batch`` of each one."""

    def __init__(self, batch: int) -> None:
        self.batch = batch
        self._positions: dict[KafkaTopicPartition, int] = {}
        self.paused: set[KafkaTopicPartition] = set()
        self._topics: set[str] = set()

    @property
    def _subscription(self) -> Any:
        return self

    @property
    def _client(self) -> Any:
        return self

    def set_topics(self, topics: set[str]) -> None:
        self._topics = set(topics)

    def assignment(self) -> set[KafkaTopicPartition]:
        return set(self._positions)

    def assign_from_user(self, partitions: list[KafkaTopicPartition]) -> None:
        self._positions = dict.fromkeys(partitions, 0)

    def seek(self, tp: KafkaTopicPartition, offset: int) -> None:
        self._positions[tp] = offset

    async def position(self, tp: KafkaTopicPartition) -> int:
        return self._positions[tp]

    def pause(self, *tps: KafkaTopicPartition) -> None:
        self.paused.update(tps)

    def resume(self, *tps: KafkaTopicPartition) -> None:
        self.paused.difference_update(tps)

    async def getmany(
        self, *tps: KafkaTopicPartition, timeout_ms: int = 0, max_records: int | None = None
    ) -> dict[KafkaTopicPartition, list[ConsumerRecord[Any, Any]]]:
        await asyncio.sleep(0)
        out = {}
        for tp in tps:
            if tp not in self.paused and tp in self._positions:
                start = self._positions[tp]
                out[tp] = [
                    ConsumerRecord(tp.topic, tp.partition, o, 0, 0, None, b"v", None, 1, 0, [])
                    for o in range(start, start + self.batch)
                ]
                self._positions[tp] = start + self.batch
        return out


class Membership:
    def __init__(self) -> None:
        self.polls = 0

    def poll_called(self) -> None:
        self.polls += 1


async def running(partitions: frozenset[TopicPartition], batch: int) -> tuple[StaticConsumer, Membership]:
    consumer = StaticConsumer("t", bootstrap_servers="127.0.0.1:1", group_id="g", group_instance_id="p")
    fetcher, membership = Fetcher(batch), Membership()
    consumer._fetcher = fetcher
    consumer._partitions.fetcher = fetcher
    consumer._membership = membership  # type: ignore[assignment]
    await consumer._partitions.assign(partitions, partitions, 1, dict.fromkeys(partitions, 0))
    consumer._partitions.membership_changed(
        MemberSnapshot(state=MemberState.STABLE, generation=1, assignment=partitions)
    )
    return consumer, membership


async def test_a_tick_ends_on_its_timer_while_the_loop_body_awaits() -> None:
    consumer, membership = await running(frozenset({T0}), batch=20)
    polls_at: list[int] = []
    offsets: list[int] = []
    async for record in consumer:
        offsets.append(record.offset)
        polls_at.append(membership.polls)
        if record.offset in (3, 6):
            await asyncio.sleep(POLL_TICK * 3)  # the tick ends meanwhile: the next record polls first
        if record.offset == 9:
            break
    assert offsets == list(range(10)), "every record once, in order"
    assert polls_at[1:4] == [polls_at[0]] * 3, "within the tick, buffered records need no poll"
    assert polls_at[4] == polls_at[3] + 1, "the record after the tick's end came after the per-poll work"
    assert polls_at[5:7] == [polls_at[4]] * 2
    assert polls_at[7] == polls_at[6] + 1, "a later tick in the same segment ends on its timer too"
    assert polls_at[8:] == [polls_at[7]] * 2


async def test_a_body_that_never_awaits_gets_the_per_poll_work_at_the_next_segment() -> None:
    """No timer runs while the body never yields to the loop: the segment boundary reads the clock."""
    for blocking in (False, True):
        consumer, membership = await running(frozenset({T0, T1}), batch=5)
        polls_at: dict[tuple[int, int], int] = {}
        async for record in consumer:
            polls_at[(record.partition, record.offset)] = membership.polls
            if blocking and len(polls_at) == 1:
                busy_until = time.monotonic() + POLL_TICK * 3  # CPU work: the tick passes, no timer runs
                while time.monotonic() < busy_until:
                    pass
            if len(polls_at) == 10:
                break
        first = next(iter(polls_at))
        rest_of_segment = [k for k in polls_at if k[0] == first[0]]
        other = next(k for k in polls_at if k[0] != first[0])
        assert len(rest_of_segment) == 5, "one fetch buffered 5 records of each partition"
        assert {polls_at[k] for k in rest_of_segment} == {polls_at[first]}, "mid-segment: no clock read"
        if blocking:
            assert polls_at[other] == polls_at[first] + 1, "the next segment began with the per-poll work"
        else:
            assert polls_at[other] == polls_at[first], "the tick still on: no poll between segments"


async def handing_out(partitions: ApplicationPartitions, seconds: float) -> None:
    """A tick, and a segment of T0 started in it (what arms the tick's timer)."""
    if not partitions.holds(T0):
        await partitions.assign(frozenset({T0}), frozenset({T0}), 1, {T0: 0})
    rows = [ConsumerRecord("t", 0, o, 0, 0, None, b"v", None, 1, 0, []) for o in range(5)]
    partitions.buffer({T0: rows})
    partitions.tick(time.monotonic(), seconds)
    assert partitions.take_one() is not None


async def test_a_tick_without_a_segment_arms_no_timer() -> None:
    """getmany does the per-poll work too: an idle getmany user's loop is not woken by tick timers."""
    partitions = ApplicationPartitions(None, lambda: None)
    partitions.tick(time.monotonic(), POLL_TICK)
    assert partitions._tick_timer is None
    await handing_out(partitions, POLL_TICK)
    assert partitions._tick_timer is not None


async def test_stop_ends_the_tick_and_its_timer() -> None:
    partitions = ApplicationPartitions(None, lambda: None)
    await handing_out(partitions, 60.0)
    assert partitions.handing_over
    partitions.end_tick()
    assert not partitions.handing_over
    assert partitions._tick_timer is None
    assert partitions.take_one() is None, "nothing handed over once stopped"


def test_a_tick_on_another_event_loop_gets_a_timer_there() -> None:
    """A consumer used from a second loop (the first one gone with its pending timer) still ends ticks."""
    partitions = ApplicationPartitions(None, lambda: None)

    async def tick_and_wait(wait: float) -> bool:
        await handing_out(partitions, POLL_TICK)
        await asyncio.sleep(wait)
        return partitions.handing_over

    assert asyncio.run(tick_and_wait(0)), "the first loop ends before its tick does"
    assert not asyncio.run(tick_and_wait(POLL_TICK * 5)), "the second loop's timer ended the tick"


async def test_a_tick_extended_before_its_end_stays_on_until_the_later_end() -> None:
    partitions = ApplicationPartitions(None, lambda: None)
    await handing_out(partitions, POLL_TICK)
    await asyncio.sleep(POLL_TICK / 2)
    partitions.tick(time.monotonic(), POLL_TICK * 4)  # extended: the first timer re-arms, not ends it
    await asyncio.sleep(POLL_TICK * 1.5)
    assert partitions.handing_over
    await asyncio.sleep(POLL_TICK * 5)
    assert not partitions.handing_over

"""Committed offsets are read once a generation is joined, beside SyncGroup, so the assigned callback
(and the first fetch) waits for no OffsetFetch after SyncGroup; only what that read could not answer is
read after it, and a read of another generation is never used."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import pytest
from runtime_loops import loop_for

from staticconsumer._aiokafka import PartitionReplicas
from staticconsumer.membership import RebalanceProtocol, RequestToken, TopicPartition, actions
from staticconsumer.runtime import loop as loop_module
from staticconsumer.runtime.loop import MembershipLoop


class Coordinator:
    """Answers OffsetFetch from ``offsets`` (-1 for a partition never committed) and records each read."""

    def __init__(self, offsets: dict[TopicPartition, int]) -> None:
        self.offsets = offsets
        self.reads: list[tuple[frozenset[TopicPartition], bool]] = []
        self.fail_read_ahead = False

    async def fetch(
        self, partitions: frozenset[TopicPartition], *, once: bool = False
    ) -> Mapping[TopicPartition, int]:
        self.reads.append((partitions, once))
        if once and self.fail_read_ahead:
            raise ConnectionError("coordinator connection lost")
        return {tp: self.offsets.get(tp, -1) for tp in partitions}


def tp(partition: int) -> TopicPartition:
    return TopicPartition("t", partition)


async def joined_loop(partitions: int, coordinator: Coordinator) -> MembershipLoop:
    """A loop subscribed to ``t``, whose last metadata read found ``partitions`` partitions of it."""
    loop = loop_for(RebalanceProtocol.EAGER)

    async def read(topics: frozenset[str]) -> dict[str, list[PartitionReplicas]]:
        return {"t": [PartitionReplicas(p, frozenset()) for p in range(partitions)]}

    loop._metadata._read = read
    await loop._metadata.fresh(frozenset({"t"}))
    loop._fetch_committed = coordinator.fetch  # type: ignore[method-assign]
    return loop


def assigned(generation: int, *partitions: int) -> actions.PartitionsAssigned:
    new = frozenset(tp(p) for p in partitions)
    return actions.PartitionsAssigned(callback_id=1, partitions=new, generation=generation, owned=new)


async def prefetched_then_assigned(
    loop: MembershipLoop, joined: int, assignment: actions.PartitionsAssigned
) -> Mapping[TopicPartition, int]:
    async with asyncio.TaskGroup() as group:
        loop._task_group = group
        loop._prefetch_committed(joined)
        loop._prefetch_committed(joined)  # asked again in the same generation: still one read
        return await loop._committed_of(assignment)


async def test_the_assignment_takes_the_offsets_read_when_the_generation_was_joined() -> None:
    coordinator = Coordinator({tp(1): 40, tp(3): 70})
    loop = await joined_loop(4, coordinator)
    committed = await prefetched_then_assigned(loop, 5, assigned(5, 1, 2, 3))
    assert committed == {tp(1): 40, tp(2): -1, tp(3): 70}
    assert coordinator.reads == [(frozenset(tp(p) for p in range(4)), True)]  # nothing after SyncGroup


async def test_partitions_the_metadata_did_not_know_are_read_after_sync_group() -> None:
    coordinator = Coordinator({tp(5): 9})
    loop = await joined_loop(4, coordinator)  # the topic grew to 6 partitions after the last read
    committed = await prefetched_then_assigned(loop, 5, assigned(5, 0, 5))
    assert committed == {tp(0): -1, tp(5): 9}
    assert coordinator.reads[1:] == [(frozenset({tp(5)}), False)]


async def test_a_read_from_another_generation_is_not_used() -> None:
    coordinator = Coordinator({tp(0): 3})
    loop = await joined_loop(2, coordinator)
    committed = await prefetched_then_assigned(loop, 5, assigned(6, 0))
    assert committed == {tp(0): 3}
    assert (frozenset({tp(0)}), False) in coordinator.reads  # read for generation 6 itself
    assert len(coordinator.reads) == 2


async def test_a_failed_read_ahead_is_read_again_with_retries_once_assigned() -> None:
    coordinator = Coordinator({tp(0): 3})
    coordinator.fail_read_ahead = True
    loop = await joined_loop(2, coordinator)
    committed = await prefetched_then_assigned(loop, 5, assigned(5, 0, 1))
    assert committed == {tp(0): 3, tp(1): -1}
    assert coordinator.reads[1:] == [(frozenset({tp(0), tp(1)}), False)]


async def test_no_read_ahead_without_metadata_or_above_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    coordinator = Coordinator({})
    loop = loop_for(RebalanceProtocol.EAGER)  # no metadata read yet
    loop._fetch_committed = coordinator.fetch  # type: ignore[method-assign]
    await prefetched_then_assigned(loop, 5, assigned(5, 0))
    assert coordinator.reads == [(frozenset({tp(0)}), False)]

    monkeypatch.setattr(loop_module, "PREFETCH_MAX_PARTITIONS", 3)
    coordinator = Coordinator({})
    loop = await joined_loop(4, coordinator)
    await prefetched_then_assigned(loop, 5, assigned(5, 0))
    assert coordinator.reads == [(frozenset({tp(0)}), False)]


async def test_rejoining_reads_the_own_topics_once_and_not_beside_the_leaders_read_of_them() -> None:
    loop = loop_for(RebalanceProtocol.EAGER)
    reads: list[frozenset[str]] = []

    async def read(topics: frozenset[str]) -> dict[str, list[PartitionReplicas]]:
        reads.append(topics)
        return {t: [PartitionReplicas(0, frozenset())] for t in topics}

    loop._metadata._read = read
    async with asyncio.TaskGroup() as group:
        loop._task_group = group
        loop.duties.led = frozenset({"t", "u"})  # the last generation's leader: its read covers "t"
        loop._rejoining()
    assert reads == [frozenset({"t", "u"})]

    loop = loop_for(RebalanceProtocol.EAGER)
    reads.clear()
    loop._metadata._read = read
    async with asyncio.TaskGroup() as group:
        loop._task_group = group
        loop._rejoining()  # a follower that never read its topics
    async with asyncio.TaskGroup() as group:
        loop._task_group = group
        loop._rejoining()  # known now: not read again
    assert reads == [frozenset({"t"})]


async def test_the_bootstrap_probes_metadata_spares_the_first_joins_read_and_feeds_the_prefetch() -> None:
    """The probe named the subscribed topics at start: the first join neither reads them again nor
    prefetches less; a topic the probe found missing counts as read (nothing to prefetch there)."""
    reads: list[frozenset[str]] = []

    async def read(topics: frozenset[str]) -> dict[str, list[PartitionReplicas]]:
        reads.append(topics)
        return {t: [PartitionReplicas(0, frozenset())] for t in topics}

    probed = {"t": [PartitionReplicas(p, frozenset()) for p in range(3)]}
    loop = loop_for(RebalanceProtocol.EAGER, known_metadata=(frozenset({"t", "gone"}), probed))
    loop._metadata._read = read
    coordinator = Coordinator({tp(1): 42})
    loop._fetch_committed = coordinator.fetch  # type: ignore[method-assign]
    async with asyncio.TaskGroup() as group:
        loop._task_group = group
        loop._rejoining()
    assert reads == []
    assert await prefetched_then_assigned(loop, 5, assigned(5, 1)) == {tp(1): 42}
    assert coordinator.reads == [(frozenset({tp(0), tp(1), tp(2)}), True)]
    # a leader still assigns from a read begun after the rebalance did, never from the probe's
    assert await loop._metadata.read_since(loop.now(), frozenset({"t"})) == {
        "t": [PartitionReplicas(0, frozenset())]
    }
    assert reads == [frozenset({"t"})]


async def test_a_fleet_members_subscription_is_not_read_ahead() -> None:
    """A topic of 600 partitions (300 members' worth): the read ahead would decode every partition's
    offset before the assigned callback, ~1 ms of the membership thread per restart; only the
    assignment's are read. A small subscription still is read ahead."""
    coordinator = Coordinator({tp(0): 7})
    loop = await joined_loop(600, coordinator)
    committed = await prefetched_then_assigned(loop, 5, assigned(5, 0, 1))
    assert committed == {tp(0): 7, tp(1): -1}
    assert coordinator.reads == [(frozenset({tp(0), tp(1)}), False)]

    coordinator = Coordinator({tp(0): 7})
    loop = await joined_loop(loop_module.PREFETCH_MAX_PARTITIONS, coordinator)
    await prefetched_then_assigned(loop, 5, assigned(5, 0, 1))
    assert coordinator.reads[0] == (
        frozenset(tp(p) for p in range(loop_module.PREFETCH_MAX_PARTITIONS)),
        True,
    )
    assert len(coordinator.reads) == 1


async def test_the_leader_reads_ahead_only_once_its_sync_group_is_out() -> None:
    """The coordinator serves one connection's requests in order: an OffsetFetch sent when the leader is
    told to assign would hold up its SyncGroup, which every member's SyncGroup answer waits for."""
    coordinator = Coordinator({tp(0): 3})
    loop = await joined_loop(4, coordinator)
    order: list[str] = []

    async def assign(a: actions.RunAssignor) -> None:
        order.append("assign")

    async def request(action: object, spec: object, unsent: object = None) -> None:
        order.append(type(action).__name__)

    loop._assign = assign  # type: ignore[method-assign]
    loop._request = request  # type: ignore[method-assign]
    token = RequestToken(request_id=7, generation=5, member_id="m")
    async with asyncio.TaskGroup() as group:
        loop._task_group = group
        loop._dispatch(
            actions.RunAssignor(
                generation=5, protocol_name="range", members=(), group_topics=frozenset({"t"})
            )
        )
        for _ in range(3):
            await asyncio.sleep(0)
        assert coordinator.reads == [], "nothing read while the leader assigns"
        loop._dispatch(
            actions.SendSyncGroup(
                token=token,
                generation=5,
                member_id="m",
                group_instance_id="pod-0",
                protocol_type="consumer",
                protocol_name="range",
                assignments=(),
            )
        )
    assert order == ["assign", "SendSyncGroup"]
    assert coordinator.reads == [(frozenset(tp(p) for p in range(4)), True)]


def _sync_group(generation: int, *assignments: actions.SyncAssignment) -> actions.SendSyncGroup:
    return actions.SendSyncGroup(
        token=RequestToken(request_id=8, generation=generation, member_id="m"),
        generation=generation,
        member_id="m",
        group_instance_id=None,
        protocol_type="consumer",
        protocol_name="range",
        assignments=assignments,
    )


async def _sent_in_order(
    loop: MembershipLoop, coordinator: Coordinator, sync: actions.SendSyncGroup
) -> list[str]:
    order: list[str] = []

    async def request(action: object, spec: object, unsent: object = None) -> None:
        order.append(type(action).__name__)

    async def fetch(
        partitions: frozenset[TopicPartition], *, once: bool = False
    ) -> Mapping[TopicPartition, int]:
        order.append("OffsetFetch")
        return await coordinator.fetch(partitions, once=once)

    loop._request = request  # type: ignore[method-assign]
    loop._fetch_committed = fetch  # type: ignore[method-assign]
    async with asyncio.TaskGroup() as group:
        loop._task_group = group
        loop._dispatch(sync)
    loop._task_group = None
    return order


async def test_a_follower_reads_ahead_just_before_its_sync_group() -> None:
    """Answered while its SyncGroup waits for the leader's, so the SyncGroup answer, which comes after it
    on the same connection, finds the assignment's offsets known and hands it over in the same turn."""
    coordinator = Coordinator({tp(0): 3})
    loop = await joined_loop(4, coordinator)
    assert await _sent_in_order(loop, coordinator, _sync_group(6)) == ["OffsetFetch", "SendSyncGroup"]
    assert coordinator.reads == [(frozenset(tp(p) for p in range(4)), True)], "read once"


async def test_the_leaders_read_ahead_goes_behind_its_sync_group() -> None:
    coordinator = Coordinator({tp(0): 3})
    loop = await joined_loop(4, coordinator)
    plan = actions.SyncAssignment(member_id="m", assignment=b"")
    assert await _sent_in_order(loop, coordinator, _sync_group(6, plan)) == ["SendSyncGroup", "OffsetFetch"]
    assert coordinator.reads == [(frozenset(tp(p) for p in range(4)), True)], "read once"

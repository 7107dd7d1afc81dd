"""What reading a whole subscription's committed offsets ahead costs against reading the assignment's
after SyncGroup, by subscription size: the measurement behind ``PREFETCH_MAX_PARTITIONS`` (issue 27).

A joined member either sends OffsetFetch for every partition of its subscription right behind its
SyncGroup (the read ahead: the coordinator answers it right after SyncGroup, on the same connection), or
waits for the SyncGroup answer and then reads its assignment's partitions (one round trip more). On one
embedded broker, over one coordinator connection, a stand-in for SyncGroup (FindCoordinator: answered at
once) is timed from its write to the committed offsets being decoded:

* ``after``: the stand-in answered, then OffsetFetch of 2 partitions (a fleet member's assignment)
  written, answered and decoded;
* ``ahead K``: the stand-in and OffsetFetch of K partitions written back to back, both answered and
  the K offsets decoded (our codec, as ``runtime.offsets`` reads them).

Every partition has a committed offset (a fleet that commits: the largest answer). Sizes interleave
within each repeat, so the machine's load moves them alike. The stand-in costs the broker less than a
SyncGroup, so the read ahead's request encoding is less hidden here than in a join: the figures are
slightly against the read ahead. Printed: each figure's median and quartiles, and in how many repeats
the read ahead was the quicker, with the load average.

    .venv/bin/python -m benchmarks.prefetch_bound [--repeats 300] [--sizes 256 384 512 600 800]

A diagnostic, not a page benchmark.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time

from staticconsumer import _aiokafka
from staticconsumer.membership import TopicPartition
from staticconsumer.protocol import FindCoordinatorRequest, OffsetFetchResponse
from staticconsumer.runtime.offsets import offset_fetch_request
from staticconsumer.testing import EmbeddedKafka

TOPIC = "prefetch-bound"
GROUP = "prefetch-bound"
WARMUP = 5
"""Repeats left out of the figures (connection and JIT warm-up on both sides)."""


async def _commit_all(bootstrap: str, partitions: int) -> None:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.structs import OffsetAndMetadata
    from aiokafka.structs import TopicPartition as KafkaPartition

    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=GROUP, enable_auto_commit=False)
    await consumer.start()
    try:
        consumer.assign([KafkaPartition(TOPIC, p) for p in range(partitions)])
        await consumer.commit({KafkaPartition(TOPIC, p): OffsetAndMetadata(5, "") for p in range(partitions)})
    finally:
        await consumer.stop()


def _quartiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    n = len(ordered)
    return (
        f"median {statistics.median(ordered):.3f} ms "
        f"[p25 {ordered[n // 4]:.3f}, p75 {ordered[3 * n // 4]:.3f}]"
    )


async def measure(bootstrap: str, sizes: list[int], repeats: int) -> None:
    host, _, port = bootstrap.rpartition(":")
    conn = await _aiokafka.open_connection(host, int(port), request_timeout_ms=10_000)
    of = {n: frozenset(TopicPartition(TOPIC, p) for p in range(n)) for n in [2, *sizes]}

    async def stand_in() -> None:
        await _aiokafka.send_on_connection(conn, FindCoordinatorRequest(key=GROUP), max_version=3)

    async def offsets(n: int) -> int:
        exchange = await _aiokafka.send_on_connection(
            conn, offset_fetch_request(GROUP, of[n], 7), max_version=7
        )
        answer = exchange.response_as(OffsetFetchResponse)
        read = {
            TopicPartition(t.name, p.partition_index): p.committed_offset
            for t in answer.topics
            for p in t.partitions
        }
        return len(read)

    after: list[float] = []
    ahead: dict[int, list[float]] = {n: [] for n in sizes}
    try:
        for repeat in range(repeats + WARMUP):
            began = time.perf_counter()
            await stand_in()
            assert await offsets(2) == 2
            if repeat >= WARMUP:
                after.append((time.perf_counter() - began) * 1000)
            for n in sizes:
                began = time.perf_counter()
                both = await asyncio.gather(stand_in(), offsets(n))
                assert both[1] == n
                if repeat >= WARMUP:
                    ahead[n].append((time.perf_counter() - began) * 1000)
    finally:
        conn.close()
    print(f"{repeats} repeats, load average {[round(x, 1) for x in os.getloadavg()]}")
    print(f"after (2 partitions)   {_quartiles(after)}")
    for n in sizes:
        quicker = sum(a < b for a, b in zip(ahead[n], after, strict=True))
        print(f"ahead {n:5d} partitions {_quartiles(ahead[n])}, quicker in {quicker}/{repeats}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=300)
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 384, 512, 600, 800])
    args = parser.parse_args()
    print(f"load average at the start {[round(x, 1) for x in os.getloadavg()]}")
    with EmbeddedKafka() as kafka:
        kafka.create_topic(TOPIC, max(args.sizes))
        asyncio.run(_commit_all(kafka.bootstrap_servers, max(args.sizes)))
        asyncio.run(measure(kafka.bootstrap_servers, sorted(args.sizes), args.repeats))


if __name__ == "__main__":
    main()

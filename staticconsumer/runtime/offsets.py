"""Committed offsets of newly assigned partitions, fetched from the coordinator before fetching starts.

OffsetFetch with RequireStable (v7), so a pending transactional commit is waited for rather than read
around. Retriable answers and lost connections are retried with the SDK's one backoff policy for as long
as the partitions are still being assigned (the caller cancels when they are not); a coordinator that
moved is reported to the machine, which rediscovers it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping

from staticconsumer import _aiokafka
from staticconsumer.errors import ErrorCode, StaticConsumerError
from staticconsumer.membership import Backoff, TopicPartition
from staticconsumer.protocol import OffsetFetchRequest, OffsetFetchRequestTopic, OffsetFetchResponse

log = logging.getLogger("staticconsumer.runtime")

OFFSET_FETCH_MAX_VERSION = 7
"""v7 carries RequireStable with the single-group layout; v8+ only batches groups, which we do not need."""

_RETRIABLE = frozenset({ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.UNSTABLE_OFFSET_COMMIT})
_COORDINATOR_MOVED = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE})

NO_OFFSET = -1
"""What OffsetFetch answers for a partition the group never committed."""


class _Retry(Exception):
    pass


def offset_fetch_request(
    group_id: str, partitions: frozenset[TopicPartition], version: int
) -> OffsetFetchRequest:
    by_topic: dict[str, list[int]] = {}
    for tp in sorted(partitions):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return OffsetFetchRequest(
        group_id=group_id,
        topics=[OffsetFetchRequestTopic(name=t, partition_indexes=ps) for t, ps in by_topic.items()],
        require_stable=version >= 7,
    )


async def fetch_committed(
    client: object,
    group_id: str,
    partitions: frozenset[TopicPartition],
    *,
    coordinator: Callable[[], int | None],
    coordinator_moved: Callable[[], None],
    backoff: Backoff,
    request_timeout_ms: int,
    once: bool = False,
) -> Mapping[TopicPartition, int]:
    """Committed offset per partition (-1: none). Retries until it succeeds (cancel to give up), or with
    ``once``, raises what the one attempt met."""
    attempts = 0
    while True:
        try:
            node = coordinator()
            if node is None:
                raise _Retry("coordinator unknown")
            versions = await _aiokafka.broker_versions(client, node)
            version = min(
                OFFSET_FETCH_MAX_VERSION, _aiokafka.negotiated_version(versions, OffsetFetchRequest)
            )
            exchange = await _aiokafka.send(
                client,
                node,
                offset_fetch_request(group_id, partitions, version),
                max_version=version,
                timeout_ms=request_timeout_ms,
            )
            response = exchange.response_as(OffsetFetchResponse)
            codes = {p.error_code for t in response.topics for p in t.partitions} | {response.error_code}
            if codes & _COORDINATOR_MOVED:
                coordinator_moved()
                raise _Retry(f"OffsetFetch answered {sorted(codes & _COORDINATOR_MOVED)}")
            if codes & _RETRIABLE:
                raise _Retry(f"OffsetFetch answered {sorted(codes & _RETRIABLE)}")
            failed = codes - {ErrorCode.NONE}
            if failed:
                raise StaticConsumerError(
                    f"could not fetch committed offsets of group {group_id!r}: OffsetFetch answered "
                    f"{sorted(ErrorCode(c).name if c in ErrorCode._value2member_map_ else c for c in failed)}"
                )
            return {
                TopicPartition(t.name, p.partition_index): p.committed_offset
                for t in response.topics
                for p in t.partitions
            }
        except StaticConsumerError:
            raise
        except Exception as error:  # retriable answers, timeouts, and aiokafka's connection errors
            if once:
                raise
            attempts += 1
            log.info("OffsetFetch attempt %d for group %s failed: %r", attempts, group_id, error)
            await asyncio.sleep(backoff.seconds(attempts))

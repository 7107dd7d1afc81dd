"""Commit bookkeeping shared by every protocol: what is in flight, what is acknowledged, and the rule that
no committed offset ever moves backwards.

The per-error reactions are in rules.py; this module keeps the facts they act on and words the errors
the application sees.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from staticconsumer.errors import (
    CommitFailedError,
    ErrorCode,
    RebalanceInProgressError,
    broker_error,
)

from .rules import Verdict, code_name
from .types import OffsetAndMetadata, RequestToken, TopicPartition


class PendingCommit(msgspec.Struct, frozen=True):
    """``commit_id`` is the application's id, or None for a commit the machine made while releasing."""

    commit_id: int | None
    offsets: Mapping[TopicPartition, OffsetAndMetadata]
    token: RequestToken


class CommitBook:
    def __init__(self) -> None:
        self._committed: dict[TopicPartition, int] = {}
        self._pending: dict[int, PendingCommit] = {}
        # Commits answered "retry later" (STALE_MEMBER_EPOCH) and held for a resend: still in flight for the
        # no-backwards rule, or a later, higher commit could be overtaken by the resend of a lower one.
        self._parked: dict[int, PendingCommit] = {}

    @property
    def committed(self) -> Mapping[TopicPartition, int]:
        """Highest offset per partition that the coordinator acknowledged from this member."""
        return dict(self._committed)

    def regressions(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata]
    ) -> dict[TopicPartition, tuple[int, int]]:
        """Partitions whose requested offset is below one already committed or in flight."""
        floors: dict[TopicPartition, int] = dict(self._committed)
        for pending in (*self._pending.values(), *self._parked.values()):
            for tp, om in pending.offsets.items():
                floors[tp] = max(floors.get(tp, om.offset), om.offset)
        return {
            tp: (om.offset, floors[tp])
            for tp, om in offsets.items()
            if tp in floors and om.offset < floors[tp]
        }

    def sent(self, pending: PendingCommit) -> None:
        self._pending[pending.token.request_id] = pending

    def take(self, request_id: int) -> PendingCommit | None:
        return self._pending.pop(request_id, None)

    def park(self, pending: PendingCommit) -> None:
        """Hold an answered commit for a resend; its offsets keep counting as in flight."""
        self._parked[pending.token.request_id] = pending

    def unpark(self, pending: PendingCommit) -> None:
        self._parked.pop(pending.token.request_id, None)

    def acknowledge(self, pending: PendingCommit, partition_errors: Mapping[TopicPartition, int]) -> int:
        """Record the partitions that were committed; return the first error code (NONE if none failed)."""
        first_error: int = ErrorCode.NONE
        for tp in sorted(pending.offsets):
            code = partition_errors.get(tp, ErrorCode.NONE)
            if code == ErrorCode.NONE:
                offset = pending.offsets[tp].offset
                self._committed[tp] = max(self._committed.get(tp, offset), offset)
            elif first_error == ErrorCode.NONE:
                first_error = code
        return first_error

    def abandon(self) -> list[PendingCommit]:
        """Every commit waiting for an answer or a resend; the book forgets them (the member is finished)."""
        pending = [*self._pending.values(), *self._parked.values()]
        self._pending, self._parked = {}, {}
        return pending


def verdict_error(verdict: Verdict, code: int, generation: int, *, rejoining: bool, retry: bool) -> Exception:
    """The exception the committing application gets, worded for the situation it is in."""
    name = code_name(code)
    if verdict is Verdict.REBALANCING:
        return RebalanceInProgressError(
            "offset commit cannot be completed since the group is rebalancing; poll to complete the "
            "rebalance, then commit again"
        )
    if verdict is Verdict.COMMIT_FAILED:
        return CommitFailedError(
            f"the coordinator rejected the commit with {name}: this member is no longer in "
            f"generation {generation}; its partitions may have moved"
        )
    if verdict is Verdict.REBALANCING_OR_FAILED:
        fenced = code == ErrorCode.FENCED_INSTANCE_ID
        if rejoining:
            return RebalanceInProgressError(
                "offset commit from an older generation was fenced; the member has rejoined since"
                if fenced
                else "offset commit was sent in an older generation and the member is rejoining"
            )
        return CommitFailedError(
            f"offset commit from generation {generation} was fenced; the member has rejoined since"
            if fenced
            else f"offset commit was sent in generation {generation} which the group has left ({name})"
        )
    return broker_error(code, "offset commit failed; retry" if retry else "offset commit failed")

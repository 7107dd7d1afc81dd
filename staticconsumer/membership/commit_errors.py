"""Commit outcomes that are not broker error codes, so errors.py has no class for them yet."""

from __future__ import annotations

from collections.abc import Mapping

from staticconsumer.errors import StaticConsumerError

from .types import TopicPartition


class CommitFailedError(StaticConsumerError):
    """The commit cannot succeed in this generation (Java's CommitFailedException).

    Either the member is not in an active generation, or the coordinator no longer recognises the
    generation it was sent with; the partitions may already belong to another member, so retrying the
    same commit is pointless. Poll again to rejoin, then commit what is processed after that.
    """


class OffsetRegressionError(StaticConsumerError, ValueError):
    """A commit would move a committed offset backwards, which breaks at-least-once bookkeeping."""

    def __init__(self, regressions: Mapping[TopicPartition, tuple[int, int]]) -> None:
        self.regressions = dict(regressions)
        detail = ", ".join(
            f"{tp.topic}[{tp.partition}]: {asked} < {floor}"
            for tp, (asked, floor) in sorted(self.regressions.items())
        )
        super().__init__(
            f"refusing to commit offsets lower than ones already committed or in flight ({detail}); "
            f"committed offsets never move backwards"
        )

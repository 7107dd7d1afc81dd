"""The seam between group membership and the application that fetches records.

The membership runtime decides *what* a member owns; the application side (StaticConsumer) carries it
out: it fetches, buffers and delivers records, keeps consumed positions and runs the user's rebalance
listener. Every call here is executed on the application's event loop (the membership thread marshals
them, in order), so an implementation needs no locks. Partition sets are always deltas.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Protocol

import msgspec

from staticconsumer.membership import MemberState, OffsetAndMetadata, ReleaseReason, TopicPartition

Partitions = frozenset[TopicPartition]


class MemberSnapshot(msgspec.Struct, frozen=True):
    """What the application may read about its membership; replaced as a whole after every change."""

    state: MemberState = MemberState.NOT_STARTED
    member_id: str = ""
    generation: int = -1
    is_leader: bool = False
    leadership_guessed: bool = False
    protocol_name: str | None = None
    rebalance_protocol: str = "eager"
    group_protocol: str = "classic"
    """``classic`` (JoinGroup/SyncGroup) or ``consumer`` (KIP-848's ConsumerGroupHeartbeat)."""
    assignment: Partitions = frozenset()
    fatal_error: Exception | None = None
    subscription: frozenset[str] = frozenset()
    """The topics subscribed at the last step (for a pattern, those it matched)."""


class PartitionOwner(Protocol):
    def stop_fetching(self, partitions: Partitions | None) -> None:
        """Stop fetching these partitions now (None: all) and drop their buffered records; keep their
        consumed positions until the revoke that follows has collected them."""

    # revoke, lose and assign return an awaitable rather than being coroutine functions, so the
    # membership thread's side (runtime/thread.py) can hand the call to the application's loop as it is
    # made, in the same wake-up as the calls made before it; an ``async def`` implements them as well.

    def revoke(
        self, partitions: Partitions, reason: ReleaseReason, collect_positions: bool
    ) -> Awaitable[dict[TopicPartition, OffsetAndMetadata]]:
        """Run ``on_partitions_revoked`` and forget the partitions; return their consumed positions when
        ``collect_positions`` (auto-commit), so the membership commits them before moving on."""

    def lose(self, partitions: Partitions, reason: ReleaseReason) -> Awaitable[None]:
        """Forget the partitions without committing (another member may own them) and run
        ``on_partitions_lost``."""

    def assign(
        self,
        partitions: Partitions,
        owned: Partitions,
        generation: int,
        committed: Mapping[TopicPartition, int],
    ) -> Awaitable[None]:
        """Start fetching the new ``partitions`` from ``committed`` (-1: the reset policy), leave the rest of
        ``owned`` untouched, and run ``on_partitions_assigned(partitions)``."""

    def membership_changed(self, snapshot: MemberSnapshot) -> None:
        """The snapshot changed (identity, state, assignment, or a fatal error to raise from now on)."""

"""The async side of group membership: the loop that runs the sans-IO machine against a real coordinator,
on a thread of its own (thread.py is the boundary with the application's event loop).

Internal: not part of the public API, it may change in any release (docs/consumer.md, "What is
public", lists what is).

The seam with the application (``MemberSnapshot``, ``PartitionOwner``) and the subscription are defined
here, not in modules of their own (``runtime.owner`` and ``runtime.subscription`` before): every
``import staticconsumer`` loads them, and a module costs a finder lookup, a stat and an unmarshal
(issue 26).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Iterable, Mapping
from typing import TYPE_CHECKING, Protocol

import msgspec

from staticconsumer.membership import MemberState, OffsetAndMetadata, ReleaseReason, TopicPartition

# -- The seam between group membership and the application that fetches records (was runtime.owner) ----
#
# The seam between group membership and the application that fetches records.
#
# The membership runtime decides *what* a member owns; the application side (StaticConsumer) carries it
# out: it fetches, buffers and delivers records, keeps consumed positions and runs the user's rebalance
# listener. Every call here is executed on the application's event loop (the membership thread marshals
# them, in order), so an implementation needs no locks. Partition sets are always deltas.

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


if TYPE_CHECKING:  # a Protocol only type checkers read: no class to build at import (issue 26)

    class PartitionOwner(Protocol):
        def stop_fetching(self, partitions: Partitions | None) -> None:
            """Stop fetching these partitions now (None: all) and drop their buffered records; keep their
            consumed positions until the revoke that follows has collected them."""

        # revoke, lose and assign return an awaitable rather than being coroutine functions, so the
        # membership thread's side (runtime/thread.py) can hand the call to the application's loop as it
        # is made, in the same wake-up as the calls made before it; an ``async def`` implements them too.

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
            """Start fetching the new ``partitions`` from ``committed`` (-1: the reset policy), leave the
            rest of ``owned`` untouched, and run ``on_partitions_assigned(partitions)``."""

        def membership_changed(self, snapshot: MemberSnapshot) -> None:
            """The snapshot changed (identity, state, assignment, or a fatal error to raise from now on)."""


# -- What this member subscribes to (was runtime.subscription) ------------------------------------------
#
# What this member subscribes to: a fixed set of topics, or a pattern resolved against cluster metadata.
#
# Read from both threads (the application's commit explains its errors with ``topics``), written on one at a
# time (the application's before the membership thread runs, the membership thread's afterwards): its whole
# state is one immutable value swapped by a single reference assignment, so a reader never sees the names of
# one subscription with the pattern or the matches of another.


class _Wanted(msgspec.Struct, frozen=True):
    """One subscription's whole state: names or a compiled pattern, and what the pattern matched."""

    names: frozenset[str] = frozenset()
    pattern: re.Pattern[str] | None = None
    matched: frozenset[str] = frozenset()


class Subscription:
    """Topics by name, or by a regular expression (matched whole; internal ``__`` topics only when
    ``exclude_internal`` is off: exclude.internal.topics=false)."""

    def __init__(
        self, topics: Iterable[str] = (), pattern: str | None = None, *, exclude_internal: bool = True
    ) -> None:
        self.exclude_internal = exclude_internal
        self._wanted = _Wanted(frozenset(topics), re.compile(pattern) if pattern else None)

    def replace(self, topics: Iterable[str] = (), pattern: str | None = None) -> None:
        """Subscribe to something else (``consumer.subscribe``/``unsubscribe``): by the application before
        the membership thread runs, by the membership thread after; a new pattern matches nothing until the
        next ``refresh``."""
        self._wanted = _Wanted(frozenset(topics), re.compile(pattern) if pattern else None)

    @property
    def names(self) -> frozenset[str]:
        return self._wanted.names

    @property
    def pattern(self) -> re.Pattern[str] | None:
        return self._wanted.pattern

    @property
    def named(self) -> frozenset[str]:
        """The topics subscribed by name; none for a pattern (checked for existence and access)."""
        wanted = self._wanted
        return wanted.names if wanted.pattern is None else frozenset()

    @property
    def is_empty(self) -> bool:
        """Nothing subscribed: no topic and no pattern (aiokafka's consumer started before subscribe())."""
        wanted = self._wanted
        return not wanted.names and wanted.pattern is None

    @property
    def topics(self) -> frozenset[str]:
        """The topics subscribed right now (for a pattern, those it matched at the last refresh)."""
        wanted = self._wanted
        return wanted.matched if wanted.pattern is not None else wanted.names

    def refresh(self, existing: Iterable[str]) -> tuple[frozenset[str], frozenset[str]] | None:
        """Match the pattern against ``existing`` topics; (added, removed) when that changed the topics.
        Membership thread only."""
        wanted = self._wanted
        if wanted.pattern is None:
            return None
        pattern, internal_too = wanted.pattern, not self.exclude_internal
        matched = frozenset(t for t in existing if pattern.fullmatch(t) and (internal_too or t[:2] != "__"))
        if matched == wanted.matched:
            return None
        self._wanted = msgspec.structs.replace(wanted, matched=matched)
        return matched - wanted.matched, wanted.matched - matched

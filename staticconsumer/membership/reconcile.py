"""Assignment reconciliation, shared by every protocol: what a member owns, what it must give up (revoked
with a commit first, or lost without one) and what it gains.

A listener only ever sees deltas. The protocols differ only in *when* they release:

* eager (classic): everything is revoked before JoinGroup and the whole new assignment is assigned after
  SyncGroup;
* cooperative (classic, KIP-429) and the consumer protocol (KIP-848): only ``owned - target`` is revoked
  and only ``target - owned`` assigned; partitions kept are never touched.

:class:`Ownership` holds the facts and emits the ownership actions (StopFetching, PartitionsRevoked,
PartitionsLost, PartitionsAssigned) with their callback ids; the machines decide when to call it.
"""

from __future__ import annotations

import msgspec

from . import actions as act
from .types import RebalanceProtocol as RebalanceProtocol  # re-exported: its home was here
from .types import ReleaseReason, TopicPartition

Partitions = frozenset[TopicPartition]


class Delta(msgspec.Struct, frozen=True):
    """From what a member owns to its target: what to revoke, what to add, what stays untouched."""

    revoke: Partitions
    assign: Partitions
    keep: Partitions


def diff(owned: Partitions, target: Partitions) -> Delta:
    return Delta(revoke=owned - target, assign=target - owned, keep=owned & target)


def release_before_join(
    protocol: RebalanceProtocol, owned: Partitions, subscribed: frozenset[str]
) -> Partitions:
    """What to revoke before (re)joining: eager gives up everything; cooperative only what it no longer
    subscribes to (Java's onJoinPrepare)."""
    if protocol is RebalanceProtocol.EAGER:
        return owned
    return frozenset(tp for tp in owned if tp.topic not in subscribed)


class Release(msgspec.Struct):
    """Giving up ``partitions``: a callback, then (after a revoke) an optional commit."""

    callback_id: int
    partitions: Partitions
    lost: bool
    everything: bool
    """The member gives up its whole assignment (it holds none afterwards)."""
    commit_request_id: int | None = None
    before_join: bool = False
    """Released to rejoin (Java's onJoinPrepare): once its commit is sent, the JoinGroup may follow on the
    same connection without waiting for the answer (:attr:`Ownership.holds_up_join`)."""


class Ownership:
    """What this member owns, and the callback (and commit) in flight while it gives some of it up.

    ``holding`` is True from the moment an assignment is accepted until it is given up entirely; an empty
    assignment is still held (it is revoked on the next eager rejoin, as Java's listener sees it).
    """

    def __init__(self) -> None:
        self.owned: Partitions = frozenset()
        self.holding = False
        self.release: Release | None = None
        self.callback_in_flight: int | None = None
        self._next_callback_id = 1

    @property
    def busy(self) -> bool:
        """A callback runs, or a released partition's commit is in flight: wait before moving on."""
        return self.callback_in_flight is not None or self.release is not None

    @property
    def holds_up_join(self) -> bool:
        """Whether a JoinGroup must wait: as :attr:`busy`, except that a release made to rejoin stops
        holding it up once its commit is sent. The coordinator handles one connection's requests in
        order, so that commit is applied before the JoinGroup sent after it is even read."""
        release = self.release
        if self.callback_in_flight is not None:
            return True
        return release is not None and not (release.before_join and release.commit_request_id is not None)

    def _callback_id(self) -> int:
        callback_id = self._next_callback_id
        self._next_callback_id += 1
        self.callback_in_flight = callback_id
        return callback_id

    def revoke(
        self, partitions: Partitions, reason: ReleaseReason, *, everything: bool, before_join: bool = False
    ) -> list[act.Action]:
        """Stop fetching and run the revoke callback; commits still work until it finishes.
        ``before_join``: released to rejoin (see :attr:`holds_up_join`)."""
        out: list[act.Action] = []
        if partitions:
            out.append(act.StopFetching(reason=reason, partitions=None if everything else partitions))
        callback_id = self._callback_id()
        self.release = Release(
            callback_id, partitions, lost=False, everything=everything, before_join=before_join
        )
        out.append(act.PartitionsRevoked(callback_id=callback_id, partitions=partitions, reason=reason))
        return out

    def lose(self, partitions: Partitions, reason: ReleaseReason, *, everything: bool) -> list[act.Action]:
        """Stop fetching and run the lost callback: another member may own them already, never commit."""
        callback_id = self._callback_id()
        self.release = Release(callback_id, partitions, lost=True, everything=everything)
        return [
            act.StopFetching(reason=reason, partitions=None if everything else partitions),
            act.PartitionsLost(callback_id=callback_id, partitions=partitions, reason=reason),
        ]

    def drop(self) -> None:
        """Give up an empty assignment without a callback (nothing to revoke, nothing lost)."""
        self.owned = frozenset()
        self.holding = False

    def assign(self, target: Partitions, generation: int) -> list[act.Action]:
        """Own ``target``: only what is new is handed to the application (and its listener)."""
        added = target - self.owned
        self.owned = target
        self.holding = True
        callback_id = self._callback_id()
        return [
            act.PartitionsAssigned(
                callback_id=callback_id, partitions=added, generation=generation, owned=target
            )
        ]

    def callback_finished(self, callback_id: int) -> Release | None:
        """Note a finished callback; returns the release it completed, if it was one."""
        if callback_id != self.callback_in_flight:
            return None
        self.callback_in_flight = None
        release = self.release
        if release is None or release.callback_id != callback_id:
            return None
        self.owned -= release.partitions
        if release.everything:
            self.holding = False
        return release

    def release_done(self) -> None:
        self.release = None

    def commit_finished(self, request_id: int) -> None:
        if self.release is not None and self.release.commit_request_id == request_id:
            self.release = None

    def abandon(self, reason: ReleaseReason) -> list[act.Action]:
        """The member is finished: report what it owned as lost (unless a release already covers it)."""
        out: list[act.Action] = []
        if self.owned and self.release is None:
            out.append(
                act.PartitionsLost(callback_id=self._callback_id(), partitions=self.owned, reason=reason)
            )
        self.owned = frozenset()
        self.holding = False
        self.release = None
        self.callback_in_flight = None
        return out

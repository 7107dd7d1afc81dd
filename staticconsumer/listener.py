"""Rebalance listeners: the class to subclass, and how the consumer calls whatever it was given.

Listeners written for aiokafka work unchanged: aiokafka's ``ConsumerRebalanceListener`` has no
``on_partitions_lost``, so a listener without one gets ``on_partitions_revoked`` for lost partitions, as
the Java client's default does. Each callback may be plain or ``async``.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable
from typing import Final

from staticconsumer.membership import TopicPartition

log = logging.getLogger("staticconsumer")

Partitions = frozenset[TopicPartition]


class ListenerCall:
    """The callbacks, by method name: plain strings (an ``Enum`` here cost ~50 us at every import)."""

    REVOKED: Final = "on_partitions_revoked"
    ASSIGNED: Final = "on_partitions_assigned"
    LOST: Final = "on_partitions_lost"


class ConsumerRebalanceListener:
    """Override any of these (plain or ``async``); each gets a frozenset of TopicPartition.

    ``on_partitions_lost`` runs when partitions were taken away without a clean revoke (fencing, a
    missed session or poll deadline): another member may own them already, so do not commit them. By
    default it does what ``on_partitions_revoked`` does, as in the Java client.
    """

    def on_partitions_revoked(self, revoked: Partitions) -> Awaitable[None] | None:
        return None

    def on_partitions_assigned(self, assigned: Partitions) -> Awaitable[None] | None:
        return None

    def on_partitions_lost(self, lost: Partitions) -> Awaitable[None] | None:
        return self.on_partitions_revoked(lost)


async def call_listener(listener: object, call: str, partitions: Partitions) -> None:
    """Run one callback of ``listener`` (any object with the callbacks it cares about).

    A listener that raises is logged and the rebalance goes on, as in Java: the membership cannot be
    held hostage by application code.
    """
    method = getattr(listener, call, None)
    if method is None and call == ListenerCall.LOST:
        method = getattr(listener, ListenerCall.REVOKED, None)
    if method is None:
        return
    try:
        result = method(partitions)
        if inspect.isawaitable(result):
            await result
    except Exception:
        log.exception("rebalance listener %s(%d partitions) failed; continuing", call, len(partitions))

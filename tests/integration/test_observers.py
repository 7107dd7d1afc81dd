"""Membership observers see the machine's events and actions; a failing one never breaks the consumer."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from staticconsumer.consumer import StaticConsumer
from staticconsumer.membership import MembershipMachine, actions, events
from staticconsumer.testing import EmbeddedKafka

from .support import FAST, until_assigned

pytestmark = pytest.mark.kafka


class Recording:
    def __init__(self) -> None:
        self.seen: list[tuple[str, list[str], int]] = []

    def observe(
        self, event: events.Event, produced: Sequence[actions.Action], machine: MembershipMachine
    ) -> None:
        self.seen.append((type(event).__name__, [type(a).__name__ for a in produced], machine.generation))


class Broken:
    calls = 0

    def observe(
        self, event: events.Event, produced: Sequence[actions.Action], machine: MembershipMachine
    ) -> None:
        self.calls += 1
        raise RuntimeError("observer bug")


async def test_observers_see_the_join_and_a_broken_one_is_ignored(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=2)
    recording, broken = Recording(), Broken()
    consumer = StaticConsumer(
        topic,
        bootstrap_servers=kafka_broker.bootstrap_servers,
        group_id=unique_group,
        group_instance_id="obs",
        observers=[broken, recording],
        **FAST,
    )
    async with consumer:
        await until_assigned(consumer)
    kinds = [event for event, _, _ in recording.seen]
    assert kinds[0] == "Start"
    assert {"JoinGroupResponse", "SyncGroupResponse"} <= set(kinds)
    produced = [action for _, acts, _ in recording.seen for action in acts]
    assert {"SendJoinGroup", "PartitionsAssigned", "Stopped"} <= set(produced)
    assert any(generation >= 1 for _, _, generation in recording.seen)
    assert broken.calls == len(recording.seen), "the broken observer was called for every step, and ignored"

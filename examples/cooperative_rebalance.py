"""Cooperative rebalancing: a third member joins and only the partitions it takes move.

With ``assignors=["cooperative-sticky"]`` (alone) the consumer follows KIP-429: members keep fetching
what they own while the group rebalances; after the first round each gives up only what moves (the
listener hears of nothing else), and a second round hands those partitions to the newcomer.

Run: .venv/bin/python examples/cooperative_rebalance.py   (starts its own embedded Kafka broker)
"""

import asyncio
from typing import Any

from staticconsumer import StaticConsumer
from staticconsumer.listener import ConsumerRebalanceListener
from staticconsumer.membership import TopicPartition
from staticconsumer.testing import EmbeddedKafka

SETTINGS: dict[str, Any] = {
    "group_id": "cooperative-demo",
    "assignors": ["cooperative-sticky"],  # every assignor supports cooperative: the member is cooperative
    "session_timeout_ms": 10_000,
    "heartbeat_interval_ms": 1_000,
    "auto_offset_reset": "earliest",
}


class Told(ConsumerRebalanceListener):
    """Prints what the listener is told: under cooperative, only what changes."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.revoked: set[int] = set()

    def on_partitions_assigned(self, assigned: frozenset[TopicPartition]) -> None:
        print(f"{self.name}: assigned {sorted(tp.partition for tp in assigned)}")

    def on_partitions_revoked(self, revoked: frozenset[TopicPartition]) -> None:
        self.revoked |= {tp.partition for tp in revoked}
        print(f"{self.name}: revoked {sorted(tp.partition for tp in revoked)}")


async def poll(consumers: list[StaticConsumer], seconds: float) -> None:
    end = asyncio.get_running_loop().time() + seconds
    while asyncio.get_running_loop().time() < end:
        for consumer in consumers:
            await consumer.getmany(timeout_ms=50)


async def settled(consumers: list[StaticConsumer]) -> None:
    while True:
        await poll(consumers, 1.0)
        owned = [tp for c in consumers for tp in c.assignment()]
        if (
            len(owned) == 6
            and len({c.generation for c in consumers}) == 1
            and all(c.assignment() for c in consumers)
        ):
            return


async def main(bootstrap: str) -> None:
    listeners = {name: Told(name) for name in ("a", "b", "c")}

    def member(name: str) -> StaticConsumer:
        return StaticConsumer(
            "orders",
            bootstrap_servers=bootstrap,
            group_instance_id=name,
            listener=listeners[name],
            **SETTINGS,
        )

    a, b = member("a"), member("b")
    async with a, b:
        await settled([a, b])
        print(f"protocol: {a.rebalance_protocol}; generation {a.generation}")
        before = {name: {tp.partition for tp in c.assignment()} for name, c in (("a", a), ("b", b))}
        generation = a.generation
        for told in listeners.values():  # what the initial join moved is not the newcomer's doing
            told.revoked.clear()
        async with member("c") as c:
            await settled([a, b, c])
            after = {name: {tp.partition for tp in x.assignment()} for name, x in (("a", a), ("b", b))}
            taken = sorted(tp.partition for tp in c.assignment())
            print(f"after the join: generation {c.generation}, c owns {taken}")
            for name in ("a", "b"):
                moved = before[name] - after[name]
                assert listeners[name].revoked == moved, f"{name} revoked only what moved"
                kept = sorted(before[name] & after[name])
                print(f"{name} kept {kept} fetching throughout, gave up {sorted(moved)}")
            assert c.generation == generation + 2, "two rounds: revoke, then hand out"


if __name__ == "__main__":
    with EmbeddedKafka() as kafka:
        kafka.create_topic("orders", partitions=6)
        asyncio.run(main(kafka.bootstrap_servers))

"""Scale down a static group without waiting out the session timeout: remove the gone member by instance id.

A static member sends no LeaveGroup when it stops (that is what lets it restart without a rebalance), so
when a pod is gone for good its partitions sit unserved until session.timeout.ms passes. Removing it
explicitly rebalances the group at once.

Run: .venv/bin/python examples/remove_static_member.py   (starts its own embedded Kafka broker)
The same call against your cluster, with the consumer's KAFKA_* variables (security included):

    async with GroupAdmin.from_env() as admin:
        result = await admin.remove_members("orders", ["orders-2"], reason="scaled down to 2 replicas")

or from a shell: staticconsumer remove-members orders --instance-id orders-2 --reason "scaled down"
"""

import asyncio
import time

from aiokafka import AIOKafkaProducer

from staticconsumer import StaticConsumer
from staticconsumer.admin import GroupAdmin
from staticconsumer.testing import EmbeddedKafka

GROUP = "orders"
SETTINGS = {
    "group_id": GROUP,
    "session_timeout_ms": 30_000,  # a restart may take this long without a rebalance...
    "heartbeat_interval_ms": 1_000,
    "auto_offset_reset": "earliest",
}


async def main(bootstrap: str) -> None:
    pods = [
        StaticConsumer("orders", bootstrap_servers=bootstrap, group_instance_id=f"orders-{i}", **SETTINGS)
        for i in range(2)
    ]
    for pod in pods:
        await pod.start()
    while not all(pod.assignment() for pod in pods):
        await asyncio.gather(*(pod.getmany(timeout_ms=200) for pod in pods))

    async with GroupAdmin(bootstrap_servers=bootstrap) as admin:
        group = await admin.describe_group(GROUP)
        for member in group.members:
            owned = ", ".join(f"{tp.topic}-{p}" for tp in member.assignment for p in tp.partitions)
            print(f"{member.group_instance_id}: {owned}")

        gone = pods.pop()
        orphaned = sorted(tp.partition for tp in gone.assignment())
        await gone.stop()  # ...so its partitions would wait 30 s for anyone else
        stopped_at = time.monotonic()
        result = await admin.remove_members(
            GROUP, ["orders-1", "orders-9"], reason="scaled down to 1 replica"
        )
        for outcome in result.members:
            print(f"remove {outcome.group_instance_id}: {'removed' if outcome.removed else outcome.error}")

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    for partition in orphaned:
        await producer.send_and_wait("orders", b"after scale-down", partition=partition)
    await producer.stop()
    survivor, seen = pods[0], set()
    while not set(orphaned) <= seen:
        for tp, records in (await survivor.getmany(timeout_ms=200)).items():
            seen.update(tp.partition for r in records if r.value == b"after scale-down")
    took = time.monotonic() - stopped_at
    print(f"orders-0 consumed orders-1's partitions {orphaned} {took:.1f} s after it stopped (not 30 s)")
    await survivor.stop()


if __name__ == "__main__":
    with EmbeddedKafka() as kafka:
        kafka.create_topic("orders", partitions=4)
        asyncio.run(main(kafka.bootstrap_servers))

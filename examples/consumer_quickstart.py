"""A static member consumes, restarts, and comes back with no rebalance.

Run: .venv/bin/python examples/consumer_quickstart.py   (starts its own embedded Kafka broker;
     --bootstrap-server HOST:PORT runs it on a broker you already have)
"""

import argparse
import asyncio

from aiokafka import AIOKafkaProducer

from staticconsumer import StaticConsumer
from staticconsumer.testing import KafkaBootstrap

SETTINGS = {
    "group_id": "quickstart",
    "group_instance_id": "quickstart-0",  # in Kubernetes: the StatefulSet pod name
    "session_timeout_ms": 10_000,
    "auto_offset_reset": "earliest",
}


async def main(bootstrap: str) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    for i in range(10):
        await producer.send("orders", f"order-{i}".encode())
    await producer.stop()

    async with StaticConsumer("orders", bootstrap_servers=bootstrap, **SETTINGS) as consumer:
        for _ in range(10):
            record = await consumer.getone()
            print(f"consumed {record.value.decode()} from partition {record.partition}")
        await consumer.commit()
        generation = consumer.generation
    print(f"stopped in generation {generation}: no LeaveGroup was sent")

    async with StaticConsumer("orders", bootstrap_servers=bootstrap, **SETTINGS) as consumer:
        while not consumer.assignment():
            await consumer.getmany(timeout_ms=200)
        print(f"restarted: generation {consumer.generation}, partitions {sorted(consumer.assignment())}")
        assert consumer.generation == generation, "a static restart needs no rebalance"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bootstrap-server", help="run on these brokers instead of an embedded one")
    with KafkaBootstrap(parser.parse_args().bootstrap_server, topics={"orders": 3}) as bootstrap:
        asyncio.run(main(bootstrap))

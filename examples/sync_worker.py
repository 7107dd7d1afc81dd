"""A synchronous worker (no asyncio in sight) that blocks longer than its session timeout, keeps its
partitions, restarts, and comes back with no rebalance.

Run: .venv/bin/python examples/sync_worker.py   (starts its own embedded Kafka broker;
     --bootstrap-server HOST:PORT runs it on a broker you already have)
"""

import argparse
import asyncio
import time

from aiokafka import AIOKafkaProducer

from staticconsumer.sync import StaticConsumer
from staticconsumer.testing import KafkaBootstrap

SETTINGS = {
    "group_id": "invoices",
    "group_instance_id": "invoices-0",  # in Kubernetes: the StatefulSet pod name
    "session_timeout_ms": 3_000,
    "heartbeat_interval_ms": 900,
    "auto_offset_reset": "earliest",
    "enable_auto_commit": False,
}


class Logging:
    """kafka-python's listener shape: plain methods."""

    def on_partitions_assigned(self, assigned: frozenset) -> None:
        print(f"assigned {sorted(tp.partition for tp in assigned)}")

    def on_partitions_revoked(self, revoked: frozenset) -> None:
        if revoked:
            print(f"revoked {sorted(tp.partition for tp in revoked)}")


def produce(bootstrap: str, count: int) -> None:
    async def send() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
        await producer.start()
        for i in range(count):
            await producer.send("invoices", f"invoice-{i}".encode())
        await producer.stop()

    asyncio.run(send())


def main(bootstrap: str) -> None:
    produce(bootstrap, 6)
    with StaticConsumer("invoices", bootstrap_servers=bootstrap, listener=Logging(), **SETTINGS) as consumer:
        handled = 0
        while handled < 6:
            for records in consumer.poll(timeout_ms=1000).values():
                for record in records:
                    time.sleep(1.5)  # a slow job: 6 of them block for 3x the session timeout
                    handled += 1
                    print(f"handled {record.value.decode()}")
        consumer.commit()
        generation, member = consumer.generation, consumer.member_id
        print(f"still generation {generation}, member {member[-8:]}, partitions {len(consumer.assignment())}")
    print("closed: no LeaveGroup was sent")

    with StaticConsumer("invoices", bootstrap_servers=bootstrap, listener=Logging(), **SETTINGS) as consumer:
        print(f"restarted: generation {consumer.generation}, partitions {len(consumer.assignment())}")
        assert consumer.generation == generation, "a static restart needs no rebalance"
        assert consumer.poll(timeout_ms=500) == {}, "everything was committed"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bootstrap-server", help="run on these brokers instead of an embedded one")
    with KafkaBootstrap(parser.parse_args().bootstrap_server, topics={"invoices": 3}) as bootstrap:
        main(bootstrap)

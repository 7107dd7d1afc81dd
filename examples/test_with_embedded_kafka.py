"""Run with: .venv/bin/pytest examples/test_with_embedded_kafka.py

The staticconsumer pytest plugin (opted into in examples/conftest.py) starts one real Kafka broker for the
session; each test gets its own topic and group names.
"""

from collections.abc import Callable

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from staticconsumer.testing import EmbeddedKafka


async def test_orders_round_trip(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=2)
    producer = AIOKafkaProducer(bootstrap_servers=kafka_broker.bootstrap_servers)
    await producer.start()
    await producer.send_and_wait(topic, b"order-1", key=b"customer-7")
    await producer.stop()

    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=kafka_broker.bootstrap_servers,
        group_id=unique_group,
        auto_offset_reset="earliest",
    )
    await consumer.start()
    try:
        record = await consumer.getone()
    finally:
        await consumer.stop()
    assert (record.key, record.value) == (b"customer-7", b"order-1")

"""An aiokafka service on a SASL_SSL cluster switches to StaticConsumer with its security keywords as
they are (ssl_context, sasl_mechanism, sasl_plain_username, sasl_plain_password).

Run: .venv/bin/python examples/sasl_ssl_consumer.py   (starts its own embedded Kafka with TLS and SASL)
"""

import asyncio
import ssl

from aiokafka import AIOKafkaProducer

from staticconsumer import StaticConsumer
from staticconsumer.testing import EmbeddedKafka
from staticconsumer.testing.broker import BrokerSettings, SaslSettings

PASSWORD = "billing-secret"  # in production: from a mounted Secret, never from code


async def main(bootstrap: str, ca_file: str) -> None:
    security = {  # exactly what the aiokafka service passed to AIOKafkaConsumer
        "bootstrap_servers": bootstrap,
        "security_protocol": "SASL_SSL",
        "ssl_context": ssl.create_default_context(cafile=ca_file),
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "billing",
        "sasl_plain_password": PASSWORD,
    }
    producer = AIOKafkaProducer(**security)
    await producer.start()
    for i in range(5):
        await producer.send("invoices", f"invoice-{i}".encode())
    await producer.stop()

    consumer = StaticConsumer(
        "invoices",
        group_id="billing",
        group_instance_id="billing-0",
        auto_offset_reset="earliest",
        **security,
    )
    async with consumer:
        for _ in range(5):
            record = await consumer.getone()
            print(f"consumed {record.value.decode()} over {consumer.settings.security_protocol}")
        await consumer.commit()


if __name__ == "__main__":
    sasl = SaslSettings(users={"billing": PASSWORD}, authorizer=False)
    with EmbeddedKafka(settings=BrokerSettings(tls=True, sasl=sasl)) as kafka:
        kafka.create_topic("invoices", partitions=2)
        asyncio.run(main(kafka.tls_bootstrap_servers(sasl=True), str(kafka.ca_file)))

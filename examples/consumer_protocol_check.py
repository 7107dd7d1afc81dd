"""Can these brokers serve group.protocol=consumer (KIP-848)? Ask before a consumer relies on it.

    python examples/consumer_protocol_check.py                          # an embedded Kafka 4.3.1
    python examples/consumer_protocol_check.py --kafka-version 3.9      # an embedded 3.9.2: refused
    python examples/consumer_protocol_check.py --bootstrap-server kafka:9092

It also shows the settings a consumer-protocol member may not have: the broker owns the assignment, the
session timeout and the heartbeat interval, so setting them is refused before anything connects.
"""

from __future__ import annotations

import argparse
import asyncio

from staticconsumer import _aiokafka
from staticconsumer.broker_support import broker_release, ensure_consumer_protocol
from staticconsumer.errors import ConsumerProtocolUnsupportedError, SettingsError
from staticconsumer.settings import Settings
from staticconsumer.testing import KafkaBootstrap


async def check(bootstrap_servers: str) -> int:
    client = _aiokafka.new_client(bootstrap_servers=bootstrap_servers, client_id="protocol-check")
    await client.bootstrap()
    try:
        for node in await _aiokafka.broker_nodes(client):
            versions = await _aiokafka.broker_versions(client, node)
            try:
                version = await ensure_consumer_protocol(client, node)
            except ConsumerProtocolUnsupportedError as refused:
                print(f"broker {node}: NO consumer protocol\n  {refused}")
                return 1
            print(f"broker {node}: Kafka {broker_release(versions)}, ConsumerGroupHeartbeat v{version}: ok")
        return 0
    finally:
        await client.close()


def show_settings_rules(bootstrap_servers: str) -> None:
    settings = Settings.from_env(
        {"KAFKA_GROUP_PROTOCOL": "consumer", "KAFKA_GROUP_REMOTE_ASSIGNOR": "range"},
        bootstrap_servers=bootstrap_servers,
        group_id="orders",
    )
    chosen = (
        f"group.protocol={settings.group_protocol}, group.remote.assignor={settings.group_remote_assignor}"
    )
    print(f"settings: {chosen}")
    try:
        Settings.from_env(
            {"KAFKA_GROUP_PROTOCOL": "consumer", "KAFKA_SESSION_TIMEOUT_MS": "45000"},
            bootstrap_servers=bootstrap_servers,
            group_id="orders",
        )
    except SettingsError as refused:
        print(f"refused as Java refuses it: {refused}")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--bootstrap-server", default=None, help="check these brokers instead of an embedded one"
    )
    parser.add_argument("--kafka-version", default=None, help="embedded broker version (default 4.3.1)")
    args = parser.parse_args()
    with KafkaBootstrap(args.bootstrap_server, version=args.kafka_version) as bootstrap:
        show_settings_rules(bootstrap)
        return asyncio.run(check(bootstrap))


if __name__ == "__main__":
    raise SystemExit(main())

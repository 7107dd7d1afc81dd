"""Configure consumers from environment variables the way a StatefulSet pod does, and see a mistake reported.

    python examples/settings_from_env.py                     # a made-up pod environment
    python examples/settings_from_env.py --from-os-environ   # your own KAFKA_* variables

Nothing here connects to Kafka: settings are checked before any connection.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from staticconsumer.errors import SettingsError
from staticconsumer.settings import Settings

POD_ENVIRONMENT: Mapping[str, str] = {
    # What the StatefulSet in docs/configuration.md gives pod orders-0 (metadata.name via the downward API).
    "KAFKA_GROUP_INSTANCE_ID": "orders-0",
    "KAFKA_BOOTSTRAP_SERVERS": "kafka-0.kafka:9092,kafka-1.kafka:9092",
    "KAFKA_GROUP_ID": "orders",
    "KAFKA_SESSION_TIMEOUT_MS": "60000",
    "KAFKA_AUTO_OFFSET_RESET": "earliest",
    "KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
    "KAFKA_SASL_MECHANISM": "SCRAM-SHA-512",
    "KAFKA_SASL_USERNAME": "orders",
    "KAFKA_SASL_PASSWORD": "from-a-kubernetes-secret",
    # Kubernetes adds these for a Service named "kafka"; they are not mistaken for settings.
    "KAFKA_SERVICE_HOST": "10.0.0.12",
    "KAFKA_PORT": "tcp://10.0.0.12:9092",
}

BROKEN_ENVIRONMENT: Mapping[str, str] = {
    **POD_ENVIRONMENT,
    "KAFKA_GROUP_INSTANCE_ID": "orders/0",
    "KAFKA_HEARTBEAT_INTERVAL_MS": "30000",
    "KAFKA_PARTITION_ASSIGNMENT_STRATEGY": "range,stiky",
    "KAFKA_SASL_PASWORD": "a typo that still must not be printed",
}


def describe(environ: Mapping[str, str]) -> None:
    """Print what the consumers of this pod would use, secrets masked, as a startup log would."""
    settings = Settings.from_env(environ, max_poll_records=100)  # code overrides the environment
    print("Effective settings (Kafka property names, secrets masked):")
    for name, value in settings.loggable_properties().items():
        print(f"  {name}={value}")
    print(f"client.id as sent: {settings.effective_client_id}")

    workers = [settings.for_worker(index) for index in range(3)]
    print("Three consumers in this process, each with its own instance id:")
    for worker in workers:
        print(f"  {worker.group_instance_id}  (client.id {worker.effective_client_id})")

    kwargs = workers[0].aiokafka_consumer_kwargs()
    print(f"aiokafka.AIOKafkaConsumer would receive: {', '.join(sorted(kwargs))}")


def show_a_broken_environment() -> None:
    """Every problem comes back in one error, each with its variable, value and what is allowed."""
    try:
        Settings.from_env(BROKEN_ENVIRONMENT)
    except SettingsError as error:
        print(error)
    else:
        raise AssertionError("the broken environment was accepted")


def main() -> int:
    if "--from-os-environ" in sys.argv[1:]:
        try:
            describe(os.environ)
        except SettingsError as error:
            print(error, file=sys.stderr)
            return 2
        return 0
    describe(POD_ENVIRONMENT)
    print()
    show_a_broken_environment()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Test support that ships with the SDK: a real Kafka broker on demand and a pytest plugin.

    from staticconsumer.testing import EmbeddedKafka

    with EmbeddedKafka() as kafka:          # Kafka 4.x; EmbeddedKafka("3.9") for the old coordinator
        kafka.create_topic("orders", partitions=6)
        ...  # connect to kafka.bootstrap_servers

The pytest plugin is loaded automatically once the package is installed; see
``staticconsumer.testing.pytest_plugin`` for its fixtures.
"""

from staticconsumer.testing.broker import (
    DEFAULT_VERSION,
    OLD_COORDINATOR_VERSION,
    BrokerSettings,
    EmbeddedKafka,
    ExternalKafka,
    SaslSettings,
    broker_api_versions,
)
from staticconsumer.testing.errors import (
    BrokerStartError,
    JarResolutionError,
    JavaNotFoundError,
    MavenNotFoundError,
    OracleError,
    PortInUseError,
    TestInfrastructureError,
)

__all__ = [
    "DEFAULT_VERSION",
    "OLD_COORDINATOR_VERSION",
    "BrokerSettings",
    "BrokerStartError",
    "EmbeddedKafka",
    "ExternalKafka",
    "JarResolutionError",
    "JavaNotFoundError",
    "MavenNotFoundError",
    "OracleError",
    "PortInUseError",
    "SaslSettings",
    "TestInfrastructureError",
    "broker_api_versions",
]

"""Test support that ships with the SDK: real Kafka on demand, faults to inject, a pytest plugin.

    from staticconsumer.testing import EmbeddedKafka, EmbeddedKafkaCluster

    with EmbeddedKafka() as kafka:          # Kafka 4.x; EmbeddedKafka("3.9") for the old coordinator
        kafka.create_topic("orders", partitions=6)
        ...  # connect to kafka.bootstrap_servers

    with EmbeddedKafkaCluster(nodes=3, fault_proxies=True) as cluster:
        cluster.proxy(2).blackhole()        # clients reach each node only through its FaultProxy
        cluster.kill_node(cluster.find_coordinator("orders-group"))

    with KafkaBootstrap(args.bootstrap_server, topics={"orders": 6}) as bootstrap:
        ...  # the brokers given, else an embedded one for the duration (also ``async with``)

The pytest plugin loads only when a project opts in (``pytest_plugins =
["staticconsumer.testing.pytest_plugin"]`` in its conftest.py, or ``-p``); see that module for its
fixtures, and docs/testing.md for all of it.
"""

from staticconsumer.testing.bootstrap import KafkaBootstrap
from staticconsumer.testing.broker import (
    DEFAULT_VERSION,
    OLD_COORDINATOR_VERSION,
    BrokerSettings,
    EmbeddedKafka,
    ExternalKafka,
    SaslSettings,
    broker_api_versions,
)
from staticconsumer.testing.cluster import ClusterNode, EmbeddedKafkaCluster
from staticconsumer.testing.errors import (
    BrokerStartError,
    JarResolutionError,
    JavaNotFoundError,
    MavenNotFoundError,
    OracleError,
    PortInUseError,
    TestInfrastructureError,
)
from staticconsumer.testing.fleet import Fleet, MemberProcess, MemberSpec
from staticconsumer.testing.ledger import CommitSampler, Ledger, LedgerProducer, Verdict
from staticconsumer.testing.memory import RssWatch, rss_bytes
from staticconsumer.testing.probe import find_coordinator, offsets_partition_for
from staticconsumer.testing.proxy import FaultProxy, ProxyLoop, ResponseFrame, StreamedFrame

__all__ = [
    "DEFAULT_VERSION",
    "OLD_COORDINATOR_VERSION",
    "BrokerSettings",
    "BrokerStartError",
    "ClusterNode",
    "CommitSampler",
    "EmbeddedKafka",
    "EmbeddedKafkaCluster",
    "ExternalKafka",
    "FaultProxy",
    "Fleet",
    "JarResolutionError",
    "JavaNotFoundError",
    "KafkaBootstrap",
    "Ledger",
    "LedgerProducer",
    "MavenNotFoundError",
    "MemberProcess",
    "MemberSpec",
    "OracleError",
    "PortInUseError",
    "ProxyLoop",
    "ResponseFrame",
    "RssWatch",
    "SaslSettings",
    "StreamedFrame",
    "TestInfrastructureError",
    "Verdict",
    "broker_api_versions",
    "find_coordinator",
    "offsets_partition_for",
    "rss_bytes",
]

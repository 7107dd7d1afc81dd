"""The plugin's 3-node KRaft cluster (``kafka_cluster``), with a fault proxy per node, shared by the suite.

Every test starts from a healthy cluster (all nodes up and in sync, no fault left on any proxy) and
must leave it so; the ``cluster`` fixture checks and repairs that between tests. The suite always
launches its own cluster (it stops and kills nodes), even when STATICCONSUMER_KAFKA_BOOTSTRAP is set.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from staticconsumer.testing.cluster import EmbeddedKafkaCluster
from staticconsumer.testing.pytest_plugin import running_cluster


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "faults: the fault suite (3-node cluster, proxies, member processes); -m 'not faults' leaves it out",
    )


@pytest.fixture(scope="package")
def kafka_cluster() -> Iterator[EmbeddedKafkaCluster]:
    """The plugin's cluster, but only for this package: its three JVMs stop when the suite is done
    instead of idling through the rest of the session."""
    yield from running_cluster()


@pytest.fixture
def cluster(kafka_cluster: EmbeddedKafkaCluster) -> Iterator[EmbeddedKafkaCluster]:
    """The plugin's shared cluster, healed, every node running and in sync, leaders where they were."""
    _repair(kafka_cluster)
    yield kafka_cluster
    _repair(kafka_cluster)


def _repair(cluster: EmbeddedKafkaCluster) -> None:
    for proxy in cluster.proxies:
        proxy.heal()
        proxy.clear_response_hooks()
    for node in cluster.nodes.values():
        if not node.running:
            cluster.start_node(node.node_id)
    cluster.elect_preferred_leaders()  # coordinators back where a fresh cluster has them

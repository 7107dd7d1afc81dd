"""One 3-node KRaft cluster with a fault proxy per node, shared by the whole fault suite.

Every test starts from a healthy cluster (all nodes up and in sync, no fault left on any proxy) and
must leave it so; the ``cluster`` fixture checks and repairs that between tests. The suite always
launches its own cluster (it stops and kills nodes), even when STATICCONSUMER_KAFKA_BOOTSTRAP is set.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from staticconsumer.testing.cluster import EmbeddedKafkaCluster


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "faults: the fault suite (3-node cluster, proxies, member processes); -m 'not faults' leaves it out",
    )


@pytest.fixture(scope="session")
def fault_cluster() -> Iterator[EmbeddedKafkaCluster]:
    cluster = EmbeddedKafkaCluster(nodes=3, fault_proxies=True)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def cluster(fault_cluster: EmbeddedKafkaCluster) -> Iterator[EmbeddedKafkaCluster]:
    """The shared cluster, healed, every node running and in sync, leaders where they were at start."""
    _repair(fault_cluster)
    yield fault_cluster
    _repair(fault_cluster)


def _repair(cluster: EmbeddedKafkaCluster) -> None:
    for proxy in cluster.proxies:
        proxy.heal()
        proxy.clear_response_hooks()
    for node in cluster.nodes.values():
        if not node.running:
            cluster.start_node(node.node_id)
    cluster.elect_preferred_leaders()  # coordinators back where a fresh cluster has them

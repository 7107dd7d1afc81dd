"""A real multi-node KRaft Kafka cluster on loopback, whose nodes tests can stop, kill and restart.

Every node is a combined broker+controller (``process.roles=broker,controller``) and the three (or
``nodes``) of them form the controller quorum. Why combined rather than brokers beside a separate
controller quorum: it is the smallest real cluster that survives the loss of any one node (a 3-voter
quorum keeps a majority, RF 3 with ``min.insync.replicas=2`` keeps every acknowledged record), it costs
three JVMs instead of four to six on machines that run many test suites at once, and killing a node
exercises what a small production cluster lives through: the group coordinator, partition leaders and
possibly the active controller fail over together.

Each node has three listeners: ``CLIENT`` (what clients bootstrap from and metadata advertises),
``INTERNAL`` (replication between brokers, and the helpers' own admin traffic) and ``CONTROLLER``.
With ``fault_proxies=True`` a :class:`~staticconsumer.testing.proxy.FaultProxy` per node is started
*before* the node and the node advertises the proxy's port on ``CLIENT``, so every connection a client
makes, to any broker it learns of, goes through that node's proxy; replication and the helpers use
``INTERNAL`` and are never faulted.

Ready means ready: :meth:`EmbeddedKafkaCluster.start` returns once every node is registered and
unfenced, a probe topic and ``__consumer_offsets`` (RF ``min(3, nodes)``) have every partition led
with a full ISR, and every offsets partition is loaded by its coordinator.
:meth:`EmbeddedKafkaCluster.start_node` returns once the node is registered again and back in the ISR
of every partition it replicates.
"""

from __future__ import annotations

import atexit
import contextlib
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from staticconsumer.testing._jars import broker_classpath
from staticconsumer.testing.broker import READY_TOPIC, BrokerSettings, touch_probe_groups
from staticconsumer.testing.errors import BrokerStartError
from staticconsumer.testing.launcher import (
    KafkaProcess,
    find_java,
    free_ports,
    keep_directories,
    new_cluster_id,
    port_is_free,
    resolve_version,
    run_coroutine_blocking,
)
from staticconsumer.testing.probe import elect_preferred_leaders, find_coordinator, offsets_partition_for
from staticconsumer.testing.proxy import FaultProxy, ProxyLoop
from staticconsumer.testing.topics import add_partitions, create_topics

OFFSETS_TOPIC = "__consumer_offsets"


@dataclass
class ClusterNode:
    """One node: its id, ports, JVM and (with fault proxies) the proxy clients reach it through."""

    node_id: int
    client_port: int
    internal_port: int
    controller_port: int
    jvm: KafkaProcess
    proxy: FaultProxy | None = None

    @property
    def advertised_port(self) -> int:
        return self.proxy.port if self.proxy is not None else self.client_port

    @property
    def address(self) -> str:
        """Where clients reach this node (its proxy, with fault proxies)."""
        return f"127.0.0.1:{self.advertised_port}"

    @property
    def internal_address(self) -> str:
        return f"127.0.0.1:{self.internal_port}"

    @property
    def running(self) -> bool:
        return self.jvm.running


class EmbeddedKafkaCluster:
    """``nodes`` KRaft nodes (broker+controller each) on loopback; a context manager, or start()/stop().

    ``settings.extra`` overrides any property on every node. The defaults add, for faster and
    deterministic failover in tests: brokers fenced 6 s after their last heartbeat to the controller,
    ``min.insync.replicas=2`` (with 3+ nodes), and no automatic preferred-leader rebalancing, so a
    group's coordinator moves only when a test makes it move.
    """

    def __init__(
        self,
        nodes: int = 3,
        version: str | None = None,
        settings: BrokerSettings | None = None,
        *,
        fault_proxies: bool = False,
        start_timeout: float = 180.0,
    ) -> None:
        if nodes < 1:
            raise ValueError(f"a cluster needs at least one node, got {nodes}")
        self.version = resolve_version(version)
        self.settings = settings or BrokerSettings(heap="512m")
        if self.settings.sasl is not None or self.settings.tls:
            raise ValueError(
                "EmbeddedKafkaCluster has no SASL or TLS listener yet; use EmbeddedKafka for those tests"
            )
        self.node_count = nodes
        self.fault_proxies = fault_proxies
        self.start_timeout = start_timeout
        self.replication_factor = min(3, nodes)
        self.min_insync_replicas = 2 if nodes >= 3 else 1
        self.workdir: Path | None = None
        self.nodes: dict[int, ClusterNode] = {}
        self.cluster_id = new_cluster_id()
        self.start_seconds = 0.0
        self.resolve_seconds = 0.0
        self._proxy_loop: ProxyLoop | None = None
        self._atexit_registered = False

    # -- addresses ---------------------------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        """Every node's client address (through its proxy, with fault proxies)."""
        return ",".join(node.address for node in self.nodes.values())

    @property
    def internal_bootstrap_servers(self) -> str:
        """The never-faulted listeners: for test bookkeeping that must see through a fault."""
        return ",".join(node.internal_address for node in self.nodes.values())

    def node(self, node_id: int) -> ClusterNode:
        try:
            return self.nodes[node_id]
        except KeyError:
            raise KeyError(f"no node {node_id}; nodes are {sorted(self.nodes)}") from None

    def proxy(self, node_id: int) -> FaultProxy:
        proxy = self.node(node_id).proxy
        if proxy is None:
            raise RuntimeError("this cluster runs without fault proxies; pass fault_proxies=True")
        return proxy

    @property
    def proxies(self) -> list[FaultProxy]:
        return [node.proxy for node in self.nodes.values() if node.proxy is not None]

    # -- lifecycle ---------------------------------------------------------------------------------

    def __enter__(self) -> EmbeddedKafkaCluster:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> EmbeddedKafkaCluster:
        """Format and start every node, then wait until the cluster is ready (see the module doc)."""
        java = find_java(self.version)
        jars, self.resolve_seconds = broker_classpath(self.version)
        started = time.monotonic()
        try:
            self._create_nodes(java, jars)
            for node in self.nodes.values():
                node.jvm.start()
            self._wait_until_ready(time.monotonic() + self.start_timeout)
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - started
        if not self._atexit_registered:
            atexit.register(self.stop)
            self._atexit_registered = True
        return self

    def _create_nodes(self, java: str, jars: list[Path]) -> None:
        self.workdir = Path(tempfile.mkdtemp(prefix=f"staticconsumer-cluster-{self.version}-"))
        if self.fault_proxies:
            self._proxy_loop = ProxyLoop()
        ports = free_ports(3 * self.node_count)
        for index in range(self.node_count):
            node_id = index + 1
            client, internal, controller = ports[3 * index : 3 * index + 3]
            jvm = KafkaProcess(java, jars, self.workdir / f"node-{node_id}", self.version, self.settings.heap)
            node = ClusterNode(node_id, client, internal, controller, jvm)
            if self._proxy_loop is not None:
                node.proxy = FaultProxy(
                    "127.0.0.1", client, loop=self._proxy_loop, name=f"node-{node_id}-proxy"
                ).start()
            self.nodes[node_id] = node
        voters = ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in self.nodes.values())
        for node in self.nodes.values():
            node.jvm.write_properties(self._properties(node, voters))
            node.jvm.format(self.cluster_id)

    def _properties(self, node: ClusterNode, voters: str) -> dict[str, str]:
        props = {
            "process.roles": "broker,controller",
            "node.id": str(node.node_id),
            "controller.quorum.voters": voters,
            "listeners": (
                f"CLIENT://127.0.0.1:{node.client_port},INTERNAL://127.0.0.1:{node.internal_port},"
                f"CONTROLLER://127.0.0.1:{node.controller_port}"
            ),
            "advertised.listeners": (
                f"CLIENT://127.0.0.1:{node.advertised_port},INTERNAL://127.0.0.1:{node.internal_port}"
            ),
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "INTERNAL",
            "listener.security.protocol.map": "CLIENT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(node.jvm.workdir / "data"),
            **self.settings.common_properties(self.replication_factor, self.min_insync_replicas),
            "min.insync.replicas": str(self.min_insync_replicas),
            "broker.heartbeat.interval.ms": "1000",
            "broker.session.timeout.ms": "6000",
            "auto.leader.rebalance.enable": "false",
        }
        props.update(self.settings.extra)
        return props

    def stop(self) -> None:
        """Terminate every node (all at once, SIGKILL after 15 s), close the proxies, remove the directory."""
        for node in self.nodes.values():
            node.jvm.send_terminate()
        for node in self.nodes.values():
            node.jvm.terminate(timeout=15)
        for proxy in self.proxies:
            with contextlib.suppress(Exception):
                proxy.close()
        if self._proxy_loop is not None:
            self._proxy_loop.close()
            self._proxy_loop = None
        if self.workdir is not None and not keep_directories():
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None
        self.nodes = {}

    @property
    def running(self) -> bool:
        return bool(self.nodes) and all(node.running for node in self.nodes.values())

    def log_tail(self, node_id: int, lines: int = 40) -> str:
        return self.node(node_id).jvm.log_tail(lines)

    # -- node faults -------------------------------------------------------------------------------

    def stop_node(self, node_id: int) -> None:
        """SIGTERM: a controlled shutdown (leadership moves away first), then wait for the exit."""
        self.node(node_id).jvm.terminate()

    def kill_node(self, node_id: int) -> None:
        """SIGKILL: the node vanishes mid-request; the controller fences it after its session (6 s)."""
        self.node(node_id).jvm.kill()

    def start_node(self, node_id: int, timeout: float = 120.0) -> None:
        """Start a stopped node on its old data; returns once it is registered and back in sync."""
        node = self.node(node_id)
        node.jvm.start()
        deadline = time.monotonic() + timeout
        self._wait_for_port(node, deadline)
        self._until(deadline, lambda: node_id in self.registered_brokers(), f"node {node_id} registered")
        self._until(deadline, lambda: self._in_sync_everywhere(node_id), f"node {node_id} back in every ISR")

    def restart_node(self, node_id: int, *, kill: bool = False, down_seconds: float = 0.0) -> None:
        """Stop (or kill) a node, leave it down ``down_seconds``, and start it again."""
        if kill:
            self.kill_node(node_id)
        else:
            self.stop_node(node_id)
        time.sleep(down_seconds)
        self.start_node(node_id)

    def wait_until_fenced(self, node_id: int, timeout: float = 60.0) -> None:
        """Until metadata no longer lists the node and it leads no partition any more."""
        deadline = time.monotonic() + timeout
        self._until(
            deadline,
            lambda: node_id not in self.registered_brokers() and node_id not in self._leaders(),
            f"node {node_id} fenced and its leaderships moved",
        )

    def elect_preferred_leaders(self) -> int:
        """Give every partition back to its preferred (first) replica, as after a rolling restart done
        right; returns how many partitions moved. Automatic rebalancing is off in this cluster, so a
        node that came back leads nothing until this runs."""
        return elect_preferred_leaders(self._live_internal_bootstrap())

    # -- what tests ask ----------------------------------------------------------------------------

    def find_coordinator(self, group: str) -> int:
        """The node the cluster names as ``group``'s coordinator now (FindCoordinator, past any fault)."""
        return run_coroutine_blocking(lambda: find_coordinator(self._live_internal_bootstrap(), group))

    def offsets_partition(self, group: str) -> int:
        return offsets_partition_for(group, self.settings.offsets_topic_partitions)

    def leader(self, topic: str, partition: int) -> int:
        """The leader of one partition as metadata shows it now (-1 while none)."""
        for entry in self.describe_topics([topic]):
            for described in entry["partitions"]:
                if described["partition"] == partition:
                    return int(described["leader"])
        raise KeyError(f"{topic}-{partition} not in metadata")

    def registered_brokers(self) -> set[int]:
        """Ids of the brokers in metadata now (registered and not fenced)."""
        return run_coroutine_blocking(self._registered_brokers)

    async def _registered_brokers(self) -> set[int]:
        async with self._admin() as admin:
            cluster = await admin.describe_cluster()
        return {int(broker["node_id"]) for broker in cluster["brokers"]}

    def describe_topics(self, topics: list[str] | None = None) -> list[dict[str, Any]]:
        """aiokafka's topic descriptions (leader, replicas, isr per partition), internal topics included."""

        async def describe() -> list[dict[str, Any]]:
            async with self._admin() as admin:
                described: list[dict[str, Any]] = await admin.describe_topics(topics)
            return described

        return run_coroutine_blocking(describe)

    # -- topics ------------------------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int | None = None) -> None:
        """Create a topic (RF ``min(3, nodes)`` by default); returns when every replica is in sync."""
        rf = replication_factor or self.replication_factor
        run_coroutine_blocking(
            lambda: create_topics(self._live_internal_bootstrap(), {name: partitions}, replication_factor=rf)
        )

    def add_partitions(self, name: str, total: int) -> None:
        run_coroutine_blocking(
            lambda: add_partitions(
                self._live_internal_bootstrap(), name, total, replication_factor=self._live_replicas()
            )
        )

    # -- readiness ---------------------------------------------------------------------------------

    def _live_internal_bootstrap(self) -> str:
        live = [node.internal_address for node in self.nodes.values() if node.running]
        if not live:
            raise RuntimeError("no node of the cluster is running")
        return ",".join(live)

    def _live_replicas(self) -> int:
        return min(self.replication_factor, sum(node.running for node in self.nodes.values()))

    @contextlib.asynccontextmanager
    async def _admin(self) -> Any:
        from aiokafka.admin import AIOKafkaAdminClient

        admin = AIOKafkaAdminClient(
            bootstrap_servers=self._live_internal_bootstrap(), request_timeout_ms=10_000
        )
        await admin.start()
        try:
            yield admin
        finally:
            await admin.close()

    def _raise_if_dead(self) -> None:
        for node in self.nodes.values():
            node.jvm.raise_if_dead(f"during start of node {node.node_id}")

    def _wait_for_port(self, node: ClusterNode, deadline: float) -> None:
        while port_is_free(node.client_port) or port_is_free(node.internal_port):
            node.jvm.raise_if_dead(f"during start of node {node.node_id}")
            if time.monotonic() > deadline:
                raise BrokerStartError(
                    f"node {node.node_id} of Kafka {self.version} did not listen in time; log tail:\n"
                    f"{node.jvm.log_tail()}"
                )
            time.sleep(0.2)

    def _until(self, deadline: float, check: Callable[[], bool], what: str) -> None:
        last_error: Exception | None = None
        while True:
            for node in self.nodes.values():
                if node.jvm.process is not None:
                    node.jvm.raise_if_dead(f"while waiting for {what}")
            try:
                if check():
                    return
            except Exception as error:  # not there yet: metadata or admin requests fail meanwhile
                last_error = error
            if time.monotonic() > deadline:
                logs = "\n".join(f"-- node {n.node_id}:\n{n.jvm.log_tail(15)}" for n in self.nodes.values())
                raise BrokerStartError(
                    f"Kafka {self.version} cluster: not within the time allowed: {what} "
                    f"(last error: {last_error!r}); log tails:\n{logs}"
                )
            time.sleep(0.3)

    def _wait_until_ready(self, deadline: float) -> None:
        for node in self.nodes.values():
            self._wait_for_port(node, deadline)
        everyone = set(self.nodes)
        self._until(deadline, lambda: self.registered_brokers() >= everyone, "every node registered")
        self._until(deadline, self._probe_topic_served, "a probe topic served with every replica in sync")
        for node in self.nodes.values():  # through each client listener (and proxy): the clients' path
            self._until(
                deadline,
                lambda node=node: self._offsets_loaded_through(node),  # type: ignore[misc]
                f"every offsets partition loaded, asked through node {node.node_id}",
            )
        self._until(deadline, lambda: self._fully_replicated(OFFSETS_TOPIC), f"{OFFSETS_TOPIC} in sync")

    def _probe_topic_served(self) -> bool:
        run_coroutine_blocking(
            lambda: create_topics(
                self.internal_bootstrap_servers,
                {READY_TOPIC: self.node_count},
                replication_factor=self.replication_factor,
            )
        )
        return True

    def _offsets_loaded_through(self, node: ClusterNode) -> bool:
        partitions = self.settings.offsets_topic_partitions
        run_coroutine_blocking(lambda: touch_probe_groups(node.address, partitions))
        return True

    def _leaders(self) -> set[int]:
        return {
            int(p["leader"])
            for entry in self.describe_topics()
            for p in entry["partitions"]
            if p["leader"] >= 0
        }

    def _fully_replicated(self, topic: str) -> bool:
        described = self.describe_topics([topic])
        return bool(described) and all(
            entry["error_code"] == 0
            and entry["partitions"]
            and all(p["leader"] >= 0 and len(p["isr"]) >= len(p["replicas"]) for p in entry["partitions"])
            for entry in described
        )

    def _in_sync_everywhere(self, node_id: int) -> bool:
        partitions = [p for entry in self.describe_topics() for p in entry["partitions"]]
        return bool(partitions) and all(node_id in p["isr"] for p in partitions if node_id in p["replicas"])

    def in_sync(self) -> Iterator[tuple[str, int, list[int]]]:
        """(topic, partition, isr) for every partition: what a test may print when a wait fails."""
        for entry in self.describe_topics():
            for p in entry["partitions"]:
                yield entry["topic"], int(p["partition"]), list(p["isr"])

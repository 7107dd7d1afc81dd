"""A real, single-node KRaft Kafka broker on loopback, for tests and demos.

``EmbeddedKafka`` resolves the broker's jars from Maven Central once (see ``_jars``), formats KRaft
storage in a temporary directory and runs a combined broker+controller JVM on free loopback ports. It
waits until the broker answers ApiVersions and can create a topic, and always cleans up: the JVM is
terminated (then killed), it dies with its parent process, and the temporary directory is removed.

The pieces live in their own modules (``launcher``: versions, Java, ports, the JVM; ``security``: SASL
and ACLs; ``tls``: a throwaway CA and the broker's keystore; ``topics``: topic admin; ``probe``:
ApiVersions and coordinators; ``external``: an existing cluster); their public names stay importable
from here. Several nodes: ``cluster.EmbeddedKafkaCluster``.

Environment:
  STATICCONSUMER_KAFKA_VERSION    which pinned version to launch (default ``DEFAULT_VERSION``; ``3.9``
                                  or ``4`` pick the newest pinned release of that line)
  STATICCONSUMER_KAFKA_BOOTSTRAP  existing bootstrap servers: skip the launch and use that cluster
"""

from __future__ import annotations

import atexit
import shutil
import ssl
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from staticconsumer.testing._jars import broker_classpath
from staticconsumer.testing.errors import BrokerStartError, PortInUseError
from staticconsumer.testing.external import BOOTSTRAP_ENV, ExternalKafka, external_bootstrap
from staticconsumer.testing.launcher import (
    DEFAULT_VERSION,
    OLD_COORDINATOR_VERSION,
    PINNED_VERSIONS,
    VERSION_ENV,
    KafkaProcess,
    find_java,
    free_port,
    java_major_version,
    keep_directories,
    new_cluster_id,
    port_is_free,
    resolve_version,
    run_coroutine_blocking,
)
from staticconsumer.testing.probe import (
    API_NAMES,
    broker_api_versions,
    java_string_hash,
    kafka_abs,
    offsets_partition_for,
    probe_groups,
)
from staticconsumer.testing.security import SASL_MECHANISMS, STANDARD_AUTHORIZER, SaslSettings, SaslUsers
from staticconsumer.testing.tls import TlsMaterial, tls_material
from staticconsumer.testing.topics import add_partitions, create_acls, create_topics

__all__ = [
    "API_NAMES",
    "BOOTSTRAP_ENV",
    "DEFAULT_VERSION",
    "OLD_COORDINATOR_VERSION",
    "PINNED_VERSIONS",
    "SASL_MECHANISMS",
    "STANDARD_AUTHORIZER",
    "VERSION_ENV",
    "BrokerSettings",
    "EmbeddedKafka",
    "ExternalKafka",
    "SaslSettings",
    "add_partitions",
    "broker_api_versions",
    "create_acls",
    "create_topics",
    "external_bootstrap",
    "find_java",
    "free_port",
    "java_major_version",
    "java_string_hash",
    "kafka_abs",
    "new_cluster_id",
    "offsets_partition_for",
    "port_is_free",
    "probe_groups",
    "resolve_version",
    "run_coroutine_blocking",
]

READY_TOPIC = "__staticconsumer_ready"


@dataclass
class BrokerSettings:
    """Broker settings that keep tests fast and honest; ``extra`` overrides or adds any property."""

    group_initial_rebalance_delay_ms: int = 0
    group_min_session_timeout_ms: int = 500
    group_max_session_timeout_ms: int = 1_800_000
    offsets_topic_partitions: int = 3
    heap: str = "1g"
    extra: Mapping[str, str] = field(default_factory=dict)
    sasl: SaslSettings | None = None
    tls: bool = False
    """Also listen with TLS: SSL on ``EmbeddedKafka.tls_port`` and, with ``sasl``, SASL_SSL on
    ``sasl_ssl_port``. The first port and everything the helpers do on it stay as without TLS."""

    def common_properties(self, replication_factor: int, min_isr: int) -> dict[str, str]:
        """The properties every node shares, with internal topics replicated ``replication_factor`` times."""
        rf, isr = str(replication_factor), str(min_isr)
        return {
            "num.partitions": "1",
            "default.replication.factor": rf,
            "offsets.topic.replication.factor": rf,
            "offsets.topic.num.partitions": str(self.offsets_topic_partitions),
            "transaction.state.log.replication.factor": rf,
            "transaction.state.log.min.isr": isr,
            "share.coordinator.state.topic.replication.factor": rf,
            "share.coordinator.state.topic.min.isr": isr,
            "group.initial.rebalance.delay.ms": str(self.group_initial_rebalance_delay_ms),
            "group.min.session.timeout.ms": str(self.group_min_session_timeout_ms),
            "group.max.session.timeout.ms": str(self.group_max_session_timeout_ms),
            "auto.create.topics.enable": "false",
            "log.flush.interval.messages": "100000",
        }


class EmbeddedKafka:
    """One KRaft broker+controller JVM on loopback. Use as a context manager or call start()/stop()."""

    def __init__(
        self,
        version: str | None = None,
        settings: BrokerSettings | None = None,
        *,
        port: int | None = None,
        start_timeout: float = 90.0,
    ) -> None:
        self.version = resolve_version(version)
        self.settings = settings or BrokerSettings()
        self.requested_port = port
        self.start_timeout = start_timeout
        self.port = 0
        self.controller_port = 0
        self.tls_port = 0
        self.sasl_ssl_port = 0
        self.workdir: Path | None = None
        self.resolve_seconds = 0.0
        self.start_seconds = 0.0
        self._jvm: KafkaProcess | None = None
        self._atexit_registered = False
        self._users = SaslUsers(self.settings.sasl)
        self._tls: TlsMaterial | None = None

    # -- lifecycle ------------------------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        assert self.workdir is not None
        return self.workdir / "broker.log"

    @property
    def process(self) -> Any:
        """The JVM's ``subprocess.Popen`` while it runs, else None."""
        return None if self._jvm is None else self._jvm.process

    def __enter__(self) -> EmbeddedKafka:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> EmbeddedKafka:
        """Launch and wait until ready; retries once on a port race with another process."""
        if self.requested_port is not None and not port_is_free(self.requested_port):
            raise PortInUseError(f"port {self.requested_port} on 127.0.0.1 is already in use")
        java = find_java(self.version)
        jars, self.resolve_seconds = broker_classpath(self.version)
        started = time.monotonic()
        attempts = 1 if self.requested_port is not None else 3
        for attempt in range(attempts):
            try:
                self._launch(java, jars)
                self._wait_until_ready()
                break
            except BrokerStartError as error:
                port_race = "Address already in use" in str(error)
                self.stop()
                if not port_race or attempt == attempts - 1:
                    if port_race:
                        raise PortInUseError(str(error)) from None
                    raise
        self.start_seconds = time.monotonic() - started
        if not self._atexit_registered:
            atexit.register(self.stop)
            self._atexit_registered = True
        return self

    def _properties(self) -> dict[str, str]:
        assert self.workdir is not None
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.workdir / "data"),
            **self.settings.common_properties(replication_factor=1, min_isr=1),
        }
        if self.settings.sasl is not None:
            props.update(
                self._users.broker_properties(
                    "SASL_PLAINTEXT", f"127.0.0.1:{self.port}", f"127.0.0.1:{self.controller_port}"
                )
            )
        if self.settings.tls:
            self._add_tls_listener(props)
        props.update(self.settings.extra)
        return props

    def _add_tls_listener(self, props: dict[str, str]) -> None:
        """An SSL client listener on ``tls_port`` and, with SASL, a SASL_SSL one with the same users on
        ``sasl_ssl_port`` (an SSL client presents no certificate: it is User:ANONYMOUS, a super user)."""
        assert self._tls is not None
        props.update(self._tls.broker_properties())
        endpoints = [f"SSL://127.0.0.1:{self.tls_port}"]
        props["listener.security.protocol.map"] += ",SSL:SSL"
        if self.sasl_enabled:
            props.update(self._users.listener_logins("SASL_SSL"))
            endpoints.append(f"SASL_SSL://127.0.0.1:{self.sasl_ssl_port}")
            props["listener.security.protocol.map"] += ",SASL_SSL:SASL_SSL"
        props["listeners"] += "," + ",".join(endpoints)
        props["advertised.listeners"] += "," + ",".join(endpoints)

    # -- security -------------------------------------------------------------------------------

    @property
    def sasl_enabled(self) -> bool:
        return self.settings.sasl is not None

    def sasl_settings(self, user: str | None = None, mechanism: str = "PLAIN") -> dict[str, Any]:
        """``Settings`` fields (``security_protocol``, ``sasl_*``) to connect as ``user`` (default: the
        super user); for OAUTHBEARER an unsecured ``sasl_oauth_token_provider`` naming ``user``. Empty
        for a PLAINTEXT broker. Holds the password: pass it on, never log it."""
        return self._users.settings(user, mechanism)

    def client_kwargs(self, user: str | None = None, mechanism: str = "PLAIN") -> dict[str, Any]:
        """aiokafka client keyword arguments for ``user`` (default: the super user); empty for PLAINTEXT."""
        return self._users.client_kwargs(user, mechanism)

    def tls_bootstrap_servers(self, sasl: bool = False) -> str:
        """The SSL listener, or with ``sasl`` the SASL_SSL one (``BrokerSettings(tls=True)``, and ``sasl``
        for SASL_SSL); the broker's certificate names localhost and 127.0.0.1."""
        self._require_tls()
        if not sasl:
            return f"127.0.0.1:{self.tls_port}"
        if not self.sasl_enabled:
            raise ValueError("this broker has no SASL_SSL listener: give BrokerSettings both tls and sasl")
        return f"127.0.0.1:{self.sasl_ssl_port}"

    @property
    def ca_file(self) -> Path:
        """PEM file of the throwaway CA that signed the broker's certificate (for ``ssl_ca_location``)."""
        return self._require_tls().ca_file

    def ssl_context(self) -> ssl.SSLContext:
        """A new client ``ssl.SSLContext`` that trusts the broker's CA (for aiokafka's ``ssl_context=``)."""
        return self._require_tls().client_context()

    def tls_settings(
        self, user: str | None = None, mechanism: str = "PLAIN", *, sasl: bool = False
    ) -> dict[str, Any]:
        """``Settings`` fields for the SSL listener by our own names (``bootstrap_servers``,
        ``security_protocol``, ``ssl_ca_location``); with ``sasl``, the SASL_SSL listener and ``sasl_*``
        for ``user`` (default: the super user). Holds the password: pass it on, never log it."""
        fields: dict[str, Any] = {**self.sasl_settings(user, mechanism)} if sasl else {}
        fields.update(
            bootstrap_servers=self.tls_bootstrap_servers(sasl),
            security_protocol="SASL_SSL" if sasl else "SSL",
            ssl_ca_location=str(self.ca_file),
        )
        return fields

    def tls_client_kwargs(
        self, user: str | None = None, mechanism: str = "PLAIN", *, sasl: bool = False
    ) -> dict[str, Any]:
        """aiokafka's keywords for the SSL listener (``bootstrap_servers``, ``security_protocol``,
        ``ssl_context``); with ``sasl``, the SASL_SSL listener and ``sasl_mechanism``/``sasl_plain_*``."""
        kwargs = self.client_kwargs(user, mechanism) if sasl else {}
        kwargs.update(
            bootstrap_servers=self.tls_bootstrap_servers(sasl),
            security_protocol="SASL_SSL" if sasl else "SSL",
            ssl_context=self.ssl_context(),
        )
        return kwargs

    def _require_tls(self) -> TlsMaterial:
        if not self.settings.tls:
            raise ValueError("this broker has no TLS listener: start it with BrokerSettings(tls=True)")
        if self._tls is None:
            raise ValueError("the broker is not started: its TLS listener has no port yet")
        return self._tls

    def grant(
        self,
        principal: str,
        resource_type: str,
        resource_name: str,
        *operations: str,
        pattern: str = "LITERAL",
        host: str = "*",
    ) -> None:
        """Allow ``principal`` (``User:alice``) ``operations`` (READ, DESCRIBE, ALL, ...) on a topic,
        group or the cluster (``resource_name`` "kafka-cluster"), as the super user, through CreateAcls.
        The broker applies new ACLs asynchronously, within milliseconds on one node."""
        run_coroutine_blocking(
            lambda: create_acls(
                self.bootstrap_servers,
                [(principal, resource_type, resource_name, op, pattern, host) for op in operations],
                self.client_kwargs(),
            )
        )

    def _launch(self, java: str, jars: list[Path]) -> None:
        self.workdir = Path(tempfile.mkdtemp(prefix=f"staticconsumer-kafka-{self.version}-"))
        self.port = self.requested_port or free_port()
        self.controller_port = free_port()
        while self.controller_port == self.port:
            self.controller_port = free_port()
        if self.settings.tls:
            self._tls = tls_material(keytool_beside(java))
            taken = {self.port, self.controller_port}
            self.tls_port = _another_free_port(taken)
            if self.sasl_enabled:
                self.sasl_ssl_port = _another_free_port(taken | {self.tls_port})
        self._jvm = KafkaProcess(java, jars, self.workdir, self.version, self.settings.heap)
        self._jvm.write_properties(self._properties())
        self._jvm.format(new_cluster_id(), self._users.scram_arguments())
        self._jvm.start()

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            self._raise_if_dead("during start")
            if not port_is_free(self.port):
                try:
                    run_coroutine_blocking(lambda: self._create_topics_async({READY_TOPIC: 1}))
                    run_coroutine_blocking(self._group_coordinator_loaded)
                    return
                except Exception as error:  # not ready yet: ApiVersions or CreateTopics failed
                    last_error = error
            time.sleep(0.2)
        raise BrokerStartError(
            f"Kafka {self.version} did not become ready within {self.start_timeout:.0f}s "
            f"(last error: {last_error!r}); broker log tail:\n{self.log_tail()}"
        )

    async def _group_coordinator_loaded(self) -> None:
        """Touch one group per offsets-topic partition so none is still loading when tests start.

        Without this the first JoinGroup of a session may get COORDINATOR_LOAD_IN_PROGRESS: correct
        broker behaviour, but noise in tests that count requests on the wire.
        """
        await touch_probe_groups(
            self.bootstrap_servers, self.settings.offsets_topic_partitions, self.client_kwargs()
        )

    def _raise_if_dead(self, when: str) -> None:
        if self._jvm is not None:
            self._jvm.raise_if_dead(when)

    def log_tail(self, lines: int = 40) -> str:
        if self._jvm is None:
            return "(no log)"
        return self._jvm.log_tail(lines)

    def stop(self) -> None:
        """Terminate the JVM (SIGTERM, then SIGKILL after 20 s) and remove the temporary directory."""
        jvm, self._jvm = self._jvm, None
        if jvm is not None:
            jvm.terminate()
        if self.workdir is not None and not keep_directories():
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    @property
    def running(self) -> bool:
        return self._jvm is not None and self._jvm.running

    def shut_down(self, *, kill: bool = False) -> None:
        """Stop the broker's JVM but keep its ports and data, as an operator stopping a server does:
        :meth:`restart` brings the same broker back. ``kill``: SIGKILL (a crash) instead of SIGTERM
        (a controlled shutdown)."""
        if self._jvm is None or not self._jvm.running:
            raise RuntimeError("the broker is not running: nothing to shut down")
        if kill:
            self._jvm.kill()
        else:
            self._jvm.terminate()

    def restart(self) -> EmbeddedKafka:
        """Start the broker stopped by :meth:`shut_down` again, on the same ports with the same data (its
        topics, committed offsets and groups), and wait until it is ready."""
        jvm = self._jvm
        if jvm is None:
            raise RuntimeError("the broker was never started (or was stopped for good): start() it")
        if jvm.running:
            raise RuntimeError("the broker is running: shut_down() it first")
        for port in (self.port, self.controller_port):
            if not port_is_free(port):
                raise PortInUseError(f"port {port} on 127.0.0.1 was taken while the broker was down")
        started = time.monotonic()
        jvm.start()
        self._wait_until_ready()
        self.start_seconds = time.monotonic() - started
        return self

    # -- topics ---------------------------------------------------------------------------------

    async def _create_topics_async(self, topics: Mapping[str, int]) -> None:
        await create_topics(self.bootstrap_servers, topics, client_kwargs=self.client_kwargs())

    def create_topic(self, name: str, partitions: int = 1) -> None:
        run_coroutine_blocking(
            lambda: create_topics(
                self.bootstrap_servers, {name: partitions}, client_kwargs=self.client_kwargs()
            )
        )

    def add_partitions(self, name: str, total: int) -> None:
        run_coroutine_blocking(
            lambda: add_partitions(self.bootstrap_servers, name, total, client_kwargs=self.client_kwargs())
        )


def _another_free_port(taken: set[int]) -> int:
    port = free_port()
    while port in taken:
        port = free_port()
    return port


def keytool_beside(java: str) -> str:
    """The keytool of the JDK that runs the broker, else whichever is on PATH."""
    candidate = Path(java).with_name("keytool")
    return str(candidate) if candidate.is_file() else "keytool"


async def touch_probe_groups(
    bootstrap_servers: str, offsets_partitions: int, client_kwargs: Mapping[str, Any] | None = None
) -> None:
    """OffsetFetch one group per offsets-topic partition: it answers only once that partition is loaded."""
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(
        bootstrap_servers=bootstrap_servers, request_timeout_ms=10_000, **(client_kwargs or {})
    )
    await admin.start()
    try:
        for group in probe_groups(offsets_partitions):
            await admin.list_consumer_group_offsets(group)
    finally:
        await admin.close()


if __name__ == "__main__":  # pragma: no cover - manual smoke: python -m staticconsumer.testing.broker
    with EmbeddedKafka(sys.argv[1] if len(sys.argv) > 1 else None) as kafka:
        print(f"Kafka {kafka.version} ready at {kafka.bootstrap_servers} in {kafka.start_seconds:.1f}s")

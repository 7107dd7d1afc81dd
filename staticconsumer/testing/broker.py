"""A real, single-node KRaft Kafka broker on loopback, for tests and demos.

``EmbeddedKafka`` resolves the broker's jars from Maven Central once (see ``_jars``), formats KRaft
storage in a temporary directory and runs a combined broker+controller JVM on free loopback ports. It
waits until the broker answers ApiVersions and can create a topic, and always cleans up: the JVM is
terminated (then killed), it dies with its parent process, and the temporary directory is removed.

Environment:
  STATICCONSUMER_KAFKA_VERSION    which pinned version to launch (default ``DEFAULT_VERSION``; ``3.9``
                                  or ``4`` pick the newest pinned release of that line)
  STATICCONSUMER_KAFKA_BOOTSTRAP  existing bootstrap servers: skip the launch and use that cluster
"""

from __future__ import annotations

import asyncio
import atexit
import base64
import concurrent.futures
import contextlib
import ctypes
import os
import re
import secrets
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from staticconsumer.testing._jars import broker_classpath
from staticconsumer.testing.errors import (
    BrokerStartError,
    JavaNotFoundError,
    PortInUseError,
)

DEFAULT_VERSION = "4.3.1"
"""Newest Kafka 4.x whose jars all resolve from Maven Central (4.4.0 lacks kafka-tools-api there)."""
OLD_COORDINATOR_VERSION = "3.9.2"
"""Newest 3.9.x: the last line with the old (pre-KIP-848) group coordinator."""
PINNED_VERSIONS = (DEFAULT_VERSION, OLD_COORDINATOR_VERSION)

VERSION_ENV = "STATICCONSUMER_KAFKA_VERSION"
BOOTSTRAP_ENV = "STATICCONSUMER_KAFKA_BOOTSTRAP"

_READY_TOPIC = "__staticconsumer_ready"
_T = TypeVar("_T")


def resolve_version(requested: str | None = None) -> str:
    """Map ``4``, ``4.x``, ``3.9``, a pinned version or nothing to a pinned version."""
    wanted = (requested or os.environ.get(VERSION_ENV) or DEFAULT_VERSION).strip()
    if wanted in PINNED_VERSIONS:
        return wanted
    for pinned in PINNED_VERSIONS:
        if pinned.startswith(wanted.rstrip(".x").rstrip(".") + "."):
            return pinned
    if re.fullmatch(r"\d+\.\d+\.\d+", wanted):
        return wanted  # an explicit unpinned release: allowed, resolved like any other
    raise ValueError(
        f"{VERSION_ENV}={wanted!r} is not a Kafka version; use one of {', '.join(PINNED_VERSIONS)} "
        f"or a line such as '4' or '3.9'"
    )


def java_major_version(java: str) -> int:
    result = subprocess.run([java, "-version"], capture_output=True, text=True, check=False)
    match = re.search(r'version "(\d+)(?:\.(\d+))?', result.stderr + result.stdout)
    if not match:
        raise JavaNotFoundError(f"could not read the Java version from {java} -version: {result.stderr!r}")
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def find_java(kafka_version: str) -> str:
    home = os.environ.get("JAVA_HOME")
    candidate = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not candidate or not Path(candidate).exists():
        raise JavaNotFoundError(
            "no 'java' found (JAVA_HOME or PATH); Kafka needs a JDK: apt-get install openjdk-17-jre-headless"
        )
    needed = 17 if int(kafka_version.split(".")[0]) >= 4 else 11
    major = java_major_version(candidate)
    if major < needed:
        raise JavaNotFoundError(
            f"Kafka {kafka_version} needs Java {needed}+, but {candidate} is Java {major}"
        )
    return candidate


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _die_with_parent() -> None:
    """Runs in the child before exec: the kernel kills the JVM if the Python process dies."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    pr_set_pdeathsig = 1
    libc.prctl(pr_set_pdeathsig, signal.SIGKILL)


def run_coroutine_blocking(factory: Callable[[], Awaitable[_T]]) -> _T:
    """Run a coroutine to completion from sync code, even when an event loop is already running here."""

    def runner() -> _T:
        async def main() -> _T:
            return await factory()

        return asyncio.run(main())

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(runner).result()


SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


@dataclass(frozen=True)
class SaslSettings:
    """A SASL_PLAINTEXT client listener with users, and Kafka's StandardAuthorizer (deny unless allowed).

    ``users`` maps user names to passwords; every user can log in with every mechanism in
    ``mechanisms`` (PLAIN from the listener's JAAS config, SCRAM credentials written at format time with
    the storage tool's ``--add-scram``). ``super_user`` gets a random password unless listed in
    ``users``; the broker uses it for itself and the helpers (topics, ACLs) use it too. With
    ``authorizer`` off, any authenticated user may do anything.
    """

    users: Mapping[str, str] = field(default_factory=dict)
    mechanisms: tuple[str, ...] = SASL_MECHANISMS
    super_user: str = "admin"
    authorizer: bool = True

    def __post_init__(self) -> None:
        unknown = [m for m in self.mechanisms if m not in SASL_MECHANISMS]
        if unknown or not self.mechanisms:
            raise ValueError(f"SASL mechanisms must be among {', '.join(SASL_MECHANISMS)}; got {unknown}")
        for name in [*self.users, self.super_user]:
            if not re.fullmatch(r"[A-Za-z0-9._-]+", name):
                raise ValueError(f"SASL user name {name!r}: use letters, digits, '.', '_' and '-' only")
        for name, password in self.users.items():
            # they go into a JAAS line and the storage tool's --add-scram syntax unescaped
            if not password or re.search(r'["\\,\[\]=\s]', password):
                raise ValueError(
                    f"password of SASL user {name!r}: non-empty, without quotes, , [ ] = or spaces"
                )


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
        self.workdir: Path | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.resolve_seconds = 0.0
        self.start_seconds = 0.0
        self._atexit_registered = False
        self._passwords: dict[str, str] = {}
        sasl = self.settings.sasl
        if sasl is not None:
            self._passwords = {sasl.super_user: secrets.token_urlsafe(18), **sasl.users}

    # -- lifecycle ------------------------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        assert self.workdir is not None
        return self.workdir / "broker.log"

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
        s = self.settings
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
            "num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": str(s.offsets_topic_partitions),
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": str(s.group_initial_rebalance_delay_ms),
            "group.min.session.timeout.ms": str(s.group_min_session_timeout_ms),
            "group.max.session.timeout.ms": str(s.group_max_session_timeout_ms),
            "auto.create.topics.enable": "false",
            "log.flush.interval.messages": "100000",
        }
        if s.sasl is not None:
            props.update(self._sasl_properties(s.sasl))
        props.update(s.extra)
        return props

    def _sasl_properties(self, sasl: SaslSettings) -> dict[str, str]:
        """Clients and the broker itself on SASL_PLAINTEXT (the broker as the super user over PLAIN);
        the controller listener stays PLAINTEXT on loopback, so the broker's controller connection is
        User:ANONYMOUS, which must be a super user for broker registration to be authorized."""
        listener = "sasl_plaintext"
        plain_users = " ".join(f'user_{name}="{password}"' for name, password in self._passwords.items())
        admin_password = self._passwords[sasl.super_user]
        props = {
            "listeners": f"SASL_PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"SASL_PLAINTEXT://127.0.0.1:{self.port}",
            "inter.broker.listener.name": "SASL_PLAINTEXT",
            "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
            "sasl.enabled.mechanisms": ",".join(dict.fromkeys(["PLAIN", *sasl.mechanisms])),
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            f"listener.name.{listener}.plain.sasl.jaas.config": (
                "org.apache.kafka.common.security.plain.PlainLoginModule required "
                f'username="{sasl.super_user}" password="{admin_password}" {plain_users};'
            ),
        }
        for mechanism in sasl.mechanisms:
            if mechanism.startswith("SCRAM-"):
                props[f"listener.name.{listener}.{mechanism.lower()}.sasl.jaas.config"] = (
                    "org.apache.kafka.common.security.scram.ScramLoginModule required;"
                )
        if sasl.authorizer:
            props["authorizer.class.name"] = STANDARD_AUTHORIZER
            props["allow.everyone.if.no.acl.found"] = "false"
            props["super.users"] = f"User:{sasl.super_user};User:ANONYMOUS"
        return props

    def _scram_arguments(self) -> list[str]:
        """``--add-scram`` for every user and SCRAM mechanism (the storage tool writes them at format)."""
        sasl = self.settings.sasl
        if sasl is None:
            return []
        arguments = []
        for mechanism in sasl.mechanisms:
            if mechanism.startswith("SCRAM-"):
                for name, password in self._passwords.items():
                    arguments += ["--add-scram", f"{mechanism}=[name={name},password={password}]"]
        return arguments

    # -- security -------------------------------------------------------------------------------

    @property
    def sasl_enabled(self) -> bool:
        return self.settings.sasl is not None

    def sasl_settings(self, user: str | None = None, mechanism: str = "PLAIN") -> dict[str, str]:
        """``Settings`` fields (``security_protocol``, ``sasl_*``) to connect as ``user`` (default: the
        super user). Empty for a PLAINTEXT broker. Holds the password: pass it on, never log it."""
        sasl = self.settings.sasl
        if sasl is None:
            return {}
        name = user or sasl.super_user
        if name not in self._passwords:
            raise KeyError(f"no SASL user {name!r} on this broker")
        if mechanism not in sasl.mechanisms and mechanism != "PLAIN":
            raise ValueError(f"{mechanism} is not enabled on this broker ({', '.join(sasl.mechanisms)})")
        return {
            "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": mechanism,
            "sasl_username": name,
            "sasl_password": self._passwords[name],
        }

    def client_kwargs(self, user: str | None = None, mechanism: str = "PLAIN") -> dict[str, Any]:
        """aiokafka client keyword arguments for ``user`` (default: the super user); empty for PLAINTEXT."""
        fields = self.sasl_settings(user, mechanism)
        if not fields:
            return {}
        return {
            "security_protocol": fields["security_protocol"],
            "sasl_mechanism": fields["sasl_mechanism"],
            "sasl_plain_username": fields["sasl_username"],
            "sasl_plain_password": fields["sasl_password"],
        }

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
        config = self.workdir / "server.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in self._properties().items()))
        classpath = os.pathsep.join(str(j) for j in jars)
        cluster_id = new_cluster_id()
        jvm_common = [
            java,
            "-Djava.awt.headless=true",
            "-Dorg.slf4j.simpleLogger.showDateTime=true",
            "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
            "-Dorg.slf4j.simpleLogger.log.org.apache.kafka.clients=warn",
            "-cp",
            classpath,
        ]
        format_command = [*jvm_common, "-Xmx256m", "kafka.tools.StorageTool", "format"]
        formatting = subprocess.run(
            [*format_command, "-t", cluster_id, "-c", str(config), *self._scram_arguments()],
            capture_output=True,
            text=True,
            check=False,
        )
        if formatting.returncode != 0:
            raise BrokerStartError(
                f"formatting KRaft storage failed (exit {formatting.returncode}):\n"
                + _tail(formatting.stdout + formatting.stderr)
            )
        log = self.log_path.open("wb")
        preexec = _die_with_parent if threading.current_thread() is threading.main_thread() else None
        try:
            self.process = subprocess.Popen(
                [
                    *jvm_common,
                    f"-Xmx{self.settings.heap}",
                    "-Xms256m",
                    "-XX:+UseSerialGC",
                    "-XX:+ExitOnOutOfMemoryError",
                    "kafka.Kafka",
                    str(config),
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=preexec,
                start_new_session=True,
            )
        finally:
            log.close()

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            self._raise_if_dead("during start")
            if not port_is_free(self.port):
                try:
                    run_coroutine_blocking(lambda: self._create_topics_async({_READY_TOPIC: 1}))
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
        from aiokafka.admin import AIOKafkaAdminClient

        admin = AIOKafkaAdminClient(
            bootstrap_servers=self.bootstrap_servers, request_timeout_ms=10_000, **self.client_kwargs()
        )
        await admin.start()
        try:
            for group in probe_groups(self.settings.offsets_topic_partitions):
                await admin.list_consumer_group_offsets(group)
        finally:
            await admin.close()

    def _raise_if_dead(self, when: str) -> None:
        if self.process is not None and self.process.poll() is not None:
            raise BrokerStartError(
                f"the Kafka {self.version} broker died {when} (exit {self.process.returncode}); "
                f"log tail ({self.log_path}):\n{self.log_tail()}"
            )

    def log_tail(self, lines: int = 40) -> str:
        if self.workdir is None or not self.log_path.exists():
            return "(no log)"
        return _tail(self.log_path.read_text(errors="replace"), lines)

    def stop(self) -> None:
        """Terminate the JVM (SIGTERM, then SIGKILL after 20 s) and remove the temporary directory."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
        if self.workdir is not None and os.environ.get("STATICCONSUMER_KEEP_BROKER_DIR") != "1":
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

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


def new_cluster_id() -> str:
    """A random Kafka cluster id: base64url of a UUID, never starting with "-".

    Like Kafka's Uuid.randomUuid(): the storage tool's argument parser would read a leading "-" as an
    option and refuse to format (one start in 64 failed that way before this).
    """
    while True:
        candidate = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not candidate.startswith("-"):
            return candidate


def java_string_hash(text: str) -> int:
    """Java's String.hashCode (over UTF-16 code units, int32 arithmetic)."""
    value = 0
    data = text.encode("utf-16-be")
    for index in range(0, len(data), 2):
        value = (31 * value + int.from_bytes(data[index : index + 2], "big")) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def offsets_partition_for(group: str, partitions: int) -> int:
    """The __consumer_offsets partition (and so the coordinator) of a group, as Kafka computes it."""
    return (java_string_hash(group) & 0x7FFFFFFF) % partitions


def probe_groups(partitions: int) -> list[str]:
    """One group name per offsets-topic partition."""
    found: dict[int, str] = {}
    index = 0
    while len(found) < partitions:
        name = f"__staticconsumer_probe_{index}"
        found.setdefault(offsets_partition_for(name, partitions), name)
        index += 1
    return [found[p] for p in sorted(found)]


def _tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


async def create_topics(
    bootstrap_servers: str,
    topics: Mapping[str, int],
    *,
    wait: bool = True,
    client_kwargs: Mapping[str, Any] | None = None,
) -> None:
    """Create topics (replication factor 1) and wait until their metadata shows every partition."""
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    admin = AIOKafkaAdminClient(
        bootstrap_servers=bootstrap_servers, request_timeout_ms=10_000, **(client_kwargs or {})
    )
    await admin.start()
    try:
        response: Any = await admin.create_topics(
            [NewTopic(name, partitions, 1) for name, partitions in topics.items()]
        )
        for topic_error in response.topic_errors:
            name, code = topic_error[0], topic_error[1]
            if code not in (0, 36):  # 36: TOPIC_ALREADY_EXISTS, fine for a ready probe
                raise RuntimeError(f"CreateTopics {name!r} failed with error code {code}: {topic_error}")
        if wait:
            await _wait_for_partitions(admin, dict(topics))
    finally:
        await admin.close()


async def add_partitions(
    bootstrap_servers: str, topic: str, total: int, *, client_kwargs: Mapping[str, Any] | None = None
) -> None:
    """Grow ``topic`` to ``total`` partitions and wait until metadata shows them."""
    from aiokafka.admin import AIOKafkaAdminClient, NewPartitions

    admin = AIOKafkaAdminClient(
        bootstrap_servers=bootstrap_servers, request_timeout_ms=10_000, **(client_kwargs or {})
    )
    await admin.start()
    try:
        await admin.create_partitions({topic: NewPartitions(total)})
        await _wait_for_partitions(admin, {topic: total})
    finally:
        await admin.close()


_ACL_RESOURCE_TYPES = {"TOPIC": 2, "GROUP": 3, "CLUSTER": 4, "TRANSACTIONAL_ID": 5}
_ACL_PATTERNS = {"LITERAL": 3, "PREFIXED": 4}
_ACL_OPERATIONS = {
    "ALL": 2,
    "READ": 3,
    "WRITE": 4,
    "CREATE": 5,
    "DELETE": 6,
    "ALTER": 7,
    "DESCRIBE": 8,
    "CLUSTER_ACTION": 9,
    "DESCRIBE_CONFIGS": 10,
    "ALTER_CONFIGS": 11,
    "IDEMPOTENT_WRITE": 12,
}
_ALLOW = 3


async def create_acls(
    bootstrap_servers: str,
    bindings: list[tuple[str, str, str, str, str, str]],
    client_kwargs: Mapping[str, Any] | None = None,
) -> None:
    """Create ALLOW ACLs, each ``(principal, resource type, resource name, operation, pattern, host)``
    with Kafka's names (``GROUP``, ``READ``, ``LITERAL``), through our CreateAcls (aiokafka has none)."""
    from staticconsumer import _aiokafka
    from staticconsumer.protocol import AclCreation, CreateAclsRequest, CreateAclsResponse

    creations = []
    for principal, resource_type, name, operation, pattern, host in bindings:
        try:
            creations.append(
                AclCreation(
                    _ACL_RESOURCE_TYPES[resource_type.upper()],
                    name,
                    _ACL_PATTERNS[pattern.upper()],
                    principal,
                    host,
                    _ACL_OPERATIONS[operation.upper()],
                    _ALLOW,
                )
            )
        except KeyError as error:
            raise ValueError(f"unknown ACL resource type, pattern or operation: {error}") from None
    client = _aiokafka.new_client(bootstrap_servers=bootstrap_servers, **(client_kwargs or {}))
    await client.bootstrap()
    try:
        exchange = await _aiokafka.send(
            client, _aiokafka.any_node(client), CreateAclsRequest(creations), coordination=False
        )
    finally:
        await client.close()
    failed = [r for r in exchange.response_as(CreateAclsResponse).results if r.error_code]
    if failed:
        raise RuntimeError(f"CreateAcls failed: {[(r.error_code, r.error_message) for r in failed]}")


async def _wait_for_partitions(admin: Any, expected: dict[str, int], within: float = 20.0) -> None:
    deadline = time.monotonic() + within
    while True:
        described = await admin.describe_topics(list(expected))
        counts = {
            entry["topic"]: len(entry["partitions"])
            for entry in described
            if entry["error_code"] == 0 and all(p["leader"] >= 0 for p in entry["partitions"])
        }
        if all(counts.get(name, 0) >= want for name, want in expected.items()):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"partitions not visible after {within}s: want {expected}, see {counts}")
        await asyncio.sleep(0.1)


def external_bootstrap() -> str | None:
    value = os.environ.get(BOOTSTRAP_ENV, "").strip()
    return value or None


class ExternalKafka:
    """An existing cluster named by STATICCONSUMER_KAFKA_BOOTSTRAP, with the same helpers as EmbeddedKafka."""

    def __init__(self, bootstrap_servers: str, version: str | None = None) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.version = version or os.environ.get(VERSION_ENV, "external")
        self.start_seconds = 0.0
        self.resolve_seconds = 0.0

    def create_topic(self, name: str, partitions: int = 1) -> None:
        run_coroutine_blocking(lambda: create_topics(self.bootstrap_servers, {name: partitions}))

    def add_partitions(self, name: str, total: int) -> None:
        run_coroutine_blocking(lambda: add_partitions(self.bootstrap_servers, name, total))

    def log_tail(self, lines: int = 40) -> str:
        return "(external cluster: no broker log here)"

    def stop(self) -> None:
        """Nothing to stop: the cluster is not ours."""


API_NAMES = {
    8: "OffsetCommit",
    9: "OffsetFetch",
    10: "FindCoordinator",
    11: "JoinGroup",
    12: "Heartbeat",
    13: "LeaveGroup",
    14: "SyncGroup",
    15: "DescribeGroups",
    16: "ListGroups",
    18: "ApiVersions",
}


def broker_api_versions(bootstrap_servers: str, timeout: float = 10.0) -> dict[int, tuple[int, int]]:
    """Ask the broker for its ApiVersions (v0, over a plain socket): {api key: (min, max)}.

    Deliberately independent of aiokafka and of our codec, so a test can compare the broker's view
    with the Java oracle's without either side's code in the middle.
    """
    host, _, port = bootstrap_servers.split(",")[0].rpartition(":")
    client_id = b"staticconsumer-probe"
    header = struct.pack(">hhih", 18, 0, 1, len(client_id)) + client_id
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(struct.pack(">i", len(header)) + header)
        size = struct.unpack(">i", _read_exactly(sock, 4))[0]
        payload = _read_exactly(sock, size)
    correlation_id, error_code, count = struct.unpack_from(">ihi", payload, 0)
    if correlation_id != 1 or error_code != 0:
        raise RuntimeError(f"ApiVersions failed: correlation {correlation_id}, error code {error_code}")
    versions: dict[int, tuple[int, int]] = {}
    for index in range(count):
        key, low, high = struct.unpack_from(">hhh", payload, 10 + 6 * index)
        versions[key] = (low, high)
    return versions


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            raise ConnectionError("broker closed the connection mid-response")
        chunks.extend(chunk)
    return bytes(chunks)


if __name__ == "__main__":  # pragma: no cover - manual smoke: python -m staticconsumer.testing.broker
    with EmbeddedKafka(sys.argv[1] if len(sys.argv) > 1 else None) as kafka:
        print(f"Kafka {kafka.version} ready at {kafka.bootstrap_servers} in {kafka.start_seconds:.1f}s")

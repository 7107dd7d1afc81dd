"""Launching Kafka JVMs: versions, Java, free ports, KRaft formatting and one broker process.

Shared by the single-node :class:`~staticconsumer.testing.broker.EmbeddedKafka` and the nodes of
:class:`~staticconsumer.testing.cluster.EmbeddedKafkaCluster`: both write a ``server.properties``, format
KRaft storage with Kafka's own StorageTool and run ``kafka.Kafka`` in a process that dies with its parent.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import contextlib
import ctypes
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

from staticconsumer.testing.errors import BrokerStartError, JavaNotFoundError

DEFAULT_VERSION = "4.3.1"
"""Newest Kafka 4.x whose jars all resolve from Maven Central (4.4.0 lacks kafka-tools-api there)."""
OLD_COORDINATOR_VERSION = "3.9.2"
"""Newest 3.9.x: the last line with the old (pre-KIP-848) group coordinator."""
PINNED_VERSIONS = (DEFAULT_VERSION, OLD_COORDINATOR_VERSION)

VERSION_ENV = "STATICCONSUMER_KAFKA_VERSION"
KEEP_DIR_ENV = "STATICCONSUMER_KEEP_BROKER_DIR"

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
    try:
        result = subprocess.run([java, "-version"], capture_output=True, text=True, check=False)
    except OSError as error:
        raise JavaNotFoundError(f"could not run {java} -version: {error}") from None
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


def free_ports(count: int) -> list[int]:
    """``count`` distinct free loopback ports (held open together while picking, so never repeated)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sockets.append(sock)
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


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


def new_cluster_id() -> str:
    """A random Kafka cluster id: base64url of a UUID, never starting with "-".

    Like Kafka's Uuid.randomUuid(): the storage tool's argument parser would read a leading "-" as an
    option and refuse to format (one start in 64 failed that way before this).
    """
    while True:
        candidate = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not candidate.startswith("-"):
            return candidate


def tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def keep_directories() -> bool:
    """``STATICCONSUMER_KEEP_BROKER_DIR=1`` keeps broker directories (data and logs) after stop."""
    return os.environ.get(KEEP_DIR_ENV) == "1"


class KafkaProcess:
    """One ``kafka.Kafka`` JVM with its properties file, KRaft storage and log in ``workdir``.

    The storage is formatted once (:meth:`format`); :meth:`start` may be called again after
    :meth:`terminate` or :meth:`kill` and finds its data as it was left, like a restarted server.
    """

    def __init__(self, java: str, jars: Sequence[Path], workdir: Path, version: str, heap: str) -> None:
        self.java = java
        self.classpath = os.pathsep.join(str(j) for j in jars)
        self.workdir = workdir
        self.version = version
        self.heap = heap
        self.process: subprocess.Popen[bytes] | None = None
        self.exit_codes: list[int] = []

    @property
    def config_path(self) -> Path:
        return self.workdir / "server.properties"

    @property
    def log_path(self) -> Path:
        return self.workdir / "broker.log"

    def _jvm(self) -> list[str]:
        return [
            self.java,
            "-Djava.awt.headless=true",
            "-Dorg.slf4j.simpleLogger.showDateTime=true",
            "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
            "-Dorg.slf4j.simpleLogger.log.org.apache.kafka.clients=warn",
            "-cp",
            self.classpath,
        ]

    def write_properties(self, properties: Mapping[str, str]) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in properties.items()))

    def format(self, cluster_id: str, extra_arguments: Sequence[str] = ()) -> None:
        """Format KRaft storage with Kafka's StorageTool (the same on every node of one cluster)."""
        command = [*self._jvm(), "-Xmx256m", "kafka.tools.StorageTool", "format"]
        formatting = subprocess.run(
            [*command, "-t", cluster_id, "-c", str(self.config_path), *extra_arguments],
            capture_output=True,
            text=True,
            check=False,
        )
        if formatting.returncode != 0:
            raise BrokerStartError(
                f"formatting KRaft storage failed (exit {formatting.returncode}):\n"
                + tail(formatting.stdout + formatting.stderr)
            )

    def start(self) -> None:
        """Start the JVM in its own session (so signals reach it alone), appending to its log."""
        if self.running:
            raise RuntimeError(f"Kafka in {self.workdir} is already running")
        log = self.log_path.open("ab")
        preexec = _die_with_parent if threading.current_thread() is threading.main_thread() else None
        try:
            self.process = subprocess.Popen(
                [
                    *self._jvm(),
                    f"-Xmx{self.heap}",
                    "-Xms128m",
                    "-XX:+UseSerialGC",
                    "-XX:+ExitOnOutOfMemoryError",
                    "kafka.Kafka",
                    str(self.config_path),
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=preexec,
                start_new_session=True,
            )
        finally:
            log.close()

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    def raise_if_dead(self, when: str) -> None:
        if self.process is not None and self.process.poll() is not None:
            raise BrokerStartError(
                f"the Kafka {self.version} broker died {when} (exit {self.process.returncode}); "
                f"log tail ({self.log_path}):\n{self.log_tail()}"
            )

    def log_tail(self, lines: int = 40) -> str:
        if not self.log_path.exists():
            return "(no log)"
        return tail(self.log_path.read_text(errors="replace"), lines)

    def terminate(self, timeout: float = 20.0) -> None:
        """SIGTERM (a controlled shutdown), then SIGKILL after ``timeout`` seconds."""
        self._signal(signal.SIGTERM)
        if self.process is not None:
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                self.process.wait(timeout=10)
        self._reap()

    def send_terminate(self) -> None:
        """SIGTERM without waiting (to stop several nodes at once, then :meth:`terminate` each)."""
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL: the process vanishes mid-request, as on a power cut or an OOM kill."""
        self._signal(signal.SIGKILL)
        if self.process is not None:
            self.process.wait(timeout=10)
        self._reap()

    def _signal(self, signum: int) -> None:
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signum)

    def _reap(self) -> None:
        if self.process is not None and self.process.returncode is not None:
            self.exit_codes.append(self.process.returncode)
        self.process = None

    def remove(self) -> None:
        """Delete the working directory (unless asked to keep it)."""
        if not keep_directories():
            shutil.rmtree(self.workdir, ignore_errors=True)

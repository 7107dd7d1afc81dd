"""Client for the Java oracle: Kafka's own message classes and assignors in one long-lived JVM.

Test code, never installed: the Maven module beside it (``tests/interop/java``) is in the repository
only. It is built once per Kafka version
into the cache (``<cache>/oracle/<version>-<source hash>``) and started once per test session. See
docs/java-oracle.md for the request format.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from staticconsumer._maven import cache_root, file_lock
from staticconsumer.testing._jars import find_maven
from staticconsumer.testing.broker import find_java, resolve_version
from staticconsumer.testing.errors import OracleError

MODULE_ENV = "STATICCONSUMER_ORACLE_DIR"
_MAIN_CLASS = "io.staticconsumer.oracle.Oracle"


def find_module_dir() -> Path:
    """``$STATICCONSUMER_ORACLE_DIR``, else ``tests/interop/java`` above the cwd or this file."""
    explicit = os.environ.get(MODULE_ENV)
    if explicit:
        return Path(explicit)
    for start in (Path.cwd(), Path(__file__).resolve()):
        for folder in (start, *start.parents):
            candidate = folder / "tests" / "interop" / "java"
            if (candidate / "pom.xml").exists():
                return candidate
    raise OracleError(
        f"the Java oracle's Maven module (tests/interop/java) was not found; run from the repository "
        f"or set {MODULE_ENV}"
    )


def _source_hash(module: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted([module / "pom.xml", *module.glob("src/**/*.java")]):
        digest.update(path.relative_to(module).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def build_oracle(kafka_version: str, module: Path | None = None) -> Path:
    """Compile the module against kafka-clients ``kafka_version``; reuse the cached build if sources match."""
    module = module or find_module_dir()
    out = cache_root() / "oracle" / f"{kafka_version}-{_source_hash(module)}"
    with file_lock(out.with_name(out.name + ".lock")):
        if (out / ".complete").exists():
            return out
        command = [
            find_maven(),
            "-B",
            "-q",
            "-f",
            str(module / "pom.xml"),
            "package",
            f"-Dkafka.version={kafka_version}",
            f"-Doracle.build.dir={out}",
        ]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            lines = (result.stdout + result.stderr).strip().splitlines()
            raise OracleError(
                f"building the Java oracle for kafka-clients {kafka_version} failed (exit "
                f"{result.returncode}):\n" + "\n".join(lines[-20:])
            )
        (out / ".complete").write_text(kafka_version + "\n")
        return out


class JavaOracle:
    """One JVM answering JSON requests; safe to share between threads (requests are serialised)."""

    def __init__(self, process: subprocess.Popen[str], kafka_version: str) -> None:
        self._process = process
        self._lock = threading.Lock()
        self._next_id = 0
        self.kafka_version = kafka_version

    @classmethod
    def start(cls, kafka_version: str | None = None, module: Path | None = None) -> JavaOracle:
        version = resolve_version(kafka_version)
        build = build_oracle(version, module)
        classpath = os.pathsep.join([str(build / "classes"), str(build / "lib" / "*")])
        process = subprocess.Popen(
            [find_java(version), "-Xss4m", "-cp", classpath, _MAIN_CLASS],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
        assert process.stdout is not None
        ready = process.stdout.readline()
        if not ready:
            raise OracleError(f"the Java oracle exited at start (exit {process.wait()})")
        reported = json.loads(ready).get("kafkaVersion")
        return cls(process, str(reported))

    def __enter__(self) -> JavaOracle:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        if self._process.poll() is None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()

    def request(self, op: str, **fields: Any) -> Any:
        """Send one request and return its ``result``; raise OracleError with Java's message on refusal."""
        with self._lock:
            self._next_id += 1
            message = {"id": self._next_id, "op": op, **fields}
            assert self._process.stdin is not None
            assert self._process.stdout is not None
            try:
                self._process.stdin.write(json.dumps(message) + "\n")
                self._process.stdin.flush()
            except BrokenPipeError as error:
                raise OracleError(f"the Java oracle is gone (exit {self._process.poll()})") from error
            line = self._process.stdout.readline()
        if not line:
            raise OracleError(f"the Java oracle died answering {op} (exit {self._process.poll()})")
        answer = json.loads(line)
        if not answer.get("ok"):
            raise OracleError(f"oracle {op} refused: {answer.get('error')}")
        return answer["result"]

    def encode(self, api: str, kind: str, version: int, fields: Mapping[str, Any]) -> bytes:
        """Body bytes (for kind 'payload': version-prefixed) of the message Java builds from ``fields``."""
        result = self.request("encode", api=api, kind=kind, version=version, fields=dict(fields))
        return bytes.fromhex(result["body"])

    def encode_with_header(
        self,
        api: str,
        kind: str,
        version: int,
        fields: Mapping[str, Any],
        *,
        correlation_id: int = 1,
        client_id: str | None = "oracle",
    ) -> bytes:
        """Header plus body, as on the wire after the 4-byte size."""
        result = self.request(
            "encode",
            api=api,
            kind=kind,
            version=version,
            fields=dict(fields),
            correlationId=correlation_id,
            clientId=client_id,
        )
        return bytes.fromhex(result["withHeader"])

    def decode(self, api: str, kind: str, version: int, data: bytes) -> dict[str, Any]:
        result = self.request("decode", api=api, kind=kind, version=version, hex=data.hex())
        fields: dict[str, Any] = result["fields"]
        return fields

    def api_versions(self) -> dict[str, tuple[int, int]]:
        result = self.request("apiVersions")
        return {name: (int(low), int(high)) for name, (low, high) in result.items()}

    def assign(
        self,
        assignor: str,
        members: Sequence[Mapping[str, Any]],
        topics: Mapping[str, Sequence[Mapping[str, Any]]],
    ) -> dict[str, Any]:
        result: dict[str, Any] = self.request(
            "assign", assignor=assignor, members=list(members), topics=dict(topics)
        )
        return result

    def subscription_user_data(
        self, assignor: str, topics: Sequence[str], assigned: Sequence[tuple[str, int]], generation: int
    ) -> bytes | None:
        result = self.request(
            "subscriptionUserData",
            assignor=assignor,
            topics=list(topics),
            assigned=[list(tp) for tp in assigned],
            generation=generation,
        )
        data = result["userData"]
        return None if data is None else base64.b64decode(data)


class JavaPeerConsumer:
    """A Java KafkaConsumer (kafka-clients at ``kafka_version``) running as a live group member.

    Its JSON-lines report (assigned with generation, first_record, records, revoked, lost, fenced,
    stopped) is collected in ``events``. Options are PeerConsumer's key=value arguments: bootstrap,
    group, topics, instance, assignor, session_ms, heartbeat_ms, metadata_max_age_ms,
    auto_offset_reset, commit.
    """

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.events: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    @classmethod
    def start(cls, kafka_version: str | None = None, **options: str | int) -> JavaPeerConsumer:
        version = resolve_version(kafka_version)
        build = build_oracle(version)
        classpath = os.pathsep.join([str(build / "classes"), str(build / "lib" / "*")])
        arguments = [f"{key}={value}" for key, value in options.items()]
        process = subprocess.Popen(
            [
                find_java(version),
                "-Xmx256m",
                "-cp",
                classpath,
                "io.staticconsumer.oracle.PeerConsumer",
                *arguments,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
        )
        return cls(process)

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            try:
                self.events.append(json.loads(line))
            except json.JSONDecodeError:
                continue

    def first(self, event: str) -> dict[str, Any] | None:
        return next((e for e in self.events if e["e"] == event), None)

    def last(self, event: str) -> dict[str, Any] | None:
        return next((e for e in reversed(self.events) if e["e"] == event), None)

    def assignment(self) -> set[tuple[str, int]]:
        """What it owns now, folding its callbacks: eager members revoke everything and are assigned
        everything, cooperative ones (KIP-429) are told only what is added or removed."""
        owned: set[tuple[str, int]] = set()
        for event in list(self.events):
            changed = {(topic, partition) for topic, partition in event.get("partitions", [])}
            if event["e"] == "assigned":
                owned |= changed
            elif event["e"] in ("revoked", "lost"):
                owned -= changed
        return owned

    def stop(self, timeout: float = 30.0) -> int:
        """close() as an application would (a static member sends no LeaveGroup), and wait."""
        if self.process.poll() is None and self.process.stdin is not None:
            try:
                self.process.stdin.write("stop\n")
                self.process.stdin.flush()
            except BrokenPipeError:
                pass
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        self._reader.join(timeout=5)
        return code

"""A group of static members, each in its own process (:mod:`staticconsumer.testing.member`), whose
reports feed a :class:`~staticconsumer.testing.ledger.Ledger`; members can be killed and restarted.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from staticconsumer.testing.ledger import Ledger


@dataclass
class MemberSpec:
    """How every member of a fleet runs (see ``python -m staticconsumer.testing.member --help``)."""

    session_ms: int = 10_000
    heartbeat_ms: int = 1_000
    max_poll_ms: int = 300_000
    request_timeout_ms: int = 30_000
    process_ms: int = 0
    extra_env: dict[str, str] = field(default_factory=dict)
    group_protocol: str = "classic"
    """``consumer``: KIP-848 (``session_ms`` and ``heartbeat_ms`` are then the broker's, not sent)."""


class MemberProcess:
    """One member process; its JSON-lines report is read on a thread into ``events`` and the ledger."""

    def __init__(self, fleet: Fleet, instance: str) -> None:
        self.fleet = fleet
        self.instance = instance
        self.events: list[dict[str, Any]] = []
        self.incarnations = 0
        self.process: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def client_id(self) -> str:
        """The member's client.id, as the SDK derives it (what fault proxies select connections by)."""
        return f"consumer-{self.fleet.group}-{self.instance}"

    def start(self) -> None:
        spec = self.fleet.spec
        command = [
            sys.executable,
            "-m",
            "staticconsumer.testing.member",
            "--bootstrap",
            self.fleet.bootstrap_servers,
            "--group",
            self.fleet.group,
            "--instance",
            self.instance,
            "--session-ms",
            str(spec.session_ms),
            "--heartbeat-ms",
            str(spec.heartbeat_ms),
            "--max-poll-ms",
            str(spec.max_poll_ms),
            "--request-timeout-ms",
            str(spec.request_timeout_ms),
            "--process-ms",
            str(spec.process_ms),
            "--group-protocol",
            spec.group_protocol,
        ]
        for topic in self.fleet.topics:
            command += ["--topic", topic]
        self.incarnations += 1
        self.process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=self.fleet.stderr,
            stdin=subprocess.DEVNULL,
            text=True,
            env={**os.environ, **spec.extra_env},
        )
        incarnation = self.incarnations
        self._reader = threading.Thread(
            target=self._read, args=(self.process, incarnation), name=f"member-{self.instance}", daemon=True
        )
        self._reader.start()

    def _read(self, process: subprocess.Popen[str], incarnation: int) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            event["incarnation"] = incarnation
            event["seen"] = time.monotonic()
            if event["event"] == "records":
                topic, partition = event["partition"]
                self.fleet.ledger.processed((topic, partition), event["offsets"], self.instance)
            with self._lock:
                self.events.append(event)

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL: no commit, no LeaveGroup, sockets just vanish."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)
        self._join_reader()

    def stop(self, timeout: float = 40.0) -> int | None:
        """SIGTERM: the member stops gracefully (static: no LeaveGroup); SIGKILL if it hangs."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self._join_reader()
        return self.process.returncode

    def _join_reader(self) -> None:
        if self._reader is not None:
            self._reader.join(timeout=10)

    def of(self, *kinds: str, since: float | None = None) -> list[dict[str, Any]]:
        """Events of these kinds (all when none given), optionally only those seen after ``since``."""
        with self._lock:
            return [
                e
                for e in self.events
                if (not kinds or e["event"] in kinds) and (since is None or e["seen"] >= since)
            ]

    def last(self, kind: str) -> dict[str, Any] | None:
        found = self.of(kind)
        return found[-1] if found else None

    def identity(self) -> tuple[str, int] | None:
        """(member id, generation) as the member last reported it."""
        last = self.last("membership")
        return None if last is None else (str(last["member_id"]), int(last["generation"]))

    def owned(self) -> set[tuple[str, int]]:
        """Partitions owned according to the listener calls reported so far (eager: assigned replaces)."""
        owned: set[tuple[str, int]] = set()
        for event in self.of("assigned", "revoked", "lost"):
            partitions = {(t, p) for t, p in event["partitions"]}
            if event["event"] == "assigned":
                owned |= partitions
            else:
                owned -= partitions
        return owned


class Fleet:
    """Static members ``<prefix>-0`` .. ``<prefix>-<n-1>`` of one group, each in its own process."""

    def __init__(
        self,
        bootstrap_servers: str,
        topics: Sequence[str],
        group: str,
        ledger: Ledger,
        *,
        spec: MemberSpec | None = None,
        stderr: Any = None,
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.topics = list(topics)
        self.group = group
        self.ledger = ledger
        self.spec = spec or MemberSpec()
        self.stderr = stderr
        self.members: dict[str, MemberProcess] = {}

    def start(self, instances: Iterable[str]) -> Fleet:
        for instance in instances:
            member = self.members.setdefault(instance, MemberProcess(self, instance))
            member.start()
        return self

    def __getitem__(self, instance: str) -> MemberProcess:
        return self.members[instance]

    def stop(self) -> None:
        for member in self.members.values():
            member.stop()

    def kill_all(self) -> None:
        for member in self.members.values():
            member.kill()

    def all(self, predicate: Callable[[MemberProcess], bool]) -> bool:
        return all(predicate(member) for member in self.members.values())

    def assigned_everywhere(self, partitions: int) -> bool:
        """Every running member reported an assignment and together they own all ``partitions``."""
        owned = [member.owned() for member in self.members.values() if member.running]
        union = set().union(*owned) if owned else set()
        return all(owned) and len(union) == partitions * len(self.topics)

    def identities(self) -> dict[str, tuple[str, int] | None]:
        return {instance: member.identity() for instance, member in self.members.items()}

    def events_since(self, since: float, *kinds: str) -> dict[str, list[dict[str, Any]]]:
        return {instance: member.of(*kinds, since=since) for instance, member in self.members.items()}

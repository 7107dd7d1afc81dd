"""Synthetic event logs with known answers: hand-written scenarios in tests and a fleet for the benchmark.

Records are built from the real schema classes (staticconsumer.eventlog.schema), so a synthetic log is
byte-for-byte what consumers would write, including per-session ``seq`` and optional clock skew.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from staticconsumer.eventlog import schema

Parts = Iterable[tuple[str, int]]


class SyntheticSession:
    """One consumer run writing records; ``skew`` seconds are added to every timestamp it writes."""

    def __init__(self, group: str, instance: str | None, session: str, skew: float = 0.0) -> None:
        self.group = group
        self.instance = instance
        self.session = session
        self.skew = skew
        self.member = ""
        self.generation = -1
        self.seq = 0
        self.records: list[schema.Record] = []

    def _add(
        self, record_type: type[schema.Record], ts: float, parts: Parts = (), **fields: Any
    ) -> schema.Record:
        fields.setdefault("generation", self.generation)
        record = record_type(
            ts=ts + self.skew,
            group=self.group,
            instance=self.instance,
            member=self.member,
            session=self.session,
            seq=self.seq,
            partitions=[schema.Partition(t, p) for t, p in parts],
            **fields,
        )
        self.seq += 1
        self.records.append(record)
        return record

    def joining(self, ts: float) -> SyntheticSession:
        self._add(schema.Joining, ts)
        return self

    def rejoin(
        self, ts: float, reason: str = "rebalance failed due to REBALANCE_IN_PROGRESS"
    ) -> SyntheticSession:
        self._add(schema.Rejoin, ts, reason=reason)
        return self

    def synced(
        self,
        ts: float,
        generation: int,
        member: str,
        leader: str,
        parts: Parts,
        skip_assignment: bool = False,
        rebalance_protocol: str | None = None,
    ) -> SyntheticSession:
        """A sync followed by its assignment (the whole of it), as the observer writes them."""
        self.member = member
        self.generation = generation
        self._add(
            schema.Synced,
            ts,
            leader=leader,
            is_leader=leader == member,
            skip_assignment=skip_assignment,
            protocol="cooperative-sticky" if rebalance_protocol == "cooperative" else "range",
            rebalance_protocol=rebalance_protocol,
        )
        self._add(schema.Assigned, ts, parts)
        return self

    def revoked(self, ts: float, parts: Parts, reason: str = "rebalance") -> SyntheticSession:
        self._add(schema.Revoked, ts, parts, reason=reason)
        return self

    def lost(self, ts: float, parts: Parts, reason: str = "membership lost") -> SyntheticSession:
        self._add(schema.Lost, ts, parts, reason=reason)
        return self

    def committed(self, ts: float, parts: Parts) -> SyntheticSession:
        self._add(schema.Committed, ts, parts, error=None)
        return self

    def heartbeat_failed(self, ts: float, code: int, error: str) -> SyntheticSession:
        self._add(schema.HeartbeatFailed, ts, error=error, code=code)
        return self

    def fenced(self, ts: float) -> SyntheticSession:
        self._add(schema.Fenced, ts, error="FENCED_INSTANCE_ID")
        return self

    def stopped(self, ts: float) -> SyntheticSession:
        self._add(schema.Stopped, ts, error=None)
        self.generation = -1
        return self

    def lines(self) -> Iterator[bytes]:
        return (schema.encode_line(record) for record in self.records)


def write_lines(
    path: Path, sessions: Iterable[SyntheticSession], shuffle: random.Random | None = None
) -> Path:
    """All sessions' records in one file; ``shuffle`` mixes their order (as a merged log would be)."""
    lines = [line for s in sessions for line in s.lines()]
    if shuffle is not None:
        shuffle.shuffle(lines)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(lines))
    return path


# -- a fleet ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FleetSpec:
    """A fleet of static consumers rolled ``deploys`` times; a fraction of restarts miss the session."""

    groups: int = 20
    consumers_per_group: int = 100
    partitions_per_group: int = 5_000
    deploys: int = 50
    rebalance_fraction: float = 0.02
    """Share of restarts slower than the session timeout: the group rebalances (every member revokes)."""
    deploy_interval: float = 3_600.0
    restart_seconds: float = 4.0
    seed: int = 7

    @property
    def consumers(self) -> int:
        return self.groups * self.consumers_per_group

    @property
    def partitions(self) -> int:
        return self.groups * self.partitions_per_group


@dataclass
class FleetTruth:
    """What the generator did, for checking the job's answers."""

    records: int = 0
    rebalances: int = 0
    restarts: int = 0
    absorbed: int = 0


def _write(out: IO[bytes], session: SyntheticSession, truth: FleetTruth) -> None:
    out.write(b"".join(session.lines()))
    truth.records += len(session.records)
    session.records.clear()


def write_fleet(directory: Path, spec: FleetSpec) -> FleetTruth:
    """One file per group (as a Kafka topic dump partitioned by group would be); returns the truth.

    Each deploy restarts every member of every group in turn. A restart normally comes back in the same
    generation with the same partitions (static membership absorbed it); with probability
    ``rebalance_fraction`` the group moves to a new generation and every other member revokes and gets
    its partitions back.
    """
    rng = random.Random(spec.seed)
    truth = FleetTruth()
    directory.mkdir(parents=True, exist_ok=True)
    topic = "orders"
    n = spec.consumers_per_group
    for g in range(spec.groups):
        group = f"group-{g:03d}"
        instances = [f"{group}-c{c:04d}" for c in range(n)]
        first = g * spec.partitions_per_group
        share = {
            inst: [(topic, p) for p in range(first + i, first + spec.partitions_per_group, n)]
            for i, inst in enumerate(instances)
        }
        serial = itertools.count(1)

        def start(
            inst: str, ts: float, group: str = group, serial: Iterator[int] = serial
        ) -> SyntheticSession:
            return SyntheticSession(group, inst, f"{group}-s{next(serial)}").joining(ts)

        with open(directory / f"{group}.jsonl", "wb") as out:
            now = 1_700_000_000.0 + g
            generation = 1
            live = {inst: start(inst, now) for inst in instances}
            leader = live[instances[0]].session
            for inst, session in live.items():
                session.synced(now + 1, generation, session.session, leader, share[inst])
                _write(out, session, truth)
            t = now
            for deploy in range(spec.deploys):
                t = now + (deploy + 1) * spec.deploy_interval
                for inst in instances:
                    old = live[inst]
                    old.revoked(t, share[inst], reason="stop").stopped(t + 0.05)
                    _write(out, old, truth)
                    new = start(inst, t + 0.5)
                    truth.restarts += 1
                    if inst == instances[0]:
                        leader = new.session
                    if rng.random() < spec.rebalance_fraction:
                        generation += 1
                        truth.rebalances += 1
                        for other in instances[:]:
                            if other == inst:
                                continue
                            s = live[other]
                            s.rejoin(t + 1.0).revoked(t + 1.0, share[other])
                            s.synced(t + 2.0, generation, s.member, leader, share[other])
                            _write(out, s, truth)
                        new.synced(t + 2.0, generation, new.session, leader, share[inst])
                    else:
                        truth.absorbed += 1
                        skip = new.session == leader
                        new.synced(
                            t + 1.0, generation, new.session, leader, share[inst], skip_assignment=skip
                        )
                    live[inst] = new
                    _write(out, new, truth)
                    t += spec.restart_seconds
            for inst, session in live.items():
                session.revoked(t + 10, share[inst], reason="stop").stopped(t + 10.05)
                _write(out, session, truth)
    return truth

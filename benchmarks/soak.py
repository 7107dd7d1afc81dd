"""Soak: random faults against six static members under a steady producer, with the at-least-once ledger.

A 3-node KRaft cluster (a fault proxy per node), a topic of 12 partitions (RF 3, min ISR 2), a producer
booking every acknowledged record, a sampler of the group's committed offsets, and six static members in
their own processes (``staticconsumer.testing.member``: public StaticConsumer API, commit after each
batch). Until the time is up, faults are drawn from shuffled rounds of every kind (so each kind comes up
about equally often), one at a time, each followed by a wait until the group is stable and every member
processes records again, then a calm gap:

* ``consumer_kill``: SIGKILL a member, restart it 1-4 s later (static: expect no rebalance);
* ``blackhole_short``: cut one member off (all its connections) for 30-60 % of the session timeout;
* ``blackhole_long``: the same for 130-180 % of it (expect eviction and a rejoin);
* ``broker_restart``: SIGTERM a node that is not the group's coordinator, start it 2-5 s later;
* ``coordinator_failover``: SIGKILL the coordinator's node, start it again once it is fenced.

Result (``Report``): faults injected per kind with the rebalances each caused (generation steps) and the
seconds until the group was stable and consuming again; records acknowledged, processed, lost (must be
0), duplicates; committed offsets that moved backwards (must be none); the machine's load average over
the run. Exit status 1 when anything was lost or went backwards.

Run: .venv/bin/python -m benchmarks.soak --minutes 30        (debug with --minutes 2)
Writes benchmarks/results/soak/soak.json (schema ``Report``, self-contained: benchmarks.run does not
know it) and soak.png (matplotlib, when installed).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import random
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import msgspec

from benchmarks.common import RESULTS, Environment, Spread, environment, spread
from staticconsumer.admin import GroupAdmin
from staticconsumer.testing import (
    DEFAULT_VERSION,
    EmbeddedKafkaCluster,
    Fleet,
    Ledger,
    LedgerProducer,
    MemberProcess,
    MemberSpec,
)
from staticconsumer.testing.ledger import CommitSampler

NAME = "soak"
KINDS = ("consumer_kill", "blackhole_short", "blackhole_long", "broker_restart", "coordinator_failover")
log = logging.getLogger("soak")


class FaultRecord(msgspec.Struct):
    index: int
    kind: str
    target: str
    """The member instance or the node id the fault hit."""
    started_s: float
    """Seconds since the soak started."""
    fault_seconds: float
    """How long the fault itself lasted (blackhole, downtime, kill to restart)."""
    recovered_seconds: float | None
    """From the end of the fault to a stable group whose members all process records again; None if
    that did not happen within the recovery limit."""
    generation_before: int
    generation_after: int
    rebalances: int
    """Generation steps from just before the fault to after the recovery."""
    member_ids_changed: list[str]
    """Instances that came back with a different member id (an eviction and a rejoin)."""
    error: str | None = None


class KindSummary(msgspec.Struct):
    injected: int
    rebalances: int
    faults_with_rebalance: int
    recovered_seconds: Spread | None
    unrecovered: int


class Records(msgspec.Struct):
    acknowledged: int
    processed_distinct: int
    lost: int
    duplicates: int
    commits_backwards: int
    commit_samples: int
    produce_failures: int
    lost_sample: list[str] = msgspec.field(default_factory=list)


class LoadSample(msgspec.Struct):
    t_s: float
    one: float
    five: float
    fifteen: float


class Report(msgspec.Struct):
    environment: Environment
    minutes: float
    members: int
    partitions: int
    rate_per_second: float
    session_timeout_ms: int
    seed: int
    faults: list[FaultRecord]
    per_kind: dict[str, KindSummary]
    records: Records
    load: list[LoadSample]
    load_one_minute: Spread | None
    passed: bool
    """Nothing lost and no committed offset backwards."""


class Soak:
    def __init__(self, args: argparse.Namespace, cluster: EmbeddedKafkaCluster, member_log: Path) -> None:
        self.args = args
        self.cluster = cluster
        self.random = random.Random(args.seed)
        suffix = uuid.uuid4().hex[:6]
        self.topic = f"soak-{suffix}"
        self.group = f"soak-{suffix}"
        self.ledger = Ledger()
        self.producer = LedgerProducer(
            cluster.internal_bootstrap_servers, self.topic, self.ledger, rate=args.rate
        )
        self.sampler = CommitSampler(cluster.internal_bootstrap_servers, self.group, self.ledger)
        self.member_log = member_log.open("a")
        self.fleet = Fleet(
            cluster.bootstrap_servers,
            [self.topic],
            self.group,
            self.ledger,
            spec=MemberSpec(session_ms=args.session_ms, heartbeat_ms=max(100, args.session_ms // 10)),
            stderr=self.member_log,
        )
        self.started = time.monotonic()
        self.faults: list[FaultRecord] = []
        self.load: list[LoadSample] = []

    def now(self) -> float:
        return time.monotonic() - self.started

    # -- what the group looks like ------------------------------------------------------------------

    def generation(self) -> int:
        generations = [
            int(e["generation"]) for member in self.fleet.members.values() for e in member.of("membership")
        ]
        return max(generations, default=0)

    async def stable_and_flowing(self, since: float, within: float) -> bool:
        """Stable per the coordinator, every partition owned, and every member processed records after
        ``since``; False when not within ``within`` seconds."""
        deadline = time.monotonic() + within
        admin = GroupAdmin(bootstrap_servers=self.cluster.internal_bootstrap_servers, api_timeout_ms=10_000)
        await admin.start()
        try:
            while time.monotonic() < deadline:
                running = [m for m in self.fleet.members.values() if m.running]
                if self.fleet.assigned_everywhere(self.args.partitions) and all(
                    m.of("records", since=since) for m in running
                ):
                    try:
                        described = await admin.describe_group(self.group)
                    except Exception:  # coordinator moving: ask again
                        described = None
                    if (
                        described is not None
                        and described.state == "Stable"
                        and len(described.members) == len(running)
                    ):
                        return True
                await asyncio.sleep(0.5)
        finally:
            await admin.close()
        return False

    # -- faults ------------------------------------------------------------------------------------

    def _member(self) -> MemberProcess:
        return self.random.choice(sorted(self.fleet.members.values(), key=lambda m: m.instance))

    async def consumer_kill(self) -> tuple[str, float]:
        member = self._member()
        started = time.monotonic()
        await asyncio.to_thread(member.kill)
        await asyncio.sleep(self.random.uniform(1, 4))
        member.start()
        return member.instance, time.monotonic() - started

    async def _blackhole(self, fraction: tuple[float, float]) -> tuple[str, float]:
        member = self._member()
        seconds = self.args.session_ms / 1000 * self.random.uniform(*fraction)
        for proxy in self.cluster.proxies:
            proxy.blackhole(client_id=member.client_id)
        try:
            await asyncio.sleep(seconds)
        finally:
            for proxy in self.cluster.proxies:
                proxy.heal()
        return member.instance, seconds

    async def blackhole_short(self) -> tuple[str, float]:
        return await self._blackhole((0.3, 0.6))

    async def blackhole_long(self) -> tuple[str, float]:
        return await self._blackhole((1.3, 1.8))

    async def broker_restart(self) -> tuple[str, float]:
        coordinator = await asyncio.to_thread(self.cluster.find_coordinator, self.group)
        node = self.random.choice(sorted(set(self.cluster.nodes) - {coordinator}))
        started = time.monotonic()
        await asyncio.to_thread(self.cluster.restart_node, node, down_seconds=self.random.uniform(2, 5))
        return f"node {node}", time.monotonic() - started

    async def coordinator_failover(self) -> tuple[str, float]:
        node = await asyncio.to_thread(self.cluster.find_coordinator, self.group)
        started = time.monotonic()
        await asyncio.to_thread(self.cluster.kill_node, node)
        await asyncio.to_thread(self.cluster.wait_until_fenced, node)
        await asyncio.sleep(2)
        await asyncio.to_thread(self.cluster.start_node, node)
        return f"node {node}", time.monotonic() - started

    async def inject(self, index: int, kind: str) -> FaultRecord:
        before = self.fleet.identities()
        generation_before = self.generation()
        started_s = self.now()
        action: Callable[[], Awaitable[tuple[str, float]]] = getattr(self, kind)
        target, seconds, error = "", 0.0, None
        try:
            target, seconds = await action()
        except Exception as failure:  # keep soaking; the record says what went wrong
            error = f"{type(failure).__name__}: {failure}"
        ended = time.monotonic()
        recovered = await self.stable_and_flowing(ended, self.args.recovery_limit)
        recovered_seconds = time.monotonic() - ended if recovered else None
        after = self.fleet.identities()
        changed = sorted(
            instance
            for instance, identity in after.items()
            if identity is not None and (was := before.get(instance)) is not None and identity[0] != was[0]
        )
        with_leaders_back = await asyncio.to_thread(self.cluster.elect_preferred_leaders)
        log.info(
            "fault %d %s on %s: %.1fs, %s, generation %d -> %d, member ids changed %s, %d leaders moved back",
            index,
            kind,
            target,
            seconds,
            f"recovered in {recovered_seconds:.1f}s" if recovered_seconds is not None else "NOT RECOVERED",
            generation_before,
            self.generation(),
            changed,
            with_leaders_back,
        )
        return FaultRecord(
            index=index,
            kind=kind,
            target=target,
            started_s=round(started_s, 3),
            fault_seconds=round(seconds, 3),
            recovered_seconds=None if recovered_seconds is None else round(recovered_seconds, 3),
            generation_before=generation_before,
            generation_after=self.generation(),
            rebalances=self.generation() - generation_before,
            member_ids_changed=changed,
            error=error,
        )

    async def sample_load(self) -> None:
        while True:
            one, five, fifteen = os.getloadavg()
            self.load.append(LoadSample(round(self.now(), 1), one, five, fifteen))
            await asyncio.sleep(5)

    # -- the run -----------------------------------------------------------------------------------

    async def run(self) -> Report:
        args = self.args
        await asyncio.to_thread(self.cluster.create_topic, self.topic, args.partitions)
        self.started = time.monotonic()
        loader = asyncio.create_task(self.sample_load())
        await self.producer.start()
        await self.sampler.start()
        self.fleet.start([f"soak-{index}" for index in range(args.members)])
        try:
            if not await self.stable_and_flowing(time.monotonic(), 120):
                raise RuntimeError("the group never settled before the first fault")
            deadline = self.started + args.minutes * 60
            index = 0
            while time.monotonic() < deadline:
                bag = list(KINDS)
                self.random.shuffle(bag)
                for kind in bag:
                    if time.monotonic() >= deadline:
                        break
                    self.faults.append(await self.inject(index, kind))
                    index += 1
                    calm = min(self.random.uniform(*args.calm), max(0.0, deadline - time.monotonic()))
                    await asyncio.sleep(calm)
            await self.producer.stop()
            await self.ledger.until_all_processed(args.drain_limit)
            await asyncio.sleep(2)  # the members commit what they just processed
            await self.sampler.stop()
        finally:
            loader.cancel()
            await self.producer.stop()
            await self.sampler.stop()
            await asyncio.to_thread(self.fleet.stop)
            self.member_log.close()
        return self.report()

    def report(self) -> Report:
        verdict = self.ledger.verdict()
        per_kind: dict[str, KindSummary] = {}
        for kind in KINDS:
            mine = [f for f in self.faults if f.kind == kind]
            recoveries = [f.recovered_seconds for f in mine if f.recovered_seconds is not None]
            per_kind[kind] = KindSummary(
                injected=len(mine),
                rebalances=sum(f.rebalances for f in mine),
                faults_with_rebalance=sum(1 for f in mine if f.rebalances),
                recovered_seconds=spread(recoveries) if recoveries else None,
                unrecovered=sum(1 for f in mine if f.recovered_seconds is None),
            )
        records = Records(
            acknowledged=verdict.acknowledged,
            processed_distinct=verdict.processed,
            lost=verdict.lost_count,
            duplicates=verdict.duplicates,
            commits_backwards=len(verdict.backwards),
            commit_samples=verdict.commit_samples,
            produce_failures=self.producer.failed,
            lost_sample=[f"{t}-{p}@{o}" for (t, p), offsets in verdict.lost.items() for o in offsets[:5]][
                :20
            ],
        )
        return Report(
            environment=environment(self.cluster.version),
            minutes=self.args.minutes,
            members=self.args.members,
            partitions=self.args.partitions,
            rate_per_second=self.args.rate,
            session_timeout_ms=self.args.session_ms,
            seed=self.args.seed,
            faults=self.faults,
            per_kind=per_kind,
            records=records,
            load=self.load,
            load_one_minute=spread([s.one for s in self.load]) if self.load else None,
            passed=records.lost == 0 and records.commits_backwards == 0,
        )

    def timeline(self) -> tuple[list[tuple[float, int]], list[tuple[float, int]]]:
        """(seconds, records processed in that 5 s bucket) and (seconds, group generation) for the plot."""
        buckets: dict[int, int] = {}
        steps: list[tuple[float, int]] = []
        for member in self.fleet.members.values():
            for event in member.of("records"):
                bucket = int((event["seen"] - self.started) // 5)
                buckets[bucket] = buckets.get(bucket, 0) + len(event["offsets"])
            steps += [(e["seen"] - self.started, int(e["generation"])) for e in member.of("membership")]
        steps.sort()
        generation, running = [], 0
        for t, g in steps:
            running = max(running, g)
            generation.append((t, running))
        if generation:
            generation.append((self.now(), running))
        return sorted((b * 5.0, n) for b, n in buckets.items()), generation


def plot(report: Report, soak: Soak, path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log.warning("matplotlib is not installed: no plot")
        return
    processed, generation = soak.timeline()
    colours = dict(zip(KINDS, ("tab:red", "tab:orange", "tab:purple", "tab:blue", "tab:green"), strict=True))
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(11, 6), sharex=True, height_ratios=(3, 2))
    top.plot([t / 60 for t, _ in processed], [n / 5 for _, n in processed], color="black", lw=0.8)
    top.set_ylabel("records processed / s")
    labelled: set[str] = set()
    for fault in report.faults:
        start = fault.started_s / 60
        end = (fault.started_s + fault.fault_seconds + (fault.recovered_seconds or 0)) / 60
        for axis in (top, bottom):
            axis.axvspan(
                start,
                end,
                color=colours[fault.kind],
                alpha=0.25,
                label=fault.kind if axis is top and fault.kind not in labelled else None,
            )
        labelled.add(fault.kind)
    top.legend(loc="upper right", fontsize=8, ncols=3)
    r = report.records
    top.set_title(
        f"Soak {report.minutes:g} min, {report.members} static members: {len(report.faults)} faults, "
        f"{r.acknowledged} acknowledged, {r.lost} lost, {r.duplicates} duplicates, "
        f"{r.commits_backwards} commits backwards",
        fontsize=10,
    )
    bottom.step([t / 60 for t, _ in generation], [g for _, g in generation], where="post", color="tab:blue")
    bottom.set_ylabel("group generation", color="tab:blue")
    bottom.set_xlabel("minutes")
    load_axis = bottom.twinx()
    load_axis.plot([s.t_s / 60 for s in report.load], [s.one for s in report.load], color="grey", lw=0.8)
    load_axis.set_ylabel("load average (1 min)", color="grey")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


async def main_async(args: argparse.Namespace, out: Path) -> int:
    member_log = Path(tempfile.mkdtemp(prefix="staticconsumer-soak-")) / "members.log"
    log.info("members' stderr goes to %s", member_log)
    cluster = EmbeddedKafkaCluster(nodes=3, version=args.kafka_version, fault_proxies=True)
    await asyncio.to_thread(cluster.start)
    log.info("cluster ready in %.1fs at %s", cluster.start_seconds, cluster.bootstrap_servers)
    try:
        soak = Soak(args, cluster, member_log)
        report = await soak.run()
    finally:
        await asyncio.to_thread(cluster.stop)
    result = out / f"{NAME}.json"
    result.write_bytes(msgspec.json.format(msgspec.json.encode(report), indent=2) + b"\n")
    plot(report, soak, out / f"{NAME}.png")
    r = report.records
    log.info(
        "%d faults %s; %d acknowledged, %d lost, %d duplicates, %d commits backwards; wrote %s",
        len(report.faults),
        {kind: s.injected for kind, s in report.per_kind.items()},
        r.acknowledged,
        r.lost,
        r.duplicates,
        r.commits_backwards,
        result,
    )
    return 0 if report.passed else 1


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0, help="how long faults are injected")
    parser.add_argument("--members", type=int, default=6)
    parser.add_argument("--partitions", type=int, default=12)
    parser.add_argument("--rate", type=float, default=100.0, help="records produced per second")
    parser.add_argument("--session-ms", type=int, default=10_000, help="the members' session.timeout.ms")
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--calm", type=float, nargs=2, default=(10.0, 20.0), metavar=("MIN", "MAX"))
    parser.add_argument("--recovery-limit", type=float, default=120.0, help="seconds to wait for recovery")
    parser.add_argument("--drain-limit", type=float, default=180.0, help="seconds to wait for the backlog")
    parser.add_argument("--kafka-version", default=DEFAULT_VERSION)
    parser.add_argument("--out", default=str(RESULTS / NAME), help="directory for soak.json and soak.png")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)  # connection errors are the point here
    args = parse(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    return asyncio.run(main_async(args, out))


if __name__ == "__main__":
    sys.exit(main())

"""Codec benchmark: our hand-written encoders/decoders against aiokafka 0.14's generic Struct codec.

    .venv/bin/python -m benchmarks.codec [--repeats 21] [--out benchmarks/results/codec.json]

Workloads (the issue's): a JoinGroup response with 1,000 members and an OffsetCommit request with
10,000 partitions. Each is timed as encode + decode of the same message, at the version aiokafka also
implements (JoinGroup v5, OffsetCommit v3) so both sides produce identical bytes (checked before
timing), and additionally at our highest version (flexible encoding) for reference. Every run is timed
separately, interleaved, on this thread's CPU time by default (``--clock wall`` for perf_counter); the
report gives median, quartiles and min/max per implementation, and the ratio of the medians
(aiokafka / ours, so > 1 means we are faster). Results go to a msgspec-typed JSON file with
the machine (cores, memory) and git revision; a PNG plot is written if matplotlib is importable.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Run as a script, Python puts benchmarks/ first on sys.path, where benchmarks/assignors.py would
# shadow the real ``assignors`` package that staticconsumer.protocol re-exports from; the repository
# root takes its place, so ``benchmarks.common`` resolves too.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path[0] = str(Path(__file__).resolve().parents[1])

import msgspec
from aiokafka.protocol.commit import OffsetCommitRequest_v3
from aiokafka.protocol.group import JoinGroupResponse_v5

from benchmarks.common import RESULTS, Environment, environment
from staticconsumer import protocol as p

DEFAULT_OUT = RESULTS / "codec.json"


class Timing(msgspec.Struct):
    """Seconds for one encode+decode of the workload, over ``runs`` timed runs."""

    runs: int
    median_s: float
    p25_s: float
    p75_s: float
    min_s: float
    max_s: float
    encode_median_s: float
    decode_median_s: float


class Case(msgspec.Struct):
    workload: str
    version: int
    wire_bytes: int
    ours: Timing
    aiokafka: Timing | None
    speedup_vs_aiokafka: float | None
    """aiokafka median / our median (same version, identical bytes); None without an aiokafka twin."""


class Report(msgspec.Struct):
    benchmark: str
    created_utc: str
    command: str
    clock: str
    """``cpu`` (thread CPU time, the default) or ``wall`` (perf_counter)."""
    environment: Environment
    cases: list[Case]


# ------------------------------------------------------------------------------------------- workloads


def join_group_response(members: int = 1000) -> p.JoinGroupResponse:
    topics = ["orders", "payments", "shipments"]
    rows = []
    for i in range(members):
        instance = f"pod-{i}"
        metadata = p.Subscription(
            topics, None, [p.TopicPartitions("orders", [i % 64])], 12, f"rack-{i % 3}"
        ).encode(0)
        rows.append(p.JoinGroupResponseMember(f"{instance}-{uuid.UUID(int=i)}", instance, metadata))
    leader = rows[0].member_id
    return p.JoinGroupResponse(0, 0, 42, "consumer", "range", leader, False, leader, rows)


def offset_commit_request(partitions: int = 10_000, per_topic: int = 100) -> p.OffsetCommitRequest:
    topics = [
        p.OffsetCommitRequestTopic(
            f"topic-{t:03d}",
            [
                p.OffsetCommitRequestPartition(i, 1_000_000 + t * per_topic + i, -1, "")
                for i in range(per_topic)
            ],
        )
        for t in range(partitions // per_topic)
    ]
    return p.OffsetCommitRequest("orders-service", 42, "pod-0-member", None, -1, topics)


def _aiokafka_join(message: p.JoinGroupResponse) -> JoinGroupResponse_v5:
    return JoinGroupResponse_v5(
        message.throttle_time_ms,
        message.error_code,
        message.generation_id,
        message.protocol_name,
        message.leader,
        message.member_id,
        [(m.member_id, m.group_instance_id, m.metadata) for m in message.members],
    )


def _aiokafka_commit(message: p.OffsetCommitRequest) -> OffsetCommitRequest_v3:
    return OffsetCommitRequest_v3(
        message.group_id,
        message.generation_id_or_member_epoch,
        message.member_id,
        message.retention_time_ms,
        [
            (t.name, [(q.partition_index, q.committed_offset, q.committed_metadata) for q in t.partitions])
            for t in message.topics
        ],
    )


# ------------------------------------------------------------------------------------------------ timing


def _summary(totals: list[float], encodes: list[float], decodes: list[float]) -> Timing:
    q = statistics.quantiles(totals, n=4) if len(totals) >= 2 else [totals[0]] * 3
    return Timing(
        runs=len(totals),
        median_s=statistics.median(totals),
        p25_s=q[0],
        p75_s=q[2],
        min_s=min(totals),
        max_s=max(totals),
        encode_median_s=statistics.median(encodes),
        decode_median_s=statistics.median(decodes),
    )


Codec = tuple[Callable[[], bytes], Callable[[bytes], Any]]


CLOCKS: dict[str, Callable[[], float]] = {"cpu": time.thread_time, "wall": time.perf_counter}


def _time(codecs: list[Codec], runs: int, warmup: int, clock: Callable[[], float]) -> list[Timing]:
    """Time each codec ``runs`` times, interleaved (rotating the order every run), so that noise from a
    busy machine falls on all of them alike instead of on whichever happened to run during it.

    The default clock is this thread's CPU time: on a shared machine wall time also counts the time
    the scheduler gave to other processes, which says nothing about the codec."""
    for encode, decode in codecs:
        for _ in range(warmup):
            decode(encode())
    samples: list[tuple[list[float], list[float], list[float]]] = [([], [], []) for _ in codecs]
    for run_index in range(runs):
        for k in range(len(codecs)):
            which = (run_index + k) % len(codecs)
            encode, decode = codecs[which]
            gc.collect()
            t0 = clock()
            data = encode()
            t1 = clock()
            decode(data)
            t2 = clock()
            totals, encodes, decodes = samples[which]
            totals.append(t2 - t0)
            encodes.append(t1 - t0)
            decodes.append(t2 - t1)
    return [_summary(*sample) for sample in samples]


def run(runs: int, warmup: int, clock: Callable[[], float] = time.thread_time) -> list[Case]:
    cases: list[Case] = []
    join_name = "JoinGroupResponse, 1,000 members"
    join = join_group_response()
    theirs_join = _aiokafka_join(join)
    ours_v5 = join.encode(5)
    if ours_v5 != theirs_join.encode():
        raise SystemExit("JoinGroup v5 bytes differ from aiokafka's; the comparison would be meaningless")
    ours, theirs, v9 = _time(
        [
            (lambda: join.encode(5), lambda b: p.JoinGroupResponse.decode(b, 5)),
            (theirs_join.encode, JoinGroupResponse_v5.decode),
            (lambda: join.encode(9), lambda b: p.JoinGroupResponse.decode(b, 9)),
        ],
        runs,
        warmup,
        clock,
    )
    cases.append(Case(join_name, 5, len(ours_v5), ours, theirs, theirs.median_s / ours.median_s))
    cases.append(Case(join_name, 9, len(join.encode(9)), v9, None, None))

    commit_name = "OffsetCommitRequest, 10,000 partitions"
    commit = offset_commit_request()
    theirs_commit = _aiokafka_commit(commit)
    ours_v3 = commit.encode(3)
    if ours_v3 != theirs_commit.encode():
        raise SystemExit("OffsetCommit v3 bytes differ from aiokafka's; the comparison would be meaningless")
    ours, theirs, v9 = _time(
        [
            (lambda: commit.encode(3), lambda b: p.OffsetCommitRequest.decode(b, 3)),
            (theirs_commit.encode, OffsetCommitRequest_v3.decode),
            (lambda: commit.encode(9), lambda b: p.OffsetCommitRequest.decode(b, 9)),
        ],
        runs,
        warmup,
        clock,
    )
    cases.append(Case(commit_name, 3, len(ours_v3), ours, theirs, theirs.median_s / ours.median_s))
    cases.append(Case(commit_name, 9, len(commit.encode(9)), v9, None, None))
    return cases


# ----------------------------------------------------------------------------------------- environment


def codec_environment() -> Environment:
    return environment(
        "none (no broker)",
        packages=("aiokafka", "msgspec", "staticconsumer"),
        dirty_paths=("staticconsumer/protocol", "benchmarks/codec.py"),
    )


def plot(report: Report, path: Path) -> bool:
    """One panel per workload (their scales differ 10x): median encode+decode with min-max whiskers,
    the aiokafka ratio in the title; skipped without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    workloads = list(dict.fromkeys(case.workload for case in report.cases))
    fig, axes = plt.subplots(len(workloads), 1, figsize=(9, 2.2 * len(workloads) + 0.6), squeeze=False)
    for ax, workload in zip(axes[:, 0], workloads, strict=True):
        rows: list[tuple[str, Timing, str]] = []
        ratio = ""
        for case in (c for c in report.cases if c.workload == workload):
            rows.append((f"ours v{case.version}", case.ours, "tab:blue"))
            if case.aiokafka is not None:
                rows.append((f"aiokafka v{case.version}", case.aiokafka, "tab:orange"))
                ratio = f"  (aiokafka / ours = {case.speedup_vs_aiokafka:.1f}x)"
        medians = [t.median_s * 1e3 for _, t, _ in rows]
        whiskers = [
            [(t.median_s - t.min_s) * 1e3 for _, t, _ in rows],
            [(t.max_s - t.median_s) * 1e3 for _, t, _ in rows],
        ]
        ax.barh(range(len(rows)), medians, xerr=whiskers, color=[c for _, _, c in rows], capsize=3)
        ax.set_yticks(range(len(rows)), [label for label, _, _ in rows])
        ax.set_title(workload + ratio, fontsize=10)
        ax.set_xlabel(f"encode + decode, ms of {report.clock} time (median; whiskers min-max)")
    env = report.environment
    fig.suptitle(f"codec @ {env.git_revision[:10]}, {env.cores} cores, Python {env.python}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=21, help="timed runs per implementation")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu", help="what a run's time is")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    env = codec_environment()
    cases = run(args.repeats, args.warmup, CLOCKS[args.clock])
    report = Report(
        benchmark="codec",
        created_utc=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        command=" ".join([Path(sys.executable).name, *sys.argv]),
        clock=args.clock,
        environment=env,
        cases=cases,
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(msgspec.json.format(msgspec.json.encode(report), indent=2) + b"\n")
    for case in cases:
        line = f"{case.workload:40s} v{case.version}: ours {case.ours.median_s * 1e3:8.2f} ms"
        if case.aiokafka is not None and case.speedup_vs_aiokafka is not None:
            line += f"  aiokafka {case.aiokafka.median_s * 1e3:8.2f} ms  x{case.speedup_vs_aiokafka:.1f}"
        print(line)
    png = args.out.with_suffix(".png")
    print(f"wrote {args.out}" + (f" and {png}" if plot(report, png) else " (no matplotlib: no plot)"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

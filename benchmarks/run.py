"""Run every benchmark, then write docs/benchmarks.md from their JSON results.

    .venv/bin/python -m benchmarks.run              # everything, full sizes (an hour or more on 2 cores)
    .venv/bin/python -m benchmarks.run --quick      # small sizes (about 5 min) into a temporary directory
    .venv/bin/python -m benchmarks.run --only rolling_bounce throughput_overhead
    .venv/bin/python -m benchmarks.run --page       # only regenerate the page from the existing results
    .venv/bin/python -m benchmarks.run --page --committed   # ... from the results as committed

The page is generated, never edited: ``tests/unit/test_benchmarks_page.py`` checks that it is what
``render`` makes from the committed results (commit new results, then ``--page --committed``) and
that every result validates against its schema. A ``--quick`` run writes its results and page to a
temporary directory, so it never replaces the committed figures.
"""

from __future__ import annotations

import argparse
import importlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from benchmarks.common import RESULTS, ROOT

PAGE = ROOT / "docs" / "benchmarks.md"
IMPORT_COST = ROOT / "benchmarks" / "import_cost.md"


@dataclass(frozen=True)
class Benchmark:
    name: str
    schema: str
    """The msgspec struct its JSON decodes into, as ``module:Class``."""
    full: tuple[str, ...]
    quick: tuple[str, ...]
    takes_out: bool = True
    """Whether it has ``--out`` (the others write through ``benchmarks.common.write_json``)."""
    full_result: str = ""
    """The result file's stem for a full run when it is not the name (a size kept beside others)."""


BENCHMARKS = (
    Benchmark("codec", "benchmarks.codec:Report", (), ("--repeats", "3", "--warmup", "1")),
    Benchmark(
        "assignors",
        "benchmarks.assignors:Results",
        ("--full", "--repeat", "5"),
        ("--repeat", "1", "--repeat-small", "3", "--warmup", "1"),
    ),
    Benchmark(
        "telemetry_overhead",
        "benchmarks.telemetry_overhead:Report",
        (),
        # it refuses fewer than 5 repeats
        ("--repeats", "5", "--records", "10000", "--iterate-records", "1000", "--peer-records", "1000"),
    ),
    Benchmark(
        "leader_restart_growth",
        "benchmarks.leader_restart_growth:Report",
        (),
        ("--runs", "1", "--refresh-ms", "2000", "--limit", "15"),
        takes_out=False,
    ),
    Benchmark(
        "rolling_bounce",
        "benchmarks.rolling_bounce:Report",
        ("--members", "3", "6", "12", "--repeats", "5"),
        ("--members", "3", "--repeats", "1", "--grace", "1"),
        takes_out=False,
    ),
    Benchmark(
        "rebalance_scale",
        "benchmarks.rebalance_scale:Report",
        ("--members", "4", "12", "--repeats", "5"),
        (
            *("--members", "2", "--repeats", "1", "--partitions-per-member", "2"),
            *("--records-per-second", "100", "--baseline", "2", "--quiet", "2"),
        ),
    ),
    Benchmark(
        "throughput_overhead",
        "benchmarks.throughput_overhead:Report",
        (),
        ("--repeats", "1", "--records", "20000"),
        takes_out=False,
    ),
    Benchmark(
        "analytics_fleet",
        "benchmarks.analytics_fleet:Report",
        ("--scale", "0.1"),  # the full fleet (2,000 consumers, 100,000 partitions) needs a bigger machine
        ("--scale", "0.01", "--deploys", "5", "--groups", "4"),
        full_result="analytics_fleet_scale0.1",
    ),
    Benchmark(
        "idle_cpu",
        "benchmarks.idle_cpu:Report",
        ("--members", "20", "--seconds", "20", "--repeats", "3"),
        ("--members", "3", "--seconds", "5", "--repeats", "1"),
        takes_out=False,
    ),
    Benchmark(
        "fleet",
        "benchmarks.fleet:Report",
        ("--members", "30"),  # 300 when the machine is quiet: `python -m benchmarks.fleet --members 300`
        ("--members", "6", "--small", "2", "--processes", "2", "--down", "8"),
        takes_out=False,
    ),
)
BY_NAME = {b.name: b for b in BENCHMARKS}


def benchmark_for(stem: str) -> Benchmark | None:
    """The benchmark a result file belongs to: ``<name>.json``, or ``<name>_<variant>.json`` for runs
    kept side by side (``analytics_fleet_scale0.1.json``)."""
    if stem in BY_NAME:
        return BY_NAME[stem]
    return next((b for b in BENCHMARKS if stem.startswith(b.name + "_")), None)


def schema(benchmark: Benchmark) -> type[msgspec.Struct]:
    module, name = benchmark.schema.split(":")
    struct: type[msgspec.Struct] = getattr(importlib.import_module(module), name)
    return struct


def decode(benchmark: Benchmark, data: bytes) -> Any:
    """The result, validated against its benchmark's schema (raises msgspec.ValidationError)."""
    return msgspec.json.decode(data, type=schema(benchmark))


# -- running -------------------------------------------------------------------------------------


def run_all(names: list[str], quick: bool, results: Path) -> list[str]:
    """Run each benchmark as its own process (``python -m benchmarks.<name>``); the failures' names."""
    failed = []
    env = {**os.environ, "STATICCONSUMER_BENCH_RESULTS": str(results)}
    for name in names:
        benchmark = BY_NAME[name]
        command = [
            sys.executable,
            "-m",
            f"benchmarks.{name}",
            *(benchmark.quick if quick else benchmark.full),
        ]
        if benchmark.takes_out:
            stem = benchmark.full_result if benchmark.full_result and not quick else name
            command += ["--out", str(results / f"{stem}.json")]
        print(f"== {' '.join(command[1:])}", flush=True)
        began = time.monotonic()
        code = subprocess.run(command, cwd=ROOT, env=env, check=False).returncode
        print(f"== {name}: exit {code} after {time.monotonic() - began:.0f}s", flush=True)
        if code != 0:
            failed.append(name)
    return failed


# -- the page ------------------------------------------------------------------------------------


def _n(value: float | None) -> str:
    """Three significant digits; thousands separated, never in exponent form for everyday sizes."""
    if value is None:
        return "-"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def _spread(s: Any, unit: str = "") -> str:
    """median [p25 - p75] (n runs), from any struct with those fields."""
    if s is None:
        return "-"
    return f"{_n(s.median)}{unit} [{_n(s.p25)}-{_n(s.p75)}] (n={s.runs})"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return [*lines, ""]


def _provenance(data: Any) -> list[dict[str, Any]]:
    """Kafka version, machine, revision and time of a result, whatever its environment schema."""
    raw = msgspec.to_builtins(data)
    found: list[dict[str, Any]] = []
    for env, outer in _environments(raw):
        memory = env.get("memory_bytes")
        found.append(
            {
                "created": env.get("created_utc")
                or env.get("started_at")
                or outer.get("created_utc")
                or outer.get("timestamp")
                or "-",
                "kafka": env.get("kafka_version") or env.get("kafka_clients_version") or "-",
                "machine": f"{env.get('cores', '?')} cores, "
                + (f"{memory / 2**30:.0f} GiB" if memory else "? GiB")
                + f", {env.get('cpu') or env.get('cpu_model') or '?'}"
                + _load(env.get("load_average") or env.get("load_average_at_start")),
                "revision": str(env.get("git_revision", "?"))[:10]
                + (" (uncommitted changes)" if env.get("git_dirty") else ""),
                "command": env.get("command") or outer.get("command") or "-",
            }
        )
    return found


def _load(load: list[float] | None) -> str:
    """The machine's 1/5/15-minute load averages when the run started: how busy the neighbours were."""
    return f", load {'/'.join(f'{x:.1f}' for x in load)}" if load else ""


def _environments(raw: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    if "environment" in raw:
        return [(raw["environment"], raw)]
    return [(size["environment"], size) for size in raw.get("sizes", [])]


def render(results: dict[str, bytes], figures: set[str]) -> str:
    """The page, from result files (name -> JSON bytes) and the PNG names that exist beside them."""
    grouped: dict[str, list[tuple[str, Any]]] = {}
    for stem, data in sorted(results.items()):
        benchmark = benchmark_for(stem)
        if benchmark is not None:
            grouped.setdefault(benchmark.name, []).append((stem, decode(benchmark, data)))
    out = [
        "# Benchmarks",
        "",
        "<!-- Generated by `python -m benchmarks.run --page` from benchmarks/results: do not edit. -->",
        "",
        "What static membership buys, measured side by side with the peers: aiokafka 0.14 (with and "
        "without `group_instance_id`) and Kafka's own Java client. Every comparison below was measured in "
        "one run on one machine, repeated, and is given as the median with the interquartile range "
        "`[p25-p75]` and the number of samples. The machine is a shared 2-core box whose neighbours "
        "vary, so compare figures within a table, not across result files.",
        "",
        "Run everything: `.venv/bin/python -m benchmarks.run` (an hour or more on 2 cores); a smoke run with "
        "small sizes into a temporary directory (about 5 minutes): `--quick`; one benchmark: `--only "
        "rolling_bounce`; this page alone: `--page --committed`. Plots need "
        "the `bench` extra (`pip install -e .[bench]`, matplotlib).",
        "",
        "## Where each result comes from",
        "",
    ]
    rows = []
    for benchmark in BENCHMARKS:
        if benchmark.name not in grouped:
            rows.append([benchmark.name, "not run yet", "", "", "", ""])
            continue
        for stem, p in [(stem, p) for stem, result in grouped[benchmark.name] for p in _provenance(result)]:
            rows.append(
                [
                    stem,
                    p["created"],
                    p["kafka"],
                    p["machine"],
                    f"`{p['revision']}`",
                    f"`{p['command']}`",
                ]
            )
    out += _table(["benchmark", "measured (UTC)", "Kafka", "machine", "git revision", "command"], rows)
    sections: list[tuple[str, Callable[[Any, set[str]], list[str]]]] = [
        ("rolling_bounce", _rolling_bounce),
        ("leader_restart_growth", _leader_restart_growth),
        ("rebalance_scale", _rebalance_scale),
        ("throughput_overhead", _throughput),
        ("telemetry_overhead", _telemetry),
        ("codec", _codec),
        ("assignors", _assignors),
        ("analytics_fleet", _analytics_fleet),
        ("idle_cpu", _idle_cpu),
        ("fleet", _fleet),
    ]
    for name, section in sections:
        if name in grouped:
            for _, result in grouped[name]:
                out += section(result, figures)
        else:
            title = name.replace("_", " ").capitalize()
            out += [
                f"## {title}",
                "",
                f"Not run yet: `.venv/bin/python -m benchmarks.run --only {name}`.",
                "",
            ]
    if IMPORT_COST.exists():  # written by hand from interleaved runs, not a result file
        out += IMPORT_COST.read_text().rstrip().splitlines()
    return "\n".join(out).rstrip() + "\n"


def _figure(name: str, figures: set[str], caption: str) -> list[str]:
    if f"{name}.png" not in figures:
        return []
    return [f"![{caption}](../benchmarks/results/{name}.png)", ""]


def _modes_not_measured(report: Any) -> list[str]:
    """Modes of the benchmark that the committed results do not have yet: named, never invented."""
    from staticconsumer.bounce import MODES

    measured = {mode.mode for size in report.sizes for mode in size.modes}
    missing = [f"`{name}`" for name in MODES if name not in measured]
    if not missing:
        return []
    return [
        f"Not measured yet: {', '.join(missing)}; their figures come with the next quiet run "
        "(`.venv/bin/python -m benchmarks.run --only rolling_bounce`).",
        "",
    ]


def _paired_restarts(size: Any) -> list[str]:
    """The paired reading (``--paired``): both groups live at once, restarts alternating."""
    pair = getattr(size, "paired", None)
    if pair is None:
        return []
    return [
        f"Paired (`--paired`: both groups live at once on their own topics, `{pair.ours}` and "
        f"`{pair.theirs}` restarting member by member in alternating order): median of "
        f"{len(pair.ratios)} pair ratios **{pair.ratio.median:.2f}x** (p25 {pair.ratio.p25:.2f}, p75 "
        f"{pair.ratio.p75:.2f}); medians {pair.ours_seconds.median:.3f} s against "
        f"{pair.theirs_seconds.median:.3f} s ({pair.ratio_of_medians:.2f}x)."
        + (
            " Ours minus theirs, median over pairs, ms from spawn: "
            + ", ".join(f"{step} {1000 * value:+.1f}" for step, value in pair.step_differences.items())
            + "."
            if pair.step_differences
            else ""
        ),
        "",
    ]


def _rolling_bounce(report: Any, figures: set[str]) -> list[str]:
    out = [
        "## Rolling bounce",
        "",
        "N consumer processes on a topic of 4N partitions with a steady producer; every member, the leader "
        "included, is stopped and started again in turn, as a Kubernetes rolling update does, each back "
        "well within the session timeout. Modes: `staticconsumer` static and dynamic, aiokafka 0.14 with "
        "and without `group_instance_id`, the Java KafkaConsumer with `group.instance.id`, and "
        "`confluent-static` (confluent-kafka 2.16's `confluent_kafka.aio.AIOConsumer` with "
        "`group.instance.id`); on the consumer protocol (KIP-848), `staticconsumer-consumer`, "
        "`java-consumer` and `confluent-consumer` (the AIOConsumer with `group.protocol=consumer`), all "
        "static; for synchronous code, `staticconsumer-sync-static` (`staticconsumer.sync.StaticConsumer`, "
        "[sync.md](sync.md)), `kafka-python-static` (kafka-python 3.0's KafkaConsumer with "
        "`group_instance_id`) and `confluent-sync-static` (confluent-kafka's blocking `Consumer`) "
        "(`staticconsumer.bounce`, `benchmarks/rolling_bounce.py`). Classic members use the eager "
        "range assignor; on the consumer protocol the broker assigns. "
        "Columns: **rebalances**, generations after the group first settled (per bounce); **revoked**, "
        "partitions revoked from or lost by members that were not restarting (per bounce); **restart**, "
        "seconds from a new process's start to its first record (every restart); **unowned**, "
        "partition-seconds owned by no live member during the bounce, from the first stop to the end "
        "(a stopping process owns nothing); **away**, the longest time from a stop to the new process's "
        "assignment (must stay below the session timeout).",
        "",
    ]
    out += _modes_not_measured(report)
    for size in report.sizes:
        s = size.settings
        out += [
            f"### N = {size.members} ({size.partitions} partitions, {size.repeats} repeats)",
            "",
            f"Session timeout {s.session_ms / 1000:.0f} s, heartbeat {s.heartbeat_ms / 1000:.0f} s, "
            f"{s.produce_per_second} records/s, {s.grace_seconds} s watched after each restart, "
            f"assignor {s.assignor}, Kafka {size.environment.kafka_version}"
            + (f"; Python members import {s.python_bytecode}." if s.python_bytecode else "."),
            "",
        ]
        rows = []
        for mode in size.modes:
            rows.append(
                [
                    f"`{mode.mode}`",
                    f"{mode.completed}/{len(mode.repeats)}",
                    _spread(mode.rebalances),
                    _spread(mode.revoked_from_others),
                    _spread(mode.restart_seconds, " s"),
                    _spread(mode.unowned_partition_seconds),
                    f"{_n(mode.max_seconds_away)} s" if mode.max_seconds_away is not None else "-",
                ]
            )
        out += _table(["mode", "completed", "rebalances", "revoked", "restart", "unowned", "away"], rows)
        out += _paired_restarts(size)
        if any(mode.timeline for mode in size.modes):
            out += _timeline(size)
        else:
            out += _phases(size)
        failures = [
            f"{m.mode} repeat {r.repeat + 1}: {r.error}" for m in size.modes for r in m.repeats if r.error
        ]
        if failures:
            out += ["Repeats that did not complete:", "", *[f"- {f}" for f in failures], ""]
        out += ["Targets:", ""]
        out += [f"- {'met' if t.met else '**not met**'}: {t.target} ({t.detail})" for t in size.targets]
        out += [""]
    out += _figure("rolling_bounce", figures, "rolling bounce: boxes per mode and group size")
    out += _figure("rolling_bounce_timeline", figures, "rolling bounce: each restart's steps per mode")
    out += [
        "Reading it: a static member that comes back within the session timeout is replaced in place, so "
        "nobody else is revoked and the generation does not move. The unowned column is the other side of "
        "that: a restarting static member's partitions wait for it, unconsumed, until its new process is "
        "assigned, so the gap is mostly process start (interpreter and imports for the Python clients, the "
        "JVM for Java; see the started column). Dynamic members hand those partitions to the others "
        "instead, but each hand-over is an eager rebalance that revokes everything from everyone, about "
        "two per restart, so their unowned time is however long the group takes to rebalance.",
        "",
    ]
    return out


def _phases(size: Any) -> list[str]:
    """Results measured before the per-step timeline: started, assigned, first record."""
    out = [
        "Where a restart's time goes (medians over every restart, seconds from the new process's start): "
        "**started**, the client's start() returned (interpreter or JVM start and imports; aiokafka's "
        "start() also waits for its first assignment, Java reports before its first poll); "
        "**assigned**, its first assignment; **first record**.",
        "",
    ]
    phases = []
    for mode in size.modes:
        restarts = [r for repeat in mode.repeats if repeat.error is None for r in repeat.restarts]
        if restarts:
            phases.append(
                [f"`{mode.mode}`"]
                + [
                    _n(statistics.median(getattr(r, field) for r in restarts))
                    for field in ("seconds_to_started", "seconds_to_assigned", "seconds_to_first_record")
                ]
            )
    return out + _table(["mode", "started", "assigned", "first record"], phases)


TIMELINE_COLUMNS = (
    ("imported", "imported"),
    ("started", "started"),
    ("coordinator", "coordinator"),
    ("joined", "joined"),
    ("synced", "synced"),
    ("offsets", "offsets"),
    ("first_record", "first record"),
)


def _timeline(size: Any) -> list[str]:
    """Where a restart's time goes, step by step, as each client reported it."""
    rows = []
    for mode in size.modes:
        if mode.timeline:
            steps = mode.timeline
            rows.append(
                [f"`{mode.mode}`"]
                + [_n(steps[step].median) if step in steps else "-" for step, _ in TIMELINE_COLUMNS]
            )
    return [
        "Where a restart's time goes, step by step (medians over every restart, seconds from the new "
        "process's spawn): **imported**, its client imported (Python: `import staticconsumer` or `import "
        "aiokafka`, each member importing only its own client; Java: JVM start and the KafkaConsumer class "
        "loaded); **started**, the client's start() returned (Java: constructed, before its first poll); "
        "**coordinator**, the group coordinator found; **joined**, JoinGroup answered with a generation; "
        "**synced**, SyncGroup answered; **offsets**, the committed offsets of its partitions known; "
        "**first record**. Each client reports its steps through its own hooks: staticconsumer through a "
        "`MembershipObserver` (`observers=`; offsets: its `on_partitions_assigned`, run once the "
        "OffsetFetch answer is in), aiokafka and Java through their own log records (see "
        "`staticconsumer/_bounce_member.py` and the oracle's PeerConsumer). A step a client does before "
        "start() returns can come before started. confluent-kafka (librdkafka) members report through "
        "librdkafka's `cgrp` debug lines, handed to their `logger` (`debug=cgrp` is on for the whole run, "
        "a small cost ours do not pay), and through `on_assign`; what they cannot report: the moment a "
        "step happens (librdkafka queues its lines and the member sees one when its next `consume()` "
        "serves it, then, for the AIOConsumer, when the event loop runs it), a start (librdkafka has no "
        "start(): **started** is subscribe() returned, before it has connected), and on the consumer "
        "protocol a SyncGroup (**joined** is the first ConsumerGroupHeartbeat answered, **synced** the "
        "first assignment handed to the application).",
        "",
        *_table(["mode", *(label for _, label in TIMELINE_COLUMNS)], rows),
    ]


def _leader_restart_growth(report: Any, figures: set[str]) -> list[str]:
    rows = []
    for client in report.clients:
        kept = sum(1 for r in client.runs if r.leader_kept_generation)
        rows.append(
            [
                f"`{client.client}`",
                f"{client.consumed_runs}/{len(client.runs)}",
                _spread(client.seconds, " s"),
                f"{kept}/{len(client.runs)}",
            ]
        )
    return [
        "## Leader restart, then partition growth (KIP-814)",
        "",
        "Two static members; the leader is restarted (replaced in place, no rebalance), then the topic grows "
        f"from 4 to 6 partitions. Seconds until a record from a new partition is consumed (limit "
        f"{report.limit_seconds:.0f} s; metadata refresh {report.refresh_ms / 1000:.0f} s, target: within "
        f"twice that). `benchmarks/leader_restart_growth.py`.",
        "",
        *_table(
            ["client", "new partitions consumed", "seconds to first new record", "generation kept"], rows
        ),
        "What each peer does:",
        "",
        "- **staticconsumer**: the broker answers the returning leader's JoinGroup v9 with `SkipAssignment`; "
        "it knows it leads, keeps watching every member's topics every `metadata.max.age.ms`, and rejoins "
        "when a partition count changes, which rebalances the group and hands the new partitions out. Its "
        "assignment audit also catches partitions added while the leader was down ([leader.md](leader.md)).",
        "- **aiokafka 0.14 static**: it speaks JoinGroup up to v5, so the broker tells the returning leader "
        "the old leader's member id; it does not know it leads, nobody watches metadata for the group, "
        "and the new partitions are never assigned (KAFKA-13435), as measured above.",
        "- **Java KafkaConsumer** (kafka-clients 3.2+, KIP-814): the returning leader is told "
        "`SkipAssignment`, knows it leads and keeps watching metadata, so partitions added after its "
        "restart are picked up after a metadata refresh; partitions added while it was down are never "
        "noticed ([leader.md](leader.md)). "
        + (
            "Measured above (the oracle module's PeerConsumer, kafka-clients at the broker's version)."
            if any(c.client.startswith("java") for c in report.clients)
            else "Not measured in this result; this is its documented behaviour."
        ),
        "",
        *[f"- {note}" for note in report.notes],
        "",
    ]


def _rebalance_scale(report: Any, figures: set[str]) -> list[str]:
    out = [
        "## Scale-out and scale-in: eager, cooperative and the consumer protocol",
        "",
        "N static members, each in its own process, on a topic of a few partitions per member under a steady "
        "producer; member N joins (scale-out), then leaves again (scale-in: `stop(leave_group=True)`; a "
        "static Java member is closed and then removed by a LeaveGroup naming its instance id, as Kafka "
        "Streams does). Modes, interleaved in one run: StaticConsumer eager (the default assignors, range "
        "first), StaticConsumer cooperative (cooperative-sticky alone, KIP-429), Java's KafkaConsumer "
        "with cooperative-sticky, and StaticConsumer and Java on the consumer protocol (KIP-848, the "
        "broker's assignor, session timeout and 5 s heartbeat) (`benchmarks/rebalance_scale.py`). "
        "Columns: **moved**, partitions whose "
        "owner changed; **paused**, partitions owned by nobody at some moment; **paused p-s**, their "
        "partition-seconds owned by nobody; **dip**, 1 - the lowest records/s in half-second bins during "
        "the rebalance over the rate before it (1: consumption stopped for a whole bin); **settle**, "
        "seconds from the start of the rebalance (the coordinator first seen out of Stable) to its last "
        "listener call; **to rebalance**, seconds from the event (the new process's start, the stop "
        "command) to that start; **generations** the rebalance took (member epochs under the consumer "
        "protocol).",
        "",
    ]
    for size in report.sizes:
        s = size.settings
        out += [
            f"### N = {size.members}, classic heartbeat {s.heartbeat_ms} ms ({size.partitions} partitions, "
            f"{size.repeats} repeats)",
            "",
            f"Session timeout {s.session_ms / 1000:.0f} s, heartbeat {s.heartbeat_ms} ms, "
            f"{s.records_per_second} records/s, Kafka {size.environment.kafka_version}.",
            "",
        ]
        rows = []
        run_modes = {r.mode for r in size.runs}
        for summary in size.summaries:
            if summary.mode not in run_modes:
                continue  # left out of this run (--modes)
            to_rebalance = [
                e.seconds_to_rebalance
                for r in size.runs
                if r.mode == summary.mode
                for e in r.events
                if e.event == summary.event and e.error is None
            ]
            rows.append(
                [
                    f"`{summary.mode}`",
                    summary.event,
                    f"{summary.completed}/{size.repeats}",
                    _spread(summary.moved_partitions),
                    _spread(summary.paused_partitions),
                    _spread(summary.paused_partition_seconds),
                    _spread(summary.dip),
                    _spread(summary.settle_seconds, " s"),
                    f"{_n(statistics.median(to_rebalance))} s" if to_rebalance else "-",
                    _spread(summary.generations),
                ]
            )
        out += _table(
            [
                "mode",
                "event",
                "completed",
                "moved",
                "paused",
                "paused p-s",
                "dip",
                "settle",
                "to rebalance",
                "generations",
            ],
            rows,
        )
        failures = [f"{r.mode} repeat {r.repeat + 1}: {r.error}" for r in size.runs if r.error]
        if failures:
            out += ["Repeats that did not complete:", "", *[f"- {f}" for f in failures], ""]
        out += ["Targets:", ""]
        out += [f"- {'met' if t.met else '**not met**'}: {t.target} ({t.detail})" for t in size.targets]
        out += [""]
    out += _figure("rebalance_scale", figures, "scale-out and scale-in: boxes per mode, event and group size")
    out += [
        "Reading it: eager revokes every partition of every member, however few move; cooperative pauses "
        "only the partitions that change owner, but each of those waits through two rebalances (revoked "
        "after the first, handed out by the second, which the other members join at their next heartbeat), "
        "so on a small, quick group its paused partition-seconds can exceed eager's short stop of "
        "everything. What cooperative buys grows with the group: the partitions that keep flowing.",
        "",
        "Settle is bounded below by the heartbeat: the other members learn of a rebalance at their next "
        "heartbeat, so at a 1 s classic heartbeat the settle times of two clients differ mostly by where the "
        "last member's heartbeat happened to fall (spreads of 0.1-0.2 s, which of the two is ahead changes "
        "between runs). Runs at a 100 ms heartbeat, where present, shrink that wait and show the clients' "
        "own latency: the JoinGroup/SyncGroup round trips, the revoke and its commit, OffsetFetch and the "
        "listener. Under the consumer protocol the broker's 5 s heartbeat plays the same part for both "
        "clients: a revoked partition waits for the newcomer's next heartbeat, so its paused "
        "partition-seconds follow the phase between the members' heartbeats, not the client.",
        "",
    ]
    return out


def _throughput(report: Any, figures: set[str]) -> list[str]:
    ours = report.variants[0].records_per_second.median  # staticconsumer's getmany comes first
    by_cpu = all(getattr(v, "records_per_cpu_second", None) is not None for v in report.variants)
    header = ["consumer", "records/s", "staticconsumer getmany / this"]
    rows = [
        [f"`{v.variant}`", _spread(v.records_per_second), f"{ours / v.records_per_second.median:.3f}"]
        for v in report.variants
    ]
    cpu = []
    if by_cpu:
        ours_cpu = report.variants[0].records_per_cpu_second.median
        header += ["records per CPU second", "staticconsumer getmany / this, by CPU"]
        for row, v in zip(rows, report.variants, strict=True):
            row += [_spread(v.records_per_cpu_second), f"{ours_cpu / v.records_per_cpu_second.median:.3f}"]
        cpu = [
            f"By CPU (records per second of the process's CPU, every thread, over the same span; what "
            f"overhead costs whatever the wait for a core on the shared machine): "
            f"{report.cpu_ratio_to_assigned:.3f} of bare aiokafka (hand-assigned), "
            f"{report.cpu_ratio_to_group:.3f} (own group). librdkafka fetches and decodes on threads of "
            "its own, in C, so confluent-kafka's CPU figures count those too.",
            "",
        ]
    medians = {v.variant: v.records_per_second.median for v in report.variants}
    confluent = []
    if getattr(report, "ratio_to_confluent_aio", None) is not None:
        confluent = [
            f"Over confluent-kafka's: {report.ratio_to_confluent_aio:.3f} (AIOConsumer), "
            f"{report.ratio_to_confluent:.3f} (blocking Consumer). Target (AIOConsumer, >= 1.5): "
            f"{'met' if report.confluent_target_met else '**not met**'}.",
            "",
        ]
    batch = getattr(report, "max_records", None) or 1000
    confluent_batch = f", confluent-kafka's `consume(num_messages={batch})`" if confluent else ""
    iterate = []
    if getattr(report, "ratio_iterate_to_getmany", None) is not None:
        iterate = [
            f"`async for` over `getmany`: {report.ratio_iterate_to_getmany:.3f} (per repeat "
            f"{', '.join(f'{x:.2f}' for x in report.iterate_ratios or [])}). Target (>= 0.8): "
            f"{'met' if report.iterate_target_met else '**not met**'}.",
            "",
        ]
    loads = getattr(report, "load_1min", None)
    load = (
        [f"1-minute load average before each repeat: {', '.join(f'{x:g}' for x in loads)}.", ""]
        if loads
        else []
    )
    return [
        "## Throughput overhead",
        "",
        f"Records/s consumed from a pre-filled topic ({report.records_per_run:,} keyed records of "
        f"{report.record_bytes} B, {report.partitions} partitions), batches of at most {batch:,} records "
        f"(`getmany(max_records={batch})`{confluent_batch}), each run a fresh "
        "consumer timed from its first batch to the last record, variants interleaved. "
        "`aiokafka-assigned` has no group at all (the fetcher StaticConsumer itself uses), "
        "`aiokafka-group` is aiokafka in its own group; `confluent-aio` is confluent-kafka's "
        "`AIOConsumer` and `confluent` its blocking `Consumer` (its loop in a thread), both static members "
        "(`group.instance.id`). `benchmarks/throughput_overhead.py`.",
        "",
        *_table(header, rows),
        f"StaticConsumer's median over bare aiokafka's: {report.ratio_to_assigned:.3f} (hand-assigned), "
        f"{report.ratio_to_group:.3f} (own group). Target (ratio >= 0.95): "
        f"{'met' if report.target_met else '**not met**'}. "
        f"For scale, the two bare aiokafka consumers, the same fetcher, differ by "
        f"{abs(medians['aiokafka-group'] / medians['aiokafka-assigned'] - 1):.1%} in this run.",
        "",
        *cpu,
        *iterate,
        *confluent,
        *load,
        *_figure("throughput_overhead", figures, "throughput: records/s per consumer"),
    ]


def _idle_cpu(report: Any, figures: set[str]) -> list[str]:
    rows = [[f"`{v.variant}`", _spread(v.cpu_ms_per_member_second, " ms")] for v in report.variants]
    return [
        "## Idle CPU per member",
        "",
        f"{report.members} idle consumers in one group and one process per run, each holding one partition "
        f"of an empty topic and calling `getmany(timeout_ms=1000)`; CPU time of the whole process "
        f"(every thread) over {report.seconds:.0f} s, per member and wall second, runs interleaved. "
        "`aiokafka` is AIOKafkaConsumer in the group (dynamic, its defaults). `benchmarks/idle_cpu.py`.",
        "",
        *_table(["consumer", "CPU per member and second"], rows),
        f"StaticConsumer's median over aiokafka's: {report.ratio:.2f}. Target (at most aiokafka's, ratio "
        f"<= 1): {'met' if report.target_met else '**not met**'}."
        + (
            f" The base tree's (`--base`, same runs): {report.base_ratio:.2f}."
            if getattr(report, "base_ratio", None) is not None
            else ""
        ),
        "",
    ]


def _fleet(report: Any, figures: set[str]) -> list[str]:
    rows = [
        [
            str(b.members),
            f"{b.partitions} / {b.processes}",
            str(b.rebalances),
            str(b.revoked_from_others),
            _spread(b.restart_to_first_record, " s"),
            _spread(b.restart_to_started, " s"),
        ]
        for b in report.bounces
    ]
    out = [
        f"## Fleet: {report.bounces[-1].members} static members, rolling bounce and broker restart"
        + ("" if report.group_protocol == "classic" else " (KIP-848 consumer protocol)")
        + ("" if report.listen_backlog is None else f", broker listen backlog {report.listen_backlog}"),
        "",
        *(
            []
            if report.listen_backlog is None
            else [
                f"The broker's `socket.listen.backlog.size` is {report.listen_backlog} here (Kafka's default "
                "50): what docs/connection.md advises for a broker serving a fleet, since the fleet's "
                "reconnects at its return overflow 50 and the kernel drops the excess SYNs (resent "
                "after 1 s, then 3 s). Everything else as in the run with the default.",
                "",
            ]
        ),
        "Group protocol: "
        + (
            "classic (JoinGroup/SyncGroup; a static member's rejoin makes the coordinator write the whole "
            "group's assignment). "
            if report.group_protocol == "classic"
            else "consumer (KIP-848, group.protocol=consumer: ConsumerGroupHeartbeat, the broker assigns and "
            "writes records per member). "
        )
        + "Static members packed in a few worker processes on one broker, auto-commit off; every member in "
        "turn is stopped (no LeaveGroup) and started again with its instance id, the next once the last "
        "has its first record. "
        + (
            "Both groups at once in the same worker processes (the small one one member per worker), the "
            "small group's restarts interleaved with the fleet's: they differ in group size only. "
            if report.comparison == "same processes, interleaved"
            else "Both sizes in the same run, the small one alone (one member per process). "
        )
        + "`benchmarks/fleet.py`.",
        "",
        *_table(
            [
                "members",
                "partitions / processes",
                "rebalances",
                "revoked from others",
                "restart to first record",
                "restart to start() returned",
            ],
            rows,
        ),
        f"Restart-to-first-record median at N={report.bounces[-1].members} over "
        f"N={report.bounces[0].members}: {report.ratio_first_record:.2f} (target <= 1.2).",
        "",
    ]
    oracle = [b for b in report.bounces if b.oracle_join_group is not None]
    if oracle:
        out += [
            "The broker's share, timed by a bare aiokafka client from the quiet parent process (a stopped "
            "member's static rejoin: its JoinGroup with its own metadata, then SyncGroup): "
            + "; ".join(
                f"N={b.members}: JoinGroup {_spread(b.oracle_join_group, ' s')}, SyncGroup "
                f"{_spread(b.oracle_sync_group, ' s')}"
                for b in oracle
            )
            + ".",
            "",
        ]
    o = report.broker_restart
    if o is not None:
        out += [
            f"Broker stopped under all {o.members} members and started again on the same port and data: "
            f"down {o.down_seconds:.0f} s (stop to its return, "
            + (
                "the port accepting TCP connections; "
                if o.reconnected_after_accepting is None
                else f"its first answer to a request; its port accepted TCP connections "
                f"{o.accepting_to_answering_seconds:.1f} s earlier, restart() returned "
                f"{o.answering_to_ready_seconds:.1f} s later; "
            )
            + f"the JVM took {o.restart_seconds:.0f} s to be ready). Connection attempts per consumer after "
            f"the first 5 s: {_spread(o.connects_per_consumer_per_second, '/s')} (per process, target <= 2); "
            f"connected again after the return: {_spread(o.reconnected_after_return, ' s')}"
            + (
                "; "
                if getattr(o, "reconnected_after_return_sampled", None) is None
                else " (the state's change as it happened; as the member's loop next read it: "
                f"{_spread(o.reconnected_after_return_sampled, ' s')}); "
            )
            + f"first new record after its acknowledgement: {_spread(o.first_record_after_return, ' s')} "
            "(below 0: the member had it before the producer saw the acknowledgement); "
            f"members back within 2 s: {o.members_back_within_2s} of {o.members}; records lost: {o.lost}; "
            f"rebalances: {o.rebalances}; partitions revoked: {o.revoked}.",
            "",
        ]
    met = ", ".join(f"{k} {'met' if v else '**not met**'}" for k, v in report.targets.items())
    return [*out, f"Targets: {met}.", ""]


def _telemetry(report: Any, figures: set[str]) -> list[str]:
    rows = [
        [
            p.pattern,
            f"{p.records_per_run:,}",
            _spread(p.telemetry_on_no_sdk),
            _spread(p.telemetry_off),
            f"{p.on_vs_off_median:.3f}",
        ]
        for p in report.patterns
    ]
    hot = [[h.step, f"{_n(h.median_ns)} ns", f"{_n(h.min_ns)}-{_n(h.max_ns)} ns"] for h in report.hot_path]
    return [
        "## Telemetry overhead",
        "",
        "Records/s consumed by StaticConsumer with telemetry on (no OpenTelemetry SDK installed, what every "
        "user pays) and off; and the observer's own cost per call. `benchmarks/telemetry_overhead.py`.",
        "",
        *_table(["pattern", "records per run", "on (records/s)", "off (records/s)", "on / off"], rows),
        *_table(["observer step", "median", "min-max"], hot),
        *_telemetry_peer(getattr(report, "peer", None)),
        *_figure("telemetry_overhead", figures, "telemetry overhead"),
    ]


def _telemetry_peer(peer: Any) -> list[str]:
    """Per-record tracing against opentelemetry-instrumentation-aiokafka (issue 26's targets)."""
    if peer is None:
        return []
    rows = [
        [
            f"`{v.variant}`",
            _spread(v.cpu_us_per_record, " us"),
            _n(v.records_per_second.median),
            "-" if v.spans_per_record is None else f"{v.spans_per_record:.3f}",
        ]
        for v in peer.variants
    ]
    load = peer.load_average
    targets = "; ".join(
        f"{name}: {'met' if met else '**not met**'}" for name, met in peer.targets_met.items()
    )
    at = (
        f"Load average at the start {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1/5/15 min)."
        if load
        else ""
    )
    return [
        f"Per-record tracing against opentelemetry-instrumentation-aiokafka {peer.instrumentation_version} "
        f"(`async for`, {peer.records_per_run:,} records per run, producer contexts "
        f"{peer.sampled_share_of_records:.0%} sampled; one SDK set-up: BatchSpanProcessor, discarding "
        "exporter). CPU time of the consumer process per record (median [p25-p75]):",
        "",
        *_table(["variant", "CPU per record", "records/s (wall)", "record spans per record"], rows),
        f"Tracing overhead per record (CPU above the same consumer with tracing off): ours "
        f"{_n(peer.ours_always_on_overhead_us)} us always on, {_n(peer.ours_ratio_overhead_us)} us with a "
        f"parent-based 1% sampler; the instrumentation's {_n(peer.theirs_always_on_overhead_us)} us and "
        f"{_n(peer.theirs_ratio_overhead_us)} us. Ratios: ours / instrumentation "
        f"{peer.ours_vs_instrumentation:.2f}, 1% / always on {peer.ratio_sampler_vs_always_on:.2f}, "
        f"no SDK / off {peer.no_sdk_vs_off:.3f}. Targets: {targets}. " + at,
        "",
    ]


def _codec(report: Any, figures: set[str]) -> list[str]:
    rows = [
        [
            case.workload,
            str(case.version),
            f"{case.wire_bytes:,}",
            f"{_n(case.ours.median_s * 1000)} ms",
            f"{_n(case.aiokafka.median_s * 1000)} ms" if case.aiokafka else "-",
            f"{case.speedup_vs_aiokafka:.2f}x" if case.speedup_vs_aiokafka else "-",
        ]
        for case in report.cases
    ]
    return [
        "## Codec",
        "",
        f"Encode + decode of one message, ours against aiokafka 0.14's Struct codec at the same version "
        f"(identical bytes); clock: {report.clock} time. `benchmarks/codec.py`.",
        "",
        *_table(["workload", "version", "bytes", "ours", "aiokafka", "aiokafka / ours"], rows),
        *_figure("codec", figures, "codec: encode+decode time"),
    ]


def _assignors(report: Any, figures: set[str]) -> list[str]:
    if any(row.samples for row in report.rows):
        return _assignors_paired(report, figures)
    cells: dict[tuple[str, str, int, int], dict[str, Any]] = {}
    for row in report.rows:
        key = (row.assignor, row.phase, row.members, row.partitions)
        cells.setdefault(key, {})[row.implementation] = row

    def cell(row: Any) -> str:
        if row is None:
            return "-"
        if row.seconds is None:
            return f"skipped ({row.skipped})" if row.skipped else "-"
        moved = f", moved {row.moved:,}" if row.moved is not None else ""
        return f"{_n(row.seconds * 1000)} ms{moved}"

    rows = [
        [assignor, phase, f"{members:,} x {partitions:,}"]
        + [cell(impls.get(name)) for name in ("staticconsumer", "aiokafka", "java")]
        for (assignor, phase, members, partitions), impls in cells.items()
    ]
    return [
        "## Assignors",
        "",
        "Time to compute one assignment (members x partitions), ours against aiokafka 0.14 and Java's own "
        "assignors (time inside `assign`), with the partitions moved away from surviving owners after a "
        "member leaves. `benchmarks/assignors.py`.",
        "",
        *_table(["assignor", "phase", "size", "staticconsumer", "aiokafka", "java"], rows),
        *_figure("assignors", figures, "assignors: time per assignment"),
    ]


IMPLEMENTATION_COLUMNS = ("staticconsumer", "aiokafka", "java")


def _assignors_paired(report: Any, figures: set[str]) -> list[str]:
    """Results with every sample, paired ratios and validity (interleaved runs)."""
    cells: dict[tuple[str, str, int, int], dict[str, Any]] = {}
    for row in report.rows:
        cells.setdefault((row.assignor, row.phase, row.members, row.partitions), {})[row.implementation] = row

    def cell(row: Any) -> str:
        if row is None:
            return "-"
        if row.seconds is None:
            return f"skipped ({row.skipped})" if row.skipped else "-"
        ms = spread_ms(row.samples)
        moved = f", moved {row.moved:,}" if row.moved is not None else ""
        invalid = f" **invalid: {row.problem}**" if row.valid is False else ""
        return f"{ms}{moved}{invalid}"

    def spread_ms(samples: list[float]) -> str:
        ordered = sorted(samples)
        q = statistics.quantiles(ordered, n=4, method="inclusive") if len(ordered) > 1 else ordered * 3
        return f"{_n(statistics.median(ordered) * 1000)} ms [{_n(q[0] * 1000)}-{_n(q[2] * 1000)}]"

    def ratio(s: Any) -> str:
        return "-" if s is None else f"{s.median:.2f} [{s.p25:.2f}-{s.p75:.2f}]"

    rows = []
    for (assignor, phase, members, partitions), impls in cells.items():
        ours = impls.get("staticconsumer")
        rows.append(
            [assignor, phase, f"{members:,} x {partitions:,}"]
            + [cell(impls.get(name)) for name in ("staticconsumer", "aiokafka", "java")]
            + [ratio(ours.ratio_to_java if ours else None), ratio(ours.ratio_to_aiokafka if ours else None)]
        )
    checked = [r for r in report.rows if r.valid is not None]
    valid = sum(1 for r in checked if r.valid)
    env = report.environment
    return [
        "## Assignors",
        "",
        "Time to compute one assignment (members x partitions, every member subscribed to every topic), "
        "ours against aiokafka 0.14 and Java's own assignors (kafka-clients' `assign`, timed inside the "
        "JVM on inputs built there), with the partitions moved away from surviving owners after a "
        f"member leaves. Method: {env.method}. Each cell is the median [p25-p75] of its samples; the "
        "ratios are paired per repeat (ours / Java, ours / aiokafka in the same repeat), median "
        f"[p25-p75]. Every assignment was checked complete and valid: {valid} of {len(checked)} rows "
        f"passed. Java {env.java_version}, kafka-clients {env.kafka_clients_version}. "
        "`benchmarks/assignors.py`.",
        "",
        *_table(
            [
                "assignor",
                "phase",
                "size",
                "staticconsumer",
                "aiokafka",
                "java",
                "ours / java",
                "ours / aiokafka",
            ],
            rows,
        ),
        *_figure("assignors", figures, "assignors: time per assignment"),
    ]


FLEET_JOB_TARGET_S = 120.0
FLEET_JVM_TARGET_BYTES = 3_000_000_000
"""Issue 19's targets for the full-size fleet on local[2] with a 2 GB driver heap."""
FLEET_FLOOR_TARGETS = {1.0: 4.0, 0.1: 6.0}
"""Issue 30's targets, which travel between machines: the job within this many times its floor pass."""


def _analytics_fleet(report: Any, figures: set[str]) -> list[str]:
    size, timings, memory, checks = report.size, report.timings, report.memory, report.checks
    agree = (
        checks.rebalances_expected == checks.rebalances_found
        and checks.restarts_expected == checks.restarts_found
        and checks.absorbed_expected == checks.absorbed_found
        and checks.malformed_lines == 0
    )
    jvm = memory.jvm_peak_rss_bytes
    targets: list[str] = []
    if size.scale == 1:  # issue 19's targets hold for the full size only
        targets = [
            f"Targets (full size on this 2-core machine): job under {FLEET_JOB_TARGET_S:.0f} s: "
            f"**{'met' if timings.job_s < FLEET_JOB_TARGET_S else 'not met'}** ({_n(timings.job_s)} s); "
            f"JVM peak under {FLEET_JVM_TARGET_BYTES / 1e9:.0f} GB: "
            f"**{'met' if jvm < FLEET_JVM_TARGET_BYTES else 'not met'}** ({jvm / 1e9:.2f} GB).",
            "",
        ]
    if timings.floor_s:
        ratio = timings.job_s / timings.floor_s
        limit = FLEET_FLOOR_TARGETS.get(size.scale)
        verdict = (
            f" Target: job within {limit:g}x its floor: **{'met' if ratio <= limit else 'not met'}**."
            if limit is not None
            else ""
        )
        # Runs with executor CPU figures come from jobs whose planning step computes the shared
        # frames (more than half the job's CPU); in the earliest runs it was the driver's plan alone.
        planning = (
            'the shared frames (the step "planning the tables": the plan, then the small tables, the '
            "ownership intervals' sort and the summary computed)"
            if timings.floor_cpu_s
            else "planning the tables"
        )
        targets += [
            f"Floor (one Spark pass over the same files on the same session: every line parsed, every "
            f"partition list exploded, aggregated per group; {report.floor_rows:,} rows): "
            f"{_n(timings.floor_s)} s; **job / floor {ratio:.1f}**.{verdict} Fixed: Spark start "
            f"{_n(timings.spark_start_s)} s, before the job and outside its ratio. Work inside the job: "
            f"{planning} {_n(timings.plan_s)} s, the tables written {_n(timings.tables_s)} s, the report "
            f"(plots on the driver) {_n(timings.report_s)} s."
            + (
                f" Executor CPU (Spark's event log; hardly moved by other work on the machine): job "
                f"{timings.job_cpu_s:.1f} s, floor {timings.floor_cpu_s:.1f} s, **job / floor "
                f"{timings.job_cpu_s / timings.floor_cpu_s:.1f}** in CPU."
                if timings.floor_cpu_s
                else ""
            ),
            "",
        ]
    label = f", {report.label}" if report.label else ""
    machine = f" `uptime` at the start: {report.environment.uptime}." if report.environment.uptime else ""
    out = [
        f"## Fleet analytics (scale {size.scale:g}{label})",
        "",
        "A synthetic fleet's event log through the Spark job (`staticconsumer analyze`) on "
        f"`{report.master}`: "
        f"{size.consumers:,} consumers in {size.groups} groups, {size.partitions:,} partitions, "
        f"{size.deploys} deploys, {size.records:,} records ({size.input_bytes / 2**20:,.0f} MiB in "
        f"{size.files} files). One run. `benchmarks/analytics_fleet.py`.{machine}",
        "",
        *_table(
            ["generate", "Spark start", "job", "peak RSS (driver + JVM)", "answers agree with the generator"],
            [
                [
                    f"{_n(timings.generate_s)} s",
                    f"{_n(timings.spark_start_s)} s",
                    f"{_n(timings.job_s)} s",
                    f"{memory.total_peak_rss_bytes / 2**30:.2f} GiB",
                    f"{'yes' if agree else '**no**'} (rebalances {checks.rebalances_found}/"
                    f"{checks.rebalances_expected}, restarts {checks.restarts_found}/"
                    f"{checks.restarts_expected})",
                ]
            ],
        ),
        *targets,
    ]
    if size.scale == 1:
        out += _figure("analytics_fleet_scaling", figures, "fleet analytics: job time against input size")
    return out


def read_results(directory: Path, only: set[str] | None = None) -> tuple[dict[str, bytes], set[str]]:
    """The result files in ``directory`` (restricted to the file names in ``only`` when given)."""
    results = {
        path.stem: path.read_bytes()
        for path in sorted(directory.glob("*.json"))
        if benchmark_for(path.stem) is not None and (only is None or path.name in only)
    }
    figures = {p.name for p in directory.glob("*.png") if only is None or p.name in only}
    return results, figures


def committed_results() -> tuple[dict[str, bytes], set[str]]:
    """The result files as committed (git HEAD), whatever runs in the working tree have not been
    committed yet: the page in the repository describes the results in the repository."""

    def git(*args: str) -> bytes:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, check=True).stdout

    names = git("ls-tree", "--name-only", "HEAD", "benchmarks/results/").decode().split()
    results = {
        Path(name).stem: git("show", f"HEAD:{name}")
        for name in names
        if name.endswith(".json") and benchmark_for(Path(name).stem) is not None
    }
    return results, {Path(name).name for name in names if name.endswith(".png")}


def write_page(page: Path, directory: Path | None) -> Path:
    """The page from the results in ``directory``, or from the committed results when None."""
    results, figures = committed_results() if directory is None else read_results(directory)
    page.write_text(render(results, figures))
    return page


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, results in a temporary directory")
    parser.add_argument("--only", nargs="+", choices=list(BY_NAME), help="run only these benchmarks")
    parser.add_argument("--page", action="store_true", help="only regenerate the page from existing results")
    parser.add_argument(
        "--committed", action="store_true", help="with --page: from the results as committed (git HEAD)"
    )
    parser.add_argument(
        "--results", type=Path, default=None, help="results directory (default: benchmarks/results)"
    )
    args = parser.parse_args(argv)
    if args.quick:
        results = args.results or Path(tempfile.mkdtemp(prefix="staticconsumer-bench-"))
        page = results / "benchmarks.md"
    else:
        results, page = args.results or RESULTS, PAGE
    results.mkdir(parents=True, exist_ok=True)
    failed: list[str] = []
    if not args.page:
        failed = run_all(args.only or list(BY_NAME), args.quick, results)
    print(f"wrote {write_page(page, None if args.committed and args.page else results)}")
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

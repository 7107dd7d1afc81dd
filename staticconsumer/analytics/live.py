"""``staticconsumer analyze --follow TOPIC``: the event log topic, analysed as it is written.

Spark Structured Streaming with Spark's own Kafka source (spark-sql-kafka, resolved from Maven
Central on first use by :mod:`staticconsumer.analytics.jars`). One streaming query over the topic, on
event time (the records' ``ts``) with a watermark: per group and minute (tumbling event-time windows),
starts, stops, revoked and lost partitions, fencing, evictions, heartbeat failures, the group's first
departure, and the generations members synced into with when. The watermark closes a minute once records
``--watermark`` seconds newer arrived, so the state stays bounded however long it runs.

Each micro-batch's updated minutes (a few rows) are merged on the driver into :class:`LiveState`: the
per-group table, printed when it changes and written to ``--out``/live.json. A generation counts once
(its earliest sync); one that starts after the group's first departure is a **rebalance after the group
formed** (the batch report's definition); more than ``--storm-rebalances`` of them within
``--storm-seconds`` is a **rebalance storm**, flagged the moment the micro-batch that completes it
arrives.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery

from staticconsumer.errors import AnalyticsError

from .job import DEPARTURES, EVENT_SCHEMA, UNKNOWN_MEMBER_ID, problem_of

ACTIVITY_WINDOW = "1 minute"


@dataclass(frozen=True)
class StormRule:
    """A storm is MORE than ``rebalances`` rebalances after formation within ``seconds``."""

    rebalances: int = 3
    seconds: float = 300.0


@dataclass
class Storm:
    group: str
    generations: list[int]
    first_ts: float
    last_ts: float

    def line(self, rule: StormRule) -> str:
        return (
            f"STORM group {self.group}: {len(self.generations)} rebalances within "
            f"{self.last_ts - self.first_ts:.1f} s (more than {rule.rebalances} in {rule.seconds:g} s): "
            f"generations {self.generations[0]}..{self.generations[-1]}, "
            f"{utc(self.first_ts)} to {utc(self.last_ts)}"
        )


@dataclass
class GroupState:
    generations: dict[int, float] = field(default_factory=dict)
    """generation -> when it started (its first sync seen)."""
    first_departure_ts: float | None = None
    activity: dict[float, dict[str, Any]] = field(default_factory=dict)
    """window start -> that minute's counts (replaced as updates arrive)."""
    storms: list[Storm] = field(default_factory=list)


def utc(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


_COUNTS = (
    "records",
    "starts",
    "stops",
    "revoked_partitions",
    "lost_partitions",
    "fenced",
    "evicted",
    "heartbeat_failures",
)


class LiveState:
    """The per-group tables on the driver, merged from the queries' micro-batches (thread-safe)."""

    def __init__(self, rule: StormRule, on_line: Callable[[str], None] | None = None) -> None:
        self.rule = rule
        self.groups: dict[str, GroupState] = {}
        self.on_line = on_line or (lambda line: print(line, flush=True))
        self._lock = threading.Lock()
        self.batches = 0

    def _group(self, name: str) -> GroupState:
        return self.groups.setdefault(name, GroupState())

    def update(self, rows: list[dict[str, Any]]) -> None:
        """Merge a micro-batch's updated (group, minute) rows; a minute's new row replaces its old one."""
        with self._lock:
            for row in rows:
                state = self._group(row["group"])
                state.activity[row["window_start"]] = {name: int(row[name] or 0) for name in _COUNTS}
                departure = row["first_departure_ts"]
                if departure is not None and (
                    state.first_departure_ts is None or departure < state.first_departure_ts
                ):
                    state.first_departure_ts = float(departure)
                for sync in row.get("syncs") or ():
                    generation, start = int(sync["generation"]), float(sync["start_ts"])
                    if generation not in state.generations or start < state.generations[generation]:
                        state.generations[generation] = start
            self._after_update({row["group"] for row in rows})

    def rebalances_after_formation(self, group: str) -> list[tuple[int, float]]:
        state = self.groups[group]
        if state.first_departure_ts is None:
            return []
        return sorted(
            (generation, ts) for generation, ts in state.generations.items() if ts > state.first_departure_ts
        )

    def _after_update(self, groups: set[str]) -> None:
        self.batches += 1
        for group in sorted(groups):
            self._check_storm(group)
            self.on_line(self.row_line(group))

    def _check_storm(self, group: str) -> None:
        """Flag each run of more than N rebalances within T once, when its last rebalance is seen."""
        state = self.groups[group]
        rebalances = self.rebalances_after_formation(group)
        n = self.rule.rebalances
        flagged = {g for storm in state.storms for g in storm.generations}
        for end in range(n, len(rebalances)):
            window = rebalances[end - n : end + 1]
            if window[-1][1] - window[0][1] <= self.rule.seconds and window[-1][0] not in flagged:
                # Extend to every rebalance of this burst seen so far within T of its last one.
                burst = [r for r in rebalances if window[-1][1] - self.rule.seconds <= r[1] <= window[-1][1]]
                storm = Storm(group, [g for g, _ in burst], burst[0][1], burst[-1][1])
                state.storms.append(storm)
                flagged |= set(storm.generations)
                self.on_line(storm.line(self.rule))

    def totals(self, group: str) -> dict[str, Any]:
        state = self.groups[group]
        counts = {name: sum(minute[name] for minute in state.activity.values()) for name in _COUNTS}
        after = self.rebalances_after_formation(group)
        formation = len(state.generations) - len(after)
        return {
            "group": group,
            "generations": len(state.generations),
            "formation_generations": formation,
            "rebalances_after_formation": len(after),
            "last_generation": max(state.generations, default=None),
            "storms": len(state.storms),
            **counts,
        }

    def row_line(self, group: str) -> str:
        t = self.totals(group)
        last = f", now generation {t['last_generation']}" if t["last_generation"] is not None else ""
        return (
            f"live {group}: {t['rebalances_after_formation']} rebalances after the group formed "
            f"({t['formation_generations']} generations while forming{last}); {t['starts']} starts, "
            f"{t['stops']} stops, {t['revoked_partitions']} partitions revoked, {t['lost_partitions']} lost, "
            f"{t['fenced']} fenced, {t['evicted']} evicted; storms {t['storms']}"
        )

    def snapshot(self) -> dict[str, Any]:
        """The per-group totals and the storms, as live.json holds them."""
        with self._lock:
            return self.snapshot_unlocked()

    def snapshot_unlocked(self) -> dict[str, Any]:
        """:meth:`snapshot` for a caller inside an update (``on_line`` runs under the lock)."""
        return {
            "storm_rule": {"rebalances": self.rule.rebalances, "seconds": self.rule.seconds},
            "groups": [self.totals(group) for group in sorted(self.groups)],
            "storms": [
                {"group": s.group, "generations": s.generations, "first_ts": s.first_ts, "last_ts": s.last_ts}
                for state in self.groups.values()
                for s in state.storms
            ],
        }


def event_stream(
    spark: SparkSession,
    topic: str,
    bootstrap_servers: str,
    *,
    starting_offsets: str = "earliest",
    kafka_options: dict[str, str] | None = None,
    watermark_seconds: float = 60.0,
) -> DataFrame:
    """The topic's records, parsed with the job's schema (malformed values dropped), on event time."""
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap_servers)
        .option("subscribe", topic)
        .option("startingOffsets", starting_offsets)
        .option("failOnDataLoss", "false")
    )
    for key, value in (kafka_options or {}).items():
        reader = reader.option(key, value)
    parsed = reader.load().select(
        F.from_json(F.col("value").cast("string"), EVENT_SCHEMA, {"mode": "PERMISSIVE"}).alias("r")
    )
    records = parsed.where(problem_of(F.col("r")).isNull()).select("r.*")
    return records.withColumn("event_time", F.timestamp_seconds("ts")).withWatermark(
        "event_time", f"{int(watermark_seconds * 1000)} milliseconds"
    )


def activity(records: DataFrame) -> DataFrame:
    """Per group and event-time minute: what happened (updated rows only, state purged by the watermark)."""
    departure = F.col("type").isin(*DEPARTURES) | ((F.col("type") == "revoked") & (F.col("reason") == "stop"))
    size = F.coalesce(F.size("partitions"), F.lit(0))
    evicted = ((F.col("type") == "heartbeat_failed") & (F.col("code") == UNKNOWN_MEMBER_ID)) | (
        (F.col("type") == "lost") & F.col("reason").isin("membership lost", "poll timeout")
    )
    return records.groupBy("group", F.window("event_time", ACTIVITY_WINDOW).alias("w")).agg(
        F.count("*").alias("records"),
        F.sum((F.col("type") == "joining").cast("int")).alias("starts"),
        F.sum((F.col("type") == "stopped").cast("int")).alias("stops"),
        F.sum(F.when(F.col("type") == "revoked", size).otherwise(0)).alias("revoked_partitions"),
        F.sum(F.when(F.col("type") == "lost", size).otherwise(0)).alias("lost_partitions"),
        F.sum((F.col("type") == "fenced").cast("int")).alias("fenced"),
        F.sum(evicted.cast("int")).alias("evicted"),
        F.sum((F.col("type") == "heartbeat_failed").cast("int")).alias("heartbeat_failures"),
        F.min(F.when(departure, F.col("ts"))).alias("first_departure_ts"),
        # Each member's sync: the driver keeps each generation's earliest (a rebalance's start).
        F.collect_list(
            F.when(F.col("type") == "sync", F.struct("generation", F.col("ts").alias("start_ts")))
        ).alias("syncs"),
    )


@dataclass
class Follow:
    """The running query and the state it keeps current; :meth:`stop` ends it."""

    state: LiveState
    queries: list[StreamingQuery]

    def stop(self) -> None:
        for query in self.queries:
            query.stop()

    def check(self) -> None:
        """Raise the first query's failure, if one failed."""
        for query in self.queries:
            error = query.exception()
            if error is not None:
                raise AnalyticsError(f"the streaming query {query.name} failed: {str(error).splitlines()[0]}")


def follow(
    spark: SparkSession,
    topic: str,
    bootstrap_servers: str,
    *,
    rule: StormRule | None = None,
    watermark_seconds: float = 60.0,
    trigger_seconds: float = 2.0,
    starting_offsets: str = "earliest",
    kafka_options: dict[str, str] | None = None,
    checkpoint_dir: str | None = None,
    state: LiveState | None = None,
) -> Follow:
    """Start the live analysis; returns at once with the running queries and their :class:`LiveState`."""
    state = state or LiveState(rule or StormRule())
    records = event_stream(
        spark,
        topic,
        bootstrap_servers,
        starting_offsets=starting_offsets,
        kafka_options=kafka_options,
        watermark_seconds=watermark_seconds,
    )

    def on_batch(batch: DataFrame, _batch_id: int) -> None:
        rows = [
            row.asDict(recursive=True)
            for row in batch.select(
                "group",
                F.col("w.start").cast("double").alias("window_start"),
                *_COUNTS,
                "first_departure_ts",
                "syncs",
            ).collect()
        ]
        if rows:
            state.update(rows)

    writer = (
        activity(records)
        .writeStream.queryName("staticconsumer-follow")
        .outputMode("update")
        .foreachBatch(on_batch)
        .trigger(processingTime=f"{int(trigger_seconds * 1000)} milliseconds")
    )
    if checkpoint_dir is not None:
        writer = writer.option("checkpointLocation", checkpoint_dir)
    return Follow(state, [writer.start()])


def follow_command(args: argparse.Namespace) -> int:
    """The CLI: resolve the Kafka source, start Spark with it, follow until Ctrl-C or ``--for-seconds``."""
    from .jars import kafka_source_jars
    from .session import spark_session

    bootstrap = args.bootstrap_servers or os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if not bootstrap:
        raise AnalyticsError("--follow needs --bootstrap-servers HOST:PORT (or $KAFKA_BOOTSTRAP_SERVERS)")
    if args.storm_rebalances < 0 or args.storm_seconds <= 0:
        raise AnalyticsError("--storm-rebalances must be >= 0 and --storm-seconds > 0")
    jars = [str(jar) for jar in kafka_source_jars(quiet=args.quiet)]
    conf = {"spark.sql.shuffle.partitions": "2", **dict(args.conf)}  # state stores: one per partition

    def say(text: str) -> None:
        if not args.quiet:
            print(f"analyze: {text}", file=sys.stderr, flush=True)

    say(f"starting Spark ({args.master or 'local[*]'}) with the Kafka source ...")
    spark = spark_session(
        args.master,
        driver_memory=args.driver_memory,
        config=conf,
        packages=args.packages,
        jars=jars,
    )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rule = StormRule(args.storm_rebalances, args.storm_seconds)
    live_json = out / "live.json"

    def on_line(line: str) -> None:
        print(line, flush=True)
        partial = live_json.with_suffix(".json.tmp")
        partial.write_text(json.dumps(state.snapshot_unlocked(), indent=1) + "\n")
        partial.replace(live_json)

    state = LiveState(rule, on_line)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    running = follow(
        spark,
        args.follow,
        bootstrap,
        rule=rule,
        watermark_seconds=args.watermark,
        trigger_seconds=args.trigger,
        starting_offsets=args.starting_offsets,
        kafka_options=dict(args.kafka_option),
        checkpoint_dir=str(out / "checkpoints"),
        state=state,
    )
    say(
        f"following topic {args.follow} at {bootstrap}: a storm is more than {rule.rebalances} rebalances "
        f"after formation within {rule.seconds:g} s; watermark {args.watermark:g} s; Ctrl-C stops"
    )
    deadline = None if args.for_seconds is None else time.monotonic() + args.for_seconds
    try:
        while not stop.wait(0.5):
            running.check()
            if deadline is not None and time.monotonic() >= deadline:
                break
    except KeyboardInterrupt:
        pass
    finally:
        running.stop()
        spark.stop()
    storms = sum(len(g.storms) for g in state.groups.values())
    print(
        f"stopped following {args.follow}: {len(state.groups)} groups, {storms} storms; {live_json}",
        flush=True,
    )
    return 0

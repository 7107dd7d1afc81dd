"""The fleet rebalance analysis as Spark DataFrame transformations (no per-row Python, no UDFs).

Every stage is keyed so that it spreads over a cluster: deploy windows and generations by group,
sessions by (group, session), partition ownership by (group, topic, partition). Only the small
per-window summary and a bounded slice of intervals for the plots are collected to the driver.

Definitions (docs/analytics.md explains them with examples):
- A *session* is one consumer run (one ``start()``); a restart of an instance is a new session.
- A *deploy window* is a burst of lifecycle records (joining, the revoke of a stop, stopped, fenced,
  failed, leaving) of one group: a new window starts when such a record comes more than
  ``deploy_gap_seconds`` after the previous one. Every record belongs to the window open at its
  timestamp; a window opens ``skew_tolerance_seconds`` before its first record, for other hosts' clocks.
- Order across processes comes from the broker's generation numbers first and wall clocks second;
  within a process from ``seq``. Clock differences up to ``skew_tolerance_seconds`` are absorbed: an
  overlap of two owners shorter than that is treated as a clean handover.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from staticconsumer.eventlog.schema import RECORD_TYPES, SCHEMA_VERSION, tag_of

RECORD_TAGS = tuple(tag_of(record_type) for record_type in RECORD_TYPES)
LIFECYCLE = ("joining", "stopped", "fenced", "failed", "leaving")
SESSION_ENDS = ("assigned", "stopped", "fenced", "failed")
"""Records that end every partition a session owned (a new assignment replaces the whole old one)."""

UNKNOWN_MEMBER_ID = 25
INFINITY = float("inf")

EVENT_SCHEMA = T.StructType(
    [
        T.StructField("v", T.IntegerType()),
        T.StructField("type", T.StringType()),
        T.StructField("ts", T.DoubleType()),
        T.StructField("group", T.StringType()),
        T.StructField("instance", T.StringType()),
        T.StructField("member", T.StringType()),
        T.StructField("generation", T.LongType()),
        T.StructField("session", T.StringType()),
        T.StructField("seq", T.LongType()),
        T.StructField(
            "partitions",
            T.ArrayType(
                T.StructType(
                    [T.StructField("topic", T.StringType()), T.StructField("partition", T.IntegerType())]
                )
            ),
        ),
        T.StructField("reason", T.StringType()),
        T.StructField("leader", T.StringType()),
        T.StructField("is_leader", T.BooleanType()),
        T.StructField("skip_assignment", T.BooleanType()),
        T.StructField("protocol", T.StringType()),
        T.StructField("error", T.StringType()),
        T.StructField("code", T.IntegerType()),
        T.StructField("sink", T.StringType()),
        T.StructField("dropped", T.LongType()),
    ]
)
"""Schema version 1 of the event log (staticconsumer.eventlog.schema), as Spark reads it."""

_REQUIRED = ("v", "type", "ts", "group", "member", "generation", "session", "seq")


@dataclass(frozen=True)
class Options:
    """Tunables of the analysis; the defaults suit Kubernetes rollouts."""

    deploy_gap_seconds: float = 60.0
    """A quiet gap longer than this between lifecycle records separates two deploy windows."""
    skew_tolerance_seconds: float = 1.0
    """Clock difference between hosts that the analysis absorbs (overlaps shorter than this are ignored)."""


@dataclass
class Tables:
    """The job's outputs, one DataFrame per Parquet table (see docs/analytics.md for the columns)."""

    windows: DataFrame
    generations: DataFrame
    leaders: DataFrame
    ownership: DataFrame
    gaps: DataFrame
    overlaps: DataFrame
    moves: DataFrame
    sessions: DataFrame
    malformed: DataFrame

    def as_dict(self) -> dict[str, DataFrame]:
        return {
            "windows": self.windows,
            "generations": self.generations,
            "leaders": self.leaders,
            "ownership": self.ownership,
            "gaps": self.gaps,
            "overlaps": self.overlaps,
            "moves": self.moves,
            "sessions": self.sessions,
            "malformed": self.malformed,
        }


# -- reading ---------------------------------------------------------------------------------------


def read_lines(spark: SparkSession, paths: Sequence[str]) -> DataFrame:
    """Every non-blank line of every file under ``paths`` (files or directories, any Spark filesystem)."""
    raw = spark.read.option("recursiveFileLookup", "true").text(list(paths))
    return raw.select(F.col("value").alias("line"), F.col("_metadata.file_path").alias("file")).where(
        F.trim(F.col("value")) != ""
    )


def parse(lines: DataFrame) -> tuple[DataFrame, DataFrame]:
    """Split lines into schema-valid events and malformed lines (with the reason), never failing."""
    parsed = lines.withColumn("r", F.from_json(F.col("line"), EVENT_SCHEMA, {"mode": "PERMISSIVE"}))
    missing = F.lit(False)
    for name in _REQUIRED:
        missing = missing | F.col(f"r.{name}").isNull()
    reason = (
        F.when(F.col("r").isNull() | missing, F.lit("not JSON or a required field is missing"))
        .when(~F.col("r.type").isin(*RECORD_TAGS), F.lit("unknown record type"))
        .when(F.col("r.v") != SCHEMA_VERSION, F.lit(f"schema version is not {SCHEMA_VERSION}"))
    )
    parsed = parsed.withColumn("problem", reason)
    events = (
        parsed.where(F.col("problem").isNull())
        .select("r.*", "file")
        .withColumn(
            "partitions",
            F.coalesce(F.col("partitions"), F.array().cast(EVENT_SCHEMA["partitions"].dataType)),
        )
        .dropDuplicates(["session", "seq"])
    )
    malformed = parsed.where(F.col("problem").isNotNull()).select("file", "problem", "line")
    return events, malformed


def _owner(instance: Column, member: Column) -> Column:
    """The identity that survives restarts: the instance id, else (dynamic) the member id."""
    return F.coalesce(instance, F.concat(F.lit("member:"), member))


# -- deploy windows --------------------------------------------------------------------------------


def deploy_windows(events: DataFrame, options: Options) -> DataFrame:
    """Bursts of lifecycle records per group; each row is one window with its bounds [lo, hi)."""
    firsts = events.groupBy("group").agg(F.min("ts").alias("ts")).withColumn("type", F.lit("first"))
    stop_revoke = (F.col("type") == "revoked") & (F.col("reason") == "stop")
    life = (
        events.where(F.col("type").isin(*LIFECYCLE) | stop_revoke)
        .select("group", "ts", "type")
        .unionByName(firsts)
    )
    by_time = Window.partitionBy("group").orderBy("ts")
    life = life.withColumn(
        "starts_window",
        F.coalesce(
            (F.col("ts") - F.lag("ts").over(by_time) > options.deploy_gap_seconds).cast("int"), F.lit(1)
        ),
    ).withColumn("window", F.sum("starts_window").over(by_time.rowsBetween(Window.unboundedPreceding, 0)) - 1)
    windows = life.groupBy("group", "window").agg(
        F.min("ts").alias("start_ts"),
        F.max("ts").alias("last_lifecycle_ts"),
        F.sum((F.col("type") == "joining").cast("int")).alias("joins"),
        F.sum((F.col("type") == "stopped").cast("int")).alias("stops"),
    )
    by_window = Window.partitionBy("group").orderBy("window")
    return (
        windows.withColumn("next_start_ts", F.lead("start_ts").over(by_window))
        .withColumn(
            "lo",
            F.when(F.col("window") == 0, F.lit(-INFINITY)).otherwise(
                F.col("start_ts") - options.skew_tolerance_seconds
            ),
        )
        # Windows tile the time line: each ends where the next one opens (skew margin included).
        .withColumn(
            "hi",
            F.coalesce(F.col("next_start_ts") - options.skew_tolerance_seconds, F.lit(INFINITY)),
        )
    )


def in_window(frame: DataFrame, windows: DataFrame, ts: str) -> DataFrame:
    """``frame`` with the ``window`` whose [lo, hi) holds column ``ts`` (windows are few: broadcast)."""
    bounds = windows.select(F.col("group").alias("_wg"), F.col("window"), F.col("lo"), F.col("hi"))
    joined = frame.join(
        F.broadcast(bounds),
        (frame["group"] == bounds["_wg"]) & (frame[ts] >= bounds["lo"]) & (frame[ts] < bounds["hi"]),
        "left",
    )
    return joined.drop("_wg", "lo", "hi")


# -- generations and leaders -----------------------------------------------------------------------


def generations(events: DataFrame) -> DataFrame:
    """One row per (group, generation): when it began (first SyncGroup seen), who synced, who led."""
    syncs = events.where(F.col("type") == "sync")
    gens = syncs.groupBy("group", "generation").agg(
        F.min("ts").alias("start_ts"),
        F.countDistinct("session").alias("members"),
        F.min_by("leader", "ts").alias("leader_member"),
        F.max(F.col("skip_assignment").cast("int")).cast("boolean").alias("skip_assignment"),
        F.min_by("protocol", "ts").alias("protocol"),
    )
    by_gen = Window.partitionBy("group").orderBy("generation")
    gens = gens.withColumn("next_start_ts", F.lead("start_ts").over(by_gen)).withColumn(
        "previous_generation", F.lag("generation").over(by_gen)
    )
    # When did the rebalance that made this generation start? The first rejoin after the previous one.
    rejoins = events.where(F.col("type") == "rejoin").select(
        "group", "ts", F.lit(None).cast("long").alias("generation"), F.lit(0).alias("kind")
    )
    marks = gens.select("group", F.col("start_ts").alias("ts"), "generation", F.lit(1).alias("kind"))
    following = Window.partitionBy("group").orderBy("ts", "kind").rowsBetween(0, Window.unboundedFollowing)
    first_rejoin = (
        rejoins.unionByName(marks)
        .withColumn("next_generation", F.first("generation", ignorenulls=True).over(following))
        .where(F.col("kind") == 0)
        .groupBy("group", "next_generation")
        .agg(F.min("ts").alias("rebalance_start_ts"))
        .withColumnRenamed("group", "_rg")
    )
    gens = gens.join(
        first_rejoin,
        (gens["group"] == first_rejoin["_rg"]) & (gens["generation"] == first_rejoin["next_generation"]),
        "left",
    ).drop("_rg", "next_generation")
    return gens.withColumn("rebalance_seconds", F.col("start_ts") - F.col("rebalance_start_ts"))


def member_instances(events: DataFrame) -> DataFrame:
    """Which instance id each member id belonged to (member ids are unique per group)."""
    return (
        events.where(F.col("member") != "")
        .groupBy("group", "member")
        .agg(F.max("instance").alias("instance"))
    )


def leaders(events: DataFrame, members: DataFrame) -> DataFrame:
    """Each leader seen, in generation order; ``leader_changed`` when the leading instance changed."""
    syncs = events.where((F.col("type") == "sync") & (F.col("leader") != ""))
    seen = syncs.groupBy("group", "generation", "leader").agg(
        F.min("ts").alias("ts"),
        F.max((F.col("skip_assignment") & F.col("is_leader")).cast("int"))
        .cast("boolean")
        .alias("skip_assignment"),
    )
    names = members.select(
        F.col("group").alias("_mg"), F.col("member").alias("_mm"), F.col("instance").alias("leader_instance")
    )
    seen = seen.join(names, (seen["group"] == names["_mg"]) & (seen["leader"] == names["_mm"]), "left").drop(
        "_mg", "_mm"
    )
    seen = seen.withColumnRenamed("leader", "leader_member").withColumn(
        "leader_owner", _owner(F.col("leader_instance"), F.col("leader_member"))
    )
    order = Window.partitionBy("group").orderBy("generation", "ts")
    previous = F.lag("leader_owner").over(order)
    return seen.withColumn("leader_changed", previous.isNotNull() & (previous != F.col("leader_owner")))


# -- sessions ---------------------------------------------------------------------------------------


def sessions(events: DataFrame) -> DataFrame:
    """One row per session: its life, generations, how it ended, and whether its restart was absorbed."""
    is_type = {name: (F.col("type") == name) for name in ("sync", "stopped", "fenced", "failed", "leaving")}
    lost_membership = (F.col("type") == "lost") & F.col("reason").isin("membership lost", "poll timeout")
    evicted_heartbeat = (F.col("type") == "heartbeat_failed") & (F.col("code") == UNKNOWN_MEMBER_ID)
    per = events.groupBy("group", "session").agg(
        F.max("instance").alias("instance"),
        F.max_by("member", F.when(F.col("member") != "", F.col("seq"))).alias("member"),
        F.min("ts").alias("start_ts"),
        F.max("ts").alias("last_ts"),
        F.min_by("generation", F.when(is_type["sync"], F.col("seq"))).alias("first_generation"),
        F.max_by("generation", F.when(is_type["sync"], F.col("seq"))).alias("last_generation"),
        F.max(is_type["stopped"].cast("int")).alias("_stopped"),
        F.max(is_type["fenced"].cast("int")).alias("_fenced"),
        F.max(is_type["failed"].cast("int")).alias("_failed"),
        F.max(is_type["leaving"].cast("int")).cast("boolean").alias("left_group"),
        F.sum((F.col("type") == "heartbeat_failed").cast("int")).alias("heartbeat_failures"),
        F.max((evicted_heartbeat | lost_membership).cast("int")).cast("boolean").alias("evicted"),
        F.sum(((F.col("type") == "commit") & F.col("error").isNotNull()).cast("int")).alias("failed_commits"),
        F.max(F.when(F.col("type") == "dropped", F.col("dropped"))).alias("dropped_records"),
    )
    # Without a final record a session either died (a later session of its instance started, or the
    # group moved past its last generation) or is still running when the log ends.
    newest = events.where(is_type["sync"]).groupBy("group").agg(F.max("generation").alias("_newest"))
    per = per.join(newest, "group", "left")
    previous = Window.partitionBy("group", "instance").orderBy("start_ts", "session")
    superseded = (F.col("instance").isNotNull() & F.lead("session").over(previous).isNotNull()) | (
        F.coalesce(F.col("last_generation"), F.lit(-1)) < F.coalesce(F.col("_newest"), F.lit(-1))
    )
    per = per.withColumn(
        "ended",
        F.when(F.col("_fenced") == 1, "fenced")
        .when(F.col("_failed") == 1, "failed")
        .when(F.col("_stopped") == 1, "stopped")
        .when(superseded, "vanished")
        .otherwise("running"),
    ).drop("_stopped", "_fenced", "_failed", "_newest")
    restart = F.col("instance").isNotNull() & F.lag("session").over(previous).isNotNull()
    return (
        per.withColumn("restart", restart)
        .withColumn("previous_last_generation", F.lag("last_generation").over(previous))
        .withColumn("previous_ended", F.lag("ended").over(previous))
        .withColumn(
            "restart_absorbed",
            F.col("restart") & (F.col("first_generation") == F.col("previous_last_generation")),
        )
        .withColumn("owner", _owner(F.col("instance"), F.col("member")))
    )


# -- partition ownership ----------------------------------------------------------------------------


def ownership(events: DataFrame, gens: DataFrame, session_table: DataFrame) -> DataFrame:
    """Who owned each partition when: one interval per (session, assignment, partition).

    An interval ends at the session's own revoke or lost record for the partition, or at its next
    assignment, stop, fencing or fatal error, whichever comes first in the session's order. A session
    that left no such record (killed) is ended by inference at the next owner's assignment of the
    partition or the group's next generation, whichever is first (``end_inferred``); with neither, the
    interval is still open at the end of the log.
    """
    by_seq = Window.partitionBy("session").orderBy("seq")
    ends = (
        events.where(F.col("type").isin(*SESSION_ENDS))
        .select("session", "seq", "ts", "type", "group", "instance", "member", "generation", "partitions")
        .withColumn("session_end", F.lead(F.struct("seq", "ts", "type")).over(by_seq))
    )
    assigned = (
        ends.where(F.col("type") == "assigned")
        .select(
            "group",
            "instance",
            "member",
            "session",
            "seq",
            "ts",
            "generation",
            "session_end",
            F.explode("partitions").alias("p"),
        )
        .select("*", F.col("p.topic").alias("topic"), F.col("p.partition").alias("partition"))
        .drop("p")
        .withColumn("type", F.lit("assigned"))
    )
    released = (
        events.where(F.col("type").isin("revoked", "lost"))
        .select("group", "session", "seq", "ts", "type", F.explode("partitions").alias("p"))
        .select("*", F.col("p.topic").alias("topic"), F.col("p.partition").alias("partition"))
        .drop("p")
    )
    stream = assigned.unionByName(released, allowMissingColumns=True)
    per_partition = Window.partitionBy("session", "topic", "partition").orderBy("seq")
    stream = stream.withColumn("next_record", F.lead(F.struct("seq", "ts", "type")).over(per_partition))
    intervals = stream.where(F.col("type") == "assigned")
    first_by_seq = (
        F.when(F.col("session_end").isNull(), F.col("next_record"))
        .when(F.col("next_record").isNull(), F.col("session_end"))
        .when(F.col("next_record.seq") < F.col("session_end.seq"), F.col("next_record"))
        .otherwise(F.col("session_end"))
    )
    intervals = intervals.withColumn("explicit_end", first_by_seq)
    next_gen = gens.select(
        F.col("group").alias("_gg"),
        F.col("generation").alias("_gn"),
        F.col("next_start_ts").alias("next_gen_ts"),
    )
    intervals = intervals.join(
        next_gen,
        (intervals["group"] == next_gen["_gg"]) & (intervals["generation"] == next_gen["_gn"]),
        "left",
    ).drop("_gg", "_gn")
    last_seen = session_table.select(F.col("session").alias("_ss"), F.col("last_ts").alias("session_last_ts"))
    intervals = intervals.join(last_seen, intervals["session"] == last_seen["_ss"], "left").drop("_ss")
    order = Window.partitionBy("group", "topic", "partition").orderBy("generation", "ts", "session")
    intervals = intervals.withColumn("next_owner_ts", F.lead("ts").over(order))
    successor = F.least(F.col("next_owner_ts"), F.col("next_gen_ts"))  # least/greatest skip nulls
    inferred = F.when(successor.isNotNull(), F.greatest(F.col("ts"), successor))
    return intervals.select(
        "group",
        "topic",
        "partition",
        "generation",
        "session",
        "instance",
        "member",
        _owner(F.col("instance"), F.col("member")).alias("owner"),
        F.col("ts").alias("start_ts"),
        F.coalesce(F.col("explicit_end.ts"), inferred).alias("end_ts"),
        F.coalesce(
            F.col("explicit_end.type"),
            F.when(inferred.isNotNull(), F.lit("inferred")),
        ).alias("ended_by"),
        (F.col("explicit_end").isNull() & inferred.isNotNull()).alias("end_inferred"),
        "session_last_ts",
    )


def handovers(
    intervals: DataFrame, log_end: DataFrame, options: Options
) -> tuple[DataFrame, DataFrame, DataFrame]:
    """Gaps (nobody owned the partition), overlaps (two owners at once) and moves between instances.

    Intervals are ordered per partition by generation, then start time: the broker's generation order
    is immune to clock skew, so only handovers inside one generation depend on clocks.
    """
    ends = log_end.select(F.col("group").alias("_lg"), F.col("log_end_ts"))
    frame = intervals.join(F.broadcast(ends), intervals["group"] == ends["_lg"], "left").drop("_lg")
    frame = frame.withColumn("effective_end_ts", F.coalesce(F.col("end_ts"), F.col("log_end_ts")))
    order = Window.partitionBy("group", "topic", "partition").orderBy("generation", "start_ts", "session")
    before = order.rowsBetween(Window.unboundedPreceding, -1)
    frame = frame.withColumn(
        "prev", F.max(F.struct("effective_end_ts", "session", "owner", "end_inferred")).over(before)
    ).withColumn("prev_owner_in_order", F.lag("owner").over(order))
    # Gaps, overlaps and moves are three filters of this one sorted pass: keep it, don't sort thrice.
    frame = frame.withColumn("gap", F.col("start_ts") - F.col("prev.effective_end_ts")).persist(
        StorageLevel.MEMORY_AND_DISK
    )
    keys = ["group", "topic", "partition"]
    gaps = frame.where(F.col("gap") > 0).select(
        *keys,
        F.col("prev.effective_end_ts").alias("gap_start_ts"),
        F.col("start_ts").alias("gap_end_ts"),
        F.col("gap").alias("seconds"),
        F.col("prev.owner").alias("from_owner"),
        F.col("owner").alias("to_owner"),
        F.col("prev.end_inferred").alias("after_inferred_end"),
        F.col("generation").alias("to_generation"),
    )
    overlap_end = F.least(F.col("prev.effective_end_ts"), F.col("effective_end_ts"))
    overlaps = frame.where(
        (F.col("gap") < -options.skew_tolerance_seconds)
        & (overlap_end - F.col("start_ts") > options.skew_tolerance_seconds)
    ).select(
        *keys,
        F.col("start_ts").alias("overlap_start_ts"),
        overlap_end.alias("overlap_end_ts"),
        (overlap_end - F.col("start_ts")).alias("seconds"),
        F.col("prev.session").alias("earlier_session"),
        F.col("prev.owner").alias("earlier_owner"),
        F.col("session").alias("later_session"),
        F.col("owner").alias("later_owner"),
        F.col("generation").alias("later_generation"),
    )
    moves = frame.where(
        F.col("prev_owner_in_order").isNotNull() & (F.col("prev_owner_in_order") != F.col("owner"))
    ).select(
        *keys,
        F.col("start_ts").alias("ts"),
        F.col("prev_owner_in_order").alias("from_owner"),
        F.col("owner").alias("to_owner"),
        "generation",
    )
    return gaps, overlaps, moves


# -- the whole job ------------------------------------------------------------------------------------


def _count_by_window(frame: DataFrame, windows: DataFrame, ts: str, **aggregates: Column) -> DataFrame:
    placed = in_window(frame, windows, ts)
    return placed.groupBy("group", "window").agg(*(value.alias(name) for name, value in aggregates.items()))


def build(events: DataFrame, malformed: DataFrame, options: Options) -> Tables:
    """All tables from parsed events; nothing is computed until a table is written or collected."""
    events = events.persist(StorageLevel.MEMORY_AND_DISK)
    windows = deploy_windows(events, options).persist(StorageLevel.MEMORY_AND_DISK)
    gens = in_window(generations(events), windows, "start_ts").persist(StorageLevel.MEMORY_AND_DISK)
    members = member_instances(events)
    leader_table = in_window(leaders(events, members), windows, "ts")
    session_table = sessions(events).persist(StorageLevel.MEMORY_AND_DISK)
    intervals = ownership(events, gens, session_table).persist(StorageLevel.MEMORY_AND_DISK)
    log_end = events.groupBy("group").agg(F.max("ts").alias("log_end_ts"))
    gaps, overlaps, moves = handovers(intervals, log_end, options)
    gaps = in_window(gaps, windows, "gap_start_ts").persist(StorageLevel.MEMORY_AND_DISK)
    overlaps = in_window(overlaps, windows, "overlap_start_ts")
    moves = in_window(moves, windows, "ts")
    intervals_out = in_window(intervals, windows, "start_ts")
    sessions_out = in_window(session_table, windows, "start_ts")

    released = events.where(F.col("type").isin("revoked", "lost")).select(
        "group", "ts", "type", F.size("partitions").alias("n")
    )
    counts = [
        _count_by_window(
            gens.drop("window"),
            windows,
            "start_ts",
            rebalances=F.count("*"),
            first_generation=F.min("generation"),
            last_generation=F.max("generation"),
            rebalance_seconds=F.sum("rebalance_seconds"),
        ),
        _count_by_window(
            released,
            windows,
            "ts",
            revoked_partitions=F.sum(F.when(F.col("type") == "revoked", F.col("n")).otherwise(0)),
            lost_partitions=F.sum(F.when(F.col("type") == "lost", F.col("n")).otherwise(0)),
        ),
        _count_by_window(
            gaps.drop("window"),
            windows,
            "gap_start_ts",
            unowned_gaps=F.count("*"),
            unowned_partition_seconds=F.sum("seconds"),
            longest_unowned_seconds=F.max("seconds"),
            partitions_unowned=F.countDistinct("topic", "partition"),
        ),
        _count_by_window(
            overlaps.drop("window"),
            windows,
            "overlap_start_ts",
            double_owned=F.count("*"),
            double_owned_seconds=F.sum("seconds"),
        ),
        _count_by_window(moves.drop("window"), windows, "ts", moved_partitions=F.count("*")),
        _count_by_window(
            session_table,
            windows,
            "start_ts",
            restarts=F.sum(F.col("restart").cast("int")),
            restarts_absorbed=F.sum(F.col("restart_absorbed").cast("int")),
        ),
        _count_by_window(
            session_table,
            windows,
            "last_ts",
            fenced=F.sum((F.col("ended") == "fenced").cast("int")),
            evicted=F.sum(F.col("evicted").cast("int")),
            vanished=F.sum((F.col("ended") == "vanished").cast("int")),
            running_at_end=F.sum((F.col("ended") == "running").cast("int")),
            dropped_records=F.sum(F.coalesce(F.col("dropped_records"), F.lit(0))),
        ),
        _count_by_window(
            leader_table.drop("window"),
            windows,
            "ts",
            leader_changes=F.sum(F.col("leader_changed").cast("int")),
            skip_assignments=F.sum(F.col("skip_assignment").cast("int")),
        ),
    ]
    summary = windows.select(
        "group", "window", "start_ts", "last_lifecycle_ts", "next_start_ts", "joins", "stops"
    )
    for table in counts:
        summary = summary.join(table, ["group", "window"], "left")
    zero_filled = [
        "rebalances",
        "revoked_partitions",
        "lost_partitions",
        "unowned_gaps",
        "unowned_partition_seconds",
        "longest_unowned_seconds",
        "partitions_unowned",
        "double_owned",
        "double_owned_seconds",
        "moved_partitions",
        "restarts",
        "restarts_absorbed",
        "fenced",
        "evicted",
        "vanished",
        "running_at_end",
        "dropped_records",
        "leader_changes",
        "skip_assignments",
        "rebalance_seconds",
    ]
    summary = summary.fillna(0, subset=zero_filled).persist(StorageLevel.MEMORY_AND_DISK)
    malformed_counts = malformed.groupBy("file", "problem").agg(
        F.count("*").alias("lines"), F.min("line").alias("example")
    )
    return Tables(
        windows=summary,
        generations=gens,
        leaders=leader_table,
        ownership=intervals_out,
        gaps=gaps,
        overlaps=overlaps,
        moves=moves,
        sessions=sessions_out,
        malformed=malformed_counts,
    )

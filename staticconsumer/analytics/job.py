"""The fleet rebalance analysis as Spark DataFrame transformations (no per-row Python, no UDFs).

The plan is a few passes over the input, whatever its size (docs/analytics.md, "How the work runs"):

1. **One scan** (:func:`parse`, :func:`scan`): every line is parsed with an explicit schema, nothing
   exploded (assignments keep their partitions as arrays), then shuffled once by session and sorted by
   ``seq``; running windows in that order mark repeated records, each session's last timestamp and the
   assignment each release or end belongs to. Materialized (lineage cut); the raw files are never
   read again.
2. **Records** (:func:`records`): the scan without repeated or malformed lines, kept partitioned by
   group (what every small table groups by first). No ``dropDuplicates`` over array columns (that is
   a full sort of the input).
3. **Small tables** from the records: deploy windows, generations, leaders, sessions (a few rows per
   restart; keyed by group, (group, generation), (group, session)).
4. **Ownership** (:func:`ownership`): each assignment with its releases and the record that ends it,
   found inside the scan's session partitioning; then its partitions exploded and shuffled once, keyed
   by the partition, and one sort gives every interval's handover (gaps, overlaps, moves). This is the
   only stage whose size is partitions x assignments, and it spreads over as many tasks as the fleet
   has partitions: one huge group is no hot spot. Each interval is placed in its deploy windows there.
5. **One aggregation** for the per-window summary: every contribution is a row in its window (the
   handovers placed by step 4, the rest by a broadcast join on (group, time bucket) with the exact
   range test, :func:`in_window`), then a single ``groupBy(group, window)``.

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

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from staticconsumer.eventlog.schema import RECORD_TYPES, SCHEMA_VERSION, tag_of

RECORD_TAGS = tuple(tag_of(record_type) for record_type in RECORD_TYPES)
LIFECYCLE = ("joining", "stopped", "fenced", "failed", "leaving")
DEPARTURES = ("stopped", "fenced", "failed", "leaving")
SESSION_ENDS = ("assigned", "stopped", "fenced", "failed")
"""Records that end every partition a session owned (a new assignment replaces the whole old one)."""
RELEASES = ("revoked", "lost")

UNKNOWN_MEMBER_ID = 25
INFINITY = float("inf")
CACHE = StorageLevel.MEMORY_AND_DISK
"""The small frames (records, windows, generations, sessions): memory, spilled to disk if need be.
(PySpark's levels are the serialized ones: compressed with ``spark.rdd.compress``.)"""
SCAN = StorageLevel.MEMORY_AND_DISK
"""The scan (every line with its partitions as read, nothing exploded): serialized and compressed in
the heap's storage memory, which sorts and shuffles may take back (the blocks then go to local disk)."""
BIG = StorageLevel.DISK_ONLY
"""The ownership intervals with their handovers (one row per assigned partition, the one frame larger
than the input): on local disk, compressed, read back once per table. In the heap they would crowd out
the sort that makes them."""


def materialize(frame: DataFrame, level: StorageLevel) -> DataFrame:
    """``frame`` computed now, kept at ``level``, as a new frame whose plan is just its rows.

    Unlike ``persist`` this cuts the lineage: every frame built on it is analysed, optimized and
    re-planned by adaptive execution (at every stage) without the whole plan of the scan beneath.
    With ``persist`` that planning was a fixed cost of tens of seconds on the driver, whatever the
    input's size (docs/analytics.md, "How the work runs"). The rows keep their partitioning, so a
    frame partitioned by session or by partition is not shuffled again.
    """
    return frame.localCheckpoint(eager=True, storageLevel=level)


ADAPTIVE = "spark.sql.adaptive.enabled"


def materialize_partitioned(frame: DataFrame, level: StorageLevel) -> DataFrame:
    """:func:`materialize` for a frame shuffled by a key its readers group by: the kept rows say so.

    A frame checkpointed under adaptive execution forgets its partitioning (its plan's partitioning is
    unknown until it has run), so every reader shuffled the input-sized rows again for a grouping they
    already had: the scan's rows once more by session, the ownership intervals once more by partition.
    Planned without adaptive execution, the checkpoint keeps its hash partitioning and the readers
    plan no exchange. Only this plan is affected: its shuffle is an explicit ``repartition`` that
    adaptive execution would not coalesce anyway, and its joins are broadcast by hint.
    """
    conf = frame.sparkSession.conf
    before = conf.get(ADAPTIVE)
    conf.set(ADAPTIVE, "false")
    try:
        return materialize(frame, level)
    finally:
        conf.set(ADAPTIVE, before if before is not None else "true")


PARTITION = T.StructType(
    [T.StructField("topic", T.StringType()), T.StructField("partition", T.IntegerType())]
)

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
        T.StructField("partitions", T.ArrayType(PARTITION)),
        T.StructField("reason", T.StringType()),
        T.StructField("leader", T.StringType()),
        T.StructField("is_leader", T.BooleanType()),
        T.StructField("skip_assignment", T.BooleanType()),
        T.StructField("protocol", T.StringType()),
        T.StructField("error", T.StringType()),
        T.StructField("code", T.IntegerType()),
        T.StructField("sink", T.StringType()),
        T.StructField("dropped", T.LongType()),
        # Optional fields of schema version 1 that newer consumers may write (the KIP-848 protocol);
        # absent in older logs, read as null. Unknown fields beyond these are ignored.
        T.StructField("group_protocol", T.StringType()),
        T.StructField("rebalance_protocol", T.StringType()),
        T.StructField("member_epoch", T.LongType()),
    ]
)
"""Schema version 1 of the event log (staticconsumer.eventlog.schema), as Spark reads it: never inferred."""

_REQUIRED = ("v", "type", "ts", "group", "member", "generation", "session", "seq")
_USED = tuple(f.name for f in EVENT_SCHEMA.fields if f.name != "partitions")
"""Every field but the partitions (which only assigned, revoked and lost records keep)."""


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


# Columns written without a Parquet dictionary: nearly one distinct value per row (times, the
# session and member ids), where the writer's dictionary hash map is pure cost (a third of the large
# tables' write CPU in a profile) and falls back to plain encoding anyway once the page's dictionary
# fills. Readers see the same values; only the encoding differs.
PLAIN_COLUMNS: dict[str, tuple[str, ...]] = {
    "ownership": ("session", "member", "start_ts", "end_ts", "session_last_ts"),
    "gaps": ("gap_start_ts", "gap_end_ts", "seconds"),
}


def write_options(table: str) -> dict[str, str]:
    """Parquet writer options of one table (per-column dictionary switches, see ``PLAIN_COLUMNS``)."""
    return {f"parquet.enable.dictionary#{name}": "false" for name in PLAIN_COLUMNS.get(table, ())}


# -- reading ---------------------------------------------------------------------------------------


def read_lines(spark: SparkSession, paths: Sequence[str]) -> DataFrame:
    """Every non-blank line of every file under ``paths`` (files or directories, any Spark filesystem)."""
    raw = spark.read.option("recursiveFileLookup", "true").text(list(paths))
    return raw.select(F.col("value").alias("line"), F.col("_metadata.file_path").alias("file")).where(
        F.trim(F.col("value")) != ""
    )


def problem_of(parsed: Column) -> Column:
    """Why a parsed line is not a valid record, or null when it is."""
    missing = F.lit(False)
    for name in _REQUIRED:
        missing = missing | parsed[name].isNull()
    return (
        F.when(parsed.isNull() | missing, F.lit("not JSON or a required field is missing"))
        .when(~parsed["type"].isin(*RECORD_TAGS), F.lit("unknown record type"))
        .when(parsed["v"] != SCHEMA_VERSION, F.lit(f"schema version is not {SCHEMA_VERSION}"))
    )


def parse(lines: DataFrame) -> DataFrame:
    """Every line parsed (explicit schema, never failing): one row per line, nothing exploded.

    Only assigned, revoked and lost records keep their partitions (the ownership stage's input); only
    malformed lines keep their text and file (the malformed table's). ``row_id`` identifies a line
    (duplicates of one record have different ids; :func:`scan` marks all but the first).
    """
    parsed = lines.select(
        F.monotonically_increasing_id().alias("row_id"),
        F.from_json(F.col("line"), EVENT_SCHEMA, {"mode": "PERMISSIVE"}).alias("r"),
        "line",
        "file",
    ).withColumn("problem", problem_of(F.col("r")))
    valid = F.col("problem").isNull()
    ownership_record = valid & F.col("r.type").isin("assigned", *RELEASES)
    return parsed.select(
        "row_id",
        *(F.col(f"r.{name}").alias(name) for name in _USED),
        F.when(valid, F.coalesce(F.size(F.col("r.partitions")), F.lit(0))).alias("n"),
        F.when(ownership_record, F.col("r.partitions")).alias("partitions"),
        "problem",
        F.when(~valid, F.col("file")).alias("file"),
        F.when(~valid, F.col("line")).alias("line"),
    )


def shuffle_partitions(frame: DataFrame) -> int:
    """The two input-sized shuffles (the scan's, the exploded partitions') keep this many partitions.

    Adaptive execution would coalesce them to 64 MB each (three or four tasks at full size on two
    cores: one core idle for the last, and tasks whose sort, window buffer and cache blocks crowd a
    2 GB heap into spilling and failed page allocations). ``spark.sql.shuffle.partitions`` is sized
    from the input when the job starts (one per 32 MB) unless the user set it.
    """
    return int(frame.sparkSession.conf.get("spark.sql.shuffle.partitions") or "200")


def scan(parsed: DataFrame) -> DataFrame:
    """The one pass over the input: every line, grouped by session and ordered by ``seq``, kept.

    One shuffle by session (of lines as read: the partition arrays travel unexploded) and one sort
    by (session, seq). In that order, windows that only look backwards (linear in a session's length)
    mark what the later stages need:

    - ``dup``: a repeated ``(session, seq)`` (the first line read counts, the others are ignored);
    - ``session_last_ts``: the session's last timestamp;
    - ``segment``: the latest record up to and including this one that ends a session's ownership
      (assigned, stopped, fenced, failed). An assignment's releases are the revoked and lost records
      of its segment; the record that ends it is the next one whose ``previous_segment`` it is.

    Malformed lines stay (under a null session key, apart from every session) for the malformed
    table. Materialized (:func:`materialize`): everything after this reads the kept rows, never the
    files again, and plans without the parse beneath.
    """
    valid = F.col("problem").isNull()
    keyed = parsed.withColumn("_key", F.when(valid, F.col("session"))).repartition(
        shuffle_partitions(parsed), "_key"
    )
    by_seq = Window.partitionBy("_key").orderBy("seq", "row_id")
    previous_seq = F.lag("seq").over(by_seq)
    marked = keyed.withColumn(
        "dup", F.coalesce(valid & previous_seq.isNotNull() & (previous_seq == F.col("seq")), F.lit(False))
    )
    live = valid & ~F.col("dup")
    ends = F.when(live & F.col("type").isin(*SESSION_ENDS), F.struct("seq", "type"))
    scanned = marked.select(
        "*",
        F.max(F.when(live, F.col("ts")))
        .over(by_seq.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing))
        .alias("session_last_ts"),
        F.last(ends, ignorenulls=True)
        .over(by_seq.rowsBetween(Window.unboundedPreceding, 0))
        .alias("segment"),
        F.last(ends, ignorenulls=True)
        .over(by_seq.rowsBetween(Window.unboundedPreceding, -1))
        .alias("previous_segment"),
    )
    return materialize_partitioned(scanned, SCAN)


def malformed_lines(scanned: DataFrame) -> DataFrame:
    """The malformed lines of the scan: file, problem, line."""
    return scanned.where(F.col("problem").isNotNull()).select("file", "problem", "line")


def _owner(instance: Column, member: Column) -> Column:
    """The identity that survives restarts: the instance id, else (dynamic) the member id."""
    return F.coalesce(instance, F.concat(F.lit("member:"), member))


# -- records ----------------------------------------------------------------------------------------


def records(scanned: DataFrame) -> DataFrame:
    """One row per distinct ``(session, seq)``, without partitions (``n`` counts them). Materialized:
    every small table is built from it, and its rows are few (one per line).

    Kept hash-partitioned by group: every small table groups or orders by the group first (deploy
    windows, generations, leaders, sessions), so their aggregations and windows run where the rows
    are. Planned from rows partitioned by session, each of them shuffled the records again, a Spark job
    per shuffle under adaptive execution (a tenth of a CPU-second each at any size: the planning
    step's 25 small jobs).
    """
    live = scanned.where(F.col("problem").isNull() & ~F.col("dup"))
    rows = live.select("row_id", *_USED, "n", "session_last_ts")
    return materialize_partitioned(rows.repartition(small_partitions(rows), "group"), CACHE)


def small_partitions(frame: DataFrame) -> int:
    """Partitions of the records: one per core of the session, at most the input-sized count.

    The records are one short row per line (no partition lists) and every small table's stage reads
    all of them: sized by the input (22 at full size on two cores) each of those some 25 stages ran 22
    tasks for a few thousand rows of output, a fixed cost per task that bought no parallelism.
    """
    cores = frame.sparkSession.sparkContext.defaultParallelism
    return max(1, min(shuffle_partitions(frame), cores))


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


MAX_BUCKETS_PER_GROUP = 1024
BUCKET_BUDGET = 200_000
"""At most this many (group, time bucket) keys for all deploy windows together (see :class:`Placement`)."""


@dataclass(frozen=True)
class Span:
    """The log's time span and about how many groups it has (sizes :class:`Placement`'s buckets)."""

    first_ts: float
    last_ts: float
    groups: int


@dataclass(frozen=True)
class Placement:
    """The deploy windows, ready to place rows in them (:func:`in_window`) by an equi-join.

    The log's span is cut into equal time buckets and every window is listed once per bucket it
    touches, so a row meets the one or two windows of its own (group, bucket) instead of every window
    of its group (a range condition tested against each, 50 per row in a 50-deploy log: a tenth of the
    job's CPU on the per-partition tables). Rows and bounds outside the span fall in the first or last
    bucket; bucketing is monotonic, so a window that holds a timestamp always shares its bucket, and
    the exact [lo, hi) test decides as before.
    """

    windows: DataFrame
    origin: float
    last: float
    width: float

    @classmethod
    def of(cls, windows: DataFrame, span: Span | None) -> Placement:
        if span is None or not (span.last_ts > span.first_ts):  # no span known (or NaN): one bucket
            return cls(windows, 0.0, 0.0, INFINITY)
        buckets = max(1, min(MAX_BUCKETS_PER_GROUP, BUCKET_BUDGET // max(span.groups, 1)))
        return cls(windows, span.first_ts, span.last_ts, (span.last_ts - span.first_ts) / buckets)

    def bucket(self, ts: str) -> str:
        """The bucket of column ``ts``, as SQL text.

        Text, not Column calls: each ``F.*`` call is a round trip to the JVM, and on a loaded machine
        the driver's planning was mostly those (tens of thousands, a few ms each). ``repr`` cast to a
        double is the same double as ``F.lit``'s (folded to a constant when planned).
        """
        if math.isinf(self.width):
            return "CAST(0 AS BIGINT)"
        origin, last, width = (
            f"CAST('{value!r}' AS DOUBLE)" for value in (self.origin, self.last, self.width)
        )
        inside = f"LEAST(GREATEST(`{ts}`, {origin}), {last})"
        return f"CAST(FLOOR(({inside} - {origin}) / {width}) AS BIGINT)"

    def bounds(self) -> DataFrame:
        """(group, bucket, window, lo, hi): each window once per bucket from its lo's to its hi's."""
        return self.windows.selectExpr(
            "`group` AS _wg",
            f"explode(sequence({self.bucket('lo')}, {self.bucket('hi')})) AS _wb",
            "window",
            "lo",
            "hi",
        )


def in_window(frame: DataFrame, placement: Placement, ts: str) -> DataFrame:
    """``frame`` with the ``window`` whose [lo, hi) holds column ``ts`` (windows are few: broadcast).

    A broadcast join keeps ``frame``'s partitioning, so no stage after it shuffles again for it.
    The condition is SQL text over names only one side has (see :meth:`Placement.bucket`).
    """
    keyed = frame.withColumn("_tb", F.expr(placement.bucket(ts)))
    condition = f"`group` = _wg AND _tb = _wb AND `{ts}` >= lo AND `{ts}` < hi"
    joined = keyed.join(F.broadcast(placement.bounds()), F.expr(condition), "left")
    return joined.drop("_wg", "_wb", "_tb", "lo", "hi")


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
        F.max("group_protocol").alias("group_protocol"),
        # Optional in the log (absent before cooperative existed): [] then; both during a migration.
        F.array_sort(F.collect_set("rebalance_protocol")).alias("rebalance_protocols"),
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
    # The generation of the first mark at or after each rejoin, found walking back in time: a running
    # frame (linear), where a frame to the end would be quadratic in the group's rejoins. Two marks at
    # one instant: the lower generation.
    backwards = (
        Window.partitionBy("group")
        .orderBy(F.desc("ts"), F.desc("kind"), F.desc("generation"))
        .rowsBetween(Window.unboundedPreceding, 0)
    )
    first_rejoin = (
        rejoins.unionByName(marks)
        .withColumn("next_generation", F.last("generation", ignorenulls=True).over(backwards))
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
    # Formation: the generations a group went through before any member left it. Every later one is a
    # rebalance after the group formed (what the demo counts).
    departures = (
        events.where(
            F.col("type").isin(*DEPARTURES) | ((F.col("type") == "revoked") & (F.col("reason") == "stop"))
        )
        .groupBy(F.col("group").alias("_dg"))
        .agg(F.min("ts").alias("_first_departure"))
    )
    gens = gens.join(F.broadcast(departures), gens["group"] == departures["_dg"], "left")
    gens = gens.withColumn(
        "formation", F.coalesce(F.col("start_ts") < F.col("_first_departure"), F.lit(True))
    ).drop("_dg", "_first_departure")
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
    # Grouped by (group, session) over records already partitioned by session: no shuffle here.
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
        F.max("group_protocol").alias("group_protocol"),
    )
    # Without a final record a session either died (a later session of its instance started, or the
    # group moved past its last generation) or is still running when the log ends.
    newest = (
        events.where(is_type["sync"])
        .groupBy(F.col("group").alias("_ng"))
        .agg(F.max("generation").alias("_newest"))
    )
    per = per.join(F.broadcast(newest), per["group"] == newest["_ng"], "left").drop("_ng")
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


# -- partition ownership and handovers ----------------------------------------------------------------

_OPENS, _RELEASES, _CLOSES = 0, 1, 2
"""The roles a record plays in an assignment's segment: the assignment itself, one of its releases,
or the record that ends it."""
_INLINE_RELEASES = 3
"""Releases per assignment looked up without a lambda (a session revokes once per rebalance)."""


def _partition_key(partition: Column) -> Column:
    """A (topic, partition) struct as one string, equal exactly when the structs are (a null stays null).

    Arrays of strings are de-duplicated by generated code with hashing; ``array_distinct`` over
    structs by interpreted, pairwise comparisons. Only that de-duplication needs the keys, and only
    for an assignment whose partition numbers repeat (:func:`_repeated`): searching an array of
    structs (``array_contains``, ``array_position``, ``=``) is generated code comparing the rows'
    bytes, so the releases and the exploded rows compare the structs themselves. The topic is
    length-prefixed, so no topic name can make two keys collide.
    """
    topic, number = partition["topic"], partition["partition"]
    return F.when(
        partition.isNotNull(),
        F.concat(
            F.coalesce(F.concat(F.length(topic).cast("string"), F.lit(":"), topic), F.lit("N")),
            F.lit("/"),
            F.coalesce(number.cast("string"), F.lit("N")),
        ),
    )


def _partition_keys(partitions: Column) -> Column:
    """:func:`_partition_key` of every element."""
    return F.transform(partitions, _partition_key)


def _repeated(partitions: Column) -> Column:
    """Whether some (topic, partition) appears twice in ``partitions`` (nulls count as equal).

    Exact, and cheap in the common case: distinct partition numbers (an int array, de-duplicated by
    generated code with hashing) mean distinct partitions, so the keys (:func:`_partition_keys`, a
    lambda per element) are built only for an assignment whose numbers repeat (several topics, or
    a partition named twice): a ``when`` branch other than the first is evaluated only when taken
    (never hoisted as a common subexpression).
    """
    numbers_repeat = F.size(F.array_distinct(partitions["partition"])) < F.size(partitions)
    keys_repeat = F.size(F.array_distinct(_partition_keys(partitions))) < F.size(partitions)
    return F.when(numbers_repeat, keys_repeat).otherwise(F.lit(False))


def _assignments(scanned: DataFrame) -> DataFrame:
    """One row per assignment record with its partitions, its releases and the record that ends it.

    Grouped by (session, assignment) inside the scan's session partitioning, so nothing is shuffled:
    each assigned record opens a segment, the revoked and lost records after it belong to it, and the
    session's next assigned, stopped, fenced or failed record closes it (``session_end``). A record
    that closes one segment and opens the next appears once in each.
    """
    live = F.col("problem").isNull() & ~F.col("dup")
    after_assignment = F.col("segment.type") == "assigned"
    opens = live & (F.col("type") == "assigned")
    releases = live & F.col("type").isin(*RELEASES) & after_assignment
    closes = live & F.col("type").isin(*SESSION_ENDS) & (F.col("previous_segment.type") == "assigned")
    roles = F.array(
        F.when(opens, F.struct(F.col("seq").alias("key"), F.lit(_OPENS).alias("role"))),
        F.when(releases, F.struct(F.col("segment.seq").alias("key"), F.lit(_RELEASES).alias("role"))),
        F.when(closes, F.struct(F.col("previous_segment.seq").alias("key"), F.lit(_CLOSES).alias("role"))),
    )
    rows = (
        scanned.where(opens | releases | closes)
        .select("*", F.explode(roles).alias("_role"))
        .where(F.col("_role").isNotNull())
        .select(
            "_key",
            "group",
            "session",
            "instance",
            "member",
            "generation",
            "seq",
            "ts",
            "type",
            "session_last_ts",
            F.col("_role.key").alias("_segment"),
            F.col("_role.role").alias("_role"),
            F.when(F.col("_role.role") != _CLOSES, F.col("partitions")).alias("partitions"),
        )
    )
    segment = Window.partitionBy("_key", "_segment").orderBy("seq")
    whole = segment.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    role = F.col("_role")
    return (
        rows.select(
            "*",
            F.collect_list(
                F.when(
                    role == _RELEASES,
                    F.struct("seq", "ts", "type", F.col("partitions").alias("parts")),
                )
            )
            .over(whole)
            .alias("releases"),
            F.max(F.when(role == _CLOSES, F.struct("seq", "ts", "type"))).over(whole).alias("session_end"),
        )
        .where(role == _OPENS)
        .drop("_role", "_segment")
    )


def _first_release(partition: Column, position: Column) -> Column:
    """(ts, type) of the assignment's first release (by ``seq``) that names the partition, or null.

    The first few releases are looked up with ``array_contains`` (generated code); a lambda only runs
    for an assignment with more releases than that. A release that names the assignment's partitions
    in the assignment's own order (a stop's revoke of everything: the common case) has the partition
    at its ``position``: that one comparison comes first, and only a miss scans the whole list
    (each exploded row scanned half its assignment's list before: a third of the explode's CPU).
    The (topic, partition) structs are compared as they are (generated code; nulls inside a struct
    equal, as in :func:`_partition_key`): no key string is built for any release.
    """
    releases = F.col("releases")
    found: Column | None = None
    for i in range(_INLINE_RELEASES):
        release = F.get(releases, i)
        # OR short-circuits: a hit at the same position skips the scan; a miss (null or false) gives
        # the scan's answer, so the result is array_contains' own.
        hit = (F.get(release["parts"], position) == partition) | F.array_contains(release["parts"], partition)
        end = F.struct(release["ts"].alias("ts"), release["type"].alias("type"))
        found = F.when(hit, end) if found is None else found.when(hit, end)
    assert found is not None
    rest = F.slice(releases, _INLINE_RELEASES + 1, F.size(releases))
    later = F.get(F.filter(rest, lambda r: F.array_contains(r["parts"], partition)), 0)
    later_end = F.struct(later["ts"].alias("ts"), later["type"].alias("type"))
    return found.when(F.size(releases) > _INLINE_RELEASES, F.when(later.isNotNull(), later_end))


def assignment_ids(events: DataFrame) -> DataFrame:
    """Integer ids of every (session, instance, member) an assignment names, exact and order-keeping.

    The ownership intervals carry these ints through their shuffle, sort and windows instead of the
    three strings (most of each row's bytes), and only the tables that show the strings join them
    back (:func:`with_names`). Dense ranks, not hashes, so no two names can share an id:

    - ``_aid``: one per (session, instance, member), the join-back key;
    - ``_sid``: ranks (session, owner) in string order, so ordering or taking a maximum by it is
      ordering by the session, then the owner, as the string columns did;
    - ``_oid``: one per owner (owner equality within the sort stage).

    Few rows (about one per session): ranked in one partition, kept in memory, broadcast to readers.
    """
    names = (
        events.where(F.col("type") == "assigned")
        .select("session", "instance", "member")
        .distinct()
        .withColumn("owner", _owner(F.col("instance"), F.col("member")))
    )
    everything = Window.orderBy("session", "owner", "instance", "member")
    ranked = names.select(
        "*",
        F.row_number().over(everything).cast("int").alias("_aid"),
        F.dense_rank().over(Window.orderBy("session", "owner")).cast("int").alias("_sid"),
        F.dense_rank().over(Window.orderBy("owner")).cast("int").alias("_oid"),
    )
    return materialize(ranked, CACHE)


def with_names(frame: DataFrame, ids: DataFrame, key: str, **names: str) -> DataFrame:
    """``frame`` with the strings of the id in column ``key`` (:func:`assignment_ids`) as ``names``
    (new name -> one of session, instance, member, owner); a null id gives null strings."""
    table = ids.select(F.col("_aid").alias("_nk"), *(F.col(old).alias(new) for new, old in names.items()))
    joined = frame.join(F.broadcast(table), frame[key] == table["_nk"], "left")
    return joined.drop("_nk")


def ownership(
    scanned: DataFrame,
    gens: DataFrame,
    log_end: DataFrame,
    options: Options,
    placement: Placement,
    ids: DataFrame,
) -> DataFrame:
    """Who owned each partition when, and how each interval was handed over from the ones before it.

    One row per (session, assignment, partition). An interval ends at the session's own revoke or lost
    record for the partition, or at its next assignment, stop, fencing or fatal error, whichever comes
    first in the session's order. A session that left no such record (killed) is ended by inference at
    the next owner's assignment of the partition or the group's next generation, whichever is first
    (``end_inferred``); with neither, the interval is still open at the end of the log.

    Each interval's own end is found per assignment, before anything is exploded (see
    :func:`_assignments`). Then the assigned partitions are exploded and shuffled once, by (group,
    topic, partition), and one sort by (generation, start time, session) inside that partitioning
    gives every handover. Generation order is immune to clock skew, so only handovers inside one
    generation depend on clocks. The result is materialized; the ownership, gaps, overlaps and moves tables
    are projections and filters of it.

    Every interval is placed in its deploy windows here, once: ``window`` (of its start, which is where
    its overlap or move happened too) and ``gap_window`` (of the previous owners' end, where its gap
    began). The tables and the summary read them instead of each joining the windows again.
    """
    assignments = _assignments(scanned)
    next_gen = gens.select(
        F.col("group").alias("_gg"),
        F.col("generation").alias("_gn"),
        F.col("next_start_ts").alias("_next_gen"),
    )
    assignments = assignments.join(
        F.broadcast(next_gen),
        (assignments["group"] == next_gen["_gg"]) & (assignments["generation"] == next_gen["_gn"]),
        "left",
    ).drop("_gg", "_gn")
    ends = log_end.select(F.col("group").alias("_lg"), "log_end_ts")
    assignments = assignments.join(F.broadcast(ends), assignments["group"] == ends["_lg"], "left").drop("_lg")
    # The names become ints here, once per assignment, before anything is exploded.
    named = ids.select(
        F.col("session").alias("_is"),
        F.col("instance").alias("_ii"),
        F.col("member").alias("_im"),
        "_aid",
        "_sid",
        "_oid",
    )
    assignments = assignments.join(
        F.broadcast(named),
        assignments["session"].eqNullSafe(named["_is"])
        & assignments["instance"].eqNullSafe(named["_ii"])
        & assignments["member"].eqNullSafe(named["_im"]),
        "left",
    ).drop("_is", "_ii", "_im", "session", "instance", "member")
    # Every partition of an assignment starts at the assignment's own time: placed in its window here,
    # once per assignment, instead of once per exploded partition after the sort (a join over the
    # largest rows of the job).
    assignments = in_window(assignments, placement, "ts")
    # A partition named twice in one assignment: the earlier copy ends at the assignment itself (as
    # a record naming the partition again), the last one as usual.
    # Computed per assignment, below the explode: in the explode's own projection it would run once
    # per exploded row (array_distinct over every partition, for each partition: a tenth of the job).
    repeats = assignments.withColumn("_repeats", _repeated(F.col("partitions")))
    exploded = repeats.select("*", F.posexplode("partitions").alias("_pos", "_p"))
    partition = F.col("_p")
    later_copy = F.array_position(
        F.slice("partitions", F.col("_pos") + 2, F.size("partitions") - F.col("_pos") - 1), partition
    )
    session_end = F.struct(F.col("session_end.ts").alias("ts"), F.col("session_end.type").alias("type"))
    explicit = F.when(F.col("_repeats") & (later_copy > 0), F.struct("ts", "type")).otherwise(
        F.coalesce(_first_release(partition, F.col("_pos")), session_end)
    )
    intervals = exploded.select(
        F.xxhash64("group", partition["topic"], partition["partition"]).alias("_pkey"),
        "group",
        partition["topic"].alias("topic"),
        partition["partition"].alias("partition"),
        "generation",
        "_aid",
        "_sid",
        "_oid",
        "ts",
        explicit.alias("_end"),
        "session_last_ts",
        "_next_gen",
        "log_end_ts",
        "window",
    )
    # The partition's hash leads the key: the sort compares one long for almost every pair of rows.
    intervals = intervals.repartition(shuffle_partitions(intervals), "_pkey", "group", "topic", "partition")
    # ``_sid`` orders as (session, owner) did: the same order as by session, ties broken the same way.
    order = Window.partitionBy("_pkey", "group", "topic", "partition").orderBy("generation", "ts", "_sid")
    successor = F.least(F.lead("ts").over(order), F.col("_next_gen"))  # least/greatest skip nulls
    inferred = F.when(successor.isNotNull(), F.greatest(F.col("ts"), successor))
    explicit_end = F.col("_end.type").isNotNull()
    intervals = intervals.select(
        "_pkey",
        "group",
        "topic",
        "partition",
        "generation",
        "_aid",
        "_sid",
        "_oid",
        "ts",
        F.when(explicit_end, F.col("_end.ts")).otherwise(inferred).alias("end_ts"),
        F.when(explicit_end, F.col("_end.type"))
        .when(inferred.isNotNull(), F.lit("inferred"))
        .alias("ended_by"),
        (~explicit_end & inferred.isNotNull()).alias("end_inferred"),
        "session_last_ts",
        "log_end_ts",
        "window",
    )
    before = order.rowsBetween(Window.unboundedPreceding, -1)
    effective_end = F.coalesce(F.col("end_ts"), F.col("log_end_ts"))
    # The latest-ending earlier interval; ties as by (session, owner, end_inferred) before: ``_sid``
    # ranks (session, owner), and ``_aid`` (last) only names a row among equals.
    prev = F.max(
        F.struct(effective_end.alias("effective_end_ts"), "_sid", "end_inferred", "_oid", "_aid")
    ).over(before)
    handed = intervals.select(
        "*",
        prev.alias("prev"),
        F.lag(F.struct("_oid", "_aid")).over(order).alias("_lag"),
        effective_end.alias("effective_end_ts"),
    )
    # Kept slim (the one frame larger than the input, written to disk and read back once per table):
    # what a reader can derive exactly from the other columns is not stored (see :func:`_handed`).
    handed = handed.select(
        "_pkey",
        "group",
        "topic",
        "partition",
        "generation",
        "_aid",
        F.col("ts").alias("start_ts"),
        "end_ts",
        "ended_by",
        "end_inferred",
        "session_last_ts",
        "effective_end_ts",
        F.col("prev.effective_end_ts").alias("prev_end_ts"),
        # The previous owners' interval (its session and owner by name: only the tables join them).
        F.col("prev._aid").alias("_prev_aid"),
        F.col("prev.end_inferred").alias("prev_end_inferred"),
        # A move: the interval just before in order belongs to another owner.
        F.when(F.col("_lag._oid") != F.col("_oid"), F.col("_lag._aid")).alias("_moved_from"),
        "window",
    )
    gap_window = in_window(handed.withColumnRenamed("window", "_start_window"), placement, "prev_end_ts")
    handed = gap_window.withColumnRenamed("window", "gap_window").withColumnRenamed("_start_window", "window")
    return _handed(materialize_partitioned(handed, BIG))


def _handed(kept: DataFrame) -> DataFrame:
    """The kept intervals with ``gap``, derived exactly as it was computed (the start minus the
    previous owners' end: the same subtraction), not stored. Names stay ids (:func:`with_names`)."""
    return kept.select("*", (F.col("start_ts") - F.col("prev_end_ts")).alias("gap"))


@dataclass(frozen=True)
class _HandoverKinds:
    """What makes an ownership interval a gap, an overlap or a move, and where an overlap ends: one
    definition for the tables (:func:`handovers`) and the summary (:func:`_handover_rows`)."""

    overlap_end: Column
    is_gap: Column
    is_overlap: Column
    is_move: Column


def _handover_kinds(options: Options) -> _HandoverKinds:
    overlap_end = F.least(F.col("prev_end_ts"), F.col("effective_end_ts"))
    return _HandoverKinds(
        overlap_end=overlap_end,
        is_gap=F.col("gap") > 0,
        is_overlap=(F.col("gap") < -options.skew_tolerance_seconds)
        & (overlap_end - F.col("start_ts") > options.skew_tolerance_seconds),
        # Stored only where the owner before in order differs (:func:`ownership`).
        is_move=F.col("_moved_from").isNotNull(),
    )


def handovers(handed: DataFrame, options: Options, ids: DataFrame) -> tuple[DataFrame, DataFrame, DataFrame]:
    """Gaps (nobody owned the partition), overlaps (two owners at once) and moves between instances,
    each with the deploy window it happened in (placed by :func:`ownership`), owners and sessions by
    name (joined back from ``ids``, :func:`assignment_ids`).

    Each keeps ``_pkey`` (the partition's hash, by which ``handed`` is partitioned); the tables drop it.

    Overlaps and moves are few (none in a rollout of static members) where gaps are nearly one per
    interval: the intervals that are either are read out of ``handed`` once, here, and kept, so the
    overlaps and moves tables read those instead of each decoding every interval again.
    """
    keys = ["_pkey", "group", "topic", "partition"]
    kinds = _handover_kinds(options)
    named = with_names(handed, ids, "_aid", owner="owner", session="session")
    before = with_names(named, ids, "_prev_aid", prev_owner="owner", prev_session="session")
    rare = materialize(handed.where(kinds.is_overlap | kinds.is_move), CACHE)
    rare_named = with_names(rare, ids, "_aid", owner="owner", session="session")
    rare_before = with_names(rare_named, ids, "_prev_aid", prev_owner="owner", prev_session="session")
    gaps = before.where(kinds.is_gap).select(
        *keys,
        F.col("prev_end_ts").alias("gap_start_ts"),
        F.col("start_ts").alias("gap_end_ts"),
        F.col("gap").alias("seconds"),
        F.col("prev_owner").alias("from_owner"),
        F.col("owner").alias("to_owner"),
        F.col("prev_end_inferred").alias("after_inferred_end"),
        F.col("generation").alias("to_generation"),
        F.col("gap_window").alias("window"),
    )
    overlap_end = kinds.overlap_end
    overlaps = rare_before.where(kinds.is_overlap).select(
        *keys,
        F.col("start_ts").alias("overlap_start_ts"),
        overlap_end.alias("overlap_end_ts"),
        (overlap_end - F.col("start_ts")).alias("seconds"),
        F.col("prev_session").alias("earlier_session"),
        F.col("prev_owner").alias("earlier_owner"),
        F.col("session").alias("later_session"),
        F.col("owner").alias("later_owner"),
        F.col("generation").alias("later_generation"),
        "window",
    )
    moves = with_names(rare_named, ids, "_moved_from", prev_owner_in_order="owner")
    moves = moves.where(kinds.is_move).select(
        *keys,
        F.col("start_ts").alias("ts"),
        F.col("prev_owner_in_order").alias("from_owner"),
        F.col("owner").alias("to_owner"),
        "generation",
        "window",
    )
    return gaps, overlaps, moves


# -- the per-window summary ---------------------------------------------------------------------------

_SUMMED = (
    "rebalances",
    "formation_generations",
    "rebalances_after_formation",
    "rebalance_seconds",
    "revoked_partitions",
    "revoked_in_rebalances",
    "lost_partitions",
    "unowned_gaps",
    "unowned_partition_seconds",
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
)
_ZERO_FILLED = (*_SUMMED, "longest_unowned_seconds")


def as_int(column: Column) -> Column:
    return column.cast("int")


def _contribution(frame: DataFrame, ts: str, **values: Column) -> DataFrame:
    """Rows of one source, projected to (group, _ts, metrics...): the summary unions them all."""
    return frame.select(
        "group", F.col(ts).alias("_ts"), *(value.alias(name) for name, value in values.items())
    )


def _handover_rows(handed: DataFrame, options: Options) -> DataFrame:
    """Every gap, overlap and move of ``handed`` as one row (kind, window, seconds), in one read.

    The conditions of :func:`handovers` (the tables), but the summary reads the intervals once instead
    of once per kind, with the windows :func:`ownership` placed them in.
    """
    kinds = _handover_kinds(options)

    def kind(condition: Column, code: int, window: Column, seconds: Column) -> Column:
        return F.when(
            condition,
            F.struct(
                F.lit(code).alias("kind"), window.alias("window"), seconds.cast("double").alias("seconds")
            ),
        )

    found = F.array(
        kind(kinds.is_gap, _GAP, F.col("gap_window"), F.col("gap")),
        kind(kinds.is_overlap, _OVERLAP, F.col("window"), kinds.overlap_end - F.col("start_ts")),
        kind(kinds.is_move, _MOVE, F.col("window"), F.lit(None)),
    )
    rows = (
        handed.where(kinds.is_gap | kinds.is_overlap | kinds.is_move)
        .select("_pkey", "group", "topic", "partition", F.explode(found).alias("_h"))
        .where(F.col("_h").isNotNull())
    )
    return rows.select(
        "_pkey",
        "group",
        "topic",
        "partition",
        F.col("_h.kind").alias("_kind"),
        F.col("_h.window").alias("window"),
        F.col("_h.seconds").alias("_seconds"),
    )


_GAP, _OVERLAP, _MOVE = 0, 1, 2


def summary(
    placement: Placement,
    gens: DataFrame,
    events: DataFrame,
    handed: DataFrame,
    options: Options,
    session_table: DataFrame,
    leader_table: DataFrame,
) -> DataFrame:
    """One row per (group, window): every source's rows placed in windows by one join, one aggregation."""
    one = F.lit(1)
    # Gaps, overlaps and moves are many (one per partition and handover): one read of the intervals,
    # reduced per partition first, where they already are (partitioned by the partition's hash,
    # group, topic, partition), so only one row per partition and window moves.
    kind, seconds = F.col("_kind"), F.col("_seconds")
    gap_count = F.count_if(kind == _GAP)
    per_partition = (
        _handover_rows(handed, options)
        .groupBy("_pkey", "group", "window", "topic", "partition")
        .agg(
            gap_count.alias("unowned_gaps"),
            F.sum(F.when(kind == _GAP, seconds)).alias("unowned_partition_seconds"),
            F.max(F.when(kind == _GAP, seconds)).alias("longest_unowned_seconds"),
            F.when(gap_count > 0, one).otherwise(0).alias("partitions_unowned"),
            F.count_if(kind == _OVERLAP).alias("double_owned"),
            F.sum(F.when(kind == _OVERLAP, seconds)).alias("double_owned_seconds"),
            F.count_if(kind == _MOVE).alias("moved_partitions"),
        )
    )
    released = events.where(F.col("type").isin(*RELEASES))
    parts = [
        _contribution(
            gens,
            "start_ts",
            rebalances=one,
            formation_generations=as_int(F.col("formation")),
            rebalances_after_formation=as_int(~F.col("formation")),
            first_generation=F.col("generation"),
            last_generation=F.col("generation"),
            rebalance_seconds=F.col("rebalance_seconds"),
        ),
        _contribution(
            released,
            "ts",
            revoked_partitions=F.when(F.col("type") == "revoked", F.col("n")).otherwise(0),
            revoked_in_rebalances=F.when(
                (F.col("type") == "revoked") & (F.col("reason") != "stop"), F.col("n")
            ).otherwise(0),
            lost_partitions=F.when(F.col("type") == "lost", F.col("n")).otherwise(0),
        ),
        _contribution(
            session_table,
            "start_ts",
            restarts=as_int(F.col("restart")),
            restarts_absorbed=as_int(F.col("restart_absorbed")),
        ),
        _contribution(
            session_table,
            "last_ts",
            fenced=as_int(F.col("ended") == "fenced"),
            evicted=as_int(F.col("evicted")),
            vanished=as_int(F.col("ended") == "vanished"),
            running_at_end=as_int(F.col("ended") == "running"),
            dropped_records=F.coalesce(F.col("dropped_records"), F.lit(0)),
        ),
        _contribution(
            leader_table,
            "ts",
            leader_changes=as_int(F.col("leader_changed")),
            skip_assignments=as_int(F.col("skip_assignment")),
        ),
    ]
    rows = parts[0]
    for part in parts[1:]:
        rows = rows.unionByName(part, allowMissingColumns=True)
    placed = in_window(rows, placement, "_ts").drop("_ts")
    placed = placed.unionByName(per_partition.drop("_pkey", "topic", "partition"), allowMissingColumns=True)
    totals = placed.groupBy("group", "window").agg(
        *(F.sum(name).alias(name) for name in _SUMMED if name != "rebalance_seconds"),
        F.sum("rebalance_seconds").alias("rebalance_seconds"),
        F.max("longest_unowned_seconds").alias("longest_unowned_seconds"),
        F.min("first_generation").alias("first_generation"),
        F.max("last_generation").alias("last_generation"),
    )
    out = placement.windows.select(
        "group", "window", "start_ts", "last_lifecycle_ts", "next_start_ts", "joins", "stops"
    ).join(totals, ["group", "window"], "left")
    out = out.fillna(0, subset=list(_ZERO_FILLED))
    doubles = (
        "rebalance_seconds",
        "unowned_partition_seconds",
        "double_owned_seconds",
        "longest_unowned_seconds",
    )
    casts = {name: "long" for name in _SUMMED if name not in doubles} | {name: "double" for name in doubles}
    # One projection (a withColumn per column would re-analyse the whole plan each time), as SQL text
    # (one call to the JVM, not several per column).
    return out.selectExpr(
        *(
            f"CAST(`{name}` AS {casts[name]}) AS `{name}`" if name in casts else f"`{name}`"
            for name in out.columns
        )
    )


# -- the whole job ------------------------------------------------------------------------------------


def build(
    scanned: DataFrame,
    events: DataFrame,
    options: Options,
    *,
    malformed: bool = True,
    span: Span | None = None,
) -> Tables:
    """All tables from the :func:`scan` and its :func:`records`.

    The frames that several tables read are materialized here (the small tables, the ownership
    intervals with their handovers, the summary), so each is computed once however many tables read
    it, and each table's plan starts from kept rows instead of the whole lineage.
    ``malformed=False`` (the scan found no malformed line) leaves the scan alone for that table.
    ``span`` (the records' first and last timestamps) sizes the time buckets of :class:`Placement`.
    """
    placement = Placement.of(materialize(deploy_windows(events, options), CACHE), span)
    gens = materialize(in_window(generations(events), placement, "start_ts"), CACHE)
    members = member_instances(events)
    leader_table = materialize(in_window(leaders(events, members), placement, "ts"), CACHE)
    session_table = materialize(sessions(events), CACHE)
    log_end = events.groupBy("group").agg(F.max("ts").alias("log_end_ts"))
    ids = assignment_ids(events)
    handed = ownership(scanned, gens, log_end, options, placement, ids)
    gaps, overlaps, moves = handovers(handed, options, ids)
    named = with_names(
        handed, ids, "_aid", session="session", instance="instance", member="member", owner="owner"
    )
    intervals = named.select(
        "group",
        "topic",
        "partition",
        "generation",
        "session",
        "instance",
        "member",
        "owner",
        "start_ts",
        "end_ts",
        "ended_by",
        "end_inferred",
        "session_last_ts",
        "window",
    )
    windows_table = materialize(
        summary(placement, gens, events, handed, options, session_table, leader_table), CACHE
    )
    lines = malformed_lines(scanned)
    if not malformed:
        lines = lines.limit(0)
    malformed_counts = lines.groupBy("file", "problem").agg(
        F.count("*").alias("lines"), F.min("line").alias("example")
    )
    return Tables(
        windows=windows_table,
        generations=gens,
        leaders=leader_table,
        ownership=intervals,
        gaps=gaps.drop("_pkey"),
        overlaps=overlaps.drop("_pkey"),
        moves=moves.drop("_pkey"),
        sessions=in_window(session_table, placement, "start_ts"),
        malformed=malformed_counts,
    )

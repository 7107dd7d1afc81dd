"""Synthetic event logs with known answers for the cases real fleets produce and a naive job gets wrong.

All scenarios live in one log, one group each, so Spark runs twice (the log in order, and shuffled
across processes) rather than once per test; each test then reads its group's rows.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from staticconsumer.analytics.job import PLAIN_COLUMNS, Options, Placement, Span, deploy_windows, in_window
from staticconsumer.analytics.run import Analysis, analyze
from staticconsumer.analytics.synthetic import SyntheticSession, write_lines

T = "orders"
P0, P1, P2, P3 = (T, 0), (T, 1), (T, 2), (T, 3)
SKEW_TOLERANCE = 1.0
DEPLOY_GAP = 60.0


def zombie() -> list[SyntheticSession]:
    """pod-a pauses (a long GC, a frozen VM); its replacement takes the instance id and the partitions
    at 201 while the old process still believes it owns them, until its heartbeat is fenced at 210."""
    a1 = SyntheticSession("zombie", "pod-a", "z-a1").joining(100).synced(101, 3, "m-a1", "m-b1", [P0, P1])
    b1 = SyntheticSession("zombie", "pod-b", "z-b1").joining(100).synced(101, 3, "m-b1", "m-b1", [P2, P3])
    a2 = SyntheticSession("zombie", "pod-a", "z-a2").joining(200).synced(201, 3, "m-a2", "m-b1", [P0, P1])
    a1.heartbeat_failed(210, 82, "FENCED_INSTANCE_ID").lost(210, [P0, P1], reason="fenced").fenced(210)
    a1.stopped(210.1)
    return [a1, b1, a2]


def skewed_handover() -> list[SyntheticSession]:
    """A static restart where the new process's host clock is 0.8 s behind: its assignment appears
    0.3 s *before* the old process's revoke. Within the tolerance, that is a clean handover."""
    old = SyntheticSession("skew", "pod-a", "s-a1").joining(10).synced(11, 1, "m-a1", "m-a1", [P0, P1])
    old.revoked(100, [P0, P1], reason="stop").stopped(100.05)
    new = SyntheticSession("skew", "pod-a", "s-a2", skew=-0.8).joining(100.2)
    new.synced(100.5, 1, "m-a2", "m-a2", [P0, P1], skip_assignment=True)
    # A rebalance whose new owner's clock runs 0.9 s behind, so its gen-2 assignment is stamped before
    # gen 1's revoke; generation order, not clocks, decides who owned P2 first.
    b = SyntheticSession("skew", "pod-b", "s-b1").joining(10).synced(11, 1, "m-b1", "m-a1", [P2])
    c = SyntheticSession("skew", "pod-c", "s-c1", skew=-0.9).joining(150.2)
    b.rejoin(150.5).revoked(150.5, [P2])
    c.synced(151, 2, "m-c1", "m-a2", [P2])
    b.synced(151, 2, "m-b1", "m-a2", [])
    new.rejoin(150.5).revoked(150.5, [P0, P1]).synced(151, 2, "m-a2", "m-a2", [P0, P1])
    return [old, new, b, c]


def killed() -> list[SyntheticSession]:
    """Processes killed with SIGKILL leave no revoke and no stop."""
    # Static: pod-a dies after its last commit at 15; its replacement is assigned in the same
    # generation at 31, which is where the dead process's ownership is taken to end.
    a1 = SyntheticSession("killed", "pod-a", "k-a1").joining(1).synced(2, 2, "m-a1", "m-a1", [P0])
    a1.committed(15, [P0])
    a2 = SyntheticSession("killed", "pod-a", "k-a2").joining(30).synced(31, 2, "m-a2", "m-a2", [P0])
    # Dynamic: m-x dies; the broker evicts it after the session timeout, the group moves to
    # generation 3 at 60 (m-y's sync) and P1 goes to m-y at 60.5: the dead owner's interval ends at 60.
    x = SyntheticSession("killed", None, "k-x").joining(1).synced(2, 2, "m-x", "m-a1", [P1])
    y = SyntheticSession("killed", None, "k-y").joining(1).synced(2, 2, "m-y", "m-a1", [P2])
    y.rejoin(59).revoked(59, [P2]).synced(60, 3, "m-y", "m-a2", [P2])
    y.synced(60.5, 4, "m-y", "m-a2", [P1, P2])
    a2.rejoin(59).synced(60, 3, "m-a2", "m-a2", [P0]).synced(60.5, 4, "m-a2", "m-a2", [P0])
    a2.revoked(100, [P0], reason="stop").stopped(100.1)
    y.revoked(100, [P1, P2], reason="stop").stopped(100.1)
    return [a1, a2, x, y]


def leaders_and_windows() -> list[SyntheticSession]:
    """Two deploys an hour apart. In the first the static leader restarts (KIP-814 SkipAssignment, no
    leader change); in the second a dynamic member joins, the group rebalances and leadership moves."""
    a1 = SyntheticSession("leaders", "pod-a", "l-a1").joining(0).synced(1, 1, "m-a1", "m-a1", [P0, P1])
    b1 = SyntheticSession("leaders", "pod-b", "l-b1").joining(0).synced(1, 1, "m-b1", "m-a1", [P2, P3])
    a1.revoked(3600, [P0, P1], reason="stop").stopped(3600.1)
    a2 = SyntheticSession("leaders", "pod-a", "l-a2").joining(3601)
    a2.synced(3602, 1, "m-a2", "m-a2", [P0, P1], skip_assignment=True)
    a2.revoked(7200, [P0, P1], reason="stop").stopped(7200.1)
    d = (
        SyntheticSession("leaders", None, "l-d1")
        .joining(7200.5)
        .rejoin(7200.6, "need to re-join with the given member-id")
    )
    b1.rejoin(7201).revoked(7201, [P2, P3])
    d.synced(7203, 2, "m-d1", "m-d1", [P0, P1])
    b1.synced(7203, 2, "m-b1", "m-d1", [P2, P3])
    return [a1, b1, a2, d]


def releases_out_of_order() -> list[SyntheticSession]:
    """Releases that name an assignment's partitions in another order than the assignment, and only
    some of them: each partition still ends at the first release that names it, wherever it is in the
    list (the job looks at the partition's own position first, then searches the list)."""
    a = (
        SyntheticSession("release-order", "pod-a", "r-a1")
        .joining(0)
        .synced(1, 1, "m-a1", "m-a1", [P0, P1, P2, P3])
    )
    a.revoked(50, [P2, P0]).lost(60, [P1]).revoked(100, [P3], reason="stop").stopped(100.1)
    return [a]


def repeated_partition_numbers() -> list[SyntheticSession]:
    """Two topics whose partitions share numbers, and one partition named twice in an assignment:
    the job compares whole (topic, partition) pairs, so orders-0 and payments-0 are two partitions,
    each ended by the release that names it; of the two copies of orders-1 the earlier ends at the
    assignment itself and the later one at the release."""
    u0, u1 = ("payments", 0), ("payments", 1)
    a = (
        SyntheticSession("repeats", "pod-a", "rp-a1")
        .joining(0)
        .synced(1, 1, "m-a1", "m-a1", [P0, u0, P1, P1])
    )
    a.revoked(50, [u0]).revoked(100, [P0, P1], reason="stop").stopped(100.1)
    b = SyntheticSession("repeats", "pod-b", "rp-b1").joining(0).synced(1, 1, "m-b1", "m-a1", [P2, u1])
    b.revoked(70, [P2]).lost(80, [u1]).stopped(100.1)
    return [a, b]


SCENARIOS = [
    *zombie(),
    *skewed_handover(),
    *killed(),
    *leaders_and_windows(),
    *releases_out_of_order(),
    *repeated_partition_numbers(),
]

MALFORMED = [
    b'{"type":"assigned","v":1,"ts":5.0,"group":"zombie","inst',  # a line cut off by a crash
    b"hello world",
    b'{"v":1}',
    b'{"type":"teleported","v":1,"ts":5.0,"group":"zombie","instance":null,"member":"","generation":-1,"session":"q","seq":0}',
    b'{"type":"joining","v":2,"ts":5.0,"group":"zombie","instance":null,"member":"","generation":-1,"session":"q","seq":1}',
    b"\x00\xff\xfe binary",
]


def _write_log(directory: Path, shuffled: bool) -> Path:
    path = write_lines(directory / "fleet.jsonl", SCENARIOS, random.Random(3) if shuffled else None)
    with open(path, "ab") as out:
        out.write(b"\n".join(MALFORMED) + b"\n\n   \n")
    return directory


def _run(spark: SparkSession, directory: Path) -> Analysis:
    return analyze(
        [str(directory)],
        spark=spark,
        options=Options(deploy_gap_seconds=DEPLOY_GAP, skew_tolerance_seconds=SKEW_TOLERANCE),
        report=False,
    )


@pytest.fixture(scope="module")
def ordered(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Analysis:
    return _run(spark, _write_log(tmp_path_factory.mktemp("ordered"), shuffled=False))


@pytest.fixture(scope="module")
def shuffled(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Analysis:
    return _run(spark, _write_log(tmp_path_factory.mktemp("shuffled"), shuffled=True))


def rows(frame: DataFrame, group: str, *order: str) -> list[dict[str, Any]]:
    return [r.asDict() for r in frame.where(F.col("group") == group).orderBy(*order).collect()]


def test_zombie_is_reported_as_two_owners_until_fenced(ordered: Analysis) -> None:
    overlaps = rows(ordered.tables.overlaps, "zombie", "partition")
    assert [(o["partition"], o["earlier_session"], o["later_session"]) for o in overlaps] == [
        (0, "z-a1", "z-a2"),
        (1, "z-a1", "z-a2"),
    ]
    assert all(o["seconds"] == pytest.approx(9.0) for o in overlaps)
    sessions = {s["session"]: s for s in rows(ordered.tables.sessions, "zombie", "session")}
    assert sessions["z-a1"]["ended"] == "fenced"
    assert sessions["z-a2"]["restart_absorbed"] is True
    totals = ordered.totals("zombie")
    assert (totals["fenced"], totals["double_owned"], totals["lost_partitions"]) == (1, 2, 2)
    assert totals["moved_partitions"] == 0, "the same instance id kept the partitions"


def test_clock_skew_within_tolerance_is_a_clean_handover(ordered: Analysis) -> None:
    totals = ordered.totals("skew")
    assert totals["double_owned"] == 0
    assert totals["skip_assignments"] == 1
    assert totals["leader_changes"] == 0
    history = rows(ordered.tables.ownership, "skew", "generation", "start_ts")
    p2 = [(i["generation"], i["owner"]) for i in history if i["partition"] == 2]
    assert p2 == [(1, "pod-b"), (2, "pod-c")], "generation order wins over the skewed clocks"
    assert totals["moved_partitions"] == 1
    gaps = rows(ordered.tables.gaps, "skew", "partition", "gap_start_ts")
    # P0/P1: restart gap absorbed by the skew (the new clock is behind); then the gen-2 rebalance
    # revokes at 150.5 and re-assigns at 151: 0.5 s each. P2: the skewed early start overlaps by
    # 0.9 s at most, inside the tolerance, so neither a gap nor a double owner.
    assert [(g["partition"], round(g["seconds"], 3)) for g in gaps] == [(0, 0.5), (1, 0.5)]


def test_killed_process_ends_at_the_next_owner_or_the_next_generation(ordered: Analysis) -> None:
    intervals = rows(ordered.tables.ownership, "killed", "partition", "start_ts")
    dead_static = next(i for i in intervals if i["session"] == "k-a1")
    assert (dead_static["end_ts"], dead_static["end_inferred"], dead_static["ended_by"]) == (
        31.0,
        True,
        "inferred",
    )
    assert dead_static["session_last_ts"] == 15.0
    dead_dynamic = next(i for i in intervals if i["session"] == "k-x")
    assert (dead_dynamic["end_ts"], dead_dynamic["end_inferred"]) == (60.0, True)
    sessions = {s["session"]: s for s in rows(ordered.tables.sessions, "killed", "session")}
    assert sessions["k-a1"]["ended"] == sessions["k-x"]["ended"] == "vanished"
    assert sessions["k-a2"]["restart"]
    assert sessions["k-a2"]["restart_absorbed"]
    gaps = {
        (g["partition"], g["from_owner"], g["to_owner"]): g["seconds"]
        for g in rows(ordered.tables.gaps, "killed", "partition")
    }
    assert gaps[(1, "member:m-x", "member:m-y")] == pytest.approx(0.5)
    assert (0, "pod-a", "pod-a") not in gaps, (
        "the replacement's assignment is where the dead owner is taken to stop"
    )
    totals = ordered.totals("killed")
    assert (totals["vanished"], totals["moved_partitions"], totals["restarts_absorbed"]) == (2, 1, 1)


def test_each_partition_ends_at_the_first_release_naming_it_in_any_order(ordered: Analysis) -> None:
    intervals = rows(ordered.tables.ownership, "release-order", "partition")
    assert [(i["partition"], i["end_ts"], i["ended_by"]) for i in intervals] == [
        (0, 50.0, "revoked"),
        (1, 60.0, "lost"),
        (2, 50.0, "revoked"),
        (3, 100.0, "revoked"),
    ]
    totals = ordered.totals("release-order")
    assert (totals["revoked_partitions"], totals["lost_partitions"]) == (3, 1)


def test_partitions_are_told_apart_by_topic_and_a_repeated_one_ends_at_its_assignment(
    ordered: Analysis,
) -> None:
    intervals = rows(ordered.tables.ownership, "repeats", "topic", "partition", "end_ts")
    assert [(i["topic"], i["partition"], i["end_ts"], i["ended_by"]) for i in intervals] == [
        (T, 0, 100.0, "revoked"),
        (T, 1, 1.0, "assigned"),
        (T, 1, 100.0, "revoked"),
        (T, 2, 70.0, "revoked"),
        ("payments", 0, 50.0, "revoked"),
        ("payments", 1, 80.0, "lost"),
    ]
    totals = ordered.totals("repeats")
    assert (totals["revoked_partitions"], totals["lost_partitions"], totals["double_owned"]) == (4, 1, 0)


def test_deploy_windows_leaders_and_skip_assignment(ordered: Analysis) -> None:
    windows = [w for w in ordered.windows if w["group"] == "leaders"]
    assert [
        (w["window"], w["joins"], w["rebalances"], w["skip_assignments"], w["leader_changes"])
        for w in windows
    ] == [
        (0, 2, 1, 0, 0),
        (1, 1, 0, 1, 0),
        (2, 1, 1, 0, 1),
    ]
    assert [(w["restarts"], w["restarts_absorbed"], w["revoked_partitions"]) for w in windows] == [
        (0, 0, 0),
        (1, 1, 2),
        (0, 0, 4),
    ]
    generations = rows(ordered.tables.generations, "leaders", "generation")
    assert [(g["generation"], g["window"], g["members"]) for g in generations] == [(1, 0, 3), (2, 2, 2)]
    assert generations[1]["rebalance_seconds"] == pytest.approx(7203 - 7200.6)
    assert windows[1]["unowned_partition_seconds"] == pytest.approx(2 * 2.0)


def test_malformed_lines_are_counted_and_skipped(ordered: Analysis) -> None:
    assert ordered.malformed_lines == len(MALFORMED)
    problems: dict[str, int] = {}
    for m in ordered.malformed:
        problems[m["problem"]] = problems.get(m["problem"], 0) + m["lines"]
    assert problems == {
        "not JSON or a required field is missing": 4,
        "unknown record type": 1,
        "schema version is not 1": 1,
    }
    assert ordered.events == sum(len(s.records) for s in SCENARIOS)


def test_order_of_lines_across_processes_does_not_matter(ordered: Analysis, shuffled: Analysis) -> None:
    assert shuffled.windows == ordered.windows
    assert shuffled.malformed_lines == ordered.malformed_lines


def _dictionary_columns(spark: SparkSession, table: Path) -> dict[str, bool]:
    """Each column of a written table: whether any of its chunks has a Parquet dictionary page."""
    jvm = spark.sparkContext._jvm  # type: ignore[attr-defined]
    conf = spark.sparkContext._jsc.hadoopConfiguration()  # type: ignore[attr-defined]
    found: dict[str, bool] = {}
    for part in sorted(table.glob("part-*.parquet")):
        footer = jvm.org.apache.parquet.hadoop.ParquetFileReader.readFooter(
            conf, jvm.org.apache.hadoop.fs.Path(str(part))
        )
        for block in footer.getBlocks():
            for chunk in block.getColumns():
                name = chunk.getPath().toDotString()
                found[name] = found.get(name, False) or bool(chunk.hasDictionaryPage())
    return found


def test_written_tables_read_back_the_same_rows_with_plain_high_cardinality_columns(
    spark: SparkSession, ordered: Analysis, tmp_path: Path
) -> None:
    """The large tables' ids and times are written without dictionaries (their write's main cost);
    what a reader gets back is the job's rows, value for value."""
    (tmp_path / "log").mkdir()
    written = analyze(
        [str(_write_log(tmp_path / "log", shuffled=False))],
        tmp_path / "out",
        spark=spark,
        options=Options(deploy_gap_seconds=DEPLOY_GAP, skew_tolerance_seconds=SKEW_TOLERANCE),
        report=False,
    )
    for name in ("ownership", "gaps", "overlaps", "moves", "sessions"):
        mine = getattr(written.tables, name)
        theirs = getattr(ordered.tables, name)
        assert Counter(map(tuple, mine.collect())) == Counter(map(tuple, theirs.collect())), name
    assert written.windows == ordered.windows
    for name, plain in PLAIN_COLUMNS.items():
        dictionaries = _dictionary_columns(spark, tmp_path / "out" / name)
        assert dictionaries, name
        assert not any(dictionaries[column] for column in plain), (name, dictionaries)
    assert _dictionary_columns(spark, tmp_path / "out" / "ownership")["group"]


@pytest.mark.parametrize(
    "span",
    [
        None,  # one bucket: every window of the group is a candidate
        Span(0.0, 400.0, groups=1),  # 1,024 buckets of 0.39 s: window bounds fall inside buckets
        Span(50.0, 60.0, groups=1),  # a span narrower than the rows: most fall in the end buckets
        Span(0.0, 400.0, groups=100_000),  # so many groups that the budget leaves two buckets
    ],
    ids=["no-span", "fine-buckets", "narrow-span", "budget"],
)
def test_windows_tile_time_so_every_row_lands_in_exactly_one(spark: SparkSession, span: Span | None) -> None:
    lifecycle = spark.createDataFrame(
        [("g", ts, "joining", None) for ts in (0.0, 5.0, 100.0, 130.0, 400.0)],
        "group string, ts double, type string, reason string",
    )
    windows = deploy_windows(lifecycle, Options(deploy_gap_seconds=60.0, skew_tolerance_seconds=1.0))
    placement = Placement.of(windows, span)
    probes = spark.createDataFrame(
        [("g", ts) for ts in (-5.0, 98.9, 99.5, 100.0, 398.99, 399.0, 1e9)] + [("other", 100.0)],
        "group string, ts double",
    )
    placed = [(r["group"], r["ts"], r["window"]) for r in in_window(probes, placement, "ts").collect()]
    assert sorted(placed, key=str) == sorted(
        [
            ("g", -5.0, 0),
            ("g", 98.9, 0),
            ("g", 99.5, 1),
            ("g", 100.0, 1),
            ("g", 398.99, 1),
            ("g", 399.0, 2),
            ("g", 1e9, 2),
            ("other", 100.0, None),  # a group without windows: kept, in no window
        ],
        key=str,
    )

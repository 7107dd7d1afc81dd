"""A cooperative scale-out in the event log, with and without the optional ``rebalance_protocol`` field:
kept partitions are owned without a gap through both generations, only the moved one has a gap (from its
revoke after the first SyncGroup to its assignment in the second round), and nothing is owned twice."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from staticconsumer.analytics.job import Options
from staticconsumer.analytics.run import Analysis, analyze
from staticconsumer.analytics.synthetic import SyntheticSession, write_lines

T = "orders"
P0, P1, P2, P3 = (T, 0), (T, 1), (T, 2), (T, 3)

OLD_SYNC = (
    b'{"type":"joining","v":1,"ts":1.0,"group":"old","instance":"pod-a","member":"","generation":-1,'
    b'"session":"o-a","seq":0,"partitions":[]}\n'
    b'{"type":"sync","leader":"m-a","is_leader":true,"skip_assignment":false,"protocol":"range","v":1,'
    b'"ts":2.0,"group":"old","instance":"pod-a","member":"m-a","generation":1,"session":"o-a","seq":1,'
    b'"partitions":[]}\n'
    b'{"type":"assigned","v":1,"ts":2.0,"group":"old","instance":"pod-a","member":"m-a","generation":1,'
    b'"session":"o-a","seq":2,"partitions":[{"topic":"orders","partition":0}]}\n'
)
"""A log written before ``rebalance_protocol`` existed."""


def scale_out() -> list[SyntheticSession]:
    """pod-a and pod-b own two partitions each; pod-c joins at 50. Round one (generation 2): pod-a keeps
    P0 and revokes P1 right after its SyncGroup, nobody gets P1. Round two (generation 3): pod-c gets P1."""
    coop = "cooperative"
    a = SyntheticSession("coop", "pod-a", "c-a").joining(0).synced(1, 1, "m-a", "m-a", [P0, P1], False, coop)
    b = SyntheticSession("coop", "pod-b", "c-b").joining(0).synced(1, 1, "m-b", "m-a", [P2, P3], False, coop)
    c = SyntheticSession("coop", "pod-c", "c-c").joining(50)
    a.rejoin(50.1).revoked(50.2, [P1]).synced(50.3, 2, "m-a", "m-a", [P0], False, coop)
    b.rejoin(50.1).synced(50.2, 2, "m-b", "m-a", [P2, P3], False, coop)
    c.synced(50.2, 2, "m-c", "m-a", [], False, coop)
    a.rejoin(50.4).synced(51.0, 3, "m-a", "m-a", [P0], False, coop)
    b.rejoin(50.5).synced(51.0, 3, "m-b", "m-a", [P2, P3], False, coop)
    c.rejoin(50.5).synced(51.0, 3, "m-c", "m-a", [P1], False, coop)
    return [a, b, c]


@pytest.fixture(scope="module")
def analysis(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Analysis:
    directory = tmp_path_factory.mktemp("cooperative")
    write_lines(directory / "coop.jsonl", scale_out(), None)
    Path(directory / "old.jsonl").write_bytes(OLD_SYNC)
    return analyze([str(directory)], spark=spark, options=Options(), report=False)


def rows(frame: DataFrame, group: str, *order: str) -> list[dict[str, Any]]:
    return [r.asDict() for r in frame.where(F.col("group") == group).orderBy(*order).collect()]


def test_only_the_moved_partition_has_a_gap_and_nothing_is_owned_twice(analysis: Analysis) -> None:
    gaps = rows(analysis.tables.gaps, "coop", "partition")
    assert [(g["partition"], g["from_owner"], g["to_owner"]) for g in gaps] == [(1, "pod-a", "pod-c")]
    assert gaps[0]["seconds"] == pytest.approx(0.8)
    assert rows(analysis.tables.overlaps, "coop", "partition") == []
    moves = rows(analysis.tables.moves, "coop", "partition")
    assert [(m["partition"], m["to_owner"], m["generation"]) for m in moves] == [(1, "pod-c", 3)]


def test_kept_partitions_are_owned_without_interruption_across_both_generations(analysis: Analysis) -> None:
    intervals = rows(analysis.tables.ownership, "coop", "partition", "generation")
    for partition in (0, 2, 3):
        mine = [i for i in intervals if i["partition"] == partition]
        assert [i["generation"] for i in mine] == [1, 2, 3]
        assert len({i["owner"] for i in mine}) == 1
        for earlier, later in itertools.pairwise(mine):
            assert earlier["end_ts"] == later["start_ts"], "one owner, no gap at the generation change"


def test_generations_carry_the_protocol_and_old_logs_still_read(analysis: Analysis) -> None:
    generations = rows(analysis.tables.generations, "coop", "generation")
    assert [(g["generation"], g["rebalance_protocols"]) for g in generations] == [
        (1, ["cooperative"]),
        (2, ["cooperative"]),
        (3, ["cooperative"]),
    ]
    old = rows(analysis.tables.generations, "old", "generation")
    assert [(g["generation"], g["rebalance_protocols"], g["protocol"]) for g in old] == [(1, [], "range")]
    assert analysis.tables.malformed.count() == 0

"""The arithmetic of benchmarks/rebalance_scale.py on hand-made member reports: who owns what when,
partition-seconds owned by nobody, the records/s dip, and the targets."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.rebalance_scale import (
    EventResult,
    Run,
    _ownership_changes,
    lowest_rate,
    owners_at,
    summarise,
    targets,
    unowned_seconds,
)

T = "t"


class Reports:
    def __init__(self, *events: dict[str, Any]) -> None:
        self.events = list(events)


def call(kind: str, at: float, *partitions: int, gen: int = 1) -> dict[str, Any]:
    return {"e": kind, "t": at, "partitions": [[T, p] for p in partitions], "gen": gen}


def test_cooperative_move_is_unowned_from_the_revoke_to_the_second_round() -> None:
    members = {
        "a": Reports(
            call("assigned", 1.0, 0, 1), call("revoked", 10.5, 1, gen=2), call("assigned", 10.6, gen=2)
        ),
        "b": Reports(
            call("assigned", 1.0, 2, 3), call("assigned", 10.5, gen=2), call("assigned", 11.7, gen=3)
        ),
        "c": Reports(call("assigned", 10.5, gen=2), call("assigned", 11.7, 1, gen=3)),
    }
    changes = _ownership_changes(members)
    partitions = {(T, p) for p in range(4)}
    unowned = unowned_seconds(changes, partitions, start=10.0, end=12.0)
    assert unowned[(T, 1)] == pytest.approx(1.2)
    assert sum(unowned.values()) == pytest.approx(1.2), "kept partitions never unowned"
    assert owners_at(changes, 12.0)[(T, 1)] == {"c"}


def test_eager_revokes_everything_and_a_stopped_member_owns_nothing() -> None:
    members = {
        "a": Reports(
            call("assigned", 1.0, 0, 1), call("revoked", 5.0, 0, 1), call("assigned", 5.4, 0, gen=2)
        ),
        "b": Reports(call("assigned", 1.0, 2), {"e": "stopped", "t": 5.2}),
        "c": Reports(call("assigned", 5.5, 1, 2, gen=2)),
    }
    unowned = unowned_seconds(_ownership_changes(members), {(T, 0), (T, 1), (T, 2)}, 4.0, 8.0)
    assert unowned == {(T, 0): pytest.approx(0.4), (T, 1): pytest.approx(0.5), (T, 2): pytest.approx(0.3)}


def test_a_partition_unowned_at_the_start_counts_from_the_start_and_to_the_end() -> None:
    members = {"a": Reports(call("assigned", 1.0, 0), call("revoked", 2.0, 0))}
    assert unowned_seconds(_ownership_changes(members), {(T, 0), (T, 1)}, 3.0, 5.0) == {
        (T, 0): pytest.approx(2.0),
        (T, 1): pytest.approx(2.0),
    }


def test_the_lowest_rate_is_the_emptiest_half_second() -> None:
    member = Reports(
        *({"e": "records", "t": 10.0 + i * 0.1, "count": 10} for i in range(20) if not 5 <= i < 12)
    )
    assert lowest_rate([member], 10.0, 12.0) == pytest.approx(0.0)
    assert lowest_rate([member], 10.0, 10.5) == pytest.approx(100.0)


def test_targets_need_only_moved_partitions_paused_and_a_settle_no_slower_than_java() -> None:
    def event(kind: str, paused: int, moved: int, settle: float) -> EventResult:
        return EventResult(
            event=kind, paused_partitions=paused, moved_partitions=moved, settle_seconds=settle
        )

    runs = [
        Run(0, "staticconsumer-cooperative", [event("scale-out", 2, 2, 1.0), event("scale-in", 3, 3, 0.5)]),
        Run(0, "java-cooperative", [event("scale-out", 2, 2, 1.5), event("scale-in", 3, 3, 0.4)]),
        Run(0, "staticconsumer-eager", [event("scale-out", 12, 2, 0.3), event("scale-in", 12, 3, 0.3)]),
    ]
    verdicts = [t.met for t in targets(runs, summarise(runs))]
    assert verdicts == [True, True, False], "scale-in settles slower than Java's here"
    runs[0].events[0].paused_partitions = 5
    assert not targets(runs, summarise(runs))[0].met

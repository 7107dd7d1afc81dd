"""The arithmetic of benchmarks/rebalance_scale.py on hand-made member reports: who owns what when,
partition-seconds owned by nobody, the records/s dip, and the targets."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any

import pytest

from benchmarks.rebalance_scale import (
    EventResult,
    GroupWatch,
    Run,
    _ownership_changes,
    lowest_rate,
    owners_at,
    summarise,
    targets,
    unowned_seconds,
    until_settled,
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


def test_the_consumer_protocol_modes_get_their_own_target_only_when_run() -> None:
    def both(settle: float) -> list[EventResult]:
        return [EventResult(event=e, settle_seconds=settle) for e in ("scale-out", "scale-in")]

    runs = [Run(0, "staticconsumer-cooperative", both(1.0)), Run(0, "java-cooperative", both(1.0))]
    assert not [t for t in targets(runs, summarise(runs)) if "consumer protocol" in t.target]
    runs += [Run(0, "staticconsumer-consumer", both(2.0)), Run(0, "java-consumer", both(3.0))]
    verdicts = {t.target: t.met for t in targets(runs, summarise(runs)) if "consumer protocol" in t.target}
    assert list(verdicts.values()) == [True, True]
    runs[-1] = Run(0, "java-consumer", both(1.5))
    verdicts = {t.target: t.met for t in targets(runs, summarise(runs)) if "consumer protocol" in t.target}
    assert list(verdicts.values()) == [False, False]


def _described(state: str, *members: tuple[str, list[int], list[int]]) -> Any:
    return SimpleNamespace(
        state=state,
        members=[
            SimpleNamespace(group_instance_id=name, assignment=owned, target_assignment=target)
            for name, owned, target in members
        ],
    )


def test_a_consumer_group_converges_when_stable_with_every_member_at_its_target() -> None:
    watch = GroupWatch("unused:9092", "g")
    converged = watch.converged({"m0", "m1"})
    assert not converged(), "nothing described yet"
    watch.latest = _described("Reconciling", ("m0", [0], [0]), ("m1", [], [1]))
    assert not converged()
    watch.latest = _described("Stable", ("m0", [0], [0]))
    assert not converged(), "a member missing"
    watch.latest = _described("Stable", ("m0", [0], [0]), ("m1", [], [1]))
    assert not converged(), "m1 has not acknowledged its target"
    watch.latest = _described("Stable", ("m0", [0], [0]), ("m1", [1], [1]))
    assert converged()


def test_the_consumer_protocol_settles_on_the_coordinators_word_not_on_one_generation() -> None:
    now = time.time() - 10
    # member epochs differ by design: m0 was last assigned at epoch 3, m1 at epoch 5
    members = {
        "m0": Reports(call("assigned", now, 0, gen=3)),
        "m1": Reports(call("assigned", now + 1, 1, gen=5)),
    }
    expected = {(T, 0), (T, 1)}
    with pytest.raises(TimeoutError):
        asyncio.run(until_settled(members, expected, now - 1, 0.1, 0.3))
    done = asyncio.run(until_settled(members, expected, now - 1, 0.1, 5, converged=lambda: True))
    assert done == now + 1
    with pytest.raises(TimeoutError):
        asyncio.run(until_settled(members, expected, now - 1, 0.1, 0.3, converged=lambda: False))

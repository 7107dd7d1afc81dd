"""The live tables' merge and the storm rule (more than N rebalances after formation within T)."""

from __future__ import annotations

from staticconsumer.analytics.live import LiveState, StormRule


def _activity(
    group: str,
    minute: float,
    departure: float | None,
    syncs: tuple[tuple[int, float], ...] = (),
    **counts: int,
) -> dict[str, object]:
    row: dict[str, object] = {
        "group": group,
        "window_start": minute,
        "first_departure_ts": departure,
        "syncs": [{"generation": g, "start_ts": ts} for g, ts in syncs],
        "records": 0,
        "starts": 0,
        "stops": 0,
        "revoked_partitions": 0,
        "lost_partitions": 0,
        "fenced": 0,
        "evicted": 0,
        "heartbeat_failures": 0,
    }
    row.update(counts)
    return row


def test_formation_is_not_a_storm_and_a_burst_after_it_is_flagged_once() -> None:
    lines: list[str] = []
    state = LiveState(StormRule(rebalances=2, seconds=60), lines.append)
    # Formation: three generations in 5 s, before anyone left: not rebalances after formation.
    state.update([_activity("g", 960.0, None, tuple((n, 1000.0 + n) for n in (1, 2, 3)), starts=3)])
    assert not any(line.startswith("STORM") for line in lines)
    # The first stop at 2000, then generations 4, 5 (two: not more than 2), then 6 within 60 s: a storm.
    state.update([_activity("g", 1980.0, 2000.0, stops=1, revoked_partitions=4)])
    state.update([_activity("g", 1980.0, 2000.0, ((4, 2001.0),), stops=1, revoked_partitions=4)])
    state.update([_activity("g", 2020.0, None, ((5, 2020.0),))])
    assert not any(line.startswith("STORM") for line in lines)
    state.update([_activity("g", 2040.0, None, ((6, 2050.0),))])
    storms = [line for line in lines if line.startswith("STORM")]
    assert storms == [
        "STORM group g: 3 rebalances within 49.0 s (more than 2 in 60 s): generations 4..6, "
        "1970-01-01 00:33:21 UTC to 1970-01-01 00:34:10 UTC"
    ]
    # A duplicate report of generation 6 (another member's sync) changes nothing; a slow one is no storm.
    state.update([_activity("g", 2040.0, None, ((6, 2050.0), (6, 2051.0)))])
    state.update([_activity("g", 3960.0, None, ((7, 4000.0),))])
    assert len([line for line in lines if line.startswith("STORM")]) == 1
    totals = state.totals("g")
    assert (totals["formation_generations"], totals["rebalances_after_formation"], totals["storms"]) == (
        3,
        4,
        1,
    )
    assert (totals["starts"], totals["stops"], totals["revoked_partitions"]) == (3, 1, 4)
    assert lines[-1].startswith("live g: 4 rebalances after the group formed (3 generations while forming")


def test_updates_of_one_minute_replace_it_and_an_earlier_departure_wins() -> None:
    state = LiveState(StormRule(), lambda line: None)
    state.update([_activity("g", 60.0, 90.0, starts=1)])
    state.update([_activity("g", 60.0, None, starts=2)])  # the same minute, updated
    state.update([_activity("g", 0.0, 30.0, stops=1)])
    assert state.totals("g")["starts"] == 2
    assert state.groups["g"].first_departure_ts == 30.0
    snapshot = state.snapshot()
    assert snapshot["groups"][0]["group"] == "g"
    assert snapshot["storms"] == []

"""benchmarks/join_trace.py's race: did the restarted process's JoinGroup make the leave's join phase?"""

from __future__ import annotations

from typing import Any

from benchmarks.join_trace import race
from staticconsumer.bounce import Member


def member(index: int, *requests: tuple[str, float], stop_requested_at: float | None = None) -> Member:
    events: list[dict[str, Any]] = [
        {"e": "wire", "t": sent + 0.01, "sent": sent, "took": 0.01, "api": api} for api, sent in requests
    ]
    return Member(index, 0.0, events, lambda: None, stop_requested_at)


def test_a_new_join_after_every_remaining_member_rejoined_missed_the_phase() -> None:
    old = member(0, ("Heartbeat", 9.0), ("LeaveGroup", 10.0), stop_requested_at=9.9)
    new = member(0, ("FindCoordinator", 10.9), ("JoinGroup", 11.0))
    others = [member(1, ("JoinGroup", 9.5), ("JoinGroup", 10.4)), member(2, ("JoinGroup", 10.5))]
    raced = race(old, new, others)
    assert raced is not None
    assert [round(x, 3) for x in raced["others"]] == [0.4, 0.5], (
        "each member's first JoinGroup after the leave"
    )
    assert round(raced["new"], 3) == 1.0
    assert raced["missed"] is True


def test_a_new_join_before_the_last_remaining_member_is_in_the_phase() -> None:
    old = member(0, ("LeaveGroup", 10.0), stop_requested_at=9.9)
    new = member(0, ("JoinGroup", 10.3), ("JoinGroup", 10.31))
    others = [member(1, ("JoinGroup", 10.2)), member(2, ("JoinGroup", 10.45))]
    raced = race(old, new, others)
    assert raced is not None
    assert raced["missed"] is False


def test_no_leave_group_means_no_race() -> None:
    """A static member stops without LeaveGroup: no join phase starts, nothing to race."""
    old = member(0, ("Heartbeat", 10.0), stop_requested_at=9.9)
    new = member(0, ("JoinGroup", 10.3))
    assert race(old, new, [member(1, ("Heartbeat", 10.5))]) is None

"""The demo's closing lines from what member processes printed: moves by member (a restarted static
member is the same member), offsets processed twice, the longest end-to-end wait during the bounce."""

from __future__ import annotations

from typing import Any, cast

from staticconsumer.demo import Member, ModeResult, tradeoffs

T = "demo"


def _member(index: int, *events: dict[str, Any]) -> Member:
    return Member(index, cast(Any, None), 0.0, list(events))


def _assigned(t: float, *partitions: int) -> dict[str, Any]:
    return {"e": "assigned", "t": t, "n": len(partitions), "partitions": [[T, p] for p in partitions]}


def _batch(t: float, partition: int, offsets: list[int], delay: float) -> dict[str, Any]:
    return {"e": "batch", "t": t, "offsets": [[T, partition, offsets]], "delay": delay}


def test_a_static_restart_moves_nothing_and_its_wait_is_the_delay() -> None:
    old = _member(0, _assigned(1, 0, 1), _batch(5, 0, [0, 1, 2], 0.1))
    other = _member(1, _assigned(1, 2, 3), _batch(12, 2, [0, 1], 0.2))
    new = _member(0, _assigned(14, 0, 1), _batch(15, 0, [3, 4], 4.2), _batch(40, 0, [5], 9.0))
    static = ModeResult("static", 0, 0, [3.9], 3, [old, other, new], bounce=(10.0, 30.0))
    assert (static.moved, static.processed_twice, static.longest_delay) == (0, 0, 4.2)
    (line,) = tradeoffs([static], {"static": 15.5})[1:]
    assert line == (
        "  static   0 partitions moved, 0 revoked from members that did not restart, 0 records processed "
        "twice; paid: each restarting member's 4 partitions waited for it (median restart 3.9s; the 10s "
        "session timeout bounds the wait), unowned 15.5 partition-s, records delayed up to 4.2s end to end"
    )


def test_dynamic_moves_count_per_partition_and_rereads_count_as_processed_twice() -> None:
    a = _member(0, _assigned(1, 0, 1), _batch(5, 0, [0, 1, 2], 0.1))
    b = _member(1, _assigned(1, 2, 3), _assigned(11, 0, 1, 2, 3), _batch(12, 0, [2, 3], 1.5))
    a2 = _member(0, _assigned(20, 0, 1))
    dynamic = ModeResult("dynamic", 2, 2, [3.0], 2, [a, b, a2], bounce=(10.0, 30.0))
    assert dynamic.moved == 4, "0 and 1 went to member 1 and came back"
    assert dynamic.processed_twice == 1, "offset 2 of partition 0, read again from the committed offset"
    (line,) = tradeoffs([dynamic])[1:]
    assert line == (
        "  dynamic  4 partitions moved, 2 revoked from members that did not restart, 1 records processed "
        "twice; paid: 2 rebalances stopped every member while the partitions moved there and back, "
        "records delayed up to 1.5s end to end"
    )


def test_a_static_bounce_past_the_session_timeout_says_so() -> None:
    static = ModeResult("static", 6, 12, [16.4, 13.9, 10.3, 9.0], 3, [], bounce=(0.0, 1.0))
    (line,) = tradeoffs([static], {"static": 80.0})[1:]
    assert "up to the 10s session timeout; 3 of 4 restarts took longer to their first record" in line
    assert "the group rebalanced 6 times (a member gone past the timeout is evicted)" in line
    assert "unowned 80.0 partition-s" in line

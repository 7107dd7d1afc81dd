"""Reconnect backoff arithmetic (Java's ClusterConnectionStates): clock and jitter are inputs, no sleeping."""

from __future__ import annotations

import itertools

import pytest

from staticconsumer.connection.reconnect import ReconnectBackoff, reconnect_delay_ms


def test_the_wait_doubles_per_failure_from_the_base_up_to_the_cap() -> None:
    waits = [reconnect_delay_ms(failures, 50, 1000) for failures in range(1, 8)]
    assert waits == [50, 100, 200, 400, 800, 1000, 1000]


def test_jitter_scales_the_capped_wait() -> None:
    assert reconnect_delay_ms(1, 50, 1000, 0.8) == pytest.approx(40)
    assert reconnect_delay_ms(10, 50, 1000, 1.2) == pytest.approx(1200)


def test_a_cap_below_the_base_means_the_base_and_zero_means_no_wait() -> None:
    assert reconnect_delay_ms(5, 500, 100) == 500
    assert reconnect_delay_ms(5, 0, 1000) == 0
    assert reconnect_delay_ms(10_000, 50, 1000) == 1000, "no overflow however long the outage"


def test_a_failed_broker_is_not_tried_again_before_its_wait() -> None:
    backoff = ReconnectBackoff(50, 1000, jitter=lambda: 1.0)
    assert backoff.begin(1, 0.0), "never failed: no wait"
    assert backoff.failed(1, 10.0) == pytest.approx(0.05)
    assert not backoff.begin(1, 10.049)
    assert backoff.begin(2, 10.0), "per broker: another node is not held back"
    assert backoff.begin(1, 10.05)
    assert backoff.failed(1, 10.05) == pytest.approx(0.1)
    assert backoff.wait(1, 10.1) == pytest.approx(0.05)
    assert backoff.failures(1) == 2


def test_once_failed_one_attempt_at_a_time_across_clients() -> None:
    """Two clients of one consumer share the backoff: after a failure only one of them tries at a time."""
    backoff = ReconnectBackoff(50, 1000, jitter=lambda: 1.0)
    assert backoff.begin("b:9092", 0.0)
    assert backoff.begin("b:9092", 0.0), "healthy: side by side"
    backoff.failed("b:9092", 0.0)
    assert backoff.begin("b:9092", 1.0), "the membership client's attempt"
    assert not backoff.begin("b:9092", 1.0), "the fetcher's, while that one is under way"
    backoff.failed("b:9092", 1.01)
    assert not backoff.begin("b:9092", 1.05), "the wait after the second failure is 100 ms"
    assert backoff.begin("b:9092", 1.11)


def test_a_good_connect_starts_the_next_outage_from_the_base() -> None:
    backoff = ReconnectBackoff(50, 1000, jitter=lambda: 1.0)
    for step in range(6):
        backoff.begin("b:9092", float(step))
        backoff.failed("b:9092", float(step))
    backoff.connected("b:9092", 0.0)
    assert backoff.begin("b:9092", 6.0)
    assert backoff.begin("b:9092", 6.0), "healthy again: no longer one at a time"
    assert backoff.failures("b:9092") == 0
    assert backoff.failed("b:9092", 7.0) == pytest.approx(0.05)


def test_jitter_is_drawn_per_wait_within_twenty_percent() -> None:
    factors = itertools.cycle([0.8, 1.2])
    backoff = ReconnectBackoff(100, 100, jitter=lambda: next(factors))
    assert [backoff.failed(1, 0.0) for _ in range(2)] == [pytest.approx(0.08), pytest.approx(0.12)]
    spread = ReconnectBackoff(1000, 1000)
    drawn = {spread.failed(1, 0.0) for _ in range(200)}
    assert all(0.8 <= wait <= 1.2 for wait in drawn)
    assert max(drawn) - min(drawn) > 0.2, "a fleet must not retry in step"


def test_attempts_in_a_long_outage_stay_under_two_a_second_after_five_seconds() -> None:
    """The issue's target, as arithmetic: with Java's defaults and the worst jitter (0.8 every time),
    a client retrying as soon as allowed makes at most 2 attempts a second once 5 s have passed."""
    backoff = ReconnectBackoff(50, 1000, jitter=lambda: 0.8)
    now, attempts = 0.0, []
    while now < 20.0:
        if backoff.begin(1, now):
            attempts.append(now)
            backoff.failed(1, now)
        now += 0.001  # callers asking every millisecond
    late = [at for at in attempts if at >= 5.0]
    assert len(late) / 15.0 <= 2.0
    assert len(attempts) < 30


def test_negative_settings_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="reconnect backoff must not be negative"):
        ReconnectBackoff(-1, 1000)


def _down(backoff: ReconnectBackoff, key: str, failures: int, start: float = 0.0) -> None:
    for step in range(failures):
        assert backoff.begin(key, start + step)
        backoff.failed(key, start + step)


def test_a_good_connect_ends_the_other_consumers_waits_for_that_broker() -> None:
    """Issue 27: a hundred consumers per process each noticed a returned broker only when its own wait
    (up to 1.2 s) ran out; the first good connect of the process now lets the others try within their
    stagger (here half of the 0.4 s window: 0.2 s after the news)."""
    key, other_broker = "returning:9092", "still-down:9092"
    first, second, third = (
        ReconnectBackoff(50, 1000, jitter=lambda: 1.0, stagger=lambda: 0.5) for _ in range(3)
    )
    _down(first, key, 8, start=-0.5)  # its wait ends at 7.5
    for backoff in (first, second):
        _down(backoff, other_broker, 8)
    _down(second, key, 8)
    assert not second.begin(key, 7.5), "waiting 1 s after its eighth failure at 7.0"
    assert first.begin(key, 7.6)
    first.connected(key, 7.6)
    assert second.wait(key, 7.6) == pytest.approx(0.2)
    assert not second.begin(key, 7.79), "its stagger has not passed"
    assert second.begin(key, 7.8), "the broker answered another consumer: no more waiting than the stagger"
    assert not second.begin(key, 7.8), "still one attempt at a time until this consumer connects"
    assert second.failed(key, 7.85) == pytest.approx(0.05), "a failure now starts again from the base"
    assert not second.begin(other_broker, 7.8), "another broker's wait is untouched"
    assert third.failures(key) == 0, "a consumer that never failed: unchanged"


def test_consumers_told_together_retry_spread_over_the_jitter_window() -> None:
    """Issue 27, N=300: a hundred consumers per process told at the same instant all connected within
    10 ms, the broker's listen queue dropped the excess and the kernel sent those SYNs again 1 s later.
    Each told backoff retries at its own point of a window as wide as its jitter at the ceiling."""
    key = "returning:9092"
    told = [
        ReconnectBackoff(50, 1000, jitter=lambda: 1.0, stagger=lambda point=point: point)
        for point in (0.0, 0.25, 0.999)
    ]
    news = ReconnectBackoff(50, 1000, jitter=lambda: 1.0)
    for backoff in (*told, news):
        _down(backoff, key, 8)  # the eighth failure at 7.0: waiting until 8.0
    news.connected(key, 7.1)
    assert told[0].stagger_s == pytest.approx(0.4), "2 x 0.2 x 1000 ms"
    assert [b.wait(key, 7.1) for b in told] == pytest.approx([0.0, 0.1, 0.3996])


def test_the_news_never_makes_a_consumer_wait_longer_than_its_own_wait() -> None:
    key = "returning:9092"
    told = ReconnectBackoff(50, 1000, jitter=lambda: 1.0, stagger=lambda: 0.999)
    news = ReconnectBackoff(50, 1000, jitter=lambda: 1.0)
    _down(told, key, 8)  # may retry at 8.0
    _down(news, key, 8)
    news.connected(key, 7.9)
    assert told.wait(key, 7.9) == pytest.approx(0.1), "its own wait ends before the stagger would"


def test_only_a_consumer_that_failed_itself_passes_the_news_on() -> None:
    """The told consumers' own good connects tell nobody again: one message per outage, not one per pair."""
    key = "told-once:9092"
    first, second, third = (
        ReconnectBackoff(50, 1000, jitter=lambda: 1.0, stagger=lambda: 0.0) for _ in range(3)
    )
    for backoff in (first, second, third):
        _down(backoff, key, 8)
    first.connected(key, 7.5)
    assert third.begin(key, 7.5)
    third.failed(key, 7.6)  # down again for the third: 50 ms to wait
    assert second.begin(key, 7.5)
    second.connected(key, 7.6)  # told, not failed since: no news for the third
    assert not third.begin(key, 7.61)
    assert third.begin(key, 7.65)


def test_the_listeners_of_a_told_backoff_hear_the_broker_it_waits_on() -> None:
    """Issue 27: a told consumer's wait ended, but nothing asked for a connection until its next request,
    about a second later; its connection monitor listens and attempts when the shortened wait ends."""
    key = "returning:9092"
    waiting, unaffected, news = (ReconnectBackoff(50, 1000, jitter=lambda: 1.0) for _ in range(3))
    heard: list[object] = []
    not_heard: list[object] = []
    waiting.on_told(heard.append)
    waiting.on_told(heard.append)  # registered once however often
    unaffected.on_told(not_heard.append)
    _down(waiting, key, 8)
    _down(news, key, 8)
    news.connected(key, 7.5)
    assert heard == [key]
    assert not_heard == [], "a consumer that never failed to reach it has nothing to wait on"
    waiting.on_told(heard.append, remove=True)
    waiting.failed(key, 7.6)
    _down(news, key, 1, start=7.6)
    news.connected(key, 7.7)
    assert heard == [key], "removed: told no more"

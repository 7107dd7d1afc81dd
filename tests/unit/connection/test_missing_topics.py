"""MissingTopics: a WARNING as soon as a subscribed topic is missing, repeated with a doubling interval,
one more when it appears, and MissingTopicsError instead when asked to fail."""

from __future__ import annotations

import logging

import pytest

from staticconsumer.connection import MissingTopics
from staticconsumer.errors import MissingTopicsError
from staticconsumer.settings import Settings


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "staticconsumer.connection.topics"]


def test_a_missing_topic_warns_at_once_then_with_a_doubling_interval(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    topics = MissingTopics("billing", clock=clock, first_repeat_s=10, max_repeat_s=40)
    warned_at = []
    for second in range(0, 200):
        clock.now = 1000.0 + second
        caplog.clear()
        topics.update({"orders", "payments"}, existing={"payments"})
        if _warnings(caplog):
            warned_at.append(second)
    assert warned_at == [0, 10, 30, 70, 110, 150, 190], "10 s, 20 s, then every 40 s (the ceiling)"
    assert topics.missing == {"orders"}


def test_the_warning_names_the_topic_the_group_and_the_wait(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    topics = MissingTopics("billing", clock=clock)
    topics.update(["orders"], existing=[])
    clock.now += 10
    topics.update(["orders"], existing=[])
    first, second = _warnings(caplog)
    assert "group 'billing': subscribed topic(s) 'orders' do not exist" in first
    assert "(or this principal may not DESCRIBE them)" in first
    assert "waiting 0 s so far; next reminder in 10 s" in first
    assert "waiting 10 s so far; next reminder in 20 s" in second
    assert all(r.levelno == logging.WARNING for r in caplog.records)


def test_an_appearing_topic_is_reported_and_a_newly_missing_one_warns_at_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    topics = MissingTopics("billing", clock=clock)
    topics.update({"a", "b"}, existing=set())
    clock.now += 1
    caplog.clear()
    change = topics.update({"a", "b"}, existing={"a"})
    assert change.appeared == {"a"}
    assert change.newly_missing == frozenset()
    (message,) = _warnings(caplog)
    assert "subscribed topic(s) 'a' exist now; still missing: 'b'" in message
    clock.now += 1
    caplog.clear()
    change = topics.update({"b", "c"}, existing={"a"})
    assert change.newly_missing == {"c"}
    assert "'b', 'c' do not exist" in _warnings(caplog)[0], (
        "a new missing topic does not wait for the backoff"
    )
    caplog.clear()
    change = topics.update({"b", "c"}, existing={"b", "c"})
    assert topics.missing == frozenset()
    assert change.appeared == {"b", "c"}
    assert _warnings(caplog) == ["group 'billing': subscribed topic(s) 'b', 'c' exist now"]


def test_unsubscribing_a_missing_topic_is_not_reported_as_appearing(caplog: pytest.LogCaptureFixture) -> None:
    topics = MissingTopics("billing", clock=Clock())
    topics.update({"gone"}, existing=set())
    caplog.clear()
    change = topics.update({"other"}, existing={"other"})
    assert change.appeared == frozenset()
    assert not _warnings(caplog)


def test_fail_raises_a_typed_error_naming_the_topics() -> None:
    topics = MissingTopics("billing", fail=True, clock=Clock())
    topics.update({"orders"}, existing={"orders"})
    with pytest.raises(MissingTopicsError) as raised:
        topics.update({"orders", "refunds", "audit"}, existing={"orders"})
    assert raised.value.topics == ("audit", "refunds")
    assert "'audit', 'refunds' do not exist" in str(raised.value)
    assert "staticconsumer.fail.on.missing.topics is true" in str(raised.value)


def test_the_setting_is_off_by_default_and_read_from_the_environment() -> None:
    base = {"KAFKA_BOOTSTRAP_SERVERS": "k:9092", "KAFKA_GROUP_ID": "g"}
    assert Settings.from_env(base).fail_on_missing_topics is False
    variable = {**base, "KAFKA_STATICCONSUMER_FAIL_ON_MISSING_TOPICS": "true"}
    assert Settings.from_env(variable).fail_on_missing_topics is True

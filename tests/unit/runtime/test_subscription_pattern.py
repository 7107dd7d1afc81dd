"""A pattern subscription matches whole topic names (Java's Pattern.matches and the consumer protocol's
broker-side regex), not aiokafka's prefix match; ``pattern + ".*"`` gives aiokafka's."""

from __future__ import annotations

from staticconsumer.runtime import Subscription

TOPICS = ("orders", "orders-eu", "old-orders", "__consumer_offsets")


def test_a_pattern_matches_whole_topic_names_only() -> None:
    subscription = Subscription(frozenset(), "orders")
    assert subscription.refresh(TOPICS) == (frozenset({"orders"}), frozenset())
    assert subscription.topics == {"orders"}


def test_appending_dot_star_gives_aiokafkas_prefix_match() -> None:
    subscription = Subscription(frozenset(), "orders.*")
    subscription.refresh(TOPICS)
    assert subscription.topics == {"orders", "orders-eu"}

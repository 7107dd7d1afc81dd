"""The ledger's no-backwards verdict: a step back read from one coordinator fails the group; a new
coordinator's first, lagging reads after a failover are reported apart and do not."""

from __future__ import annotations

from staticconsumer.testing.ledger import Backwards, Ledger

P0 = ("orders", 0)
P1 = ("orders", 1)


def test_a_step_back_read_from_the_same_coordinator_is_backwards() -> None:
    ledger = Ledger()
    ledger.committed({P0: 14, P1: 3}, at=1.0, coordinator=1)
    ledger.committed({P0: 13, P1: 4}, at=2.0, coordinator=1)
    verdict = ledger.verdict()
    assert verdict.backwards == [Backwards(P0, 14, 13, 2.0)]
    assert verdict.back_across_failover == []
    assert "commits backwards [Backwards(partition=('orders', 0), before=14, after=13" in verdict.summary()


def test_a_new_coordinators_lagging_first_read_is_kept_apart() -> None:
    ledger = Ledger()
    ledger.committed({P0: 14}, at=1.0, coordinator=1)
    ledger.committed({P0: 13}, at=2.0, coordinator=2)  # its high watermark one replication round behind
    ledger.committed({P0: 15}, at=3.0, coordinator=2)
    verdict = ledger.verdict()
    assert verdict.backwards == []
    assert verdict.back_across_failover == [Backwards(P0, 14, 13, 2.0)]
    assert "a new coordinator's first reads stepped back" in verdict.summary()
    ledger.acknowledged(P0, 0)
    ledger.processed(P0, [0])
    ledger.assert_at_least_once()


def test_the_new_coordinator_stepping_back_itself_is_still_backwards() -> None:
    ledger = Ledger()
    ledger.committed({P0: 14}, at=1.0, coordinator=1)
    ledger.committed({P0: 15}, at=2.0, coordinator=2)
    ledger.committed({P0: 12}, at=3.0, coordinator=2)
    assert ledger.verdict().backwards == [Backwards(P0, 15, 12, 3.0)]


def test_samples_without_a_coordinator_are_all_compared() -> None:
    ledger = Ledger()
    ledger.committed({P0: 5}, at=1.0)
    ledger.committed({P0: 4}, at=2.0)
    assert ledger.verdict().backwards == [Backwards(P0, 5, 4, 2.0)]


def test_a_sample_without_a_coordinator_never_excuses_a_step_back() -> None:
    """Tests that sample by hand (``committed(await sampler.sample())``) may mix with the sampler's own
    samples: only two named, different coordinators make a step back a failover artifact."""
    ledger = Ledger()
    ledger.committed({P0: 5}, at=1.0, coordinator=1)
    ledger.committed({P0: 4}, at=2.0)
    ledger.committed({P0: 3}, at=3.0, coordinator=2)
    assert ledger.verdict().backwards == [Backwards(P0, 5, 4, 2.0), Backwards(P0, 4, 3, 3.0)]
    assert ledger.verdict().back_across_failover == []

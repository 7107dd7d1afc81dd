"""The rolling-bounce benchmark's target for the sync static mode (issue 28: no rebalance), judged on
every repeat, and only when the mode ran; and the page naming modes that have no figures yet."""

from __future__ import annotations

from types import SimpleNamespace

from benchmarks.rolling_bounce import Repeat, summarise, targets
from benchmarks.run import _modes_not_measured
from staticconsumer.bounce import MODES

SYNC = "staticconsumer-sync-static"


def _verdicts(*rebalances_and_revoked: tuple[int, int]) -> dict[str, bool]:
    repeats = [
        Repeat(i, None, rebalances, [], revoked)
        for i, (rebalances, revoked) in enumerate(rebalances_and_revoked)
    ]
    return {t.target: t.met for t in targets(3, {SYNC: summarise(SYNC, repeats)}) if "sync" in t.target}


def test_met_when_no_repeat_rebalanced_or_revoked_anything() -> None:
    assert list(_verdicts((0, 0), (0, 0)).values()) == [True]


def test_not_met_when_a_single_repeat_rebalanced_or_revoked() -> None:
    assert list(_verdicts((0, 0), (1, 0)).values()) == [False]
    assert list(_verdicts((0, 2), (0, 0)).values()) == [False]


def test_absent_when_the_mode_did_not_run_or_never_completed() -> None:
    assert not [t for t in targets(3, {}) if "sync" in t.target]
    failed = [Repeat(0, "not within 60s: staticconsumer-sync-static to settle")]
    assert not [t for t in targets(3, {SYNC: summarise(SYNC, failed)}) if "sync" in t.target]


def _report(*modes: str) -> SimpleNamespace:
    return SimpleNamespace(sizes=[SimpleNamespace(modes=[SimpleNamespace(mode=m) for m in modes])])


def test_the_page_names_the_modes_without_figures_until_they_are_measured() -> None:
    before = "".join(
        _modes_not_measured(_report(*[m for m in MODES if m not in (SYNC, "kafka-python-static")]))
    )
    assert f"`{SYNC}`, `kafka-python-static`" in before
    assert "next quiet run" in before
    assert _modes_not_measured(_report(*MODES)) == []

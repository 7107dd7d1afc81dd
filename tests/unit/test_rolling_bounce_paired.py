"""The rolling bounce's paired reading (issue 26): two modes bounced together, each restart of ours
paired with the same member's restart of theirs in the same repeat; the figure is the median of the pair
ratios, beside the medians of either side."""

from __future__ import annotations

import pytest

from benchmarks.common import Environment
from benchmarks.rolling_bounce import (
    Repeat,
    RestartFigures,
    SizeResult,
    _is_paired_target,
    merge_size,
    paired,
    paired_target,
    restart_pairs,
    size_result,
)
from staticconsumer.bounce import BounceSettings, pair_order


def _repeat(repeat: int, *seconds: float, error: str | None = None) -> Repeat:
    restarts = [RestartFigures(i, s, s / 2, s / 2, s / 2, 0) for i, s in enumerate(seconds)]
    return Repeat(repeat, error, restarts=[] if error else restarts)


def test_pairs_by_repeat_and_member_dropping_failed_repeats() -> None:
    ours = [_repeat(0, 0.30, 0.40, 0.50), _repeat(1, error="timeout"), _repeat(2, 0.9, 1.0)]
    theirs = [_repeat(0, 0.20, 0.40, 1.00), _repeat(1, 0.3, 0.3, 0.3), _repeat(2, error="timeout")]
    assert restart_pairs(ours, theirs) == [(0.30, 0.20), (0.40, 0.40), (0.50, 1.00)]


def test_a_member_missing_on_one_side_does_not_pair_with_another_member() -> None:
    theirs = [Repeat(0, None, restarts=[RestartFigures(2, 0.25, 0, 0, 0, 0)])]
    assert restart_pairs([_repeat(0, 0.30, 0.40, 0.50)], theirs) == [(0.50, 0.25)]


def test_median_of_pair_ratios_differs_from_the_ratio_of_medians() -> None:
    # one slow machine moment hits both sides of the third pair: the pair ratio stays near 1, while
    # the unpaired medians are pulled apart by which side happened to be slow elsewhere
    results = {
        "ours": [_repeat(0, 0.30, 0.33, 0.90, 0.31)],
        "theirs": [_repeat(0, 0.30, 0.30, 0.90, 0.20)],
    }
    pair = paired("ours", "theirs", results)
    assert pair is not None
    assert pair.ratios == pytest.approx([1.0, 1.1, 1.0, 1.55])
    assert pair.ratio.median == pytest.approx(1.05)
    assert pair.ours_seconds.median == pytest.approx(0.32)
    assert pair.theirs_seconds.median == pytest.approx(0.30)
    assert pair.ratio_of_medians == pytest.approx(0.32 / 0.30)


def test_no_pairs_no_figure() -> None:
    assert paired("ours", "theirs", {"ours": [_repeat(0, error="x")], "theirs": [_repeat(0, 0.3)]}) is None


def test_target_reads_the_median_pair_ratio() -> None:
    met = paired("a", "b", {"a": [_repeat(0, 0.345, 0.9, 0.1)], "b": [_repeat(0, 0.30, 0.3, 0.3)]})
    missed = paired("a", "b", {"a": [_repeat(0, 0.36, 0.1, 0.9)], "b": [_repeat(0, 0.30, 0.3, 0.3)]})
    assert met is not None
    assert missed is not None
    assert paired_target(met).met is True
    assert paired_target(missed).met is False
    assert paired_target(missed).detail.startswith("1.20x (p25 ")
    assert "over 3 pairs" in paired_target(missed).detail


def test_restart_order_alternates_between_the_two_groups() -> None:
    assert [pair_order(i) for i in range(4)] == [(0, 1), (1, 0), (0, 1), (1, 0)]


def _timed(*restarts: dict[str, float]) -> list[Repeat]:
    """One completed repeat whose restarts (member 0, 1, ...) reported these timeline steps."""
    figures = [
        RestartFigures(i, steps["first_record"], 0, 0, 0, 0, steps) for i, steps in enumerate(restarts)
    ]
    return [Repeat(0, None, restarts=figures)]


def test_step_differences_are_medians_over_pairs_of_steps_both_sides_reported() -> None:
    ours = _timed(
        {"imported": 0.120, "coordinator": 0.150, "first_record": 0.160},
        {"imported": 0.110, "coordinator": 0.135, "first_record": 0.150},
        {"imported": 0.130, "first_record": 0.170},
    )
    theirs = _timed(
        {"imported": 0.100, "coordinator": 0.110, "first_record": 0.120},
        {"imported": 0.100, "coordinator": 0.105, "first_record": 0.115},
        {"imported": 0.090, "coordinator": 0.100, "first_record": 0.110},
    )
    pair = paired("ours", "theirs", {"ours": ours, "theirs": theirs})
    assert pair is not None
    assert list(pair.step_differences) == ["imported", "coordinator", "first_record"]  # TIMELINE's order
    assert pair.step_differences["imported"] == pytest.approx(0.020)  # of 0.020, 0.010, 0.040
    assert pair.step_differences["coordinator"] == pytest.approx(0.035)  # member 2's ours lacks it
    assert pair.step_differences["first_record"] == pytest.approx(0.040)  # of 0.040, 0.035, 0.060


def _size(results: dict[str, list[Repeat]], pair: list[str] | None = None) -> SizeResult:
    env = Environment(2, None, "cpu", "3.11", "linux", {}, "4.3.1", "", False, "", "")
    return size_result(env, BounceSettings(members=3), 1, results, pair)


def test_a_paired_run_and_an_unpaired_run_of_one_size_keep_each_others_figures() -> None:
    three = {
        "staticconsumer-static": [_repeat(0, 0.30, 0.31, 0.32)],
        "aiokafka-static": [_repeat(0, 0.25, 0.26, 0.27)],
        "staticconsumer-dynamic": [_repeat(0, 0.5, 0.5, 0.5)],
    }
    unpaired = _size(three)
    pair_modes = ["staticconsumer-static", "aiokafka-static"]
    paired_run = _size({m: three[m] for m in pair_modes}, pair_modes)
    assert merge_size(None, paired_run, paired_run=True) is paired_run

    merged = merge_size(unpaired, paired_run, paired_run=True)
    assert [m.mode for m in merged.modes] == list(three), "the earlier run's modes stay"
    assert merged.paired == paired_run.paired
    assert sum(_is_paired_target(t) for t in merged.targets) == 1

    again = _size({**three, "staticconsumer-dynamic": [_repeat(0, 0.7, 0.7, 0.7)]})
    rerun = merge_size(merged, again, paired_run=False)
    assert rerun.modes == again.modes, "an unpaired run replaces the modes"
    assert rerun.paired == paired_run.paired, "and keeps the earlier pair figures"
    assert sum(_is_paired_target(t) for t in rerun.targets) == 1
    assert merge_size(unpaired, again, paired_run=False) is again

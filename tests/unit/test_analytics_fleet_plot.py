"""The fleet benchmark's scaling line and its replot from committed-style JSON results."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from benchmarks.analytics_fleet import replot, straight_line

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"


def test_straight_line_recovers_the_fixed_part_and_the_rate() -> None:
    slope, fixed = straight_line([50.0, 150.0, 700.0], [35.0, 45.0, 100.0])
    assert slope == pytest.approx(0.1)
    assert fixed == pytest.approx(30.0)


def test_straight_line_is_least_squares_not_a_line_through_the_ends() -> None:
    slope, fixed = straight_line([0.0, 1.0, 2.0], [0.0, 2.0, 2.0])
    assert slope == pytest.approx(1.0)
    assert fixed == pytest.approx(1 / 3)


def test_replot_draws_every_size_from_the_json_beside_the_full_run(tmp_path: Path) -> None:
    for name in ("analytics_fleet.json", "analytics_fleet_scale0.1.json", "analytics_fleet_scale0.3.json"):
        shutil.copy(RESULTS / name, tmp_path / name)
    plot = replot(tmp_path / "analytics_fleet.json")
    assert plot == tmp_path / "analytics_fleet_scaling.png"
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert plot.stat().st_size > 10_000

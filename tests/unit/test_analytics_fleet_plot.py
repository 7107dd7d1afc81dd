"""The fleet benchmark's scaling line and its replot from committed-style JSON results."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import msgspec
import pytest

from benchmarks.analytics_fleet import Report, replot, scaling_plot, straight_line
from benchmarks.run import _analytics_fleet

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


def _with_floor(scale: float, job_s: float, floor_s: float) -> Report:
    """The committed scale 0.1 result as a labelled run with these times and no executor CPU figures
    (as runs before the event log was read)."""
    report = msgspec.json.decode((RESULTS / "analytics_fleet_scale0.1.json").read_bytes(), type=Report)
    timings = msgspec.structs.replace(
        report.timings,
        job_s=job_s,
        floor_s=floor_s,
        plan_s=3.0,
        tables_s=20.0,
        report_s=5.0,
        job_cpu_s=0.0,
        floor_cpu_s=0.0,
    )
    size = msgspec.structs.replace(report.size, scale=scale)
    return msgspec.structs.replace(
        report, timings=timings, size=size, label="loaded machine", floor_rows=1_234_567
    )


def test_the_page_gives_job_over_floor_with_the_fixed_costs_and_issue_30s_target() -> None:
    met = "\n".join(_analytics_fleet(_with_floor(0.1, 30.0, 6.0), set()))
    assert "## Fleet analytics (scale 0.1, loaded machine)" in met
    assert "1,234,567 rows): 6 s; **job / floor 5.0**. Target: job within 6x its floor: **met**." in met
    assert (
        "before the job and outside its ratio. Work inside the job: planning the tables 3 s, the tables "
        "written 20 s, the report (plots on the driver) 5 s." in met
    )
    assert "Executor CPU" not in met, "runs before the CPU figures say nothing of it"
    cpu = _with_floor(0.1, 30.0, 6.0)
    cpu = msgspec.structs.replace(
        cpu, timings=msgspec.structs.replace(cpu.timings, job_cpu_s=22.4, floor_cpu_s=2.3)
    )
    with_cpu = "\n".join(_analytics_fleet(cpu, set()))
    assert "job 22.4 s, floor 2.3 s, **job / floor 9.7** in CPU." in with_cpu
    assert "Work inside the job: the shared frames (" in with_cpu, "the planning step is work, not fixed"
    missed = "\n".join(_analytics_fleet(_with_floor(1.0, 50.0, 10.0), set()))
    assert "**job / floor 5.0**. Target: job within 4x its floor: **not met**." in missed
    # a run from before the floor was measured (its fields at their defaults), whatever is committed now
    report = msgspec.json.decode((RESULTS / "analytics_fleet_scale0.3.json").read_bytes(), type=Report)
    before = msgspec.structs.replace(
        report,
        timings=msgspec.structs.replace(report.timings, floor_s=0.0, job_cpu_s=0.0, floor_cpu_s=0.0),
        floor_rows=0,
    )
    assert "floor" not in "\n".join(_analytics_fleet(before, set())), "runs before the floor say nothing"


def test_the_plot_draws_a_labelled_run_with_its_floor_beside_the_reference_runs(tmp_path: Path) -> None:
    reference = [
        msgspec.json.decode((RESULTS / name).read_bytes(), type=Report)
        for name in ("analytics_fleet_scale0.1.json", "analytics_fleet.json")
    ]
    loaded = _with_floor(0.1, 300.0, 20.0)
    assert loaded.timings.job_over_floor == pytest.approx(15.0)
    assert math.isnan(loaded.timings.cpu_over_floor), "runs before the CPU figures have no CPU ratio"
    loaded = msgspec.structs.replace(
        loaded, timings=msgspec.structs.replace(loaded.timings, job_cpu_s=25.0, floor_cpu_s=4.0)
    )
    assert loaded.timings.cpu_over_floor == pytest.approx(6.25)
    plot = scaling_plot([*reference, loaded], tmp_path / "plot.png")
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

"""docs/benchmarks.md is generated: it must be what the generator makes from the committed results, and
every committed result must still decode with its benchmark's schema (a renamed field would otherwise
only surface when someone regenerates the page)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from benchmarks.common import ROOT
from benchmarks.run import BY_NAME, PAGE, benchmark_for, committed_results, decode, render
from staticconsumer.bounce import Member, unowned_partition_seconds


@pytest.fixture(autouse=True)
def _in_a_git_checkout() -> None:
    """The committed results are read from git; CI and every developer run in a clone."""
    assert (ROOT / ".git").exists(), "run the tests from a git checkout of the repository"


def test_page_is_generated_from_committed_results() -> None:
    results, figures = committed_results()
    assert PAGE.read_text() == render(results, figures), (
        "docs/benchmarks.md is stale: commit the results, then `.venv/bin/python -m benchmarks.run --page "
        "--committed`"
    )


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_committed_result_validates_against_its_schema(name: str) -> None:
    results, _ = committed_results()
    mine = [data for stem, data in results.items() if benchmark_for(stem) is BY_NAME[name]]
    assert mine, f"no committed {name} result: run `python -m benchmarks.run --only {name}` and commit it"
    for data in mine:
        decode(BY_NAME[name], data)


def test_every_committed_result_belongs_to_a_benchmark() -> None:
    listed = subprocess.run(
        ["git", "ls-tree", "--name-only", "HEAD", "benchmarks/results/"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    unknown = {n for n in listed if n.endswith(".json") and benchmark_for(Path(n).stem) is None}
    assert not unknown, f"results without a schema in benchmarks.run.BENCHMARKS: {sorted(unknown)}"


def test_missing_results_are_named_not_invented() -> None:
    page = render({}, set())
    for name in BY_NAME:
        assert f"--only {name}`" in page
    assert "![" not in page


def _member(events: list[dict[str, object]], stop_at: float | None = None) -> Member:
    member = Member(0, 0.0, events, lambda: None)
    member.stop_requested_at = stop_at
    return member


def test_unowned_partition_seconds_static_restart() -> None:
    """A static restart: the member's 2 partitions wait from its stop (t=10) to the new process's
    assignment (t=13); the other member's partitions are always owned."""
    a = [("t", 0), ("t", 1)]
    b = [("t", 2), ("t", 3)]
    other = _member([{"e": "assigned", "t": 1.0, "partitions": b}])
    old = _member([{"e": "assigned", "t": 1.0, "partitions": a}, {"e": "stopped", "t": 11.0}], stop_at=10.0)
    new = _member([{"e": "started", "t": 12.0}, {"e": "assigned", "t": 13.0, "partitions": a}])
    assert unowned_partition_seconds([other, old, new], 4, start=10.0, end=20.0) == pytest.approx(6.0)


def test_unowned_partition_seconds_eager_rebalance_and_double_owner() -> None:
    """Eager: everything revoked at t=5, assigned again at t=6 (4 partition-seconds); a partition owned
    by two members counts once."""
    one = _member(
        [
            {"e": "assigned", "t": 0.0, "partitions": [("t", 0), ("t", 1)]},
            {"e": "revoked", "t": 5.0, "partitions": [("t", 0), ("t", 1)]},
            {"e": "assigned", "t": 6.0, "partitions": [("t", 0), ("t", 1), ("t", 2)]},
        ]
    )
    two = _member(
        [
            {"e": "assigned", "t": 0.0, "partitions": [("t", 2), ("t", 3)]},
            {"e": "revoked", "t": 5.0, "partitions": [("t", 2), ("t", 3)]},
            {"e": "assigned", "t": 6.0, "partitions": [("t", 2)]},
        ]
    )
    # 4 unowned for 1 s, then partition 3 unowned (2 is double-owned) until the end at t=10.
    assert unowned_partition_seconds([one, two], 4, start=0.0, end=10.0) == pytest.approx(4.0 + 4.0)


def test_the_rolling_bounce_timeline_reaches_the_page() -> None:
    """Results with per-step timelines render the step table and the timeline plot (issue 18), where
    older results keep the three-phase table."""
    import msgspec

    from benchmarks.common import spread
    from benchmarks.rolling_bounce import TIMELINE

    results, figures = committed_results()
    old = msgspec.json.decode(results["rolling_bounce"])
    for size in old["sizes"]:  # results from before the timeline existed
        for mode in size["modes"]:
            mode.pop("timeline", None)
    without = render({"rolling_bounce": msgspec.json.encode(old)}, figures - {"rolling_bounce_timeline.png"})
    assert "| mode | imported | started | coordinator |" not in without  # the step table's header
    assert "rolling_bounce_timeline.png" not in without
    for size in old["sizes"]:
        for position, mode in enumerate(size["modes"]):
            mode["timeline"] = msgspec.to_builtins(
                {
                    step: spread([0.1 * (i + 1) + position, 0.2 * (i + 1) + position])
                    for i, step in enumerate(TIMELINE)
                }
            )
    page = render({"rolling_bounce": msgspec.json.encode(old)}, figures | {"rolling_bounce_timeline.png"})
    assert "| mode | imported | started | coordinator | joined | synced | offsets | first record |" in page
    assert (
        "![rolling bounce: each restart's steps per mode](../benchmarks/results/rolling_bounce_timeline.png)"
        in page
    )


def test_fleet_analytics_calls_only_sparks_start_fixed() -> None:
    """The planning step computes the shared frames (the ownership sort among them): the page lists it
    as work beside the tables and the report, and Spark's start alone as fixed."""
    page = PAGE.read_text()
    fleet = [line for line in page.splitlines() if line.startswith("Floor (one Spark pass")]
    assert fleet
    for line in fleet:
        fixed, work = line.split("Work inside the job: ")
        assert "Fixed: Spark start" in fixed
        assert "planning" not in fixed
        assert "planning the tables" in work
        assert "the tables written" in work
    assert any("the ownership intervals' sort" in line for line in fleet)


def test_the_paired_rolling_bounce_reaches_the_page() -> None:
    """A size measured with ``--paired`` shows the median of pair ratios beside both medians; results
    without it render as before."""
    import msgspec

    from benchmarks.rolling_bounce import Repeat, RestartFigures, paired

    results, figures = committed_results()
    old = msgspec.json.decode(results["rolling_bounce"])
    for size in old["sizes"]:  # the committed results may carry pair figures: start from none
        size.pop("paired", None)
    assert "Paired (`--paired`" not in render({"rolling_bounce": msgspec.json.encode(old)}, figures)

    def repeat(*seconds: float) -> list[Repeat]:
        return [
            Repeat(
                0,
                None,
                restarts=[
                    RestartFigures(i, s, 0, 0, 0, 0, {"first_record": s}) for i, s in enumerate(seconds)
                ],
            )
        ]

    both = paired(
        "staticconsumer-static",
        "aiokafka-static",
        {
            "staticconsumer-static": repeat(0.33, 0.36, 0.30),
            "aiokafka-static": repeat(0.30, 0.30, 0.30),
        },
    )
    old["sizes"][0]["paired"] = msgspec.to_builtins(both)
    page = render({"rolling_bounce": msgspec.json.encode(old)}, figures)
    assert (
        "median of 3 pair ratios **1.10x** (p25 1.05, p75 1.15); medians 0.330 s against 0.300 s (1.10x). "
        "Ours minus theirs, median over pairs, ms from spawn: first_record +30.0." in page
    )

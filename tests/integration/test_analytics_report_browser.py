"""The report as a person sees it: rendered by a real headless Chromium (Debian's, installed by ./dev).

Asserts on the page's visible text (UTC dates, durations with units, windows named by group and date,
formation apart from rebalances after the group formed, links to the docs) and that every image loaded.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from staticconsumer.analytics import report
from staticconsumer.analytics.browser import Chromium
from staticconsumer.analytics.job import Options
from staticconsumer.analytics.run import analyze
from staticconsumer.analytics.synthetic import FleetSpec, SyntheticSession, write_fleet, write_lines

T = "orders"


def _static_rollout(directory: Path) -> None:
    """Three static pods form a group (generations 1..3 as they join), then roll without a rebalance."""
    parts = {f"pod-{i}": [(T, 2 * i), (T, 2 * i + 1)] for i in range(3)}
    sessions: list[SyntheticSession] = []
    t = 1_763_700_000.0
    for i, pod in enumerate(parts):
        for earlier in sessions:  # each join is a new generation for the members already in
            earlier.rejoin(t + i).synced(
                t + i + 0.5, i + 1, earlier.member, "pod-0-a", parts[earlier.instance or ""]
            )
        s = SyntheticSession("demo-static", pod, f"{pod}-a").joining(t + i)
        s.synced(t + i + 0.5, i + 1, f"{pod}-a", "pod-0-a", parts[pod])
        sessions.append(s)
    t += 30
    for pod, old in zip(parts, list(sessions), strict=True):
        old.revoked(t, parts[pod], reason="stop").stopped(t + 0.1)
        new = SyntheticSession("demo-static", pod, f"{pod}-b").joining(t + 1)
        new.synced(t + 1.5, 3, f"{pod}-b", "pod-0-a", parts[pod])
        sessions.append(new)
        t += 5
    write_lines(directory / "static.jsonl", sessions)


def test_report_renders_in_chromium_with_every_image_and_the_demo_terms(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logs = tmp_path / "logs"
    _static_rollout(logs)
    write_fleet(
        logs / "fleet",
        FleetSpec(groups=3, consumers_per_group=3, partitions_per_group=9, deploys=2, rebalance_fraction=0.4),
    )
    monkeypatch.setattr(report, "PLOT_GROUPS", 2)  # the two worst plotted, the rest in the table
    analysis = analyze([logs], tmp_path / "out", spark=spark, options=Options(deploy_gap_seconds=600))
    assert analysis.report == tmp_path / "out" / "summary.html"
    with Chromium() as browser:
        page = browser.open(analysis.report)
        browser.screenshot(tmp_path / "report.png")
    assert page.title == "Fleet rebalance report"
    assert len(page.images) == 2
    for image in page.images:
        assert image["complete"], image
        assert image["width"] > 300, image
        assert image["height"] > 100, image
        assert image["inline"], "the page is self-contained: images are data: URIs"
    text = page.text
    (tmp_path / "report.txt").write_text(text)  # for a failing run: what the browser showed
    # The demo's own terms for the static group: formation apart, and no rebalance after it formed.
    assert (
        "The group formed in 3 generations (from generation 1). After the group formed: 0 rebalances, "
        "0 partitions revoked by rebalances (6 more released on stops), 0 lost, 0 moved to another "
        "instance; 3 restarts, 3 of them without a rebalance;"
    ) in text
    assert "demo-static · deploy 0 · 2025-11-21 04:40:00 UTC, lasted 41.0 s" in text
    assert re.search(r"group-00\d · deploy 1 · 2023-11-14 \d\d:\d\d:\d\d UTC", text)
    assert "no (table only)" in text, "groups past the plotted ones are listed in the table"
    assert text.count("\tyes") == 2, "the two worst groups are plotted"
    assert not re.search(r"\d\.\d+E\d", text), "no epoch floats in scientific notation"
    assert re.search(r"\d+\.\d+ s\b", text)
    assert "unowned partition-time" in text
    assert any(link.endswith("analytics.md#definitions") for link in page.links)
    assert (tmp_path / "report.png").stat().st_size > 50_000

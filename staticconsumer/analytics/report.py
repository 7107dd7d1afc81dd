"""The human-readable report: PNG plots (matplotlib, headless) and a markdown + HTML summary.

Only bounded slices reach the driver: the per-window summary (already collected) and, for the plotted
group, at most ``PLOT_PARTITIONS`` partitions' intervals, capped at ``PLOT_INTERVALS`` rows.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

if TYPE_CHECKING:
    from .run import Analysis

PLOT_PARTITIONS = 24
PLOT_INTERVALS = 5_000
PLOT_WINDOWS = 60

_COLUMNS = (
    ("window", "deploy"),
    ("joins", "starts"),
    ("rebalances", "rebalances"),
    ("revoked_partitions", "revoked"),
    ("lost_partitions", "lost"),
    ("moved_partitions", "moved"),
    ("restarts", "restarts"),
    ("restarts_absorbed", "absorbed"),
    ("unowned_partition_seconds", "unowned partition-s"),
    ("longest_unowned_seconds", "longest gap s"),
    ("double_owned", "double-owned"),
    ("fenced", "fenced"),
    ("evicted", "evicted"),
    ("vanished", "vanished"),
    ("leader_changes", "leader changes"),
    ("skip_assignments", "SkipAssignment"),
)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.2f}"
    return "" if value is None else str(value)


def _plot_group(analysis: Analysis) -> str | None:
    """The group whose ownership is drawn: the one with the most rebalances (then unowned time)."""
    if not analysis.windows:
        return None
    return max(
        analysis.groups(),
        key=lambda g: (analysis.totals(g)["rebalances"], analysis.totals(g)["unowned_partition_seconds"], g),
    )


def ownership_plot(analysis: Analysis, group: str, path: Path) -> Path:
    """One row per partition, one bar per owner interval (colour = owner); red = two owners at once.

    Colours repeat after ten owners, so the legend is drawn only up to ten.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    tables = analysis.tables
    chosen = (
        tables.ownership.where(F.col("group") == group)
        .select("topic", "partition")
        .distinct()
        .orderBy("topic", "partition")
        .limit(PLOT_PARTITIONS)
    )
    rows = [
        row.asDict()
        for row in tables.ownership.join(chosen, ["topic", "partition"])
        .where(F.col("group") == group)
        .select("topic", "partition", "owner", "start_ts", "end_ts", "end_inferred")
        .orderBy("start_ts")
        .limit(PLOT_INTERVALS)
        .collect()
    ]
    overlaps = [
        row.asDict()
        for row in tables.overlaps.join(chosen, ["topic", "partition"])
        .where(F.col("group") == group)
        .select("topic", "partition", "overlap_start_ts", "overlap_end_ts")
        .limit(PLOT_INTERVALS)
        .collect()
    ]
    gens = [
        row.asDict()
        for row in tables.generations.where(F.col("group") == group)
        .select("generation", "start_ts")
        .orderBy("generation")
        .limit(500)
        .collect()
    ]
    labels = sorted({(r["topic"], r["partition"]) for r in rows})
    index = {label: i for i, label in enumerate(labels)}
    origin = min((r["start_ts"] for r in rows), default=0.0)
    horizon = max((r["end_ts"] or r["start_ts"] for r in rows), default=origin + 1)
    owners = sorted({r["owner"] for r in rows})
    palette = plt.get_cmap("tab10")
    colour = {owner: palette(i % 10) for i, owner in enumerate(owners)}
    fig, ax = plt.subplots(figsize=(12, max(3.0, 0.32 * len(labels) + 1.5)))
    for r in rows:
        end = r["end_ts"] if r["end_ts"] is not None else horizon
        ax.broken_barh(
            [(r["start_ts"] - origin, max(end - r["start_ts"], 0.01))],
            (index[(r["topic"], r["partition"])] - 0.4, 0.8),
            facecolors=colour[r["owner"]],
            hatch="..." if r["end_inferred"] else None,
            alpha=0.9,
        )
    for o in overlaps:
        ax.broken_barh(
            [(o["overlap_start_ts"] - origin, o["overlap_end_ts"] - o["overlap_start_ts"])],
            (index[(o["topic"], o["partition"])] - 0.45, 0.9),
            facecolors="none",
            edgecolors="red",
            hatch="///",
        )
    for g in gens:
        ax.axvline(g["start_ts"] - origin, color="grey", linewidth=0.6, linestyle=":")
    ax.set_yticks(range(len(labels)), [f"{t}-{p}" for t, p in labels], fontsize=7)
    ax.set_xlabel("seconds since the first assignment (dotted: a new generation)")
    ax.set_title(
        f"Partition ownership in group {group} (colour = owner, dotted fill = end inferred, red = two owners)"
    )
    if len(owners) <= 10:
        handles = [Rectangle((0, 0), 1, 1, color=colour[o]) for o in owners]
        ax.legend(handles, owners, fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def deploys_plot(analysis: Analysis, path: Path) -> Path:
    """Rebalances and unowned partition-seconds for each deploy window (the last PLOT_WINDOWS)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = analysis.windows[-PLOT_WINDOWS:]
    labels = [f"{r['group']}#{r['window']}" for r in rows]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(max(6.0, 0.35 * len(rows) + 3), 6), sharex=True)
    top.bar(range(len(rows)), [r["rebalances"] for r in rows], color="tab:blue")
    top.set_ylabel("rebalances")
    bottom.bar(range(len(rows)), [r["unowned_partition_seconds"] for r in rows], color="tab:orange")
    bottom.set_ylabel("unowned partition-seconds")
    bottom.set_xticks(range(len(rows)), labels, rotation=60, ha="right", fontsize=7)
    top.set_title("Per deploy window (group#window)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _markdown(analysis: Analysis, images: list[Path]) -> str:
    out = [
        "# Fleet rebalance report",
        "",
        f"{analysis.events} events read, {analysis.malformed_lines} malformed lines skipped. "
        f"Deploy windows split at quiet gaps over {analysis.options.deploy_gap_seconds:g}s; clock skew "
        f"tolerance {analysis.options.skew_tolerance_seconds:g}s. Definitions: docs/analytics.md.",
        "",
    ]
    for group in analysis.groups():
        totals = analysis.totals(group)
        out += [
            f"## Group `{group}`",
            "",
            f"{int(totals['rebalances'])} rebalances, "
            f"{int(totals['revoked_partitions'])} partitions revoked, "
            f"{int(totals['moved_partitions'])} moved, {totals['unowned_partition_seconds']:.1f} unowned "
            f"partition-seconds, {int(totals['restarts'])} restarts of which "
            f"{int(totals['restarts_absorbed'])} without a rebalance.",
            "",
            "| " + " | ".join(title for _, title in _COLUMNS) + " |",
            "|" + "---|" * len(_COLUMNS),
        ]
        for row in analysis.windows:
            if row["group"] == group:
                out.append("| " + " | ".join(_cell(row[name]) for name, _ in _COLUMNS) + " |")
        out.append("")
    if analysis.malformed:
        out += ["## Malformed lines", "", "| file | problem | lines |", "|---|---|---|"]
        out += [f"| {m['file']} | {m['problem']} | {m['lines']} |" for m in analysis.malformed]
        out.append("")
    out += [f"![{image.stem}]({image.name})" for image in images]
    return "\n".join(out) + "\n"


def _html(markdown_text: str, analysis: Analysis, images: list[Path]) -> str:
    """The same facts as HTML, for a browser or a CI artifact viewer."""
    parts = ["<!doctype html><meta charset='utf-8'><title>Fleet rebalance report</title>", "<body>"]
    parts.append(f"<h1>Fleet rebalance report</h1><p>{html.escape(markdown_text.splitlines()[2])}</p>")
    for group in analysis.groups():
        parts.append(f"<h2>Group {html.escape(group)}</h2><table border='1' cellspacing='0'><tr>")
        parts += [f"<th>{html.escape(title)}</th>" for _, title in _COLUMNS]
        parts.append("</tr>")
        for row in analysis.windows:
            if row["group"] == group:
                cells = "".join(f"<td>{html.escape(_cell(row[name]))}</td>" for name, _ in _COLUMNS)
                parts.append(f"<tr>{cells}</tr>")
        parts.append("</table>")
    if analysis.malformed:
        parts.append(f"<h2>Malformed lines</h2><p>{analysis.malformed_lines} lines skipped</p>")
    parts += [
        f"<p><img src='{html.escape(image.name)}' alt='{html.escape(image.stem)}'></p>" for image in images
    ]
    parts.append("</body>")
    return "\n".join(parts) + "\n"


def write_report(analysis: Analysis, out: Path) -> Path:
    """Write summary.md, summary.html and the PNGs into ``out``; returns the markdown path."""
    out.mkdir(parents=True, exist_ok=True)
    images: list[Path] = []
    if analysis.windows:
        images.append(deploys_plot(analysis, out / "deploys.png"))
        group = _plot_group(analysis)
        if group is not None:
            images.append(ownership_plot(analysis, group, out / "ownership.png"))
    text = _markdown(analysis, images)
    markdown_path = out / "summary.md"
    markdown_path.write_text(text)
    (out / "summary.html").write_text(_html(text, analysis, images))
    analysis.report = markdown_path
    analysis.images = images
    return markdown_path

"""The report a person reads after a deploy: one self-contained HTML page (and the same facts as markdown).

Times are UTC dates, durations carry units, each deploy window is named by its group and date. The
comparison is stated as the demo states it: the generations a group went through while it formed are
counted apart from the **rebalances after the group formed**. Plots are PNGs embedded in the page
(``data:`` URIs) and also written beside it: one panel per group for the ``PLOT_GROUPS`` worst groups
(a table lists the rest), and the ownership timeline of the worst group's first partitions.

Only bounded slices reach the driver: the per-window summary (already collected) and, for the
timeline, at most ``PLOT_PARTITIONS`` partitions' intervals, capped at ``PLOT_INTERVALS`` rows.
"""

from __future__ import annotations

import base64
import datetime as dt
import html
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

if TYPE_CHECKING:
    from .run import Analysis

PLOT_GROUPS = 12
PLOT_PARTITIONS = 24
PLOT_INTERVALS = 5_000
PLOT_WINDOWS = 40

OWNER_COLOURS = (
    "#4e79a7",  # blue
    "#f28e2b",  # orange
    "#59a14f",  # green
    "#b07aa1",  # purple
    "#76b7b2",  # teal
    "#edc948",  # yellow
    "#9c755f",  # brown
    "#bab0ac",  # grey
    "#ff9da7",  # pink
    "#86bcb6",  # light teal
)
"""Owners' colours: no red and no black, which mean "two owners at once" and "a new generation"."""
OVERLAP_COLOUR = "#d62728"
GENERATION_COLOUR = "#222222"

DOCS = {
    "analytics": "analytics.md",
    "definitions": "analytics.md#definitions",
    "tables": "analytics.md#tables",
    "event log": "event-log.md",
}


DOCS_URL = "https://github.com/staticconsumer/staticconsumer/blob/main/docs/"
"""The project's documentation (pyproject's Documentation URL): a report is read on other machines."""


def docs_base() -> str:
    """Where the report's links point: ``$STATICCONSUMER_DOCS_URL`` (a mirror), else the project's."""
    explicit = os.environ.get("STATICCONSUMER_DOCS_URL")
    return explicit.rstrip("/") + "/" if explicit else DOCS_URL


def utc(ts: float | None) -> str:
    if ts is None:
        return "-"
    return dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def duration(seconds: float | None) -> str:
    """0.52 s, 14.2 s, 3 min 5 s, 2 h 4 min: always with a unit."""
    if seconds is None:
        return "-"
    if seconds < 10:
        return f"{seconds:.2f} s"
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        minutes, rest = divmod(round(seconds), 60)
        return f"{minutes} min {rest} s"
    hours, rest = divmod(round(seconds), 3600)
    return f"{hours} h {rest // 60} min"


def window_label(row: dict[str, Any]) -> str:
    return f"{row['group']} · deploy {row['window']} · {utc(row['start_ts'])}"


def _group_rows(analysis: Analysis, group: str) -> list[dict[str, Any]]:
    return [row for row in analysis.windows if row["group"] == group]


def ranked_groups(analysis: Analysis) -> list[str]:
    """Worst first: rebalances after formation, then unowned partition-seconds, then lost partitions."""

    def badness(group: str) -> tuple[float, float, float, str]:
        t = analysis.totals(group)
        return (
            -t["rebalances_after_formation"],
            -t["unowned_partition_seconds"],
            -t["lost_partitions"],
            group,
        )

    return sorted(analysis.groups(), key=badness)


# -- plots ------------------------------------------------------------------------------------------


def groups_plot(analysis: Analysis, groups: list[str], path: Path) -> Path:
    """One panel per group: per deploy window, rebalances after formation (and while forming), and
    unowned partition-seconds on a second axis."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    fig, axes = plt.subplots(len(groups), 1, figsize=(11, 2.4 * len(groups) + 0.6), squeeze=False)
    for ax, group in zip(axes[:, 0], groups, strict=True):
        rows = _group_rows(analysis, group)[-PLOT_WINDOWS:]
        x = range(len(rows))
        after = [r["rebalances_after_formation"] for r in rows]
        forming = [r["formation_generations"] for r in rows]
        ax.bar(x, forming, color="#c7c7c7", label="generations while the group formed")
        ax.bar(x, after, bottom=forming, color="#4e79a7", label="rebalances after the group formed")
        ax.set_ylabel("generations")
        unowned = ax.twinx()
        unowned.plot(
            x, [r["unowned_partition_seconds"] for r in rows], color="#f28e2b", marker="o", label="unowned"
        )
        unowned.set_ylabel("unowned partition-s", color="#b35806")
        labels = [
            dt.datetime.fromtimestamp(r["start_ts"], dt.UTC).strftime("%m-%d %H:%M") + f"\n#{r['window']}"
            for r in rows
        ]
        ax.set_xticks(list(x), labels, fontsize=7)
        ax.set_title(f"group {group}: per deploy window (UTC start, #window)", fontsize=9, loc="left")
    handles, names = axes[0, 0].get_legend_handles_labels()
    fig.legend(
        [*handles, Line2D([], [], color="#f28e2b", marker="o")],
        [*names, "unowned partition-seconds (right axis)"],
        loc="upper center",
        ncol=3,
        fontsize=8,
    )
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.5 / (2.4 * len(groups) + 0.6)))
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def worst_window(analysis: Analysis, group: str) -> dict[str, Any]:
    """The group's deploy window to draw: most rebalances after formation, then most unowned time."""
    return max(
        _group_rows(analysis, group),
        key=lambda r: (r["rebalances_after_formation"], r["unowned_partition_seconds"], -r["window"]),
    )


def ownership_plot(analysis: Analysis, group: str, path: Path) -> Path:
    """One row per partition, one bar per owner interval (colour = owner); red hatching = two owners at
    once; dotted fill = the end was inferred (a killed process); black dotted lines = new generations.

    Drawn for the group's worst deploy window (from a little before it opened to a little after its
    last start or stop), where the handovers are: the whole log would squeeze them into slivers."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.artist import Artist
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    tables = analysis.tables
    window = worst_window(analysis, group)
    lo = window["start_ts"] - 5.0
    hi = (window["last_lifecycle_ts"] or window["start_ts"]) + 30.0
    in_view = (
        (F.col("group") == group)
        & (F.col("start_ts") < hi)
        & (F.col("end_ts").isNull() | (F.col("end_ts") > lo))
    )
    chosen = (
        tables.ownership.where(in_view)
        .select("topic", "partition")
        .distinct()
        .orderBy("topic", "partition")
        .limit(PLOT_PARTITIONS)
    )
    rows = [
        row.asDict()
        for row in tables.ownership.where(in_view)
        .join(chosen, ["topic", "partition"])
        .select("topic", "partition", "owner", "start_ts", "end_ts", "end_inferred")
        .orderBy("start_ts")
        .limit(PLOT_INTERVALS)
        .collect()
    ]
    overlaps = [
        row.asDict()
        for row in tables.overlaps.where(F.col("group") == group)
        .join(chosen, ["topic", "partition"])
        .select("topic", "partition", "overlap_start_ts", "overlap_end_ts")
        .limit(PLOT_INTERVALS)
        .collect()
    ]
    gens = [
        row.asDict()
        for row in tables.generations.where((F.col("group") == group) & F.col("start_ts").between(lo, hi))
        .select("generation", "start_ts")
        .orderBy("generation")
        .limit(500)
        .collect()
    ]
    labels = sorted({(r["topic"], r["partition"]) for r in rows})
    index = {label: i for i, label in enumerate(labels)}
    origin = lo
    horizon = hi
    for r in rows:  # clip to the view
        r["start_ts"] = max(r["start_ts"], lo)
        r["end_ts"] = min(r["end_ts"], hi) if r["end_ts"] is not None else None
    owners = sorted({r["owner"] for r in rows})
    colour = {owner: OWNER_COLOURS[i % len(OWNER_COLOURS)] for i, owner in enumerate(owners)}
    fig, ax = plt.subplots(figsize=(11, max(3.0, 0.3 * len(labels) + 1.8)))
    for r in rows:
        end = r["end_ts"] if r["end_ts"] is not None else horizon
        ax.broken_barh(
            [(r["start_ts"] - origin, max(end - r["start_ts"], 0.01))],
            (index[(r["topic"], r["partition"])] - 0.38, 0.76),
            facecolors=colour[r["owner"]],
            edgecolors="white",
            linewidth=0.3,
            hatch="..." if r["end_inferred"] else None,
        )
    for o in overlaps:
        ax.broken_barh(
            [(o["overlap_start_ts"] - origin, o["overlap_end_ts"] - o["overlap_start_ts"])],
            (index[(o["topic"], o["partition"])] - 0.45, 0.9),
            facecolors="none",
            edgecolors=OVERLAP_COLOUR,
            hatch="xxx",
            linewidth=1.0,
        )
    for g in gens:
        ax.axvline(g["start_ts"] - origin, color=GENERATION_COLOUR, linewidth=0.6, linestyle=":")
    ax.set_yticks(range(len(labels)), [f"{t}-{p}" for t, p in labels], fontsize=7)
    ax.set_xlabel(f"seconds after {utc(origin)}")
    ax.set_xlim(0, hi - lo)
    ax.set_title(
        f"Partition ownership in group {group}, deploy {window['window']} (first {len(labels)} partitions)",
        fontsize=10,
    )
    legend: list[Artist] = [Patch(facecolor=colour[o], label=o) for o in owners[:12]]
    if len(owners) > 12:
        legend.append(Patch(facecolor="white", label=f"... {len(owners) - 12} more owners"))
    legend += [
        Patch(facecolor="none", edgecolor=OVERLAP_COLOUR, hatch="xxx", label="two owners at once"),
        Patch(facecolor="#dddddd", hatch="...", label="end inferred (killed)"),
        Line2D([], [], color=GENERATION_COLOUR, linestyle=":", label="new generation"),
    ]
    ax.legend(handles=legend, fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


# -- text ---------------------------------------------------------------------------------------------


def group_sentence(analysis: Analysis, group: str) -> str:
    """The group's story in the demo's terms: formation apart from rebalances after the group formed."""
    t = analysis.totals(group)
    rows = _group_rows(analysis, group)
    forming = int(t["formation_generations"])
    after = int(t["rebalances_after_formation"])
    first = rows[0]["first_generation"] if rows else None
    formed = (
        f"formed in {forming} generation{'s' if forming != 1 else ''}"
        + (f" (from generation {first})" if first is not None else "")
        if forming
        else "was already formed when the log begins"
    )
    return (
        f"The group {formed}. After the group formed: "
        f"{after} rebalance{'s' if after != 1 else ''}, {int(t['revoked_in_rebalances'])} partitions revoked "
        f"by rebalances ({int(t['revoked_partitions']) - int(t['revoked_in_rebalances'])} more released on "
        f"stops), {int(t['lost_partitions'])} lost, {int(t['moved_partitions'])} moved to another instance; "
        f"{int(t['restarts'])} restarts, {int(t['restarts_absorbed'])} of them without a rebalance; "
        f"partitions unowned for {duration(t['unowned_partition_seconds'])} in all "
        f"(longest gap {duration(t['longest_unowned_seconds'])})."
    )


_COLUMNS: tuple[tuple[str, str], ...] = (
    ("starts", "starts"),
    ("formation", "generations while forming"),
    ("after", "rebalances after formed"),
    ("revoked", "revoked by rebalances"),
    ("lost", "lost"),
    ("moved", "moved"),
    ("restarts", "restarts (absorbed)"),
    ("unowned", "unowned partition-time"),
    ("longest", "longest gap"),
    ("double", "two owners"),
    ("fenced", "fenced / evicted"),
    ("leader", "leader changes"),
    ("skip", "SkipAssignment"),
)


def _cells(row: dict[str, Any]) -> dict[str, str]:
    return {
        "starts": str(row["joins"]),
        "formation": str(row["formation_generations"]),
        "after": str(row["rebalances_after_formation"]),
        "revoked": str(row["revoked_in_rebalances"]),
        "lost": str(row["lost_partitions"]),
        "moved": str(row["moved_partitions"]),
        "restarts": f"{row['restarts']} ({row['restarts_absorbed']})",
        "unowned": duration(row["unowned_partition_seconds"]),
        "longest": duration(row["longest_unowned_seconds"]),
        "double": f"{row['double_owned']} ({duration(row['double_owned_seconds'])})",
        "fenced": f"{row['fenced']} / {row['evicted']}",
        "leader": str(row["leader_changes"]),
        "skip": str(row["skip_assignments"]),
    }


def _window_span(row: dict[str, Any]) -> str:
    span = (row["last_lifecycle_ts"] or row["start_ts"]) - row["start_ts"]
    return f"{utc(row['start_ts'])}, lasted {duration(span)}"


def _markdown(analysis: Analysis, plotted: list[str], images: list[Path]) -> str:
    out = [
        "# Fleet rebalance report",
        "",
        _overview(analysis),
        "",
    ]
    for group in analysis.groups():
        out += [f"## Group `{group}`", "", group_sentence(analysis, group), ""]
        out.append("| deploy window (UTC) | " + " | ".join(title for _, title in _COLUMNS) + " |")
        out.append("|---" * (len(_COLUMNS) + 1) + "|")
        for row in _group_rows(analysis, group):
            cells = _cells(row)
            out.append(
                f"| {row['window']}: {_window_span(row)} | "
                + " | ".join(cells[k] for k, _ in _COLUMNS)
                + " |"
            )
        out.append("")
    if analysis.malformed:
        out += ["## Malformed lines", "", "| file | problem | lines |", "|---|---|---|"]
        out += [f"| {m['file']} | {m['problem']} | {m['lines']} |" for m in analysis.malformed]
        out.append("")
    out += [f"![{image.stem}]({image.name})" for image in images]
    out += ["", f"Definitions: {docs_base()}{DOCS['definitions']}"]
    return "\n".join(out) + "\n"


def _overview(analysis: Analysis) -> str:
    starts = [row["start_ts"] for row in analysis.windows]
    ends = [row["last_lifecycle_ts"] or row["start_ts"] for row in analysis.windows]
    span = f" from {utc(min(starts))} to {utc(max(ends))}" if starts else ""
    return (
        f"{analysis.events} events read{span}; {analysis.malformed_lines} malformed lines skipped. "
        f"{len(analysis.groups())} groups, {len(analysis.windows)} deploy windows (a window ends after "
        f"{duration(analysis.options.deploy_gap_seconds)} without a start or stop; clock skew tolerance "
        f"{duration(analysis.options.skew_tolerance_seconds)})."
    )


_STYLE = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto; max-width: 1200px;
       color: #1d1d1f; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { font-size: 1.2em; margin-top: 2em; }
p.lead { color: #444; } nav a { margin-right: 1em; }
table { border-collapse: collapse; margin: 0.6em 0 1.2em; font-size: 12.5px; }
th, td { border: 1px solid #d0d0d0; padding: 3px 7px; text-align: right; }
th { background: #f3f4f6; font-weight: 600; } td:first-child, th:first-child { text-align: left; }
tr.bad td { background: #fff4e5; }
.verdict { padding: 0.5em 0.8em; border-left: 4px solid #4e79a7; background: #f5f8fc; }
.verdict.bad { border-left-color: #d62728; background: #fdf3f3; }
figure { margin: 1em 0; } figcaption { color: #555; font-size: 12.5px; }
img { max-width: 100%; border: 1px solid #eee; }
footer { margin-top: 3em; color: #666; font-size: 12.5px; }
"""


def _image_tag(image: Path, caption: str) -> str:
    data = base64.b64encode(image.read_bytes()).decode()
    return (
        f"<figure><img src='data:image/png;base64,{data}' alt='{html.escape(caption)}'>"
        f"<figcaption>{html.escape(caption)}</figcaption></figure>"
    )


def _html(analysis: Analysis, plotted: list[str], images: dict[str, Path]) -> str:
    """The page: self-contained (styles inline, images as data URIs), readable without the tables."""
    base = docs_base()
    esc = html.escape
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>Fleet rebalance report</title><style>{_STYLE}</style></head><body>",
        "<h1>Fleet rebalance report</h1>",
        f"<p class='lead'>{esc(_overview(analysis))}</p>",
        "<nav>"
        + "".join(f"<a href='{esc(base + target)}'>{esc(name)}</a>" for name, target in DOCS.items())
        + "</nav>",
    ]
    ranked = ranked_groups(analysis)
    parts.append(
        "<h2>Groups, worst first</h2><table><tr><th>group</th><th>rebalances after formed</th>"
        "<th>generations while forming</th><th>restarts (absorbed)</th><th>revoked by rebalances</th>"
        "<th>lost</th><th>unowned partition-time</th><th>longest gap</th><th>two owners</th>"
        "<th>plotted</th></tr>"
    )
    for group in ranked:
        t = analysis.totals(group)
        bad = t["rebalances_after_formation"] > 0 or t["lost_partitions"] > 0 or t["double_owned"] > 0
        parts.append(
            f"<tr class='{'bad' if bad else ''}'><td><a href='#group-{esc(group)}'>{esc(group)}</a></td>"
            f"<td>{int(t['rebalances_after_formation'])}</td><td>{int(t['formation_generations'])}</td>"
            f"<td>{int(t['restarts'])} ({int(t['restarts_absorbed'])})</td>"
            f"<td>{int(t['revoked_in_rebalances'])}</td><td>{int(t['lost_partitions'])}</td>"
            f"<td>{esc(duration(t['unowned_partition_seconds']))}</td>"
            f"<td>{esc(duration(t['longest_unowned_seconds']))}</td><td>{int(t['double_owned'])}</td>"
            f"<td>{'yes' if group in plotted else 'no (table only)'}</td></tr>"
        )
    parts.append("</table>")
    if len(plotted) < len(ranked):
        parts.append(
            f"<p>The {len(plotted)} worst groups are plotted; the other {len(ranked) - len(plotted)} are in "
            "the table above and in their sections below.</p>"
        )
    if "groups" in images:
        parts.append(
            _image_tag(
                images["groups"],
                "Per deploy window: generations while the group formed (grey), rebalances after it formed "
                "(blue), unowned partition-seconds (orange, right axis).",
            )
        )
    if "ownership" in images:
        parts.append(
            _image_tag(
                images["ownership"],
                f"Ownership timeline of group {ranked[0]} in its worst deploy window: a colour per owner, "
                "red cross-hatching where two "
                "owners held a partition at once, dotted fill where a killed process's end was inferred, "
                "black dotted lines at new generations; white is unowned.",
            )
        )
    for group in analysis.groups():
        sentence = group_sentence(analysis, group)
        bad = analysis.totals(group)["rebalances_after_formation"] > 0
        parts.append(f"<h2 id='group-{esc(group)}'>Group {esc(group)}</h2>")
        parts.append(f"<p class='verdict{' bad' if bad else ''}'>{esc(sentence)}</p>")
        parts.append("<table><tr><th>deploy window (UTC)</th>")
        parts += [f"<th>{esc(title)}</th>" for _, title in _COLUMNS]
        parts.append("</tr>")
        for row in _group_rows(analysis, group):
            cells = _cells(row)
            label = f"{row['group']} · deploy {row['window']} · {_window_span(row)}"
            parts.append(
                f"<tr><td>{esc(label)}</td>"
                + "".join(f"<td>{esc(cells[k])}</td>" for k, _ in _COLUMNS)
                + "</tr>"
            )
        parts.append("</table>")
    if analysis.malformed:
        parts.append(
            f"<h2>Malformed lines</h2><p>{analysis.malformed_lines} lines skipped (see "
            f"<a href='{esc(base + DOCS['event log'])}'>the event log's schema</a>).</p>"
            "<table><tr><th>file</th><th>problem</th><th>lines</th></tr>"
        )
        parts += [
            f"<tr><td>{esc(str(m['file']))}</td><td>{esc(str(m['problem']))}</td><td>{m['lines']}</td></tr>"
            for m in analysis.malformed
        ]
        parts.append("</table>")
    parts.append(
        f"<footer>Definitions of every figure: <a href='{esc(base + DOCS['definitions'])}'>docs/analytics.md"
        f"</a>; every table: <a href='{esc(base + DOCS['tables'])}'>Tables</a> (Parquet beside this page). "
        f"Generated {utc(dt.datetime.now(dt.UTC).timestamp())} by staticconsumer analyze.</footer>"
    )
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_report(analysis: Analysis, out: Path) -> Path:
    """Write summary.html (self-contained), summary.md and the PNGs into ``out``; returns the HTML path."""
    out.mkdir(parents=True, exist_ok=True)
    images: dict[str, Path] = {}
    ranked = ranked_groups(analysis)
    plotted = ranked[:PLOT_GROUPS]
    if analysis.windows:
        images["groups"] = groups_plot(analysis, plotted, out / "groups.png")
        images["ownership"] = ownership_plot(analysis, ranked[0], out / "ownership.png")
    (out / "summary.md").write_text(_markdown(analysis, plotted, list(images.values())))
    page = out / "summary.html"
    page.write_text(_html(analysis, plotted, images))
    analysis.report = page
    analysis.images = list(images.values())
    return page

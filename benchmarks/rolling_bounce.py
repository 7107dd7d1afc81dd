"""Rolling bounce, side by side: does the group notice when every member is restarted in turn?

N consumer processes (N = 3, 6, 12) on a topic of 4N partitions with a steady producer; every member,
the leader included, is restarted in turn, each back within the session timeout. Twelve modes
(``staticconsumer.bounce.MODES``): staticconsumer static and dynamic, aiokafka 0.14 with and without
group_instance_id, Java's KafkaConsumer and confluent-kafka 2.16's AIOConsumer with group.instance.id, on
the classic protocol; staticconsumer, Java and confluent AIOConsumer static members on the consumer
protocol (KIP-848, where the epoch plays the generation's part and the broker's session timeout
applies); and for synchronous code, static on the classic protocol: our
``staticconsumer.sync.StaticConsumer``, kafka-python 3.0's KafkaConsumer and confluent-kafka's Consumer. Per
mode and repeat: rebalances (generations after the group first settled), partitions revoked from members
that did not restart, each restart's seconds from process start to first record, and the
partition-seconds owned by no live member during the bounce; and each restart's timeline, step by step
(imported, started, coordinator found, joined, synced, offsets fetched, first record), each client
reporting through its own hooks (``staticconsumer/_bounce_member.py``, the oracle's PeerConsumer). Every
member imports only its own client, from compiled bytecode (``staticconsumer.bounce.BYTECODE_CACHE``).
Repeats are interleaved (the mode order rotates each repeat), so every mode sees the same machine
conditions; results are medians with spread.

Run: .venv/bin/python -m benchmarks.rolling_bounce [--members 3 6 12] [--repeats 5] [--modes ...]

With ``--paired`` (issue 26) two modes (``staticconsumer-static`` and ``aiokafka-static`` unless ``--modes``
names two) are bounced together: both groups live at once on their own topics, member i of one restarted
and then member i of the other, the order alternating by member and by repeat, so each restart has a
neighbour of the other client a few seconds away on the same machine state. Whole-mode blocks did not
(an N=3 rerun read 1.00x only because aiokafka's members imported 35 % slower in their block). The size
then carries ``paired``: the median of the pair ratios (ours / theirs, spawn to first record) beside both
medians, and each timeline step's ours-minus-theirs, median over pairs; its target reads the pair ratios.
A paired run of a size keeps the modes an earlier run of that size measured, and an unpaired run keeps
the pair figures an earlier paired run left (``--fresh`` drops both): run a size unpaired, then paired.
Writes benchmarks/results/rolling_bounce.json (schema: ``Report``), rolling_bounce.png and
rolling_bounce_timeline.png (matplotlib, when installed) after every full round of modes, so a run
cut short keeps its completed rounds. Sizes not run this time are kept from the existing file.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import msgspec

from benchmarks.common import RESULTS, Environment, Spread, environment, spread, write_json
from staticconsumer.bounce import MODES, TIMELINE, BounceResult, BounceSettings, bounce, paired_bounce
from staticconsumer.testing import EmbeddedKafka
from staticconsumer.testing.broker import create_topics

NAME = "rolling_bounce"


class RestartFigures(msgspec.Struct):
    member: int
    seconds_to_first_record: float
    seconds_to_started: float
    seconds_to_assigned: float
    seconds_away: float
    """Old process asked to stop -> new one assigned; below the session timeout."""
    revoked_from_others: int
    timeline: dict[str, float] = msgspec.field(default_factory=dict)
    """Seconds from spawn to each step the new process reported (``staticconsumer.bounce.TIMELINE``);
    empty in results measured before the timeline existed."""


class Repeat(msgspec.Struct):
    repeat: int
    error: str | None
    """Set when the bounce did not complete (a member never settled); the figures below are then empty."""
    rebalances: int = 0
    generations: list[int] = msgspec.field(default_factory=list)
    revoked_from_others: int = 0
    unowned_partition_seconds: float = 0.0
    window_seconds: float = 0.0
    restarts: list[RestartFigures] = msgspec.field(default_factory=list)


class ModeResult(msgspec.Struct):
    mode: str
    repeats: list[Repeat]
    completed: int
    rebalances: Spread | None
    """Per repeat."""
    revoked_from_others: Spread | None
    """Partitions, per repeat."""
    restart_seconds: Spread | None
    """Every restart of every completed repeat: process start to first record."""
    unowned_partition_seconds: Spread | None
    """Per repeat."""
    max_seconds_away: float | None
    timeline: dict[str, Spread] | None = None
    """Per timeline step, over every restart that reported it: seconds from spawn."""


class Target(msgspec.Struct):
    target: str
    met: bool
    detail: str


class Settings(msgspec.Struct):
    session_ms: int
    heartbeat_ms: int
    produce_per_second: int
    grace_seconds: float
    assignor: str
    python_bytecode: str | None = None
    """How Python members import their modules (absent in results from before it was recorded)."""


class Paired(msgspec.Struct):
    """Two modes bounced together (``--paired``): both groups live at once, each restart of one
    followed (or preceded, alternately) by the same member's restart in the other, so each pair of
    restarts sees the same machine state; the ratio of each pair, not of two medians, is the figure."""

    ours: str
    theirs: str
    ratios: list[float]
    """Ours / theirs, seconds from spawn to first record, per pair (same repeat, same member)."""
    ratio: Spread
    """Of the pair ratios: its median is the paired figure."""
    ours_seconds: Spread
    theirs_seconds: Spread
    ratio_of_medians: float
    """The unpaired reading of the same restarts, for comparison."""
    step_differences: dict[str, float] = msgspec.field(default_factory=dict)
    """Per timeline step both sides reported: the median over pairs of ours minus theirs, seconds from
    spawn (where a restart's gap opens: a step's difference minus the previous step's)."""


class SizeResult(msgspec.Struct):
    members: int
    partitions: int
    repeats: int
    settings: Settings
    environment: Environment
    modes: list[ModeResult]
    targets: list[Target]
    paired: Paired | None = None
    """Set when the size was measured with ``--paired``."""


class Report(msgspec.Struct):
    benchmark: str
    sizes: list[SizeResult]


def summarise(mode: str, repeats: list[Repeat]) -> ModeResult:
    done = [r for r in repeats if r.error is None]
    restarts = [s.seconds_to_first_record for r in done for s in r.restarts]
    away = [s.seconds_away for r in done for s in r.restarts]
    steps = {
        step: [s.timeline[step] for r in done for s in r.restarts if step in s.timeline] for step in TIMELINE
    }
    return ModeResult(
        mode,
        repeats,
        len(done),
        spread([float(r.rebalances) for r in done]) if done else None,
        spread([float(r.revoked_from_others) for r in done]) if done else None,
        spread(restarts) if restarts else None,
        spread([r.unowned_partition_seconds for r in done]) if done else None,
        max(away) if away else None,
        {step: spread(values) for step, values in steps.items() if values} or None,
    )


def targets(members: int, modes: dict[str, ModeResult]) -> list[Target]:
    """The issue's targets, checked on the medians of this run."""
    out: list[Target] = []
    ours = modes.get("staticconsumer-static")
    if ours is not None and ours.rebalances is not None and ours.revoked_from_others is not None:
        out.append(
            Target(
                "staticconsumer static: 0 rebalances, 0 partitions revoked from members that did not restart",
                ours.rebalances.max == 0 and ours.revoked_from_others.max == 0,
                f"rebalances max {ours.rebalances.max:.0f}, revoked max {ours.revoked_from_others.max:.0f} "
                f"over {ours.completed} repeats",
            )
        )
    java = modes.get("java-static")
    if ours is not None and java is not None and ours.restart_seconds and java.restart_seconds:
        out.append(
            Target(
                "staticconsumer static: median restart-to-first-record no worse than Java's",
                ours.restart_seconds.median <= java.restart_seconds.median,
                f"{ours.restart_seconds.median:.2f}s against Java {java.restart_seconds.median:.2f}s",
            )
        )
    peer = modes.get("aiokafka-static")
    if ours is not None and peer is not None and ours.restart_seconds and peer.restart_seconds:
        out.append(
            Target(
                "staticconsumer static: median restart-to-first-record no worse than aiokafka static's",
                ours.restart_seconds.median <= peer.restart_seconds.median,
                f"{ours.restart_seconds.median:.2f}s against aiokafka {peer.restart_seconds.median:.2f}s",
            )
        )
    out.extend(_confluent_targets(modes))
    out.extend(_consumer_protocol_targets(modes))
    out.extend(_sync_targets(modes))
    dynamic = modes.get("staticconsumer-dynamic")
    peer_dynamic = modes.get("aiokafka-dynamic")
    if dynamic is not None and peer_dynamic is not None:
        assigned = [_median_assigned(dynamic), _median_assigned(peer_dynamic)]
        if assigned[0] is not None and assigned[1] is not None:
            out.append(
                Target(
                    "staticconsumer dynamic: median time from process start to first assignment no worse "
                    "than aiokafka dynamic's",
                    assigned[0] <= assigned[1],
                    f"{assigned[0]:.2f}s against aiokafka {assigned[1]:.2f}s",
                )
            )
        if dynamic.unowned_partition_seconds and peer_dynamic.unowned_partition_seconds:
            ours_unowned = dynamic.unowned_partition_seconds.median
            theirs = peer_dynamic.unowned_partition_seconds.median
            out.append(
                Target(
                    "staticconsumer dynamic: unowned partition-seconds no worse than aiokafka dynamic's",
                    ours_unowned <= theirs,
                    f"{ours_unowned:.1f} against aiokafka {theirs:.1f} (medians per bounce)",
                )
            )
    if (
        dynamic is not None
        and peer_dynamic is not None
        and dynamic.rebalances is not None
        and peer_dynamic.rebalances is not None
    ):
        # A dynamic restart is a leave and a join: one rebalance when the new process joins before the
        # leave's rebalance completes (it is held in it), two when it comes too late for it.
        ours_per, theirs_per = dynamic.rebalances.median / members, peer_dynamic.rebalances.median / members
        out.append(
            Target(
                "staticconsumer dynamic: rebalances per restart no more than aiokafka dynamic's",
                ours_per <= theirs_per,
                f"{ours_per:.2f} against aiokafka {theirs_per:.2f} (medians {dynamic.rebalances.median:.0f} "
                f"and {peer_dynamic.rebalances.median:.0f} for {members} restarts)",
            )
        )
    return out


AIOKAFKA_RESTART_RATIO = 1.15
"""Issue 26: a static restart at most this many times aiokafka static's (our client does more at start)."""


def _confluent_targets(modes: dict[str, ModeResult]) -> list[Target]:
    """Issue 26: a static restart, process start to first record, no slower than confluent-kafka's
    AIOConsumer on either protocol, and at most 1.15x aiokafka static's; medians of one run."""
    out: list[Target] = []
    pairs = (
        ("staticconsumer-static", "confluent-static", "classic protocol"),
        ("staticconsumer-consumer", "confluent-consumer", "consumer protocol"),
    )
    for ours_name, theirs_name, protocol in pairs:
        ours, theirs = modes.get(ours_name), modes.get(theirs_name)
        if ours is None or theirs is None or not ours.restart_seconds or not theirs.restart_seconds:
            continue
        mine, peer = ours.restart_seconds.median, theirs.restart_seconds.median
        out.append(
            Target(
                f"staticconsumer static, {protocol}: median restart-to-first-record no worse than confluent "
                "AIOConsumer's",
                mine <= peer,
                f"{mine:.2f}s against confluent {peer:.2f}s ({mine / peer:.2f}x)",
            )
        )
    ours, aiokafka = modes.get("staticconsumer-static"), modes.get("aiokafka-static")
    if ours is not None and aiokafka is not None and ours.restart_seconds and aiokafka.restart_seconds:
        ratio = ours.restart_seconds.median / aiokafka.restart_seconds.median
        out.append(
            Target(
                f"staticconsumer static: median restart-to-first-record <= {AIOKAFKA_RESTART_RATIO}x "
                "aiokafka static's",
                ratio <= AIOKAFKA_RESTART_RATIO,
                f"{ratio:.2f}x ({ours.restart_seconds.median:.2f}s against aiokafka "
                f"{aiokafka.restart_seconds.median:.2f}s)",
            )
        )
    return out


def _consumer_protocol_targets(modes: dict[str, ModeResult]) -> list[Target]:
    """KIP-848 (issue 14): static members restart without moving anyone, no slower than Java's."""
    out: list[Target] = []
    ours = modes.get("staticconsumer-consumer")
    if ours is not None and ours.revoked_from_others is not None:
        out.append(
            Target(
                "staticconsumer consumer protocol: 0 partitions revoked from members that did not restart",
                ours.revoked_from_others.max == 0,
                f"revoked max {ours.revoked_from_others.max:.0f} over {ours.completed} repeats",
            )
        )
    java = modes.get("java-consumer")
    if ours is not None and java is not None and ours.restart_seconds and java.restart_seconds:
        out.append(
            Target(
                "staticconsumer consumer protocol: median restart-to-first-record no worse than Java's "
                "consumer protocol",
                ours.restart_seconds.median <= java.restart_seconds.median,
                f"{ours.restart_seconds.median:.2f}s against Java {java.restart_seconds.median:.2f}s",
            )
        )
    return out


def _sync_targets(modes: dict[str, ModeResult]) -> list[Target]:
    """Issue 28: a rolling bounce of sync static members causes no rebalance."""
    ours = modes.get("staticconsumer-sync-static")
    if ours is None or ours.rebalances is None or ours.revoked_from_others is None:
        return []
    return [
        Target(
            "staticconsumer sync static: 0 rebalances, 0 partitions revoked from members that did not "
            "restart",
            ours.rebalances.max == 0 and ours.revoked_from_others.max == 0,
            f"rebalances max {ours.rebalances.max:.0f}, revoked max {ours.revoked_from_others.max:.0f} "
            f"over {ours.completed} repeats",
        )
    ]


def paired_restarts(ours: list[Repeat], theirs: list[Repeat]) -> list[tuple[RestartFigures, RestartFigures]]:
    """The restarts that pair up: the same repeat and the same member, both sides completed. A repeat
    that failed on either side drops out whole."""
    done = {r.repeat: r for r in theirs if r.error is None}
    pairs: list[tuple[RestartFigures, RestartFigures]] = []
    for repeat in ours:
        other = done.get(repeat.repeat)
        if repeat.error is not None or other is None:
            continue
        by_member = {s.member: s for s in other.restarts}
        pairs.extend((s, by_member[s.member]) for s in repeat.restarts if s.member in by_member)
    return pairs


def restart_pairs(ours: list[Repeat], theirs: list[Repeat]) -> list[tuple[float, float]]:
    """(ours, theirs) seconds to first record of each pair of :func:`paired_restarts`."""
    return [(a.seconds_to_first_record, b.seconds_to_first_record) for a, b in paired_restarts(ours, theirs)]


def paired(ours: str, theirs: str, results: dict[str, list[Repeat]]) -> Paired | None:
    """The paired figures of two modes bounced together; None before any pair completed."""
    both = paired_restarts(results[ours], results[theirs])
    if not both:
        return None
    pairs = [(a.seconds_to_first_record, b.seconds_to_first_record) for a, b in both]
    mine, peer = [a for a, _ in pairs], [b for _, b in pairs]
    ratios = [a / b for a, b in pairs]
    differences = {
        step: [
            a.timeline[step] - b.timeline[step] for a, b in both if step in a.timeline and step in b.timeline
        ]
        for step in TIMELINE
    }
    return Paired(
        ours,
        theirs,
        ratios,
        spread(ratios),
        spread(mine),
        spread(peer),
        statistics.median(mine) / statistics.median(peer),
        {step: statistics.median(values) for step, values in differences.items() if values},
    )


PAIRED_TARGET = "median of paired restart-to-first-record ratios"
"""The words that name the paired target: :func:`paired_target` writes them, :func:`merge_size` finds them."""


def paired_target(pair: Paired) -> Target:
    """Issue 26's 1.15x, read on the median of pair ratios (the trustworthy reading when both ran paired)."""
    return Target(
        f"{pair.ours}: {PAIRED_TARGET} <= {AIOKAFKA_RESTART_RATIO}x {pair.theirs}'s",
        pair.ratio.median <= AIOKAFKA_RESTART_RATIO,
        f"{pair.ratio.median:.2f}x (p25 {pair.ratio.p25:.2f}, p75 {pair.ratio.p75:.2f}) over "
        f"{len(pair.ratios)} pairs; medians {pair.ours_seconds.median:.3f}s against "
        f"{pair.theirs_seconds.median:.3f}s "
        f"({pair.ratio_of_medians:.2f}x)",
    )


def _median_assigned(mode: ModeResult) -> float | None:
    values = [r.seconds_to_assigned for x in mode.repeats if x.error is None for r in x.restarts]
    return statistics.median(values) if values else None


def run_size(
    kafka: EmbeddedKafka,
    members: int,
    repeats: int,
    modes: list[str],
    settings: BounceSettings,
    progress: Callable[[SizeResult], object] = lambda size: None,
    pair: bool = False,
) -> SizeResult:
    """Every mode ``repeats`` times, interleaved; ``progress`` gets the figures after each full round,
    so a run cut short still leaves every completed round on disk. With ``pair``, the two ``modes``
    are bounced together (:func:`staticconsumer.bounce.paired_bounce`), which one is the first group
    alternating per repeat, and the size carries their :class:`Paired` figures."""
    sized = BounceSettings(
        members=members,
        partitions_per_member=settings.partitions_per_member,
        session_ms=settings.session_ms,
        heartbeat_ms=settings.heartbeat_ms,
        produce_per_second=settings.produce_per_second,
        grace=settings.grace,
        kafka_version=kafka.version,
    )
    results: dict[str, list[Repeat]] = {mode: [] for mode in modes}
    # Taken before the first bounce: member processes import the checkout as it is when they start.
    env = environment(kafka.version)
    for repeat in range(repeats):
        if pair:
            _paired_repeat(kafka, members, repeat, modes, sized, results)
            progress(size_result(env, sized, repeat + 1, results, modes))
            continue
        shift = repeat % len(modes)
        for mode in modes[shift:] + modes[:shift]:  # rotate, so no mode always runs first
            name = f"bounce-{members}-{mode}-{uuid.uuid4().hex[:6]}"
            asyncio.run(create_topics(kafka.bootstrap_servers, {name: sized.partitions}))
            began = time.monotonic()
            try:
                outcome = asyncio.run(bounce(MODES[mode], kafka.bootstrap_servers, name, name, sized, print))
            except TimeoutError as error:
                print(f"N={members} repeat {repeat + 1} {mode}: FAILED {error}", flush=True)
                results[mode].append(Repeat(repeat, str(error)))
                continue
            results[mode].append(to_repeat(repeat, outcome))
            print(
                f"N={members} repeat {repeat + 1} {mode}: {outcome.rebalances} rebalances, "
                f"{outcome.revoked_from_others} revoked from others, median restart "
                f"{outcome.median_restart_seconds:.2f}s, unowned {outcome.unowned_partition_seconds:.1f} "
                f"partition-s ({time.monotonic() - began:.0f}s)",
                flush=True,
            )
        progress(size_result(env, sized, repeat + 1, results))
    return size_result(env, sized, repeats, results, modes if pair else None)


def _paired_repeat(
    kafka: EmbeddedKafka,
    members: int,
    repeat: int,
    modes: list[str],
    sized: BounceSettings,
    results: dict[str, list[Repeat]],
) -> None:
    order = modes if repeat % 2 == 0 else modes[::-1]  # which group restarts first at member 0
    names = [f"bounce-{members}-{mode}-{uuid.uuid4().hex[:6]}" for mode in order]
    asyncio.run(create_topics(kafka.bootstrap_servers, {name: sized.partitions for name in names}))
    began = time.monotonic()
    try:
        outcomes = asyncio.run(
            paired_bounce(
                (MODES[order[0]], MODES[order[1]]),
                kafka.bootstrap_servers,
                (names[0], names[1]),
                sized,
                print,
            )
        )
    except TimeoutError as error:
        print(f"N={members} repeat {repeat + 1} paired: FAILED {error}", flush=True)
        for mode in modes:
            results[mode].append(Repeat(repeat, str(error)))
        return
    for mode, outcome in zip(order, outcomes, strict=True):
        results[mode].append(to_repeat(repeat, outcome))
    ratios = [a / b for a, b in restart_pairs(results[modes[0]][-1:], results[modes[1]][-1:])]
    print(
        f"N={members} repeat {repeat + 1} paired {modes[0]} / {modes[1]}: ratios "
        f"{' '.join(f'{r:.2f}' for r in ratios)} ({time.monotonic() - began:.0f}s)",
        flush=True,
    )


def size_result(
    env: Environment,
    sized: BounceSettings,
    rounds: int,
    results: dict[str, list[Repeat]],
    pair: list[str] | None = None,
) -> SizeResult:
    summaries = {mode: summarise(mode, runs) for mode, runs in results.items()}
    both = paired(pair[0], pair[1], results) if pair is not None else None
    return SizeResult(
        sized.members,
        sized.partitions,
        rounds,
        Settings(
            sized.session_ms,
            sized.heartbeat_ms,
            sized.produce_per_second,
            sized.grace,
            "range",
            "compiled bytecode, cache warmed before the first start (as an installed package)",
        ),
        env,
        list(summaries.values()),
        [*targets(sized.members, summaries), *([paired_target(both)] if both is not None else [])],
        both,
    )


def to_repeat(repeat: int, outcome: BounceResult) -> Repeat:
    return Repeat(
        repeat,
        None,
        outcome.rebalances,
        outcome.generations,
        outcome.revoked_from_others,
        outcome.unowned_partition_seconds,
        outcome.window_seconds,
        [
            RestartFigures(
                r.index,
                r.seconds_to_first_record,
                r.seconds_to_started,
                r.seconds_to_assigned,
                r.seconds_away,
                r.revoked_from_others,
                r.timeline,
            )
            for r in outcome.restarts
        ],
    )


def merge_size(previous: SizeResult | None, current: SizeResult, paired_run: bool) -> SizeResult:
    """One size's entry after a run of it: a paired run (``--paired``) adds its pair figures to the modes
    an earlier run of the size measured, and an unpaired run keeps the pair figures an earlier paired run
    left, so the two kinds of run of one size no longer replace each other's figures (``--fresh`` drops
    both). Each target is re-read from the figures it belongs to."""
    if previous is None:
        return current
    source = previous if paired_run else current
    pair = current.paired if paired_run else previous.paired
    if pair is None:
        return current
    targets = [t for t in source.targets if not _is_paired_target(t)]
    return msgspec.structs.replace(source, targets=[*targets, paired_target(pair)], paired=pair)


def _is_paired_target(target: Target) -> bool:
    return PAIRED_TARGET in target.target


def load(path: Path) -> Report | None:
    if not path.exists():
        return None
    try:
        return msgspec.json.decode(path.read_bytes(), type=Report)
    except msgspec.ValidationError:
        return None


def plot(report: Report, path: Path) -> bool:
    """Four panels (rebalances, revoked, restart-to-first-record, unowned partition-seconds), one box per
    mode and group size. Returns False when matplotlib is not installed (the ``bench`` extra)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    modes = list(MODES)
    sizes = sorted(report.sizes, key=lambda s: s.members)
    if not sizes:
        return False
    panels: list[tuple[str, str, Callable[[ModeResult], list[float]]]] = [
        ("rebalances", "rebalances per bounce", lambda r: [float(x.rebalances) for x in _done(r)]),
        (
            "revoked",
            "partitions revoked from members not restarting",
            lambda r: [float(x.revoked_from_others) for x in _done(r)],
        ),
        (
            "restart",
            "seconds from process start to first record",
            lambda r: [s.seconds_to_first_record for x in _done(r) for s in x.restarts],
        ),
        (
            "unowned",
            "partition-seconds owned by no live member",
            lambda r: [x.unowned_partition_seconds for x in _done(r)],
        ),
    ]
    figure, axes = plt.subplots(2, 2, figsize=(13, 8.5))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    width = 0.8 / max(1, len(sizes))
    for axis, (_, title, values) in zip(axes.flat, panels, strict=True):
        for k, size in enumerate(sizes):
            by_mode = {m.mode: m for m in size.modes}
            data = [values(by_mode[m]) if m in by_mode else [] for m in modes]
            positions = [i + (k - (len(sizes) - 1) / 2) * width for i in range(len(modes))]
            shown = [(p, d) for p, d in zip(positions, data, strict=True) if d]
            if not shown:
                continue
            boxes = axis.boxplot(
                [d for _, d in shown],
                positions=[p for p, _ in shown],
                widths=width * 0.85,
                patch_artist=True,
                manage_ticks=False,
            )
            for patch in boxes["boxes"]:
                patch.set_facecolor(colours[k % len(colours)])
                patch.set_alpha(0.6)
            axis.plot(
                [], [], color=colours[k % len(colours)], linewidth=8, alpha=0.6, label=f"N={size.members}"
            )
        axis.set_title(title, fontsize=10)
        axis.set_xticks(range(len(modes)))
        axis.set_xticklabels([m.replace("-", "\n", 1) for m in modes], fontsize=8)
        axis.grid(axis="y", alpha=0.3)
    axes.flat[0].legend(fontsize=8)
    figure.suptitle(
        f"Rolling bounce, every member restarted in turn (topic of 4N partitions, session "
        f"{sizes[0].settings.session_ms / 1000:.0f}s, {sizes[0].settings.produce_per_second} records/s)"
    )
    figure.tight_layout()
    figure.savefig(path, dpi=80)
    plt.close(figure)
    return True


STEP_LABELS = {
    "imported": "client imported",
    "started": "client started",
    "coordinator": "coordinator found",
    "joined": "joined",
    "synced": "synced",
    "offsets": "offsets fetched",
    "first_record": "first record",
}


def plot_timeline(report: Report, path: Path) -> bool:
    """Where each restart's time goes: per group size, one row per mode, the median seconds from the
    new process's spawn to each step (bars: p25-p75). False without matplotlib or timeline data."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    sizes = [s for s in sorted(report.sizes, key=lambda s: s.members) if any(m.timeline for m in s.modes)]
    if not sizes:
        return False
    figure, axes = plt.subplots(len(sizes), 1, figsize=(12, 1.2 + 1.9 * len(sizes)), squeeze=False)
    markers = "o^sDvP*"
    for axis, size in zip(axes[:, 0], sizes, strict=True):
        modes = [m for m in size.modes if m.timeline]
        for row, mode in enumerate(modes):
            steps = mode.timeline or {}
            end = steps.get("first_record")
            if end is not None:
                axis.plot([0, end.median], [row, row], color="0.8", linewidth=6, zorder=1)
            for k, step in enumerate(TIMELINE):
                spot = steps.get(step)
                if spot is None:
                    continue
                axis.errorbar(
                    spot.median,
                    row,
                    xerr=[[spot.median - spot.p25], [spot.p75 - spot.median]],
                    fmt=markers[k % len(markers)],
                    color=f"C{k}",
                    markersize=7,
                    capsize=2,
                    zorder=2,
                    label=STEP_LABELS[step] if row == 0 else None,
                )
        axis.set_yticks(range(len(modes)))
        axis.set_yticklabels([m.mode for m in modes], fontsize=8)
        axis.invert_yaxis()
        axis.set_xlim(left=0)
        axis.grid(axis="x", alpha=0.3)
        axis.set_title(f"N = {size.members}: seconds from spawn (median, p25-p75)", fontsize=9)
    axes[0, 0].legend(fontsize=7, ncol=len(TIMELINE), loc="lower center", bbox_to_anchor=(0.5, 1.12))
    figure.tight_layout()
    figure.savefig(path, dpi=80)
    plt.close(figure)
    return True


def _done(result: ModeResult) -> list[Repeat]:
    return [r for r in result.repeats if r.error is None]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--members", type=int, nargs="+", default=[3, 6, 12], help="group sizes N")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--modes", nargs="+", choices=list(MODES), default=list(MODES))
    parser.add_argument("--session-ms", type=int, default=BounceSettings.session_ms)
    parser.add_argument("--grace", type=float, default=1.5, help="seconds watched after each restart")
    parser.add_argument("--produce-per-second", type=int, default=BounceSettings.produce_per_second)
    parser.add_argument("--kafka-version", default=None)
    parser.add_argument("--fresh", action="store_true", help="drop sizes kept from the existing results")
    parser.add_argument(
        "--paired",
        action="store_true",
        help="bounce two modes together, restart by restart (--modes gives the two, ours first; default "
        "staticconsumer-static aiokafka-static), and report the median of pair ratios",
    )
    args = parser.parse_args(argv)
    if args.paired:
        if args.modes == list(MODES):
            args.modes = ["staticconsumer-static", "aiokafka-static"]
        if len(args.modes) != 2:
            parser.error("--paired takes exactly two --modes")
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    settings = BounceSettings(
        session_ms=args.session_ms, produce_per_second=args.produce_per_second, grace=args.grace
    )
    previous = None if args.fresh else load(RESULTS / f"{NAME}.json")
    kept = [s for s in previous.sizes if s.members not in args.members] if previous else []
    earlier = {s.members: s for s in previous.sizes} if previous else {}
    measured: list[SizeResult] = []

    def save(current: SizeResult | None) -> Path:
        runs = [*measured, *([current] if current is not None else [])]
        sizes = [*kept, *(merge_size(earlier.get(s.members), s, args.paired) for s in runs)]
        report = Report(NAME, sorted(sizes, key=lambda s: s.members))
        path = write_json(report, NAME)
        plot(report, path.with_suffix(".png"))
        plot_timeline(report, path.with_name(f"{NAME}_timeline.png"))
        return path

    with EmbeddedKafka(args.kafka_version) as kafka:
        print(f"Kafka {kafka.version} at {kafka.bootstrap_servers}", flush=True)
        for members in args.members:
            measured.append(run_size(kafka, members, args.repeats, args.modes, settings, save, args.paired))
    path = save(None)
    print(f"wrote {path} and, with matplotlib, {path.with_suffix('.png')}")
    for size in measured:
        for target in size.targets:
            print(f"N={size.members} {'MET' if target.met else 'NOT MET'}: {target.target} ({target.detail})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What every benchmark records next to its figures: the machine, the software, the revision; and how
repeated measurements are summarised (median with spread). One home, so results stay comparable."""

from __future__ import annotations

import datetime
import os
import platform
import statistics
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import msgspec

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(os.environ.get("STATICCONSUMER_BENCH_RESULTS") or ROOT / "benchmarks" / "results")
"""Where results go; ``benchmarks.run --quick`` points it elsewhere so a smoke run never replaces the
committed figures."""


class Environment(msgspec.Struct):
    cores: int
    memory_bytes: int | None
    cpu: str
    python: str
    platform: str
    packages: dict[str, str]
    kafka_version: str
    git_revision: str
    git_dirty: bool
    created_utc: str
    command: str
    load_average: tuple[float, float, float] | None = None
    """1, 5 and 15 minute load averages at the start: how busy the (shared) machine was."""


class Spread(msgspec.Struct):
    """A repeated measurement: its median, quartiles, extremes and every sample."""

    runs: int
    median: float
    p25: float
    p75: float
    min: float
    max: float
    samples: list[float]


def spread(samples: list[float]) -> Spread:
    ordered = sorted(samples)
    if len(ordered) >= 2:
        quartiles = statistics.quantiles(ordered, n=4, method="inclusive")
        p25, p75 = quartiles[0], quartiles[2]
    else:
        p25 = p75 = ordered[0]
    return Spread(len(ordered), statistics.median(ordered), p25, p75, ordered[0], ordered[-1], ordered)


def _memory_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _git(*args: str) -> str:
    result = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    return result.stdout.strip()


def environment(
    kafka_version: str,
    packages: tuple[str, ...] = ("aiokafka", "staticconsumer"),
    dirty_paths: tuple[str, ...] = (),
) -> Environment:
    """What a result was measured on. ``git_dirty`` covers ``dirty_paths`` when given (what the
    benchmark measures), the whole checkout otherwise."""
    versions = {}
    for name in packages:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return Environment(
        cores=len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 0),
        memory_bytes=_memory_bytes(),
        cpu=_cpu(),
        python=sys.version.split()[0],
        platform=platform.platform(),
        packages=versions,
        kafka_version=kafka_version,
        git_revision=_git("rev-parse", "HEAD") or "unknown",
        git_dirty=bool(_git("status", "--porcelain", *(("--", *dirty_paths) if dirty_paths else ()))),
        created_utc=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        command=" ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        load_average=os.getloadavg() if hasattr(os, "getloadavg") else None,
    )


def write_json(report: msgspec.Struct, name: str) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_bytes(msgspec.json.format(msgspec.json.encode(report), indent=2) + b"\n")
    return path

"""What ``import staticconsumer`` and ``StaticConsumer(...)`` load, and what each module costs.

A static member that restarts in a rolling deploy pays its imports on the critical path of every
partition it owns. This measures them side by side with ``import aiokafka`` (what a consumer cannot
avoid) and an empty interpreter, interleaved, ``--runs`` fresh interpreters each (median):

* the wall time of each process (``python -c ...``);
* ``python -X importtime``: per module, its own time and its cumulative time (median over runs),
  for the modules ``import staticconsumer`` adds beyond ``import aiokafka``;
* the constructor: seconds in ``StaticConsumer(...)`` and what it imports the first time.

    .venv/bin/python -m benchmarks.import_weight [--runs 11] [--top 40] [--bytecode cached|source]
        [--json out.json]

``--bytecode cached`` (the default) is what an installed package does; ``source`` is a checkout with
``PYTHONDONTWRITEBYTECODE=1``, where this repository's modules are compiled at every start while
aiokafka's come compiled from site-packages: compare the two before comparing imports.

A diagnostic, not a page benchmark: it prints a report (and JSON with ``--json``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OURS = ("staticconsumer", "assignors")

CASES = {
    "empty": "pass",
    "aiokafka": "import aiokafka",
    "staticconsumer": "import staticconsumer",
    "constructor": (
        "import time, sys; import staticconsumer; before = set(sys.modules); t = time.perf_counter(); "
        "staticconsumer.StaticConsumer('t', bootstrap_servers='localhost:9092', group_id='g', "
        "group_instance_id='g-0'); print('CONSTRUCTOR', time.perf_counter() - t, "
        "','.join(sorted(set(sys.modules) - before)), file=sys.stderr)"
    ),
}


def environment(bytecode: str) -> dict[str, str]:
    """``cached``: compiled bytecode in a cache outside the checkout, as an installed package has;
    ``source``: this repository compiled from source at every start (``PYTHONDONTWRITEBYTECODE=1``
    in a checkout), while site-packages, aiokafka included, still come compiled."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    if bytecode == "cached":
        env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "staticconsumer-import-weight-pycache")
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


ENV: dict[str, str] = dict(os.environ)


def _run(code: str, importtime: bool) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (user + system: less inflated than wall on a busy machine), stderr."""
    command = [sys.executable, *(["-X", "importtime"] if importtime else []), "-c", code]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True, env=ENV)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stderr


def parse_importtime(stderr: str) -> dict[str, tuple[int, int]]:
    """Module -> (self us, cumulative us) from ``-X importtime`` output."""
    out: dict[str, tuple[int, int]] = {}
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        _, self_us, cumulative, name = (part.strip() for part in line.replace("import time:", "|").split("|"))
        out[name.strip()] = (int(self_us), int(cumulative))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--top", type=int, default=40, help="modules listed, by median self time")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--bytecode",
        choices=("cached", "source"),
        default="cached",
        help="cached: compiled bytecode as installed (default); source: compiled at every start",
    )
    args = parser.parse_args(argv)
    ENV.clear()
    ENV.update(environment(args.bytecode))
    for code in CASES.values():  # warm the bytecode cache (and the OS's file cache) untimed
        _run(code, importtime=False)

    wall: dict[str, list[float]] = defaultdict(list)
    cpu: dict[str, list[float]] = defaultdict(list)
    modules: dict[str, dict[str, list[tuple[int, int]]]] = defaultdict(lambda: defaultdict(list))
    constructor: list[float] = []
    constructor_imports: set[str] = set()
    for run in range(args.runs):
        names = list(CASES)
        names = names[run % len(names) :] + names[: run % len(names)]  # rotate: no case always first
        for name in names:
            seconds, cpu_seconds, _ = _run(CASES[name], importtime=False)
            wall[name].append(seconds)
            cpu[name].append(cpu_seconds)
            _, _, stderr = _run(CASES[name], importtime=True)
            for module, times in parse_importtime(stderr).items():
                modules[name][module].append(times)
            if name == "constructor":
                for line in stderr.splitlines():
                    if line.startswith("CONSTRUCTOR "):
                        _, took, imported = [*line.split(" ", 2), ""][:3]
                        constructor.append(float(took))
                        constructor_imports.update(filter(None, imported.split(",")))

    def median_times(case: str) -> dict[str, tuple[float, float]]:
        return {
            m: (statistics.median(t[0] for t in ts) / 1e6, statistics.median(t[1] for t in ts) / 1e6)
            for m, ts in modules[case].items()
        }

    ours, theirs = median_times("staticconsumer"), median_times("aiokafka")
    added = {m: t for m, t in ours.items() if m not in theirs}
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    wall_median = {k: statistics.median(v) for k, v in wall.items()}
    cpu_median = {k: statistics.median(v) for k, v in cpu.items()}
    added_self = sum(t[0] for t in added.values())
    top_added = sorted(added.items(), key=lambda kv: -kv[1][0])[: args.top]
    ours_by_module = {m: t for m, t in sorted(ours.items(), key=lambda kv: -kv[1][1]) if m.startswith(OURS)}
    constructor_median = statistics.median(constructor) if constructor else None
    report = {
        "runs": args.runs,
        "bytecode": args.bytecode,
        "python": sys.version.split()[0],
        "load_average": load,
        "wall_seconds_median": wall_median,
        "cpu_seconds_median": cpu_median,
        "importtime_cumulative_seconds": {
            "staticconsumer": ours.get("staticconsumer", (0.0, 0.0))[1],
            "aiokafka": theirs.get("aiokafka", (0.0, 0.0))[1],
        },
        "added_modules": len(added),
        "added_self_seconds": added_self,
        "top_added_by_self": top_added,
        "ours_by_module": ours_by_module,
        "constructor_seconds_median": constructor_median,
        "constructor_imports": sorted(constructor_imports),
    }
    print(f"runs {args.runs}, bytecode {args.bytecode}, load {load}")
    for case, seconds in wall_median.items():
        print(f"  python -c {case!r:18} {seconds * 1000:7.1f} ms wall, {cpu_median[case] * 1000:7.1f} ms cpu")
    print(
        f"importtime cumulative: staticconsumer {ours.get('staticconsumer', (0, 0))[1] * 1000:.1f} ms, "
        f"aiokafka {theirs.get('aiokafka', (0, 0))[1] * 1000:.1f} ms; {len(added)} modules beyond "
        f"aiokafka's, {added_self * 1000:.1f} ms of their own"
    )
    print("top modules beyond aiokafka's (self ms, cumulative ms):")
    for module, (self_s, cumulative) in top_added:
        print(f"  {self_s * 1000:7.2f} {cumulative * 1000:8.2f}  {module}")
    print("this repository's modules (self ms, cumulative ms):")
    for module, (self_s, cumulative) in ours_by_module.items():
        print(f"  {self_s * 1000:7.2f} {cumulative * 1000:8.2f}  {module}")
    if constructor_median is not None:
        print(f"StaticConsumer(...): {constructor_median * 1000:.1f} ms (median); imports it adds:")
        print("  " + (", ".join(sorted(constructor_imports)) or "none"))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

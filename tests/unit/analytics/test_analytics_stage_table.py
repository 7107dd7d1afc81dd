"""The fleet benchmark's stage table: Spark's event log summed per step of the job (docs/analytics.md)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.analytics_fleet import FLOOR_STEP, stage_markdown, stage_table


def _stage(stage: int, tasks: int, **metrics: float) -> dict[str, object]:
    names = {
        "run_ms": "internal.metrics.executorRunTime",
        "cpu_ns": "internal.metrics.executorCpuTime",
        "shuffle_write": "internal.metrics.shuffle.write.bytesWritten",
        "local_read": "internal.metrics.shuffle.read.localBytesRead",
        "remote_read": "internal.metrics.shuffle.read.remoteBytesRead",
        "spill": "internal.metrics.memoryBytesSpilled",
    }
    accumulables = [{"ID": i, "Name": names[k], "Value": v} for i, (k, v) in enumerate(metrics.items())]
    info = {"Stage ID": stage, "Number of Tasks": tasks, "Accumulables": accumulables}
    return {"Event": "SparkListenerStageCompleted", "Stage Info": info}


def _job(stages: list[int], description: str | None) -> dict[str, object]:
    properties = {} if description is None else {"spark.job.description": description}
    return {"Event": "SparkListenerJobStart", "Stage IDs": stages, "Properties": properties}


def test_stages_are_summed_per_step_and_the_floor_stays_out_of_the_total(tmp_path: Path) -> None:
    events = [
        _job([1, 2], "table windows"),
        _stage(1, 2, run_ms=3000, cpu_ns=2e9, shuffle_write=5e6),
        _stage(2, 4, run_ms=1000, cpu_ns=1e9, local_read=3e6, remote_read=2e6, spill=1e6),
        {
            "Event": "SparkListenerStageCompleted",
            "Stage Info": {"Stage ID": 3, "Number of Tasks": 9, "Failure Reason": "killed"},
        },
        _job([4], FLOOR_STEP),
        _stage(4, 2, run_ms=7000, cpu_ns=6e9),
        _job([5], None),
        _stage(5, 1, run_ms=500),
    ]
    folder = tmp_path / "eventlog_v2_app-1"
    folder.mkdir()
    (folder / "events_1_app-1").write_text("\n".join(json.dumps(e) for e in events) + "\n")

    rows = {row.step: row for row in stage_table(tmp_path)}

    windows = rows["table windows"]
    assert (windows.stages, windows.tasks, windows.run_s, windows.cpu_s) == (2, 6, 4.0, 3.0)
    assert (windows.shuffle_write_mb, windows.shuffle_read_mb, windows.spill_mb) == (5.0, 5.0, 1.0)
    assert rows[FLOOR_STEP].cpu_s == 6.0
    assert rows["(outside the job)"].run_s == 0.5
    total = stage_markdown(list(rows.values())).splitlines()[-1]
    assert total == "| **the job** | 2 | 6 | 4.0 | 3.0 | 0.0 | 5.0 | 5.0 | 1.0 |"

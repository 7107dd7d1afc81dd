"""Progress lines for long work: the step the job is in and each Spark stage as it completes.

Spark's own console bar redraws one line and says nothing of what the job is doing; these are plain
lines (fit for CI logs and ``tee``), written to stderr so the summary on stdout stays clean. A thread
polls Spark's status tracker (the same data as the web UI), so this works on every master.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from pyspark import SparkContext

JOB_GROUP = "staticconsumer-analyze"


class Progress:
    """Prints ``analyze: [12.3s] <step>: stage 7 done (23 tasks, 4.1s)`` lines while steps run.

    ``quiet`` prints nothing (tests, the Python API by default). ``heartbeat`` seconds without a
    completed stage print what is running, so a long stage never looks like a hang.
    """

    def __init__(
        self,
        context: SparkContext | None = None,
        *,
        stream: TextIO | None = None,
        quiet: bool = False,
        poll_seconds: float = 0.5,
        heartbeat: float = 15.0,
    ) -> None:
        self.context = context
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.poll_seconds = poll_seconds
        self.heartbeat = heartbeat
        self.started = time.monotonic()
        self.step_name = "starting"
        self._reported: set[int] = set()
        self._first_seen: dict[int, float] = {}
        self._last_line = time.monotonic()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.stages_done = 0
        self.steps: dict[str, float] = {}
        """Seconds each finished step took, by name (the benchmark splits the job's time with them)."""

    def say(self, text: str) -> None:
        if not self.quiet:
            print(f"analyze: [{time.monotonic() - self.started:.1f}s] {text}", file=self.stream, flush=True)
        self._last_line = time.monotonic()

    def attach(self, context: SparkContext) -> None:
        """Start following the stages of this context's jobs run by this thread."""
        self.context = context
        context.setJobGroup(JOB_GROUP, "staticconsumer analyze")
        if not self.quiet and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="analyze-progress", daemon=True)
            self._thread.start()

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        """A named step: its Spark jobs carry the name (also in the web UI), its end is a line."""
        self.step_name = name
        started = time.monotonic()
        if self.context is not None:
            self.context.setJobDescription(name)
        self.say(f"{name} ...")
        yield
        self._poll()
        took = time.monotonic() - started
        self.steps[name] = self.steps.get(name, 0.0) + took
        self.say(f"{name}: done in {took:.1f}s")

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self.context is not None:
            self.context.setJobDescription(None)  # type: ignore[arg-type]

    def _run(self) -> None:
        while not self._stop.wait(self.poll_seconds):
            try:
                self._poll()
            except Exception:  # the context stopped under us: progress is best effort, never fatal
                return

    def _poll(self) -> None:
        with self._lock:
            self._poll_locked()

    def _poll_locked(self) -> None:
        context = self.context
        if context is None or self.quiet:
            return
        tracker = context.statusTracker()
        now = time.monotonic()
        active = set(tracker.getActiveStageIds())
        stages: list[int] = []
        for job in tracker.getJobIdsForGroup(JOB_GROUP):
            job_info = tracker.getJobInfo(job)
            if job_info is not None:
                stages += list(job_info.stageIds)
        for stage in sorted(set(stages) - self._reported):
            self._first_seen.setdefault(stage, now)
            info = tracker.getStageInfo(stage)
            if info is None or stage in active or info.numTasks == 0:
                continue
            if info.numCompletedTasks >= info.numTasks:
                self._reported.add(stage)
                self.stages_done += 1
                took = now - self._first_seen[stage]
                self.say(
                    f"{self.step_name}: stage {stage} done ({info.numTasks} tasks, ~{took:.1f}s; "
                    f"{self.stages_done} stages so far)"
                )
        if now - self._last_line >= self.heartbeat and active:
            running = []
            for stage in sorted(active):
                info = tracker.getStageInfo(stage)
                if info is not None:
                    running.append(f"stage {stage} {info.numCompletedTasks}/{info.numTasks} tasks")
            self.say(f"{self.step_name}: still running: {', '.join(running)}")

"""A restarting consumer pays its imports before it can own a partition: what a consumer does not need
at start stays out of ``import staticconsumer`` and ``StaticConsumer(...)`` (issue 18)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

NEVER_AT_START = (
    "pyspark",
    "matplotlib",
    "numpy",
    "pandas",
    "opentelemetry",
    "importlib.metadata",
    "anyio",
    "staticconsumer.admin",
    "staticconsumer.analytics",
    "staticconsumer.eventlog",
    "staticconsumer.testing",
    "staticconsumer.cli",
    "staticconsumer._groupless",
    "staticconsumer.sync",
)
"""Heavy or tool-only modules: analytics and admin tools, test helpers, the event log (only when
configured), OpenTelemetry (only once the process uses it), ``importlib.metadata`` (the package
version is ``staticconsumer.__version__``), and anyio (the membership loop uses the standard library's
task groups: anyio's asyncio backend cost ~15 ms of CPU at every start; only the synchronous consumer,
``staticconsumer.sync``, uses it, for its blocking portal); the consumer without a group
(``group_id=None``) loads only when one is built."""


def _loaded_after(code: str, environ: dict[str, str] | None = None) -> list[str]:
    """Which of NEVER_AT_START a fresh interpreter has imported after running ``code``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(environ or {})
    report = f"print(json.dumps([m for m in {list(NEVER_AT_START)!r} if m in sys.modules]))"
    script = f"import json, sys\n{code}\n{report}"
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env)
    loaded: list[str] = json.loads(run.stdout)
    return loaded


CONSTRUCT = (
    "import staticconsumer\n"
    "staticconsumer.StaticConsumer('t', bootstrap_servers='localhost:9092', group_id='g', "
    "group_instance_id='g-0')"
)


def test_import_and_construct_load_nothing_heavy() -> None:
    assert _loaded_after(CONSTRUCT) == []


def test_tools_load_on_first_use() -> None:
    code = "import staticconsumer\nstaticconsumer.GroupAdmin\nfrom staticconsumer import GroupAdmin"
    assert "staticconsumer.admin" in _loaded_after(code)


def test_opentelemetry_configured_by_the_environment_loads_with_the_consumer() -> None:
    assert "opentelemetry" in _loaded_after(CONSTRUCT, {"OTEL_SERVICE_NAME": "billing"})


@pytest.mark.parametrize(
    ("code", "environ"),
    [
        ("import opentelemetry.trace\n" + CONSTRUCT, {}),
        (CONSTRUCT, {"OTEL_SERVICE_NAME": "billing"}),
    ],
    ids=["imported", "configured"],
)
def test_telemetry_is_built_at_once_when_the_process_uses_opentelemetry(
    code: str, environ: dict[str, str]
) -> None:
    script = (
        code + "\nc = staticconsumer.StaticConsumer('t', bootstrap_servers='localhost:9092', group_id='g')\n"
        "from staticconsumer.telemetry import RecordTracer, TelemetryObserver\n"
        "assert any(isinstance(o, TelemetryObserver) for o in c._observers), c._observers\n"
        "assert isinstance(c._records, RecordTracer), c._records"
    )
    _loaded_after(script, environ)


def test_telemetry_waits_for_opentelemetry_when_nobody_uses_it() -> None:
    script = (
        CONSTRUCT
        + "\nc = staticconsumer.StaticConsumer('t', bootstrap_servers='localhost:9092', group_id='g')\n"
        "from staticconsumer.telemetry import DeferredRecordTracer, DeferredTelemetryObserver\n"
        "assert any(isinstance(o, DeferredTelemetryObserver) for o in c._observers), c._observers\n"
        "assert isinstance(c._records, DeferredRecordTracer), c._records"
    )
    assert _loaded_after(script) == []


def test_an_event_log_loads_when_configured(tmp_path: Path) -> None:
    path = str(tmp_path / "events.jsonl")
    code = CONSTRUCT.replace("'g-0'", f"'g-0', event_log_path={path!r}")
    assert "staticconsumer.eventlog" in _loaded_after(code)


def test_anyio_comes_with_the_sync_consumer_only() -> None:
    """The check above names anyio rightly: the sync consumer's module does load it."""
    assert {"anyio", "staticconsumer.sync"} <= set(_loaded_after("import staticconsumer.sync"))

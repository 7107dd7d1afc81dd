"""A restarting consumer pays its imports before it can own a partition: what a consumer does not need
at start stays out of ``import staticconsumer`` and ``StaticConsumer(...)``."""

from __future__ import annotations

import json
import subprocess
import sys

NEVER_AT_START = (
    "pyspark",
    "matplotlib",
    "numpy",
    "pandas",
    "opentelemetry.sdk",
    "staticconsumer.analytics",
    "staticconsumer.testing",
    "staticconsumer.cli",
)
"""Heavy or tool-only modules. (``staticconsumer.admin`` joins this list once the package stops
importing GroupAdmin eagerly; see issue 18.)"""


def test_import_and_construct_load_nothing_heavy() -> None:
    code = (
        "import json, sys, staticconsumer; "
        "staticconsumer.StaticConsumer('t', bootstrap_servers='localhost:9092', group_id='g', "
        "group_instance_id='g-0'); "
        f"print(json.dumps([m for m in {list(NEVER_AT_START)!r} if m in sys.modules]))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(run.stdout) == []

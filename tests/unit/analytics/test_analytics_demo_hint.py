"""The demo ends with the analysis; without PySpark it says how to install it and keeps its verdict."""

from __future__ import annotations

from pathlib import Path

import pytest

import staticconsumer.analytics
from staticconsumer import demo


def test_demo_without_pyspark_explains_instead_of_failing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(staticconsumer.analytics, "pyspark_available", lambda: False)
    demo._analyze_event_logs(tmp_path)
    printed = capsys.readouterr().out
    assert f"Membership event logs of every member process: {tmp_path}" in printed
    assert "Skipping the Spark analysis of these logs" in printed
    assert "pip install 'staticconsumer[analytics]'" in printed

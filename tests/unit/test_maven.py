"""The neutral Maven helpers (``staticconsumer._maven``) that the testing kit and analytics share: each user
says in its own error what Maven was needed for."""

from __future__ import annotations

from pathlib import Path

import pytest

from staticconsumer import _maven
from staticconsumer.analytics.jars import kafka_source_jars
from staticconsumer.errors import AnalyticsError


def test_without_mvn_the_callers_own_error_is_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(LookupError, match="for the test"):
        _maven.find_maven(lambda: LookupError("mvn is needed for the test"))
    (tmp_path / "mvn").write_text("#!/bin/sh\n")
    (tmp_path / "mvn").chmod(0o755)
    assert _maven.find_maven(lambda: LookupError("unused")) == str(tmp_path / "mvn")


def test_the_cache_is_where_the_environment_says(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STATICCONSUMER_CACHE_DIR", str(tmp_path / "explicit"))
    assert _maven.cache_root() == tmp_path / "explicit"
    monkeypatch.delenv("STATICCONSUMER_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert _maven.cache_root() == tmp_path / "xdg" / "staticconsumer"


def test_analytics_without_mvn_says_it_needs_it_for_sparks_kafka_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STATICCONSUMER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(AnalyticsError, match=r"Maven \('mvn'\) is not on PATH.*spark-sql-kafka.*--follow"):
        kafka_source_jars(quiet=True)

"""./dev test (what CI runs) must fail when a step fails: a green CI on a red suite is worse than none."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _fake_repo(tmp_path: Path, pytest_exit: int, ruff_exit: int = 0) -> Path:
    """A copy of the dev script whose tools are stand-ins with chosen exit codes."""
    repo = tmp_path / "repo"
    (repo / ".venv" / "bin").mkdir(parents=True)
    shutil.copy(ROOT / "dev", repo / "dev")
    (repo / "pyproject.toml").write_text("")
    (repo / ".venv" / ".installed").touch()
    tools = {"python": 0, "ruff": ruff_exit, "mypy": 0, "staticconsumer": 0, "pytest": pytest_exit}
    for name, code in tools.items():
        script = repo / ".venv" / "bin" / name
        script.write_text(f"#!/bin/sh\nexit {code}\n")
        script.chmod(0o755)
    os.utime(repo / ".venv" / ".installed")  # newer than pyproject.toml: no reinstall
    return repo


@pytest.mark.parametrize(
    ("pytest_exit", "ruff_exit", "expected"), [(0, 0, 0), (1, 0, 1), (5, 0, 5), (0, 1, 1)]
)
def test_dev_test_exits_with_the_first_failing_steps_status(
    tmp_path: Path, pytest_exit: int, ruff_exit: int, expected: int
) -> None:
    repo = _fake_repo(tmp_path, pytest_exit, ruff_exit)
    result = subprocess.run(["bash", str(repo / "dev"), "test"], capture_output=True, text=True, timeout=60)
    assert result.returncode == expected, result.stderr

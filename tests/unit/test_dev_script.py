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


def _fake_python313(repo: Path, reports_313: bool) -> Path:
    """A stand-in interpreter: passes (or fails) the dev script's "is this 3.13" probe."""
    python = repo / "fake-python3.13"
    python.write_text(f"#!/bin/sh\nexit {0 if reports_313 else 1}\n")
    python.chmod(0o755)
    return python


def test_dev_unit313_runs_the_unit_suite_in_its_own_venv_and_exits_with_pytests_status(
    tmp_path: Path,
) -> None:
    repo = _fake_repo(tmp_path, pytest_exit=0)
    venv = repo / ".venv313"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("#!/bin/sh\nexit 0\n")
    (venv / "bin" / "pytest").write_text(f'#!/bin/sh\necho "$@" > {repo}/args\nexit 3\n')
    for tool in ("python", "pytest"):
        (venv / "bin" / tool).chmod(0o755)
    (venv / ".installed").touch()
    env = {**os.environ, "PYTHON313": str(_fake_python313(repo, reports_313=True))}
    result = subprocess.run(
        ["bash", str(repo / "dev"), "unit313", "-x", "-q"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert result.returncode == 3, result.stderr
    args = (repo / "args").read_text().split()
    assert args[-1] == "tests/unit", "the unit suite, never the whole one, whatever options are given"
    assert {"-x", "-q"} <= set(args)
    assert "pytest (3.13)" in result.stderr


def test_dev_unit313_without_a_python_313_says_so_and_exits_2(tmp_path: Path) -> None:
    repo = _fake_repo(tmp_path, pytest_exit=0)
    env = {
        **os.environ,
        "PYTHON313": str(_fake_python313(repo, reports_313=False)),
        "PATH": "/usr/bin:/bin",  # no pyenv shim, no python3.13
        "PYENV_ROOT": str(tmp_path / "no-pyenv"),
    }
    result = subprocess.run(
        ["bash", str(repo / "dev"), "unit313"], capture_output=True, text=True, timeout=60, env=env
    )
    assert result.returncode == 2, result.stderr
    assert "no Python 3.13 found" in result.stderr
    assert not (repo / ".venv313").exists(), "nothing made without an interpreter"

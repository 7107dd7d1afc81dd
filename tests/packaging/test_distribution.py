"""The wheel and sdist a release would upload, built as a new user would build them (``python -m build``),
and the wheel installed into a fresh virtualenv: what is inside, what its metadata says, and that the
installed command runs.

Offline: the build uses this environment's setuptools (``--no-isolation``), and the fresh virtualenv gets
the wheel with ``--no-index --no-deps`` while a ``.pth`` line lends it this environment's dependencies
(aiokafka, msgspec, ...), which the wheel itself does not contain. The package under test is imported
from the fresh virtualenv, never from the checkout: every command runs outside the repository.
"""

from __future__ import annotations

import email
import email.message
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import tarfile
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

import staticconsumer

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
VERSION = staticconsumer.__version__
CACHE_NAMES = ("__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis")


@dataclass(frozen=True)
class Built:
    wheel: Path
    sdist: Path


def _source_copy(destination: Path) -> Path:
    """What a release is built from, with the clutter a working tree really has: tests, caches, bytecode."""
    source = destination / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    for package in ("staticconsumer", "assignors", "tests"):
        shutil.copytree(ROOT / package, source / package, ignore=shutil.ignore_patterns(".venv", "target"))
    for cache in (
        source / "staticconsumer" / "__pycache__",
        source / ".pytest_cache",
        source / ".mypy_cache",
    ):
        cache.mkdir(exist_ok=True)
        (cache / "stale.pyc").write_bytes(b"not a release file")
    return source


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    work = tmp_path_factory.mktemp("release")
    source = _source_copy(work)
    out = work / "dist"
    result = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=work,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (wheel,) = out.glob("*.whl")
    (sdist,) = out.glob("*.tar.gz")
    return Built(wheel, sdist)


def _wheel_names(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


def _wheel_metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as archive:
        text = archive.read(f"staticconsumer-{VERSION}.dist-info/METADATA").decode("utf-8")
    return email.message_from_string(text)


def _sdist_names(sdist: Path) -> list[str]:
    with tarfile.open(sdist) as archive:
        return archive.getnames()


def _no_clutter(names: list[str]) -> None:
    clutter = [n for n in names if n.startswith("tests/") or "/tests/" in n or n.endswith((".pyc", ".pyo"))]
    clutter += [n for n in names if any(part in CACHE_NAMES for part in n.split("/"))]
    assert not clutter, clutter


def test_the_wheel_holds_the_packages_their_type_markers_and_the_license_and_nothing_else(
    built: Built,
) -> None:
    names = _wheel_names(built.wheel)
    _no_clutter(names)
    assert {n.split("/")[0] for n in names} == {
        "staticconsumer",
        "assignors",
        f"staticconsumer-{VERSION}.dist-info",
    }
    assert "staticconsumer/py.typed" in names
    assert "assignors/py.typed" in names
    assert "staticconsumer/__main__.py" in names
    assert "staticconsumer/settings/__main__.py" in names
    oracle = [n for n in names if "oracle" in n]
    assert not oracle, f"the Java oracle is test code (tests/interop), never installed: {oracle}"
    assert f"staticconsumer-{VERSION}.dist-info/licenses/LICENSE" in names
    with zipfile.ZipFile(built.wheel) as archive:
        license_text = archive.read(f"staticconsumer-{VERSION}.dist-info/licenses/LICENSE").decode()
        entry_points = archive.read(f"staticconsumer-{VERSION}.dist-info/entry_points.txt").decode()
    assert license_text == (ROOT / "LICENSE").read_text()
    assert "Apache License" in license_text
    assert "Version 2.0, January 2004" in license_text
    assert "staticconsumer = staticconsumer.cli:main" in entry_points
    assert "pytest11" not in entry_points, "the pytest plugin is opt-in: no entry point loads it"


def test_the_wheel_metadata_declares_the_spdx_license_urls_and_readme(built: Built) -> None:
    metadata = _wheel_metadata(built.wheel)
    assert metadata["Version"] == VERSION
    assert metadata["License-Expression"] == "Apache-2.0"
    assert metadata["License"] is None, "the deprecated License field must not be written"
    assert not [c for c in metadata.get_all("Classifier", []) if c.startswith("License ::")]
    assert metadata["License-File"] == "LICENSE"
    assert float(metadata["Metadata-Version"]) >= 2.4
    assert metadata["Requires-Python"] == ">=3.11"
    urls = dict(entry.split(", ", 1) for entry in metadata.get_all("Project-URL", []))
    assert urls == PYPROJECT["project"]["urls"]
    assert metadata["Description-Content-Type"] == "text/markdown"
    assert metadata.get_payload().strip() == (ROOT / "README.md").read_text().strip()


def test_the_sdist_holds_sources_license_and_readme_but_no_tests_or_caches(built: Built) -> None:
    prefix = f"staticconsumer-{VERSION}/"
    names = [n.removeprefix(prefix) for n in _sdist_names(built.sdist)]
    _no_clutter(names)
    for required in ("LICENSE", "README.md", "pyproject.toml", "PKG-INFO", "staticconsumer/py.typed"):
        assert required in names, required
    with tarfile.open(built.sdist) as archive:
        member = archive.extractfile(prefix + "PKG-INFO")
        assert member is not None
        pkg_info = email.message_from_bytes(member.read())
    assert pkg_info["License-Expression"] == "Apache-2.0"


def test_the_readme_reads_well_on_pypi_its_links_are_absolute_and_lead_to_files_that_exist() -> None:
    readme = (ROOT / "README.md").read_text()
    assert readme.index("pip install staticconsumer") < readme.index("./dev demo"), "pip first"
    assert "./dev test" in readme
    source = PYPROJECT["project"]["urls"]["Source"]
    targets = [link.split(")", 1)[0] for link in readme.split("](")[1:]]
    assert targets, "the README links to the documentation"
    for target in targets:
        assert target.startswith(source + "/blob/main/"), (
            f"{target}: not an absolute link into the repository"
        )
        assert (ROOT / target.removeprefix(source + "/blob/main/")).is_file(), f"{target}: no such file"
    listed = {t.rsplit("/", 1)[1] for t in targets if "/docs/" in t}
    assert listed == {p.name for p in (ROOT / "docs").glob("*.md")}, "every docs page is linked once"


@pytest.fixture(scope="module")
def fresh_venv(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtualenv with only the wheel installed (and this environment's dependencies lent)."""
    venv = tmp_path_factory.mktemp("fresh") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(python)]
    install = subprocess.run(
        [*pip, "install", "-q", "--no-index", "--no-deps", str(built.wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    lent = _lent_dependencies(venv.parent / "lent")
    (Path(purelib) / "_lent_dependencies.pth").write_text(f"{lent}\n")
    return venv


def _lent_dependencies(lent: Path) -> Path:
    """This environment's installed distributions, linked one by one into ``lent``, all but its own
    editable install of staticconsumer: that one's metadata (entry points included) would otherwise
    stand beside the wheel's and be read as installed too."""
    lent.mkdir()
    for directory in sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}):
        for entry in Path(directory).iterdir():
            ours = entry.name.startswith(("staticconsumer", "__editable__.staticconsumer", "__editable___"))
            if not ours and not (lent / entry.name).exists():
                (lent / entry.name).symlink_to(entry)
    return lent


def _run(venv: Path, *command: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "KAFKA_", "VIRTUAL_ENV"))}
    clean["PATH"] = f"{venv / 'bin'}{os.pathsep}{clean.get('PATH', '')}"
    return subprocess.run(
        list(command),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=venv,  # never the checkout: python -m would import the package from the current directory
        env={**clean, **(env or {})},
    )


def test_the_installed_package_is_the_wheels_not_the_checkouts(fresh_venv: Path) -> None:
    python = str(fresh_venv / "bin" / "python")
    result = _run(
        fresh_venv, python, "-c", "import staticconsumer, assignors; print(staticconsumer.__file__)"
    )
    assert result.returncode == 0, result.stderr
    assert Path(result.stdout.strip()).is_relative_to(fresh_venv), result.stdout


def test_the_console_script_and_python_dash_m_print_the_version(fresh_venv: Path) -> None:
    script = _run(fresh_venv, str(fresh_venv / "bin" / "staticconsumer"), "--version")
    module = _run(fresh_venv, str(fresh_venv / "bin" / "python"), "-m", "staticconsumer", "--version")
    for result in (script, module):
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith(f"staticconsumer {VERSION} (aiokafka 0.14."), result.stdout


def test_the_settings_check_runs_without_a_runpy_warning(fresh_venv: Path) -> None:
    environment = {"KAFKA_BOOTSTRAP_SERVERS": "kafka-0:9092", "KAFKA_GROUP_ID": "orders"}
    python = str(fresh_venv / "bin" / "python")
    result = _run(
        fresh_venv, python, "-W", "error", "-m", "staticconsumer.settings", "--check", env=environment
    )
    assert result.returncode == 0, result.stderr
    assert "RuntimeWarning" not in result.stderr
    assert "bootstrap.servers=kafka-0:9092" in result.stdout.splitlines()


def test_the_installed_command_says_when_nothing_listens(fresh_venv: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again before the command runs: nothing listens there
    result = _run(
        fresh_venv,
        str(fresh_venv / "bin" / "staticconsumer"),
        *("describe", "orders", "--bootstrap-server", f"127.0.0.1:{port}", "--timeout-ms", "3000"),
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"127.0.0.1:{port}" in result.stderr
    assert "nothing is listening" in result.stderr


OUR_FIXTURES = (
    "kafka_broker",
    "kafka_cluster",
    "create_topic",
    "add_partitions",
    "unique_topic",
    "unique_group",
)
OUR_MARKERS = ("@pytest.mark.kafka:", "@pytest.mark.both_versions:")


def _user_project(root: Path, conftest: str | None) -> Path:
    """A project that depends on staticconsumer: one test, its own pytest configuration (so pytest's
    rootdir is the project, never the checkout), and a conftest when given."""
    root.mkdir()
    (root / "pytest.ini").write_text("[pytest]\n")
    (root / "test_service.py").write_text(
        "import staticconsumer\n\n\ndef test_it():\n    assert staticconsumer\n"
    )
    if conftest is not None:
        (root / "conftest.py").write_text(conftest)
    return root


def _pytest(venv: Path, project: Path, *args: str) -> str:
    result = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pytest", "-p", "no:cacheprovider", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=project,
        env={k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYTEST", "VIRTUAL_ENV"))},
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def _fixture_names(listing: str) -> set[str]:
    return {line.split(" ", 1)[0] for line in listing.splitlines() if line and not line.startswith(" ")}


def test_a_project_that_does_not_opt_in_gets_none_of_our_fixtures_or_markers(
    fresh_venv: Path, tmp_path: Path
) -> None:
    project = _user_project(tmp_path / "service", conftest=None)
    fixtures = _pytest(fresh_venv, project, "--fixtures")
    assert "tmp_path" in _fixture_names(fixtures), fixtures[-2000:]  # the listing is real
    assert not _fixture_names(fixtures) & set(OUR_FIXTURES), fixtures
    assert "staticconsumer" not in fixtures
    markers = _pytest(fresh_venv, project, "--markers")
    assert "@pytest.mark.parametrize" in markers
    assert not [m for m in OUR_MARKERS if m in markers], markers
    assert "1 passed" in _pytest(fresh_venv, project, "-q")


@pytest.mark.parametrize(
    ("conftest", "args"),
    [
        ('pytest_plugins = ["staticconsumer.testing.pytest_plugin"]\n', ()),
        (None, ("-p", "staticconsumer.testing.pytest_plugin")),
    ],
    ids=["pytest_plugins", "dash-p"],
)
def test_a_project_that_opts_in_gets_every_fixture_and_marker(
    fresh_venv: Path, tmp_path: Path, conftest: str | None, args: tuple[str, ...]
) -> None:
    project = _user_project(tmp_path / "service", conftest=conftest)
    fixtures = _pytest(fresh_venv, project, *args, "--fixtures")
    assert set(OUR_FIXTURES) <= _fixture_names(fixtures), fixtures[-3000:]
    (listed,) = [line for line in fixtures.splitlines() if line.startswith("kafka_broker ")]
    assert "staticconsumer/testing/pytest_plugin.py" in listed, listed
    markers = _pytest(fresh_venv, project, *args, "--markers")
    assert all(m in markers for m in OUR_MARKERS), markers

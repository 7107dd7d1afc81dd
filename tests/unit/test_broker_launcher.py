"""The test broker's own failure modes: each gives a typed error that says what is wrong."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from staticconsumer.testing import (
    BrokerSettings,
    BrokerStartError,
    EmbeddedKafka,
    JarResolutionError,
    JavaNotFoundError,
    MavenNotFoundError,
    PortInUseError,
)
from staticconsumer.testing._jars import broker_classpath
from staticconsumer.testing.broker import DEFAULT_VERSION, OLD_COORDINATOR_VERSION, find_java, resolve_version


def test_version_lines_map_to_pinned_releases(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STATICCONSUMER_KAFKA_VERSION", raising=False)
    assert resolve_version() == DEFAULT_VERSION
    assert resolve_version("4") == DEFAULT_VERSION
    assert resolve_version("3.9") == OLD_COORDINATOR_VERSION
    assert resolve_version("3.9.x") == OLD_COORDINATOR_VERSION
    monkeypatch.setenv("STATICCONSUMER_KAFKA_VERSION", "3.9")
    assert resolve_version() == OLD_COORDINATOR_VERSION
    with pytest.raises(ValueError, match="STATICCONSUMER_KAFKA_VERSION"):
        resolve_version("latest")


def _fake_java(tmp_path: Path, version_line: str) -> Path:
    home = tmp_path / "jdk"
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text(f"#!/bin/sh\necho '{version_line}' >&2\n")
    java.chmod(0o755)
    return home


def test_too_old_java_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(_fake_java(tmp_path, 'openjdk version "11.0.2" 2019-01-15')))
    with pytest.raises(JavaNotFoundError, match="needs Java 17"):
        find_java("4.3.1")
    assert find_java("3.9.2").endswith("bin/java")  # 3.9 runs on Java 11


def test_missing_java_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(JavaNotFoundError, match="no 'java' found"):
        find_java("4.3.1")


def test_missing_maven_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STATICCONSUMER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(MavenNotFoundError, match="Maven"):
        broker_classpath("4.3.1")


def test_unpublished_version_fails_resolution_with_mavens_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STATICCONSUMER_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(JarResolutionError, match=r"kafka_2\.13:0\.0\.1"):
        broker_classpath("0.0.1")
    assert not (tmp_path / "cache" / "kafka" / "0.0.1" / ".complete").exists()


def test_taken_port_is_refused_before_launch() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(PortInUseError, match=str(port)):
            EmbeddedKafka(port=port).start()


def test_broker_dying_during_start_shows_its_log() -> None:
    broker = EmbeddedKafka(settings=BrokerSettings(heap="1k"))
    with pytest.raises(BrokerStartError, match="died during start") as caught:
        broker.start()
    assert "heap" in str(caught.value).lower(), "the JVM's own complaint is in the message"
    assert broker.workdir is None, "temporary directory left behind"
    assert not broker.running, "JVM left behind"


def _spawn_broker_holder(tmp_path: Path) -> tuple[subprocess.Popen[str], int, Path]:
    script = tmp_path / "hold.py"
    script.write_text(
        textwrap.dedent("""
        import time
        from staticconsumer.testing import EmbeddedKafka
        kafka = EmbeddedKafka().start()
        print(kafka.process.pid, kafka.workdir, flush=True)
        time.sleep(600)
    """)
    )
    holder = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None
    pid_text, workdir = holder.stdout.readline().split()
    return holder, int(pid_text), Path(workdir)


def _gone(pid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    return False


@pytest.mark.kafka
def test_interrupted_holder_stops_broker_and_removes_its_directory(tmp_path: Path) -> None:
    holder, jvm_pid, workdir = _spawn_broker_holder(tmp_path)
    assert workdir.exists()
    holder.send_signal(signal.SIGINT)
    holder.wait(timeout=40)
    assert _gone(jvm_pid, 10), "JVM still running after its owner was interrupted"
    assert not workdir.exists(), "temporary directory left behind"


@pytest.mark.kafka
def test_killed_holder_takes_the_jvm_with_it(tmp_path: Path) -> None:
    holder, jvm_pid, workdir = _spawn_broker_holder(tmp_path)
    holder.kill()
    holder.wait(timeout=10)
    assert _gone(jvm_pid, 10), "orphan JVM after its owner was SIGKILLed"
    import shutil

    shutil.rmtree(workdir, ignore_errors=True)  # a SIGKILLed owner cannot clean up; the JVM is what matters


def test_group_to_offsets_partition_matches_kafka() -> None:
    from staticconsumer.testing.broker import java_string_hash, offsets_partition_for, probe_groups

    # Values of "...".hashCode() printed by Java 17's jshell.
    assert java_string_hash("") == 0
    assert java_string_hash("abc") == 96354
    assert java_string_hash("my-consumer-group") == 1513705513
    assert java_string_hash("\U0001f600x") == 54959989  # a surrogate pair counts as two code units
    assert offsets_partition_for("my-consumer-group", 50) == 1513705513 % 50
    groups = probe_groups(3)
    assert sorted(offsets_partition_for(g, 3) for g in groups) == [0, 1, 2]


def test_negative_hash_codes_map_through_kafkas_utils_abs() -> None:
    from staticconsumer.testing.probe import java_string_hash, kafka_abs, offsets_partition_for

    # hashCode() and Utils.abs(hashCode()) % n printed by Java 17 for these names.
    assert java_string_hash("orders-11") == -390715896
    assert offsets_partition_for("orders-11", 50) == 46
    assert offsets_partition_for("orders-11", 3) == 0
    assert offsets_partition_for("orders-12", 3) == 2
    # Masking the sign bit (what this function did before) lands elsewhere for negative hashes.
    assert (java_string_hash("orders-11") & 0x7FFFFFFF) % 50 == 2
    # Integer.MIN_VALUE has no positive twin: Utils.abs maps it to 0.
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert kafka_abs(-(2**31)) == 0
    assert offsets_partition_for("polygenelubricants", 50) == 0


def test_cluster_ids_never_start_with_a_dash() -> None:
    from staticconsumer.testing.broker import new_cluster_id

    ids = [new_cluster_id() for _ in range(5000)]  # ~78 would start with "-" if it were not excluded
    assert not [i for i in ids if i.startswith("-")]
    assert all(len(i) == 22 for i in ids)
    assert len(set(ids)) == len(ids)

"""One clear line and a non-zero exit for a missing path, an empty input and a wrong master; --conf and
--packages reach Spark; optional schema fields (KIP-848) absent or present change nothing."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from staticconsumer import cli
from staticconsumer.analytics import cli as analytics_cli
from staticconsumer.analytics.run import analyze
from staticconsumer.analytics.session import check_master, shuffle_partitions
from staticconsumer.analytics.synthetic import SyntheticSession, write_lines
from staticconsumer.errors import SparkMasterError

T = "orders"


def _one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("staticconsumer analyze:")]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def test_missing_path_is_one_line_naming_it(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope"
    assert cli.main(["analyze", str(missing), "--out", str(tmp_path / "out"), "--quiet"]) == 1
    assert _one_line_error(capsys) == f"staticconsumer analyze: {missing}: no such file or directory"


def test_empty_input_is_one_line(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.jsonl").write_bytes(b"")
    assert cli.main(["analyze", str(tmp_path / "logs"), "--quiet"]) == 1
    assert _one_line_error(capsys).endswith(
        "empty input: 1 files under " + str(tmp_path / "logs") + ", all empty"
    )
    (tmp_path / "logs" / "a.jsonl").write_bytes(b"not json\n\n")
    assert cli.main(["analyze", str(tmp_path / "logs"), "--quiet"]) == 1
    line = _one_line_error(capsys)
    assert "empty input: no event log record in 1 files" in line
    assert "(1 malformed lines; e.g. " in line


def test_wrong_master_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert cli.main(["analyze", str(tmp_path), "--master", f"spark://127.0.0.1:{port}"]) == 1
    line = _one_line_error(capsys)
    assert f"nothing answers at 127.0.0.1:{port}" in line
    assert cli.main(["analyze", str(tmp_path), "--master", "sparkk://x:1"]) == 1
    assert "is not a Spark master URL" in _one_line_error(capsys)
    for good in ("local", "local[2]", "local[*]", "yarn", "k8s://https://10.0.0.1:6443"):
        check_master(good)
    with pytest.raises(SparkMasterError):
        check_master("local[0]")


def test_conf_and_packages_reach_the_session(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, object] = {}

    def fake_batch(args: object) -> int:
        seen["conf"] = dict(args.conf)  # type: ignore[attr-defined]
        seen["packages"] = args.packages  # type: ignore[attr-defined]
        return 0

    monkeypatch.setattr(analytics_cli, "_batch", fake_batch)
    argv = [
        "analyze", "s3a://bucket/logs/", "--conf", "spark.hadoop.fs.s3a.endpoint=http://127.0.0.1:9000",
        "--conf", "spark.sql.shuffle.partitions=7", "--packages", "org.apache.hadoop:hadoop-aws:3.4.1,a:b:1",
        "--packages", "c:d:2",
    ]  # fmt: skip
    assert cli.main(argv) == 0
    assert seen["conf"] == {
        "spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:9000",
        "spark.sql.shuffle.partitions": "7",
    }
    assert seen["packages"] == ["org.apache.hadoop:hadoop-aws:3.4.1", "a:b:1", "c:d:2"]
    with pytest.raises(SystemExit):
        cli.main(["analyze", "x", "--conf", "no-equals-sign"])


def test_shuffle_partitions_follow_the_input_size() -> None:
    assert shuffle_partitions(0, 2) == 2
    assert shuffle_partitions(50_000_000, 2) == 2
    assert shuffle_partitions(726_000_000, 2) == 22
    assert shuffle_partitions(726_000_000, 64) == 64
    assert shuffle_partitions(10**15, 8) == 4000


def test_optional_protocol_fields_absent_or_present_give_the_same_answers(
    spark: SparkSession, tmp_path: Path
) -> None:
    a = SyntheticSession("g", "pod-a", "a1").joining(0).synced(1, 1, "m-a", "m-a", [(T, 0), (T, 1)])
    b = SyntheticSession("g", "pod-b", "b1").joining(0).synced(1, 1, "m-b", "m-a", [(T, 2)])
    a.revoked(100, [(T, 0), (T, 1)], reason="stop").stopped(100.1)
    a2 = SyntheticSession("g", "pod-a", "a2").joining(101).synced(102, 1, "m-a2", "m-a2", [(T, 0), (T, 1)])
    plain = write_lines(tmp_path / "plain" / "log.jsonl", [a, b, a2])
    extended = tmp_path / "extended" / "log.jsonl"
    extended.parent.mkdir()
    with extended.open("w") as out:
        for line in plain.read_text().splitlines():
            record = json.loads(line)
            record.update(group_protocol="consumer", rebalance_protocol="cooperative", member_epoch=7)
            record["a_field_from_the_future"] = {"nested": [1, 2]}
            out.write(json.dumps(record) + "\n")
    first = analyze([plain.parent], spark=spark, report=False)
    second = analyze([extended.parent], spark=spark, report=False)
    assert second.malformed_lines == first.malformed_lines == 0
    assert second.windows == first.windows
    assert first.totals("g")["restarts_absorbed"] == 1
    protocols = {r["group_protocol"] for r in second.tables.generations.collect()}
    assert protocols == {"consumer"}


def test_s3a_without_its_package_names_the_package_to_add(
    spark: SparkSession, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["analyze", "s3a://logs/membership/", "--quiet"]) == 1
    line = _one_line_error(capsys)
    hadoop = spark.sparkContext._jvm.org.apache.hadoop.util.VersionInfo.getVersion()  # type: ignore[union-attr]
    assert line == (
        "staticconsumer analyze: s3a://logs/membership/: Spark has no filesystem for s3a://: "
        f"add --packages org.apache.hadoop:hadoop-aws:{hadoop} (see docs/analytics.md)"
    )

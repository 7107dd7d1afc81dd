"""The admin commands' output and exit codes without a broker: rendering, settings errors, no cluster,
and the background broker's state file (status of a stale or missing broker)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from staticconsumer import cli
from staticconsumer.admin import GroupDescription, MemberDescription, MemberRemoval, RemoveMembersResult
from staticconsumer.errors import FencedInstanceIdError, UnknownMemberIdError
from staticconsumer.protocol import TopicPartitions

RESULT = RemoveMembersResult(
    "orders",
    (
        MemberRemoval("pod-1", "pod-1-abc"),
        MemberRemoval("ghost", "", UnknownMemberIdError("instance id 'ghost'")),
        MemberRemoval("pod-2", "pod-2-x", FencedInstanceIdError("instance id 'pod-2'")),
    ),
)


def test_removal_json_gives_each_members_own_outcome() -> None:
    out = cli._removal_json(RESULT)
    assert out["all_removed"] is False
    assert [(m["group_instance_id"], m["removed"], m["error"], m["error_code"]) for m in out["members"]] == [
        ("pod-1", True, None, 0),
        ("ghost", False, "UNKNOWN_MEMBER_ID", 25),
        ("pod-2", False, "FENCED_INSTANCE_ID", 82),
    ]
    json.dumps(out)  # serialisable as printed


def test_removal_table_explains_each_error() -> None:
    text = cli._removal_text(RESULT)
    lines = text.splitlines()
    assert lines[0].split() == ["INSTANCE", "ID", "RESULT", "DETAIL"]
    assert lines[1].split()[:2] == ["pod-1", "removed"]
    assert "UNKNOWN_MEMBER_ID" in lines[2]
    assert "no member with this instance id" in lines[2]
    assert "FENCED_INSTANCE_ID" in lines[3]
    assert "different member id" in lines[3]
    assert lines[-1] == "1 of 3 member(s) removed from group orders"


def test_describe_renders_instance_ids_and_assignments() -> None:
    group = GroupDescription(
        "orders",
        "Stable",
        "consumer",
        "range",
        (
            MemberDescription("dyn-1", None, "c-2", "/10.0.0.2", (), ("orders",)),
            MemberDescription(
                "pod-0-x", "pod-0", "c-0", "/10.0.0.1", (TopicPartitions("orders", [2, 0]),), ("orders",)
            ),
        ),
        coordinator=3,
    )
    text = cli._describe_text(group).splitlines()
    assert text[0] == "group orders: Stable, protocol consumer/range, coordinator 3, 2 member(s)"
    assert text[2].split() == ["pod-0", "pod-0-x", "c-0", "/10.0.0.1", "orders:0,2", "orders"]
    assert text[3].split() == ["(dynamic)", "dyn-1", "c-2", "/10.0.0.2", "-", "orders"]
    as_json = cli._describe_json(group)
    assert as_json["members"][1]["assignment"] == {"orders": [0, 2]}
    assert as_json["members"][0]["group_instance_id"] is None
    dead = GroupDescription("gone", "Dead", "", "", (), coordinator=1)
    assert "does not exist" in cli._describe_text(dead)


def test_describe_renders_a_consumer_protocol_group_with_epochs_and_targets() -> None:
    orders = TopicPartitions("orders", [0, 1])
    group = GroupDescription(
        "orders",
        "Reconciling",
        "consumer",
        "uniform",
        (
            MemberDescription(
                "m-1",
                "pod-1",
                "c-1",
                "/10.0.0.2",
                (orders,),
                ("orders",),
                member_epoch=-2,
                target_assignment=(orders,),
                member_protocol="consumer",
            ),
            MemberDescription(
                "m-0",
                "pod-0",
                "c-0",
                "/10.0.0.1",
                (orders,),
                (),
                member_epoch=7,
                target_assignment=(TopicPartitions("orders", [0]),),
                subscribed_pattern="ord.*",
                member_protocol="classic",
            ),
        ),
        coordinator=1,
        group_type="consumer",
        group_epoch=8,
        assignment_epoch=8,
    )
    text = cli._describe_text(group).splitlines()
    assert text[0] == (
        "group orders: Reconciling, consumer protocol (KIP-848), assignor uniform, group epoch 8, "
        "assignment epoch 8, coordinator 1, 2 member(s)"
    )
    assert text[1].split()[:3] == ["INSTANCE", "ID", "MEMBER"]
    assert text[2].split() == [
        "pod-0",
        "m-0",
        "7",
        "(classic",
        "member)",
        "c-0",
        "/10.0.0.1",
        "orders:0,1",
        "orders:0",
        "/ord.*/",
    ]
    assert text[3].split() == ["pod-1", "m-1", "-2", "c-1", "/10.0.0.2", "orders:0,1", "=", "orders"]
    assert "EPOCH -2: a static member that left for a restart" in text[4]
    as_json = cli._describe_json(group)
    assert (as_json["group_type"], as_json["group_epoch"], as_json["assignment_epoch"]) == ("consumer", 8, 8)
    returning = as_json["members"][0]
    assert (returning["member_epoch"], returning["target_assignment"]) == (-2, {"orders": [0, 1]})
    assert as_json["members"][1]["subscribed_pattern"] == "ord.*"
    json.dumps(as_json)
    classic = cli._describe_json(GroupDescription("g", "Empty", "consumer", "", (), coordinator=1))
    assert classic["group_type"] == "classic"
    assert "group_epoch" not in classic


def test_missing_bootstrap_servers_is_a_settings_error_with_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS", raising=False)
    assert cli.main(["list-groups"]) == 2
    err = capsys.readouterr().err
    assert "SettingsError" in err
    assert "KAFKA_BOOTSTRAP_SERVERS" in err


def test_secrets_in_a_bad_configuration_are_masked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KAFKA_SECURITY_PROTOCOL", "PLAINTEXT")
    monkeypatch.setenv("KAFKA_SASL_PASSWORD", "s3cret-value")
    assert cli.main(["describe", "g", "--bootstrap-server", "127.0.0.1:9"]) == 2
    captured = capsys.readouterr()
    assert "s3cret-value" not in captured.out + captured.err
    assert "***" in captured.err


def test_unreachable_cluster_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["remove-members", "g", "--instance-id", "a", "--bootstrap-server", "127.0.0.1:9"])
    assert code == 2
    assert "cannot reach Kafka" in capsys.readouterr().err


def test_remove_members_needs_an_instance_id() -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["remove-members", "g"])
    assert exited.value.code == 2


def test_broker_status_without_a_broker(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state = tmp_path / "dev-broker.json"
    assert cli.main(["broker", "status", "--state-file", str(state)]) == 1
    assert capsys.readouterr().out.strip() == "not running"
    assert cli.main(["broker", "stop", "--state-file", str(state)]) == 0


def test_a_stale_state_file_is_cleared(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    state = tmp_path / "dev-broker.json"
    state.write_text(json.dumps({"pid": dead.pid, "bootstrap_servers": "127.0.0.1:9", "version": "4.3.1"}))
    assert cli.main(["broker", "status", "--state-file", str(state), "--json"]) == 1
    assert json.loads(capsys.readouterr().out) == {"running": False, "reachable": False}
    assert not state.exists()

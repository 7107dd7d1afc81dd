"""The ``staticconsumer`` admin commands against the real broker: --json output, tables and exit codes,
and the background dev broker's start / status / stop."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from staticconsumer import cli
from staticconsumer.consumer import StaticConsumer
from staticconsumer.testing import EmbeddedKafka

from .support import FAST, until_assigned

pytestmark = pytest.mark.kafka


async def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run ``main`` off the event loop (it runs its own) and return exit code, stdout, stderr."""
    code = await asyncio.to_thread(cli.main, list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.both_versions
async def test_describe_list_and_remove_through_the_command(
    kafka_broker: EmbeddedKafka,
    create_topic: Callable[..., str],
    unique_group: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    topic = create_topic(partitions=2)
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", kafka_broker.bootstrap_servers)  # as a pod would have it
    monkeypatch.setenv("KAFKA_GROUP_INSTANCE_ID", "the-admin-ignores-this")
    consumers = [
        StaticConsumer(
            topic,
            bootstrap_servers=kafka_broker.bootstrap_servers,
            group_id=unique_group,
            group_instance_id=f"pod-{i}",
            **FAST,
        )
        for i in range(2)
    ]
    for consumer in consumers:
        await consumer.start()
    try:
        for consumer in consumers:
            await until_assigned(consumer)
        await asyncio.gather(*(c.getmany(timeout_ms=500) for c in consumers))

        code, out, _ = await _cli(capsys, "describe", unique_group, "--json")
        assert code == 0
        described = json.loads(out)
        assert described["state"] == "Stable"
        members = {m["group_instance_id"]: m for m in described["members"]}
        assert set(members) == {"pod-0", "pod-1"}
        owned = sorted(p for m in members.values() for p in m["assignment"].get(topic, []))
        assert owned == [0, 1]
        assert all(m["subscription"] == [topic] for m in members.values())

        code, out, _ = await _cli(capsys, "describe", unique_group)
        assert code == 0
        assert out.splitlines()[0].startswith(f"group {unique_group}: Stable, protocol consumer/range")

        code, out, _ = await _cli(capsys, "list-groups", "--json")
        assert code == 0
        listed = {g["group_id"]: g for g in json.loads(out)}
        assert (listed[unique_group]["protocol_type"], listed[unique_group]["state"]) == (
            "consumer",
            "Stable",
        )
        assert listed[unique_group]["group_type"] == "classic"

        await consumers[1].stop()
        code, out, _ = await _cli(
            capsys,
            "remove-members",
            unique_group,
            "--instance-id",
            "pod-1",
            "--instance-id",
            "ghost",
            "--json",
        )
        assert code == 1, "ghost was not a member"
        outcome = {m["group_instance_id"]: m for m in json.loads(out)["members"]}
        assert (outcome["pod-1"]["removed"], outcome["pod-1"]["error"]) == (True, None)
        assert (outcome["ghost"]["error"], outcome["ghost"]["error_code"]) == ("UNKNOWN_MEMBER_ID", 25)

        await consumers[0].getmany(timeout_ms=500)
        code, out, _ = await _cli(
            capsys,
            "remove-members",
            unique_group,
            "--instance-id",
            "pod-0",
            "--reason",
            "decommissioned",
            "--bootstrap-server",
            kafka_broker.bootstrap_servers,
        )
        assert code == 0
        assert out.splitlines()[-1] == f"1 of 1 member(s) removed from group {unique_group}"

        code, _, err = await _cli(capsys, "describe", f"{unique_group}-nope")
        assert code == 1
        assert err == ""
    finally:
        for consumer in consumers:
            await consumer.stop()


def test_background_dev_broker_start_status_stop(tmp_path: Path) -> None:
    state = tmp_path / "dev-broker.json"

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "staticconsumer.cli", "broker", *argv, "--state-file", str(state)],
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
            env={k: v for k, v in os.environ.items() if k != "STATICCONSUMER_KEEP_BROKER_DIR"},
        )

    started = run("start")
    assert started.returncode == 0, started.stderr
    bootstrap = started.stdout.strip()
    assert bootstrap.startswith("127.0.0.1:")
    recorded = json.loads(state.read_text())
    assert recorded["bootstrap_servers"] == bootstrap
    workdir = Path(recorded["log"]).parent
    assert workdir.exists()
    try:
        again = run("start", "--json")
        assert again.returncode == 0
        assert json.loads(again.stdout)["started"] is False, "a second start reuses the running broker"
        assert json.loads(again.stdout)["bootstrap_servers"] == bootstrap

        status = run("status", "--json")
        assert status.returncode == 0
        assert json.loads(status.stdout)["reachable"] is True
        assert cli.main(["list-groups", "--bootstrap-server", bootstrap]) == 0
    finally:
        stopped = run("stop")
    assert stopped.returncode == 0, stopped.stderr
    assert not state.exists()
    assert not workdir.exists(), "stop removes the broker's data"
    assert run("status").returncode == 1

"""The ``staticconsumer`` command."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

# The testing kit (embedded broker, jars) loads only in the subcommands that run it: describe,
# list-groups and remove-members never pay for it.
if TYPE_CHECKING:
    from staticconsumer.testing import EmbeddedKafka


def _prefetch(versions: Sequence[str]) -> int:
    """Resolve the broker jars for each version (once; later runs find them cached)."""
    from staticconsumer.testing._jars import broker_classpath

    for version in versions:
        started = time.monotonic()
        jars, resolve_seconds = broker_classpath(version)
        state = f"resolved in {resolve_seconds:.1f}s" if resolve_seconds else "cached"
        print(f"Kafka {version}: {len(jars)} jars {state} ({time.monotonic() - started:.1f}s)")
    return 0


def _run_broker(version: str | None, state_file: Path | None = None) -> int:
    """Run in the foreground; with ``state_file`` (``broker start``) record pid and address while ready."""
    from staticconsumer.testing import EmbeddedKafka

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with EmbeddedKafka(version) as kafka:
        if state_file is not None:
            _write_state(state_file, kafka)
        print(f"Kafka {kafka.version} ready: bootstrap servers {kafka.bootstrap_servers}", flush=True)
        print("Ctrl-C stops it and removes its data.", flush=True)
        try:
            while kafka.running:
                time.sleep(0.5)
        except KeyboardInterrupt:
            pass
        finally:
            if state_file is not None:
                _remove_state(state_file)
        if not kafka.running:
            print(f"The broker exited on its own; log tail:\n{kafka.log_tail()}", file=sys.stderr)
            return 1
    return 0


# -- background dev broker (broker start / stop / status) -----------------------------------------------


def _default_state_file() -> Path:
    from staticconsumer._maven import cache_root

    return cache_root() / "dev-broker.json"


def _write_state(path: Path, kafka: EmbeddedKafka) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {
        "pid": os.getpid(),
        "bootstrap_servers": kafka.bootstrap_servers,
        "version": kafka.version,
        "log": str(kafka.log_path),
    }
    partial = path.with_name(path.name + ".tmp")
    partial.write_text(json.dumps(state) + "\n")
    partial.replace(path)


def _read_state(path: Path) -> dict[str, Any] | None:
    try:
        state: dict[str, Any] = json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return state


def _remove_state(path: Path) -> None:
    """Remove the state file only if it is still ours (a newer broker may have replaced it)."""
    state = _read_state(path)
    if state is not None and state.get("pid") == os.getpid():
        path.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _live_state(path: Path) -> dict[str, Any] | None:
    """The recorded broker if its process still runs; a stale file (crash, reboot) is removed."""
    state = _read_state(path)
    if state is None:
        return None
    if not _alive(int(state["pid"])):
        path.unlink(missing_ok=True)
        return None
    return state


def _broker_start(version: str | None, state_file: Path, timeout: float, as_json: bool) -> int:
    """Launch ``broker run`` detached, wait for its state file, print the address, and return."""
    state = _live_state(state_file)
    if state is None:
        state_file.parent.mkdir(parents=True, exist_ok=True)
        log_path = state_file.with_suffix(".log")
        command = [
            sys.executable,
            "-m",
            "staticconsumer.cli",
            "broker",
            "run",
            "--state-file",
            str(state_file),
        ]
        if version:
            command += ["--kafka-version", version]
        with log_path.open("ab") as log:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while (state := _live_state(state_file)) is None or state["pid"] != process.pid:
            if process.poll() is not None or time.monotonic() > deadline:
                if process.poll() is None:
                    process.terminate()
                tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-20:])
                print(f"error: the broker did not start; {log_path}:\n{tail}", file=sys.stderr)
                return 2
            time.sleep(0.2)
        started = True
    else:
        started = False
    if as_json:
        print(json.dumps({**state, "started": started}))
    else:
        if not started:
            print(f"already running (pid {state['pid']}, Kafka {state['version']})", file=sys.stderr)
        print(state["bootstrap_servers"])
    return 0


def _broker_stop(state_file: Path, timeout: float) -> int:
    state = _live_state(state_file)
    if state is None:
        print("no dev broker is running", file=sys.stderr)
        return 0
    pid = int(state["pid"])
    os.kill(pid, signal.SIGTERM)  # ``broker run`` stops the JVM and removes the data directory
    deadline = time.monotonic() + timeout
    while _alive(pid):
        if time.monotonic() > deadline:
            print(f"error: pid {pid} still runs after {timeout:.0f}s", file=sys.stderr)
            return 2
        time.sleep(0.2)
    state_file.unlink(missing_ok=True)
    print(f"stopped the dev broker at {state['bootstrap_servers']} (pid {pid}); its data is removed")
    return 0


def _broker_status(state_file: Path, as_json: bool) -> int:
    """Exit 0 when the recorded broker runs and accepts connections, else 1."""
    state = _live_state(state_file)
    reachable = False
    if state is not None:
        host, _, port = str(state["bootstrap_servers"]).rpartition(":")
        try:
            with socket.create_connection((host, int(port)), timeout=2):
                reachable = True
        except OSError:
            reachable = False
    if as_json:
        print(json.dumps({"running": state is not None, "reachable": reachable, **(state or {})}))
    elif state is None:
        print("not running")
    else:
        health = "accepting connections" if reachable else "NOT accepting connections"
        print(
            f"running: Kafka {state['version']} at {state['bootstrap_servers']} "
            f"(pid {state['pid']}), {health}"
        )
    return 0 if reachable else 1


# -- group administration (describe / list-groups / remove-members) -------------------------------------


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=False)]
    lines = [
        "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [headers, *rows]
    ]
    return "\n".join(lines)


def _partitions_text(assignment: Sequence[Any]) -> str:
    return (
        " ".join(f"{tp.topic}:{','.join(str(p) for p in sorted(tp.partitions))}" for tp in assignment) or "-"
    )


def _describe_json(group: Any) -> dict[str, Any]:
    described = {
        "group": group.group_id,
        "exists": group.exists,
        "group_type": group.group_type,
        "state": group.state,
        "protocol_type": group.protocol_type,
        "protocol": group.protocol,
        "coordinator": group.coordinator,
        "members": [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "client_id": m.client_id,
                "host": m.host,
                "assignment": {tp.topic: sorted(tp.partitions) for tp in m.assignment},
                "subscription": list(m.subscription),
            }
            for m in group.members
        ],
    }
    if group.group_type == "consumer":
        described["group_epoch"] = group.group_epoch
        described["assignment_epoch"] = group.assignment_epoch
        for entry, m in zip(described["members"], group.members, strict=True):
            entry["member_epoch"] = m.member_epoch
            entry["target_assignment"] = {tp.topic: sorted(tp.partitions) for tp in m.target_assignment}
            entry["subscribed_pattern"] = m.subscribed_pattern
            entry["rack"] = m.rack
            entry["member_protocol"] = m.member_protocol
    return described


def _subscription_text(member: Any) -> str:
    pattern = f"/{member.subscribed_pattern}/" if member.subscribed_pattern else ""
    return ",".join([*member.subscription, *([pattern] if pattern else [])]) or "-"


def _describe_text(group: Any) -> str:
    if not group.exists:
        return f"group {group.group_id!r} does not exist (coordinator {group.coordinator} reports state Dead)"
    members = sorted(
        group.members, key=lambda m: (m.group_instance_id is None, m.group_instance_id or m.member_id)
    )
    if group.group_type == "consumer":
        head = (
            f"group {group.group_id}: {group.state}, consumer protocol (KIP-848), "
            f"assignor {group.protocol or '-'}, group epoch {group.group_epoch}, "
            f"assignment epoch {group.assignment_epoch}, coordinator {group.coordinator}, "
            f"{len(group.members)} member(s)"
        )
        headers = [
            "INSTANCE ID",
            "MEMBER ID",
            "EPOCH",
            "CLIENT ID",
            "HOST",
            "ASSIGNMENT",
            "TARGET",
            "SUBSCRIPTION",
        ]
        rows = [
            [
                m.group_instance_id or "(dynamic)",
                m.member_id,
                _epoch_text(m),
                m.client_id,
                m.host,
                _partitions_text(m.assignment),
                "=" if m.target_assignment == m.assignment else _partitions_text(m.target_assignment),
                _subscription_text(m),
            ]
            for m in members
        ]
        note = (
            "\nEPOCH -2: a static member that left for a restart; it keeps its partitions until the "
            "session timeout. TARGET = : the member owns its target assignment."
            if rows
            else ""
        )
        return head + ("\n" + _table(headers, rows) if rows else "") + note
    head = (
        f"group {group.group_id}: {group.state}, "
        f"protocol {group.protocol_type or '-'}/{group.protocol or '-'}, "
        f"coordinator {group.coordinator}, {len(group.members)} member(s)"
    )
    rows = [
        [
            m.group_instance_id or "(dynamic)",
            m.member_id,
            m.client_id,
            m.host,
            _partitions_text(m.assignment),
            ",".join(m.subscription) or "-",
        ]
        for m in members
    ]
    headers = ["INSTANCE ID", "MEMBER ID", "CLIENT ID", "HOST", "ASSIGNMENT", "SUBSCRIPTION"]
    return head + ("\n" + _table(headers, rows) if rows else "")


def _epoch_text(member: Any) -> str:
    epoch = str(member.member_epoch)
    return epoch + " (classic member)" if member.member_protocol == "classic" else epoch


def _removal_json(result: Any) -> dict[str, Any]:
    return {
        "group": result.group_id,
        "all_removed": result.all_removed,
        "members": [
            {
                "group_instance_id": m.group_instance_id,
                "member_id": m.member_id,
                "removed": m.removed,
                "error": None if m.error is None else m.error.error_name,
                "error_code": 0 if m.error is None else m.error.code,
            }
            for m in result.members
        ],
    }


_REMOVAL_HINTS = {
    25: "no member with this instance id (already gone, never joined, or no such group)",
    82: "the instance id belongs to a different member id (fenced)",
}


def _removal_text(result: Any) -> str:
    rows = [
        [
            m.group_instance_id,
            "removed" if m.error is None else m.error.error_name,
            "" if m.error is None else _REMOVAL_HINTS.get(m.error.code, str(m.error)),
        ]
        for m in result.members
    ]
    summary = f"{len(result.removed)} of {len(result.members)} member(s) removed from group {result.group_id}"
    return _table(["INSTANCE ID", "RESULT", "DETAIL"], rows) + "\n" + summary


async def _admin_command(args: argparse.Namespace) -> int:
    from staticconsumer.admin import GroupAdmin, admin_settings

    overrides: dict[str, Any] = {}
    if args.bootstrap_server:
        overrides["bootstrap_servers"] = args.bootstrap_server
    settings = admin_settings(prefix=args.env_prefix, **overrides)
    async with GroupAdmin(settings, api_timeout_ms=args.timeout_ms) as admin:
        if args.command == "describe":
            group = await admin.describe_group(args.group)
            print(json.dumps(_describe_json(group), indent=2) if args.json else _describe_text(group))
            return 0 if group.exists else 1
        if args.command == "list-groups":
            groups = await admin.list_groups()
            if args.json:
                print(json.dumps([msgspec.to_builtins(g) for g in groups], indent=2))
            else:
                rows = [
                    [g.group_id, g.state or "-", g.protocol_type or "-", g.group_type or "-"] for g in groups
                ]
                print(_table(["GROUP", "STATE", "PROTOCOL TYPE", "TYPE"], rows) if rows else "no groups")
            return 0
        result = await admin.remove_members(args.group, args.instance_id, reason=args.reason)
        print(json.dumps(_removal_json(result), indent=2) if args.json else _removal_text(result))
        return 0 if result.all_removed else 1


def _run_admin(args: argparse.Namespace) -> int:
    """Exit codes: 0 done, 1 the answer is "no" (a member not removed, no such group), 2 could not ask."""
    from staticconsumer.errors import BrokerConnectionError, StaticConsumerError

    try:
        return asyncio.run(_admin_command(args))
    except BrokerConnectionError as error:  # says why, server by server
        print(f"error: cannot reach Kafka: {type(error).__name__}: {error}", file=sys.stderr)
    except StaticConsumerError as error:
        print(f"error: {type(error).__name__}: {error}", file=sys.stderr)
    except Exception as error:  # aiokafka's connection and authentication errors
        print(
            f"error: cannot reach Kafka (down, wrong address, or TLS/SASL refused; the log line above "
            f"says which): {type(error).__name__}: {error}",
            file=sys.stderr,
        )
    return 2


def _add_admin_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--bootstrap-server", default=None, help="host:port[,host:port]; overrides KAFKA_BOOTSTRAP_SERVERS"
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument(
        "--env-prefix", default="KAFKA_", help="prefix of the settings variables (default KAFKA_)"
    )
    parser.add_argument(
        "--timeout-ms", type=int, default=60_000, help="give up after this long, retries included (60000)"
    )


def version_text() -> str:
    """What ``--version`` prints: ours and the versions a bug report needs beside it."""
    import platform
    from importlib.metadata import version

    import staticconsumer

    return (
        f"staticconsumer {staticconsumer.__version__} "
        f"(aiokafka {version('aiokafka')}, Python {platform.python_version()})"
    )


DEFAULT_VERSION_HELP = "default: the pinned 4.x line"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="staticconsumer", description=__doc__)
    parser.add_argument("--version", action="version", version=version_text())
    commands = parser.add_subparsers(dest="command", required=True)

    demo = commands.add_parser("demo", help="rolling-bounce demo on an embedded broker: static vs dynamic")
    demo.add_argument("--kafka-version", default=None, help=DEFAULT_VERSION_HELP)

    from staticconsumer.analytics.cli import add_arguments as add_analyze_arguments

    add_analyze_arguments(
        commands.add_parser("analyze", help="fleet rebalance analytics over membership event logs (Spark)")
    )

    broker = commands.add_parser("broker", help="the embedded development broker")
    broker_commands = broker.add_subparsers(dest="broker_command", required=True)
    run = broker_commands.add_parser("run", help="run a broker in the foreground until Ctrl-C")
    run.add_argument("--kafka-version", default=None, help=f"{DEFAULT_VERSION_HELP}; '3.9' for 3.9.x")
    run.add_argument("--state-file", type=Path, default=None, help=argparse.SUPPRESS)
    prefetch = broker_commands.add_parser("prefetch", help="resolve the broker jars into the cache")
    prefetch.add_argument(
        "--kafka-version",
        action="append",
        default=None,
        help="repeatable; default both pinned lines (4.x and 3.9.x)",
    )
    background = {
        "start": "start a dev broker in the background and print its bootstrap servers",
        "stop": "stop the background dev broker and remove its data",
        "status": "is the background dev broker running? (exit 0 if it accepts connections)",
    }
    for name, text in background.items():
        sub = broker_commands.add_parser(name, help=text)
        sub.add_argument("--state-file", type=Path, default=None, help="default <cache dir>/dev-broker.json")
        if name == "start":
            sub.add_argument("--kafka-version", default=None, help=f"{DEFAULT_VERSION_HELP}; '3.9' for 3.9.x")
        if name != "status":
            sub.add_argument("--timeout", type=float, default=120.0, help="seconds to wait (default 120)")
        if name != "stop":
            sub.add_argument("--json", action="store_true", help="machine-readable output")

    describe = commands.add_parser(
        "describe", help="a group's state and members with instance ids and assignments (either protocol)"
    )
    describe.add_argument("group")
    _add_admin_options(describe)
    list_groups = commands.add_parser("list-groups", help="every group of the cluster")
    _add_admin_options(list_groups)
    remove = commands.add_parser(
        "remove-members",
        help="remove static members by instance id now (one LeaveGroup); exit 1 if any fails",
    )
    remove.add_argument("group")
    remove.add_argument(
        "--instance-id",
        action="append",
        required=True,
        metavar="ID",
        help="repeatable: each member to remove",
    )
    remove.add_argument("--reason", metavar="TEXT", help="shown in the broker's log (Kafka 3.2+)")
    _add_admin_options(remove)
    return parser


def _broker_command(args: argparse.Namespace) -> int:
    if args.broker_command == "run":
        return _run_broker(args.kafka_version, args.state_file)
    if args.broker_command == "prefetch":
        from staticconsumer.testing import DEFAULT_VERSION, OLD_COORDINATOR_VERSION

        return _prefetch(args.kafka_version or [DEFAULT_VERSION, OLD_COORDINATOR_VERSION])
    state_file = args.state_file or _default_state_file()
    if args.broker_command == "start":
        return _broker_start(args.kafka_version, state_file, args.timeout, args.json)
    if args.broker_command == "stop":
        return _broker_stop(state_file, args.timeout)
    if args.broker_command == "status":
        return _broker_status(state_file, args.json)
    raise AssertionError(f"unhandled broker command {args.broker_command}")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "demo":
        from staticconsumer.demo import run_demo

        return run_demo(args.kafka_version)
    if args.command == "analyze":
        from staticconsumer.analytics.cli import run as run_analyze

        return run_analyze(args)
    if args.command == "broker":
        from staticconsumer.testing.errors import TestInfrastructureError

        try:
            return _broker_command(args)
        except TestInfrastructureError as error:  # no Java, no Maven, jars not resolvable: one line
            print(f"staticconsumer broker {args.broker_command}: {error}", file=sys.stderr)
            return 2
    if args.command in ("describe", "list-groups", "remove-members"):
        return _run_admin(args)
    raise AssertionError(f"unhandled command {args}")


if __name__ == "__main__":
    sys.exit(main())

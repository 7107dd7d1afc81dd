"""The ``staticconsumer`` command."""

from __future__ import annotations

import argparse
import signal
import sys
import time
from collections.abc import Sequence

from staticconsumer.testing import DEFAULT_VERSION, OLD_COORDINATOR_VERSION, EmbeddedKafka
from staticconsumer.testing._jars import broker_classpath


def _prefetch(versions: Sequence[str]) -> int:
    """Resolve the broker jars for each version (once; later runs find them cached)."""
    for version in versions:
        started = time.monotonic()
        jars, resolve_seconds = broker_classpath(version)
        state = f"resolved in {resolve_seconds:.1f}s" if resolve_seconds else "cached"
        print(f"Kafka {version}: {len(jars)} jars {state} ({time.monotonic() - started:.1f}s)")
    return 0


def _run_broker(version: str | None) -> int:
    with EmbeddedKafka(version) as kafka:
        print(f"Kafka {kafka.version} ready: bootstrap servers {kafka.bootstrap_servers}", flush=True)
        print("Ctrl-C stops it and removes its data.", flush=True)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        try:
            while kafka.running:
                time.sleep(0.5)
        except KeyboardInterrupt:
            pass
        if not kafka.running:
            print(f"The broker exited on its own; log tail:\n{kafka.log_tail()}", file=sys.stderr)
            return 1
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="staticconsumer", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    demo = commands.add_parser("demo", help="rolling-bounce demo on an embedded broker: static vs dynamic")
    demo.add_argument("--kafka-version", default=None, help=f"default {DEFAULT_VERSION}")

    broker = commands.add_parser("broker", help="the embedded development broker")
    broker_commands = broker.add_subparsers(dest="broker_command", required=True)
    run = broker_commands.add_parser("run", help="run a broker in the foreground until Ctrl-C")
    run.add_argument("--kafka-version", default=None, help=f"default {DEFAULT_VERSION}; '3.9' for 3.9.x")
    prefetch = broker_commands.add_parser("prefetch", help="resolve the broker jars into the cache")
    prefetch.add_argument(
        "--kafka-version",
        action="append",
        default=None,
        help=f"repeatable; default both pinned lines ({DEFAULT_VERSION}, {OLD_COORDINATOR_VERSION})",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "demo":
        from staticconsumer.demo import run_demo

        return run_demo(args.kafka_version)
    if args.command == "broker" and args.broker_command == "run":
        return _run_broker(args.kafka_version)
    if args.command == "broker" and args.broker_command == "prefetch":
        return _prefetch(args.kafka_version or [DEFAULT_VERSION, OLD_COORDINATOR_VERSION])
    raise AssertionError(f"unhandled command {args}")


if __name__ == "__main__":
    sys.exit(main())

"""One static group member in its own process, synchronous: our sync StaticConsumer or kafka-python 3.0's
KafkaConsumer (``--client``). Reports JSON lines on stdout; on Ctrl-C or SIGTERM during ``poll()`` it
reports the threads still alive after the consumer closed, and exits 0.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from typing import Any

_SAYING = threading.Lock()


def say(event: str, **fields: Any) -> None:
    line = json.dumps({"event": event, "t": time.time(), **fields}) + "\n"
    with _SAYING:
        sys.stdout.write(line)
        sys.stdout.flush()


class Listener:
    """kafka-python's listener shape: plain methods."""

    def on_partitions_assigned(self, assigned: Any) -> None:
        say("assigned", partitions=sorted([tp.topic, tp.partition] for tp in assigned))

    def on_partitions_revoked(self, revoked: Any) -> None:
        say("revoked", partitions=len(revoked))


def ours(args: argparse.Namespace) -> Any:
    from staticconsumer.sync import StaticConsumer

    def on_request(api: str, version: int, message: object) -> None:
        if api in ("LeaveGroupRequest", "JoinGroupRequest", "SyncGroupRequest"):
            say("sent", api=api)

    consumer = StaticConsumer(
        args.topic,
        listener=Listener(),
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        group_instance_id=args.instance,
        session_timeout_ms=args.session_ms,
        heartbeat_interval_ms=args.session_ms // 4,
        auto_offset_reset="earliest",
        enable_auto_commit=False,  # committed once reported: an interrupted poll's records are read again
        request_hook=on_request,
    )
    say("started", member_id=consumer.member_id, generation=consumer.generation)
    return consumer


def kafka_python(args: argparse.Namespace) -> Any:
    from kafka import ConsumerRebalanceListener, KafkaConsumer

    class KafkaPythonListener(Listener, ConsumerRebalanceListener):
        """kafka-python insists on its base class; ours takes it too (see test_sync_consumer)."""

    consumer = KafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        group_instance_id=args.instance,
        session_timeout_ms=args.session_ms,
        heartbeat_interval_ms=args.session_ms // 4,
        auto_offset_reset="earliest",
        enable_auto_commit=False,  # committed once reported: an interrupted poll's records are read again
    )
    consumer.subscribe([args.topic], listener=KafkaPythonListener())
    say("started")
    return consumer


def main(args: argparse.Namespace) -> int:
    consumer = ours(args) if args.client == "ours" else kafka_python(args)
    try:
        while True:
            batch = consumer.poll(timeout_ms=args.poll_ms)
            count = sum(len(rows) for rows in batch.values())
            if count:
                values = [r.value.decode() for rows in batch.values() for r in rows]
                say("records", count=count, values=values)
                consumer.commit()
            if args.client == "ours":
                say("polled", member_id=consumer.member_id, generation=consumer.generation)
    except KeyboardInterrupt:
        outcome = "interrupted"
    except SystemExit:
        outcome = "terminated"
    if args.client != "ours":
        consumer.close()
    # Ours closed itself when the signal reached poll(); the portal's and membership threads are gone.
    say(outcome, threads=sorted(t.name for t in threading.enumerate()))
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    for name in ("bootstrap", "topic", "group", "instance"):
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--client", choices=("ours", "kafka-python"), default="ours")
    parser.add_argument("--session-ms", type=int, default=6000)
    parser.add_argument("--poll-ms", type=int, default=60000)
    sys.exit(main(parser.parse_args()))

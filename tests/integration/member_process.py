"""A StaticConsumer in its own process, reporting what happens as JSON lines on stdout.

Used by tests that need two processes (fencing) and by nothing else. Exits 3 once fenced, after
checking that every later call raises the same error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import threading
import time
from typing import Any

from staticconsumer.consumer import ConsumerRebalanceListener, StaticConsumer
from staticconsumer.errors import FencedInstanceIdError
from staticconsumer.protocol import Message

_SAYING = threading.Lock()


def say(event: str, **fields: Any) -> None:
    """One JSON line, written whole: the request hook speaks from the membership thread while the
    application's loop speaks from the main one, and two bare prints can interleave on one line."""
    line = json.dumps({"event": event, "t": time.time(), **fields}) + "\n"
    with _SAYING:
        sys.stdout.write(line)
        sys.stdout.flush()


class Listener(ConsumerRebalanceListener):
    def on_partitions_assigned(self, assigned: frozenset[Any]) -> None:
        say("assigned", partitions=sorted([tp.topic, tp.partition] for tp in assigned))

    def on_partitions_revoked(self, revoked: frozenset[Any]) -> None:
        say("revoked", partitions=len(revoked))

    def on_partitions_lost(self, lost: frozenset[Any]) -> None:
        say("lost", partitions=len(lost))


def on_request(api: str, version: int, message: Message) -> None:
    if api in ("OffsetCommitRequest", "LeaveGroupRequest", "JoinGroupRequest"):
        say("sent", api=api, version=version)


async def main(args: argparse.Namespace) -> int:
    consumer = StaticConsumer(
        args.topic,
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        group_instance_id=args.instance,
        session_timeout_ms=6000,
        heartbeat_interval_ms=args.heartbeat_ms,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        listener=Listener(),
        request_hook=on_request,
    )
    await consumer.start()
    say("started")
    try:
        while True:
            batch = await consumer.getmany(timeout_ms=200)
            count = sum(len(rows) for rows in batch.values())
            if count:
                say("records", count=count)
                await consumer.commit()
                say("committed")
    except FencedInstanceIdError as error:
        say("fenced", message=str(error))
        for attempt in ("getmany", "commit", "getone"):
            try:
                if attempt == "getmany":
                    await consumer.getmany(timeout_ms=100)
                elif attempt == "commit":
                    await consumer.commit()
                else:
                    await consumer.getone()
                say("not_fenced_again", call=attempt)
            except FencedInstanceIdError:
                say("fenced_again", call=attempt)
        await consumer.stop()
        say("stopped")
        return 3


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    for name in ("bootstrap", "topic", "group", "instance"):
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--heartbeat-ms", type=int, default=1000)
    sys.exit(asyncio.run(main(parser.parse_args())))

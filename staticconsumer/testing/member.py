"""One static member in its own process, for fault tests: consume, process, commit, report.

``python -m staticconsumer.testing.member --bootstrap ... --topic ... --group ... --instance ...``
runs a :class:`~staticconsumer.consumer.StaticConsumer` (public API only, manual commits after each
batch: at-least-once) and reports what happens as JSON lines on stdout:

``started``; ``assigned`` / ``revoked`` / ``lost`` (listener calls, with partitions, generation and
member id); ``membership`` (member id or generation changed); ``records`` (``partition`` and the
``offsets`` processed); ``committed``; ``error`` (type and message; the member carries on);
``fenced`` (exits 3); ``fatal`` (any other error that ends the membership, with its type, message and,
for UNRELEASED_INSTANCE_ID, its cause; exits 4); ``stopped`` (after SIGTERM or SIGINT: a graceful stop,
no LeaveGroup; under ``--group-protocol consumer`` a leave with epoch -2).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
import time
from collections.abc import Sequence
from typing import Any

from staticconsumer.consumer import ConsumerRebalanceListener, StaticConsumer
from staticconsumer.errors import FencedInstanceIdError, StaticConsumerError, UnreleasedInstanceIdError
from staticconsumer.membership import TopicPartition


def say(event: str, **fields: Any) -> None:
    print(json.dumps({"event": event, "t": time.time(), **fields}), flush=True)


def _partitions(partitions: frozenset[TopicPartition]) -> list[list[Any]]:
    return sorted([tp.topic, tp.partition] for tp in partitions)


class ReportingListener(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.consumer: StaticConsumer | None = None

    def _say(self, event: str, partitions: frozenset[TopicPartition]) -> None:
        consumer = self.consumer
        say(
            event,
            partitions=_partitions(partitions),
            generation=consumer.generation if consumer else None,
            member_id=consumer.member_id if consumer else None,
        )

    def on_partitions_assigned(self, assigned: frozenset[TopicPartition]) -> None:
        self._say("assigned", assigned)

    def on_partitions_revoked(self, revoked: frozenset[TopicPartition]) -> None:
        self._say("revoked", revoked)

    def on_partitions_lost(self, lost: frozenset[TopicPartition]) -> None:
        self._say("lost", lost)


def _fatal(consumer: StaticConsumer) -> StaticConsumerError | None:
    """The error that ended the membership, if one did (every later call raises it)."""
    error = consumer._partitions.snapshot.fatal_error
    return error if isinstance(error, StaticConsumerError) else None


def _say_fatal(error: BaseException) -> None:
    cause = error.cause if isinstance(error, UnreleasedInstanceIdError) else None
    say("fatal", type=type(error).__name__, message=str(error), cause=cause)


async def run(args: argparse.Namespace) -> int:
    listener = ReportingListener()
    # Under the consumer protocol the broker owns the session timeout and the heartbeat interval.
    timing = (
        {"session_timeout_ms": args.session_ms, "heartbeat_interval_ms": args.heartbeat_ms}
        if args.group_protocol == "classic"
        else {"group_protocol": "consumer"}
    )
    consumer = StaticConsumer(
        *args.topic,
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        group_instance_id=args.instance,
        **timing,
        max_poll_interval_ms=args.max_poll_ms,
        request_timeout_ms=args.request_timeout_ms,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        listener=listener,
        telemetry=False,
    )
    listener.consumer = consumer
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    # start() waits for the first assignment and raises what ends the membership before it; a SIGTERM
    # meanwhile ends the start (the member never owned anything).
    starting = asyncio.ensure_future(consumer.start())
    stop_requested = asyncio.ensure_future(stopping.wait())
    await asyncio.wait({starting, stop_requested}, return_when=asyncio.FIRST_COMPLETED)
    stop_requested.cancel()
    if not starting.done():
        starting.cancel()
        with contextlib.suppress(BaseException):
            await starting
        say("stopped")
        return 0
    try:
        starting.result()
    except FencedInstanceIdError as error:
        say("fenced", message=str(error))
        return 3
    except StaticConsumerError as error:
        _say_fatal(error)
        return 4
    say("started")
    identity: tuple[str, int] | None = None
    try:
        while not stopping.is_set():
            try:
                batch = await consumer.getmany(timeout_ms=200, max_records=args.max_records)
            except FencedInstanceIdError as error:
                say("fenced", message=str(error))
                return 3
            except Exception as error:
                if error is _fatal(consumer):
                    _say_fatal(error)
                    return 4
                say("error", call="getmany", type=type(error).__name__, message=str(error))
                await asyncio.sleep(0.2)
                continue
            if (consumer.member_id, consumer.generation) != identity:
                identity = (consumer.member_id, consumer.generation)
                say("membership", member_id=identity[0], generation=identity[1])
            for tp, rows in batch.items():
                if args.process_ms:
                    await asyncio.sleep(args.process_ms / 1000)
                say("records", partition=[tp.topic, tp.partition], offsets=[r.offset for r in rows])
            if batch:
                try:
                    await consumer.commit()
                except FencedInstanceIdError as error:
                    say("fenced", message=str(error))
                    return 3
                except Exception as error:
                    say("error", call="commit", type=type(error).__name__, message=str(error))
                else:
                    say("committed")
    finally:
        with contextlib.suppress(Exception):
            await consumer.stop()
        say("stopped")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m staticconsumer.testing.member")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True, action="append")
    parser.add_argument("--group", required=True)
    parser.add_argument("--instance", required=True)
    parser.add_argument("--session-ms", type=int, default=10_000)
    parser.add_argument("--heartbeat-ms", type=int, default=1_000)
    parser.add_argument("--max-poll-ms", type=int, default=300_000)
    parser.add_argument("--request-timeout-ms", type=int, default=30_000)
    parser.add_argument("--max-records", type=int, default=200)
    parser.add_argument("--process-ms", type=int, default=0, help="simulated work per partition batch")
    parser.add_argument(
        "--group-protocol",
        choices=("classic", "consumer"),
        default="classic",
        help="consumer: KIP-848 (the broker's session timeout and heartbeat interval apply)",
    )
    return asyncio.run(run(parser.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())

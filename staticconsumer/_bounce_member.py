"""One member process of the rolling bounce (``staticconsumer.bounce``), for each Python client.

Run it by path, never with ``-m``: ``python .../staticconsumer/_bounce_member.py --client aiokafka ...``.
Run by path, Python does not import the ``staticconsumer`` package around it, so each member pays
only its own client's imports (``import aiokafka`` for aiokafka, ``import kafka`` for kafka-python,
``import staticconsumer`` or ``staticconsumer.sync`` for ours), as an application using that client
would. Its own imports are the standard library only, the same for every client.

Clients (``--client``): ``staticconsumer``, ``aiokafka`` and ``confluent-aio`` (confluent-kafka 2.16's
``confluent_kafka.aio.AIOConsumer``) on asyncio; ``staticconsumer-sync`` (our
``staticconsumer.sync.StaticConsumer``), ``kafka-python`` (3.0's ``KafkaConsumer``) and ``confluent``
(``confluent_kafka.Consumer``), blocking.

It prints JSON lines (``e``: event, ``t``: wall clock) that the orchestrator folds into figures:
``imported``, ``started``, ``assigned``, ``revoked``, ``lost``, ``first_record``, ``stopped``, and the
restart timeline: ``coordinator`` (coordinator found), ``joined`` (JoinGroup answered with a
generation), ``synced`` (SyncGroup answered), ``offsets`` (committed offsets of the first assignment
known, the consumer can fetch). Each client reports them through what it offers:

* staticconsumer: a ``MembershipObserver`` passed as ``observers=`` sees every membership event; the
  first successful FindCoordinator, JoinGroup and SyncGroup responses are the steps. ``offsets`` is
  the first ``on_partitions_assigned``, which StaticConsumer runs once the OffsetFetch answer is in.
  The sync consumer runs the same observer and listener (its listener is plain methods anyway); its
  constructor joins, so its ``started`` comes after its first ``assigned``, as for the async one.
* aiokafka 0.14 has no hook for these: its own log records are the hook (a ``logging.Handler`` on
  ``aiokafka.consumer.group_coordinator``: "Discovered coordinator", "Joined group", "Successfully
  synced group"; and on ``aiokafka.consumer.fetcher`` at DEBUG until the first record: the first
  "Resetting offset ... to the committed offset" or "No committed offset found", written once the
  OffsetFetch answer is applied). Records are matched on their format string, never formatted.
* kafka-python 3.0 has none either: the same, on ``kafka.coordinator`` ("Discovered coordinator",
  "Successfully joined group", and at DEBUG "Received SyncGroup response" without an error code) and
  ``kafka.coordinator.consumer`` at DEBUG ("Setting offset ... to the committed offset" or "has no
  committed offset", once the OffsetFetch answer is in). Its generation is ``group_metadata()``'s.
* confluent-kafka (librdkafka) has no hook for them either: its ``logger`` gets librdkafka's log lines,
  with ``debug=cgrp`` the group's (:data:`LIBRDKAFKA_STEPS`): ``CGRPCOORD`` "coordinator is",
  ``JOINGROUP`` "JoinGroup response: GenerationId N ... (no error)", ``SYNCGROUP`` "SyncGroup response:
  Success", ``OFFSETFETCH`` "back to pending list" (written once the OffsetFetch answer is applied); under
  the consumer protocol, ``HEARTBEAT`` "ConsumerGroupHeartbeat response received ... with epoch N" is the
  join and "delegating incremental assign" the sync. librdkafka serves its logs from the consumer's queue,
  so a step is seen when the consumer's next ``consume()`` serves it (the member calls it in a loop, every
  0.2 s at most); the AIOConsumer then hands it to the event loop. The generation is the last
  JoinGroup's (or heartbeat's epoch). ``assigned``, ``revoked`` and ``lost`` are its ``on_assign``,
  ``on_revoke`` and ``on_lost``.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import logging
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

_SAYING = threading.Lock()


def say(event: str, **fields: Any) -> None:
    """One JSON line, written whole: observers report from the consumer's membership thread. ``cpu`` is
    the process's CPU seconds so far (all threads), which load disturbs less than the wall clock."""
    line = json.dumps({"e": event, "t": time.time(), "cpu": time.process_time(), **fields}) + "\n"
    with _SAYING:
        sys.stdout.write(line)
        sys.stdout.flush()


class Steps:
    """Says each timeline step once, the first time it happens."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def once(self, step: str) -> None:
        if step not in self.seen:
            self.seen.add(step)
            say(step)


def _names(partitions: Iterable[Any]) -> list[list[Any]]:
    return sorted([tp.topic, tp.partition] for tp in partitions)


async def _consume(
    poll: Callable[[], Any], generation: Callable[[], int], stopping: asyncio.Event, first: Callable[[], None]
) -> None:
    waiting = True
    while not stopping.is_set():
        batch = await poll()
        if waiting and batch:
            waiting = False
            say("first_record", gen=generation())
            first()


# -- wire tracing (--trace, diagnostics only) ---------------------------------------------------


def trace_wire() -> None:
    """Report every connection opened and every request with its round trip, for both clients.

    Patches aiokafka internals, through ``staticconsumer._aiokafka`` (the one module that touches them):
    for ``--trace`` diagnostics (benchmarks/join_trace.py) only, never for the measured runs, as it
    imports staticconsumer into an aiokafka member too.
    """
    from staticconsumer._aiokafka import trace_wire as trace
    from staticconsumer.protocol.api_keys import API_NAMES

    def request(api_key: int, version: int | None, port: int, sent: float, took: float) -> None:
        api = API_NAMES.get(api_key, str(api_key))
        thread = threading.current_thread().name
        say("wire", sent=sent, took=took, api=api, v=version, broker=f"{port}", thread=thread)

    def connect(port: int, began: float, took: float) -> None:
        say("connect", sent=began, took=took, broker=str(port), thread=threading.current_thread().name)

    trace(request, connect)


# -- staticconsumer ------------------------------------------------------------------------------

OBSERVED_STEPS = {
    "FindCoordinatorResponse": "coordinator",
    "JoinGroupResponse": "joined",
    "SyncGroupResponse": "synced",
    "ConsumerGroupHeartbeatResponse": "joined",
}
"""Membership events whose first success (error code 0) is a timeline step. Under the consumer protocol
(KIP-848) the join is the first ConsumerGroupHeartbeat answered, and "synced" the first assignment the
member hands out (the answer's topic ids resolved): the action PartitionsAssigned."""


class Timeline:
    """A MembershipObserver: the first successful coordinator, join and sync responses; and the generation
    the machine is at, for a listener called before the consumer's constructor returned (the sync one)."""

    def __init__(self, steps: Steps, trace: bool) -> None:
        self.steps = steps
        self.trace = trace
        self.generation = -1

    def observe(self, event: Any, produced: Any, view: Any) -> None:
        self.generation = int(view.generation)
        step = OBSERVED_STEPS.get(type(event).__name__)
        if step is not None and getattr(event, "error_code", None) == 0:
            self.steps.once(step)
        if any(type(action).__name__ == "PartitionsAssigned" for action in produced):
            self.steps.once("synced")
        if self.trace and type(event).__name__ not in ("PollCalled", "Tick"):
            actions = [type(a).__name__ for a in produced]
            say("event", name=type(event).__name__, code=getattr(event, "error_code", None), actions=actions)


class Listener:
    """Our consumers' rebalance listener (plain methods suit the async and the sync one alike)."""

    def __init__(self, steps: Steps, generation: Callable[[], int]) -> None:
        self.steps = steps
        self.generation = generation

    def on_partitions_assigned(self, assigned: frozenset[Any]) -> None:
        self.steps.once("offsets")  # StaticConsumer calls this once the committed offsets are fetched
        _say_assigned(assigned, self.generation())

    def on_partitions_revoked(self, revoked: frozenset[Any]) -> None:
        say("revoked", partitions=_names(revoked), n=len(revoked))

    def on_partitions_lost(self, lost: frozenset[Any]) -> None:
        say("lost", partitions=_names(lost), n=len(lost))


def staticconsumer_options(args: argparse.Namespace) -> dict[str, Any]:
    """Settings both of our consumers take: the same as the other clients' (range, 1 s auto-commit,
    latest). Under the consumer protocol the broker assigns and owns the session timeout and heartbeat."""
    protocol = (
        {
            "session_timeout_ms": args.session_ms,
            "heartbeat_interval_ms": args.heartbeat_ms,
            "assignors": ("range",),
        }
        if args.group_protocol == "classic"
        else {"group_protocol": args.group_protocol}
    )
    return {
        "bootstrap_servers": args.bootstrap,
        "group_id": args.group,
        "group_instance_id": args.instance,
        **protocol,
        "auto_commit_interval_ms": 1000,
        "auto_offset_reset": "latest",
    }


async def run_staticconsumer(args: argparse.Namespace, stopping: asyncio.Event) -> None:
    from staticconsumer import ConsumerRebalanceListener, StaticConsumer

    class Reporter(Listener, ConsumerRebalanceListener):
        """The listener, of the type the async consumer declares."""

    say("imported")
    if args.trace:
        trace_wire()
    steps = Steps()
    holder: list[StaticConsumer] = []
    consumer = StaticConsumer(
        args.topic,
        **staticconsumer_options(args),
        listener=Reporter(steps, lambda: holder[0].generation),
        observers=[Timeline(steps, args.trace)],
    )
    holder.append(consumer)
    say("starting")
    await consumer.start()
    say("started")
    await _consume(
        lambda: consumer.getmany(timeout_ms=200), lambda: consumer.generation, stopping, lambda: None
    )
    await consumer.stop()


def _say_assigned(assigned: Iterable[Any], generation: int) -> None:
    partitions = _names(assigned)
    say("assigned", partitions=partitions, n=len(partitions), gen=generation)


def _consume_blocking(
    poll: Callable[[], Any],
    generation: Callable[[], int],
    stopping: Callable[[], bool],
    first: Callable[[], None],
) -> None:
    """``_consume`` for the blocking clients."""
    waiting = True
    while not stopping():
        batch = poll()
        if waiting and batch:
            waiting = False
            say("first_record", gen=generation())
            first()


def run_staticconsumer_sync(args: argparse.Namespace) -> None:
    """Our sync consumer as docs/sync.md shows it: topics to the constructor (which joins), poll in a
    loop, and SIGTERM left to the consumer (it raises SystemExit(143) in poll() after closing without
    a LeaveGroup)."""
    from staticconsumer.sync import StaticConsumer

    say("imported")
    if args.trace:
        trace_wire()
    steps = Steps()
    timeline = Timeline(steps, args.trace)
    say("starting")
    consumer = StaticConsumer(
        args.topic,
        **staticconsumer_options(args),
        listener=Listener(steps, lambda: timeline.generation),  # runs before the constructor returns
        observers=[timeline],
    )
    try:
        with consumer:
            say("started")
            _consume_blocking(
                lambda: consumer.poll(timeout_ms=200),
                lambda: consumer.generation,
                lambda: False,
                lambda: None,
            )
    except SystemExit:
        pass  # SIGTERM: the consumer is closed (poll() closed it, or the with block did)


# -- aiokafka ------------------------------------------------------------------------------------


class _LogSteps(logging.Handler):
    """Timeline steps from a client's own log records, matched on the unformatted message; a record
    whose one argument is a response (kafka-python logs them whole) counts only without an error."""

    def __init__(self, steps: Steps, by_message: dict[str, str]) -> None:
        super().__init__(logging.DEBUG)
        self.steps = steps
        self.by_message = by_message

    def emit(self, record: logging.LogRecord) -> None:
        step = self.by_message.get(str(record.msg))
        if step is None:
            return
        args = record.args
        if isinstance(args, tuple) and len(args) == 1 and getattr(args[0], "error_code", 0) != 0:
            return
        self.steps.once(step)


def _hook_steps(steps: Steps, table: dict[str, tuple[int, dict[str, str]]]) -> Callable[[], None]:
    """Report a client's steps from its own loggers (``table``: logger name -> level, messages); returns
    what silences those loggers once the first record is in (a fetcher logs every fetch at DEBUG)."""
    hooked = []
    for name, (level, messages) in table.items():
        logger = logging.getLogger(name)
        logger.setLevel(level)
        logger.propagate = False
        logger.addHandler(_LogSteps(steps, messages))
        hooked.append(logger)

    def quiet() -> None:
        for logger in hooked:
            logger.setLevel(logging.CRITICAL)

    return quiet


AIOKAFKA_STEPS = {
    "aiokafka.consumer.group_coordinator": (
        logging.INFO,
        {
            "Discovered coordinator %s for group %s": "coordinator",
            "Joined group '%s' (generation %s) with member_id %s": "joined",
            "Successfully synced group %s with generation %s": "synced",
        },
    ),
    "aiokafka.consumer.fetcher": (
        logging.DEBUG,
        {
            "Resetting offset for partition %s to the committed offset %s": "offsets",
            "No committed offset found for %s": "offsets",
        },
    ),
}


async def run_aiokafka(args: argparse.Namespace, stopping: asyncio.Event) -> None:
    from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor

    say("imported")
    if args.trace:
        trace_wire()
    steps = Steps()
    quiet = _hook_steps(steps, AIOKAFKA_STEPS)

    consumer = AIOKafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        group_instance_id=args.instance,
        session_timeout_ms=args.session_ms,
        heartbeat_interval_ms=args.heartbeat_ms,
        partition_assignment_strategy=(RangePartitionAssignor,),
        auto_commit_interval_ms=1000,
        auto_offset_reset="latest",
    )

    def generation() -> int:
        # aiokafka has no public generation; its coordinator holds it.
        coordinator = getattr(consumer, "_coordinator", None)
        return int(getattr(coordinator, "generation", -1)) if coordinator is not None else -1

    class Reporter(ConsumerRebalanceListener):  # type: ignore[misc]
        async def on_partitions_revoked(self, revoked: Any) -> None:
            say("revoked", partitions=_names(revoked), n=len(revoked))

        async def on_partitions_assigned(self, assigned: Any) -> None:
            _say_assigned(assigned, generation())

    consumer.subscribe([args.topic], listener=Reporter())
    say("starting")
    await consumer.start()
    say("started")
    await _consume(lambda: consumer.getmany(timeout_ms=200), generation, stopping, quiet)
    await consumer.stop()


# -- kafka-python --------------------------------------------------------------------------------

KAFKA_PYTHON_STEPS = {
    "kafka.coordinator": (
        logging.DEBUG,
        {
            "Discovered coordinator %s for group %s": "coordinator",
            "Successfully joined group %s %s": "joined",
            "Received SyncGroup response: %s": "synced",  # any answer: _LogSteps takes error_code 0 only
        },
    ),
    "kafka.coordinator.consumer": (
        logging.DEBUG,
        {
            "Setting offset for partition %s to the committed offset %s": "offsets",
            "Group %s has no committed offset for partition %s": "offsets",
        },
    ),
}


def run_kafka_python(args: argparse.Namespace) -> None:
    """kafka-python 3.0's KafkaConsumer, static as the others: group_instance_id, the range assignor
    alone, the same session, heartbeat and auto-commit settings; SIGTERM ends the loop, then close()
    (a static member sends no LeaveGroup)."""
    from kafka import ConsumerRebalanceListener, KafkaConsumer  # type: ignore[import-untyped]
    from kafka.coordinator.assignors.range import RangePartitionAssignor  # type: ignore[import-untyped]

    say("imported")
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: stopping.set())
    steps = Steps()
    quiet = _hook_steps(steps, KAFKA_PYTHON_STEPS)
    logging.getLogger("kafka.coordinator.heartbeat").setLevel(logging.CRITICAL)  # else under the hook

    consumer = KafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        group_instance_id=args.instance,
        session_timeout_ms=args.session_ms,
        heartbeat_interval_ms=args.heartbeat_ms,
        partition_assignment_strategy=[RangePartitionAssignor],
        auto_commit_interval_ms=1000,
        auto_offset_reset="latest",
    )

    def generation() -> int:
        return int(consumer.group_metadata().generation_id)

    class Reporter(ConsumerRebalanceListener):  # type: ignore[misc]
        def on_partitions_revoked(self, revoked: Any) -> None:
            say("revoked", partitions=_names(revoked), n=len(revoked))

        def on_partitions_assigned(self, assigned: Any) -> None:
            _say_assigned(assigned, generation())

        def on_partitions_lost(self, lost: Any) -> None:
            say("lost", partitions=_names(lost), n=len(lost))

    consumer.subscribe([args.topic], listener=Reporter())
    say("starting")
    say("started")  # kafka-python joins in its first poll()
    _consume_blocking(lambda: consumer.poll(timeout_ms=200), generation, stopping.is_set, quiet)
    consumer.close()


# -- confluent-kafka (librdkafka) ----------------------------------------------------------------

LIBRDKAFKA_STEPS: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("CGRPCOORD", re.compile(r"coordinator is "), "coordinator"),
    ("JOINGROUP", re.compile(r"JoinGroup response: GenerationId (\d+),.*\(no error\)$"), "joined"),
    ("SYNCGROUP", re.compile(r"SyncGroup response: Success"), "synced"),
    ("HEARTBEAT", re.compile(r"ConsumerGroupHeartbeat response received .* with epoch (\d+)"), "joined"),
    ("ASSIGN", re.compile(r"delegating incremental assign of"), "synced"),
    ("OFFSETFETCH", re.compile(r"back to pending list with offset"), "offsets"),
)
"""librdkafka's debug lines (facility, message) that are timeline steps; a first group is the generation
(classic) or the member epoch (consumer protocol). The second "synced" is the consumer protocol's: the
first assignment handed to the application (a classic member reports SyncGroup before it)."""


class LibrdkafkaSteps:
    """A confluent-kafka ``logger``: librdkafka calls ``log(level, "%s [%s] %s", facility, name, text)``."""

    def __init__(self, steps: Steps) -> None:
        self.steps = steps
        self.generation = -1

    def log(self, level: int, fmt: str, *args: Any) -> None:
        if len(args) != 3:
            return
        facility, text = str(args[0]), str(args[2])
        for wanted, pattern, step in LIBRDKAFKA_STEPS:
            if facility != wanted:
                continue
            match = pattern.search(text)
            if match is None:
                continue
            if match.groups():
                self.generation = int(match.group(1))
            self.steps.once(step)

    def quiet(self) -> None:
        """After the first record no step is reported any more (a later rebalance is not the restart's);
        the lines still keep the generation current. debug=cgrp cannot be turned off once set."""
        self.steps.seen.update(step for _, _, step in LIBRDKAFKA_STEPS)


def confluent_config(args: argparse.Namespace, logger: LibrdkafkaSteps) -> dict[str, Any]:
    """The settings every member takes (range, 1 s auto-commit, latest), in librdkafka's names. Under the
    consumer protocol the broker assigns and owns the session: librdkafka refuses those settings."""
    protocol: dict[str, Any] = (
        {
            "session.timeout.ms": args.session_ms,
            "heartbeat.interval.ms": args.heartbeat_ms,
            "partition.assignment.strategy": "range",
        }
        if args.group_protocol == "classic"
        else {"group.protocol": args.group_protocol}
    )
    return {
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        **({"group.instance.id": args.instance} if args.instance else {}),
        **protocol,
        "auto.commit.interval.ms": 1000,
        "auto.offset.reset": "latest",
        "debug": "cgrp",  # the timeline's steps are cgrp debug lines; served to `logger` by consume()
        "logger": logger,
    }


def _records(messages: Iterable[Any]) -> list[Any]:
    """consume() hands errors (partition EOF, transport) over as messages: they are not records."""
    return [m for m in messages if m.error() is None]


async def run_confluent_aio(args: argparse.Namespace, stopping: asyncio.Event) -> None:
    """confluent-kafka 2.16's AIOConsumer, static: subscribe with the rebalance callbacks, consume() in a
    loop, close() on SIGTERM (a static member sends no LeaveGroup; under KIP-848 it leaves with epoch -2,
    keeping its assignment for its successor)."""
    from confluent_kafka.aio import AIOConsumer

    say("imported")
    steps = Steps()
    logger = LibrdkafkaSteps(steps)
    consumer = AIOConsumer(confluent_config(args, logger))

    async def on_assign(_: Any, partitions: list[Any]) -> None:
        _say_assigned(partitions, logger.generation)

    async def on_revoke(_: Any, partitions: list[Any]) -> None:
        say("revoked", partitions=_names(partitions), n=len(partitions))

    async def on_lost(_: Any, partitions: list[Any]) -> None:
        say("lost", partitions=_names(partitions), n=len(partitions))

    say("starting")
    await consumer.subscribe([args.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    say("started")  # librdkafka joins in the background from here; consume() serves its callbacks

    async def poll() -> list[Any]:
        return _records(await consumer.consume(num_messages=500, timeout=0.2))

    await _consume(poll, lambda: logger.generation, stopping, logger.quiet)
    await consumer.close()


def run_confluent(args: argparse.Namespace) -> None:
    """confluent-kafka's Consumer, static, as the AIOConsumer member but blocking (consume() in the main
    thread); SIGTERM ends the loop, then close()."""
    from confluent_kafka import Consumer

    say("imported")
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: stopping.set())
    steps = Steps()
    logger = LibrdkafkaSteps(steps)
    consumer = Consumer(confluent_config(args, logger))

    def on_assign(_: Any, partitions: list[Any]) -> None:
        _say_assigned(partitions, logger.generation)

    def on_revoke(_: Any, partitions: list[Any]) -> None:
        say("revoked", partitions=_names(partitions), n=len(partitions))

    def on_lost(_: Any, partitions: list[Any]) -> None:
        say("lost", partitions=_names(partitions), n=len(partitions))

    say("starting")
    consumer.subscribe([args.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    say("started")
    _consume_blocking(
        lambda: _records(consumer.consume(num_messages=500, timeout=0.2)),
        lambda: logger.generation,
        stopping.is_set,
        logger.quiet,
    )
    consumer.close()


# -- the process ---------------------------------------------------------------------------------

RUNNERS = {"staticconsumer": run_staticconsumer, "aiokafka": run_aiokafka, "confluent-aio": run_confluent_aio}
"""The asyncio clients, run by :func:`run_member`."""

BLOCKING_RUNNERS: dict[str, Callable[[argparse.Namespace], None]] = {
    "staticconsumer-sync": run_staticconsumer_sync,
    "kafka-python": run_kafka_python,
    "confluent": run_confluent,
}
"""The synchronous clients, run in the main thread."""


async def run_member(args: argparse.Namespace) -> int:
    """Consume until SIGTERM, then stop the way a pod does (a static member sends no LeaveGroup)."""
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    stopping = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopping.set)
    await RUNNERS[args.client](args, stopping)
    say("stopped")
    return 0


def run_blocking_member(args: argparse.Namespace) -> int:
    """Consume until SIGTERM, then close the way a pod does (no LeaveGroup): each client its own way."""
    for client_logs in ("aiokafka", "kafka"):  # as the asyncio members: no client logging on stderr
        logging.getLogger(client_logs).setLevel(logging.CRITICAL)
    BLOCKING_RUNNERS[args.client](args)
    say("stopped")
    return 0


CLIENT_MODULES = {
    "staticconsumer": "staticconsumer",
    "aiokafka": "aiokafka",
    "staticconsumer-sync": "staticconsumer.sync",
    "kafka-python": "kafka",
    "confluent-aio": "confluent_kafka.aio",
    "confluent": "confluent_kafka",
}
"""What an application of each client imports first."""

PROTOCOL_CLIENTS = ("staticconsumer", "confluent-aio", "confluent")
"""The members that speak the consumer protocol (KIP-848) here too; the others, the classic one only."""


def imported_modules(client: str) -> list[str]:
    """What a member of ``client`` has imported from this repository once its client is imported
    (``--list-imports``; the benchmark's fairness test reads it)."""
    importlib.import_module(CLIENT_MODULES[client])
    return sorted(n for n in sys.modules if n.split(".")[0] in ("staticconsumer", "assignors"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="one rolling-bounce member process, JSON lines on stdout")
    parser.add_argument("--client", choices=sorted([*RUNNERS, *BLOCKING_RUNNERS]), required=True)
    parser.add_argument(
        "--list-imports", action="store_true", help="print this repository's modules imported"
    )
    parser.add_argument("--bootstrap")
    parser.add_argument("--topic")
    parser.add_argument("--group")
    parser.add_argument("--instance", default=None, help="group.instance.id; omit for a dynamic member")
    parser.add_argument("--session-ms", type=int, default=10_000)
    parser.add_argument("--heartbeat-ms", type=int, default=1_000)
    parser.add_argument(
        "--trace", action="store_true", help="diagnostics: report every request (patches aiokafka)"
    )
    parser.add_argument(
        "--group-protocol",
        choices=("classic", "consumer"),
        default="classic",
        help=f"consumer: KIP-848 ({', '.join(PROTOCOL_CLIENTS)}; the others speak the classic one only)",
    )
    args = parser.parse_args(argv)
    if args.group_protocol != "classic" and args.client not in PROTOCOL_CLIENTS:
        parser.error(f"--client {args.client} speaks only the classic protocol here")
    if args.trace and args.client in ("kafka-python", "confluent-aio", "confluent"):
        parser.error(f"--trace patches aiokafka's connections: --client {args.client} has none")
    if args.list_imports:
        print(json.dumps(imported_modules(args.client)))
        return 0
    if not (args.bootstrap and args.topic and args.group):
        parser.error("--bootstrap, --topic and --group are required")
    if args.client in BLOCKING_RUNNERS:
        return run_blocking_member(args)
    return asyncio.run(run_member(args))


if __name__ == "__main__":
    sys.exit(main())

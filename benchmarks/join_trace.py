"""Where a member's join goes, request by request: staticconsumer beside aiokafka (dynamic, or static with
``--static``).

Three dynamic members consume a topic (12 partitions, a steady producer); member 0 is restarted as in
the rolling bounce (its process stopped, then a new one started). Every
member runs ``staticconsumer/_bounce_member.py --trace``, which reports each connection opened and
each request with its round trip (both clients send through aiokafka's connections, so one wrapper
sees either client's requests), plus, for staticconsumer, every membership event and the actions it
produced. Printed per repeat: what the old process did from its stop request, the new process's
requests from its spawn, and what the two other members did until everyone was assigned again
(revocation, rejoin, sync, offset fetch), with the partition-seconds owned by nobody in each of the
two rebalances (the leave, until the new spawn; the join, after it). And the race that decides whether
the restart costs one rebalance or two (:func:`race`): seconds from the old process's LeaveGroup to
each remaining member's JoinGroup and to the new process's first JoinGroup. The coordinator ends the
join phase once every known member (and every member it told MEMBER_ID_REQUIRED) has joined, so a new
process whose first JoinGroup comes after the last remaining member's is left out of that generation,
and its own JoinGroup starts a second rebalance.

    .venv/bin/python -m benchmarks.join_trace [--repeats 3] [--clients staticconsumer aiokafka]
        [--out trace.json]

A diagnostic (issue 18's dynamic join path), not a page benchmark: the tracing patches aiokafka.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from staticconsumer.bounce import (
    MEMBER_SCRIPT,
    Event,
    Member,
    _produce_steadily,
    _settled,
    _wait_for,
    member_environment,
    unowned_partition_seconds,
    warm_bytecode,
)
from staticconsumer.testing import EmbeddedKafka
from staticconsumer.testing.broker import create_topics

STEPS = ("starting", "started", "coordinator", "joined", "synced", "offsets", "assigned", "first_record")


def spawn(client: str, index: int, bootstrap: str, topic: str, group: str, static: bool = False) -> Member:
    command = [
        sys.executable,
        str(MEMBER_SCRIPT),
        f"--client={client}",
        f"--bootstrap={bootstrap}",
        f"--topic={topic}",
        f"--group={group}",
        "--session-ms=30000",
        "--heartbeat-ms=1000",
        "--trace",
        *([f"--instance={group}-{index}"] if static else []),
    ]
    env = member_environment()
    spawned_at = time.time()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env)
    events: list[Event] = []

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            with contextlib.suppress(json.JSONDecodeError):
                events.append(json.loads(line))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()

    def stop() -> None:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        reader.join(timeout=5)

    return Member(index, spawned_at, events, stop)


def race(old: Member, new: Member, others: list[Member]) -> dict[str, Any] | None:
    """Seconds from the old process's LeaveGroup to each remaining member's first JoinGroup after it
    (``others``, sorted) and to the new process's first JoinGroup (``new``); ``missed``: the new one
    came after the last of them, so the join phase the leave started ended without it. None when the
    old process sent no LeaveGroup (a static member) or a JoinGroup is missing from the trace."""
    leave = _first_request(old, "LeaveGroup", old.stop_requested_at or 0.0)
    if leave is None:
        return None
    joins = [_first_request(m, "JoinGroup", leave) for m in others]
    new_join = _first_request(new, "JoinGroup", leave)
    if new_join is None or not joins or any(j is None for j in joins):
        return None
    rejoined = sorted(j - leave for j in joins if j is not None)
    return {"others": rejoined, "new": new_join - leave, "missed": new_join - leave > rejoined[-1]}


def _first_request(member: Member, api: str, after: float) -> float | None:
    """When ``member`` first sent ``api`` at or after ``after`` (its traced ``wire`` events)."""
    return next(
        (
            float(e["sent"])
            for e in list(member.events)
            if e["e"] == "wire" and e["api"] == api and e["sent"] >= after
        ),
        None,
    )


def describe(event: Event, zero: float) -> str:
    at = _when(event) - zero
    kind = event["e"]
    if kind == "wire":
        took = event["took"] * 1000
        return f"{at:7.3f}  {event['api']} v{event['v']} -> broker {event['broker']} ({took:.1f} ms)"
    if kind == "connect":
        return f"{at:7.3f}  connect broker {event['broker']} ({event['took'] * 1000:.1f} ms)"
    if kind == "event":
        return f"{at:7.3f}  event {event['name']} code={event['code']} -> {', '.join(event['actions'])}"
    extra = f" n={event['n']}" if "n" in event else ""
    return f"{at:7.3f}  {kind}{extra}"


async def one(
    kafka: EmbeddedKafka, client: str, size: int, show: bool, static: bool = False
) -> dict[str, Any]:
    """Three dynamic members settle; member 0 is restarted as in the rolling bounce (stopped, then a
    new process started). Returns the new process's steps and the unowned partition-seconds of the
    two rebalances (the leave and the join), split at the new process's spawn."""
    name = f"join-{client}-{uuid.uuid4().hex[:6]}"
    partitions = 4 * size
    await create_topics(kafka.bootstrap_servers, {name: partitions})
    loop = asyncio.get_running_loop()
    stop_producing = asyncio.Event()
    producing = asyncio.create_task(_produce_steadily(kafka.bootstrap_servers, name, 200, stop_producing))
    bootstrap = kafka.bootstrap_servers
    members: list[Member] = []
    everyone: list[Member] = []
    try:
        for i in range(size):
            members.append(await loop.run_in_executor(None, spawn, client, i, bootstrap, name, name, static))
        everyone = list(members)
        await _wait_for(lambda: _settled(members, partitions), 60, "the members settled")
        await asyncio.sleep(2.5)
        old = members[0]
        old.stop_requested_at = time.time()
        await loop.run_in_executor(None, old.stop)
        new = await loop.run_in_executor(None, spawn, client, 0, bootstrap, name, name, static)
        members[0] = new
        everyone.append(new)
        await _wait_for(lambda: new.first("first_record") is not None, 60, "the new member's first record")
        await _wait_for(lambda: _settled(members, partitions), 60, "the members settled again")
        await asyncio.sleep(1.5)
        end = time.time()
    finally:
        stop_producing.set()
        await producing
        for m in members:
            if m.stop_requested_at is None:
                m.stop_requested_at = time.time()
        await asyncio.gather(*(loop.run_in_executor(None, m.stop) for m in members))
    zero = new.spawned_at
    stopped = old.stop_requested_at or zero
    steps = {s: float(e["t"]) - zero for s in STEPS if (e := new.first(s)) is not None}
    gaps = []
    for m in members[1:]:
        revokes = [float(e["t"]) for e in m.events if e["e"] == "revoked" and float(e["t"]) >= stopped]
        assigns = [float(e["t"]) for e in m.events if e["e"] == "assigned" and float(e["t"]) >= stopped]
        for r in revokes:
            later = [a for a in assigns if a >= r]
            if later:
                gaps.append(later[0] - r)
    leave = unowned_partition_seconds(everyone, partitions, stopped, zero)
    join = unowned_partition_seconds(everyone, partitions, zero, end)
    raced = race(old, new, members[1:])
    if show:
        print(f"\n== {client}: member 0 stopped at {stopped - zero:+.3f}, new process spawned at 0")
        print("-- the old process, from its stop request (seconds from the new spawn)")
        for e in old.events:
            if _when(e) >= stopped and not (e["e"] == "wire" and e["api"] == "Fetch"):
                print("  " + describe(e, zero))
        print("-- the new process")
        for e in new.events:
            if not (e["e"] == "wire" and e["api"] == "Fetch") or "first_record" not in steps:
                print("  " + describe(e, zero))
        for k, m in enumerate(members[1:], start=1):
            print(f"-- member {k}, from the stop request until everyone was assigned again")
            for e in m.events:
                at = _when(e)
                if at >= stopped and not (e["e"] == "wire" and e["api"] == "Fetch"):
                    if at - zero > steps.get("first_record", 0) + 1.0:
                        break
                    print("  " + describe(e, zero))
        print(f"unowned partition-seconds: leave {leave:.2f}, join {join:.2f}")
    if raced is not None:
        others = raced["others"]
        print(
            f"race from the LeaveGroup: remaining members rejoined {others[0]:+.3f}..{others[-1]:+.3f} s, "
            f"new process's JoinGroup {raced['new']:+.3f} s: "
            + ("missed that join phase (a second rebalance)" if raced["missed"] else "in that join phase"),
            flush=True,
        )
    return {
        "client": client,
        "new": steps,
        "stop_to_spawn": zero - stopped,
        "unowned_leave": leave,
        "unowned_join": join,
        "revoke_to_assigned": gaps,
        "race": raced,
        "events": [m.events for m in everyone],
    }


def _when(event: Event) -> float:
    """When it happened: a request's or connection's start, else the event's own time."""
    return float(event["sent"] if "sent" in event else event["t"])


def _at(event: Event | None, zero: float) -> float | None:
    return None if event is None else float(event["t"]) - zero


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--members", type=int, default=3, help="group size N (topic of 4N partitions)")
    parser.add_argument("--clients", nargs="+", default=["staticconsumer", "aiokafka"])
    parser.add_argument("--static", action="store_true", help="static members (group.instance.id)")
    parser.add_argument("--quiet", action="store_true", help="only the summary, not every request")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    runs: list[dict[str, Any]] = []
    warm_bytecode()
    with EmbeddedKafka() as kafka:
        print(f"Kafka {kafka.version}, load {os.getloadavg()}", flush=True)
        for repeat in range(args.repeats):
            for client in (
                args.clients[repeat % len(args.clients) :] + args.clients[: repeat % len(args.clients)]
            ):
                runs.append(
                    asyncio.run(one(kafka, client, args.members, show=not args.quiet, static=args.static))
                )
    print("\nmedians, seconds from the new member's spawn; unowned partition-seconds of each rebalance:")
    for client in args.clients:
        mine = [r for r in runs if r["client"] == client]
        cells = []
        for step in STEPS:
            values = [r["new"][step] for r in mine if step in r["new"]]
            cells.append(f"{step} {statistics.median(values):.3f}" if values else f"{step} -")
        print(f"  {client:15} " + ", ".join(cells))
        leave = statistics.median(r["unowned_leave"] for r in mine)
        join = statistics.median(r["unowned_join"] for r in mine)
        stop = statistics.median(r["stop_to_spawn"] for r in mine)
        print(f"  {'':15} unowned: leave {leave:.2f}, join {join:.2f}; old process stop took {stop:.2f} s")
        gaps = [g for r in mine for g in r["revoke_to_assigned"]]
        if gaps:
            print(
                f"  {'':15} other members' revoke -> assigned: median {statistics.median(gaps):.3f} s, "
                f"max {max(gaps):.3f} s over {len(gaps)}"
            )
        raced = [r["race"] for r in mine if r["race"] is not None]
        if raced:
            last = statistics.median(r["others"][-1] for r in raced)
            new = statistics.median(r["new"] for r in raced)
            missed = sum(r["missed"] for r in raced)
            print(
                f"  {'':15} from the LeaveGroup: last remaining member rejoined {last:+.3f} s, new "
                f"process's JoinGroup {new:+.3f} s (medians); missed the join phase {missed} of {len(raced)}"
            )
    if args.out:
        args.out.write_text(json.dumps(runs) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

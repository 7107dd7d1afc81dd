"""The thread boundary: group membership runs off the application's event loop, on the process's one
membership thread (loop_thread.py), each consumer's as a task of its own with its own coordinator
connection, as the Java client's heartbeat thread does.

An application that blocks its event loop (CPU-heavy batches, a synchronous call) therefore never delays
a heartbeat: it can lose its partitions to max.poll.interval.ms, as in Java, but not its place in the
group. One consumer's run failing or cancelled ends that run only; the thread serves the others on, and
ends after the last run. Everything that crosses the boundary crosses here, and nothing that crosses
blocks either loop:

* application -> membership: ``poll_called``, ``commit``, ``stop``, ``update_subscription`` post events
  with ``call_soon_threadsafe``; results come back as concurrent futures the application awaits;
* membership -> application: every PartitionOwner call is scheduled on the application's loop, in
  order (``call_soon_threadsafe`` / ``run_coroutine_threadsafe``), and the membership side awaits the
  callbacks' results without holding anything up in the meantime (heartbeats go on);
* the member's identity and fatal error are published as an immutable MemberSnapshot.

The rule for state both threads see: a value that crosses is immutable (a msgspec Struct with
``frozen=True``, a frozenset, a tuple) and is published by one reference assignment, so a reader gets the old
value or the new one, never half of each; or it is owned by one thread and the other only posts events to
it. The Subscription follows the first half (its whole state is one frozen value, swapped whole); the
machine, the clients and the topic watch the second (membership thread only). The one exception, the cache
of explained errors, is written by both threads and guarded by a lock.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import importlib
import logging
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from staticconsumer import _aiokafka, connection
from staticconsumer.connection import bootstrapping as _bootstrapping  # noqa: F401  (the probe's)
from staticconsumer.connection.reconnect import ReconnectBackoff
from staticconsumer.errors import (
    BrokerError,
    ConsumerStoppedError,
    ErrorCode,
    RequestTimedOutError,
    StaticMembershipUnsupportedError,
    broker_error,
)
from staticconsumer.membership import MemberState
from staticconsumer.protocol import coordinator as _coordinator  # noqa: F401  (the probe's FindCoordinator)
from staticconsumer.protocol._base import uuid_text
from staticconsumer.protocol.api_keys import api_name
from staticconsumer.runtime import MemberSnapshot
from staticconsumer.settings import rebalance_protocol_of

from . import loop_thread

if TYPE_CHECKING:
    import assignors as assignor_lib
    from staticconsumer.membership import (
        AnyMachine,
        MembershipConfig,
        MembershipObserver,
        OffsetAndMetadata,
        RebalanceProtocol,
        ReleaseReason,
        TopicPartition,
        events,
    )
    from staticconsumer.protocol import Message
    from staticconsumer.runtime import PartitionOwner, Partitions, Subscription
    from staticconsumer.settings import Settings

    from .instance_lock import InstanceLock
    from .loop import MembershipLoop
    from .topics import TopicWatch

# The probe's modules are imported above, with this module, before the thread runs.

AFTER_THE_PROBE = (
    "staticconsumer.protocol.group",
    "staticconsumer.connection.access",
    "staticconsumer.runtime.topics",
    "staticconsumer.runtime.loop",
)
"""What a start needs once the bootstrap probe has answered, in the order it needs it (the group
messages, the access check, the topic watch, the membership loop with the request table and the group's
runtime), and the protocol's machine after them: none of it is loaded by ``import staticconsumer`` or
before the probe is sent (issue 26), and ``_preload`` loads it while the probe waits on the network."""


log = logging.getLogger("staticconsumer.runtime")

MIN_VERSIONS_FOR_STATIC: Mapping[int, int] = {
    11: 5,  # JoinGroup
    14: 3,  # SyncGroup
    12: 3,  # Heartbeat
    8: 7,  # OffsetCommit
}
"""The first version of each API (by key) that carries group.instance.id (KIP-345, Kafka 2.3). Keys,
not the message classes: the check runs before the group messages are loaded (issue 26)."""

POLL_REPORT_MAX_SECONDS = 3.0
"""A poll this long after the previous one (a pause) is told to the membership thread at once, so a member
that waits for the application after a poll timeout rejoins as soon as it polls again.

Other polls wake nothing: the membership loop reads the last poll's time at its next step (a heartbeat
at the latest, or the poll deadline itself). Posting each poll woke the membership thread (a
cross-thread wakeup, a GIL handoff and a machine step): at one per 50 ms twenty times a second, and at
one a second still an idle member's largest wake-up beside its heartbeats (issue 27: idle CPU)."""

POLL_REPORT_SHARE = 0.01
"""...or this share of ``max.poll.interval.ms`` if shorter (with the default 300 s, 1 % is 3 s)."""

APPLICATION_WATCH_SECONDS = 5.0
"""How often the membership thread checks that the application's event loop still exists while the
machine does not run yet: seldom, since each check wakes an idle member's thread (an orphan then stops
within seconds, well within a session). Once it runs, every step of the membership loop checks (a
heartbeat at the latest while joined), so no timer of its own wakes the thread for it."""

APPLICATION_BACKSTOP_SECONDS = 60.0
"""How often the timer still checks while the machine runs: for states without a next step (a member
waiting for the application to poll again after max.poll.interval.ms), whose thread would otherwise
outlive an application that exited without stop()."""


async def check_static_membership_supported(
    client: Any, versions: Mapping[int, tuple[int, int]] | None = None
) -> None:
    """Refuse a broker too old to carry instance ids, rather than join silently as a dynamic member.

    ``versions``: what the bootstrap probe's broker advertised; without them a broker is asked."""
    if versions is None:
        versions = await _aiokafka.broker_versions(client, _aiokafka.any_node(client), coordination=False)
    for key, needed in MIN_VERSIONS_FOR_STATIC.items():
        offered = versions.get(key)
        if offered is None or offered[1] < needed:
            raise StaticMembershipUnsupportedError(
                f"the broker offers {api_name(key)} "
                f"{'not at all' if offered is None else f'up to v{offered[1]}'}, but group.instance.id "
                f"needs v{needed}+ (Kafka 2.3 or later). Refusing to fall back to dynamic membership "
                f"silently; unset group_instance_id to join as a dynamic member"
            )


def new_member_id() -> str:
    """A consumer-protocol member id, generated once per member as Java does (KIP-1082): a random Kafka Uuid
    in its text form, never one starting with '-' (Kafka's Uuid.randomUuid rule, so it cannot read as a
    command-line option)."""
    while True:
        text = uuid_text(uuid.uuid4())
        if not text.startswith("-"):
            return text


def _settle(verdict: concurrent.futures.Future[Exception | None]) -> Callable[[Exception | None], None]:
    """Set a commit's verdict once (the loop's answer and the thread's end may race)."""

    def settle(error: Exception | None) -> None:
        if not verdict.done():
            verdict.set_result(error)

    return settle


def _resolve(future: concurrent.futures.Future[Any], value: Any) -> None:
    """Set a start-up future unless it is settled already (or the waiting start() was cancelled)."""
    if not future.done():
        future.set_result(value)


def _fail(future: concurrent.futures.Future[Any], error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)


def _explain_session_timeout(error: BrokerError, settings: Settings) -> Exception:
    """The broker judges session.timeout.ms (as for aiokafka and Java): say which setting it refused and
    the bounds it accepts, as far as the settings know them (the brokers' defaults unless configured)."""
    configured = {"broker_min_session_timeout_ms", "broker_max_session_timeout_ms"} & set(
        settings.explicit_fields
    )
    bounds = f"{settings.broker_min_session_timeout_ms} to {settings.broker_max_session_timeout_ms} ms" + (
        " as configured here" if configured else " by default"
    )
    from staticconsumer.errors import InvalidSessionTimeoutError  # defined on first use (issue 26)

    explained = InvalidSessionTimeoutError(
        f"the brokers refused session.timeout.ms={settings.session_timeout_ms} (session_timeout_ms): it "
        f"must lie within their group.min.session.timeout.ms and group.max.session.timeout.ms ({bounds}). "
        f"Set session_timeout_ms within those bounds. ({error})"
    )
    explained.__cause__ = error
    return explained


def _probed_metadata(
    answer: _aiokafka.ProbeAnswer | None,
) -> tuple[frozenset[str], dict[str, list[_aiokafka.PartitionReplicas]]] | None:
    """The topics the bootstrap probe's Metadata answered for definitely (found, or not existing) and
    their partitions, for the membership's first join; None when the probe named no topics."""
    if answer is None:
        return None
    codes = answer.topic_errors()
    partitions = answer.topic_partitions()
    if codes is None or partitions is None:
        return None
    settled = (ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    return frozenset(t for t, c in codes.items() if c in settled), partitions


_IN_BETWEEN = frozenset({MemberState.PREPARING_REBALANCE, MemberState.COMPLETING_REBALANCE})
"""Classic states a member passes through between two assignments, owning what it owned before."""


class _OnApplicationLoop:
    """The application's PartitionOwner as the membership thread calls it: each call runs on the
    application's loop, in the order made; awaiting the result never blocks the membership loop.

    A snapshot in between two assignments (:data:`_IN_BETWEEN`: the JoinGroup answered, the SyncGroup
    not yet) that changes neither the assignment, the subscription nor the error is kept back and goes
    with the next call or snapshot, in order, rather than waking the application's thread on its own:
    nothing the application waits for changes with it (a poll waits for partitions, start() for the
    first assignment, both for an error), and in an eager rebalance that wake-up came as every member
    of the group was answered its JoinGroup at once, each on the way to its SyncGroup, while no
    partition had an owner (issue 26). ``member_id``, ``generation`` and ``is_leader`` thus change with
    the assignment, as Java's ``groupMetadata()`` does."""

    def __init__(
        self,
        owner: PartitionOwner,
        loop: asyncio.AbstractEventLoop,
        explain: Callable[[Exception], Exception] = lambda error: error,
    ) -> None:
        self._owner = owner
        self._loop = loop
        self._explain = explain
        self._sent = MemberSnapshot()
        """The last snapshot handed to the application's loop."""
        self._kept: MemberSnapshot | None = None
        """A snapshot in between kept back (see the class), handed over before the next call."""

    def _later(self, call: Callable[..., Any], *args: Any) -> None:
        self._hand_kept()
        if not self._loop.is_closed():
            self._loop.call_soon_threadsafe(call, *args)

    def _hand_kept(self) -> None:
        """The snapshot kept back, if any, ahead of the call about to be made."""
        kept, self._kept = self._kept, None
        if kept is not None and not self._loop.is_closed():
            self._sent = kept
            self._loop.call_soon_threadsafe(self._owner.membership_changed, kept)

    def _run(self, coroutine: Awaitable[Any]) -> asyncio.Future[Any]:
        """Scheduled on the application's loop now, as the call is made (not when the caller first
        awaits): the membership loop hands a rebalance's calls over in the turn that decided them, so
        the application's thread wakes once for them all (issue 26: each wake-up of the other thread is
        on the path of the next JoinGroup, or of the first fetch)."""
        self._hand_kept()
        if self._loop.is_closed():
            close = getattr(coroutine, "close", None)
            if close is not None:
                close()
            raise ConsumerStoppedError("the application's event loop is closed")
        return asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coroutine, self._loop))  # type: ignore[arg-type]

    def stop_fetching(self, partitions: Partitions | None) -> None:
        self._later(self._owner.stop_fetching, partitions)

    def revoke(
        self, partitions: Partitions, reason: ReleaseReason, collect_positions: bool
    ) -> Awaitable[dict[TopicPartition, OffsetAndMetadata]]:
        return self._run(self._owner.revoke(partitions, reason, collect_positions))

    def lose(self, partitions: Partitions, reason: ReleaseReason) -> Awaitable[None]:
        return self._run(self._owner.lose(partitions, reason))

    def assign(
        self,
        partitions: Partitions,
        owned: Partitions,
        generation: int,
        committed: Mapping[TopicPartition, int],
    ) -> Awaitable[None]:
        return self._run(self._owner.assign(partitions, owned, generation, committed))

    def membership_changed(self, snapshot: MemberSnapshot) -> None:
        sent = self._sent
        if (
            snapshot.state in _IN_BETWEEN
            and snapshot.fatal_error is None
            and snapshot.assignment == sent.assignment
            and snapshot.subscription == sent.subscription
        ):
            self._kept = snapshot  # replaces one kept before: the application would have read this next
            return
        if snapshot.fatal_error is not None:
            snapshot = msgspec.structs.replace(snapshot, fatal_error=self._explain(snapshot.fatal_error))
        self._kept = None  # this one follows it at once
        self._sent = snapshot
        self._later(self._owner.membership_changed, snapshot)


EXPLAINED_KEPT = 16
"""Explained errors remembered: a fatal error is explained once per surfacing, a commit's at most per call."""


class MembershipThread:
    """One consumer's group membership, run on the shared membership thread. Used from the application's
    loop."""

    def __init__(
        self,
        *,
        settings: Settings,
        owner: PartitionOwner,
        assignors: Sequence[assignor_lib.Assignor],
        subscription: Subscription,
        rebalance_protocol: RebalanceProtocol | None = None,
        observers: Sequence[MembershipObserver] = (),
        on_request: Callable[[str, int, Message], None] | None = None,
        version_caps: Mapping[str, int] | None = None,
        closers: Sequence[Callable[[], Awaitable[None]]] = (),
        monitor: connection.ConnectionMonitor | None = None,
        reconnect_backoff: ReconnectBackoff | None = None,
    ) -> None:
        self._settings = settings
        self._monitor = monitor
        self._reconnect_backoff = reconnect_backoff or ReconnectBackoff(
            settings.reconnect_backoff_ms, settings.reconnect_backoff_max_ms
        )
        """Shared with the consumer's fetcher: one reconnect attempt per broker per wait, not per client."""
        self._owner = owner
        self._assignors = tuple(assignors)
        self._subscription = subscription
        self._rebalance_protocol = rebalance_protocol or rebalance_protocol_of(self._assignors)
        """Chosen once, from the assignors, as Java's ConsumerCoordinator chooses it."""
        self._observers = tuple(observers)
        self._on_request = on_request
        self._version_caps = dict(version_caps or {})
        self._closers = tuple(closers)
        self._member_id = new_member_id() if settings.group_protocol == "consumer" else None
        """KIP-1082: the client's own member id, for the life of this consumer (consumer protocol)."""
        self._instance_lock: InstanceLock | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._membership: MembershipLoop | None = None
        self._ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._answered: concurrent.futures.Future[tuple[str, _aiokafka.ProbeAnswer | None]] = (
            concurrent.futures.Future()
        )
        self._done: concurrent.futures.Future[Exception | None] = concurrent.futures.Future()
        self._verdicts: set[concurrent.futures.Future[Exception | None]] = set()
        self._polled_at = float("-inf")
        """When the application last polled; read by the membership loop at each of its steps."""
        self._poll_report_interval = min(
            POLL_REPORT_MAX_SECONDS, settings.max_poll_interval_ms / 1000 * POLL_REPORT_SHARE
        )
        self._app_loop: asyncio.AbstractEventLoop | None = None
        self._orphan_stopped = False
        self._client: Any = None
        self._running = False
        """The machine runs (it waits for a first subscription when started without one)."""
        self._subscribed: asyncio.Event | None = None
        self._stop_early: asyncio.Event | None = None
        self._set_up = False
        """Bootstrap and access checks done (membership thread writes, once): before that, nothing has
        joined, so nothing needs a graceful stop."""
        self._ending = False
        """The thread's run is closing what it was given (membership thread writes): let it finish."""
        self._cancelled = False
        """stop() cancelled the thread's run (read by the thread at its start and its end)."""
        self._topic_watch: TopicWatch | None = None
        self._explained: dict[int, tuple[Exception, Exception]] = {}
        """Errors already explained, so one error raises one exception wherever it surfaces; both threads
        explain errors, so it is read and written under ``_explained_lock`` and keeps the last few only."""
        self._explained_lock = threading.Lock()
        self.bootstrapped_from: str | None = None
        """The bootstrap server that answered first (``host:port``), once started."""
        self._finished: loop_thread.Finished | None = None
        """Set once the run on the shared membership thread has ended and reaped its tasks."""

    # -- the application's side ---------------------------------------------------------------------

    async def start(self) -> None:
        """Start the run on the membership thread and wait until it has bootstrapped and checked access
        (its errors are raised here)."""
        app_loop = asyncio.get_running_loop()
        self._owner = _OnApplicationLoop(self._owner, app_loop, self._explain)
        self._app_loop = app_loop
        self._finished = loop_thread.submit(self._main)
        await asyncio.wrap_future(self._ready)

    async def _preload(self) -> None:
        """Load what the start needs after its bootstrap probe (``AFTER_THE_PROBE``) and this protocol's
        machine, on the membership thread's loop while the probe waits for its answers: their import
        (~9 ms of CPU, ~25 modules, none loaded by ``import staticconsumer``) then fills the probe's round
        trips instead of following them on the way to the join. One module per turn of the loop, so an
        answer waits for one import at most. On this thread, not the application's: one thread imports
        at a time, so the two never contend for the GIL over imports (and never import at once, which
        fails under pytest's assertion rewriting, which parses our modules: CPython 3.11 keeps one AST
        recursion depth per interpreter)."""
        modules: tuple[str, ...] = (*AFTER_THE_PROBE, "staticconsumer.membership.classic")
        if self._settings.group_protocol == "consumer":
            modules = (
                "staticconsumer.broker_support",
                *AFTER_THE_PROBE,
                "staticconsumer.runtime.instance_lock",
                "staticconsumer.membership.consumer_group",
            )
        for module in modules:
            await asyncio.sleep(0)
            importlib.import_module(module)

    async def bootstrapped(self) -> tuple[str, _aiokafka.ProbeAnswer | None]:
        """The bootstrap server that answered (``host:port``) and its probe's metadata, as soon as it did
        (before the access check), so the fetcher can bootstrap meanwhile without a connection of its
        own; raises what ended the start before it."""
        return await asyncio.wrap_future(self._answered)

    @property
    def snapshot(self) -> MemberSnapshot:
        membership = self._membership
        return membership.snapshot if membership is not None else MemberSnapshot()

    async def ended(self) -> Exception | None:
        """Wait until the membership has ended (the fatal error that ended it, if any)."""
        return await asyncio.shield(asyncio.wrap_future(self._done))

    @property
    def started(self) -> bool:
        """The run was started (it then closes what it was given to close, whatever happens)."""
        return self._finished is not None

    def _call(self, call: Callable[..., None], *args: Any) -> None:
        loop = self._loop
        if loop is None or self._done.done() or loop.is_closed():
            raise ConsumerStoppedError("the consumer's membership has stopped")
        loop.call_soon_threadsafe(call, *args)

    def _post(self, event: events.Event) -> None:
        membership = self._membership
        assert membership is not None
        self._call(membership.post, event)

    @property
    def missing_topics(self) -> frozenset[str]:
        """Subscribed topics that did not exist at the last check."""
        watch = self._topic_watch
        return watch.missing.missing if watch is not None else frozenset()

    def poll_called(self) -> None:
        """The application polled: noted for the membership loop's next step, and posted at once after a
        pause (see POLL_REPORT_MAX_SECONDS)."""
        now = time.monotonic()
        if not self._running:
            return  # no machine yet (nothing subscribed): there is no poll deadline to keep
        previous, self._polled_at = self._polled_at, now
        if now - previous >= self._poll_report_interval:
            from staticconsumer.membership.events import PollCalled

            self._post(PollCalled(now=now))

    async def commit(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata], caller: object | None = None
    ) -> None:
        """Commit and wait for the verdict; raises what the machine decided (fenced, rebalancing, ...).
        ``caller`` (the application's trace context) is handed to the observers with the request."""
        membership = self._membership
        assert membership is not None
        verdict: concurrent.futures.Future[Exception | None] = concurrent.futures.Future()
        self._verdicts.add(verdict)
        verdict.add_done_callback(self._verdicts.discard)
        self._call(membership.begin_commit, dict(offsets), _settle(verdict), caller)
        error = await asyncio.wrap_future(verdict)
        if error is not None:
            raise self._explain(error, frozenset(tp.topic for tp in offsets))

    async def committed(self, partitions: frozenset[TopicPartition]) -> Mapping[TopicPartition, int]:
        """The group's committed offsets of ``partitions`` (-1: none), within request.timeout.ms."""
        loop = self._loop
        if loop is None or self._membership is None or self._done.done() or loop.is_closed():
            raise ConsumerStoppedError("the consumer's membership has stopped")
        answer = asyncio.run_coroutine_threadsafe(self._committed(partitions), loop)
        try:
            return await asyncio.wrap_future(answer)
        except asyncio.CancelledError:
            answer.cancel()
            raise

    async def _committed(self, partitions: frozenset[TopicPartition]) -> Mapping[TopicPartition, int]:
        membership = self._membership
        assert membership is not None
        settings = self._settings
        try:
            async with asyncio.timeout(settings.request_timeout_ms / 1000):
                if self._running:
                    return await membership.committed(partitions)
                # no machine yet, so no coordinator: look it up
                answer = await _aiokafka.find_coordinator(self._client, settings.group_id)
                if answer.error_code != ErrorCode.NONE:
                    raise self._explain(
                        broker_error(answer.error_code, f"FindCoordinator for group {settings.group_id!r}")
                    )
                from .offsets import fetch_committed

                return await fetch_committed(
                    self._client,
                    settings.group_id,
                    partitions,
                    coordinator=lambda: answer.node_id,
                    coordinator_moved=lambda: None,
                    backoff=membership.machine.backoff,
                    request_timeout_ms=settings.request_timeout_ms,
                )
        except TimeoutError:
            raise RequestTimedOutError(
                f"the committed offsets of group {settings.group_id!r} could not be read within "
                f"request.timeout.ms ({settings.request_timeout_ms} ms): its coordinator did not answer"
            ) from None

    def change_subscription(self, topics: frozenset[str], pattern: str | None, reason: str) -> None:
        """Subscribe to other topics or another pattern (``consumer.subscribe``/``unsubscribe``) and
        rejoin with them. The Subscription is replaced on the membership thread, which reads it."""
        if self._loop is None:  # the thread has not started running: it reads the subscription later
            self._subscription.replace(topics, pattern)
            return
        self._call(self._subscription_changed, topics, pattern, reason)

    def _subscription_changed(self, topics: frozenset[str], pattern: str | None, reason: str) -> None:
        self._subscription.replace(topics, pattern)
        if self._monitor is not None:
            self._monitor.watch_topics(topics)
        if self._topic_watch is not None:
            self._topic_watch.wake()
        if self._running and self._membership is not None:
            self._membership.resubscribe(reason)
        elif self._subscribed is not None and not self._subscription.is_empty:
            self._subscribed.set()

    def _explain(self, error: Exception, topics: frozenset[str] | None = None) -> Exception:
        """Authorization failures from the membership, with the missing ACL named, and a refused session
        timeout with the setting and the brokers' bounds (the same object for the same error, so every
        later call raises one exception). ``topics``: those the failed request named (a commit's), else
        the subscription's."""
        with self._explained_lock:
            known = self._explained.get(id(error))
        if known is not None and known[0] is error:
            return known[1]
        named = self._subscription.topics if topics is None else topics
        # The code, not the class: InvalidSessionTimeoutError is defined only once a broker has refused.
        if isinstance(error, BrokerError) and error.code == ErrorCode.INVALID_SESSION_TIMEOUT:
            explained: Exception = _explain_session_timeout(error, self._settings)
        else:
            group = self._settings.group_id
            explained = connection.explain_authorization(error, self._settings, group, named)
        if explained is not error:
            with self._explained_lock:
                known = self._explained.setdefault(id(error), (error, explained))
                if known[0] is not error:  # an id reused by a newer error after the old one died
                    self._explained[id(error)] = known = (error, explained)
                while len(self._explained) > EXPLAINED_KEPT:
                    del self._explained[next(iter(self._explained))]
            return known[1]
        return explained

    def _report_topics(self, change: connection.TopicsChange) -> None:
        from staticconsumer.telemetry.topics import report_missing_topics  # only when it happens

        report_missing_topics(
            self._observers,
            group_id=self._settings.group_id,
            missing=change.missing,
            newly_missing=change.newly_missing,
            appeared=change.appeared,
        )

    def _unrecoverable(self, error: Exception) -> None:
        membership = self._membership
        if membership is not None:
            from staticconsumer.membership.events import Unrecoverable

            membership.post(Unrecoverable(now=time.monotonic(), error=error))

    def update_subscription(self, reason: str) -> None:
        """The subscription changed: rejoin with the new metadata."""
        membership = self._membership
        assert membership is not None
        self._call(membership.update_protocols, reason)

    async def stop(self, leave_group: bool, grace_seconds: float) -> Exception | None:
        """Stop membership (a static member leaves only with ``leave_group``) and join the thread.

        Gives up on a graceful stop after ``grace_seconds`` and cancels the membership; returns the
        fatal error that ended it earlier, if any.
        """
        if not self._set_up:  # still bootstrapping (start() cancelled or failed): nothing joined yet
            if not self._ending:
                self._cancel_run()
        elif self._membership is not None and not self._done.done():
            with contextlib.suppress(ConsumerStoppedError):
                self._call(self._begin_stop, leave_group)
        try:
            return await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(self._done)), grace_seconds)
        except TimeoutError:
            log.warning("membership did not stop within request.timeout.ms; abandoning it")
            self._cancel_run()
            with contextlib.suppress(TimeoutError):
                return await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(self._done)), grace_seconds)
            return None
        finally:
            finished = self._finished
            if finished is not None:
                with contextlib.suppress(TimeoutError):
                    waiting = asyncio.shield(asyncio.wrap_future(finished))
                    ended = await asyncio.wait_for(waiting, grace_seconds)
                    await loop_thread.join_if_last(ended, grace_seconds)

    def _cancel_run(self) -> None:
        """Cancel the thread's run, now if its loop runs, else as soon as it starts."""
        self._cancelled = True
        loop, task = self._loop, self._task
        if loop is not None and task is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(task.cancel)

    # -- the membership thread ----------------------------------------------------------------------

    async def _main(self) -> None:
        """This consumer's run: a task of its own on the shared membership thread (loop_thread.py)."""
        error: Exception | None = None
        owning = self._monitor.owning() if self._monitor is not None else contextlib.nullcontext()
        try:
            with owning:  # this run's tasks (its clients') are this consumer's: their failures are its own
                await self._run()
        except BaseException as failure:  # the run must always report its end
            if not (self._cancelled and isinstance(failure, asyncio.CancelledError)):
                log.exception("the membership of group %s failed", self._settings.group_id)
            error = failure if isinstance(failure, Exception) else None
            _fail(self._ready, failure)
            _fail(self._answered, failure)
        finally:
            membership = self._membership
            if membership is not None and error is None:
                error = membership.stop_error
            for verdict in list(self._verdicts):  # commits posted while the loop was ending
                _settle(verdict)(error or ConsumerStoppedError("the consumer's membership has stopped"))
            if self._orphan_stopped and self._monitor is not None:
                # No stop() will come to close it: its process-wide log filter would otherwise fold other
                # consumers' aiokafka records under this consumer's name for the life of the process.
                self._monitor.close()
            self._done.set_result(error)

    async def _run(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        if self._cancelled:  # stop() came before this loop existed
            raise asyncio.CancelledError
        self._subscribed = asyncio.Event()
        self._stop_early = asyncio.Event()
        settings = self._settings
        client = self._client = _aiokafka.new_client(
            max_response_bytes=settings.response_limits()[0],
            reconnect_backoff=self._reconnect_backoff,
            **settings.aiokafka_client_kwargs(),
        )
        tasks: list[asyncio.Future[Any]] = []
        try:
            try:
                # Typed errors that say why (refused, silent, credentials, ACLs), within request.timeout.ms.
                named = self._subscription.named
                preloading = asyncio.ensure_future(self._preload())  # runs while the probe waits
                tasks.append(preloading)
                self.bootstrapped_from, answer = await connection.bootstrap_answered(
                    # the membership client asks for the partitions it needs itself: the probe's brokers
                    # only (a fleet's 600-partition topic applied cost ~0.6 ms of every start, issue 27)
                    client,
                    settings,
                    topics=named,
                    group_id=settings.group_id,
                    adopt_topics=False,
                    keep_connection=True,
                )
                kept = answer
                if answer is not None:  # its connection stays on this loop: the fetcher gets none
                    answer = msgspec.structs.replace(answer, connection=None)
                _resolve(self._answered, (self.bootstrapped_from, answer))
                found = answer.coordinator if answer is not None else None
                joins_on: int | None = None
                """The coordinator the join's connection is open (or opening) to."""
                if found is not None and found.error_code == ErrorCode.NONE:
                    joins_on = found.node_id
                    if kept is not None and _aiokafka.adopt_connection(client, kept, found.node_id):
                        kept = None  # the probe reached the coordinator: the join sends on its connection
                    else:
                        # The join's connection opens now, before the access check and the machine's
                        # set-up, not after them: its TCP handshake runs meanwhile (an RTT off a remote
                        # broker's restart) and, if the preload is still loading, its ApiVersions too. Best
                        # effort: the join connects itself (aiokafka waits for this attempt rather than
                        # open another).
                        tasks.append(asyncio.ensure_future(_aiokafka.open_early(client, found.node_id)))
                        await asyncio.sleep(0)  # the attempt starts (its connect is sent) before we go on
                if kept is not None:
                    kept.close_connection()
                await preloading  # AFTER_THE_PROBE: loaded while the probe waited
                from .topics import TopicWatch

                if settings.group_protocol == "consumer":
                    # A clear error naming the broker's release rather than a refusal at the first heartbeat;
                    # the coordinator itself is checked again by every heartbeat (requests.py). Loaded
                    # here: a classic member never needs it.
                    from staticconsumer.broker_support import (
                        check_consumer_protocol,
                        ensure_consumer_protocol,
                    )

                    if answer is not None and answer.versions is not None:
                        check_consumer_protocol(answer.versions)
                    else:
                        await ensure_consumer_protocol(client, _aiokafka.any_node(client))
                elif settings.group_instance_id is not None:
                    # The probe's ApiVersions answer: no connection of its own, so a connection that fails
                    # here (a broker restarting, a token refused) cannot end the start; the membership
                    # loop retries those.
                    await check_static_membership_supported(
                        client, answer.versions if answer is not None else None
                    )
                watch = self._topic_watch = TopicWatch(
                    client=client,
                    settings=settings,
                    subscription=self._subscription,
                    report=self._report_topics,
                )
                access = await connection.check_access(
                    client,
                    settings,
                    topics=sorted(named),
                    group_id=settings.group_id,
                    topic_codes=answer.topic_errors() if answer is not None else None,
                    # the classic JoinGroup's own refusal is explained alike: no DescribeGroups first
                    describe_group=settings.group_protocol == "consumer",
                    coordinator_answer=answer.coordinator if answer is not None else None,
                )
                if access.coordinator is not None and access.coordinator.node_id != joins_on:
                    # The join's connection (TCP, ApiVersions) opens while the machine starts and the
                    # revoke callback crosses to the application's loop, not after them.
                    tasks.append(
                        asyncio.ensure_future(_aiokafka.open_early(client, access.coordinator.node_id))
                    )
                watch.started(access.missing_topics)  # MissingTopicsError with fail_on_missing_topics
                from .loop import MembershipLoop  # loaded on the membership thread, not at import

                self._membership = MembershipLoop(
                    machine=self._new_machine(),
                    client=client,
                    owner=self._owner,
                    assignors=self._assignors,
                    topics=self._subscription,
                    client_rack=settings.client_rack,
                    auto_commit_on_revoke=settings.enable_auto_commit,
                    on_request=self._on_request,
                    observers=self._observers,
                    metadata_refresh_ms=settings.metadata_max_age_ms,
                    version_caps=self._version_caps,
                    known_coordinator=access.coordinator,
                    polled=self._at_step,
                    known_metadata=_probed_metadata(answer),
                    known_topic_ids=answer.topic_ids() if answer is not None else None,
                )
            except BaseException as error:
                _fail(self._ready, error)
                _fail(self._answered, error)
                return
            if self._monitor is not None:
                self._monitor.watch(client)
                self._monitor.watch_topics(named)
                self._monitor.install()
                tasks.append(asyncio.ensure_future(self._monitor.run(client, watch_lag=False)))
            if settings.group_protocol == "consumer":
                log.info(
                    "group %s: consumer group protocol, the broker assigns (remote assignor %s)",
                    settings.group_id,
                    settings.group_remote_assignor or "the broker's default",
                )
            else:
                log.info(
                    "group %s: %s rebalance protocol (assignors %s)",
                    settings.group_id,
                    self._rebalance_protocol.value,
                    ", ".join(a.name for a in self._assignors),
                )
            self._set_up = True
            _resolve(self._ready, None)
            tasks.append(asyncio.ensure_future(self._watch_application()))
            if self._subscription.is_empty and not await self._first_subscription():
                return
            tasks.append(asyncio.ensure_future(watch.run(self._unrecoverable)))
            self._running = True
            try:
                await self._membership.run()
            finally:
                self._running = False
        finally:
            self._ending = True
            for task in tasks:
                task.cancel()
            for close in self._closers:
                try:
                    await close()
                except Exception:
                    log.exception("closing %r at the end of membership failed", close)
            with contextlib.suppress(Exception):
                await client.close()
            if self._instance_lock is not None:
                self._instance_lock.release()

    def _membership_config(self) -> MembershipConfig:
        """The machine's view of the settings, with the runtime's codecs (loaded after the probe)."""
        from staticconsumer.membership.types import MembershipConfig
        from staticconsumer.protocol.consumer import subscribed_topics

        from .loop import decode_assignment

        return MembershipConfig.from_settings(
            self._settings, decode_assignment=decode_assignment, decode_subscription=subscribed_topics
        )

    def _new_machine(self) -> AnyMachine:
        from staticconsumer.membership.machine import new_machine

        settings = self._settings
        if settings.group_protocol != "consumer":
            return new_machine(self._membership_config(), self._rebalance_protocol)
        assert self._member_id is not None
        evidence = None
        if settings.group_instance_id is not None:
            from .instance_lock import InstanceLock

            self._instance_lock = InstanceLock.acquire(
                cluster=",".join(sorted(settings.bootstrap_servers)),
                group=settings.group_id,
                instance_id=settings.group_instance_id,
                member_id=self._member_id,
            )
            evidence = self._instance_lock.evidence
        log.info(
            "group %s: consumer protocol (KIP-848), member id %s%s",
            settings.group_id,
            self._member_id,
            "" if settings.group_instance_id is None else f", instance id {settings.group_instance_id}",
        )
        return new_machine(
            self._membership_config(),
            group_protocol="consumer",
            member_id=self._member_id,
            evidence=evidence,
        )

    async def _first_subscription(self) -> bool:
        """Started before subscribe() (as aiokafka allows): join only once there is something to join
        with, since a static member that joined with nothing and then rejoined would rebalance its group.
        False when stopped first."""
        assert self._subscribed is not None
        assert self._stop_early is not None
        subscribed = asyncio.ensure_future(self._subscribed.wait())
        stopped = asyncio.ensure_future(self._stop_early.wait())
        await asyncio.wait({subscribed, stopped}, return_when=asyncio.FIRST_COMPLETED)
        subscribed.cancel()
        stopped.cancel()
        return not self._stop_early.is_set()

    def _begin_stop(self, leave_group: bool) -> None:
        """Stop the machine, or, if it never started (nothing was subscribed), end at once."""
        if self._running and self._membership is not None:
            self._membership.stop(leave_group)
        elif self._stop_early is not None:
            self._stop_early.set()

    async def _watch_application(self) -> None:
        """An application that exits without stop() leaves no orphan member heartbeating forever."""
        while True:
            await asyncio.sleep(APPLICATION_BACKSTOP_SECONDS if self._running else APPLICATION_WATCH_SECONDS)
            if self._orphaned():
                return

    def _at_step(self) -> float:
        """Read by the membership loop at each step: when the application last polled. An application
        loop closed without stop() is noticed here too (see APPLICATION_WATCH_SECONDS)."""
        self._orphaned()
        return self._polled_at

    def _orphaned(self) -> bool:
        """Whether the application's event loop closed without stop(): then the membership stops (once)."""
        app_loop = self._app_loop
        if app_loop is None or not app_loop.is_closed() or self._membership is None:
            return False
        if not self._orphan_stopped:
            self._orphan_stopped = True
            log.warning("the application's event loop closed without stop(); stopping membership")
            self._begin_stop(leave_group=False)
        return True

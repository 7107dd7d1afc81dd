"""The thread boundary: group membership runs on a thread of its own, with its own event loop and its own
coordinator connection, as the Java client's heartbeat thread does.

An application that blocks its event loop (CPU-heavy batches, a synchronous call) therefore never delays
a heartbeat: it can lose its partitions to max.poll.interval.ms, as in Java, but not its place in the
group. Everything that crosses the boundary crosses here, and nothing that crosses blocks either loop:

* application -> membership: ``poll_called``, ``commit``, ``stop``, ``update_subscription`` post events
  with ``call_soon_threadsafe``; results come back as concurrent futures the application awaits;
* membership -> application: every PartitionOwner call is scheduled on the application's loop, in
  order (``call_soon_threadsafe`` / ``run_coroutine_threadsafe``), and the membership side awaits the
  callbacks' results without holding anything up in the meantime (heartbeats go on);
* the member's identity and fatal error are published as an immutable MemberSnapshot.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import assignors as assignor_lib
from staticconsumer import _aiokafka
from staticconsumer.errors import ConsumerStoppedError, StaticMembershipUnsupportedError
from staticconsumer.membership import (
    MembershipConfig,
    MembershipObserver,
    OffsetAndMetadata,
    RebalanceProtocol,
    ReleaseReason,
    TopicPartition,
    events,
    new_machine,
)
from staticconsumer.protocol import (
    HeartbeatRequest,
    JoinGroupRequest,
    Message,
    OffsetCommitRequest,
    SyncGroupRequest,
    subscribed_topics,
)
from staticconsumer.settings import Settings

from .loop import MembershipLoop, decode_assignment
from .owner import MemberSnapshot, PartitionOwner, Partitions
from .subscription import Subscription

log = logging.getLogger("staticconsumer.runtime")

MIN_VERSIONS_FOR_STATIC: Mapping[type[Message], int] = {
    JoinGroupRequest: 5,
    SyncGroupRequest: 3,
    HeartbeatRequest: 3,
    OffsetCommitRequest: 7,
}
"""The first version of each API that carries group.instance.id (KIP-345, Kafka 2.3)."""

POLL_REPORT_INTERVAL = 0.05
"""Seconds between two PollCalled events; a poll in between changes nothing the machine decides."""

APPLICATION_WATCH_SECONDS = 1.0
"""How often the membership thread checks that the application's event loop still exists."""


async def check_static_membership_supported(client: Any) -> None:
    """Refuse a broker too old to carry instance ids, rather than join silently as a dynamic member."""
    versions = await _aiokafka.broker_versions(client, _aiokafka.any_node(client), coordination=False)
    for message, needed in MIN_VERSIONS_FOR_STATIC.items():
        offered = versions.get(message.API_KEY)
        if offered is None or offered[1] < needed:
            raise StaticMembershipUnsupportedError(
                f"the broker offers {message.API_NAME} "
                f"{'not at all' if offered is None else f'up to v{offered[1]}'}, but group.instance.id "
                f"needs v{needed}+ (Kafka 2.3 or later). Refusing to fall back to dynamic membership "
                f"silently; unset group_instance_id to join as a dynamic member"
            )


def _settle(verdict: concurrent.futures.Future[Exception | None]) -> Callable[[Exception | None], None]:
    """Set a commit's verdict once (the loop's answer and the thread's end may race)."""

    def settle(error: Exception | None) -> None:
        if not verdict.done():
            verdict.set_result(error)

    return settle


class _OnApplicationLoop:
    """The application's PartitionOwner as the membership thread calls it: each call runs on the
    application's loop, in the order made; awaiting the result never blocks the membership loop."""

    def __init__(self, owner: PartitionOwner, loop: asyncio.AbstractEventLoop) -> None:
        self._owner = owner
        self._loop = loop

    def _later(self, call: Callable[..., Any], *args: Any) -> None:
        if not self._loop.is_closed():
            self._loop.call_soon_threadsafe(call, *args)

    async def _run(self, coroutine: Awaitable[Any]) -> Any:
        if self._loop.is_closed():
            close = getattr(coroutine, "close", None)
            if close is not None:
                close()
            raise ConsumerStoppedError("the application's event loop is closed")
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coroutine, self._loop))  # type: ignore[arg-type]

    def stop_fetching(self, partitions: Partitions | None) -> None:
        self._later(self._owner.stop_fetching, partitions)

    async def revoke(
        self, partitions: Partitions, reason: ReleaseReason, collect_positions: bool
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        result: dict[TopicPartition, OffsetAndMetadata] = await self._run(
            self._owner.revoke(partitions, reason, collect_positions)
        )
        return result

    async def lose(self, partitions: Partitions, reason: ReleaseReason) -> None:
        await self._run(self._owner.lose(partitions, reason))

    async def assign(
        self,
        partitions: Partitions,
        owned: Partitions,
        generation: int,
        committed: Mapping[TopicPartition, int],
    ) -> None:
        await self._run(self._owner.assign(partitions, owned, generation, committed))

    def membership_changed(self, snapshot: MemberSnapshot) -> None:
        self._later(self._owner.membership_changed, snapshot)


class MembershipThread:
    """One consumer's group membership, on a thread of its own. Used from the application's loop."""

    def __init__(
        self,
        *,
        settings: Settings,
        owner: PartitionOwner,
        assignors: Sequence[assignor_lib.Assignor],
        subscription: Subscription,
        rebalance_protocol: RebalanceProtocol = RebalanceProtocol.EAGER,
        observers: Sequence[MembershipObserver] = (),
        on_request: Callable[[str, int, Message], None] | None = None,
        version_caps: Mapping[str, int] | None = None,
        closers: Sequence[Callable[[], Awaitable[None]]] = (),
    ) -> None:
        self._settings = settings
        self._owner = owner
        self._assignors = tuple(assignors)
        self._subscription = subscription
        self._rebalance_protocol = rebalance_protocol
        self._observers = tuple(observers)
        self._on_request = on_request
        self._version_caps = dict(version_caps or {})
        self._closers = tuple(closers)
        self._config = MembershipConfig.from_settings(
            settings, decode_assignment=decode_assignment, decode_subscription=subscribed_topics
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._membership: MembershipLoop | None = None
        self._ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._done: concurrent.futures.Future[Exception | None] = concurrent.futures.Future()
        self._verdicts: set[concurrent.futures.Future[Exception | None]] = set()
        self._last_poll_posted = float("-inf")
        self._app_loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(
            target=self._main, name=f"staticconsumer-membership-{settings.group_id}", daemon=True
        )

    # -- the application's side ---------------------------------------------------------------------

    async def start(self) -> None:
        """Start the thread and wait until it has bootstrapped (its errors are raised here)."""
        app_loop = asyncio.get_running_loop()
        self._owner = _OnApplicationLoop(self._owner, app_loop)
        self._app_loop = app_loop
        self._thread.start()
        await asyncio.wrap_future(self._ready)

    @property
    def snapshot(self) -> MemberSnapshot:
        membership = self._membership
        return membership.snapshot if membership is not None else MemberSnapshot()

    @property
    def started(self) -> bool:
        """The thread ran (it then closes what it was given to close, whatever happens)."""
        return self._thread.ident is not None

    def _call(self, call: Callable[..., None], *args: Any) -> None:
        loop = self._loop
        if loop is None or self._done.done() or loop.is_closed():
            raise ConsumerStoppedError("the consumer's membership has stopped")
        loop.call_soon_threadsafe(call, *args)

    def _post(self, event: events.Event) -> None:
        membership = self._membership
        assert membership is not None
        self._call(membership.post, event)

    def poll_called(self) -> None:
        """The application polled: told to the membership at most every 50 ms (max.poll.interval: minutes)."""
        now = time.monotonic()
        if now - self._last_poll_posted >= POLL_REPORT_INTERVAL:
            self._last_poll_posted = now
            self._post(events.PollCalled(now=now))

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
            raise error

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
        if self._membership is not None and not self._done.done():
            with contextlib.suppress(ConsumerStoppedError):
                self._call(self._membership.stop, leave_group)
        try:
            return await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(self._done)), grace_seconds)
        except TimeoutError:
            log.warning("membership did not stop within request.timeout.ms; abandoning it")
            loop, task = self._loop, self._task
            if loop is not None and task is not None and not loop.is_closed():
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(task.cancel)
            with contextlib.suppress(TimeoutError):
                return await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(self._done)), grace_seconds)
            return None
        finally:
            await asyncio.to_thread(self._thread.join, grace_seconds)

    # -- the membership thread ----------------------------------------------------------------------

    def _main(self) -> None:
        error: Exception | None = None
        try:
            asyncio.run(self._run())
        except BaseException as failure:  # the thread must always report its end
            log.exception("the membership thread of group %s failed", self._settings.group_id)
            error = failure if isinstance(failure, Exception) else None
            if not self._ready.done():
                self._ready.set_exception(failure)
        finally:
            membership = self._membership
            if membership is not None and error is None:
                error = membership.stop_error
            for verdict in list(self._verdicts):  # commits posted while the loop was ending
                _settle(verdict)(error or ConsumerStoppedError("the consumer's membership has stopped"))
            self._done.set_result(error)

    async def _run(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        settings = self._settings
        client = _aiokafka.new_client(
            max_response_bytes=settings.response_limits()[0], **settings.aiokafka_client_kwargs()
        )
        try:
            try:
                await client.bootstrap()
                if settings.group_instance_id is not None:
                    await check_static_membership_supported(client)
                self._membership = MembershipLoop(
                    machine=new_machine(self._config, self._rebalance_protocol),
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
                )
            except BaseException as error:
                self._ready.set_exception(error)
                return
            self._ready.set_result(None)
            watch = asyncio.ensure_future(self._watch_application())
            try:
                await self._membership.run()
            finally:
                watch.cancel()
        finally:
            for close in self._closers:
                try:
                    await close()
                except Exception:
                    log.exception("closing %r at the end of membership failed", close)
            with contextlib.suppress(Exception):
                await client.close()

    async def _watch_application(self) -> None:
        """An application that exits without stop() leaves no orphan member heartbeating forever."""
        while True:
            await asyncio.sleep(APPLICATION_WATCH_SECONDS)
            app_loop = self._app_loop
            if app_loop is not None and app_loop.is_closed() and self._membership is not None:
                log.warning("the application's event loop closed without stop(); stopping membership")
                self._membership.stop(leave_group=False)
                return

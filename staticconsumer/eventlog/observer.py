"""Turns membership machine steps into event log records (a ``MembershipObserver``).

The machine already says everything worth logging: its protocol-neutral milestones and the actions it
returned. So the log is derived from those, on the membership thread, without a second source of truth,
and reads every group protocol the same way. The
observer is cheap (a few attribute reads and one encode per record) and never raises into the driver.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from staticconsumer.errors import ConfigurationError, ErrorCode, FencedInstanceIdError
from staticconsumer.membership import MemberView, TopicPartition, actions, events
from staticconsumer.membership.observe import HeartbeatFailed, Joined, JoinStarted, Leaving, Milestone

from . import schema
from .sinks import KafkaSink, RotatingFileSink, Sink

if TYPE_CHECKING:
    from staticconsumer.settings import Settings

log = logging.getLogger("staticconsumer.eventlog")


def _partitions(partitions: Iterable[TopicPartition]) -> list[schema.Partition]:
    return [schema.Partition(tp.topic, tp.partition) for tp in sorted(partitions)]


def _code_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"ERROR_{code}"


class EventLog:
    """A ``MembershipObserver`` that writes one record per membership fact to every sink.

    ``dropped`` is the running total of records the sinks could not keep; the same number is logged
    as a ``dropped`` record at most every ``drop_report_seconds`` (and at stop) whenever it grew.
    """

    def __init__(
        self,
        sinks: Sequence[Sink],
        *,
        drop_report_seconds: float = 60.0,
        clock: Callable[[], float] = time.time,
        session: str | None = None,
    ) -> None:
        self.sinks = tuple(sinks)
        self.session = session or uuid.uuid4().hex[:16]
        self.drop_report_seconds = drop_report_seconds
        self._clock = clock
        self._seq = 0
        self._joined_once = False
        self._leader = ""
        self._skip_assignment = False
        self._rebalance_protocol: str | None = None
        self._reported: dict[str, int] = {}
        self._last_report: float | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> EventLog | None:
        """The event log the settings ask for, or None when neither a path nor a topic is set."""
        if not settings.event_log_path and not settings.event_log_topic:
            return None
        session = uuid.uuid4().hex[:16]
        sinks: list[Sink] = []
        if settings.event_log_path:
            try:
                path = settings.event_log_path.format(
                    group=settings.group_id,
                    instance=settings.group_instance_id or "dynamic",
                    pid=os.getpid(),
                    session=session,
                )
            except (KeyError, IndexError, ValueError) as error:
                raise ConfigurationError(
                    f"staticconsumer.event.log.path={settings.event_log_path!r}: only {{group}}, "
                    f"{{instance}}, {{pid}} and {{session}} can be filled in ({error!r})"
                ) from None
            sinks.append(RotatingFileSink(path, settings.event_log_max_bytes, settings.event_log_backups))
        if settings.event_log_topic:
            kwargs = settings.aiokafka_client_kwargs()
            kwargs["client_id"] = f"{kwargs['client_id']}-eventlog"
            sinks.append(KafkaSink(settings.event_log_topic, kwargs, settings.event_log_buffer_records))
        return cls(sinks, drop_report_seconds=settings.event_log_drop_report_ms / 1000, session=session)

    @property
    def dropped(self) -> int:
        """Records dropped by all sinks so far (never reset)."""
        return sum(sink.dropped for sink in self.sinks)

    # -- MembershipObserver ------------------------------------------------------------------

    def observe(self, event: events.Event, produced: Sequence[actions.Action], machine: MemberView) -> None:
        if isinstance(event, events.Start):
            self._emit(schema.Joining, machine)
        for milestone in machine.milestones:
            self._on_milestone(milestone, machine)
        for action in produced:
            self._on_action(action, machine)
        self._maybe_report_drops(machine, force=any(isinstance(a, actions.Stopped) for a in produced))

    def _on_milestone(self, milestone: Milestone, machine: MemberView) -> None:
        if isinstance(milestone, JoinStarted):
            if self._joined_once:
                self._emit(schema.Rejoin, machine, reason=milestone.reason)
            self._joined_once = True
        elif isinstance(milestone, Joined):
            self._leader = milestone.leader_id
            self._skip_assignment = milestone.assignment_skipped
            self._rebalance_protocol = milestone.rebalance_protocol
        elif isinstance(milestone, HeartbeatFailed):
            self._emit(
                schema.HeartbeatFailed,
                machine,
                error=_code_name(milestone.error_code),
                code=milestone.error_code,
            )
        elif isinstance(milestone, Leaving):
            self._emit(schema.Leaving, machine, reason=milestone.reason)

    def _on_action(self, action: actions.Action, machine: MemberView) -> None:
        if isinstance(action, actions.PartitionsAssigned):
            self._emit(
                schema.Synced,
                machine,
                generation=action.generation,
                leader=self._leader,
                is_leader=machine.is_leader,
                skip_assignment=self._skip_assignment and machine.is_leader,
                protocol=machine.protocol_name,
                rebalance_protocol=self._rebalance_protocol,
            )
            self._emit(
                schema.Assigned,
                machine,
                generation=action.generation,
                partitions=_partitions(action.owned),
            )
        elif isinstance(action, actions.PartitionsRevoked):
            self._emit(
                schema.Revoked, machine, partitions=_partitions(action.partitions), reason=action.reason.value
            )
        elif isinstance(action, actions.PartitionsLost):
            self._emit(
                schema.Lost, machine, partitions=_partitions(action.partitions), reason=action.reason.value
            )
        elif isinstance(action, actions.CommitCompleted):
            self._emit(
                schema.Committed,
                machine,
                partitions=_partitions(action.offsets),
                error=None if action.error is None else str(action.error),
            )
        elif isinstance(action, actions.Fatal):
            if isinstance(action.error, FencedInstanceIdError):
                self._emit(schema.Fenced, machine, error=str(action.error))
            else:
                self._emit(schema.Failed, machine, error=f"{type(action.error).__name__}: {action.error}")
        elif isinstance(action, actions.Stopped):
            self._emit(schema.Stopped, machine, error=None if action.error is None else str(action.error))

    def _maybe_report_drops(self, machine: MemberView, force: bool) -> None:
        now = time.monotonic()
        if self._last_report is None:
            self._last_report = now
        if not force and now - self._last_report < self.drop_report_seconds:
            return
        self._last_report = now
        for sink in self.sinks:
            if sink.dropped > self._reported.get(sink.name, 0):
                self._reported[sink.name] = sink.dropped
                self._emit(schema.Dropped, machine, sink=sink.name, dropped=sink.dropped)

    def _emit(self, record_type: type[schema.Record], machine: MemberView, **fields: Any) -> None:
        config = machine.config
        fields.setdefault("generation", machine.generation)
        record = record_type(
            ts=self._clock(),
            group=config.group_id,
            instance=config.group_instance_id,
            member=machine.member_id,
            session=self.session,
            seq=self._seq,
            **fields,
        )
        self._seq += 1
        line = schema.encode_line(record)
        key = config.group_id.encode()
        for sink in self.sinks:
            sink.write(line, key)

    async def aclose(self) -> None:
        """Flush and close every sink (the Kafka sink sends what it still holds, within its timeout)."""
        for sink in self.sinks:
            try:
                await sink.aclose()
            except Exception:
                log.exception("event log sink %s failed to close", sink.name)

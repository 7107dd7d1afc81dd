"""The event log observer against the real membership machine, driven by the scripted coordinator."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "membership"))

import itertools

from membership_harness import INSTANCE, UUID22, Harness, one, tp

from staticconsumer.errors import ConfigurationError, ErrorCode
from staticconsumer.eventlog import EventLog, RotatingFileSink, decode_line, encode_line, schema
from staticconsumer.membership import actions as act
from staticconsumer.membership import events as ev
from staticconsumer.settings import Settings

MEMBER = f"{INSTANCE}-{UUID22}"


class ListSink:
    """Keeps lines in memory; ``fail`` makes every write count as dropped, like a full disk."""

    def __init__(self, name: str = "memory", fail: bool = False) -> None:
        self.name = name
        self.fail = fail
        self.lines: list[bytes] = []
        self._dropped = 0

    @property
    def dropped(self) -> int:
        return self._dropped

    def write(self, line: bytes, key: bytes) -> None:
        if self.fail:
            self._dropped += 1
        else:
            self.lines.append(line)

    async def aclose(self) -> None:
        return None

    def records(self) -> list[schema.Record]:
        return [decode_line(line) for line in self.lines]


class Observed(Harness):
    """The harness with an EventLog watching every step, as the driver would call it."""

    def __init__(self, sinks: list[Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.clock = 1_700_000_000.0
        self.log = EventLog(sinks, clock=lambda: self.clock, session="s1", drop_report_seconds=0.0)

    def feed(self, cls: type[ev.Event], **fields: Any) -> list[act.Action]:
        before = len(self.history)
        out = super().feed(cls, **fields)
        self.log.observe(cls(now=self.now, **fields), self.history[before:], self.m)
        self.clock += 1
        return out


def test_a_static_member_life_in_records() -> None:
    sink = ListSink()
    h = Observed([sink])
    h.become_stable(partitions=[tp("t", 0), tp("t", 1)], generation=3, member_id=MEMBER)
    revoked = one(h.feed(ev.RequestRejoin, reason="partition count of t changed"), act.PartitionsRevoked)
    join = one(h.finish_callback(revoked), act.SendJoinGroup)
    sync = one(
        h.join_answer(join, generation=4, member_id=MEMBER, leader_id=MEMBER, skip_assignment=True),
        act.SendSyncGroup,
    )
    h.finish_callback(one(h.sync_answer(sync, partitions=[tp("t", 1)]), act.PartitionsAssigned))
    send = one(h.commit(t1=7), act.SendOffsetCommit)
    h.commit_answer(send)
    hb = h.heartbeat_due()
    h.feed(ev.HeartbeatResponse, token=hb.token, error_code=ErrorCode.FENCED_INSTANCE_ID)
    h.feed(ev.Stop)

    records = sink.records()
    assert [schema.tag_of(type(r)) for r in records] == [
        "joining",
        "revoked",  # eager: the empty revoke before the first join, as aiokafka's
        "sync",
        "assigned",
        "revoked",
        "rejoin",
        "sync",
        "assigned",
        "commit",
        "heartbeat_failed",
        "lost",
        "fenced",
        "stopped",
    ]
    assert [r.seq for r in records] == list(range(len(records)))
    assert {(r.group, r.instance, r.session, r.v) for r in records} == {("g", INSTANCE, "s1", 1)}
    assert all(later.ts >= earlier.ts for earlier, later in itertools.pairwise(records))
    by_type = {schema.tag_of(type(r)): r for r in records}
    first_revoke = records[1]
    assert isinstance(first_revoke, schema.Revoked)
    assert (first_revoke.partitions, first_revoke.generation) == ([], -1)
    first_sync = records[2]
    assert isinstance(first_sync, schema.Synced)
    assert (first_sync.generation, first_sync.member, first_sync.leader) == (3, MEMBER, "leader-1")
    assert not first_sync.is_leader
    second_sync = records[6]
    assert isinstance(second_sync, schema.Synced)
    assert (second_sync.generation, second_sync.is_leader, second_sync.skip_assignment) == (4, True, True)
    assert records[3].partitions == [schema.Partition("t", 0), schema.Partition("t", 1)]
    revoked_record = by_type["revoked"]
    assert isinstance(revoked_record, schema.Revoked)
    assert revoked_record.reason == "rebalance"
    rejoin = by_type["rejoin"]
    assert isinstance(rejoin, schema.Rejoin)
    assert rejoin.reason == "partition count of t changed"
    commit = by_type["commit"]
    assert isinstance(commit, schema.Committed)
    assert (commit.partitions, commit.error) == ([schema.Partition("t", 1)], None)
    heartbeat = by_type["heartbeat_failed"]
    assert isinstance(heartbeat, schema.HeartbeatFailed)
    assert (heartbeat.code, heartbeat.error) == (82, "FENCED_INSTANCE_ID")
    assert by_type["lost"].partitions == [schema.Partition("t", 1)]


def test_dynamic_member_leaves_and_the_kip394_rejoin_is_logged() -> None:
    sink = ListSink()
    h = Observed([sink], instance_id=None)
    join = h.start_until_join()
    second = one(h.join_answer(join, ErrorCode.MEMBER_ID_REQUIRED, member_id="m-1"), act.SendJoinGroup)
    h.become_stable(partitions=[tp("t", 0)], member_id="m-1", join=second)
    revoked = one(h.feed(ev.Stop, leave_group=True), act.PartitionsRevoked)
    h.finish_callback(revoked)
    records = sink.records()
    tags = [schema.tag_of(type(r)) for r in records]
    assert tags[:5] == ["joining", "revoked", "rejoin", "sync", "assigned"]
    assert "leaving" in tags
    assert records[0].instance is None
    assert records[4].member == "m-1"


def test_dropped_records_are_counted_and_reported() -> None:
    broken, kept = ListSink("broken", fail=True), ListSink("kept")
    h = Observed([broken, kept])
    h.become_stable()
    assert h.log.dropped == broken.dropped > 0
    reports = [r for r in kept.records() if isinstance(r, schema.Dropped)]
    assert reports, "a dropped record reports the count"
    assert reports[-1].sink == "broken"
    assert reports[-1].dropped == broken.dropped - 1, "the report itself was dropped by the broken sink"
    counts = [r.dropped for r in reports]
    assert counts == sorted(set(counts)), "reported only when the running count grew"


def test_schema_round_trip_and_rejects() -> None:
    for record_type in schema.RECORD_TYPES:
        fields: dict[str, Any] = {
            name: "" for name in record_type.__struct_fields__ if name not in schema.Record.__struct_fields__
        }
        if record_type is schema.Synced:
            fields.update(is_leader=True, skip_assignment=False, protocol=None)
        if record_type in (schema.Committed, schema.Stopped):
            fields["error"] = None
        if record_type is schema.HeartbeatFailed:
            fields["code"] = 25
        if record_type is schema.Dropped:
            fields["dropped"] = 3
        record = record_type(
            ts=1.5, group="g", instance=None, member="m", generation=2, session="s", seq=0, **fields
        )
        line = encode_line(record)
        assert line.endswith(b"\n")
        assert b'"v":1' in line
        assert decode_line(line) == record
    with pytest.raises(msgspec.ValidationError):
        decode_line(b'{"type":"teleported","v":1}')


def test_rotation_keeps_backups_and_every_line_whole(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    sink = RotatingFileSink(path, max_bytes=1024, backups=3)
    lines = [b'{"n":%d,"pad":"%s"}\n' % (i, b"x" * 80) for i in range(100)]
    for line in lines:
        sink.write(line, b"g")
    files = sorted(tmp_path.iterdir())
    assert [f.name for f in files] == ["events.jsonl", "events.jsonl.1", "events.jsonl.2", "events.jsonl.3"]
    assert all(f.stat().st_size <= 1024 for f in files)
    kept = b"".join(f.read_bytes() for f in reversed(files[1:])) + files[0].read_bytes()
    assert kept.splitlines(keepends=True) == lines[-len(kept.splitlines()) :], "newest lines, in order, whole"
    assert sink.dropped == 0


async def test_file_sink_that_cannot_write_counts_drops(tmp_path: Path) -> None:
    (tmp_path / "taken").mkdir()
    sink = RotatingFileSink(tmp_path / "taken", max_bytes=1024, backups=1)
    sink.write(b"{}\n", b"g")
    sink.write(b"{}\n", b"g")
    assert sink.dropped == 2
    await sink.aclose()


def test_settings_build_the_sinks(tmp_path: Path) -> None:
    base = {"bootstrap_servers": "localhost:9092", "group_id": "orders", "group_instance_id": "orders-0"}
    assert EventLog.from_settings(Settings.from_env(environ={}, **base)) is None
    log = EventLog.from_settings(
        Settings.from_env(
            environ={
                "KAFKA_STATICCONSUMER_EVENT_LOG_PATH": f"{tmp_path}/{{group}}/{{instance}}-{{session}}.jsonl"
            },
            **base,
            event_log_max_bytes=4096,
            event_log_topic="membership",
        )
    )
    assert log is not None
    file_sink, kafka_sink = log.sinks
    assert isinstance(file_sink, RotatingFileSink)
    assert file_sink.path == tmp_path / "orders" / f"orders-0-{log.session}.jsonl"
    assert file_sink.max_bytes == 4096
    assert kafka_sink.name == "kafka:membership"


def test_unknown_placeholder_in_the_path_is_a_configuration_error() -> None:
    settings = Settings.from_env(
        environ={}, bootstrap_servers="localhost:9092", group_id="orders", event_log_path="/logs/{pod}.jsonl"
    )
    with pytest.raises(ConfigurationError, match=r"only \{group\}, \{instance\}, \{pid\} and \{session\}"):
        EventLog.from_settings(settings)

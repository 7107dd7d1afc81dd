"""The event log of a cooperative member: the protocol on ``sync``, the whole assignment on ``assigned``,
and only what moved on ``revoked`` (so the analytics' ownership intervals stay true)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "membership"))

from membership_harness import INSTANCE, UUID22, one, tp
from test_eventlog_observer import ListSink, Observed

from staticconsumer.eventlog import decode_line, schema
from staticconsumer.membership import RebalanceProtocol
from staticconsumer.membership import actions as act
from staticconsumer.membership import events as ev

MEMBER = f"{INSTANCE}-{UUID22}"


def test_a_cooperative_rebalance_in_records() -> None:
    sink = ListSink()
    h = Observed([sink], rebalance_protocol=RebalanceProtocol.COOPERATIVE)
    h.become_stable(partitions=[tp("t", 0), tp("t", 1)], generation=3, member_id=MEMBER)
    join = one(h.feed(ev.RequestRejoin, reason="a member joined"), act.SendJoinGroup)
    sync = one(h.join_answer(join, generation=4, member_id=MEMBER), act.SendSyncGroup)
    revoked = one(h.sync_answer(sync, partitions=[tp("t", 1), tp("t", 2)]), act.PartitionsRevoked)
    h.finish_callback(one(h.finish_callback(revoked), act.PartitionsAssigned))

    records = sink.records()
    assert [schema.tag_of(type(r)) for r in records] == [
        "joining",
        "sync",
        "assigned",
        "rejoin",
        "revoked",
        "sync",
        "assigned",
        "rejoin",
    ]
    syncs = [r for r in records if isinstance(r, schema.Synced)]
    assert {s.rebalance_protocol for s in syncs} == {"cooperative"}
    revoked_record = records[4]
    assert revoked_record.partitions == [schema.Partition("t", 0)], "only what moved"
    assert revoked_record.generation == 4
    assert records[6].partitions == [schema.Partition("t", 1), schema.Partition("t", 2)], (
        "assigned is the whole assignment: kept plus gained"
    )


def test_a_sync_record_without_the_protocol_still_reads() -> None:
    """Logs written before the field existed stay readable (schema version 1, optional field)."""
    line = (
        b'{"type":"sync","leader":"l","is_leader":false,"skip_assignment":false,"protocol":"range",'
        b'"v":1,"ts":1.0,"group":"g","instance":null,"member":"m","generation":1,"session":"s","seq":1}'
    )
    record = decode_line(line)
    assert isinstance(record, schema.Synced)
    assert record.rebalance_protocol is None

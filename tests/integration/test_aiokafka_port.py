"""A service written for aiokafka runs on StaticConsumer with one import changed, and every answer it
gets (records, commits, committed offsets and their metadata, positions, highwater, end offsets, the
listener's calls) is the one aiokafka's own AIOKafkaConsumer gives on the same topics."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from aiokafka.admin import AIOKafkaAdminClient

from staticconsumer.testing import EmbeddedKafka

pytestmark = pytest.mark.kafka

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "aiokafka_dropin.py"
PORTED_IMPORT = "from staticconsumer import StaticConsumer as AIOKafkaConsumer  # the one line a port changes"
ORIGINAL_IMPORT = "from aiokafka import AIOKafkaConsumer"


def _service(name: str, source: str) -> ModuleType:
    spec = importlib.util.spec_from_loader(name, loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and typing look modules up by name
    exec(compile(source, str(EXAMPLE), "exec"), module.__dict__)
    return module


def _services() -> tuple[ModuleType, ModuleType]:
    ported = EXAMPLE.read_text()
    assert ported.count(PORTED_IMPORT) == 1
    original = ported.replace(PORTED_IMPORT, ORIGINAL_IMPORT)
    changed = [
        pair for pair in zip(ported.splitlines(), original.splitlines(), strict=True) if pair[0] != pair[1]
    ]
    assert changed == [(PORTED_IMPORT, ORIGINAL_IMPORT)], "the port differs from the original by one import"
    return _service("aiokafka_original_service", original), _service("aiokafka_ported_service", ported)


async def _committed_metadata(bootstrap: str, group: str) -> dict[tuple[str, int], tuple[int, str]]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        offsets = await admin.list_consumer_group_offsets(group)
    finally:
        await admin.close()
    return {(tp.topic, tp.partition): (meta.offset, meta.metadata) for tp, meta in offsets.items()}


async def test_an_aiokafka_service_gets_the_same_answers_from_static_consumer(
    kafka_broker: EmbeddedKafka, unique_topic: str, unique_group: str
) -> None:
    original, ported = _services()
    topics = [f"{unique_topic}-a", f"{unique_topic}-b"]
    for topic in topics:
        kafka_broker.create_topic(topic, ported.PARTITIONS)
        await ported.produce(kafka_broker.bootstrap_servers, topic)
    bootstrap = kafka_broker.bootstrap_servers

    theirs: dict[str, Any] = await original.serve(bootstrap, f"{unique_group}-aiokafka", topics)
    ours: dict[str, Any] = await ported.serve(bootstrap, f"{unique_group}-static", topics)

    per_partition = ported.RECORDS_PER_TOPIC // ported.PARTITIONS
    assert sum(ours["counts"].values()) == 2 * ported.RECORDS_PER_TOPIC
    assert ours["counts"] == theirs["counts"], "the same records, deserialized the same way"
    for topic in topics:
        assert ours[topic] == theirs[topic], f"answers about {topic}"
        assert ours[topic]["committed"] == [per_partition] * ported.PARTITIONS
        assert ours[topic]["highwater"] == [per_partition] * ported.PARTITIONS
    first = [(topics[0], p) for p in range(ported.PARTITIONS)]
    second = [(topics[1], p) for p in range(ported.PARTITIONS)]
    expected_calls = [("assigned", first), ("revoked", first), ("assigned", second)]
    assert [call for call in theirs["listener"] if call[1]] == expected_calls
    assert theirs["listener"][0] == ("revoked", []), "aiokafka revokes set() before its first join"
    assert ours["listener"] == [("revoked", []), *expected_calls], (
        "an aiokafka listener (no on_partitions_lost) runs unchanged, the first join's empty revoke included"
    )

    theirs_meta = await _committed_metadata(bootstrap, f"{unique_group}-aiokafka")
    ours_meta = await _committed_metadata(bootstrap, f"{unique_group}-static")
    assert {tp: offset for tp, (offset, _) in ours_meta.items()} == {
        tp: offset for tp, (offset, _) in theirs_meta.items()
    }
    # After subscribe() aiokafka refuses commits inside on_partitions_revoked ("No partitions assigned",
    # logged), so its metadata stays "batch"; here the revoke-time commit runs, as in the Java client.
    assert {tp: ours_meta[tp] for tp in first} == {tp: (per_partition, "revoked") for tp in first}
    assert {theirs_meta[tp][1] for tp in first} == {"batch"}

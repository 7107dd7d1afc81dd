"""docs/telemetry.md's span, event, attribute and metric tables are generated from attributes.py, which
names everything the record telemetry emits, with the messaging conventions' own spelling."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from opentelemetry.semconv._incubating.attributes import messaging_attributes as semconv
from opentelemetry.semconv._incubating.metrics import messaging_metrics as semconv_metrics
from opentelemetry.semconv.attributes import error_attributes, server_attributes
from record_harness import FakeConsumer, Sdk, fail_inside_async_with, record

from staticconsumer.membership import TopicPartition
from staticconsumer.telemetry import attributes as a
from staticconsumer.telemetry import reference

DOCS = Path(__file__).resolve().parents[3] / "docs" / "telemetry.md"

CONSTANTS = {name: value for name, value in vars(a).items() if name.isupper() and isinstance(value, str)}
NOT_NAMES = {"SCOPE", "SEMCONV_VERSION"}
KEYS = {
    v
    for k, v in CONSTANTS.items()
    if "." in v and k not in NOT_NAMES and not k.startswith(("METRIC_", "EVENT_", "SPAN_"))
}
METRICS = {v for k, v in CONSTANTS.items() if k.startswith("METRIC_")}
EVENTS = {v for k, v in CONSTANTS.items() if k.startswith("EVENT_")}
SPANS = {v for k, v in CONSTANTS.items() if k.startswith("SPAN_")}


def names_in(cell: str) -> set[str]:
    """The names a table cell lists: `a.b.c` / `.d` is the family a.b.c and a.b.d."""
    found: set[str] = set()
    previous = ""
    for name in re.findall(r"`([^`]+)`", cell):
        if name.startswith(".") and previous:
            name = previous.rsplit(".", 1)[0] + name
        found.add(name)
        previous = name
    return found


def registered(rows: tuple[object, ...], field: str) -> set[str]:
    return {name for row in rows for name in names_in(getattr(row, field))}


def test_the_documented_tables_are_the_generated_ones() -> None:
    document = DOCS.read_text()
    for name, table in reference.tables().items():
        assert reference.generated_in(document, name) == table, (
            f"the {name} table of docs/telemetry.md is out of date: run `{reference.GENERATOR}`"
        )


def test_every_name_attributes_py_defines_has_a_row_and_every_row_names_a_defined_name() -> None:
    assert registered(a.ATTRIBUTES, "key") == KEYS
    assert registered(a.METRICS, "name") == METRICS
    assert registered(a.EVENTS, "name") == EVENTS | {"exception"}
    assert registered(a.SPANS, "name") == SPANS


def test_a_changed_name_shows_up_as_drift(monkeypatch: pytest.MonkeyPatch) -> None:
    documented = reference.generated_in(DOCS.read_text(), "metrics")
    renamed = (a.MetricDoc("`messaging.client.consumed`", "counter", "`{message}`", "", ""), *a.METRICS[1:])
    monkeypatch.setattr(a, "METRICS", renamed)
    assert reference.tables()["metrics"] != documented


async def test_the_record_telemetry_emits_only_names_from_the_tables() -> None:
    sdk = Sdk()
    tracer = sdk.record_tracer(lag=lambda: {TopicPartition("orders", 0): 4})
    produced = sdk.produced(2)
    consumer = FakeConsumer(
        [
            record(0, key=b"k", headers=produced[0][1]),
            record(1, value=None),
            record(2, headers=produced[1][1]),
        ],
        tracer,
    )
    batch = await consumer.getmany(max_records=1)
    with tracer.processing(batch[next(iter(batch))][0]):
        pass
    data = sdk.reader.get_metrics_data()  # before the consumer closes: its lag series goes with it
    with pytest.raises(KeyError):
        await fail_inside_async_with(consumer, 2, KeyError("x"))
    spans = sdk.spans()
    span_names = {
        s.name for s in spans if s.instrumentation_scope and s.instrumentation_scope.name == a.SCOPE
    }
    assert span_names == {"poll orders", "process orders"}
    ours = [s for s in spans if s.name in span_names]
    used = {k for s in ours for k in (s.attributes or {})} | {
        k for s in ours for link in s.links for k in (link.attributes or {})
    }
    assert used <= registered(a.ATTRIBUTES, "key"), used - registered(a.ATTRIBUTES, "key")
    assert {e.name for s in ours for e in s.events} == {"exception"}
    assert data is not None
    emitted = [m for r in data.resource_metrics for sc in r.scope_metrics for m in sc.metrics]
    assert {m.name for m in emitted} == {
        a.METRIC_CONSUMED_MESSAGES,
        a.METRIC_PROCESS_DURATION,
        a.METRIC_OPERATION_DURATION,
        a.METRIC_CONSUMER_LAG,
    }
    point_keys = {k for m in emitted for p in m.data.data_points for k in p.attributes}
    assert point_keys <= registered(a.ATTRIBUTES, "key")
    assert a.MESSAGING_KAFKA_OFFSET not in point_keys
    assert a.MESSAGING_KAFKA_MESSAGE_KEY not in point_keys


def test_names_are_spelled_as_the_semantic_conventions_package_spells_them() -> None:
    assert a.MESSAGING_SYSTEM == semconv.MESSAGING_SYSTEM
    assert semconv.MessagingSystemValues.KAFKA.value == a.MESSAGING_SYSTEM_KAFKA
    assert a.MESSAGING_CONSUMER_GROUP_NAME == semconv.MESSAGING_CONSUMER_GROUP_NAME
    assert a.MESSAGING_CLIENT_ID == semconv.MESSAGING_CLIENT_ID
    assert a.MESSAGING_OPERATION_NAME == semconv.MESSAGING_OPERATION_NAME
    assert a.MESSAGING_OPERATION_TYPE == semconv.MESSAGING_OPERATION_TYPE
    assert semconv.MessagingOperationTypeValues.RECEIVE.value == a.OPERATION_TYPE_RECEIVE
    assert semconv.MessagingOperationTypeValues.PROCESS.value == a.OPERATION_TYPE_PROCESS
    assert semconv.MessagingOperationTypeValues.SETTLE.value == a.OPERATION_TYPE_SETTLE
    assert a.MESSAGING_DESTINATION_NAME == semconv.MESSAGING_DESTINATION_NAME
    assert a.MESSAGING_DESTINATION_PARTITION_ID == semconv.MESSAGING_DESTINATION_PARTITION_ID
    assert a.MESSAGING_KAFKA_OFFSET == semconv.MESSAGING_KAFKA_OFFSET
    assert a.MESSAGING_KAFKA_MESSAGE_KEY == semconv.MESSAGING_KAFKA_MESSAGE_KEY
    assert a.MESSAGING_KAFKA_MESSAGE_TOMBSTONE == semconv.MESSAGING_KAFKA_MESSAGE_TOMBSTONE
    assert a.MESSAGING_BATCH_MESSAGE_COUNT == semconv.MESSAGING_BATCH_MESSAGE_COUNT
    assert a.SERVER_ADDRESS == server_attributes.SERVER_ADDRESS
    assert a.SERVER_PORT == server_attributes.SERVER_PORT
    assert a.ERROR_TYPE == error_attributes.ERROR_TYPE
    assert a.METRIC_CONSUMED_MESSAGES == semconv_metrics.MESSAGING_CLIENT_CONSUMED_MESSAGES
    assert a.METRIC_PROCESS_DURATION == semconv_metrics.MESSAGING_PROCESS_DURATION
    assert a.METRIC_OPERATION_DURATION == semconv_metrics.MESSAGING_CLIENT_OPERATION_DURATION
    assert not a.METRIC_CONSUMER_LAG.startswith("messaging."), "no convention defines lag: not theirs to name"


def test_span_names_are_operation_then_destination() -> None:
    assert a.span_name(a.OPERATION_PROCESS, "orders") == "process orders"
    assert a.span_name(a.OPERATION_POLL, None) == "poll"
    assert a.SPAN_PROCESS.format(topic="orders") == "process orders"
    assert a.SPAN_JOIN_GROUP.format(group="billing") == "JoinGroup billing"
    assert a.SPAN_COMMIT.format(topic="orders") == a.span_name(a.OPERATION_COMMIT, "orders")


def test_cli_prints_and_rewrites_the_tables(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert reference.main(["--markdown"]) == 0
    printed = capsys.readouterr().out
    for table in reference.tables().values():
        assert table in printed
    document = tmp_path / "telemetry.md"
    stale = "".join(
        f"{reference.begin_marker(n)}\nstale\n{reference.end_marker(n)}\nprose\n" for n in reference.tables()
    )
    document.write_text("# Title\n" + stale)
    assert reference.main(["--write-doc", str(document)]) == 0
    written = document.read_text()
    assert written.startswith("# Title\n")
    assert written.count("prose\n") == len(reference.tables())
    for name, table in reference.tables().items():
        assert reference.generated_in(written, name) == table


def test_a_document_without_the_markers_is_refused() -> None:
    with pytest.raises(ValueError, match="lacks the markers of the spans table"):
        reference.replace_generated("no markers")
    with pytest.raises(ValueError, match="lacks the markers of the events table"):
        reference.generated_in(f"{reference.begin_marker('events')}\nunterminated", "events")

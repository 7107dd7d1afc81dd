"""Live Java checks of the codec: golden-file drift, and hypothesis-drawn messages against Java.

The drift check regenerates the golden vectors for both pinned kafka-clients lines: a wire format of a
given version must not change between client releases, so both must reproduce the committed bytes.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from staticconsumer.protocol import Assignment, Message, Subscription
from staticconsumer.protocol.kafka_json import from_kafka_json, to_kafka_json
from staticconsumer.testing.broker import PINNED_VERSIONS
from tests.interop.oracle import JavaOracle

# The generator script sits beside this file and the hypothesis strategies with the unit tests; put
# both folders on sys.path so the imports work whether or not tests/ is collected as a package.
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit" / "protocol"))
from protocol_strategies import ALL_MESSAGE_VERSIONS, ASSIGNMENT, STRATEGIES, SUBSCRIPTION, case_id
from regenerate_golden import GOLDEN_DIR, generate

pytestmark = pytest.mark.oracle


@pytest.mark.parametrize("kafka_version", PINNED_VERSIONS)
def test_committed_golden_vectors_match_the_live_oracle(
    java_oracle_for: Callable[[str], JavaOracle], kafka_version: str
) -> None:
    oracle = java_oracle_for(kafka_version)
    fresh = generate(oracle)
    # the directory also holds other generators' files (admin APIs); each of ours must be there
    committed_names = {path.name for path in GOLDEN_DIR.glob("*.json")}
    assert set(fresh) <= committed_names
    known = oracle.api_versions()
    for name, content in fresh.items():
        committed = json.loads((GOLDEN_DIR / name).read_text(encoding="utf-8"))
        # an older kafka-clients checks the versions it knows (3.9 has no ConsumerGroupHeartbeat v1)
        api = name.removesuffix(".json")
        low, high = known.get(api, (0, 2**15))
        expected = [v for v in committed["vectors"] if low <= v["version"] <= high]
        assert len(content["vectors"]) == len(expected), name
        for ours, theirs in zip(content["vectors"], expected, strict=True):
            assert ours == theirs, f"{name}: {ours['kind']} v{ours['version']} {ours['case']} drifted"


def _java_expressible(message: Message) -> Message:
    """Kafka's JSON form has no place for nested unknown tagged fields, Java writes raw tags only in
    strictly increasing order and below Integer.MAX_VALUE (its end marker): keep the top-level tags
    Java can write (sorted, one per tag), drop nested ones."""

    def strip(value: Any) -> Any:
        if isinstance(value, list):
            return [strip(item) for item in value]
        if isinstance(value, msgspec.Struct):
            changes = {
                f: strip(getattr(value, f)) for f in value.__struct_fields__ if f != "unknown_tagged_fields"
            }
            if "unknown_tagged_fields" in value.__struct_fields__:
                changes["unknown_tagged_fields"] = ()
            return msgspec.structs.replace(value, **changes)
        return value

    top = {tag: data for tag, data in message.unknown_tagged_fields if tag < 2**31 - 1}
    stripped = strip(message)
    return msgspec.structs.replace(stripped, unknown_tagged_fields=tuple(sorted(top.items())))


@pytest.mark.parametrize("case", ALL_MESSAGE_VERSIONS, ids=case_id)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_messages_encode_and_decode_like_java(
    java_oracle: JavaOracle, case: tuple[type[Message], int], data: st.DataObject
) -> None:
    """Beyond the fixed vectors: hypothesis-drawn values, Java's bytes against ours both ways."""
    cls, version = case
    message = _java_expressible(data.draw(STRATEGIES[cls](version)))
    fields = to_kafka_json(message, version)
    java_bytes = java_oracle.encode(cls.API_NAME, cls.KIND, version, fields)
    assert message.encode(version) == java_bytes
    assert cls.decode(java_bytes, version) == message
    assert (
        from_kafka_json(cls, java_oracle.decode(cls.API_NAME, cls.KIND, version, java_bytes), version)
        == message
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(subscription=SUBSCRIPTION, assignment=ASSIGNMENT, version=st.integers(0, 3))
def test_random_payloads_encode_like_java(
    java_oracle: JavaOracle, subscription: Subscription, assignment: Assignment, version: int
) -> None:
    # Java's JSON reader refuses fields the version lacks, so it gets only what v<version> carries;
    # our encoder gets the full value and must drop the same fields Java never saw.
    carried = Subscription(
        subscription.topics,
        subscription.user_data,
        subscription.owned_partitions if version >= 1 else [],
        subscription.generation_id if version >= 2 else -1,
        subscription.rack_id if version >= 3 else None,
    )
    java_subscription = java_oracle.encode(
        "ConsumerProtocolSubscription", "payload", version, to_kafka_json(carried)
    )
    assert subscription.encode(version) == java_subscription
    assert Subscription.decode(java_subscription) == carried
    java_assignment = java_oracle.encode(
        "ConsumerProtocolAssignment", "payload", version, to_kafka_json(assignment)
    )
    assert assignment.encode(version) == java_assignment
    assert Assignment.decode(java_assignment) == assignment

"""Our codec against the bytes Java's kafka-clients produced (tests/data/golden, no JVM needed).

For each vector: the fields in Kafka's JSON form build our struct; our encoder must produce exactly
Java's body (and header plus body), and our decoder must read Java's bytes back to the same struct.
Regenerate with ``tests/interop/regenerate_golden.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from staticconsumer import protocol as p
from staticconsumer.protocol import APIS
from staticconsumer.protocol.kafka_json import from_kafka_json, message_class

GOLDEN_DIR = Path(__file__).resolve().parents[2] / "data" / "golden"
PAYLOADS = {"ConsumerProtocolSubscription": p.Subscription, "ConsumerProtocolAssignment": p.Assignment}


def _load(name: str) -> dict[str, Any]:
    content: dict[str, Any] = json.loads((GOLDEN_DIR / name).read_text(encoding="utf-8"))
    return content


def _message_vectors() -> list[Any]:
    params = []
    for api in APIS:
        for vector in _load(f"{api}.json")["vectors"]:
            vid = f"{api}{vector['kind'].title()}-v{vector['version']}-{vector['case']}"
            params.append(pytest.param(api, vector, id=vid))
    return params


@pytest.mark.parametrize(("api", "vector"), _message_vectors())
def test_golden_message(api: str, vector: dict[str, Any]) -> None:
    cls = message_class(api, vector["kind"])
    version = vector["version"]
    expected = from_kafka_json(cls, vector["fields"], version)
    body = bytes.fromhex(vector["body"])
    assert expected.encode(version).hex() == vector["body"]
    assert cls.decode(body, version) == expected
    wire = bytes.fromhex(vector["with_header"])
    if vector["kind"] == "request":
        ours = p.encode_request(expected, version, vector["correlation_id"], vector["client_id"])
        header, offset = p.decode_request_header(wire, cls.is_flexible(version))
        assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (
            cls.API_KEY,
            version,
            vector["correlation_id"],
            vector["client_id"],
        )
        assert cls.decode(wire, version, offset) == expected
    else:
        ours = p.encode_response(expected, version, vector["correlation_id"])
        response_header, decoded = p.decode_response(cls, wire, version)
        assert response_header.correlation_id == vector["correlation_id"]
        assert decoded == expected
    assert ours.hex() == vector["with_header"]


@pytest.mark.parametrize(
    "vector",
    [
        pytest.param(v, id=f"{v['api']}-v{v['version']}-{v['case']}")
        for v in _load("ConsumerProtocol.json")["vectors"]
    ],
)
def test_golden_payload(vector: dict[str, Any]) -> None:
    cls = PAYLOADS[vector["api"]]
    expected = from_kafka_json(cls, vector["fields"])
    assert expected.encode(vector["version"]).hex() == vector["body"]
    assert cls.decode(bytes.fromhex(vector["body"])) == expected


def test_golden_coverage_is_complete() -> None:
    """Every API, direction and version is present, and the edge cases the issue names are covered."""
    seen: set[tuple[str, str, int]] = set()
    cases: set[str] = set()
    text = ""
    for api in APIS:
        raw = (GOLDEN_DIR / f"{api}.json").read_text(encoding="utf-8")
        text += raw
        for vector in json.loads(raw)["vectors"]:
            seen.add((api, vector["kind"], vector["version"]))
            cases.add(vector["case"])
    wanted = {
        (spec.name, kind, v)
        for spec in APIS.values()
        for kind in ("request", "response")
        for v in range(spec.min_version, spec.max_version + 1)
    }
    assert wanted <= seen
    assert {"defaults", "edge", "large", "unknown_tagged_fields"} <= cases
    assert '"_unknownTaggedFields"' in text
    assert '"groupInstanceId": null' in text  # null ...
    assert '"groupInstanceId": ""' in text  # ... versus empty
    assert "🎉" in text  # non-ASCII (4-byte UTF-8)
    assert any(len(s) == 249 for s in _strings())  # the longest valid instance id
    payload_versions = {(v["api"], v["version"]) for v in _load("ConsumerProtocol.json")["vectors"]}
    assert payload_versions == {(api, v) for api in PAYLOADS for v in range(4)}


def _strings() -> list[str]:
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, str):
            found.append(node)
        elif isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            for item in node.values():
                walk(item)

    for api in APIS:
        walk(_load(f"{api}.json"))
    return found

"""ListGroups and CreateAcls: the golden vectors Java's kafka-clients produced, and the version rules.

Regenerate the vectors with tests/interop/regenerate_admin_golden.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from staticconsumer import protocol as p
from staticconsumer.errors import UnsupportedVersionForFieldError
from staticconsumer.protocol import ADMIN_APIS
from staticconsumer.protocol.kafka_json import from_kafka_json

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "data" / "golden"


def _vectors() -> list[Any]:
    params = []
    for api in ADMIN_APIS:
        content = json.loads((GOLDEN_DIR / f"{api}.json").read_text(encoding="utf-8"))
        for vector in content["vectors"]:
            vid = f"{api}{vector['kind'].title()}-v{vector['version']}-{vector['case']}"
            params.append(pytest.param(api, vector, id=vid))
    return params


@pytest.mark.parametrize(("api", "vector"), _vectors())
def test_golden_admin_message(api: str, vector: dict[str, Any]) -> None:
    spec = ADMIN_APIS[api]
    cls = spec.request if vector["kind"] == "request" else spec.response
    version = vector["version"]
    expected = from_kafka_json(cls, vector["fields"], version)
    assert expected.encode(version).hex() == vector["body"]
    assert cls.decode(bytes.fromhex(vector["body"]), version) == expected
    if vector["kind"] == "request":
        ours = p.encode_request(expected, version, vector["correlation_id"], vector["client_id"])
    else:
        ours = p.encode_response(expected, version, vector["correlation_id"])
    assert ours.hex() == vector["with_header"]


def test_golden_admin_coverage() -> None:
    seen = set()
    for api, spec in ADMIN_APIS.items():
        for vector in json.loads((GOLDEN_DIR / f"{api}.json").read_text(encoding="utf-8"))["vectors"]:
            seen.add((api, vector["kind"], vector["version"]))
        for kind in ("request", "response"):
            for version in range(spec.min_version, spec.max_version + 1):
                assert (api, kind, version) in seen


def test_admin_apis_are_sendable_through_the_bridge() -> None:
    assert p.APIS_BY_KEY[16].request is p.ListGroupsRequest
    assert p.APIS_BY_KEY[30].response is p.CreateAclsResponse
    assert "ListGroups" not in p.APIS  # the group-protocol table stays the group protocol's


@pytest.mark.parametrize(
    ("message", "version", "field"),
    [
        (p.ListGroupsRequest(states_filter=["Stable"]), 3, "states_filter"),
        (p.ListGroupsRequest(types_filter=["classic"]), 4, "types_filter"),
    ],
)
def test_filters_the_version_cannot_carry_are_refused(message: p.Message, version: int, field: str) -> None:
    with pytest.raises(UnsupportedVersionForFieldError) as caught:
        message.encode(version)
    assert caught.value.field == field


def test_group_state_and_type_are_dropped_below_their_version() -> None:
    """Kafka marks them ignorable: an older broker's answer simply lacks them."""
    full = p.ListGroupsResponse(groups=[p.ListedGroup("g", "consumer", "Stable", "classic")])
    assert p.ListGroupsResponse.decode(full.encode(3), 3).groups == [p.ListedGroup("g", "consumer")]
    assert p.ListGroupsResponse.decode(full.encode(4), 4).groups == [p.ListedGroup("g", "consumer", "Stable")]

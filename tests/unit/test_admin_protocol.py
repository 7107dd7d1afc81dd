"""ListGroups and CreateAcls: the golden vectors Java's kafka-clients produced, and the version rules.

Regenerate the vectors with tests/interop/regenerate_admin_golden.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from staticconsumer import protocol as p
from staticconsumer.errors import DecodeError, UnsupportedVersionForFieldError
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


ADMIN_MESSAGE_VERSIONS = [
    (cls, version)
    for spec in ADMIN_APIS.values()
    for cls in (spec.request, spec.response)
    for version in range(spec.min_version, spec.max_version + 1)
]


@pytest.mark.parametrize(
    ("cls", "version"), ADMIN_MESSAGE_VERSIONS, ids=[f"{c.__name__}-v{v}" for c, v in ADMIN_MESSAGE_VERSIONS]
)
@settings(max_examples=150, deadline=None)
@given(data=st.binary(max_size=64))
def test_hostile_bytes_only_raise_decode_error(cls: type[p.Message], version: int, data: bytes) -> None:
    """A broker's answer is untrusted input: anything but a DecodeError would crash the admin."""
    try:
        decoded = cls.decode(data, version)
    except DecodeError:
        return
    assert decoded.encode(version) == data  # what decodes is exactly what it says


@pytest.mark.parametrize(
    ("cls", "version"), ADMIN_MESSAGE_VERSIONS, ids=[f"{c.__name__}-v{v}" for c, v in ADMIN_MESSAGE_VERSIONS]
)
def test_every_truncation_of_a_golden_body_is_a_decode_error(cls: type[p.Message], version: int) -> None:
    content = json.loads((GOLDEN_DIR / f"{cls.API_NAME}.json").read_text(encoding="utf-8"))
    bodies = [
        bytes.fromhex(v["body"])
        for v in content["vectors"]
        if v["version"] == version and v["kind"] == cls.KIND and v["body"]
    ]
    assert bodies or (cls is p.ListGroupsRequest and version < 3)  # those have no fields at all
    for body in bodies:
        for cut in range(len(body)):
            with pytest.raises(DecodeError):
                cls.decode(body[:cut], version)

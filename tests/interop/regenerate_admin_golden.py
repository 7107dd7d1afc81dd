"""Regenerate the golden vectors of the admin APIs (ListGroups, CreateAcls) from the Java oracle.

    .venv/bin/python tests/interop/regenerate_admin_golden.py [--kafka-version 4.3.1]

Same file format and conventions as regenerate_golden.py (which covers the group-protocol APIs); kept
apart so the admin tools can grow without touching the group-protocol generator.
tests/unit/test_admin_protocol.py holds our codec to these files without a JVM.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from staticconsumer import protocol as p
from staticconsumer.protocol import ADMIN_APIS, Message
from staticconsumer.protocol import admin as acl
from staticconsumer.protocol.kafka_json import from_kafka_json, to_kafka_json

sys.path.insert(0, str(Path(__file__).resolve().parent))
from regenerate_golden import GOLDEN_DIR, LARGE, NON_ASCII, TAGS, _header, serialise

Builder = Callable[[int], dict[str, Message]]


def _on(condition: bool, value: Any, default: Any) -> Any:
    return value if condition else default


def list_groups_request(v: int) -> dict[str, Message]:
    return {
        "defaults": p.ListGroupsRequest(),
        "filters": p.ListGroupsRequest(
            _on(v >= 4, ["Stable", "PreparingRebalance"], []), _on(v >= 5, ["classic", NON_ASCII], [])
        ),
        "large": p.ListGroupsRequest(_on(v >= 4, [f"s{i}" for i in range(LARGE)], [])),
    }


def list_groups_response(v: int) -> dict[str, Message]:
    return {
        "defaults": p.ListGroupsResponse(),
        "groups": p.ListGroupsResponse(
            _on(v >= 1, 7, 0),
            0,
            [
                p.ListedGroup(
                    "orders-service", "consumer", _on(v >= 4, "Stable", ""), _on(v >= 5, "classic", "")
                ),
                p.ListedGroup(NON_ASCII, "", _on(v >= 4, "Empty", ""), _on(v >= 5, "consumer", "")),
                p.ListedGroup("", "connect"),
            ],
        ),
        "error": p.ListGroupsResponse(0, 15, []),
        "large": p.ListGroupsResponse(0, 0, [p.ListedGroup(f"g{i}", "consumer") for i in range(LARGE)]),
    }


def create_acls_request(v: int) -> dict[str, Message]:
    return {
        "defaults": p.CreateAclsRequest(),
        "group_read": p.CreateAclsRequest(
            [
                p.AclCreation(
                    acl.RESOURCE_TYPE_GROUP,
                    "orders-service",
                    acl.PATTERN_TYPE_LITERAL,
                    "User:alice",
                    "*",
                    acl.OPERATION_READ,
                    acl.PERMISSION_ALLOW,
                ),
                p.AclCreation(
                    acl.RESOURCE_TYPE_TOPIC,
                    NON_ASCII,
                    acl.PATTERN_TYPE_PREFIXED,
                    "User:" + NON_ASCII,
                    "127.0.0.1",
                    acl.OPERATION_DESCRIBE,
                    acl.PERMISSION_DENY,
                ),
            ]
        ),
        "large": p.CreateAclsRequest(
            [p.AclCreation(acl.RESOURCE_TYPE_GROUP, f"g{i}", 3, "User:u", "*", 2, 3) for i in range(LARGE)]
        ),
    }


def create_acls_response(v: int) -> dict[str, Message]:
    return {
        "defaults": p.CreateAclsResponse(),
        "results": p.CreateAclsResponse(
            5, [p.AclCreationResult(0, None), p.AclCreationResult(31, NON_ASCII), p.AclCreationResult(42, "")]
        ),
        "large": p.CreateAclsResponse(0, [p.AclCreationResult(0, None) for _ in range(LARGE)]),
    }


BUILDERS: dict[type[Message], Builder] = {
    p.ListGroupsRequest: list_groups_request,
    p.ListGroupsResponse: list_groups_response,
    p.CreateAclsRequest: create_acls_request,
    p.CreateAclsResponse: create_acls_response,
}


def message_cases() -> Iterator[tuple[type[Message], int, str, Message]]:
    for spec in ADMIN_APIS.values():
        for cls in (spec.request, spec.response):
            for version in range(spec.min_version, spec.max_version + 1):
                built = BUILDERS[cls](version)
                yield from ((cls, version, name, message) for name, message in built.items())
                if cls.is_flexible(version):
                    tagged = msgspec.structs.replace(next(iter(built.values())), unknown_tagged_fields=TAGS)
                    yield cls, version, "unknown_tagged_fields", tagged


def generate(oracle: Any) -> dict[str, dict[str, Any]]:
    files: dict[str, dict[str, Any]] = {}
    for cls, version, name, message in message_cases():
        fields = to_kafka_json(message, version)
        correlation_id = 0x12345 + version
        client_id = None if name == "defaults" else "client-" + NON_ASCII
        body = oracle.encode(cls.API_NAME, cls.KIND, version, fields)
        with_header = oracle.encode_with_header(
            cls.API_NAME, cls.KIND, version, fields, correlation_id=correlation_id, client_id=client_id
        )
        echoed = oracle.decode(cls.API_NAME, cls.KIND, version, body)
        if from_kafka_json(cls, echoed, version) != message:
            raise SystemExit(f"Java did not read back {cls.__name__} v{version} {name}: {echoed}")
        header = {**_header(oracle), "generator": "tests/interop/regenerate_admin_golden.py"}
        entry = files.setdefault(f"{cls.API_NAME}.json", header)
        entry["vectors"].append(
            {
                "kind": cls.KIND,
                "version": version,
                "case": name,
                "fields": fields,
                "body": body.hex(),
                "correlation_id": correlation_id,
                "client_id": client_id if cls.KIND == "request" else None,
                "with_header": with_header.hex(),
            }
        )
    return files


def main(argv: list[str] | None = None) -> int:
    from staticconsumer.testing.broker import DEFAULT_VERSION
    from tests.interop.oracle import JavaOracle

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--kafka-version", default=DEFAULT_VERSION, help="kafka-clients version for the oracle"
    )
    parser.add_argument("--out", type=Path, default=GOLDEN_DIR)
    args = parser.parse_args(argv)
    with JavaOracle.start(args.kafka_version) as oracle:
        files = generate(oracle)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, content in sorted(files.items()):
        (args.out / name).write_text(serialise(content), encoding="utf-8")
        print(f"{name}: {len(content['vectors'])} vectors", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

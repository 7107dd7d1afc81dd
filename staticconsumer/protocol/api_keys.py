"""Kafka API keys: their names and where our message classes for them live, without loading any.

Cheap to import on purpose (issue 26): the aiokafka bridge, the wire tracers and the test probes name an
API by its key, and a consumer loads only the messages of the APIs it sends (a classic member never
loads KIP-848's or the admin messages). :func:`spec_for_key` imports one API's module on first use.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Final

import msgspec

if TYPE_CHECKING:
    from staticconsumer.protocol._base import Message

API_NAMES: Final[dict[int, str]] = {
    0: "Produce",
    1: "Fetch",
    2: "ListOffsets",
    3: "Metadata",
    8: "OffsetCommit",
    9: "OffsetFetch",
    10: "FindCoordinator",
    11: "JoinGroup",
    12: "Heartbeat",
    13: "LeaveGroup",
    14: "SyncGroup",
    15: "DescribeGroups",
    16: "ListGroups",
    17: "SaslHandshake",
    18: "ApiVersions",
    30: "CreateAcls",
    36: "SaslAuthenticate",
    68: "ConsumerGroupHeartbeat",
    69: "ConsumerGroupDescribe",
}
"""Every API key this project sends, traces or reads from a broker's ApiVersions, by Kafka's name for it:
the one table (the bridge's log lines, ``--trace``, the fleet benchmark and the test probes read it)."""

MODULE_OF_KEY: Final[dict[int, str]] = {
    3: "metadata",
    8: "offsets",
    9: "offsets",
    10: "coordinator",
    11: "group",
    12: "group",
    13: "group",
    14: "group",
    15: "group",
    68: "consumer_group",
    69: "consumer_group",
    16: "admin",
    30: "admin",
}
"""The module of ``staticconsumer.protocol`` that holds our request and response for each key we encode:
the consumer's APIs first, then the admin and test-broker ones (``admin``)."""

ADMIN_KEYS: Final = frozenset({16, 30})
"""ListGroups and CreateAcls: sendable through the bridge, but not among a consumer's APIs."""


def api_name(key: int) -> str:
    """Kafka's name for an API key, or ``api key N`` for one this table does not know."""
    return API_NAMES.get(key, f"api key {key}")


class ApiSpec(msgspec.Struct, frozen=True):
    """One API: its key, our request/response classes and the version range we implement.

    A Struct, not a ``NamedTuple`` (~15 us to define against ~125, on the import path); read by name only.

    ``default_max_version`` is the highest version sent when the caller sets no ``max_version``
    (below ``max_version`` only for OffsetCommit/OffsetFetch, whose v10 needs topic ids).
    """

    name: str
    key: int
    request: type[Message]
    response: type[Message]
    min_version: int
    max_version: int
    flexible_from: int
    default_max_version: int


def make_spec(request: type[Message], response: type[Message]) -> ApiSpec:
    """The spec of one API from its two message classes, which must agree on key and versions."""
    assert request.API_KEY == response.API_KEY
    assert (request.MIN_VERSION, request.MAX_VERSION) == (response.MIN_VERSION, response.MAX_VERSION)
    return ApiSpec(
        request.API_NAME,
        request.API_KEY,
        request,
        response,
        request.MIN_VERSION,
        request.MAX_VERSION,
        request.FLEXIBLE_FROM,
        request.MAX_VERSION if request.DEFAULT_MAX_VERSION is None else request.DEFAULT_MAX_VERSION,
    )


_SPECS: dict[int, ApiSpec] = {}


def spec_for_key(key: int) -> ApiSpec | None:
    """Our spec of an API, its module imported on first use; ``None`` for a key we do not encode."""
    spec = _SPECS.get(key)
    if spec is None:
        module_name = MODULE_OF_KEY.get(key)
        if module_name is None:
            return None
        path = f"staticconsumer.protocol.{module_name}"
        __import__(path)  # the C import path, which -X importtime reports (importlib's is not)
        module = sys.modules[path]
        name = API_NAMES[key]
        spec = make_spec(getattr(module, f"{name}Request"), getattr(module, f"{name}Response"))
        _SPECS[key] = spec
    return spec

"""staticconsumer: an asyncio Kafka consumer that owns static group membership (KIP-345/394/814).

See README.md and docs/consumer.md.

``import staticconsumer`` loads what a consumer needs to start and nothing else: a static member that
restarts in a rolling deploy pays its imports before it can own a partition (issue 18). Tools a
consumer does not need (``GroupAdmin`` and its connection checks) load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from staticconsumer.consumer import (
    ConsumerRebalanceListener,
    ConsumerStoppedError,
    DuplicateInstanceIdError,
    StaticConsumer,
)
from staticconsumer.errors import (
    FencedInstanceIdError,
    SettingsError,
    StaticConsumerError,
    StaticMembershipUnsupportedError,
)
from staticconsumer.membership import (
    CommitFailedError,
    OffsetAndMetadata,
    OffsetRegressionError,
    TopicPartition,
)
from staticconsumer.settings import Settings

if TYPE_CHECKING:
    from staticconsumer.admin import GroupAdmin

__version__ = "0.1.0.dev0"

_LAZY = {"GroupAdmin": "staticconsumer.admin"}
"""Public names imported on first access: tools, not needed by a consumer at start."""


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "CommitFailedError",
    "ConsumerRebalanceListener",
    "ConsumerStoppedError",
    "DuplicateInstanceIdError",
    "FencedInstanceIdError",
    "GroupAdmin",
    "OffsetAndMetadata",
    "OffsetRegressionError",
    "Settings",
    "SettingsError",
    "StaticConsumer",
    "StaticConsumerError",
    "StaticMembershipUnsupportedError",
    "TopicPartition",
]

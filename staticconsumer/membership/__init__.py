"""Sans-IO group membership for static (KIP-345) and dynamic members: events in, actions out.

Internal: not part of the public API, it may change in any release (docs/consumer.md, "What is
public", lists what is). An observer passed as ``observers=`` needs only the ``observe`` method of
:class:`MembershipObserver`.

See docs/membership.md for the layout, the states, the events, the actions and the error tables.
"""

from typing import TYPE_CHECKING, Any

from staticconsumer.errors import CommitFailedError, OffsetRegressionError

from . import actions, events, rules
from .backoff import Backoff
from .config import (
    MAX_GROUP_INSTANCE_ID_LENGTH,
    AssignmentDecoder,
    MembershipConfig,
    SubscriptionDecoder,
    validate_group_instance_id,
)
from .machine import new_machine
from .observe import MembershipObserver, MemberView, Milestone
from .reconcile import RebalanceProtocol
from .types import (
    NO_GENERATION,
    NO_MEMBER_ID,
    FailureKind,
    GroupProtocol,
    IdPartitions,
    InstanceEvidence,
    JoinGroupMember,
    MemberState,
    OffsetAndMetadata,
    ReleaseReason,
    RequestToken,
    TopicPartition,
)

if TYPE_CHECKING:
    from .classic import ClassicMachine
    from .consumer_group import ConsumerGroupMachine
    from .machine import AnyMachine, MembershipMachine
else:
    _LAZY = {
        "ClassicMachine": ".classic",
        "ConsumerGroupMachine": ".consumer_group",
        "AnyMachine": ".machine",
        "MembershipMachine": ".machine",
    }
    """The machines, loaded with the first member that runs one: a restart runs one protocol's, not both."""

    def __getattr__(name: str) -> Any:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(module, __name__), name)
        globals()[name] = value
        return value


__all__ = [
    "MAX_GROUP_INSTANCE_ID_LENGTH",
    "NO_GENERATION",
    "NO_MEMBER_ID",
    "AnyMachine",
    "AssignmentDecoder",
    "Backoff",
    "ClassicMachine",
    "CommitFailedError",
    "ConsumerGroupMachine",
    "FailureKind",
    "GroupProtocol",
    "IdPartitions",
    "InstanceEvidence",
    "JoinGroupMember",
    "MemberState",
    "MemberView",
    "MembershipConfig",
    "MembershipMachine",
    "MembershipObserver",
    "Milestone",
    "OffsetAndMetadata",
    "OffsetRegressionError",
    "RebalanceProtocol",
    "ReleaseReason",
    "RequestToken",
    "SubscriptionDecoder",
    "TopicPartition",
    "actions",
    "events",
    "new_machine",
    "rules",
    "validate_group_instance_id",
]

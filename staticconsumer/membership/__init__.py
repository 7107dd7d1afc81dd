"""Sans-IO group membership for static (KIP-345) and dynamic members: events in, actions out.

Internal: not part of the public API, it may change in any release (docs/consumer.md, "What is
public", lists what is). An observer passed as ``observers=`` needs only the ``observe`` method of
:class:`MembershipObserver`.

See docs/membership.md for the layout, the states, the events, the actions and the error tables.
"""

from typing import TYPE_CHECKING, Any

from staticconsumer.errors import CommitFailedError, OffsetRegressionError

from .types import (
    MAX_GROUP_INSTANCE_ID_LENGTH,
    NO_GENERATION,
    NO_MEMBER_ID,
    AssignmentDecoder,
    FailureKind,
    GroupProtocol,
    IdPartitions,
    InstanceEvidence,
    JoinGroupMember,
    MembershipConfig,
    MemberState,
    OffsetAndMetadata,
    RebalanceProtocol,
    ReleaseReason,
    RequestToken,
    SubscriptionDecoder,
    TopicPartition,
    validate_group_instance_id,
)

if TYPE_CHECKING:
    from . import actions, events, rules
    from .backoff import Backoff
    from .classic import ClassicMachine
    from .consumer_group import ConsumerGroupMachine
    from .machine import AnyMachine, MembershipMachine, new_machine
    from .observe import MembershipObserver, MemberView, Milestone
else:
    _LAZY = {
        "actions": "",
        "events": "",
        "rules": "",
        "Backoff": ".backoff",
        "ClassicMachine": ".classic",
        "ConsumerGroupMachine": ".consumer_group",
        "AnyMachine": ".machine",
        "MembershipMachine": ".machine",
        "new_machine": ".machine",
        "MembershipObserver": ".observe",
        "MemberView": ".observe",
        "Milestone": ".observe",
    }
    """Loaded on first use (issue 26): ``import staticconsumer`` and a consumer's construction need the
    value types only; the events, actions and rules, and each protocol's machine, load when a member
    starts (``MembershipThread._preload``, while the bootstrap probe waits on the network). A name
    mapped to "" is a submodule of its own."""

    def __getattr__(name: str) -> Any:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        import importlib

        loaded = importlib.import_module(module or f".{name}", __name__)
        value = loaded if not module else getattr(loaded, name)
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

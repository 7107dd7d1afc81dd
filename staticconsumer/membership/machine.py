"""The front of the membership core: which machine runs a member.

The classic protocol's machine (JoinGroup/SyncGroup/Heartbeat), eager or cooperative, or KIP-848's
consumer-protocol machine (ConsumerGroupHeartbeat), chosen by ``group_protocol`` as Java's group.protocol
chooses. Both have the same events-in, actions-out contract, the same ownership actions and the same
milestones (see observe.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from .reconcile import RebalanceProtocol
from .types import InstanceEvidence, MembershipConfig

if TYPE_CHECKING:
    from .classic import ClassicMachine
    from .consumer_group import ConsumerGroupMachine

    MembershipMachine: TypeAlias = ClassicMachine
    """The classic protocol's machine under the name the SDK has always used for it."""

    AnyMachine: TypeAlias = ClassicMachine | ConsumerGroupMachine
    """Either protocol's machine (the runtime drives both the same way)."""
else:

    def __getattr__(name: str) -> Any:
        """The machines load with the first member that runs one: a restart needs one protocol's, not both."""
        if name not in ("MembershipMachine", "AnyMachine"):
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        from .classic import ClassicMachine
        from .consumer_group import ConsumerGroupMachine

        value = ClassicMachine if name == "MembershipMachine" else ClassicMachine | ConsumerGroupMachine
        globals()[name] = value
        return value


def new_machine(
    config: MembershipConfig,
    rebalance_protocol: RebalanceProtocol = RebalanceProtocol.EAGER,
    *,
    group_protocol: Literal["classic", "consumer"] = "classic",
    member_id: str | None = None,
    evidence: InstanceEvidence | None = None,
) -> AnyMachine:
    """The machine for a member configured as ``config``.

    ``group_protocol="consumer"`` needs the ``member_id`` the client generated (KIP-1082) and may take
    ``evidence`` about earlier holders of the instance id; ``rebalance_protocol`` is the classic protocol's.
    """
    if group_protocol == "consumer":
        if member_id is None:
            raise ValueError("the consumer protocol needs the member id the client generated")
        from .consumer_group import ConsumerGroupMachine

        return ConsumerGroupMachine(config, member_id, evidence)
    from .classic import ClassicMachine

    return ClassicMachine(config, rebalance_protocol)

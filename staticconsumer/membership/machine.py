"""The front of the membership core: which machine runs a member.

Today that is the classic protocol's machine (JoinGroup/SyncGroup/Heartbeat), eager or cooperative;
KIP-848's consumer-protocol machine sits beside it with the same events-in, actions-out contract, the same
ownership actions and the same milestones (see observe.py).
"""

from __future__ import annotations

from .classic import ClassicMachine
from .config import MembershipConfig
from .reconcile import RebalanceProtocol

MembershipMachine = ClassicMachine
"""The classic protocol's machine under the name the SDK has always used for it."""


def new_machine(
    config: MembershipConfig, rebalance_protocol: RebalanceProtocol = RebalanceProtocol.EAGER
) -> ClassicMachine:
    """The machine for a member configured as ``config``."""
    return ClassicMachine(config, rebalance_protocol)

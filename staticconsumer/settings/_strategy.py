"""aiokafka's ``partition_assignment_strategy=`` keyword, mapped to our ``assignors`` setting.

A service moved from ``AIOKafkaConsumer`` by changing one import keeps passing aiokafka's assignor
classes; each one aiokafka ships has an assignor here under the same protocol name (and wire format),
so the keyword becomes ``assignors=`` names. Classes are recognised by where aiokafka defines them, not
imported: settings stay free of aiokafka, and a look-alike class of the user's is not taken for one.

The rebalance protocol the configured assignors allow (``rebalance_protocol_of``) is chosen here too,
when a consumer is built: this module is loaded by ``import staticconsumer``, the leader's assignment
step (``runtime.assignment``, which re-exports it) only once a member starts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from staticconsumer.errors import ConfigurationError, SettingProblem, SettingsError
from staticconsumer.membership.types import RebalanceProtocol

if TYPE_CHECKING:
    import assignors as assignor_lib

KEYWORD: Final = "partition_assignment_strategy"
"""aiokafka's keyword (a tuple of assignor classes, in order of preference)."""

AIOKAFKA_ASSIGNORS: Final[Mapping[str, str]] = {
    "aiokafka.coordinator.assignors.range.RangePartitionAssignor": "range",
    "aiokafka.coordinator.assignors.roundrobin.RoundRobinPartitionAssignor": "roundrobin",
    "aiokafka.coordinator.assignors.sticky.sticky_assignor.StickyPartitionAssignor": "sticky",
}
"""aiokafka 0.14's assignor classes (by defining module) and the protocol name of ours for each."""


def translate_assignment_strategy(options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` with aiokafka's ``partition_assignment_strategy`` replaced by ``assignors`` names.

    Raises :class:`SettingsError` naming each class without an equivalent here (and the ``assignors``
    setting that replaces the keyword), or when both keywords are given.
    """
    if KEYWORD not in options:
        return dict(options)
    translated = {name: value for name, value in options.items() if name != KEYWORD}
    strategy = options[KEYWORD]
    label = f"{KEYWORD} (keyword argument)"
    if "assignors" in options:
        raise SettingsError(
            [
                SettingProblem(
                    label,
                    _shown(strategy),
                    "aiokafka's keyword for what assignors= sets; pass one of the two, not both",
                )
            ]
        )
    entries = strategy if isinstance(strategy, (tuple, list)) else (strategy,)
    names: list[str] = []
    unknown: list[object] = []
    for entry in entries:
        if isinstance(entry, str):
            names.append(entry)  # a protocol name already; the assignors check judges it
            continue
        name = AIOKAFKA_ASSIGNORS.get(_path(entry))
        if name is None:
            unknown.append(entry)
        else:
            names.append(name)
    if unknown:
        raise SettingsError([SettingProblem(label, _shown(strategy), _no_equivalent(unknown))])
    if not names:
        raise SettingsError(
            [SettingProblem(label, _shown(strategy), "empty; list at least one assignor (or leave it out)")]
        )
    translated["assignors"] = tuple(names)
    return translated


def _path(entry: object) -> str:
    cls = entry if isinstance(entry, type) else type(entry)
    return f"{cls.__module__}.{cls.__qualname__}"


def _shown(strategy: object) -> str:
    entries = strategy if isinstance(strategy, (tuple, list)) else (strategy,)
    return "(" + ", ".join(e if isinstance(e, str) else _name(e) for e in entries) + ")"


def _name(entry: object) -> str:
    cls = entry if isinstance(entry, type) else type(entry)
    return cls.__qualname__


def _no_equivalent(unknown: list[object]) -> str:
    culprits = ", ".join(f"{_path(e)} (protocol {getattr(e, 'name', '?')!r})" for e in unknown)
    known = ", ".join(path.rsplit(".", 1)[1] for path in AIOKAFKA_ASSIGNORS)
    return (
        f"no assignor here is equivalent to {culprits}; set assignors= (KAFKA_PARTITION_ASSIGNMENT_STRATEGY) "
        f"to protocol names instead: range, roundrobin, sticky, cooperative-sticky, or one registered with "
        f"assignors.register under the same protocol name (aiokafka classes mapped: {known})"
    )


_PROTOCOL_ORDER = (RebalanceProtocol.EAGER, RebalanceProtocol.COOPERATIVE)
"""Java's RebalanceProtocol ids, lowest first: the later one is the more advanced."""


def rebalance_protocol_of(assignors: Sequence[assignor_lib.Assignor]) -> RebalanceProtocol:
    """The most advanced protocol every configured assignor supports (Java's ConsumerCoordinator).

    ``cooperative-sticky`` alone is cooperative; adding ``range`` (eager only) makes the member eager,
    which is the first step of a migration. A custom assignor declares its ``rebalance_protocols``.
    """
    if not assignors:
        raise ConfigurationError("at least one assignor is needed to choose a rebalance protocol")
    known = {protocol.value: protocol for protocol in _PROTOCOL_ORDER}
    common = set(_PROTOCOL_ORDER)
    for assignor in assignors:
        declared = tuple(getattr(assignor, "rebalance_protocols", ("eager",)))
        unknown = [p for p in declared if p not in known]
        if unknown:
            raise ConfigurationError(
                f"assignor {assignor.name!r} declares rebalance protocols {unknown}; "
                f"the classic protocol knows {sorted(known)}"
            )
        common &= {known[p] for p in declared}
    if not common:
        names = [a.name for a in assignors]
        raise ConfigurationError(
            f"the assignors {names} have no rebalance protocol in common "
            f"({', '.join(f'{a.name}: {list(a.rebalance_protocols)}' for a in assignors)})"
        )
    return max(common, key=_PROTOCOL_ORDER.index)

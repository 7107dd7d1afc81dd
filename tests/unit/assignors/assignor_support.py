"""Shared helpers for the assignor tests: Java-style subscriptions and the checks Java's tests use."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from assignors import Member, TopicInfo, create, encode_sticky_user_data

TP = tuple[str, int]
STICKY_NAMES = ["sticky", "cooperative-sticky"]
ALL_NAMES = ["range", "roundrobin", "sticky", "cooperative-sticky"]


def subscription(
    name: str,
    member_id: str,
    topics: Iterable[str],
    owned: Sequence[TP] = (),
    generation: int = -1,
    *,
    instance: str | None = None,
    rack: str | None = None,
) -> Member:
    """A member as Java's ``buildSubscriptionV2Above`` builds it for the given assignor.

    ``sticky`` members carry their previous assignment in userData (plus owned partitions and
    generation, which the eager assignor ignores); ``cooperative-sticky`` members carry owned
    partitions and generation in the subscription.
    """
    user_data = None
    if name == "sticky" and (owned or generation >= 0):
        user_data = encode_sticky_user_data(owned, generation)
    return Member(
        member_id,
        topics,
        group_instance_id=instance,
        owned_partitions=owned,
        generation=generation,
        rack=rack,
        user_data=user_data,
    )


def run(name: str, members: Sequence[Member], topics: Mapping[str, TopicInfo]) -> dict[str, list[TP]]:
    return {m: a.partitions for m, a in create(name).assign(members, topics).items()}


def parts(topic: str, *ids: int) -> list[TP]:
    return [(topic, p) for p in ids]


def counts(assignment: Mapping[str, Sequence[TP]]) -> list[int]:
    return sorted(len(p) for p in assignment.values())


def fully_balanced(assignment: Mapping[str, Sequence[TP]]) -> bool:
    c = counts(assignment)
    return not c or c[-1] - c[0] <= 1


def valid_and_balanced(
    members: Sequence[Member], topics: Mapping[str, TopicInfo], assignment: Mapping[str, Sequence[TP]]
) -> None:
    """Java's verifyValidityAndBalance: complete, no duplicates, only subscribed topics, and no
    partition could move from a member with k+2 or more partitions to a subscriber with k."""
    subs = {m.member_id: m.topics for m in members}
    assert set(assignment) == set(subs)
    owner: dict[TP, str] = {}
    for member, tps in assignment.items():
        for tp in tps:
            assert tp not in owner, f"{tp} assigned twice"
            assert tp[0] in subs[member], f"{member} got {tp} outside its subscription"
            owner[tp] = member
    size = {m: len(p) for m, p in assignment.items()}
    for member, topic_names in subs.items():
        for t in topic_names:
            info = topics.get(t)
            for p in range(info.partitions if info else 0):
                other = owner.get((t, p))
                assert other is not None, f"{(t, p)} unassigned"
                assert size[other] <= size[member] + 1, (
                    f"{(t, p)} could move from {other} ({size[other]}) to {member} ({size[member]})"
                )


def next_generation(
    name: str,
    members: Sequence[Member],
    assignment: Mapping[str, Sequence[TP]],
    generation: int,
) -> list[Member]:
    """Every member rejoins reporting what it was just assigned, in ``generation``."""
    return [
        subscription(
            name,
            m.member_id,
            m.topics,
            list(assignment.get(m.member_id, [])),
            generation,
            instance=m.group_instance_id,
            rack=m.rack,
        )
        for m in members
    ]


def settle(
    name: str, members: Sequence[Member], topics: Mapping[str, TopicInfo], generation: int
) -> dict[str, list[TP]]:
    """Rebalance until nothing is withheld: cooperative needs a follow-up round after revocations."""
    assignment = run(name, members, topics)
    for round_ in range(1, 4):
        if name != "cooperative-sticky":
            return assignment
        again = next_generation(name, members, assignment, generation + round_)
        follow_up = run(name, again, topics)
        if follow_up == assignment:
            return assignment
        assignment = follow_up
    return assignment

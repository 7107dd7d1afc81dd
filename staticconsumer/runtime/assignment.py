"""The leader's assignment step, pure: members' subscriptions and metadata in, encoded plan out.

Whatever goes wrong inside a user's assignor (it raises, or its plan names a member that is not in the
group, or a partition that does not exist, or a cooperative plan moves a partition that is still owned)
becomes one typed :class:`AssignorError` naming the assignor, so the membership machine can refuse the
plan and retry instead of ending the consumer.

Which rebalance protocol a member follows is decided from its assignors when a consumer is built, as
Java's ConsumerCoordinator decides it: ``rebalance_protocol_of``, defined in
``staticconsumer.settings`` (loaded by ``import staticconsumer``, this module is not).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import assignors as assignor_lib
from staticconsumer import errors as _errors  # AssignorError: defined on first use (issue 26)
from staticconsumer._aiokafka import PartitionReplicas
from staticconsumer.membership import JoinGroupMember
from staticconsumer.protocol import Assignment, Subscription, TopicPartitions
from staticconsumer.settings import rebalance_protocol_of as rebalance_protocol_of


def decode_members(members: Sequence[JoinGroupMember]) -> list[assignor_lib.Member]:
    """The JoinGroup members as assignors see them: subscription, owned partitions, generation, rack."""
    decoded = []
    for m in members:
        sub = Subscription.decode(m.metadata)
        decoded.append(
            assignor_lib.Member(
                member_id=m.member_id,
                topics=frozenset(sub.topics),
                group_instance_id=m.group_instance_id,
                owned_partitions=tuple((o.topic, p) for o in sub.owned_partitions for p in o.partitions),
                generation=sub.generation_id,
                rack=sub.rack_id,
                user_data=sub.user_data,
            )
        )
    return decoded


def topic_infos(metadata: Mapping[str, Sequence[PartitionReplicas]]) -> dict[str, assignor_lib.TopicInfo]:
    return {
        topic: assignor_lib.TopicInfo.with_racks([sorted(p.replica_racks) for p in rows])
        for topic, rows in metadata.items()
    }


def compute_assignment(
    assignor: assignor_lib.Assignor,
    members: Sequence[assignor_lib.Member],
    topics: Mapping[str, assignor_lib.TopicInfo],
) -> dict[str, bytes]:
    """Run ``assignor`` and encode one Assignment per member (members it left out get an empty one).

    A plan of an assignor that supports the cooperative protocol is checked as Java's
    validateCooperativeAssignment does, because cooperative members keep fetching what they own until
    they are told to revoke it.
    """
    try:
        plan = assignor.assign(members, topics)
    except Exception as error:
        raise _errors.AssignorError(assignor.name, f"raised {type(error).__name__}: {error}") from error
    known = {m.member_id for m in members}
    strangers = sorted(set(plan) - known)
    if strangers:
        raise _errors.AssignorError(
            assignor.name, f"assigned partitions to members not in the group: {strangers}"
        )
    if "cooperative" in getattr(assignor, "rebalance_protocols", ()):
        validate_cooperative_assignment(assignor.name, members, plan)
    encoded = {}
    for member in members:
        given = plan.get(member.member_id)
        by_topic: dict[str, list[int]] = {}
        for topic, partition in given.partitions if given is not None else ():
            info = topics.get(topic)
            if info is None or not 0 <= partition < info.partitions:
                raise _errors.AssignorError(
                    assignor.name,
                    f"assigned {topic}-{partition}, which does not exist, to {member.member_id!r}",
                )
            by_topic.setdefault(topic, []).append(partition)
        encoded[member.member_id] = Assignment(
            assigned_partitions=[TopicPartitions(topic=t, partitions=p) for t, p in by_topic.items()],
            user_data=given.user_data if given is not None else None,
        ).encode()
    return encoded


def validate_cooperative_assignment(
    assignor_name: str,
    members: Sequence[assignor_lib.Member],
    plan: Mapping[str, assignor_lib.MemberAssignment],
) -> None:
    """Refuse a plan that revokes a partition from one member and gives it to another in the same round.

    Under the cooperative protocol the old owner keeps fetching a partition until it has revoked it after
    this SyncGroup; a new owner that started at once would fetch it at the same time. A partition that
    moves must be left unassigned for one round (the old owner revokes it and rejoins), exactly Java's
    ``validateCooperativeAssignment``. Claims are the members' ``owned_partitions`` as they joined.
    """
    revoked: dict[assignor_lib.TopicPartition, str] = {}
    added: dict[assignor_lib.TopicPartition, str] = {}
    for member in members:
        given = plan.get(member.member_id)
        assigned = set(given.partitions) if given is not None else set()
        owned = set(member.owned_partitions)
        for tp in owned - assigned:
            revoked.setdefault(tp, member.member_id)
        for tp in assigned - owned:
            added.setdefault(tp, member.member_id)
    moved = sorted(set(revoked) & set(added))
    if not moved:
        return
    shown = ", ".join(
        f"{t}-{p} (owned by {revoked[(t, p)]!r}, given to {added[(t, p)]!r})" for t, p in moved[:5]
    )
    more = f" and {len(moved) - 5} more" if len(moved) > 5 else ""
    raise _errors.AssignorError(
        assignor_name,
        f"made a cooperative plan that reassigns partitions still owned by another member in the same "
        f"round: {shown}{more}; a partition that moves must first be revoked by its owner (left "
        f"unassigned for one rebalance)",
    )

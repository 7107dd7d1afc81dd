"""The leader's assignment step, pure: members' subscriptions and metadata in, encoded plan out.

Whatever goes wrong inside a user's assignor (it raises, or its plan names a member that is not in the
group, or a partition that does not exist) becomes one typed :class:`AssignorError` naming the assignor,
so the membership machine can refuse the plan and retry instead of ending the consumer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import assignors as assignor_lib
from staticconsumer._aiokafka import PartitionReplicas
from staticconsumer.errors import AssignorError
from staticconsumer.membership import JoinGroupMember
from staticconsumer.protocol import Assignment, Subscription, TopicPartitions


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
    """Run ``assignor`` and encode one Assignment per member (members it left out get an empty one)."""
    try:
        plan = assignor.assign(members, topics)
    except Exception as error:
        raise AssignorError(assignor.name, f"raised {type(error).__name__}: {error}") from error
    known = {m.member_id for m in members}
    strangers = sorted(set(plan) - known)
    if strangers:
        raise AssignorError(assignor.name, f"assigned partitions to members not in the group: {strangers}")
    encoded = {}
    for member in members:
        given = plan.get(member.member_id)
        by_topic: dict[str, list[int]] = {}
        for topic, partition in given.partitions if given is not None else ():
            info = topics.get(topic)
            if info is None or not 0 <= partition < info.partitions:
                raise AssignorError(
                    assignor.name,
                    f"assigned {topic}-{partition}, which does not exist, to {member.member_id!r}",
                )
            by_topic.setdefault(topic, []).append(partition)
        encoded[member.member_id] = Assignment(
            assigned_partitions=[TopicPartitions(topic=t, partitions=p) for t, p in by_topic.items()],
            user_data=given.user_data if given is not None else None,
        ).encode()
    return encoded

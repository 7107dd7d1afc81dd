"""A custom assignor: rendezvous hashing on group.instance.id.

Each partition goes to the static member whose (instance id, partition) hash is highest, so the
result depends only on instance ids; a member joining or leaving moves only the partitions it gains
or loses (about 1/N of them), with no userData and no history. Dynamic members, which have no stable
identity, get nothing unless the group has no static member at all.

Run it:  python examples/custom_assignor.py
Use it:  import the module that registers it (``@register`` below) before the settings are built, then
name it first in ``partition.assignment.strategy``, e.g.
``KAFKA_PARTITION_ASSIGNMENT_STRATEGY=example-rendezvous,cooperative-sticky``. ``Settings`` accepts every
registered name, and ``StaticConsumer`` creates the assignor by that name. Every member of the group must
list a protocol name in common, so keep a built-in one after it for mixed groups (Java, older pods).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from assignors import (
    Assignor,
    GroupAssignment,
    Member,
    MemberAssignment,
    TopicInfo,
    create,
    register,
    sorted_members,
)
from staticconsumer.settings import Settings


def _score(key: str, topic: str, partition: int) -> int:
    digest = hashlib.blake2b(f"{key}\0{topic}\0{partition}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


@register
class RendezvousAssignor(Assignor):
    """Highest-random-weight placement keyed on instance ids (member ids for dynamic-only groups)."""

    name = "example-rendezvous"

    def assign(self, members: Sequence[Member], topics: Mapping[str, TopicInfo]) -> GroupAssignment:
        ordered = sorted_members(members)  # the shared order: static by instance id, then dynamic
        out: GroupAssignment = {m.member_id: MemberAssignment() for m in ordered}
        static = [m for m in ordered if m.group_instance_id is not None]
        candidates = static or ordered
        for topic, info in topics.items():
            subscribers = [m for m in candidates if topic in m.topics]
            for partition in range(info.partitions):
                if not subscribers:
                    break
                winner = max(
                    subscribers,
                    key=lambda m: _score(m.group_instance_id or m.member_id, topic, partition),
                )
                out[winner.member_id].partitions.append((topic, partition))
        return out


def main() -> None:
    topics = {"orders": TopicInfo(12), "payments": TopicInfo(6)}
    pods = [Member(f"member-{i}", ["orders", "payments"], group_instance_id=f"pod-{i}") for i in range(3)]

    assignor = create("example-rendezvous")
    before = assignor.assign(pods, topics)
    for member_id, assignment in before.items():
        print(f"{member_id}: {assignment.partitions}")

    # pod-3 joins; pod-1 restarts with a new member id (same instance id).
    after_pods = [
        pods[0],
        Member("member-1-restarted", ["orders", "payments"], group_instance_id="pod-1"),
        pods[2],
        Member("member-3", ["orders", "payments"], group_instance_id="pod-3"),
    ]
    after = assignor.assign(after_pods, topics)
    owner_before = {tp: m for m, a in before.items() for tp in a.partitions}
    instance = {m.member_id: m.group_instance_id for m in [*pods, *after_pods]}
    moved = [tp for m, a in after.items() for tp in a.partitions if instance[owner_before[tp]] != instance[m]]
    print(
        f"after pod-3 joined: {len(moved)} of 18 partitions moved, all to pod-3: "
        f"{all(tp in after['member-3'].partitions for tp in moved)}"
    )

    # What a service does: the environment names it first, and Settings accepts it because it is registered.
    environment = {
        "KAFKA_BOOTSTRAP_SERVERS": "kafka-0.kafka:9092",
        "KAFKA_GROUP_ID": "orders",
        "KAFKA_GROUP_INSTANCE_ID": "pod-0",
        "KAFKA_PARTITION_ASSIGNMENT_STRATEGY": "example-rendezvous,cooperative-sticky",
    }
    settings = Settings.from_env(environment)
    print(f"settings accept it: partition.assignment.strategy={','.join(settings.assignors)}")

    # The same group under the built-in cooperative-sticky assignor, for comparison.
    sticky = create("cooperative-sticky").assign(pods, topics)
    print("cooperative-sticky:", {m: len(a.partitions) for m, a in sticky.items()})


if __name__ == "__main__":
    main()

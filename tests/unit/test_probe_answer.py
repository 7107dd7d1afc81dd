"""What the membership and the fetcher take from the bootstrap probe's Metadata answer, with aiokafka's
own response classes and no broker: the same partitions and racks as before issue 27, computed once."""

from __future__ import annotations

from typing import Any

from aiokafka import AIOKafkaClient
from aiokafka.protocol.metadata import MetadataResponse_v1

from staticconsumer import _aiokafka
from staticconsumer._aiokafka import PartitionReplicas


def _answer(racks: dict[int, str | None], replicas: dict[int, list[int]], *, brokers: bool = True) -> Any:
    """A Metadata v1 answer: brokers with ``racks``, topic ``orders`` with partitions' ``replicas``, and
    ``missing`` unknown (error 3)."""
    nodes = [(node, "127.0.0.1", 9000 + node, rack) for node, rack in racks.items()] if brokers else []
    rows = [(0, partition, nodes_[0], nodes_, nodes_) for partition, nodes_ in replicas.items()]
    return MetadataResponse_v1(nodes, 1, [(0, "orders", False, rows), (3, "missing", False, [])])


def test_partitions_carry_the_racks_of_their_replicas_brokers() -> None:
    answer = _aiokafka.ProbeAnswer(
        _answer({1: "a", 2: "b", 3: None}, {1: [2, 3], 0: [1, 2], 2: [3]}), named_topics=True
    )
    assert answer.topic_partitions() == {
        "orders": [
            PartitionReplicas(0, frozenset({"a", "b"})),
            PartitionReplicas(1, frozenset({"b"})),
            PartitionReplicas(2, frozenset()),
        ]
    }
    assert answer.found_topics() == ["orders"]


def test_without_racks_every_partition_has_none() -> None:
    answer = _aiokafka.ProbeAnswer(_answer({1: None, 2: None}, {1: [2], 0: [1, 2]}), named_topics=True)
    assert answer.topic_partitions() == {
        "orders": [PartitionReplicas(0, frozenset()), PartitionReplicas(1, frozenset())]
    }


def test_an_answer_naming_no_topics_finds_none() -> None:
    answer = _aiokafka.ProbeAnswer(_answer({1: None}, {0: [1]}), named_topics=False)
    assert answer.found_topics() == []
    assert answer.topic_partitions() is None


async def test_a_client_adopts_an_answer_with_brokers_and_refuses_one_without() -> None:
    client = AIOKafkaClient(bootstrap_servers="127.0.0.1:9")  # never bootstrapped
    empty = _aiokafka.ProbeAnswer(_answer({1: None}, {0: [1]}, brokers=False), named_topics=True)
    assert not _aiokafka.adopt_bootstrap(client, empty)
    assert client.cluster.brokers() == set(client.cluster._bootstrap_brokers.values()), "nothing applied"
    assert client._sync_task is None
    answer = _aiokafka.ProbeAnswer(_answer({1: None, 2: None}, {0: [1], 1: [2]}), named_topics=True)
    assert _aiokafka.adopt_bootstrap(client, answer)
    try:
        assert {b.nodeId for b in client.cluster.brokers()} == {1, 2}
        assert client.cluster.partitions_for_topic("orders") == {0, 1}
        assert client.cluster.partitions_for_topic("missing") is None
    finally:
        await client.close()


def _cluster_way(answer: _aiokafka.ProbeAnswer) -> dict[str, list[PartitionReplicas]]:
    """What topic_partitions() answered until issue 27: the answer applied to a ClusterMetadata of its own."""
    from aiokafka.cluster import ClusterMetadata

    cluster = ClusterMetadata()
    cluster.update_metadata(answer.cluster_metadata())
    return _from_cluster(cluster, [str(row[1]) for row in answer.response.topics])


def _from_cluster(cluster: Any, topics: list[str]) -> dict[str, list[PartitionReplicas]]:
    """The reference: partitions and replica racks as a ClusterMetadata holds them."""
    racks = {b.nodeId: b.rack for b in cluster.brokers() if b.rack}
    result = {}
    for topic in topics:
        partitions = cluster.partitions_for_topic(topic)
        if partitions:
            rows = cluster._partitions[topic]
            result[topic] = [
                PartitionReplicas(p, frozenset(racks[n] for n in rows[p].replicas if n in racks))
                for p in sorted(partitions)
            ]
    return result


def test_partitions_read_from_the_rows_equal_a_cluster_metadata_of_the_answer() -> None:
    """Read straight from the answer's rows (no ClusterMetadata built per start): the same partitions and
    racks as applying the answer, including a repeated partition row, a partition row with an error, a
    topic without partitions and an answer without brokers (which a client ignores: nothing known)."""
    nodes = [(1, "127.0.0.1", 9001, "a"), (2, "127.0.0.1", 9002, None), (3, "127.0.0.1", 9003, "c")]
    rows = [(0, 2, 1, [1, 3], [1]), (9, 0, -1, [2, 3], []), (0, 1, 2, [], []), (0, 2, 3, [3], [3])]
    cases = [
        MetadataResponse_v1(
            nodes, 1, [(0, "orders", False, rows), (0, "empty", False, []), (5, "x", False, rows)]
        ),
        MetadataResponse_v1([(n, h, p, None) for n, h, p, _ in nodes], 1, [(0, "orders", True, rows)]),
        MetadataResponse_v1([], 1, [(0, "orders", False, rows)]),
        _answer({1: "a", 2: "b"}, {p: [1 + p % 2, 2 - p % 2] for p in range(600)}),
    ]
    for response in cases:
        answer = _aiokafka.ProbeAnswer(response, named_topics=True)
        assert answer.topic_partitions() == _cluster_way(answer)
    assert _aiokafka.ProbeAnswer(cases[0], named_topics=True).topic_partitions() == {
        "orders": [
            PartitionReplicas(0, frozenset({"c"})),
            PartitionReplicas(1, frozenset()),
            PartitionReplicas(2, frozenset({"c"})),
        ]
    }


class _Client:
    """What topic_partitions asks of an aiokafka client, answering from one Metadata response."""

    def __init__(self, response: Any) -> None:
        self.response = response
        self.sent: list[Any] = []

    def get_random_node(self) -> int:
        return 1

    async def send(self, node_id: int, request: Any) -> Any:
        self.sent.append(request)
        return self.response

    async def fetch_all_metadata(self) -> Any:
        from aiokafka.cluster import ClusterMetadata

        cluster = ClusterMetadata()
        cluster.update_metadata(self.response)
        return cluster


async def test_the_membership_reads_named_and_all_topics_as_the_probe_does() -> None:
    """One row reader (issue 27): the membership's named-topics question gives what the probe's answer
    gives, and the all-topics one the same rows from a ClusterMetadata, internal topics only when asked."""
    nodes = [(1, "127.0.0.1", 9001, "a"), (2, "127.0.0.1", 9002, "b")]
    rows = [(0, 1, 1, [1, 2], [1]), (0, 0, 2, [2], [2])]
    response = MetadataResponse_v1(
        nodes,
        1,
        [(0, "orders", False, rows), (0, "__consumer_offsets", True, rows[:1]), (3, "missing", False, [])],
    )
    client = _Client(response)
    named = await _aiokafka.topic_partitions(client, frozenset({"orders", "missing"}))
    assert named == _aiokafka.ProbeAnswer(response, named_topics=True).topic_partitions()
    assert named["orders"] == [
        PartitionReplicas(0, frozenset({"b"})),
        PartitionReplicas(1, frozenset({"a", "b"})),
    ]
    assert "missing" not in named
    assert [r._topics for r in client.sent] == [["missing", "orders"]]
    assert client.sent[0]._allow_auto_topic_creation is False, "never creates a topic it asks about"
    everything = await _aiokafka.topic_partitions(client, None)
    assert everything == {"orders": named["orders"]}
    with_internal = await _aiokafka.topic_partitions(client, None, internal=True)
    assert with_internal == {
        "__consumer_offsets": [PartitionReplicas(1, frozenset({"a", "b"}))],
        "orders": named["orders"],
    }
    assert await _aiokafka.topic_partitions(client, frozenset()) == {}


async def test_a_client_may_adopt_the_brokers_without_the_topics() -> None:
    """The membership's client asks for the partitions it needs itself: it takes the brokers only, and
    the answer keeps its topics for the fetcher's client and the membership's first assignment."""
    response = _answer({1: "a", 2: None}, {p: [1, 2] for p in range(600)})
    answer = _aiokafka.ProbeAnswer(response, named_topics=True)
    client = AIOKafkaClient(bootstrap_servers="127.0.0.1:9")
    assert _aiokafka.adopt_bootstrap(client, answer, topics=False)
    try:
        assert {b.nodeId for b in client.cluster.brokers()} == {1, 2}
        assert client.cluster.topics() == set()
        assert client._sync_task is not None, "its own refresh runs as after bootstrap()"
        assert len((answer.topic_partitions() or {})["orders"]) == 600, "the answer itself is untouched"
    finally:
        await client.close()
    empty = _aiokafka.ProbeAnswer(_answer({1: None}, {0: [1]}, brokers=False), named_topics=True)
    assert not _aiokafka.adopt_bootstrap(AIOKafkaClient(bootstrap_servers="127.0.0.1:9"), empty, topics=False)


def test_our_decoded_answer_reads_and_applies_as_aiokafkas() -> None:
    """The probe decodes its Metadata answer with our codec (v10+, issue 27): the rows it hands on give the
    same partitions, racks, errors and cluster as aiokafka's decoding of the same answer."""
    import uuid

    from aiokafka.cluster import ClusterMetadata
    from aiokafka.protocol.metadata import MetadataResponse_v5

    from staticconsumer.protocol.metadata import (
        MetadataResponse,
        MetadataResponseBroker,
        MetadataResponsePartition,
        MetadataResponseTopic,
    )

    brokers = [(1, "127.0.0.1", 9001, "a"), (2, "127.0.0.1", 9002, None)]
    parts: list[tuple[int, int, int, list[int], list[int], list[int]]] = [
        (0, p, 1 + p % 2, [1 + p % 2, 2 - p % 2], [1 + p % 2], []) for p in range(600)
    ]
    theirs = MetadataResponse_v5(
        0,
        brokers,
        "cid",
        2,
        [(0, "orders", False, parts), (3, "missing", False, []), (0, "__x", True, parts[:1])],
    )
    ours = MetadataResponse(
        brokers=[MetadataResponseBroker(*b) for b in brokers],
        cluster_id="cid",
        controller_id=2,
        topics=[
            MetadataResponseTopic(
                e,
                name,
                uuid.uuid4(),
                internal,
                [MetadataResponsePartition(pe, p, lead, 0, r, i, o) for pe, p, lead, r, i, o in ps],
            )
            for e, name, internal, ps in theirs.topics
        ],
    )
    rows = _aiokafka._MetadataRows.of(MetadataResponse.decode(ours.encode(12), 12))
    mine, reference = (_aiokafka.ProbeAnswer(r, named_topics=True) for r in (rows, theirs))
    assert mine.topic_partitions() == reference.topic_partitions()
    assert mine.topic_errors() == reference.topic_errors() == {"orders": 0, "missing": 3, "__x": 0}
    assert mine.found_topics() == reference.found_topics()
    applied = []
    for answer in (mine, reference):
        cluster = ClusterMetadata()
        cluster.update_metadata(answer.cluster_metadata())
        applied.append(
            (
                cluster.brokers(),
                cluster.controller,
                cluster.topics(exclude_internal_topics=False),
                cluster.internal_topics if hasattr(cluster, "internal_topics") else cluster._internal_topics,
                {t: cluster._partitions[t] for t in cluster._partitions},
            )
        )
    assert applied[0] == applied[1]
    assert applied[0][2] == {"orders", "__x"}


def test_the_probe_answer_names_the_ids_of_the_topics_it_found() -> None:
    """KIP-848 assignments name topics by id: the probe's answer (ours, v10+) resolves those it found."""
    import uuid

    from staticconsumer.protocol.metadata import (
        MetadataResponse,
        MetadataResponseBroker,
        MetadataResponseTopic,
    )

    orders = uuid.uuid4()
    ours = MetadataResponse(
        brokers=[MetadataResponseBroker(1, "127.0.0.1", 9001)],
        controller_id=1,
        topics=[
            MetadataResponseTopic(0, "orders", orders, False, []),
            MetadataResponseTopic(3, "missing", uuid.UUID(int=0), False, []),
            MetadataResponseTopic(29, "secret", uuid.uuid4(), False, []),
        ],
    )
    rows = _aiokafka._MetadataRows.of(MetadataResponse.decode(ours.encode(12), 12))
    assert _aiokafka.ProbeAnswer(rows, named_topics=True).topic_ids() == {orders: "orders"}
    assert _aiokafka.ProbeAnswer(rows, named_topics=False).topic_ids() == {}
    from aiokafka.protocol.metadata import MetadataResponse_v5

    theirs = MetadataResponse_v5(0, [(1, "127.0.0.1", 9001, None)], "cid", 1, [(0, "orders", False, [])])
    assert _aiokafka.ProbeAnswer(theirs, named_topics=True).topic_ids() == {}, "aiokafka's answer has no ids"

"""How the fetcher is pointed at partitions: with aiokafka's own objects, no broker.

``AIOKafkaConsumer.assign([])`` (an eager revoke) asks aiokafka for metadata of every topic in the
cluster, and the next assignment asks again: every member paid both at every rebalance.
``fetch_partitions`` must change what is fetched without either, and still fetch what it is given.
"""

from __future__ import annotations

from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from staticconsumer import _aiokafka


@pytest.fixture
async def fetcher() -> Any:
    consumer = AIOKafkaConsumer(bootstrap_servers="127.0.0.1:9", group_id=None)  # never started
    refreshes: list[str] = []  # aiokafka's synchronizer then asks for the client's topics, or all if none

    def force_metadata_update() -> Any:
        refreshes.append("refresh")
        done = consumer._client._loop.create_future()
        done.set_result(True)
        return done

    consumer._client.force_metadata_update = force_metadata_update
    consumer.refreshes = refreshes
    return consumer


async def test_aiokafka_assign_of_nothing_refreshes_metadata_for_every_topic(fetcher: Any) -> None:
    """Why ``fetch_partitions`` exists: if aiokafka stops doing this, the helper can go."""
    fetcher.assign([TopicPartition("orders", 0)])
    fetcher.refreshes.clear()
    fetcher.assign([])
    assert fetcher.refreshes == ["refresh"]
    assert fetcher._client._topics == set()  # so the refresh asks for every topic in the cluster


async def test_revoking_everything_keeps_the_subscription_tracked_without_a_refresh(fetcher: Any) -> None:
    orders = [TopicPartition("orders", 0), TopicPartition("orders", 1)]
    _aiokafka.fetch_partitions(fetcher, orders, frozenset({"orders"}))
    assert fetcher.assignment() == set(orders)
    refreshed_for_first_assignment = list(fetcher.refreshes)
    _aiokafka.fetch_partitions(fetcher, [], frozenset({"orders"}))
    _aiokafka.fetch_partitions(fetcher, orders[:1], frozenset({"orders"}))
    assert fetcher.assignment() == {orders[0]}
    assert fetcher.refreshes == refreshed_for_first_assignment  # nothing more for the revoke and reassign
    assert fetcher._client._topics == {"orders"}


async def test_an_assigned_topic_new_to_the_client_is_refreshed(fetcher: Any) -> None:
    _aiokafka.fetch_partitions(fetcher, [], frozenset({"orders"}))
    fetcher.refreshes.clear()
    payments = TopicPartition("payments", 3)
    _aiokafka.fetch_partitions(fetcher, [payments], frozenset({"orders"}))
    assert fetcher.assignment() == {payments}
    assert fetcher._client._topics == {"orders", "payments"}
    assert len(fetcher.refreshes) == 1  # its leaders must be known before it can be fetched


def _cluster_answer(leaders: dict[tuple[str, int], int]) -> Any:
    """A Metadata v0 answer naming brokers 1-3 and each partition's leader."""
    from aiokafka.protocol.metadata import MetadataResponse_v0

    topics: dict[str, list[tuple[int, int, int, list[int], list[int]]]] = {}
    for (topic, partition), leader in leaders.items():
        topics.setdefault(topic, []).append((0, partition, leader, [leader], [leader]))
    brokers = [(node, "127.0.0.1", 9000 + node) for node in (1, 2, 3)]
    return MetadataResponse_v0(brokers, [(0, topic, rows) for topic, rows in topics.items()])


async def test_warming_loads_the_subscription_and_connects_to_its_leaders_before_any_assignment(
    fetcher: Any,
) -> None:
    """So the first fetch after SyncGroup waits for neither a Metadata request nor a new connection."""
    client = fetcher._client
    answer = _cluster_answer({("orders", 0): 1, ("orders", 1): 2, ("payments", 0): 2})

    def force_metadata_update() -> Any:
        fetcher.refreshes.append("refresh")
        client.cluster.update_metadata(answer)
        done = client._loop.create_future()
        done.set_result(True)
        return done

    connected: list[int] = []

    async def ready(node_id: int, **_: Any) -> bool:
        connected.append(node_id)
        return True

    client.force_metadata_update = force_metadata_update
    client.ready = ready
    await _aiokafka.warm_fetcher(fetcher, frozenset({"orders"}))
    assert fetcher.refreshes == ["refresh"]
    assert client._topics == {"orders"}
    assert sorted(connected) == [1, 2]  # the leaders of orders' partitions; payments is not subscribed
    assert fetcher.assignment() == set()  # nothing is fetched before the group assigns it

    _aiokafka.fetch_partitions(fetcher, [TopicPartition("orders", 1)], frozenset({"orders"}))
    assert fetcher.refreshes == ["refresh"]  # the assignment needs no metadata of its own


async def test_warming_without_topics_or_leaders_connects_nowhere(fetcher: Any) -> None:
    connected: list[int] = []

    async def ready(node_id: int, **_: Any) -> bool:
        connected.append(node_id)
        return True

    fetcher._client.ready = ready
    await _aiokafka.warm_fetcher(fetcher, frozenset())
    assert fetcher.refreshes == []
    assert connected == []
    await _aiokafka.warm_fetcher(fetcher, frozenset({"unknown"}))  # metadata names no partition of it
    assert fetcher.refreshes == ["refresh"]
    assert connected == []


async def test_a_fetcher_bootstrapped_from_a_probe_naming_the_topics_does_not_ask_for_them_again(
    fetcher: Any,
) -> None:
    """The membership's probe named the subscribed topics: warming the fetcher sends no Metadata request,
    and a subscribed topic the probe did not find is still asked for."""
    client = fetcher._client
    answer = _aiokafka.ProbeAnswer(_cluster_answer({("orders", 0): 1, ("orders", 1): 2}), named_topics=True)
    connected: list[int] = []

    async def ready(node_id: int, **_: Any) -> bool:
        connected.append(node_id)
        return True

    client.ready = ready
    await _aiokafka.start_consumer_from(fetcher, None, answer)
    try:
        assert client._topics == {"orders"}
        await _aiokafka.warm_fetcher(fetcher, frozenset({"orders"}))
        assert fetcher.refreshes == []
        assert sorted(connected) == [1, 2]
        await _aiokafka.warm_fetcher(fetcher, frozenset({"orders", "unknown"}))
        assert fetcher.refreshes == ["refresh"]
    finally:
        await fetcher.stop()


async def test_warming_connects_to_each_leader_once_and_skips_partitions_without_one(fetcher: Any) -> None:
    """Leaders read from the metadata's rows (600 partitions cost 0.4 ms through the per-partition API):
    each leader of the subscribed topics once, none for a partition whose leader is unknown (-1)."""
    client = fetcher._client
    leaders = {("orders", p): 1 + p % 3 for p in range(600)} | {("orders", 600): -1, ("other", 0): 3}
    client.cluster.update_metadata(_cluster_answer(leaders))
    client._topics = {"orders"}
    connected: list[int] = []

    async def ready(node_id: int, **_: Any) -> bool:
        connected.append(node_id)
        return True

    client.ready = ready
    await _aiokafka.warm_fetcher(fetcher, frozenset({"orders"}))
    assert fetcher.refreshes == []
    assert sorted(connected) == [1, 2, 3]

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

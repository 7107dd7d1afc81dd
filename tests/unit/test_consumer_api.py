"""The aiokafka-shaped API of StaticConsumer without a broker: what it accepts, what it refuses (a
TypeError or ValueError naming the argument, before anything is sent), and the calls that need an
owned partition or a running consumer."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from aiokafka import ConsumerRebalanceListener as AiokafkaListener
from aiokafka.structs import OffsetAndMetadata as AiokafkaOffsetAndMetadata
from aiokafka.structs import TopicPartition as AiokafkaTopicPartition

from staticconsumer import _inputs
from staticconsumer._partitions import ApplicationPartitions
from staticconsumer.consumer import StaticConsumer
from staticconsumer.errors import ConsumerStoppedError, IllegalStateError
from staticconsumer.listener import ListenerCall, call_listener
from staticconsumer.membership import OffsetAndMetadata, ReleaseReason, TopicPartition

TP = TopicPartition("orders", 0)


def _consumer(*topics: str, **options: Any) -> StaticConsumer:
    return StaticConsumer(*topics, bootstrap_servers="127.0.0.1:1", group_id="g", **options)


# -- commit input --------------------------------------------------------------------------------------


def test_commit_takes_every_shape_aiokafka_takes() -> None:
    offsets = {
        AiokafkaTopicPartition("orders", 0): AiokafkaOffsetAndMetadata(3, "m"),
        TopicPartition("orders", 1): (4, "meta"),
        ("orders", 2): 5,
        TopicPartition("orders", 3): OffsetAndMetadata(6, "ours", leader_epoch=2),
    }
    assert _inputs.commit_offsets(offsets) == {
        TopicPartition("orders", 0): OffsetAndMetadata(3, "m"),
        TopicPartition("orders", 1): OffsetAndMetadata(4, "meta"),
        TopicPartition("orders", 2): OffsetAndMetadata(5, ""),
        TopicPartition("orders", 3): OffsetAndMetadata(6, "ours", leader_epoch=2),
    }


@pytest.mark.parametrize(
    ("offsets", "error", "message"),
    [
        ([(TP, 3)], TypeError, "offsets must be a mapping"),
        ({"orders": 3}, TypeError, "offsets key 'orders' must be a TopicPartition"),
        (
            {TP: 3.0},
            TypeError,
            r"offsets\[TopicPartition\(topic='orders', partition=0\)\] must be an int offset",
        ),
        ({TP: True}, TypeError, "must be an int offset, an OffsetAndMetadata or an"),
        (
            {TP: -1},
            ValueError,
            r"offsets\[TopicPartition\(topic='orders', partition=0\)\] must be an offset from 0",
        ),
        ({TP: 2**63}, ValueError, "must be an offset from 0 to 2\\*\\*63-1"),
        ({TP: (3, 7)}, TypeError, "the metadata must be a str, not int"),
        ({TP: ("3", "m")}, TypeError, r"offset must be an int offset, not str"),
        ({TP: AiokafkaOffsetAndMetadata(3, None)}, TypeError, "the metadata must be a str, not NoneType"),
        ({TopicPartition("orders", -1): 3}, ValueError, "partition -1 of topic 'orders' is negative"),
    ],
)
async def test_bad_commit_input_names_the_entry_before_anything_else(
    offsets: Any, error: type[Exception], message: str
) -> None:
    consumer = _consumer("orders")  # not started: the input is refused before the state is looked at
    with pytest.raises(error, match=message):
        await consumer.commit(offsets)


async def test_a_good_commit_on_a_consumer_that_is_not_running_is_a_stopped_error() -> None:
    with pytest.raises(ConsumerStoppedError):
        await _consumer("orders").commit({TP: 3})


# -- options and subscription ----------------------------------------------------------------------------


def test_deserializers_and_consumer_timeout_go_to_the_fetcher() -> None:
    consumer = _consumer(
        "orders", key_deserializer=None, value_deserializer=json.loads, consumer_timeout_ms=100
    )
    kwargs = consumer._fetcher_kwargs()
    assert kwargs["key_deserializer"] is None
    assert kwargs["value_deserializer"] is json.loads
    assert kwargs["consumer_timeout_ms"] == 100
    assert "key_deserializer" not in repr(consumer.settings)


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"value_deserializer": "json"}, TypeError, "value_deserializer must be a callable"),
        ({"consumer_timeout_ms": -1}, ValueError, "consumer_timeout_ms must not be negative"),
        ({"consumer_timeout_ms": "200"}, TypeError, "consumer_timeout_ms must be a number"),
        ({"listener": object()}, TypeError, "listener must be a ConsumerRebalanceListener"),
        ({"pattern": "orders-("}, ValueError, "pattern 'orders-\\(' is not a valid regular expression"),
    ],
)
def test_bad_options_are_refused_by_name(
    options: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        _consumer(**options)


def test_a_consumer_may_be_built_without_a_subscription_and_subscribe_later() -> None:
    consumer = _consumer()
    assert consumer.subscription() == frozenset()
    consumer.subscribe(["orders", "payments"])
    assert consumer.subscription() == {"orders", "payments"}
    consumer.subscribe(pattern="orders-.*")
    assert consumer.subscription() == frozenset(), "a pattern names topics once metadata matched it"
    consumer.unsubscribe()
    assert consumer.subscription() == frozenset()


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        ({"topics": ["a"], "pattern": "b"}, TypeError, "topics or a pattern, not both"),
        ({}, TypeError, "needs topics or a pattern"),
        ({"topics": "orders"}, TypeError, "topics must be a list, tuple or set"),
        ({"topics": ["orders", 3]}, TypeError, r"topics\[1\] must be a non-empty str"),
        ({"pattern": "("}, ValueError, "not a valid regular expression"),
        ({"topics": ["a"], "listener": 42}, TypeError, "listener must be a ConsumerRebalanceListener"),
    ],
)
def test_subscribe_refuses_what_aiokafka_refuses(
    call: dict[str, Any], error: type[Exception], message: str
) -> None:
    consumer = _consumer("orders")
    with pytest.raises(error, match=message):
        consumer.subscribe(**call)
    assert consumer.subscription() == {"orders"}, "nothing changed"


def test_subscribe_replaces_the_listener_as_aiokafka_does() -> None:
    class Mine(AiokafkaListener):  # type: ignore[misc]
        def on_partitions_revoked(self, revoked: Any) -> None: ...

        def on_partitions_assigned(self, assigned: Any) -> None: ...

    consumer = _consumer("orders")
    mine = Mine()
    consumer.subscribe(["orders"], listener=mine)
    assert consumer._partitions.listener is mine
    consumer.subscribe(["orders"])
    assert consumer._partitions.listener is not mine


# -- calls that need a running consumer or an owned partition ---------------------------------------------


def test_seek_and_pause_before_start_say_why() -> None:
    consumer = _consumer("orders")
    for call in (lambda: consumer.seek(TP, 3), lambda: consumer.pause(TP), lambda: consumer.resume(TP)):
        with pytest.raises(
            IllegalStateError, match=r"orders\[0\]\): this consumer is not running, so it owns no"
        ):
            call()
    with pytest.raises(IllegalStateError, match="highwater"):
        consumer.highwater(TP)


async def test_offset_queries_before_start_say_why() -> None:
    consumer = _consumer("orders")
    with pytest.raises(ConsumerStoppedError, match="call start\\(\\) first"):
        await consumer.end_offsets([TP])
    with pytest.raises(ConsumerStoppedError):
        await consumer.committed(TP)
    with pytest.raises(IllegalStateError):
        await consumer.position(TP)
    assert consumer.partitions_for_topic("orders") is None, "no metadata yet, as in aiokafka"
    assert consumer.missing_topics == frozenset()
    assert consumer.connection_state.value == "disconnected"


def test_seek_checks_its_arguments_first() -> None:
    consumer = _consumer("orders")
    with pytest.raises(ValueError, match="offset must be an offset from 0"):
        consumer.seek(TP, -5)
    with pytest.raises(TypeError, match="partition must be a TopicPartition"):
        consumer.seek("orders", 5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"timestamps\[.*\] is -1: a target time cannot be negative"):
        _inputs.timestamps({TP: -1})


def test_assign_is_refused_with_the_way_out() -> None:
    with pytest.raises(IllegalStateError, match=re.escape("build it with group_id=None")):
        _consumer("orders").assign([TP])


async def test_a_held_partition_answers_and_a_foreign_one_is_named() -> None:
    partitions = ApplicationPartitions(AiokafkaStyle(), lambda: None)
    await partitions.assign(frozenset({TP}), frozenset({TP}), 1, {TP: 7})
    assert partitions.require((TP,), "seek") == (TP,)
    assert partitions.require((), "seek_to_end") == (TP,), "none named: every owned partition"
    with pytest.raises(
        IllegalStateError,
        match=r"seek: orders\[1\] is not assigned to this consumer \(it owns: orders\[0\]\)",
    ):
        partitions.require((TopicPartition("orders", 1),), "seek")
    partitions.stop_fetching(None)
    assert partitions.holds(TP), "stopped but not yet revoked: still ours inside on_partitions_revoked"
    assert await partitions.position(TP) == 7


# -- listeners written for aiokafka ----------------------------------------------------------------------


class AiokafkaStyle(AiokafkaListener):  # type: ignore[misc]
    """What an aiokafka user writes: revoked and assigned only (aiokafka has no on_partitions_lost)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, frozenset[TopicPartition]]] = []

    async def on_partitions_revoked(self, revoked: Any) -> None:
        self.calls.append(("revoked", frozenset(revoked)))

    async def on_partitions_assigned(self, assigned: Any) -> None:
        self.calls.append(("assigned", frozenset(assigned)))


async def test_an_aiokafka_listener_gets_lost_partitions_as_revoked() -> None:
    listener = AiokafkaStyle()
    assert not hasattr(listener, "on_partitions_lost")
    await call_listener(listener, ListenerCall.LOST, frozenset({TP}))
    assert listener.calls == [("revoked", frozenset({TP}))]


async def test_the_application_side_runs_an_aiokafka_listener_through_a_whole_life() -> None:
    listener = AiokafkaStyle()
    partitions = ApplicationPartitions(listener, lambda: None)
    await partitions.assign(frozenset({TP}), frozenset({TP}), 1, {TP: 5})
    assert await partitions.position(TP) == 5
    revoked = await partitions.revoke(frozenset({TP}), ReleaseReason.REBALANCE, collect_positions=True)
    assert revoked == {TP: OffsetAndMetadata(5)}
    await partitions.assign(frozenset({TP}), frozenset({TP}), 2, {})
    await partitions.lose(frozenset({TP}), ReleaseReason.FENCED)
    assert listener.calls == [
        ("assigned", frozenset({TP})),
        ("revoked", frozenset({TP})),
        ("assigned", frozenset({TP})),
        ("revoked", frozenset({TP})),
    ]


class _Client:
    def __init__(self) -> None:
        self._topics: set[str] = set()

    def set_topics(self, topics: set[str]) -> None:
        self._topics = set(topics)


class _Fetcher:
    """What ApplicationPartitions drives of aiokafka's consumer, recorded."""

    def __init__(self) -> None:
        self._client = _Client()
        self.assigned: list[Any] = []
        self.calls: list[tuple[str, Any]] = []

    def assignment(self) -> set[Any]:
        return set(self.assigned)

    @property
    def _subscription(self) -> Any:
        """aiokafka's SubscriptionState: staticconsumer assigns through its ``assign_from_user``."""
        return self

    def assign_from_user(self, partitions: list[Any]) -> None:
        self.assign(partitions)

    def assign(self, partitions: list[Any]) -> None:
        self.assigned = list(partitions)

    def seek(self, tp: Any, offset: int) -> None:
        self.calls.append(("seek", (tuple(tp), offset)))

    async def seek_to_beginning(self, *tps: Any) -> bool:
        self.calls.append(("beginning", sorted(tuple(tp) for tp in tps)))
        return True

    async def seek_to_end(self, *tps: Any) -> bool:
        self.calls.append(("end", sorted(tuple(tp) for tp in tps)))
        return True


async def test_a_seek_made_in_the_listener_before_the_fetcher_started_is_not_lost() -> None:
    """The group can assign (and the listener seek) while the fetcher still bootstraps."""
    listener = AiokafkaStyle()
    partitions = ApplicationPartitions(listener, lambda: None)
    tp1, tp2 = TopicPartition("orders", 1), TopicPartition("orders", 2)
    await partitions.assign(frozenset({TP, tp1, tp2}), frozenset({TP, tp1, tp2}), 1, {TP: 4, tp1: 9})
    partitions.reset((TP,), "earliest")
    partitions.sought(tp1, 2)
    partitions.reset((tp2,), "latest")
    fetcher = _Fetcher()
    partitions.topics = frozenset({"orders"})
    await partitions.attach(fetcher)  # type: ignore[arg-type]
    assert set(fetcher.assigned) == {TP, tp1, tp2}
    assert ("seek", (("orders", 1), 2)) in fetcher.calls
    assert ("beginning", [("orders", 0)]) in fetcher.calls
    assert ("end", [("orders", 2)]) in fetcher.calls
    assert fetcher._client._topics == {"orders"}

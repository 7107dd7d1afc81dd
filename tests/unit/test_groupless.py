"""StaticConsumer(group_id=None) without a broker: how a consumer without a group is asked for (only an
explicit None: a forgotten group_id is still an error), what it refuses and how it says so."""

from __future__ import annotations

import re
from typing import Any

import pytest
from aiokafka.errors import IllegalOperation, KafkaConnectionError

from staticconsumer import StaticConsumer
from staticconsumer._groupless import GrouplessConsumer
from staticconsumer.connection import ConnectionState
from staticconsumer.errors import ConfigurationError, ConsumerStoppedError, IllegalStateError, SettingsError
from staticconsumer.membership import MembershipObserver, TopicPartition
from staticconsumer.settings import Settings

SERVERS = "127.0.0.1:1"
TP = TopicPartition("orders", 0)


def _groupless(*topics: str, **options: Any) -> StaticConsumer:
    return StaticConsumer(*topics, bootstrap_servers=SERVERS, group_id=None, **options)


def _public(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


def test_group_id_none_builds_a_consumer_without_a_group() -> None:
    consumer = _groupless("orders")
    assert type(consumer) is GrouplessConsumer
    assert isinstance(consumer, StaticConsumer)
    assert consumer.settings.groupless
    assert consumer.settings.effective_client_id == "consumer"
    assert consumer.subscription() == {"orders"}
    assert (consumer.member_id, consumer.generation, consumer.is_leader) == ("", -1, False)
    assert consumer.rebalance_protocol == "none"
    assert _public(GrouplessConsumer) == _public(StaticConsumer)
    assert {n for n in vars(consumer) if not n.startswith("_")} == {"settings", "event_log"}
    grouped = StaticConsumer("orders", bootstrap_servers=SERVERS, group_id="g")
    assert type(grouped) is StaticConsumer
    assert not grouped.settings.groupless


def test_a_group_id_left_out_means_no_group_as_in_aiokafka() -> None:
    left_out = StaticConsumer("orders", bootstrap_servers=SERVERS)
    assert type(left_out) is GrouplessConsumer
    assert left_out.settings.groupless
    # Everywhere else a group id is required: blank, from the environment, or on Settings.
    with pytest.raises(SettingsError, match=r"group_id \(keyword argument\)='': required"):
        StaticConsumer("orders", bootstrap_servers=SERVERS, group_id="")
    with pytest.raises(SettingsError, match=re.escape("KAFKA_GROUP_ID=(unset): required; set it")):
        StaticConsumer.from_env("orders", environ={"KAFKA_BOOTSTRAP_SERVERS": SERVERS})
    with pytest.raises(SettingsError, match="group_id='': required"):
        Settings(bootstrap_servers=(SERVERS,), group_id="")


def test_settings_carry_no_group_through_from_env_and_changes() -> None:
    environ = {"KAFKA_BOOTSTRAP_SERVERS": SERVERS, "KAFKA_GROUP_ID": "billing"}
    from_env = StaticConsumer.from_env("orders", environ=environ, group_id=None)  # the keyword wins
    assert isinstance(from_env, GrouplessConsumer)
    assert from_env.settings.group_id == ""
    settings = Settings.from_env(environ={}, bootstrap_servers=SERVERS, group_id=None)
    changed = StaticConsumer(settings=settings, max_poll_records=7)  # settings re-validated with a change
    assert isinstance(changed, GrouplessConsumer)
    assert changed.settings.groupless
    assert changed.settings.max_poll_records == 7
    regrouped = StaticConsumer(settings=settings, group_id="billing")
    assert type(regrouped) is StaticConsumer
    assert regrouped.settings.group_id == "billing"


def test_a_static_member_needs_a_group() -> None:
    with pytest.raises(
        SettingsError, match=r"group_instance_id \(keyword argument\)='pod-0': set without a group"
    ):
        _groupless("orders", group_instance_id="pod-0")


class _Observer(MembershipObserver):
    pass


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("request_hook", lambda api, version, message: None),
        ("observers", [_Observer()]),
        ("api_version_caps", {"JoinGroup": 5}),
        ("telemetry", _Observer()),
    ],
)
def test_options_that_watch_a_group_are_refused_by_name(option: str, value: object) -> None:
    with pytest.raises(ConfigurationError, match=rf"^{option} watches a consumer group"):
        _groupless("orders", **{option: value})


def test_a_subclass_cannot_drop_the_group() -> None:
    class Billing(StaticConsumer):
        pass

    with pytest.raises(ConfigurationError, match="group_id is required"):
        Billing("orders", bootstrap_servers=SERVERS, group_id=None)


def test_subscribe_and_assign_arguments_are_checked() -> None:
    with pytest.raises(ConfigurationError, match="topics or to a pattern, not both"):
        _groupless("orders", pattern="o.*")
    consumer = _groupless()
    with pytest.raises(TypeError, match="not both"):
        consumer.subscribe(["orders"], pattern="o.*")
    with pytest.raises(TypeError, match="needs topics or a pattern"):
        consumer.subscribe()
    with pytest.raises(TypeError, match=r"partitions\[0\] must be a TopicPartition"):
        consumer.assign(["orders"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="partitions must be a collection of TopicPartition"):
        consumer.assign("orders")  # type: ignore[arg-type]
    consumer.assign([TP])
    assert consumer.assignment() == {TP}
    with pytest.raises(IllegalStateError, match=r"subscribe\(\): partitions were assigned with assign\(\)"):
        consumer.subscribe(["orders"])
    consumer.unsubscribe()
    assert consumer.assignment() == frozenset()
    consumer.subscribe(pattern="ord.*")
    with pytest.raises(IllegalStateError, match=r"assign\(\): this consumer is subscribed"):
        consumer.assign([TP])


async def test_calls_before_start_fail_as_a_stopped_consumer_does() -> None:
    consumer = _groupless()
    consumer.assign([TP])
    with pytest.raises(ConsumerStoppedError, match="call start\\(\\) first"):
        await consumer.getmany()
    with pytest.raises(ConsumerStoppedError, match="call start\\(\\) first"):
        await consumer.getone()
    with pytest.raises(ConsumerStoppedError, match="call start\\(\\) first"):
        await consumer.end_offsets([TP])
    with pytest.raises(IllegalStateError, match=r"position\(orders\[0\]\): this consumer is not running"):
        await consumer.position(TP)
    assert [record async for record in consumer] == []
    assert consumer.paused() == frozenset()
    assert consumer.partitions_for_topic("orders") is None
    await consumer.stop()  # nothing started: nothing to close
    with pytest.raises(IllegalStateError, match="cannot restart"):
        await consumer.start()


async def test_commits_and_committed_offsets_need_a_group() -> None:
    consumer = _groupless("orders")
    for call in (
        consumer.commit(),
        consumer.commit({TP: 5}),
        consumer.committed(TP),
        consumer.seek_to_committed(),
    ):
        with pytest.raises(
            IllegalOperation, match=r"requires a group_id: this consumer was built with group_id=None"
        ):
            await call


async def test_a_failed_start_can_be_retried() -> None:
    consumer = _groupless(request_timeout_ms=1000, retry_backoff_ms=10)  # nothing listens on port 1
    for _ in range(2):
        with pytest.raises(KafkaConnectionError, match="Unable to bootstrap"):
            await consumer.start()
        assert consumer.connection_state is ConnectionState.DISCONNECTED
    await consumer.stop()


def test_aiokafka_keywords_are_taken_as_by_a_group_consumer() -> None:
    """A one-import port passes what it passed to aiokafka, group or not: the assignor classes and the
    fetcher's own options are read the same way (the group-less consumer has no assignment to make)."""
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    consumer = StaticConsumer(
        "orders",
        bootstrap_servers=SERVERS,
        partition_assignment_strategy=(RoundRobinPartitionAssignor,),
        value_deserializer=bytes.decode,
    )
    assert type(consumer) is GrouplessConsumer
    assert consumer.settings.assignors == ("roundrobin",)
    with pytest.raises(SettingsError, match="partition_assignment_strategy"):
        StaticConsumer("orders", bootstrap_servers=SERVERS, partition_assignment_strategy=(object,))

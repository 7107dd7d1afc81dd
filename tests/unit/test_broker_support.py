"""The consumer-protocol check and the broker release derived from ApiVersions (no broker needed).

RELEASES holds, for the landmark APIs, the version ranges in each release's kafka-clients message specs
(3.7.2, 3.8.1, 3.9.2, 4.0.2, 4.1.2, 4.2.2, 4.3.1; stable versions only). The real 3.9.2 and 4.3.1 brokers
are checked in tests/integration/test_broker_support.py.
"""

from __future__ import annotations

import pytest

from staticconsumer import broker_support
from staticconsumer.broker_support import (
    RELEASE_LANDMARKS,
    broker_release,
    check_consumer_protocol,
    consumer_protocol_refused,
)
from staticconsumer.errors import ConsumerProtocolUnsupportedError, StaticConsumerError

RELEASES: dict[str, dict[int, tuple[int, int]]] = {
    "3.7": {16: (0, 4), 10: (0, 4), 68: (0, 0), 1: (0, 16), 8: (0, 9), 35: (0, 4)},
    "3.8": {16: (0, 5), 10: (0, 5), 68: (0, 0), 1: (0, 16), 8: (0, 9), 35: (0, 4)},
    "3.9": {16: (0, 5), 10: (0, 6), 68: (0, 0), 1: (0, 17), 8: (0, 9), 35: (0, 4)},
    "4.0": {16: (0, 5), 10: (0, 6), 68: (0, 1), 1: (4, 17), 8: (2, 9), 35: (1, 4)},
    "4.1": {16: (0, 5), 10: (0, 6), 68: (0, 1), 1: (4, 18), 8: (2, 9), 35: (1, 4)},
    "4.2": {16: (0, 5), 10: (0, 6), 68: (0, 1), 1: (4, 18), 8: (2, 10), 35: (1, 4)},
    "4.3": {16: (0, 5), 10: (0, 6), 68: (0, 1), 1: (4, 18), 8: (2, 10), 35: (1, 5)},
}


@pytest.mark.parametrize("release", list(RELEASES))
def test_each_release_is_recognised(release: str) -> None:
    expected = {"3.7": "3.7 or older", "4.3": "4.3 or newer"}.get(release, release)
    assert broker_release(RELEASES[release]) == expected


def test_landmarks_are_in_release_order_and_each_is_new_in_its_release() -> None:
    releases = [landmark.release for landmark in RELEASE_LANDMARKS]
    assert releases == sorted(releases, key=lambda r: tuple(int(x) for x in r.split(".")))
    for landmark in RELEASE_LANDMARKS:
        before = [r for r in RELEASES if r < landmark.release]
        assert all(RELEASES[r][landmark.api_key][1] < landmark.version for r in before), landmark


def test_an_unknown_mix_says_so() -> None:
    odd = {**RELEASES["4.3"], 16: (0, 4)}  # a 4.3 without ListGroups v5
    assert broker_release(odd).startswith("4.3 or newer by its API versions, though it lacks ListGroups v5")
    assert broker_release({}) == "3.7 or older"


@pytest.mark.parametrize("release", ["4.0", "4.1", "4.2", "4.3"])
def test_kafka_4_passes_with_heartbeat_v1(release: str) -> None:
    assert check_consumer_protocol(RELEASES[release], node_id=1) == 1
    assert check_consumer_protocol({**RELEASES[release], 68: (0, 7)}) == 1  # never above what we speak


@pytest.mark.parametrize("release", ["3.8", "3.9"])
def test_the_preview_v0_is_refused_with_the_release_and_the_ways_out(release: str) -> None:
    with pytest.raises(ConsumerProtocolUnsupportedError) as raised:
        check_consumer_protocol(RELEASES[release], node_id=3)
    error = raised.value
    assert isinstance(error, StaticConsumerError)
    assert (error.node_id, error.broker_release, error.advertised) == (3, release, (0, 0))
    text = str(error)
    assert f"broker 3 (Kafka {release}," in text
    assert "ConsumerGroupHeartbeat v0-v0" in text
    assert "Upgrade the brokers to Kafka 4.0 or newer" in text
    assert "group_protocol=classic" in text


def test_a_broker_without_the_api_is_refused() -> None:
    versions = {k: v for k, v in RELEASES["3.7"].items() if k != 68}
    with pytest.raises(
        ConsumerProtocolUnsupportedError, match=r"does not offer ConsumerGroupHeartbeat \(API 68\)"
    ) as raised:
        check_consumer_protocol(versions)
    assert raised.value.advertised is None
    assert "the broker (Kafka 3.7 or older" in str(raised.value)


def test_a_refusal_at_runtime_names_the_switches() -> None:
    error = consumer_protocol_refused(RELEASES["4.3"], node_id=1, broker_message=None)
    text = str(error)
    assert "UNSUPPORTED_VERSION" in text
    assert "group.coordinator.rebalance.protocols" in text
    assert "group.version=1" in text
    assert error.advertised == (0, 1)
    assert "it said: nope" in str(consumer_protocol_refused(RELEASES["4.3"], broker_message="nope"))


def test_the_async_helper_reads_the_coordinators_versions(monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    asked: list[int] = []

    async def versions(client: object, node_id: int) -> dict[int, tuple[int, int]]:
        asked.append(node_id)
        return RELEASES["3.9"] if node_id == 2 else RELEASES["4.3"]

    monkeypatch.setattr(broker_support._aiokafka, "broker_versions", versions)
    assert asyncio.run(broker_support.ensure_consumer_protocol(object(), 1)) == 1
    with pytest.raises(ConsumerProtocolUnsupportedError, match="broker 2 "):
        asyncio.run(broker_support.ensure_consumer_protocol(object(), 2))
    assert asked == [1, 2]

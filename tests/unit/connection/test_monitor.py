"""ConnectionMonitor's folding and states, driven by log records shaped exactly as aiokafka 0.14 emits
them; the clients are stand-ins exposing only what ``staticconsumer._aiokafka`` reads (broker list and
open connections). The real outage, with a real broker stopped and restarted, is
tests/integration/test_connection_monitor.py."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import aiokafka.client
import aiokafka.cluster
import aiokafka.consumer.fetcher
import pytest
from aiokafka.errors import KafkaConnectionError, NodeNotReadyError, UnknownTopicOrPartitionError

from staticconsumer import _aiokafka
from staticconsumer.connection import ConnectionMonitor, ConnectionState
from staticconsumer.connection.monitor import lag_tick_s
from staticconsumer.connection.reconnect import ReconnectBackoff


@dataclass
class Broker:
    nodeId: int  # aiokafka BrokerMetadata field name
    host: str
    port: int


@dataclass
class Cluster:
    known: list[Broker]
    listed_topics: set[str] = field(default_factory=set)

    def brokers(self) -> list[Broker]:
        return self.known

    def topics(self) -> set[str]:
        return self.listed_topics


@dataclass
class Connection:
    up: bool = True

    def connected(self) -> bool:
        return self.up


@dataclass
class Client:
    cluster: Cluster
    _conns: dict[tuple[int, Any], Connection] = field(default_factory=dict)


def _client(*ports: int) -> Client:
    return Client(Cluster([Broker(i + 1, "10.0.0.1", port) for i, port in enumerate(ports)]))


def _refused(port: int) -> OSError:
    return ConnectionRefusedError(111, f"Connect call failed ('10.0.0.1', {port})")


def _log_connect_failure(node: int, error: object) -> None:
    logging.getLogger("aiokafka").error("Unable connect to node with id %s: %s", node, error)


def _flood(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith("aiokafka")]


def _ours(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "staticconsumer.connection.monitor"]


@pytest.fixture
def monitor() -> Iterator[ConnectionMonitor]:
    states: list[ConnectionState] = []
    watching = ConnectionMonitor("group 'g'", on_change=states.append)
    watching.changes = states  # type: ignore[attr-defined]
    watching.install()
    yield watching
    watching.close()


def test_the_templates_folded_are_aiokafkas_own_words() -> None:
    """If aiokafka rewords a message, the filter would silently stop folding: fail here instead."""
    sources = {
        "aiokafka": inspect.getsource(aiokafka.client),
        "aiokafka.consumer.fetcher": inspect.getsource(aiokafka.consumer.fetcher),
        "aiokafka.cluster": inspect.getsource(aiokafka.cluster),
    }
    templates = {
        "aiokafka": [
            _aiokafka._CONNECT_FAILED,
            _aiokafka._METADATA_FAILED,
            _aiokafka._METADATA_REQUEST_FAILED,
        ],
        "aiokafka.consumer.fetcher": list(_aiokafka._FETCH_FAILED),
        "aiokafka.cluster": [_aiokafka._TOPIC_NOT_FOUND, _aiokafka._TOPIC_NOT_AUTHORIZED],
    }
    for logger, messages in templates.items():
        assert set(_aiokafka.NOISY_LOGGERS) >= {logger}
        for message in messages:
            assert f'"{message}"' in sources[logger] or f"'{message}'" in sources[logger], message


def test_records_are_classified_with_node_cause_and_address() -> None:
    def record(name: str, message: str, *args: object) -> logging.LogRecord:
        return logging.LogRecord(name, logging.ERROR, __file__, 1, message, args, None)

    noise = _aiokafka.classify_record(record("aiokafka", _aiokafka._CONNECT_FAILED, 3, _refused(9094)))
    assert noise is not None
    assert (noise.kind, noise.node_ids, noise.address) == ("connection", (3,), "10.0.0.1:9094")
    assert "Connect call failed" in noise.cause
    closed = KafkaConnectionError("Connection at 10.0.0.1:9092 closed")
    noise = _aiokafka.classify_record(
        record("aiokafka.consumer.fetcher", _aiokafka._FETCH_FAILED[0], 1, closed)
    )
    assert noise is not None
    assert noise.address == "10.0.0.1:9092"
    noise = _aiokafka.classify_record(record("aiokafka", _aiokafka._METADATA_FAILED, [1, 2]))
    assert noise is not None
    assert noise.node_ids == (1, 2)
    assert noise.address is None
    noise = _aiokafka.classify_record(record("aiokafka.cluster", _aiokafka._TOPIC_NOT_FOUND, "orders"))
    assert noise is not None
    assert (noise.kind, noise.topic, noise.unauthorized) == ("topic", "orders", False)
    not_ready = NodeNotReadyError("node 1")
    assert _aiokafka.classify_record(
        record("aiokafka.consumer.fetcher", _aiokafka._FETCH_FAILED[0], 1, not_ready)
    )
    broker_error = UnknownTopicOrPartitionError()
    assert (
        _aiokafka.classify_record(
            record("aiokafka.consumer.fetcher", _aiokafka._FETCH_FAILED[0], 1, broker_error)
        )
        is None
    ), "a broker's verdict is not a connection failure"
    assert _aiokafka.classify_record(record("aiokafka", "Heartbeat failed: %r", 1)) is None
    assert _aiokafka.classify_record(record("aiokafka", _aiokafka._METADATA_FAILED, ["bootstrap"])) is None


def test_an_outage_is_one_warning_however_many_records(
    monitor: ConnectionMonitor, caplog: pytest.LogCaptureFixture
) -> None:
    monitor.watch(_client(9092))
    for _ in range(40):
        _log_connect_failure(1, _refused(9092))
        logging.getLogger("aiokafka").error("Unable to update metadata from %s", [1])
    assert not _flood(caplog)
    (warning,) = _ours(caplog)
    assert "Kafka broker 10.0.0.1:9092 (node 1) is unreachable: [Errno 111] Connect call failed" in warning
    assert "(1 of 1 known brokers unreachable, connection state disconnected)" in warning
    assert monitor.state is ConnectionState.DISCONNECTED
    assert monitor.outages["10.0.0.1:9092"].suppressed == 79
    assert monitor.changes == [ConnectionState.DISCONNECTED]  # type: ignore[attr-defined]


def test_one_broker_of_three_down_is_degraded(
    monitor: ConnectionMonitor, caplog: pytest.LogCaptureFixture
) -> None:
    monitor.watch(_client(9092, 9093, 9094))
    _log_connect_failure(2, _refused(9093))
    assert monitor.state is ConnectionState.DEGRADED
    assert "(1 of 3 known brokers unreachable, connection state degraded)" in _ours(caplog)[0]


def test_records_about_brokers_we_do_not_watch_pass_through(
    monitor: ConnectionMonitor, caplog: pytest.LogCaptureFixture
) -> None:
    monitor.watch(_client(9092))
    _log_connect_failure(7, _refused(9092))  # no node 7 here
    _log_connect_failure(
        1, ConnectionRefusedError(111, "Connect call failed ('10.9.9.9', 9092)")
    )  # other cluster
    logging.getLogger("aiokafka").error("Heartbeat failed: %r", "unrelated")
    assert len(_flood(caplog)) == 3
    assert not _ours(caplog)
    assert monitor.state is ConnectionState.CONNECTED


def test_a_live_connection_again_ends_the_outage_with_one_info(
    monitor: ConnectionMonitor, caplog: pytest.LogCaptureFixture
) -> None:
    """The outage's start is the WARNING; its end is one INFO with its length and attempt count."""
    caplog.set_level(logging.INFO, "staticconsumer.connection.monitor")
    client = _client(9092)
    monitor.watch(client)
    for _ in range(5):
        _log_connect_failure(1, _refused(9092))
    monitor.check_recovery()
    assert monitor.state is ConnectionState.DISCONNECTED, "no connection yet"
    client._conns[(1, "default")] = Connection(up=True)
    monitor.check_recovery()
    assert monitor.state is ConnectionState.CONNECTED
    assert not monitor.outages
    recovered = _ours(caplog)[-1]
    assert "Kafka broker 10.0.0.1:9092 (node 1) is reachable again after" in recovered
    assert "s and 5 failed connection attempts" in recovered
    assert "(4 connection errors were not logged); connection state connected" in recovered
    levels = [r.levelno for r in caplog.records if r.name == "staticconsumer.connection.monitor"]
    assert levels == [logging.WARNING, logging.INFO]
    assert monitor.changes == [ConnectionState.DISCONNECTED, ConnectionState.CONNECTED]  # type: ignore[attr-defined]
    caplog.clear()
    _log_connect_failure(1, _refused(9092))
    assert len(_ours(caplog)) == 1, "a new outage is reported again"


def test_a_connection_from_before_the_outage_is_no_recovery(
    monitor: ConnectionMonitor, caplog: pytest.LogCaptureFixture
) -> None:
    """One client's connection broke while another client's still looks open (its close not noticed
    yet): that is the same dead broker, not a recovery. Only a connection made since counts."""
    caplog.set_level(logging.INFO, "staticconsumer.connection.monitor")
    fetcher, membership = _client(9092), _client(9092)
    membership._conns[(1, "coordination")] = Connection(up=True)
    monitor.watch(fetcher)
    monitor.watch(membership)
    _log_connect_failure(1, _refused(9092))
    monitor.check_recovery()
    assert monitor.state is ConnectionState.DISCONNECTED, "the old connection does not end the outage"
    assert len(_ours(caplog)) == 1
    fetcher._conns[(1, "default")] = Connection(up=True)
    monitor.check_recovery()
    assert monitor.state is ConnectionState.CONNECTED
    assert "is reachable again" in _ours(caplog)[-1]


@dataclass
class AnsweringClient(Client):
    """A client of ours: it reports each answered request (``_aiokafka.report_answers``)."""

    on_answered: Any = None


def test_the_first_answer_after_the_outage_began_ends_it_at_once(
    monitor: ConnectionMonitor, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 27: the state read ``disconnected`` for seconds after records flowed again, until the next
    turn of run() looked at the connections. Now the client's first answered request flips it, with the
    one INFO; an answer to a request sent before the outage began (in flight during a controlled
    shutdown) proves nothing."""
    caplog.set_level(logging.INFO, "staticconsumer.connection.monitor")
    client = AnsweringClient(_client(9092).cluster)
    monitor.watch(client)
    assert client.on_answered == monitor.answered, "watching a client of ours wires its answers"
    before = time.monotonic()
    _log_connect_failure(1, _refused(9092))
    assert monitor.state is ConnectionState.DISCONNECTED
    client.on_answered(1, before)
    client.on_answered(2, time.monotonic())  # another broker's answer
    assert monitor.state is ConnectionState.DISCONNECTED
    client.on_answered(1, time.monotonic())
    assert monitor.state is ConnectionState.CONNECTED, "no tick, no live-connection scan needed"
    client.on_answered(1, time.monotonic())
    back = [m for m in _ours(caplog) if "reachable again" in m]
    assert len(back) == 1, "one INFO per outage end"
    assert "Kafka broker 10.0.0.1:9092 (node 1) is reachable again" in back[0]
    assert monitor.changes == [ConnectionState.DISCONNECTED, ConnectionState.CONNECTED]  # type: ignore[attr-defined]
    monitor.close()
    assert client.on_answered is None, "closing unwires it"


async def test_our_clients_report_answers_and_new_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    """BoundedClient (both of a consumer's clients) calls on_answered with the node and when the request
    was sent, for every answered request and for each new connection (its ApiVersions was answered),
    and not for a failed one."""
    client = _aiokafka.new_client(bootstrap_servers="127.0.0.1:9")
    answers: list[tuple[int, float]] = []
    _aiokafka.report_answers(client, lambda node, sent: answers.append((node, sent)))

    async def send(self: Any, node_id: Any, request: Any, *, group: Any = None) -> Any:
        if request == "fails":
            raise KafkaConnectionError("gone")
        return "answer"

    async def get_conn(self: Any, node_id: Any, *, group: Any = None, no_hint: bool = False) -> Any:
        return Connection(up=True) if node_id == 1 else None

    monkeypatch.setattr(aiokafka.client.AIOKafkaClient, "send", send)
    monkeypatch.setattr(aiokafka.client.AIOKafkaClient, "_get_conn", get_conn)
    sent = time.monotonic()
    assert await client.send(1, "request") == "answer"
    with pytest.raises(KafkaConnectionError):
        await client.send(1, "fails")
    assert await client._get_conn(1) is not None
    assert await client._get_conn(2) is None
    assert [node for node, _ in answers] == [1, 1]
    assert all(sent <= at <= time.monotonic() for _, at in answers)


def test_a_record_logged_for_one_consumer_is_no_outage_of_another_on_the_same_broker(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue 27: in a process of many consumers on one broker, every monitor claimed every record, so a
    consumer still waiting out its backoff (NodeNotReadyError on a fetch) reopened the outage of each one
    that had just recovered: their state lagged the records by seconds. A record logged in a monitor's
    own context (its consumer's tasks and membership thread) is that monitor's only; one from elsewhere
    is still offered to all."""
    caplog.set_level(logging.INFO, "staticconsumer.connection.monitor")
    ours, theirs = ConnectionMonitor("group 'a'"), ConnectionMonitor("group 'b'")
    for monitor in (ours, theirs):
        monitor.watch(_client(9092))
        monitor.install()
    try:
        with ours.owning():
            _log_connect_failure(1, _refused(9092))
        assert ours.state is ConnectionState.DISCONNECTED
        assert theirs.state is ConnectionState.CONNECTED, "another consumer's failure is not its outage"
        assert len([m for m in _ours(caplog) if "is unreachable" in m]) == 1
        _log_connect_failure(1, _refused(9092))  # no owner (aiokafka driven from elsewhere): offered to all
        assert theirs.state is ConnectionState.DISCONNECTED
    finally:
        ours.close()
        theirs.close()


def test_closing_during_an_outage_says_so_and_stops_folding(caplog: pytest.LogCaptureFixture) -> None:
    monitor = ConnectionMonitor("group 'g'")
    monitor.watch(_client(9092))
    monitor.install()
    _log_connect_failure(1, _refused(9092))
    _log_connect_failure(1, _refused(9092))
    monitor.close()
    assert (
        "stopping while Kafka broker 10.0.0.1:9092 (node 1) is still unreachable (1 more" in _ours(caplog)[-1]
    )
    caplog.clear()
    _log_connect_failure(1, _refused(9092))
    assert len(_flood(caplog)) == 1
    assert all(type(f).__name__ != "_NoiseFilter" for f in logging.getLogger("aiokafka").filters)


def test_two_monitors_share_one_filter_and_each_claims_its_own_brokers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    first, second = ConnectionMonitor("first"), ConnectionMonitor("second")
    first.watch(_client(9092))
    second.watch(Client(Cluster([Broker(1, "10.0.0.2", 9092)])))
    first.install()
    second.install()
    try:
        assert (
            len([f for f in logging.getLogger("aiokafka").filters if type(f).__name__ == "_NoiseFilter"]) == 1
        )
        _log_connect_failure(1, ConnectionRefusedError(111, "Connect call failed ('10.0.0.2', 9092)"))
        assert first.state is ConnectionState.CONNECTED
        assert second.state is ConnectionState.DISCONNECTED
        assert not _flood(caplog)
    finally:
        first.close()
        second.close()


def test_an_ip_in_the_error_matches_a_broker_known_by_host_name(
    monitor: ConnectionMonitor, caplog: pytest.LogCaptureFixture
) -> None:
    """Metadata holds advertised host names (Kubernetes); connect errors name the resolved IP."""
    monitor.watch(Client(Cluster([Broker(1, "kafka-0.kafka", 9092)])))
    _log_connect_failure(1, ConnectionRefusedError(111, "Connect call failed ('10.1.2.3', 9092)"))
    assert not _flood(caplog)
    assert "Kafka broker kafka-0.kafka:9092 (node 1) is unreachable" in _ours(caplog)[0]
    caplog.clear()
    _log_connect_failure(1, ConnectionRefusedError(111, "Connect call failed ('10.1.2.3', 9093)"))
    assert len(_flood(caplog)) == 1, "another port is another broker"


def test_a_deleted_topic_flood_is_one_warning_until_the_topic_is_back(
    monitor: ConnectionMonitor, caplog: pytest.LogCaptureFixture
) -> None:
    client = _client(9092)
    monitor.watch(client)
    monitor.watch_topics({"orders"})
    cluster = logging.getLogger("aiokafka.cluster")
    for _ in range(100):
        cluster.error("Topic %s not found in cluster metadata", "orders")
    cluster.error("Topic %s not found in cluster metadata", "not-ours")
    assert [r.getMessage() for r in _flood(caplog)] == ["Topic not-ours not found in cluster metadata"]
    (warning,) = _ours(caplog)
    assert "topic 'orders' is missing from the cluster metadata (deleted?)" in warning
    assert monitor.lost_topics == {"orders"}
    monitor.check_recovery()
    assert monitor.lost_topics == {"orders"}
    client.cluster.listed_topics.add("orders")
    monitor.check_recovery()
    assert monitor.lost_topics == frozenset()
    assert (
        "topic 'orders' is back in the cluster metadata (99 errors about it were not logged)"
        in _ours(caplog)[-1]
    )
    monitor.watch_topics(set())
    caplog.clear()
    cluster.error("Topic %s not found in cluster metadata", "orders")
    assert len(_flood(caplog)) == 1, "no longer subscribed: not ours to fold"


class Turns:
    """Counts the turns of ``monitor.run`` (each checks recovery once)."""

    def __init__(self, monitor: ConnectionMonitor) -> None:
        self.count = 0
        check = monitor.check_recovery

        def counted() -> None:
            self.count += 1
            check()

        monitor.check_recovery = counted  # type: ignore[method-assign]


async def test_the_membership_loop_sleeps_until_an_outage_begins_then_turns_until_it_ends() -> None:
    """Issue 27: an idle member's threads are not woken for nothing; a failure logged on any thread wakes
    the monitor at once, and it turns at the busy interval until the broker answers again."""
    monitor = ConnectionMonitor("group 'g'", reconnect_backoff_s=100.0)  # no reconnect falls due here
    client = _client(9092)
    monitor.watch(client)
    monitor.install()
    turns = Turns(monitor)
    running = asyncio.create_task(monitor.run(client, interval_s=0.05, watch_lag=False))
    try:
        await asyncio.sleep(0.4)
        assert turns.count == 1, "one turn at the start, then asleep while all is well"
        failing = threading.Thread(target=_log_connect_failure, args=(1, _refused(9092)))
        failing.start()
        failing.join()
        await asyncio.sleep(0.02)
        assert turns.count == 2, "woken at once by the outage's first record, from another thread"
        await asyncio.sleep(0.4)
        assert turns.count >= 6, "turning every 50 ms while the broker is down"
        client._conns[(1, "default")] = Connection(up=True)
        await asyncio.sleep(0.1)
        assert monitor.state is ConnectionState.CONNECTED
        settled = turns.count
        await asyncio.sleep(0.4)
        assert turns.count == settled, "asleep again once it answers"
    finally:
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running
        monitor.close()


async def test_the_application_loop_is_measured_at_the_idle_interval_while_all_is_well() -> None:
    monitor = ConnectionMonitor("group 'g'")
    turns = Turns(monitor)
    running = asyncio.create_task(monitor.run(None, watch_lag=True, idle_interval_s=0.1))
    try:
        await asyncio.sleep(0.45)
        assert 4 <= turns.count <= 6, turns.count
        time.sleep(1.3)  # noqa: ASYNC251 - the application blocks its loop
        assert monitor.loop_lag() >= 1.0, "a block is still measured between two idle turns"
    finally:
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running


def test_the_lag_tick_is_a_quarter_of_the_request_timeout_within_bounds() -> None:
    """A block as long as request.timeout.ms is measured as at least 3/4 of it: above the 1 s threshold."""
    assert lag_tick_s(40_000) == 10.0
    assert lag_tick_s(8_000) == 2.0
    assert lag_tick_s(1_000) == 0.5
    assert lag_tick_s(600_000) == 10.0


@dataclass
class PacedCluster(Cluster):
    def broker_metadata(self, node_id: int) -> Broker | None:
        return next((b for b in self.known if b.nodeId == node_id), None)


@dataclass
class PacedClient(Client):
    """A client of ours as far as the monitor reads it: a reconnect backoff, and ``ready`` counted."""

    reconnect_backoff: ReconnectBackoff = field(default_factory=ReconnectBackoff)
    asked: asyncio.Event = field(default_factory=asyncio.Event)
    attempts: list[float] = field(default_factory=list)

    async def ready(self, node_id: int) -> bool:
        """The broker is down: an attempt the backoff lets start fails at once."""
        key, now = "10.0.0.1:9092", time.monotonic()
        if self.reconnect_backoff.begin(key, now):
            self.reconnect_backoff.failed(key, now)
            self.attempts.append(now)
            self.asked.set()
        return False


def _paced_client(backoff: ReconnectBackoff) -> PacedClient:
    return PacedClient(PacedCluster([Broker(1, "10.0.0.1", 9092)]), reconnect_backoff=backoff)


def test_a_client_with_a_reconnect_backoff_is_asked_the_moment_its_wait_ends() -> None:
    """Issue 27: the requests that ask for a connection came about once a second, so an attempt started
    up to a second after its backoff allowed it; the monitor asks at the end of the wait instead (and not
    on its own 1 s .. 30 s schedule, which would leave a returned broker unasked for up to 30 s)."""
    monitor = ConnectionMonitor("group 'g'", reconnect_backoff_s=100.0)
    backoff = ReconnectBackoff(50, 1000, jitter=lambda: 1.0)
    client = _paced_client(backoff)
    monitor.watch(client)
    monitor.failed(1, "10.0.0.1:9092", "refused", attempt=True)
    now = time.monotonic()
    for step in range(8):  # at the ceiling: the last failure now, 1 s to wait
        assert backoff.begin("10.0.0.1:9092", now - 7 + step)
        backoff.failed("10.0.0.1:9092", now - 7 + step)
    due, soonest = monitor._due_reconnects(client)
    assert due == [], "its wait has not ended"
    assert soonest == pytest.approx(1.0, abs=0.05), "the run loop sleeps only until it does"
    backoff.failed("10.0.0.1:9092", now - 1.5)  # the wait ended half a second ago
    due, soonest = monitor._due_reconnects(client)
    assert due == [(client, 1)]
    assert soonest is None
    assert monitor._due_reconnects(None)[0] == [(client, 1)], "every run turn asks until it connects"
    assert backoff.begin("10.0.0.1:9092", now)
    due, soonest = monitor._due_reconnects(client)
    assert due == [], "an attempt under way: none asked"
    assert soonest == float("inf"), "the busy turn next"
    monitor.close()


async def test_the_run_loop_attempts_when_a_consumer_of_the_process_reached_the_broker() -> None:
    """Each attempt when the backoff's wait ends; told by another consumer's good connect
    (:meth:`ReconnectBackoff.alive`), the run loop turns at once and attempts when the stagger ends, not
    when its own wait would have (nor at its next busy turn)."""
    key = "10.0.0.1:9092"
    backoff = ReconnectBackoff(50, 1000, jitter=lambda: 1.0, stagger=lambda: 0.5)  # 0.2 s after the news
    news = ReconnectBackoff(50, 1000, jitter=lambda: 1.0)
    client = _paced_client(backoff)
    monitor = ConnectionMonitor("group 'g'")
    monitor.watch(client)
    now = time.monotonic()
    for b in (backoff, news):
        for step in range(8):
            assert b.begin(key, now + step - 7.8)
            b.failed(key, now + step - 7.8)  # waiting until 0.2 s from now
    monitor.failed(1, key, "refused", attempt=True)
    running = asyncio.create_task(monitor.run(client, interval_s=100.0, watch_lag=False))
    try:
        await asyncio.wait_for(client.asked.wait(), 5)
        assert client.attempts[0] - now >= 0.2, "not before its wait ended"
        client.asked.clear()
        told = time.monotonic()
        news.connected(key, told)  # from another consumer's thread in a fleet
        await asyncio.wait_for(client.asked.wait(), 5)
        assert 0.2 <= client.attempts[1] - told < 0.2 + 0.6, "at the stagger, not its own 1 s wait"
        assert len(client.attempts) == 2
    finally:
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running
        monitor.close()

"""Connecting fails with a typed error that says why, within a bounded time, against real servers:
nothing listening, a server that takes the TCP connection and never answers, a SASL broker refusing
credentials or a mechanism, a listener spoken to with the wrong security protocol, and missing ACLs
(Kafka's StandardAuthorizer). aiokafka alone says "Unable to bootstrap" for all of these."""

from __future__ import annotations

import asyncio
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from staticconsumer import _aiokafka
from staticconsumer.connection import bootstrap, bootstrap_answered, check_access
from staticconsumer.consumer import StaticConsumer
from staticconsumer.errors import (
    AuthenticationFailedError,
    BrokerHandshakeError,
    BrokerNotRespondingError,
    BrokerUnreachableError,
    GroupAuthorizationFailedError,
    TopicAuthorizationFailedError,
)
from staticconsumer.membership import TopicPartition
from staticconsumer.settings import Settings
from staticconsumer.testing import BrokerSettings, EmbeddedKafka, SaslSettings

from .support import FAST, until_assigned

pytestmark = pytest.mark.kafka

USERS = {"alice": "alice-secret-1", "bob": "bob-secret-2", "carol": "carol-secret-3", "dave": "dave-secret-4"}
MECHANISMS = ("PLAIN", "SCRAM-SHA-256")
"""SCRAM-SHA-512 is left out on purpose: the broker must refuse it."""


def _settings(bootstrap_servers: str, **fields: Any) -> Settings:
    return Settings.from_env({}, bootstrap_servers=bootstrap_servers, group_id="g", **fields)


async def _connect(settings: Settings, timeout_ms: int | None = None) -> tuple[Any, str]:
    client = _aiokafka.new_client(**settings.aiokafka_client_kwargs())
    try:
        answered = await bootstrap(client, settings, timeout_ms=timeout_ms)
    except BaseException:
        await client.close()
        raise
    return client, answered


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.fixture
async def silent_servers() -> AsyncIterator[list[str]]:
    """Three servers that accept TCP connections and never send a byte."""
    held: list[asyncio.StreamWriter] = []

    async def accept(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    servers = [await asyncio.start_server(accept, "127.0.0.1", 0) for _ in range(3)]
    try:
        yield [f"127.0.0.1:{s.sockets[0].getsockname()[1]}" for s in servers]
    finally:
        for writer in held:
            writer.close()
        for server in servers:
            server.close()


# -- nothing listening, silent servers ----------------------------------------------------------------


async def test_nothing_listening_is_named_per_server_at_once() -> None:
    ports = [_closed_port(), _closed_port()]
    servers = ",".join(f"127.0.0.1:{p}" for p in ports) + ",no-such-host.invalid:9092"
    started = time.monotonic()
    with pytest.raises(BrokerUnreachableError) as raised:
        await _connect(_settings(servers))
    assert time.monotonic() - started < 5
    error = raised.value
    assert isinstance(error, ConnectionError)
    assert [a.outcome for a in error.attempts] == ["refused", "refused", "unresolvable"]
    assert [a.address for a in error.attempts] == [
        *(f"127.0.0.1:{p}" for p in ports),
        "no-such-host.invalid:9092",
    ]
    text = str(error)
    assert f"127.0.0.1:{ports[0]}: nothing is listening there (connection refused)" in text
    assert "cannot resolve host 'no-such-host.invalid'" in text


async def test_silent_servers_cost_one_request_timeout_together(silent_servers: list[str]) -> None:
    settings = _settings(",".join(silent_servers), request_timeout_ms=1500)
    started = time.monotonic()
    with pytest.raises(BrokerNotRespondingError) as raised:
        await _connect(settings)
    elapsed = time.monotonic() - started
    assert 1.4 <= elapsed < 4, f"{elapsed:.1f}s for 3 silent servers: they must be probed at once"
    error = raised.value
    assert isinstance(error, TimeoutError)
    assert error.timeout_ms == 1500
    assert {a.outcome for a in error.attempts} == {"no-answer"}
    assert "accepted the TCP connection but did not answer the Kafka handshake within 1500 ms" in str(error)


async def test_a_smaller_timeout_bounds_the_bootstrap(silent_servers: list[str]) -> None:
    started = time.monotonic()
    with pytest.raises(BrokerNotRespondingError, match="within 700 ms"):
        await _connect(_settings(silent_servers[0]), timeout_ms=700)
    assert time.monotonic() - started < 3


async def test_the_client_takes_the_probes_metadata_without_a_bootstrap_connection_of_its_own(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probe already read the cluster's metadata: bootstrapping opens the probe's Kafka connection
    and no second one for the client, which then works (a node connection, named-topic metadata)."""
    import aiokafka.conn

    topic = create_topic(partitions=3)
    opened: list[int] = []
    connect = aiokafka.conn.AIOKafkaConnection.connect

    async def counting(self: Any) -> Any:
        opened.append(self.port)
        return await connect(self)

    monkeypatch.setattr(aiokafka.conn.AIOKafkaConnection, "connect", counting)
    client, answered = await _connect(_settings(kafka_broker.bootstrap_servers))
    try:
        assert answered == kafka_broker.bootstrap_servers
        assert len(opened) == 1, "bootstrapping opened a Kafka connection besides the probe's"
        assert _aiokafka.broker_addresses(client), "the client has the cluster's metadata"
        assert len((await _aiokafka.topic_partitions(client, frozenset({topic})))[topic]) == 3
        assert len(opened) == 2, "the first request opens the node's connection"
    finally:
        await client.close()


@pytest.mark.both_versions
async def test_dead_and_silent_servers_do_not_delay_a_live_one(
    kafka_broker: EmbeddedKafka, silent_servers: list[str]
) -> None:
    servers = f"127.0.0.1:{_closed_port()},{silent_servers[0]},{kafka_broker.bootstrap_servers}"
    started = time.monotonic()
    client, answered = await _connect(_settings(servers, request_timeout_ms=20_000))
    try:
        assert answered == kafka_broker.bootstrap_servers
        assert time.monotonic() - started < 10, "a silent server must not cost its request timeout"
        assert _aiokafka.broker_addresses(client), "the client has the cluster's metadata"
        assert len(_aiokafka.bootstrap_addresses(client)) == 3, "its bootstrap list is restored"
    finally:
        await client.close()


def test_the_cli_honours_timeout_ms_for_bootstrap_and_says_why() -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        started = time.monotonic()
        command = ["list-groups", "--bootstrap-server", address, "--timeout-ms", "1200"]
        result = subprocess.run(
            [sys.executable, "-m", "staticconsumer", *command],
            capture_output=True,
            text=True,
            timeout=60,
        )
        elapsed = time.monotonic() - started
    assert result.returncode == 2
    assert "BrokerNotRespondingError" in result.stderr
    assert f"{address}: accepted the TCP connection but did not answer" in result.stderr
    assert elapsed < 20, f"{elapsed:.1f}s: the 30 s request timeout must not apply"


# -- SASL and ACLs -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sasl_kafka() -> Iterator[EmbeddedKafka]:
    with EmbeddedKafka(
        settings=BrokerSettings(sasl=SaslSettings(users=USERS, mechanisms=MECHANISMS))
    ) as kafka:
        yield kafka


def _sasl(
    kafka: EmbeddedKafka, user: str, mechanism: str, password: str | None = None, **fields: Any
) -> Settings:
    credentials = kafka.sasl_settings(user, mechanism)
    if password is not None:
        credentials["sasl_password"] = password
    return _settings(kafka.bootstrap_servers, **credentials, **fields)


@pytest.mark.parametrize("mechanism", MECHANISMS)
async def test_a_wrong_password_names_mechanism_and_user_but_never_the_password(
    sasl_kafka: EmbeddedKafka, mechanism: str
) -> None:
    settings = _sasl(sasl_kafka, "alice", mechanism, password="not-alices-password")
    started = time.monotonic()
    with pytest.raises(AuthenticationFailedError) as raised:
        await _connect(settings)
    assert time.monotonic() - started < 10
    error = raised.value
    assert (error.mechanism, error.username) == (mechanism, "alice")
    text = str(error)
    assert f"refused mechanism {mechanism} for user 'alice'" in text
    assert f"SASL {mechanism} authentication as user 'alice' was refused: Authentication failed" in text
    assert "not-alices-password" not in text
    assert "not-alices-password" not in repr(error.attempts)
    assert USERS["alice"] not in text


async def test_an_unknown_user_is_an_authentication_failure(sasl_kafka: EmbeddedKafka) -> None:
    settings = _settings(
        sasl_kafka.bootstrap_servers,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-256",
        sasl_username="mallory",
        sasl_password="guess",
    )
    with pytest.raises(AuthenticationFailedError, match="user 'mallory'"):
        await _connect(settings)


async def test_a_mechanism_the_listener_does_not_enable_is_named(sasl_kafka: EmbeddedKafka) -> None:
    settings = _settings(
        sasl_kafka.bootstrap_servers,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_username="alice",
        sasl_password=USERS["alice"],
    )
    with pytest.raises(AuthenticationFailedError) as raised:
        await _connect(settings)
    assert "the broker does not accept SASL mechanism SCRAM-SHA-512" in str(raised.value)
    assert USERS["alice"] not in str(raised.value)


async def test_plaintext_against_a_sasl_listener_says_sasl_is_required(sasl_kafka: EmbeddedKafka) -> None:
    with pytest.raises(BrokerHandshakeError) as raised:
        await _connect(_settings(sasl_kafka.bootstrap_servers, request_timeout_ms=5000))
    assert "the listener probably requires SASL" in str(raised.value)


def test_the_cli_reports_refused_credentials_without_the_password(sasl_kafka: EmbeddedKafka) -> None:
    environment = {
        "KAFKA_BOOTSTRAP_SERVERS": sasl_kafka.bootstrap_servers,
        "KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
        "KAFKA_SASL_MECHANISM": "SCRAM-SHA-256",
        "KAFKA_SASL_USERNAME": "bob",
        "KAFKA_SASL_PASSWORD": "wrong-horse-battery",
    }
    result = subprocess.run(
        [sys.executable, "-m", "staticconsumer", "describe", "some-group", "--timeout-ms", "10000"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", **environment},
    )
    assert result.returncode == 2
    assert "AuthenticationFailedError" in result.stderr
    assert "refused mechanism SCRAM-SHA-256 for user 'bob'" in result.stderr
    assert "wrong-horse-battery" not in result.stdout + result.stderr


async def _access(settings: Settings, topics: list[str], group: str) -> Any:
    client, _ = await _connect(settings)
    try:
        return await check_access(client, settings, topics=topics, group_id=group)
    finally:
        await client.close()


async def _eventually_raises(
    call: Callable[[], Any], error: type[BaseException], within: float = 15
) -> BaseException:
    """ACLs reach the authorizer asynchronously: retry until the expected refusal (or fail)."""
    deadline = time.monotonic() + within
    while True:
        try:
            await call()
        except error as raised:
            return raised
        assert time.monotonic() < deadline, f"no {error.__name__} within {within}s"
        await asyncio.sleep(0.3)


async def test_without_a_topic_acl_the_error_names_the_topic_the_operation_and_the_principal(
    sasl_kafka: EmbeddedKafka, unique_topic: str, unique_group: str
) -> None:
    sasl_kafka.create_topic(unique_topic, 1)
    settings = _sasl(sasl_kafka, "bob", "SCRAM-SHA-256")
    with pytest.raises(TopicAuthorizationFailedError) as raised:
        await _access(settings, [unique_topic], unique_group)
    text = str(raised.value)
    assert raised.value.code == 29
    assert f"User:bob needs READ on Topic:{unique_topic}" in text
    assert f"--allow-principal 'User:bob' --operation READ --topic '{unique_topic}'" in text
    assert f"User:bob needs READ on Group:{unique_group}" in text, "the group ACL is missing too: say it now"


async def test_without_a_group_acl_the_error_names_the_group_and_read(
    sasl_kafka: EmbeddedKafka, unique_topic: str, unique_group: str
) -> None:
    sasl_kafka.create_topic(unique_topic, 1)
    sasl_kafka.grant("User:carol", "TOPIC", unique_topic, "READ")
    settings = _sasl(sasl_kafka, "carol", "PLAIN")
    raised = await _eventually_raises(
        lambda: _access(settings, [unique_topic], unique_group), GroupAuthorizationFailedError
    )
    assert isinstance(raised, GroupAuthorizationFailedError)
    assert raised.code == 30
    assert f"not allowed to join group '{unique_group}'" in str(raised)
    assert f"User:carol needs READ on Group:{unique_group}" in str(raised)
    assert "Topic:" not in str(raised)


async def test_describe_without_read_on_the_group_is_caught_before_joining(
    sasl_kafka: EmbeddedKafka, unique_topic: str, unique_group: str
) -> None:
    sasl_kafka.create_topic(unique_topic, 1)
    sasl_kafka.grant("User:dave", "TOPIC", unique_topic, "READ")
    sasl_kafka.grant("User:dave", "GROUP", unique_group, "DESCRIBE")
    settings = _sasl(sasl_kafka, "dave", "SCRAM-SHA-256")

    async def refused_for_read() -> None:
        try:
            await _access(settings, [unique_topic], unique_group)
        except GroupAuthorizationFailedError as error:
            if "DESCRIBE is allowed but READ is not" in str(error):
                raise

    raised = await _eventually_raises(refused_for_read, GroupAuthorizationFailedError)
    assert f"User:dave needs READ on Group:{unique_group}" in str(raised)


async def test_with_the_acls_a_consumer_needs_the_check_passes_and_reports_missing_topics(
    sasl_kafka: EmbeddedKafka, unique_topic: str, unique_group: str
) -> None:
    sasl_kafka.create_topic(unique_topic, 1)
    sasl_kafka.grant("User:alice", "TOPIC", unique_topic, "READ")
    sasl_kafka.grant("User:alice", "TOPIC", f"{unique_topic}-not-yet", "READ")
    sasl_kafka.grant("User:alice", "GROUP", unique_group, "READ")
    settings = _sasl(sasl_kafka, "alice", "PLAIN")
    deadline = time.monotonic() + 15
    while True:
        try:
            report = await _access(settings, [unique_topic, f"{unique_topic}-not-yet"], unique_group)
            break
        except (TopicAuthorizationFailedError, GroupAuthorizationFailedError):
            assert time.monotonic() < deadline, "the granted ACLs never took effect"
            await asyncio.sleep(0.3)
    assert report.missing_topics == {f"{unique_topic}-not-yet"}
    assert report.group_checked
    assert not await _topic_exists(settings, f"{unique_topic}-not-yet"), "the check must not create topics"


async def _topic_exists(settings: Settings, topic: str) -> bool:
    client, _ = await _connect(settings)
    try:
        return topic in await _aiokafka.topic_partitions(client, frozenset({topic}))
    finally:
        await client.close()


@pytest.mark.both_versions
async def test_on_a_broker_without_an_authorizer_the_check_passes(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    topic = create_topic(partitions=1)
    report = await _access(
        _settings(kafka_broker.bootstrap_servers), [topic, f"{topic}-missing"], unique_group
    )
    assert report.missing_topics == {f"{topic}-missing"}
    assert report.group_checked


async def test_the_probe_answers_the_access_checks_topic_question(
    kafka_broker: EmbeddedKafka,
    create_topic: Callable[..., str],
    unique_group: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A starting consumer names its topics in the bootstrap probe's Metadata request: the access check
    reads their codes from that answer and sends no Metadata request of its own (one round trip fewer
    before the join), with the same report; the client adopts the answer without the missing topic, so
    aiokafka logs no error for it."""
    topic = create_topic(partitions=2)
    missing = f"{topic}-missing"
    settings = _settings(kafka_broker.bootstrap_servers)
    client = _aiokafka.new_client(**settings.aiokafka_client_kwargs())
    try:
        _, answer = await bootstrap_answered(client, settings, topics=[topic, missing])
        assert answer is not None
        assert answer.topic_errors() == {topic: 0, missing: 3}
        assert isinstance(answer.response, _aiokafka._MetadataRows), "decoded by our codec (v10+)"
        assert [p.partition for p in (answer.topic_partitions() or {})[topic]] == [0, 1]
        assert _aiokafka.metadata_topics(client) == {topic}, "the errored topic stays out of the cluster"
        sent = _record_client_sends(monkeypatch)
        report = await check_access(
            client,
            settings,
            topics=[topic, missing],
            group_id=unique_group,
            topic_codes=answer.topic_errors(),
        )
        assert report.missing_topics == {missing}
        assert report.group_checked
        assert not [name for name in sent if name.startswith("Metadata")], sent
    finally:
        await client.close()
    assert not [r for r in caplog.records if r.levelname == "ERROR" and missing in r.getMessage()]
    assert (await _connect_answer(settings)).topic_errors() is None, "no topics named: no codes"


async def test_the_probe_finds_the_coordinator_and_the_join_connection_opens_early(
    kafka_broker: EmbeddedKafka,
    create_topic: Callable[..., str],
    unique_group: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A starting consumer asks for its group's coordinator right behind the probe's Metadata request, on
    the probe's connection: the access check takes that answer and sends nothing, the static-membership
    check reads the probe's ApiVersions, so no connection of the client's is opened before the join;
    the join's own connection can then be opened ahead of it (``open_early``)."""
    from staticconsumer.protocol import FindCoordinatorResponse
    from staticconsumer.runtime.thread import check_static_membership_supported

    topic = create_topic(partitions=1)
    settings = _settings(kafka_broker.bootstrap_servers, group_instance_id="probe-1")
    client = _aiokafka.new_client(**settings.aiokafka_client_kwargs())
    try:
        _, answer = await bootstrap_answered(client, settings, topics=[topic], group_id=unique_group)
        assert answer is not None
        found = answer.coordinator
        assert isinstance(found, FindCoordinatorResponse)
        assert found.error_code == 0
        assert found.node_id in _aiokafka.broker_addresses(client)
        assert answer.versions is not None
        assert 11 in answer.versions, "the probe's ApiVersions are kept"
        sent = _record_client_sends(monkeypatch)
        await check_static_membership_supported(client, answer.versions)
        report = await check_access(
            client,
            settings,
            topics=[topic],
            group_id=unique_group,
            topic_codes=answer.topic_errors(),
            describe_group=False,
            coordinator_answer=found,
        )
        assert report.coordinator is not None
        assert report.coordinator.node_id == found.node_id
        assert sent == [], "the probe answered every question of the start"
        assert _aiokafka.live_nodes(client) == set(), "no connection opened before the join"
        await _aiokafka.open_early(client, found.node_id)
        assert _aiokafka.live_nodes(client) == {found.node_id}
        coordination = [
            conn for conn in _aiokafka.node_connections(client, found.node_id) if conn.connected()
        ]
        assert len(coordination) == 1
        await _aiokafka.broker_versions(client, found.node_id)  # what the join asks first: no new connection
        assert [c for c in _aiokafka.node_connections(client, found.node_id) if c.connected()] == coordination
    finally:
        await client.close()


async def test_a_kept_probe_connection_becomes_the_clients_connection_to_the_coordinator(
    kafka_broker: EmbeddedKafka, create_topic: Callable[..., str], unique_group: str
) -> None:
    """With ``keep_connection`` the answer carries the probe's connection, still open; handed to the
    client as its coordination connection to that broker, the join's requests go out on it and no
    connection is opened for them. Without it the probe's connection is closed, as before."""
    topic = create_topic(partitions=1)
    settings = _settings(kafka_broker.bootstrap_servers, group_instance_id="probe-kept")
    plain = await _connect_answer(settings)
    assert plain.connection is None
    client = _aiokafka.new_client(**settings.aiokafka_client_kwargs())
    try:
        _, answer = await bootstrap_answered(
            client, settings, topics=[topic], group_id=unique_group, keep_connection=True
        )
        assert answer is not None
        assert answer.coordinator is not None
        kept = answer.connection
        assert kept is not None
        assert kept.connected()
        assert _aiokafka.live_nodes(client) == set()
        # opened as the client opens its own: its request timeout and idle limit, not the probe's
        assert kept._request_timeout == client._request_timeout_ms / 1000
        assert kept._max_idle_ms == client._connections_max_idle_ms
        assert _aiokafka.adopt_connection(client, answer, answer.coordinator.node_id)
        assert _aiokafka.live_nodes(client) == {answer.coordinator.node_id}
        await _aiokafka.broker_versions(client, answer.coordinator.node_id)  # as the join asks first
        await _aiokafka.open_early(client, answer.coordinator.node_id)
        assert _aiokafka.node_connections(client, answer.coordinator.node_id) == [kept]
        assert not _aiokafka.adopt_connection(client, answer, answer.coordinator.node_id), "has one already"
    finally:
        await client.close()
    assert not kept.connected(), "the client closes it with its own"


async def test_a_probe_answered_at_once_opens_no_bare_tcp_connection(
    kafka_broker: EmbeddedKafka, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bare TCP connection that would explain a failed probe is not opened beside a probe that
    answers within REACH_AFTER_SECONDS (a start's usual case): no CPU, resolver thread or connection
    for it on the way to the join. A probe that fails still gets it (the refused and silent servers
    above)."""
    from staticconsumer.connection import bootstrapping

    reached: list[str] = []
    reach = bootstrapping._reach

    async def recording(host: str, port: int, deadline: float, limit_ms: int) -> Any:
        reached.append(f"{host}:{port}")
        return await reach(host, port, deadline, limit_ms)

    monkeypatch.setattr(bootstrapping, "_reach", recording)
    monkeypatch.setattr(bootstrapping, "REACH_AFTER_SECONDS", 5.0)  # a loaded test machine's answer
    await _connect_answer(_settings(kafka_broker.bootstrap_servers))
    assert reached == []
    began = time.monotonic()
    with pytest.raises(BrokerUnreachableError):
        await _connect(_settings(f"127.0.0.1:{_closed_port()}"))
    assert len(reached) == 1, "a failed probe still tries the bare connection"
    assert time.monotonic() - began < 2.5, "at once, not REACH_AFTER_SECONDS (here 3 s: a tenth of 30)"


async def _connect_answer(settings: Settings) -> _aiokafka.ProbeAnswer:
    client = _aiokafka.new_client(**settings.aiokafka_client_kwargs())
    try:
        _, answer = await bootstrap_answered(client, settings)
    finally:
        await client.close()
    assert answer is not None
    return answer


# -- the consumer says the same -----------------------------------------------------------------------


def _membership_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("staticconsumer-membership-g-speaks")]


async def test_the_consumer_says_nothing_is_listening_at_once() -> None:
    port = _closed_port()
    consumer = StaticConsumer("orders", bootstrap_servers=f"127.0.0.1:{port}", group_id="g-speaks")
    started = time.monotonic()
    with pytest.raises(BrokerUnreachableError) as raised:
        await consumer.start()
    assert time.monotonic() - started < 5
    assert f"127.0.0.1:{port}: nothing is listening there (connection refused)" in str(raised.value)
    assert not _membership_threads(), "a failed start leaves no membership thread behind"


async def test_the_consumer_gives_up_on_silent_servers_within_the_request_timeout(
    silent_servers: list[str],
) -> None:
    consumer = StaticConsumer(
        "orders", bootstrap_servers=",".join(silent_servers), group_id="g-speaks", request_timeout_ms=1500
    )
    started = time.monotonic()
    with pytest.raises(BrokerNotRespondingError, match="did not answer the Kafka handshake within 1500 ms"):
        await consumer.start()
    elapsed = time.monotonic() - started
    assert 1.4 <= elapsed < 5, f"{elapsed:.1f}s: bounded by request_timeout_ms, all servers at once"


async def test_the_consumer_names_refused_credentials_but_never_the_password(
    sasl_kafka: EmbeddedKafka,
) -> None:
    fields = sasl_kafka.sasl_settings("alice", "SCRAM-SHA-256")
    fields["sasl_password"] = "not-alices-password"
    consumer = StaticConsumer(
        "orders", bootstrap_servers=sasl_kafka.bootstrap_servers, group_id="g", **fields
    )
    with pytest.raises(AuthenticationFailedError) as raised:
        await consumer.start()
    assert (raised.value.mechanism, raised.value.username) == ("SCRAM-SHA-256", "alice")
    assert "SASL SCRAM-SHA-256 authentication as user 'alice' was refused" in str(raised.value)
    assert "not-alices-password" not in str(raised.value) + repr(raised.value.attempts)


async def _start_and_stop(consumer: StaticConsumer) -> None:
    await consumer.start()
    await consumer.stop()


async def test_the_consumer_names_the_acl_it_lacks(
    sasl_kafka: EmbeddedKafka, unique_topic: str, unique_group: str
) -> None:
    sasl_kafka.create_topic(unique_topic, 1)

    def as_user(user: str) -> StaticConsumer:
        fields = sasl_kafka.sasl_settings(user, "SCRAM-SHA-256")
        return StaticConsumer(
            unique_topic, bootstrap_servers=sasl_kafka.bootstrap_servers, group_id=unique_group, **fields
        )

    with pytest.raises(TopicAuthorizationFailedError) as raised:
        await as_user("bob").start()
    assert f"User:bob needs READ on Topic:{unique_topic}" in str(raised.value)
    assert f"--allow-principal 'User:bob' --operation READ --topic '{unique_topic}'" in str(raised.value)

    sasl_kafka.grant("User:carol", "TOPIC", unique_topic, "READ")
    refused = await _eventually_raises(
        lambda: _start_and_stop(as_user("carol")), GroupAuthorizationFailedError
    )
    assert f"not allowed to join group '{unique_group}'" in str(refused)
    assert f"User:carol needs READ on Group:{unique_group}" in str(refused)


async def test_a_classic_consumer_that_may_describe_but_not_read_its_group_is_refused_at_its_join(
    sasl_kafka: EmbeddedKafka, unique_topic: str, unique_group: str
) -> None:
    """A classic start sends no DescribeGroups before joining: the JoinGroup needs the same READ, and its
    refusal names the ACL as the access check would have."""
    sasl_kafka.create_topic(unique_topic, 1)
    sasl_kafka.grant("User:dave", "TOPIC", unique_topic, "READ")
    sasl_kafka.grant("User:dave", "GROUP", unique_group, "DESCRIBE")
    fields = sasl_kafka.sasl_settings("dave", "SCRAM-SHA-256")

    def consumer() -> StaticConsumer:
        return StaticConsumer(
            unique_topic, bootstrap_servers=sasl_kafka.bootstrap_servers, group_id=unique_group, **fields
        )

    refused = await _eventually_raises(lambda: _start_and_stop(consumer()), GroupAuthorizationFailedError)
    assert f"not allowed to join group '{unique_group}'" in str(refused)
    assert f"User:dave needs READ on Group:{unique_group}" in str(refused)


async def test_a_classic_start_asks_nothing_before_its_join_that_the_join_does_not_need(
    kafka_broker: EmbeddedKafka,
    create_topic: Callable[..., str],
    unique_group: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before the first JoinGroup a classic start sends nothing through its client: the topics' codes and
    the coordinator came with the bootstrap probe's answer (FindCoordinator pipelined behind its Metadata
    request), and DescribeGroups is left to the join's own answer."""
    topic = create_topic(partitions=1)
    sent: list[str] = []
    send = _aiokafka.send

    async def recording(client: Any, node_id: int, message: Any, **kwargs: Any) -> Any:
        sent.append(type(message).__name__)
        return await send(client, node_id, message, **kwargs)

    monkeypatch.setattr(_aiokafka, "send", recording)
    consumer = StaticConsumer(
        topic,
        bootstrap_servers=kafka_broker.bootstrap_servers,
        group_id=unique_group,
        group_instance_id="i-0",
        **FAST,
    )
    await consumer.start()
    try:
        await until_assigned(consumer)
    finally:
        await consumer.stop()
    assert "JoinGroupRequest" in sent, sent
    assert sent[: sent.index("JoinGroupRequest")] == [], sent


async def test_a_commit_the_acls_refuse_names_the_topic_and_the_consumer_goes_on(
    sasl_kafka: EmbeddedKafka, unique_topic: str, unique_group: str
) -> None:
    other = f"{unique_topic}-not-ours"
    sasl_kafka.create_topic(unique_topic, 1)
    sasl_kafka.create_topic(other, 1)
    sasl_kafka.grant("User:alice", "TOPIC", unique_topic, "READ")
    sasl_kafka.grant("User:alice", "GROUP", unique_group, "READ")
    fields = {**sasl_kafka.sasl_settings("alice", "PLAIN"), **FAST}
    consumer = StaticConsumer(
        unique_topic, bootstrap_servers=sasl_kafka.bootstrap_servers, group_id=unique_group, **fields
    )
    deadline = time.monotonic() + 15
    while True:
        try:
            await consumer.start()
            break
        except (TopicAuthorizationFailedError, GroupAuthorizationFailedError):
            assert time.monotonic() < deadline, "the granted ACLs never took effect"
            await asyncio.sleep(0.3)
    try:
        await until_assigned(consumer)
        with pytest.raises(TopicAuthorizationFailedError) as raised:
            await consumer.commit({TopicPartition(other, 0): 1})
        assert f"User:alice needs READ on Topic:{other}" in str(raised.value)
        assert raised.value.__cause__ is not None, "the broker's own verdict stays attached"
        await consumer.commit({TopicPartition(unique_topic, 0): 0})
    finally:
        await consumer.stop()


async def test_the_consumer_protocol_is_checked_the_same_and_joins_with_the_acls_a_consumer_needs(
    sasl_kafka: EmbeddedKafka, unique_topic: str, unique_group: str
) -> None:
    """group_protocol=consumer: refused before its first heartbeat without READ on the group, named as
    under the classic protocol; with READ on topic and group it joins (ConsumerGroupHeartbeat), resolves
    the topic ids of its assignment and commits."""
    sasl_kafka.create_topic(unique_topic, 2)
    sasl_kafka.grant("User:dave", "TOPIC", unique_topic, "READ")

    def as_dave() -> StaticConsumer:
        return StaticConsumer(
            unique_topic,
            bootstrap_servers=sasl_kafka.bootstrap_servers,
            group_id=unique_group,
            group_instance_id="dave-0",
            group_protocol="consumer",
            **sasl_kafka.sasl_settings("dave", "SCRAM-SHA-256"),
        )

    refused = await _eventually_raises(lambda: _start_and_stop(as_dave()), GroupAuthorizationFailedError)
    assert f"User:dave needs READ on Group:{unique_group}" in str(refused)

    sasl_kafka.grant("User:dave", "GROUP", unique_group, "READ")
    consumer = as_dave()
    deadline = time.monotonic() + 15
    while True:
        try:
            await consumer.start()
            break
        except GroupAuthorizationFailedError:
            assert time.monotonic() < deadline, "the granted ACL never took effect"
            await asyncio.sleep(0.3)
    try:
        await until_assigned(consumer, within=60)
        assert consumer.assignment() == {TopicPartition(unique_topic, p) for p in range(2)}
        assert consumer.generation >= 1, "a member epoch"
        await consumer.commit({TopicPartition(unique_topic, 0): 0})
    finally:
        await consumer.stop()


# -- TLS ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def self_signed(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A certificate no CA vouches for, and its key (openssl, as the settings tests use)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.fail("openssl is needed to make a test certificate (apt-get install openssl)")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subject = ["-subj", "/CN=127.0.0.1", "-keyout", str(key), "-out", str(cert)]
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", *subject],
        check=True,
        capture_output=True,
    )
    return str(cert), str(key)


async def test_an_untrusted_certificate_is_a_tls_failure_that_names_the_ca_setting(
    self_signed: tuple[str, str],
) -> None:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*self_signed)

    async def hold(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = await asyncio.start_server(hold, "127.0.0.1", 0, ssl=context)
    async with server:
        address = f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
        with pytest.raises(BrokerHandshakeError) as raised:
            await _connect(_settings(address, security_protocol="SSL", request_timeout_ms=5000))
    (attempt,) = raised.value.attempts
    assert attempt.outcome == "tls"
    assert "CERTIFICATE_VERIFY_FAILED" in attempt.detail
    assert "ssl.ca.location" in attempt.detail


async def test_tls_against_a_plaintext_listener_points_at_security_protocol(
    kafka_broker: EmbeddedKafka,
) -> None:
    settings = _settings(kafka_broker.bootstrap_servers, security_protocol="SSL", request_timeout_ms=5000)
    with pytest.raises(BrokerHandshakeError) as raised:
        await _connect(settings)
    assert "security.protocol (SSL)" in str(raised.value)
    assert raised.value.attempts[0].outcome in ("tls", "closed")


def _record_client_sends(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The request class names every aiokafka client sends from now on, in order."""
    import aiokafka.client

    sent: list[str] = []
    send = aiokafka.client.AIOKafkaClient.send

    async def recording(self: Any, node_id: int, request: Any, **kwargs: Any) -> Any:
        sent.append(type(request).__name__)
        return await send(self, node_id, request, **kwargs)

    monkeypatch.setattr(aiokafka.client.AIOKafkaClient, "send", recording)
    return sent

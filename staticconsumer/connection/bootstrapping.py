"""Bootstrap that says why not: one typed error, within one request timeout, naming each server's fate.

aiokafka's ``client.bootstrap()`` tries the servers one after the other, logs each failure as an ERROR
line and then raises ``KafkaConnectionError("Unable to bootstrap from [...]")``: the cause (refused,
silent, wrong password) is only in the log, and a silent server costs a full request timeout per entry.
:func:`bootstrap` probes every server at once, sorts the failures into what an operator can act on, and
bootstraps the client from the first server that really answered.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from staticconsumer import _aiokafka, errors
from staticconsumer.settings import Settings

if TYPE_CHECKING:  # the failures' classes are built when a bootstrap fails (errors' rare ones: issue 26)
    from staticconsumer.errors import BrokerConnectionError, ConnectionAttempt

log = logging.getLogger(__name__)

_SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")

REACH_AFTER_SECONDS = 0.1
"""How long a probe waits for its answer before the bare TCP connection that would explain its failure
is tried beside it (at once when it fails): long enough for a reachable broker's usual answer (a
loopback or LAN start answers within milliseconds), short beside any request timeout."""


async def bootstrap(client: Any, settings: Settings, *, timeout_ms: int | None = None) -> str:
    """:func:`bootstrap_answered` without the answer: the ``host:port`` that answered."""
    address, _ = await bootstrap_answered(client, settings, timeout_ms=timeout_ms)
    return address


async def bootstrap_answered(
    client: Any,
    settings: Settings,
    *,
    timeout_ms: int | None = None,
    topics: Collection[str] = (),
    group_id: str | None = None,
    adopt_topics: bool = True,
    keep_connection: bool = False,
) -> tuple[str, _aiokafka.ProbeAnswer | None]:
    """Bootstrap ``client`` (an ``AIOKafkaClient`` built from ``settings.aiokafka_client_kwargs()``) and
    return the ``host:port`` that answered, with its probe's answer (another client of the same
    consumer bootstraps from it: :func:`staticconsumer._aiokafka.start_consumer_from`); call it instead
    of ``await client.bootstrap()``.

    Every bootstrap server is probed at once (TCP, TLS, ApiVersions, SASL, a Metadata request), so the
    whole call takes at most ``request.timeout.ms``, or ``timeout_ms`` when that is smaller (the CLI's
    ``--timeout-ms``), however many servers are listed. When none answers it raises, in this order of
    precedence across the servers: :class:`AuthenticationFailedError`, :class:`BrokerHandshakeError`,
    :class:`BrokerNotRespondingError`, :class:`BrokerUnreachableError`; each lists every server's outcome.
    The client takes the cluster metadata of the first probe that answered as its own bootstrap, so a
    start opens one bootstrap connection, not two. ``topics`` are named in the probes' Metadata request,
    so the answer also says whether each exists and may be described
    (:meth:`~staticconsumer._aiokafka.ProbeAnswer.topic_errors`): the access check then asks nothing
    more about them, one round trip fewer before the join. ``group_id``: each probe also asks for the
    group's coordinator, right behind its Metadata request on the same connection
    (:attr:`~staticconsumer._aiokafka.ProbeAnswer.coordinator`), so a starting consumer opens no
    connection and waits for no round trip of its own to learn it.
    ``adopt_topics=False``: ``client`` takes the answer's brokers but not the topics (the answer still
    carries them): for a client that asks for the partitions it needs itself, as the consumer's
    membership client does, a fleet's 600-partition topic applied costs ~0.6 ms of every start.
    ``keep_connection=True``: the answer carries its probe's connection, open, with ``client``'s settings
    (:attr:`~staticconsumer._aiokafka.ProbeAnswer.connection`), for the caller to hand to ``client``
    (:func:`staticconsumer._aiokafka.adopt_connection`) or close: a starting consumer's join then needs
    no connection of its own when the coordinator is the broker that answered. Every other probe's
    connection is closed here.
    """
    limit_ms = (
        settings.request_timeout_ms if timeout_ms is None else min(timeout_ms, settings.request_timeout_ms)
    )
    limit_ms = max(limit_ms, 1)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit_ms / 1000
    addresses = _aiokafka.bootstrap_addresses(client)
    client_kwargs = settings.aiokafka_client_kwargs()
    named = sorted(set(topics))
    keep_for = client if keep_connection else None
    probes = {
        asyncio.create_task(
            _probe(host, port, settings, client_kwargs, deadline, limit_ms, named, group_id, keep_for)
        ): (
            host,
            port,
        )
        for host, port in addresses
    }
    attempts: list[ConnectionAttempt] = []
    answered: tuple[str, int] | None = None
    answer: _aiokafka.ProbeAnswer | None = None
    pending = set(probes)
    try:
        while pending and answered is None:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                attempt = task.result()
                if not isinstance(attempt, _aiokafka.ProbeAnswer):
                    attempts.append(attempt)
                elif answered is None:
                    answered, answer = probes[task], attempt
                else:
                    attempt.close_connection()
    finally:
        for task in pending:
            task.cancel()
        for task in pending:
            with contextlib.suppress(asyncio.CancelledError):
                outcome = await task
                if isinstance(outcome, _aiokafka.ProbeAnswer):  # answered as it was cancelled
                    outcome.close_connection()
    if answered is None:
        raise _failure(settings, _in_listed_order(attempts, settings.bootstrap_servers), limit_ms)
    for attempt in attempts:
        log.info("bootstrap server %s", attempt)
    host, port = answered
    if answer is not None and _aiokafka.adopt_bootstrap(client, answer, topics=adopt_topics):
        return f"{host}:{port}", answer  # the probe's metadata is the client's: no bootstrap connection
    if answer is not None:
        answer.close_connection()
    try:
        async with asyncio.timeout(max(deadline - loop.time(), 0) + limit_ms / 1000):
            await _aiokafka.bootstrap_from(client, host, port)
    except Exception as error:
        detail = f"answered a probe, then failed to bootstrap: {type(error).__name__}: {error}"
        raise errors.BrokerConnectionError(
            "the bootstrap server stopped answering",
            [errors.ConnectionAttempt(f"{host}:{port}", "error", detail)],
        ) from error
    return f"{host}:{port}", None


def _in_listed_order(attempts: list[ConnectionAttempt], servers: tuple[str, ...]) -> list[ConnectionAttempt]:
    """As the operator listed them in bootstrap.servers (aiokafka shuffles its copy)."""
    order = {}
    for index, server in enumerate(servers):
        host, _, port = server.rpartition(":")
        order[f"{host.strip('[]')}:{port}"] = index
    return sorted(attempts, key=lambda attempt: order.get(attempt.address, len(order)))


async def _probe(
    host: str,
    port: int,
    settings: Settings,
    client_kwargs: dict[str, Any],
    deadline: float,
    limit_ms: int,
    topics: list[str],
    group_id: str | None = None,
    keep_for: Any = None,
) -> ConnectionAttempt | _aiokafka.ProbeAnswer:
    """Its metadata when this server answered as a Kafka broker should; else what went wrong there.

    A bare TCP connection is tried beside the Kafka one, not before it: it tells why the server could
    not be reached (unresolvable, refused, no TCP within the limit) when the probe fails, and costs a
    probe that answers no round trip of its own. It starts when the probe fails, or once the probe has
    waited :data:`REACH_AFTER_SECONDS` (a tenth of the limit when that is less), not at once: a probe
    answered by then (a start's usual case) never pays it (~0.35 ms of CPU, a resolver thread and a
    connection the broker accepts and drops, on the way to the join). ``keep_for``: the client that may take
    an answer's connection over, which then stays open, opened with that client's settings (see
    :func:`bootstrap_answered`)."""
    address = f"{host}:{port}"
    failed = asyncio.Event()
    reach = asyncio.ensure_future(
        _reach_unless_answered(
            failed, min(REACH_AFTER_SECONDS, limit_ms / 10_000), host, port, deadline, limit_ms
        )
    )
    try:
        remaining_ms = max(int((deadline - asyncio.get_running_loop().time()) * 1000), 1)
        try:
            async with asyncio.timeout_at(deadline):
                outcome = await _aiokafka.probe_broker(
                    host,
                    port,
                    request_timeout_ms=remaining_ms,
                    client_kwargs=client_kwargs,
                    topics=topics,
                    group_id=group_id,
                    keep_for=keep_for,
                )
        except TimeoutError:
            outcome = _aiokafka.ProbeFailure("timeout", "handshake", "no answer")
        if isinstance(outcome, _aiokafka.ProbeAnswer):
            return outcome
        failed.set()
        unreachable = await reach
    finally:
        reach.cancel()  # nothing once done; else the bare connection is not needed any more
    if unreachable is not None:
        return unreachable
    return _attempt(address, outcome, settings, limit_ms)


async def _reach_unless_answered(
    failed: asyncio.Event, after: float, host: str, port: int, deadline: float, limit_ms: int
) -> ConnectionAttempt | None:
    """:func:`_reach`, once the probe has ``failed`` or ``after`` seconds have passed without its answer
    (the caller cancels this when the probe answers)."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(after):
            await failed.wait()
    return await _reach(host, port, deadline, limit_ms)


async def _reach(host: str, port: int, deadline: float, limit_ms: int) -> ConnectionAttempt | None:
    """Why a bare TCP connection to ``host:port`` cannot be made by ``deadline``; None when it can."""
    address = f"{host}:{port}"
    try:
        async with asyncio.timeout_at(deadline):
            _, writer = await asyncio.open_connection(host, port)
    except socket.gaierror as error:
        return errors.ConnectionAttempt(
            address,
            "unresolvable",
            f"cannot resolve host {host!r} ({error.strerror}); check bootstrap.servers",
        )
    except ConnectionRefusedError:
        return errors.ConnectionAttempt(
            address,
            "refused",
            "nothing is listening there (connection refused): is the broker running, and is this the port "
            "of one of its listeners?",
        )
    except TimeoutError:
        return errors.ConnectionAttempt(
            address,
            "connect-timeout",
            f"no TCP connection within {limit_ms} ms: the host is down, or a firewall drops the packets",
        )
    except OSError as error:
        return errors.ConnectionAttempt(address, "unreachable", f"cannot connect: {error.strerror or error}")
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return None


def _attempt(
    address: str, failure: _aiokafka.ProbeFailure, settings: Settings, limit_ms: int
) -> ConnectionAttempt:
    protocol = settings.security_protocol
    if failure.kind == "timeout":
        what = "the Kafka handshake" if failure.stage == "handshake" else "a Metadata request"
        return errors.ConnectionAttempt(
            address,
            "no-answer",
            f"accepted the TCP connection but did not answer {what} within {limit_ms} ms: is this a Kafka "
            f"listener, and does it speak security.protocol {protocol}?",
        )
    if failure.kind == "authentication" and settings.sasl_mechanism == "OAUTHBEARER":
        return errors.ConnectionAttempt(
            address,
            "authentication",
            f"the broker rejected the OAUTHBEARER token from sasl_oauth_token_provider: {failure.message}",
        )
    if failure.kind == "authentication":
        return errors.ConnectionAttempt(
            address,
            "authentication",
            f"SASL {settings.sasl_mechanism} authentication as user {settings.sasl_username!r} was refused: "
            f"{_without_password(failure.message, settings)}",
        )
    if failure.kind == "mechanism":
        return errors.ConnectionAttempt(
            address,
            "authentication",
            f"the broker does not accept SASL mechanism {settings.sasl_mechanism} on this listener "
            f"(user {settings.sasl_username!r}): {_without_password(failure.message, settings)}",
        )
    if failure.kind == "tls":
        trust = "the given ssl_context trust" if settings.ssl_context is not None else "ssl.ca.location hold"
        return errors.ConnectionAttempt(
            address,
            "tls",
            f"TLS failed ({failure.message}): with security.protocol {protocol}, is this a TLS listener and "
            f"does {trust} the CA that signed its certificate?",
        )
    if failure.kind == "closed":
        return errors.ConnectionAttempt(address, "closed", _closed_hint(failure, protocol))
    return errors.ConnectionAttempt(
        address, "error", f"unexpected failure during {failure.stage}: {failure.message}"
    )


def _closed_hint(failure: _aiokafka.ProbeFailure, protocol: str) -> str:
    if failure.stage == "metadata" and protocol not in _SASL_PROTOCOLS:
        guess = "the listener probably requires SASL (security.protocol SASL_PLAINTEXT or SASL_SSL)"
    elif protocol in ("PLAINTEXT", "SASL_PLAINTEXT"):
        guess = "the listener probably expects TLS (security.protocol SSL or SASL_SSL)"
    else:
        guess = "the listener probably is not what security.protocol says"
    return (
        f"the broker closed the connection during {failure.stage} with security.protocol {protocol}: {guess}"
    )


def _without_password(text: str, settings: Settings) -> str:
    """Brokers do not echo passwords, but a message we did not write is scrubbed anyway."""
    if settings.sasl_password is not None and settings.sasl_password.reveal():
        text = text.replace(settings.sasl_password.reveal(), "***")
    return text


def _failure(settings: Settings, attempts: list[ConnectionAttempt], limit_ms: int) -> BrokerConnectionError:
    servers = ", ".join(attempt.address for attempt in attempts)
    outcomes = {attempt.outcome for attempt in attempts}
    if "authentication" in outcomes and settings.sasl_mechanism == "OAUTHBEARER":
        return errors.AuthenticationFailedError(
            "SASL authentication failed: the broker rejected the OAUTHBEARER token from "
            "sasl_oauth_token_provider; check the token's claims (its subject, expiry, issued-at time, scope "
            "and audience) against the validator the broker's listener is configured with",
            attempts,
            settings.sasl_mechanism,
            None,
        )
    if "authentication" in outcomes:
        user = settings.sasl_username
        return errors.AuthenticationFailedError(
            f"SASL authentication failed: the broker refused mechanism {settings.sasl_mechanism} for user "
            f"{user!r}; check sasl.mechanism, sasl.username and sasl.password (not shown) and that the "
            "user exists on the brokers for this mechanism",
            attempts,
            settings.sasl_mechanism,
            user,
        )
    if outcomes & {"tls", "closed", "error"}:
        return errors.BrokerHandshakeError(
            f"connected to {servers} but the connection failed before Kafka could answer; check "
            f"security.protocol ({settings.security_protocol}) against the broker's listener",
            attempts,
        )
    if "no-answer" in outcomes:
        return errors.BrokerNotRespondingError(
            f"no Kafka answer from the bootstrap servers within {limit_ms} ms", attempts, limit_ms
        )
    return errors.BrokerUnreachableError(f"cannot reach any bootstrap server ({servers})", attempts)

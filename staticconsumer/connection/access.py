"""Check at start that the principal may consume, and say which ACL is missing when it may not.

Without this, a consumer that lacks ``READ`` on its group fails later with a bare
``GROUP_AUTHORIZATION_FAILED (30)``, and one that may not even ``DESCRIBE`` its topic waits forever,
because the all-topics metadata the consumer refreshes silently leaves such topics out. The Java client
is no clearer. :func:`check_access` asks the brokers directly, once, and raises the existing typed
errors (:class:`TopicAuthorizationFailedError`, :class:`GroupAuthorizationFailedError`) with the
resource, the ACL operation and the ``kafka-acls`` line that grants it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection, Mapping
from typing import Any

import msgspec

from staticconsumer import _aiokafka
from staticconsumer.errors import (
    BrokerError,
    DecodeError,
    ErrorCode,
    GroupAuthorizationFailedError,
    ProtocolError,
    TopicAuthorizationFailedError,
)
from staticconsumer.protocol import (
    AUTHORIZED_OPERATIONS_OMITTED,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    FindCoordinatorResponse,
)
from staticconsumer.settings import Settings

log = logging.getLogger(__name__)

ACL_READ = 3
"""Kafka's AclOperation code for READ; bit ``1 << 3`` of an ``authorized_operations`` field."""


class AccessReport(msgspec.Struct, frozen=True):
    """What :func:`check_access` learnt without failing: topics that do not exist (yet), and whether
    the group check could run (False when the coordinator was not ready, for example)."""

    missing_topics: frozenset[str]
    group_checked: bool
    coordinator: CoordinatorAddress | None = None
    """The group's coordinator as the check found it (its connection left open for the join), or None."""


class CoordinatorAddress(msgspec.Struct, frozen=True):
    """Where a group's coordinator is, as FindCoordinator answered."""

    node_id: int
    host: str
    port: int


def principal_of(settings: Settings) -> str:
    """The principal the brokers most likely see, for ACL hints (Kafka's default principal builder)."""
    if settings.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
        if settings.sasl_mechanism == "OAUTHBEARER":
            return "User:<the subject (sub claim) of your OAuth token>"
        if settings.sasl_mechanism == "GSSAPI":
            return "User:<the primary name of your Kerberos principal>"
        return f"User:{settings.sasl_username}"
    if settings.security_protocol == "SSL" and settings.ssl_certificate_location:
        return "User:<the distinguished name of your client certificate>"
    if settings.security_protocol == "SSL" and settings.ssl_context is not None:
        return "User:<ANONYMOUS, or the distinguished name of the certificate your ssl_context presents>"
    return "User:ANONYMOUS"


def acl_hint(settings: Settings, operation: str, resource_type: str, name: str) -> str:
    """``<principal> needs <OPERATION> on <Type>:<name>`` and the command that grants it."""
    principal = principal_of(settings)
    flag = {"Topic": "--topic", "Group": "--group"}[resource_type]
    return (
        f"{principal} needs {operation} on {resource_type}:{name} (grant it with: kafka-acls "
        f"--bootstrap-server <broker> --add --allow-principal '{principal}' --operation {operation} "
        f"{flag} '{name}')"
    )


def topic_authorization_error(settings: Settings, topics: Collection[str], also: str = "") -> BrokerError:
    """TOPIC_AUTHORIZATION_FAILED for ``topics``, naming the READ ACL a consumer needs on each."""
    hints = "; ".join(acl_hint(settings, "READ", "Topic", topic) for topic in sorted(topics))
    return TopicAuthorizationFailedError(f"not allowed to consume {', '.join(sorted(topics))}: {hints}{also}")


def group_authorization_error(settings: Settings, group_id: str, detail: str = "") -> BrokerError:
    """GROUP_AUTHORIZATION_FAILED for ``group_id``, naming the READ ACL that joining and committing need."""
    prefix = f"{detail}; " if detail else ""
    return GroupAuthorizationFailedError(
        f"not allowed to join group {group_id!r}: {prefix}{acl_hint(settings, 'READ', 'Group', group_id)}"
    )


def explain_authorization(
    error: Exception, settings: Settings, group_id: str, topics: Collection[str]
) -> Exception:
    """A bare GROUP/TOPIC_AUTHORIZATION_FAILED from the membership (JoinGroup, OffsetCommit, ...) as the
    same typed error with the missing ACL spelled out (the original as its cause); others unchanged."""
    if "needs READ on" in str(error):
        return error
    explained: BrokerError
    if isinstance(error, GroupAuthorizationFailedError):
        explained = group_authorization_error(settings, group_id, str(error))
    elif isinstance(error, TopicAuthorizationFailedError) and topics:
        explained = topic_authorization_error(settings, topics, f" ({error})")
    else:
        return error
    explained.__cause__ = error
    return explained


async def check_access(
    client: Any,
    settings: Settings,
    *,
    topics: Collection[str] = (),
    group_id: str | None = None,
    timeout_ms: int | None = None,
    topic_codes: Mapping[str, int] | None = None,
    describe_group: bool = True,
    coordinator_answer: FindCoordinatorResponse | None = None,
) -> AccessReport:
    """Raise now, with the missing ACLs named, when ``settings``' principal may not consume ``topics``
    (explicit subscriptions; a pattern needs no check) in ``group_id``; report topics that do not exist.

    Needs a bootstrapped ``client``. One Metadata request naming the topics, FindCoordinator, and
    DescribeGroups with authorized operations: a principal without READ on the group is caught even
    when it may DESCRIBE it. Connection trouble or a coordinator that is not ready skips the check
    (the membership loop retries and reports those); the whole check is bounded by request.timeout.ms.
    ``topic_codes``: the error code per topic that the bootstrap probe already read for ``topics``
    (``ProbeAnswer.topic_errors()``), so no Metadata request is sent for them again.
    ``describe_group=False`` leaves DescribeGroups out (FindCoordinator still catches a principal without
    even DESCRIBE): a classic consumer's JoinGroup needs the same READ and its refusal is explained the
    same way (:func:`explain_authorization`), so the start spares that round trip (``group_checked`` False).
    ``coordinator_answer``: the group's FindCoordinator answer the bootstrap probe already read
    (``ProbeAnswer.coordinator``), taken as this check's own, so no FindCoordinator is sent again.
    """
    limit = (settings.request_timeout_ms if timeout_ms is None else timeout_ms) / 1000
    missing: frozenset[str] = frozenset()
    denied_topics: list[str] = []
    group_problem: str | None = None
    group_checked = False
    coordinator: CoordinatorAddress | None = None
    try:
        async with asyncio.timeout(limit):
            if topics:
                asked = sorted(set(topics))
                if topic_codes is not None and set(asked) <= topic_codes.keys():
                    codes = {topic: topic_codes[topic] for topic in asked}
                else:
                    codes = await _aiokafka.topic_errors(client, asked)
                missing = frozenset(t for t, c in codes.items() if c == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                denied_topics = sorted(
                    t for t, c in codes.items() if c == ErrorCode.TOPIC_AUTHORIZATION_FAILED
                )
            if group_id is not None:
                group_problem, group_checked, coordinator = await _group_access(
                    client, group_id, describe=describe_group, found=coordinator_answer
                )
    except (TimeoutError, ProtocolError) as error:
        log.info("access check skipped: %s", error or type(error).__name__)
    except Exception as error:
        if not _aiokafka.is_connection_failure(error):
            raise
        log.info("access check skipped: %r", error)
    if denied_topics:
        also = ""
        if group_problem is not None and group_id is not None:
            also = "; and " + acl_hint(settings, "READ", "Group", group_id)
        raise topic_authorization_error(settings, denied_topics, also)
    if group_problem is not None and group_id is not None:
        raise group_authorization_error(settings, group_id, group_problem)
    return AccessReport(missing, group_checked, coordinator)


async def _group_access(
    client: Any, group_id: str, *, describe: bool = True, found: FindCoordinatorResponse | None = None
) -> tuple[str | None, bool, CoordinatorAddress | None]:
    """(what is wrong with our access to the group or None, whether the check could be made, the
    coordinator when found).

    DescribeGroups goes over the group coordination connection, the one the join uses next: a consumer
    starting up opens it once, not twice.
    """
    answer = found if found is not None else await _aiokafka.find_coordinator(client, group_id)
    if answer.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED:
        return "the brokers refuse even DESCRIBE (FindCoordinator)", True, None
    if answer.error_code != ErrorCode.NONE:
        return None, False, None
    coordinator = CoordinatorAddress(answer.node_id, answer.host, answer.port)
    if not describe:
        return None, False, coordinator
    try:
        described = await _aiokafka.send(
            client,
            coordinator.node_id,
            DescribeGroupsRequest(groups=[group_id], include_authorized_operations=True),
        )
    except (ProtocolError, DecodeError):
        return None, False, coordinator  # a broker before DescribeGroups v3 cannot say; the join will
    group = next(iter(described.response_as(DescribeGroupsResponse).groups), None)
    if group is None:
        return None, False, coordinator
    if group.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED:
        return "the brokers refuse even DESCRIBE (DescribeGroups)", True, None
    if group.error_code != ErrorCode.NONE or group.authorized_operations == AUTHORIZED_OPERATIONS_OMITTED:
        return None, False, coordinator
    if not group.authorized_operations & (1 << ACL_READ):
        return "DESCRIBE is allowed but READ is not", True, None
    return None, True, coordinator

"""The rarer public errors of ``staticconsumer.errors``, defined on first use (issue 26).

Broker codes a consumer's start does not raise, KIP-848's errors, a failed bootstrap's and the analytics
tool's: building their classes cost every ``import staticconsumer``. Import them from
``staticconsumer.errors`` (whose module ``__getattr__`` loads this one); their ``__module__`` is
``staticconsumer.errors``.
"""

# aiokafka ships no type information, so its classes are Any to mypy; subclassing them is the point here.
# mypy: disallow-subclassing-any=False

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import msgspec
from aiokafka import errors as _aiokafka

from staticconsumer.errors import BrokerError, ErrorCode, ProtocolError, StaticConsumerError


class AnalyticsError(StaticConsumerError):
    """``staticconsumer analyze`` cannot run as asked; the message names the path, master or setting."""


class AnalyticsInputError(AnalyticsError, ValueError):
    """An input path does not exist, cannot be read, or holds no event log record."""


class ClusterAuthorizationFailedError(BrokerError, _aiokafka.ClusterAuthorizationFailedError):
    code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED


class CoordinatorLoadInProgressError(BrokerError, _aiokafka.CoordinatorLoadInProgressError):
    code = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    retriable = True


class CorruptMessageError(BrokerError, _aiokafka.CorruptRecordException):
    code = ErrorCode.CORRUPT_MESSAGE
    retriable = True  # Kafka's CorruptRecordException is retriable; aiokafka 0.14 says not


class FencedMemberEpochError(BrokerError):
    """KIP-848: the member's epoch is not the coordinator's; it must give up its partitions and rejoin."""

    code = ErrorCode.FENCED_MEMBER_EPOCH


class GroupIdNotFoundError(BrokerError, _aiokafka.GroupIdNotFound):
    code = ErrorCode.GROUP_ID_NOT_FOUND


class GroupMaxSizeReachedError(BrokerError):
    code = ErrorCode.GROUP_MAX_SIZE_REACHED


class IllegalGenerationError(BrokerError, _aiokafka.IllegalGenerationError):
    code = ErrorCode.ILLEGAL_GENERATION


class InvalidCommitOffsetSizeError(BrokerError, _aiokafka.InvalidCommitOffsetSizeError):
    code = ErrorCode.INVALID_COMMIT_OFFSET_SIZE


class InvalidGroupIdError(BrokerError, _aiokafka.InvalidGroupIdError):
    code = ErrorCode.INVALID_GROUP_ID


class InvalidRegularExpressionError(BrokerError):
    code = ErrorCode.INVALID_REGULAR_EXPRESSION


class InvalidRequestError(BrokerError, _aiokafka.InvalidRequestError):
    code = ErrorCode.INVALID_REQUEST


class LeaderNotAvailableError(BrokerError, _aiokafka.LeaderNotAvailableError):
    code = ErrorCode.LEADER_NOT_AVAILABLE
    retriable = True


class MemberIdRequiredError(BrokerError, _aiokafka.MemberIdRequired):
    code = ErrorCode.MEMBER_ID_REQUIRED


class NonEmptyGroupError(BrokerError, _aiokafka.NonEmptyGroup):
    code = ErrorCode.NON_EMPTY_GROUP


class NotCoordinatorError(BrokerError, _aiokafka.NotCoordinatorError):
    code = ErrorCode.NOT_COORDINATOR
    retriable = True


class NotLeaderOrFollowerError(BrokerError, _aiokafka.NotLeaderForPartitionError):
    code = ErrorCode.NOT_LEADER_OR_FOLLOWER
    retriable = True


class OffsetMetadataTooLargeError(BrokerError, _aiokafka.OffsetMetadataTooLargeError):
    code = ErrorCode.OFFSET_METADATA_TOO_LARGE


class OffsetOutOfRangeError(BrokerError, _aiokafka.OffsetOutOfRangeError):
    code = ErrorCode.OFFSET_OUT_OF_RANGE


class SparkMasterError(AnalyticsError, ValueError):
    """The Spark master URL is malformed or nothing answers there."""


class StaleMemberEpochError(BrokerError):
    code = ErrorCode.STALE_MEMBER_EPOCH


class UnknownMemberIdError(BrokerError, _aiokafka.UnknownMemberIdError):
    code = ErrorCode.UNKNOWN_MEMBER_ID


class UnknownServerError(BrokerError, _aiokafka.UnknownError):
    code = ErrorCode.UNKNOWN_SERVER_ERROR


class UnknownTopicIdError(BrokerError):
    code = ErrorCode.UNKNOWN_TOPIC_ID
    retriable = True


class UnknownTopicOrPartitionError(BrokerError, _aiokafka.UnknownTopicOrPartitionError):
    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    retriable = True


class UnreleasedInstanceIdError(BrokerError):
    """KIP-848: the broker still gives this group.instance.id to an earlier member, which never released it
    (a leave with epoch -2 or -1); the newcomer is refused, the holder keeps its place.

    ``cause`` says which of the two causes applies: ``"live-process"`` (another process is heartbeating
    with this instance id) or ``"previous-run"`` (an earlier run did not leave, and the broker keeps its
    place until its session expires). ``holder_member_id`` is the member id the broker named;
    ``waited_seconds`` how long the consumer retried before giving up.
    """

    code = ErrorCode.UNRELEASED_INSTANCE_ID
    LIVE_PROCESS: ClassVar[str] = "live-process"
    PREVIOUS_RUN: ClassVar[str] = "previous-run"

    def __init__(
        self,
        message: str | None = None,
        *,
        cause: str | None = None,
        holder_member_id: str | None = None,
        waited_seconds: float | None = None,
    ) -> None:
        self.cause = cause
        self.holder_member_id = holder_member_id
        self.waited_seconds = waited_seconds
        super().__init__(message)


class UnstableOffsetCommitError(BrokerError):
    code = ErrorCode.UNSTABLE_OFFSET_COMMIT
    retriable = True


class UnsupportedAssignorError(BrokerError):
    """KIP-848: group.remote.assignor names an assignor the brokers do not have (group.consumer.assignors)."""

    code = ErrorCode.UNSUPPORTED_ASSIGNOR


# -- raised only once something went wrong: a codec asked for a version it lacks, the brokers refusing
# session.timeout.ms, a leader's assignor failing --


class ApiVersionOutOfRangeError(ProtocolError, ValueError):
    """The codec was asked for a version of a message that it does not implement."""

    def __init__(self, api: str, version: int, min_version: int, max_version: int) -> None:
        self.api = api
        self.version = version
        self.min_version = min_version
        self.max_version = max_version
        super().__init__(f"{api} v{version} is outside the supported range v{min_version}-v{max_version}")


class InvalidSessionTimeoutError(BrokerError, _aiokafka.InvalidSessionTimeoutError):
    code = ErrorCode.INVALID_SESSION_TIMEOUT


class AssignorError(StaticConsumerError):
    """The leader's assignor raised, or produced a plan that cannot be sent.

    The group keeps working: this leader sends no SyncGroup for the plan and rejoins with backoff, so the
    error is reported (logs, telemetry, the event log) but not raised into the application. ``assignor``
    names the assignor; the original exception is the ``__cause__``.
    """

    def __init__(self, assignor: str, message: str) -> None:
        self.assignor = assignor
        super().__init__(f"assignor {assignor!r} {message}")


# -- A bootstrap that failed (staticconsumer.connection.bootstrapping) ------------------------------------


class ConnectionAttempt(msgspec.Struct, frozen=True):
    """What happened at one bootstrap server, phrased for the operator (never holds a secret).

    ``outcome`` is one of ``refused``, ``unresolvable``, ``unreachable``, ``connect-timeout``,
    ``no-answer``, ``closed``, ``tls``, ``authentication``, ``error``.
    """

    address: str
    outcome: str
    detail: str

    def __str__(self) -> str:
        return f"{self.address}: {self.detail}"


class BrokerConnectionError(StaticConsumerError, _aiokafka.KafkaConnectionError):
    """No bootstrap server could be used; ``attempts`` says what happened at each, one line per server.

    aiokafka's ``start()`` raises KafkaConnectionError("Unable to bootstrap ...") in the same case, so
    this is one (``retriable`` as there, except for the two causes that retrying cannot fix).
    """

    def __init__(self, summary: str, attempts: Sequence[ConnectionAttempt]) -> None:
        self.summary = summary
        self.attempts = tuple(attempts)
        listing = "".join(f"\n  - {attempt}" for attempt in self.attempts)
        super().__init__(summary + listing)


class BrokerUnreachableError(BrokerConnectionError, ConnectionError):
    """Nothing took the TCP connection: nothing listening, an unknown host, no route, or a dropped SYN."""


class BrokerNotRespondingError(BrokerConnectionError, TimeoutError):
    """A server took the TCP connection but sent no Kafka answer within ``timeout_ms``."""

    def __init__(self, summary: str, attempts: Sequence[ConnectionAttempt], timeout_ms: int) -> None:
        self.timeout_ms = timeout_ms
        super().__init__(summary, attempts)


class BrokerHandshakeError(BrokerConnectionError, ConnectionError):
    """The broker answered but the connection failed in TLS or before authenticating: almost always a
    ``security.protocol`` that is not the listener's (TLS against plaintext, plaintext against SASL...)."""

    retriable = False


class AuthenticationFailedError(BrokerConnectionError, _aiokafka.AuthenticationFailedError):
    """The broker refused the SASL credentials or mechanism; ``mechanism`` and ``username`` say which
    (the password never appears). Retrying cannot help: fix the credentials or the broker's users."""

    retriable = False

    def __init__(
        self, summary: str, attempts: Sequence[ConnectionAttempt], mechanism: str, username: str | None
    ) -> None:
        self.mechanism = mechanism
        self.username = username
        super().__init__(summary, attempts)


def _named_as_public() -> None:
    """Every class here reads as ``staticconsumer.errors.X`` (tracebacks, repr, pickle's lookup)."""
    for value in list(globals().values()):
        if isinstance(value, type) and value.__module__ == __name__:
            value.__module__ = "staticconsumer.errors"


_named_as_public()

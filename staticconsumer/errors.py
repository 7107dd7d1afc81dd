"""Typed errors with Kafka's real error codes.

Numbers are those of shipped Apache Kafka (``Errors.java``), not of the KIP drafts:
FENCED_INSTANCE_ID is 82, MEMBER_ID_REQUIRED 79, GROUP_MAX_SIZE_REACHED 81.
Every broker error the group protocol can return has its own exception class so callers
can ``except`` precisely; each exposes ``code`` and ``retriable``.

Services ported from aiokafka keep their ``except`` clauses: every error here is an
``aiokafka.errors.KafkaError``, and one that aiokafka also has (by name or by broker error code)
subclasses aiokafka's class too, while ``str()`` stays this SDK's message.
"""

# aiokafka ships no type information, so its classes are Any to mypy; subclassing them is the point here.
# mypy: disallow-subclassing-any=False

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Final, Protocol, cast

import msgspec
from aiokafka import errors as _aiokafka


class ErrorCode(enum.IntEnum):
    """Kafka protocol error codes that the group protocol and its neighbours use."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    UNSUPPORTED_VERSION = 35
    INVALID_REQUEST = 42
    GROUP_ID_NOT_FOUND = 69
    NON_EMPTY_GROUP = 68
    UNSTABLE_OFFSET_COMMIT = 88
    MEMBER_ID_REQUIRED = 79
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    STALE_MEMBER_EPOCH = 113
    UNRELEASED_INSTANCE_ID = 111
    UNKNOWN_TOPIC_ID = 100
    FENCED_MEMBER_EPOCH = 110
    UNSUPPORTED_ASSIGNOR = 112
    INVALID_REGULAR_EXPRESSION = 128


class StaticConsumerError(_aiokafka.KafkaError):
    """Root of every error this SDK raises: an aiokafka ``KafkaError``, so aiokafka-era ``except`` works."""

    def __str__(self) -> str:
        # Our messages already name what failed; aiokafka's __str__ would prefix the class name (and
        # "[Error N]" for broker errors).
        return BaseException.__str__(self)

    def __reduce__(self) -> tuple[Any, ...]:
        # The default (cls(*args)) runs __init__ again on the finished message: keyword-only fields
        # would be lost and prefixes doubled. Rebuild without __init__ instead.
        return (_rebuild, (type(self), self.args), self.__dict__ or None)


def _rebuild(cls: type[StaticConsumerError], args: tuple[Any, ...]) -> StaticConsumerError:
    """Unpickle an error: the instance with its message, its fields come back from its __dict__."""
    builtin: type[BaseException] = cls  # the built-in exception whose layout it has (OSError for some)
    while builtin.__flags__ & _HEAP_TYPE:
        builtin = cast("type[BaseException]", builtin.__base__)
    error = builtin.__new__(cls)
    error.args = args
    return error


_HEAP_TYPE = 1 << 9
"""Py_TPFLAGS_HEAPTYPE: set on classes defined in Python, clear on built-in ones."""


class ConfigurationError(StaticConsumerError, ValueError, _aiokafka.KafkaConfigurationError):
    """A setting is invalid; raised before any network call."""


class InvalidGroupInstanceIdError(ConfigurationError):
    """group.instance.id breaks Kafka's rules (non-empty, not '.'/'..', <= 249 chars, [a-zA-Z0-9._-])."""

    def __init__(self, instance_id: str, reason: str) -> None:
        self.instance_id = instance_id
        self.reason = reason
        super().__init__(f"invalid group.instance.id {instance_id!r}: {reason}")


class SettingProblem(msgspec.Struct, frozen=True):
    """One thing wrong with the configuration, phrased so the operator can fix it without reading code.

    ``name`` is what the operator wrote (an environment variable or a keyword argument), ``value`` is the
    value as shown to humans (already masked as ``***`` for secrets) and ``allowed`` says what would work.
    """

    name: str
    value: str
    allowed: str

    def __str__(self) -> str:
        return f"{self.name}={self.value}: {self.allowed}"


class SettingsError(ConfigurationError):
    """Every problem found in one pass, so a bad deployment is fixed in one round trip, not one per crash."""

    def __init__(self, problems: Sequence[SettingProblem]) -> None:
        self.problems = tuple(problems)
        count = len(self.problems)
        listing = "\n".join(f"  - {problem}" for problem in self.problems)
        plural = "" if count == 1 else "s"
        super().__init__(f"{count} configuration problem{plural} (nothing was sent to Kafka):\n{listing}")


class ProtocolError(StaticConsumerError):
    """Problems with the wire format itself (never a broker verdict)."""


class DecodeError(ProtocolError):
    """Bytes could not be read as the expected message: truncated, oversized or malformed."""


class EncodeError(ProtocolError, ValueError):
    """A value cannot go on the wire as asked (string too long, integer out of range, null not allowed)."""


class NoCommonApiVersionError(ProtocolError, _aiokafka.IncompatibleBrokerVersion):
    """The broker and this SDK share no version of an API, so the request cannot be sent at all."""

    def __init__(self, api: str, ours: tuple[int, int], broker: tuple[int, int] | None) -> None:
        self.api = api
        self.ours = ours
        self.broker = broker
        theirs = "does not offer it" if broker is None else f"offers v{broker[0]}-v{broker[1]}"
        super().__init__(f"{api}: this SDK speaks v{ours[0]}-v{ours[1]} but the broker {theirs}")


class UnsupportedVersionForFieldError(ProtocolError, _aiokafka.IncompatibleBrokerVersion):
    """A field that the requested version cannot carry (for example an instance id below JoinGroup v5)."""

    def __init__(
        self, api: str, version: int, field: str, min_version: int, max_version: int | None = None
    ) -> None:
        self.api = api
        self.version = version
        self.field = field
        self.min_version = min_version
        self.max_version = max_version
        if max_version is not None and version > max_version:
            detail = f"it exists only up to v{max_version}"
        else:
            detail = f"it needs v{min_version} or later"
        hint = (
            " (the broker negotiated too old a version for static membership)"
            if field == "group_instance_id"
            else ""
        )
        super().__init__(f"{api} v{version} cannot carry {field}; {detail}{hint}")


class BrokerError(StaticConsumerError, _aiokafka.BrokerResponseError):
    """An error code returned by the broker. Subclasses pin ``code`` and ``retriable``.

    A subclass also subclasses aiokafka's class for the same code (``aiokafka.errors.for_code``), so
    ``errno``, ``message`` (Kafka's name of the code), ``retriable`` and ``invalid_metadata`` read as
    aiokafka's do; ``retriable`` differs only where aiokafka disagrees with Kafka (CORRUPT_MESSAGE and
    NETWORK_EXCEPTION are retriable in Kafka, not in aiokafka 0.14).
    """

    code: ClassVar[int] = ErrorCode.UNKNOWN_SERVER_ERROR
    retriable: ClassVar[bool] = False
    errno: ClassVar[int] = ErrorCode.UNKNOWN_SERVER_ERROR
    message: ClassVar[str] = ErrorCode.UNKNOWN_SERVER_ERROR.name

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """aiokafka's ``errno`` and ``message`` follow ``code``, so the two views never disagree."""
        super().__init_subclass__(**kwargs)
        cls.errno = int(cls.code)
        cls.message = _name_of(cls.code)

    def __init__(self, message: str | None = None) -> None:
        name = _name_of(self.code)
        super().__init__(f"{name} ({self.code})" + (f": {message}" if message else ""))

    @property
    def error_name(self) -> str:
        return _name_of(self.code)


def _name_of(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        known = _aiokafka.kafka_errors.get(code)
        return str(known.message) if known is not None else f"UNKNOWN_ERROR_CODE_{code}"


class RequestTimedOutError(BrokerError, _aiokafka.RequestTimedOutError):
    code = ErrorCode.REQUEST_TIMED_OUT
    retriable = True


class TopicAuthorizationFailedError(BrokerError, _aiokafka.TopicAuthorizationFailedError):
    code = ErrorCode.TOPIC_AUTHORIZATION_FAILED


class GroupAuthorizationFailedError(BrokerError, _aiokafka.GroupAuthorizationFailedError):
    code = ErrorCode.GROUP_AUTHORIZATION_FAILED


class InconsistentGroupProtocolError(BrokerError, _aiokafka.InconsistentGroupProtocolError):
    code = ErrorCode.INCONSISTENT_GROUP_PROTOCOL


class RebalanceInProgressError(BrokerError, _aiokafka.RebalanceInProgressError):
    code = ErrorCode.REBALANCE_IN_PROGRESS


class UnsupportedVersionError(BrokerError, _aiokafka.UnsupportedVersionError):
    code = ErrorCode.UNSUPPORTED_VERSION


class CoordinatorNotAvailableError(BrokerError, _aiokafka.CoordinatorNotAvailableError):
    code = ErrorCode.COORDINATOR_NOT_AVAILABLE
    retriable = True


class NetworkExceptionError(BrokerError, _aiokafka.StaleLeaderEpochCodeError):
    """Code 13, which aiokafka 0.14 still calls by its pre-1.0 name (STALE_LEADER_EPOCH_CODE)."""

    code = ErrorCode.NETWORK_EXCEPTION
    retriable = True  # as in Kafka; aiokafka's StaleLeaderEpochCodeError says not


class ConsumerProtocolUnsupportedError(StaticConsumerError, _aiokafka.IncompatibleBrokerVersion):
    """group.protocol=consumer, but the broker does not offer KIP-848's consumer protocol (Kafka 4.0+).

    Never a silent fall-back to the classic protocol: the message names the broker, the Kafka release
    derived from what it advertises, and the two ways out (upgrade the brokers, or group_protocol=classic).
    ``advertised`` is the broker's ConsumerGroupHeartbeat version range (None when it has none).
    """

    def __init__(
        self,
        message: str,
        *,
        node_id: int | None = None,
        broker_release: str | None = None,
        advertised: tuple[int, int] | None = None,
    ) -> None:
        self.node_id = node_id
        self.broker_release = broker_release
        self.advertised = advertised
        super().__init__(message)


class FencedInstanceIdError(BrokerError):
    """Another member now owns this group.instance.id; this consumer is finished for good.

    Raised from the pending call and every later getone/getmany/iteration/commit. The two
    usual causes: another process runs with the same instance id, or this process was away
    (paused, partitioned, suspended) for longer than the session timeout and a replacement
    took its place.
    """

    code = ErrorCode.FENCED_INSTANCE_ID

    def __init__(
        self,
        message: str | None = None,
        *,
        group_id: str | None = None,
        group_instance_id: str | None = None,
    ) -> None:
        self.group_id = group_id
        self.group_instance_id = group_instance_id
        if message is None and (group_id is not None or group_instance_id is not None):
            message = (
                f"group {group_id!r} fenced group.instance.id {group_instance_id!r}: another member "
                f"now holds this instance id. Either another process is running with the same "
                f"group.instance.id (give every consumer a unique one, e.g. the StatefulSet pod name), "
                f"or this process was away longer than session.timeout.ms and was replaced. "
                f"Stop this consumer; restart it only once the other holder is gone."
            )
        super().__init__(message)


def _aiokafka_only(code: int) -> type[BrokerError]:
    """A BrokerError for a code that aiokafka names and this SDK has no class for (INVALID_TOPIC,
    KAFKA_STORAGE_ERROR ...), so ``except aiokafka.errors.<Name>`` catches it here as it would there."""
    theirs = _aiokafka.kafka_errors[code]
    attributes = {
        "__module__": __name__,
        "__doc__": f"{theirs.message} ({code}): aiokafka's {theirs.__name__} as a BrokerError.",
        "code": code,
        "retriable": theirs.retriable,
    }
    return cast("type[BrokerError]", type(theirs.__name__, (BrokerError, theirs), attributes))


_RARE: Final = frozenset(
    {
        "AnalyticsError",
        "AnalyticsInputError",
        "ApiVersionOutOfRangeError",
        "AssignorError",
        "AuthenticationFailedError",
        "BrokerConnectionError",
        "BrokerHandshakeError",
        "BrokerNotRespondingError",
        "BrokerUnreachableError",
        "ClusterAuthorizationFailedError",
        "ConnectionAttempt",
        "CoordinatorLoadInProgressError",
        "CorruptMessageError",
        "FencedMemberEpochError",
        "GroupIdNotFoundError",
        "GroupMaxSizeReachedError",
        "IllegalGenerationError",
        "InvalidCommitOffsetSizeError",
        "InvalidGroupIdError",
        "InvalidRegularExpressionError",
        "InvalidRequestError",
        "InvalidSessionTimeoutError",
        "LeaderNotAvailableError",
        "MemberIdRequiredError",
        "NonEmptyGroupError",
        "NotCoordinatorError",
        "NotLeaderOrFollowerError",
        "OffsetMetadataTooLargeError",
        "OffsetOutOfRangeError",
        "SparkMasterError",
        "StaleMemberEpochError",
        "UnknownMemberIdError",
        "UnknownServerError",
        "UnknownTopicIdError",
        "UnknownTopicOrPartitionError",
        "UnreleasedInstanceIdError",
        "UnstableOffsetCommitError",
        "UnsupportedAssignorError",
    }
)
"""Public classes defined in ``staticconsumer._errors_rare``, loaded on first use (issue 26): the broker
codes a consumer's start never raises, KIP-848's errors, a failed bootstrap's (with ``ConnectionAttempt``)
and the analytics tool's. Their ``__module__`` is this module, so ``staticconsumer.errors.X``,
``from staticconsumer.errors import X`` and pickle all work."""


class _Registry(msgspec.Struct, frozen=True):
    by_code: dict[int, type[BrokerError]]
    aiokafka_only: frozenset[int]
    aiokafka_only_names: dict[str, int]


_registry: _Registry | None = None


def _registered() -> _Registry:
    """Every class by code, once the rare ones are loaded; the codes only aiokafka names have their
    classes built when first asked for (``error_class_for``, or by name: ``except
    errors.InvalidTopicError``, pickle): a consumer that never sees one does not build 47 classes."""
    global _registry
    registry = _registry
    if registry is None:
        import staticconsumer._errors_rare  # noqa: F401  (defines the rare classes, BrokerError subclasses)

        by_code: dict[int, type[BrokerError]] = {}
        pending: list[type[BrokerError]] = list(BrokerError.__subclasses__())
        while pending:
            cls = pending.pop()
            by_code.setdefault(int(cls.code), cls)
            pending.extend(cls.__subclasses__())
        only = frozenset(_aiokafka.kafka_errors.keys() - by_code.keys() - {ErrorCode.NONE})
        names = {_aiokafka.kafka_errors[code].__name__: code for code in only}
        registry = _registry = _Registry(by_code, only, names)
    return registry


def _built(code: int) -> type[BrokerError]:
    """The class for an aiokafka-only code, built once (two threads racing keep the first one built)."""
    by_code = _registered().by_code
    cls = by_code.get(code)
    if cls is None:
        built = _aiokafka_only(code)
        cls = by_code.setdefault(code, built)
        globals().setdefault(cls.__name__, cls)  # pickle finds a class by module and name
    return cls


if TYPE_CHECKING:
    from staticconsumer._errors_rare import AnalyticsError as AnalyticsError
    from staticconsumer._errors_rare import AnalyticsInputError as AnalyticsInputError
    from staticconsumer._errors_rare import ApiVersionOutOfRangeError as ApiVersionOutOfRangeError
    from staticconsumer._errors_rare import AssignorError as AssignorError
    from staticconsumer._errors_rare import AuthenticationFailedError as AuthenticationFailedError
    from staticconsumer._errors_rare import BrokerConnectionError as BrokerConnectionError
    from staticconsumer._errors_rare import BrokerHandshakeError as BrokerHandshakeError
    from staticconsumer._errors_rare import BrokerNotRespondingError as BrokerNotRespondingError
    from staticconsumer._errors_rare import BrokerUnreachableError as BrokerUnreachableError
    from staticconsumer._errors_rare import ClusterAuthorizationFailedError as ClusterAuthorizationFailedError
    from staticconsumer._errors_rare import ConnectionAttempt as ConnectionAttempt
    from staticconsumer._errors_rare import CoordinatorLoadInProgressError as CoordinatorLoadInProgressError
    from staticconsumer._errors_rare import CorruptMessageError as CorruptMessageError
    from staticconsumer._errors_rare import FencedMemberEpochError as FencedMemberEpochError
    from staticconsumer._errors_rare import GroupIdNotFoundError as GroupIdNotFoundError
    from staticconsumer._errors_rare import GroupMaxSizeReachedError as GroupMaxSizeReachedError
    from staticconsumer._errors_rare import IllegalGenerationError as IllegalGenerationError
    from staticconsumer._errors_rare import InvalidCommitOffsetSizeError as InvalidCommitOffsetSizeError
    from staticconsumer._errors_rare import InvalidGroupIdError as InvalidGroupIdError
    from staticconsumer._errors_rare import InvalidRegularExpressionError as InvalidRegularExpressionError
    from staticconsumer._errors_rare import InvalidRequestError as InvalidRequestError
    from staticconsumer._errors_rare import InvalidSessionTimeoutError as InvalidSessionTimeoutError
    from staticconsumer._errors_rare import LeaderNotAvailableError as LeaderNotAvailableError
    from staticconsumer._errors_rare import MemberIdRequiredError as MemberIdRequiredError
    from staticconsumer._errors_rare import NonEmptyGroupError as NonEmptyGroupError
    from staticconsumer._errors_rare import NotCoordinatorError as NotCoordinatorError
    from staticconsumer._errors_rare import NotLeaderOrFollowerError as NotLeaderOrFollowerError
    from staticconsumer._errors_rare import OffsetMetadataTooLargeError as OffsetMetadataTooLargeError
    from staticconsumer._errors_rare import OffsetOutOfRangeError as OffsetOutOfRangeError
    from staticconsumer._errors_rare import SparkMasterError as SparkMasterError
    from staticconsumer._errors_rare import StaleMemberEpochError as StaleMemberEpochError
    from staticconsumer._errors_rare import UnknownMemberIdError as UnknownMemberIdError
    from staticconsumer._errors_rare import UnknownServerError as UnknownServerError
    from staticconsumer._errors_rare import UnknownTopicIdError as UnknownTopicIdError
    from staticconsumer._errors_rare import UnknownTopicOrPartitionError as UnknownTopicOrPartitionError
    from staticconsumer._errors_rare import UnreleasedInstanceIdError as UnreleasedInstanceIdError
    from staticconsumer._errors_rare import UnstableOffsetCommitError as UnstableOffsetCommitError
    from staticconsumer._errors_rare import UnsupportedAssignorError as UnsupportedAssignorError
else:

    def __getattr__(name: str) -> type[Exception]:
        if name in _RARE:
            import staticconsumer._errors_rare as rare

            value: type[Exception] = getattr(rare, name)
            globals()[name] = value
            return value
        # Dunder lookups (the import system's ``__path__``...) must not load the rare classes.
        code = None if name.startswith("__") else _registered().aiokafka_only_names.get(name)
        if code is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        return _built(code)


def error_class_for(code: int) -> type[BrokerError] | None:
    """The exception class for a broker error code; None for NONE (0)."""
    if code == ErrorCode.NONE:
        return None
    registry = _registered()
    if code in registry.aiokafka_only:
        return _built(code)
    return registry.by_code.get(code) or registry.by_code[ErrorCode.UNKNOWN_SERVER_ERROR]


def broker_error(code: int, message: str) -> BrokerError:
    """The typed error for a non-NONE ``code``; an unknown code keeps its number in the message."""
    cls = error_class_for(code) or _registered().by_code[ErrorCode.UNKNOWN_SERVER_ERROR]
    if cls.code != code:
        message = f"{message} (unrecognised broker error code {code})"
    return cls(message)


# -- errors of the consumer itself (not broker error codes) ----------------------------------------


class CommitFailedError(StaticConsumerError, _aiokafka.CommitFailedError):
    """The commit cannot succeed in this generation (Java's CommitFailedException).

    Either the member is not in an active generation, or the coordinator no longer recognises the
    generation it was sent with; the partitions may already belong to another member, so retrying the
    same commit is pointless. Poll again to rejoin, then commit what is processed after that.
    """

    def __init__(self, *args: object) -> None:
        # Past aiokafka's __init__, which would put its own max_poll_interval_ms advice before ours.
        super(_aiokafka.CommitFailedError, self).__init__(*args)


if TYPE_CHECKING:

    class _Partition(Protocol):
        @property
        def topic(self) -> str: ...

        @property
        def partition(self) -> int: ...


class OffsetRegressionError(StaticConsumerError, ValueError):
    """A commit would move a committed offset backwards, which breaks at-least-once bookkeeping."""

    def __init__(self, regressions: Mapping[Any, tuple[int, int]]) -> None:
        self.regressions = dict(regressions)
        items: list[tuple[_Partition, tuple[int, int]]] = sorted(self.regressions.items())
        detail = ", ".join(f"{tp.topic}[{tp.partition}]: {asked} < {floor}" for tp, (asked, floor) in items)
        super().__init__(
            f"refusing to commit offsets lower than ones already committed or in flight ({detail}); "
            f"committed offsets never move backwards"
        )


class ConsumerStoppedError(StaticConsumerError, _aiokafka.ConsumerStoppedError):
    """The consumer is not running (never started, or stopped)."""


class IllegalStateError(StaticConsumerError, _aiokafka.IllegalStateError):
    """A call the consumer's state does not allow: a partition this member does not own (seek, pause,
    position, highwater...), a commit with nothing subscribed, or ``assign()`` (partitions come from the
    group). A subclass of aiokafka's IllegalStateError (and so of ``RuntimeError``), which aiokafka raises
    for the same calls."""


class DuplicateInstanceIdError(ConfigurationError):
    """Two consumers in one process with the same group and instance id would fence each other forever."""


class StaticMembershipUnsupportedError(StaticConsumerError, _aiokafka.IncompatibleBrokerVersion):
    """The broker is too old to carry group.instance.id; refusing beats silently joining as dynamic."""


class MissingTopicsError(StaticConsumerError):
    """Subscribed topics do not exist (or the principal may not see them) and
    ``staticconsumer.fail.on.missing.topics`` asks to fail rather than wait for them."""

    def __init__(self, topics: Sequence[str], message: str) -> None:
        self.topics = tuple(topics)
        super().__init__(message)


class ResponseTooLargeError(ProtocolError):
    """A response frame claimed more bytes than this connection accepts; it was refused unread.

    Checked on the 4-byte size prefix, before anything is buffered, so a broken or hostile peer cannot
    make the client hold gigabytes; the connection is closed (its other pending requests fail with a
    connection error) and the next request opens a new one.
    """

    def __init__(self, size: int, limit: int, broker: str, api: str | None, setting: str) -> None:
        self.size = size
        self.limit = limit
        self.broker = broker
        self.api = api
        self.setting = setting
        what = f"the {api} response" if api else "a response"
        super().__init__(
            f"{what} from broker {broker} claims {size} bytes, more than the {limit} this connection "
            f"accepts; the connection was closed without reading it. If that size is genuine, raise {setting}"
        )

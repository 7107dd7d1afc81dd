"""Our errors are aiokafka's too: a service ported from aiokafka keeps its ``except`` clauses, while each
error keeps our message, fields and built-in bases (and survives pickling with all of them)."""

from __future__ import annotations

import pickle
import subprocess
import sys
from typing import Any

import aiokafka.errors as aio
import pytest

import staticconsumer.errors as ours
from staticconsumer.errors import ConnectionAttempt, ErrorCode, SettingProblem
from staticconsumer.membership import TopicPartition


def _our_classes() -> list[type[BaseException]]:
    """Every exception class staticconsumer.errors defines (those built for aiokafka-only codes included)."""
    for code in aio.kafka_errors:  # aiokafka-only codes' classes are built when first asked for
        ours.error_class_for(code)
    for name in ours._RARE:  # and the rarer ones defined on first use
        getattr(ours, name)
    found = [
        value
        for value in vars(ours).values()
        if isinstance(value, type) and issubclass(value, BaseException) and value.__module__ == ours.__name__
    ]
    return sorted(found, key=lambda cls: cls.__name__)


OUR_CLASSES = _our_classes()
BROKER_CLASSES = [c for c in OUR_CLASSES if issubclass(c, ours.BrokerError) and c is not ours.BrokerError]

JAVA_RETRIABLE = {ErrorCode.CORRUPT_MESSAGE, ErrorCode.NETWORK_EXCEPTION}
"""Codes Kafka retries and aiokafka 0.14 does not (CorruptRecordException, StaleLeaderEpochCodeError): ours
keep Kafka's flag, which the membership's retry decisions rely on."""

ATTEMPTS = (ConnectionAttempt("broker-1:9092", "refused", "connection refused"),)

SAMPLES: dict[type[BaseException], tuple[tuple[Any, ...], dict[str, Any]]] = {
    ours.InvalidGroupInstanceIdError: (("pod/0", "'/' is not allowed"), {}),
    ours.SettingsError: (([SettingProblem("KAFKA_GROUP_ID", "''", "a non-empty group id")],), {}),
    ours.ApiVersionOutOfRangeError: (("JoinGroup", 12, 0, 9), {}),
    ours.NoCommonApiVersionError: (("JoinGroup", (0, 9), (10, 12)), {}),
    ours.UnsupportedVersionForFieldError: (("JoinGroup", 4, "group_instance_id", 5), {}),
    ours.FencedInstanceIdError: ((), {"group_id": "orders", "group_instance_id": "pod-0"}),
    ours.UnreleasedInstanceIdError: (("held",), {"cause": "live-process", "holder_member_id": "m-1"}),
    ours.ConsumerProtocolUnsupportedError: (("no KIP-848",), {"node_id": 1, "advertised": None}),
    ours.OffsetRegressionError: (({TopicPartition("orders", 0): (3, 7)},), {}),
    ours.AssignorError: (("sticky", "raised"), {}),
    ours.BrokerConnectionError: (("no bootstrap server answered", ATTEMPTS), {}),
    ours.BrokerUnreachableError: (("nothing listens", ATTEMPTS), {}),
    ours.BrokerNotRespondingError: (("no answer", ATTEMPTS, 5000), {}),
    ours.BrokerHandshakeError: (("TLS failed", ATTEMPTS), {}),
    ours.AuthenticationFailedError: (("SASL refused", ATTEMPTS, "PLAIN", "alice"), {}),
    ours.MissingTopicsError: ((["orders"], "topic 'orders' does not exist"), {}),
    ours.ResponseTooLargeError: ((10**9, 10**8, "broker-1:9092", "Fetch", "fetch.max.bytes"), {}),
}
"""Constructor arguments of the classes that do not take a single message."""


def _sample(cls: type[BaseException]) -> BaseException:
    args, kwargs = SAMPLES.get(cls, (("something failed",), {}))
    return cls(*args, **kwargs)


@pytest.mark.parametrize("cls", OUR_CLASSES, ids=lambda cls: cls.__name__)
def test_every_error_is_an_aiokafka_error_and_a_subclass_of_aiokafkas_namesake(
    cls: type[BaseException],
) -> None:
    assert issubclass(cls, aio.KafkaError)
    namesake = getattr(aio, cls.__name__, None)
    if isinstance(namesake, type) and issubclass(namesake, BaseException):
        assert issubclass(cls, namesake), f"{cls.__name__} is not aiokafka's {namesake.__name__}"


def test_the_walk_finds_the_errors_that_share_aiokafkas_names() -> None:
    shared = {cls.__name__ for cls in OUR_CLASSES if hasattr(aio, cls.__name__)}
    assert {
        "CommitFailedError",
        "IllegalStateError",
        "RebalanceInProgressError",
        "OffsetOutOfRangeError",
        "UnknownMemberIdError",
        "ConsumerStoppedError",
        "AuthenticationFailedError",
        "CoordinatorNotAvailableError",
        "NotCoordinatorError",
    } <= shared


@pytest.mark.parametrize("cls", BROKER_CLASSES, ids=lambda cls: cls.__name__)
def test_broker_errors_read_as_aiokafkas_for_the_same_code(cls: type[ours.BrokerError]) -> None:
    assert cls.errno == cls.code
    assert cls.message == cls("x").error_name
    theirs = aio.kafka_errors.get(cls.code)
    if theirs is None:  # a code aiokafka 0.14 does not know: only its BrokerResponseError
        assert aio.for_code(cls.code) is aio.UnknownError
        assert not issubclass(cls, aio.UnknownError), "unknown to aiokafka is not UNKNOWN_SERVER_ERROR"
        return
    assert issubclass(cls, theirs)
    assert cls.invalid_metadata == theirs.invalid_metadata
    if cls.code in JAVA_RETRIABLE:
        assert (cls.retriable, theirs.retriable) == (True, False)
    else:
        assert cls.retriable == theirs.retriable


def test_aiokafka_only_classes_are_built_when_first_asked_for_by_code_or_name() -> None:
    script = (
        "import pickle, aiokafka.errors as aio, staticconsumer.errors as ours\n"
        "assert 'InvalidTopicError' not in vars(ours)\n"
        "by_name = ours.InvalidTopicError\n"
        "assert by_name is ours.error_class_for(aio.InvalidTopicError.errno)\n"
        "assert issubclass(by_name, (ours.BrokerError, aio.InvalidTopicError))\n"
        "assert ours.error_class_for(aio.KafkaStorageError.errno) is ours.KafkaStorageError\n"
        "assert ours.UnknownServerError is ours.error_class_for(aio.UnknownError.errno)\n"
        "print(pickle.dumps(ours.broker_error(aio.NotEnoughReplicasError.errno, 'x')).hex())"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    again = pickle.loads(bytes.fromhex(run.stdout))  # a process that has not built it yet unpickles it
    assert type(again) is ours.error_class_for(aio.NotEnoughReplicasError.errno)
    with pytest.raises(AttributeError, match="NoSuchError"):
        ours.NoSuchError  # noqa: B018


@pytest.mark.parametrize("code", sorted(set(aio.kafka_errors) - {0}))
def test_the_broker_answer_aiokafka_would_raise_as_name_is_caught_by_that_name(code: int) -> None:
    theirs = aio.for_code(code)
    error = ours.broker_error(code, "OffsetCommit failed for group 'orders'")
    with pytest.raises(theirs) as caught:
        raise error
    assert caught.value.errno == code
    assert isinstance(caught.value, ours.BrokerError)
    assert str(caught.value).endswith(f"({code}): OffsetCommit failed for group 'orders'")


def test_a_code_nobody_knows_is_unknown_in_both_and_keeps_its_number() -> None:
    error = ours.broker_error(9999, "JoinGroup failed")
    assert isinstance(error, ours.UnknownServerError)
    assert isinstance(error, aio.UnknownError)
    assert error.errno == -1
    assert "unrecognised broker error code 9999" in str(error)


def test_messages_stay_ours_without_aiokafkas_prefixes() -> None:
    fenced = ours.FencedInstanceIdError(group_id="orders", group_instance_id="pod-0")
    assert str(fenced).startswith("FENCED_INSTANCE_ID (82): group 'orders' fenced group.instance.id 'pod-0'")
    assert str(ours.RebalanceInProgressError("commit")) == "REBALANCE_IN_PROGRESS (27): commit"
    assert str(ours.CommitFailedError("generation 3 is gone")) == "generation 3 is gone"
    assert str(ours.ConsumerStoppedError("call start() first")) == "call start() first"
    assert str(ours.IllegalStateError("not owned")) == "not owned"


def test_commit_failed_keeps_our_advice_not_aiokafkas() -> None:
    error = ours.CommitFailedError("poll again to rejoin")
    assert error.args == ("poll again to rejoin",)
    assert "max_poll_interval_ms" not in str(error)


@pytest.mark.parametrize(
    ("cls", "builtin"),
    [
        (ours.ConfigurationError, ValueError),
        (ours.SettingsError, ValueError),
        (ours.EncodeError, ValueError),
        (ours.OffsetRegressionError, ValueError),
        (ours.IllegalStateError, RuntimeError),
        (ours.BrokerUnreachableError, ConnectionError),
        (ours.BrokerHandshakeError, ConnectionError),
        (ours.BrokerNotRespondingError, TimeoutError),
        (ours.AnalyticsInputError, ValueError),
    ],
)
def test_built_in_bases_stay(cls: type[BaseException], builtin: type[BaseException]) -> None:
    assert isinstance(_sample(cls), builtin)


@pytest.mark.parametrize(
    ("cls", "theirs"),
    [
        (ours.ConfigurationError, aio.KafkaConfigurationError),
        (ours.BrokerConnectionError, aio.KafkaConnectionError),
        (ours.BrokerUnreachableError, aio.KafkaConnectionError),
        (ours.BrokerNotRespondingError, aio.KafkaConnectionError),
        (ours.AuthenticationFailedError, aio.KafkaConnectionError),
        (ours.StaticMembershipUnsupportedError, aio.IncompatibleBrokerVersion),
        (ours.ConsumerProtocolUnsupportedError, aio.IncompatibleBrokerVersion),
        (ours.NoCommonApiVersionError, aio.IncompatibleBrokerVersion),
        (ours.UnsupportedVersionForFieldError, aio.IncompatibleBrokerVersion),
        (ours.NotLeaderOrFollowerError, aio.NotLeaderForPartitionError),
        (ours.CoordinatorNotAvailableError, aio.GroupCoordinatorNotAvailableError),
        (ours.NotCoordinatorError, aio.NotCoordinatorForGroupError),
        (ours.CoordinatorLoadInProgressError, aio.GroupLoadInProgressError),
        (ours.MemberIdRequiredError, aio.MemberIdRequired),
    ],
)
def test_aiokafkas_other_names_for_the_same_failure(
    cls: type[BaseException], theirs: type[Exception]
) -> None:
    assert issubclass(cls, theirs)


def test_only_connection_failures_that_can_heal_are_retriable() -> None:
    assert ours.BrokerUnreachableError.retriable is True
    assert ours.BrokerNotRespondingError.retriable is True
    assert ours.BrokerHandshakeError.retriable is False
    assert ours.AuthenticationFailedError.retriable is False
    assert ours.StaticConsumerError.retriable is False


@pytest.mark.parametrize("cls", OUR_CLASSES, ids=lambda cls: cls.__name__)
def test_pickling_keeps_class_message_and_fields(cls: type[BaseException]) -> None:
    error = _sample(cls)
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is cls
    assert str(copy) == str(error)
    assert copy.args == error.args
    assert vars(copy) == vars(error)


def test_samples_name_only_classes_that_exist() -> None:
    assert set(SAMPLES) <= set(OUR_CLASSES)

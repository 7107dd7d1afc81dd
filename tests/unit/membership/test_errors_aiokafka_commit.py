"""The commit errors the membership produces are caught by the ``except`` clauses an aiokafka service has."""

from __future__ import annotations

import aiokafka.errors as aio
import pytest
from membership_harness import Harness, one, tp

from staticconsumer.errors import ErrorCode
from staticconsumer.membership import actions as act


def _failed_commit(code: ErrorCode) -> BaseException:
    """The error of a commit the coordinator answered with ``code`` in a stable generation."""
    h = Harness()
    h.become_stable(partitions=[tp("t", 0)])
    send = one(h.commit(1, t0=5), act.SendOffsetCommit)
    error = one(h.commit_answer(send, code), act.CommitCompleted).error
    assert error is not None
    return error


@pytest.mark.parametrize("code", [ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID])
def test_a_lost_generation_is_aiokafkas_commit_failed_error(code: ErrorCode) -> None:
    with pytest.raises(aio.CommitFailedError) as caught:  # as an aiokafka service wrote its except
        raise _failed_commit(code)
    assert "max_poll_interval_ms" not in str(caught.value), "our advice, not aiokafka's"


def test_a_commit_during_a_rebalance_is_aiokafkas_rebalance_in_progress_error() -> None:
    with pytest.raises(aio.RebalanceInProgressError) as caught:
        raise _failed_commit(ErrorCode.REBALANCE_IN_PROGRESS)
    assert caught.value.errno == ErrorCode.REBALANCE_IN_PROGRESS


def test_a_fenced_commit_is_an_aiokafka_broker_response_error_with_its_code() -> None:
    with pytest.raises(aio.BrokerResponseError) as caught:
        raise _failed_commit(ErrorCode.FENCED_INSTANCE_ID)
    assert caught.value.errno == 82
    assert caught.value.retriable is False


def test_a_commit_without_a_generation_is_aiokafkas_commit_failed_error() -> None:
    h = Harness()
    error = one(h.commit(1, t0=1), act.CommitCompleted).error
    assert isinstance(error, aio.CommitFailedError)

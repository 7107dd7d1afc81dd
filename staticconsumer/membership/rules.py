"""The error rules of both protocols as data: for each API, broker error code -> reaction.

The Java client keeps these rules in if/else chains spread over AbstractCoordinator and
ConsumerCoordinator; here they are tables (as h11 keeps its transitions as data), decoded in one place
(``MachineCore._react`` and ``_on_commit_response`` in core.py) and rendered into docs/membership.md by
:func:`markdown` (a test fails when the page and the tables drift apart).

A reaction lists steps. Most responses may only reset state when the member still has the identity the
request was sent with (Kafka's "generation unchanged" rule); ``stale`` gives the steps for the other case.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import TypeVar

import msgspec

from staticconsumer.errors import ErrorCode


class Step(enum.Enum):
    """One thing the machine does in reaction to a response; the value is how the docs describe it."""

    HEARTBEAT_OK = "counts as a live heartbeat"
    HEARTBEAT_BACKOFF = "next heartbeat after backoff"
    COORDINATOR_LOST = "forget the coordinator and rediscover it"
    RESET_MEMBER_ID = "reset the generation and the member id, rejoin at once"
    RESET_GENERATION = "reset the generation (keep the member id), rejoin at once"
    ADOPT_MEMBER_ID = "take the member id the broker minted (KIP-394) and rejoin at once, no callbacks"
    REJOIN = "rejoin at once"
    REJOIN_AFTER_BACKOFF = "rejoin after backoff"
    REJOIN_IF_STABLE = "rejoin if stable"
    FENCE = "fatal and sticky: FencedInstanceIdError"
    FAIL = "fatal and sticky: the broker's error"
    WARN = "log a warning"
    # the consumer protocol (KIP-848)
    FULL_HEARTBEAT = "the next heartbeat carries every field"
    LOSE_AND_REJOIN = (
        "partitions lost (never committed), rejoin at epoch 0 with the same member id and instance id"
    )
    UNRELEASED = (
        "our own place, or a dead earlier run's on this host: released (epoch -2) and rejoined at once; "
        "else retried with backoff while the holder can still be leaving (bounded by the session "
        "timeout), then fatal and sticky: UnreleasedInstanceIdError saying which cause applies"
    )
    RESEND_AFTER_HEARTBEAT = (
        "resent with the member epoch of the next heartbeat (at once if it moved already)"
    )
    HEARTBEAT_NOW = "heartbeat at once (its answer decides)"


class Verdict(enum.Enum):
    """What the application's commit call gets back for an OffsetCommit error."""

    BROKER_ERROR = "the broker's error (typed, `retriable` set as Kafka defines it)"
    RESENT = (
        "nothing while resent; StaleMemberEpochError if the epoch did not move, CommitFailedError if a "
        "partition was given up meanwhile"
    )
    REBALANCING = "RebalanceInProgressError"
    COMMIT_FAILED = "CommitFailedError"
    REBALANCING_OR_FAILED = "RebalanceInProgressError if the member is rejoining, else CommitFailedError"
    FENCED = "FencedInstanceIdError"


class Reaction(msgspec.Struct, frozen=True):
    """The steps for one error code; ``stale`` when the generation or member id changed since sending."""

    steps: tuple[Step, ...]
    stale: tuple[Step, ...] | None = None
    reason: str | None = None
    """The rejoin reason sent on the next JoinGroup, when the API's default does not fit."""

    def steps_for(self, unchanged: bool) -> tuple[Step, ...]:
        return self.steps if unchanged or self.stale is None else self.stale


class CommitReaction(msgspec.Struct, frozen=True):
    """An OffsetCommit error: steps on the group, and the verdict for the caller (fresh and stale)."""

    steps: tuple[Step, ...]
    verdict: Verdict
    stale_steps: tuple[Step, ...] = ()
    stale_verdict: Verdict | None = None
    retry_hint: bool = False
    """Whether the caller is told to retry (the commit may succeed as sent once the cause is gone)."""
    reason: str | None = None
    """The rejoin reason, when ``OFFSET_COMMIT_REASON`` does not fit."""

    def for_(self, unchanged: bool) -> tuple[tuple[Step, ...], Verdict]:
        if unchanged or self.stale_verdict is None:
            return self.steps, self.verdict
        return self.stale_steps, self.stale_verdict


class ApiRules(msgspec.Struct, frozen=True):
    """One API's table, its fallback for codes it does not list, and its default rejoin reason."""

    api: str
    reactions: Mapping[int, Reaction]
    otherwise: Reaction
    reason: str
    """Template of the rejoin reason; ``{error}`` is the error code's name."""
    identity: str = "generation"
    """What "unchanged since sending" is about: the classic generation, or the consumer protocol's member
    epoch."""
    note_stale: bool = False
    """Log an answer ignored for an older identity (heartbeats: the usual sign of a rebalance raced)."""

    def reaction(self, code: int) -> Reaction:
        return self.reactions.get(code, self.otherwise)

    def reason_for(self, code: int, reaction: Reaction) -> str:
        return reaction.reason or self.reason.format(error=code_name(code))


_COORDINATOR_ERRORS = (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR)
_FAIL = Reaction((Step.FAIL,))

JOIN_GROUP = ApiRules(
    api="JoinGroup",
    reactions={
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: Reaction((Step.REJOIN_AFTER_BACKOFF,)),
        **{
            code: Reaction((Step.COORDINATOR_LOST, Step.REJOIN_AFTER_BACKOFF)) for code in _COORDINATOR_ERRORS
        },
        ErrorCode.UNKNOWN_MEMBER_ID: Reaction((Step.RESET_MEMBER_ID,), stale=(Step.REJOIN,)),
        ErrorCode.MEMBER_ID_REQUIRED: Reaction((Step.ADOPT_MEMBER_ID,)),
        ErrorCode.REBALANCE_IN_PROGRESS: Reaction((Step.REJOIN,)),
        # Java: fatal on JoinGroup whatever the generation; nothing else can hold our instance id.
        ErrorCode.FENCED_INSTANCE_ID: Reaction((Step.FENCE,)),
        **{
            code: _FAIL
            for code in (
                ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                ErrorCode.INVALID_SESSION_TIMEOUT,
                ErrorCode.INVALID_GROUP_ID,
                ErrorCode.GROUP_AUTHORIZATION_FAILED,
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                ErrorCode.UNSUPPORTED_VERSION,
            )
        },
    },
    otherwise=_FAIL,
    reason="rebalance failed due to {error}",
)

SYNC_GROUP = ApiRules(
    api="SyncGroup",
    reactions={
        ErrorCode.REBALANCE_IN_PROGRESS: Reaction((Step.REJOIN,)),
        ErrorCode.UNKNOWN_MEMBER_ID: Reaction((Step.RESET_MEMBER_ID,), stale=(Step.REJOIN,)),
        # Keeps the member id: it may still be valid, and reusing it spares waiting for it to expire.
        ErrorCode.ILLEGAL_GENERATION: Reaction((Step.RESET_GENERATION,), stale=(Step.REJOIN,)),
        **{
            code: Reaction((Step.COORDINATOR_LOST, Step.REJOIN_AFTER_BACKOFF)) for code in _COORDINATOR_ERRORS
        },
        ErrorCode.FENCED_INSTANCE_ID: Reaction((Step.FENCE,)),
    },
    otherwise=_FAIL,
    reason="rebalance failed due to {error}",
)

HEARTBEAT = ApiRules(
    api="Heartbeat",
    note_stale=True,
    reactions={
        ErrorCode.NONE: Reaction((Step.HEARTBEAT_OK,)),
        **{code: Reaction((Step.COORDINATOR_LOST, Step.HEARTBEAT_BACKOFF)) for code in _COORDINATOR_ERRORS},
        # Keep heartbeating through the rebalance, so it counts as a success (Java does the same).
        ErrorCode.REBALANCE_IN_PROGRESS: Reaction(
            (Step.HEARTBEAT_OK, Step.REJOIN_IF_STABLE), reason="group is already rebalancing"
        ),
        ErrorCode.ILLEGAL_GENERATION: Reaction((Step.RESET_GENERATION,), stale=(Step.HEARTBEAT_OK,)),
        ErrorCode.UNKNOWN_MEMBER_ID: Reaction((Step.RESET_MEMBER_ID,), stale=(Step.HEARTBEAT_OK,)),
        ErrorCode.FENCED_INSTANCE_ID: Reaction((Step.FENCE,), stale=(Step.HEARTBEAT_OK,)),
        ErrorCode.GROUP_AUTHORIZATION_FAILED: _FAIL,
    },
    otherwise=Reaction((Step.WARN, Step.HEARTBEAT_BACKOFF)),
    reason="encountered {error} from HEARTBEAT response",
)

OFFSET_COMMIT_REASON = "encountered {error} from OFFSET_COMMIT response"

OFFSET_COMMIT: Mapping[int, CommitReaction] = {
    **{
        code: CommitReaction((Step.COORDINATOR_LOST,), Verdict.BROKER_ERROR, retry_hint=True)
        for code in (*_COORDINATOR_ERRORS, ErrorCode.REQUEST_TIMED_OUT)
    },
    ErrorCode.REBALANCE_IN_PROGRESS: CommitReaction(
        (Step.REJOIN,), Verdict.REBALANCING, reason="offset commit failed since group is already rebalancing"
    ),
    # Deviation from Java, on purpose: a stale answer never resets a newer generation.
    ErrorCode.UNKNOWN_MEMBER_ID: CommitReaction(
        (Step.RESET_MEMBER_ID,), Verdict.COMMIT_FAILED, stale_verdict=Verdict.REBALANCING_OR_FAILED
    ),
    ErrorCode.ILLEGAL_GENERATION: CommitReaction(
        (Step.RESET_GENERATION,), Verdict.COMMIT_FAILED, stale_verdict=Verdict.REBALANCING_OR_FAILED
    ),
    ErrorCode.FENCED_INSTANCE_ID: CommitReaction(
        (Step.FENCE,), Verdict.FENCED, stale_verdict=Verdict.REBALANCING_OR_FAILED
    ),
}
OFFSET_COMMIT_OTHERWISE = CommitReaction((), Verdict.BROKER_ERROR)


def commit_reaction(code: int) -> CommitReaction:
    return OFFSET_COMMIT.get(code, OFFSET_COMMIT_OTHERWISE)


# -- the consumer protocol (KIP-848): ConsumerGroupHeartbeat and commits carrying the member epoch ---------

_LOST = Reaction((Step.LOSE_AND_REJOIN,), stale=())
"""Only for the epoch and member id the heartbeat was sent with; an answer about an older epoch is moot."""

CONSUMER_GROUP_HEARTBEAT = ApiRules(
    api="ConsumerGroupHeartbeat",
    identity="member epoch",
    note_stale=True,
    reactions={
        ErrorCode.NONE: Reaction((Step.HEARTBEAT_OK,)),
        **{
            code: Reaction((Step.COORDINATOR_LOST, Step.FULL_HEARTBEAT, Step.HEARTBEAT_BACKOFF))
            for code in _COORDINATOR_ERRORS
        },
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: Reaction((Step.FULL_HEARTBEAT, Step.HEARTBEAT_BACKOFF)),
        ErrorCode.FENCED_MEMBER_EPOCH: _LOST,
        ErrorCode.UNKNOWN_MEMBER_ID: _LOST,
        ErrorCode.UNRELEASED_INSTANCE_ID: Reaction((Step.UNRELEASED,)),
        # Java: fatal; the broker gave our instance id to another member id.
        ErrorCode.FENCED_INSTANCE_ID: Reaction((Step.FENCE,), stale=()),
        **{
            code: _FAIL
            for code in (
                ErrorCode.GROUP_AUTHORIZATION_FAILED,
                ErrorCode.INVALID_REQUEST,
                ErrorCode.UNSUPPORTED_ASSIGNOR,
                ErrorCode.INVALID_REGULAR_EXPRESSION,
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                ErrorCode.UNSUPPORTED_VERSION,
                ErrorCode.GROUP_ID_NOT_FOUND,
            )
        },
    },
    otherwise=Reaction((Step.WARN, Step.FULL_HEARTBEAT, Step.HEARTBEAT_BACKOFF)),
    reason="encountered {error} from CONSUMER_GROUP_HEARTBEAT response",
)

CONSUMER_OFFSET_COMMIT: Mapping[int, CommitReaction] = {
    **{
        code: CommitReaction((Step.COORDINATOR_LOST,), Verdict.BROKER_ERROR, retry_hint=True)
        for code in (*_COORDINATOR_ERRORS, ErrorCode.REQUEST_TIMED_OUT)
    },
    ErrorCode.STALE_MEMBER_EPOCH: CommitReaction((Step.RESEND_AFTER_HEARTBEAT,), Verdict.RESENT),
    **{
        code: CommitReaction((Step.HEARTBEAT_NOW,), Verdict.COMMIT_FAILED)
        for code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH)
    },
    ErrorCode.FENCED_INSTANCE_ID: CommitReaction(
        (Step.FENCE,), Verdict.FENCED, stale_verdict=Verdict.COMMIT_FAILED
    ),
}
"""OffsetCommit v9+ from a consumer-protocol member (GenerationIdOrMemberEpoch = the member epoch)."""


def consumer_commit_reaction(code: int) -> CommitReaction:
    return CONSUMER_OFFSET_COMMIT.get(code, OFFSET_COMMIT_OTHERWISE)


def code_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error code {code}"


# ---------------------------------------------------------------------------------------- docs


R = TypeVar("R", Reaction, CommitReaction)


def _steps_text(steps: tuple[Step, ...]) -> str:
    return "; ".join(step.value for step in steps) if steps else "nothing"


def _codes_text(codes: list[int]) -> str:
    return ", ".join(code_name(code) for code in codes)


def _grouped(reactions: Mapping[int, R]) -> list[tuple[list[int], R]]:
    """Codes with the same reaction share a row, in the table's order."""
    rows: list[tuple[list[int], R]] = []
    for code, reaction in reactions.items():
        for codes, existing in rows:
            if existing == reaction:
                codes.append(code)
                break
        else:
            rows.append(([code], reaction))
    return rows


def _api_table(rules: ApiRules) -> str:
    who = rules.identity
    lines = [f"**{rules.api}**", "", f"| error | {who} unchanged | {who} changed since sending |"]
    lines.append("|---|---|---|")
    for codes, reaction in _grouped(rules.reactions):
        stale = "same" if reaction.stale is None else _steps_text(reaction.stale)
        lines.append(f"| {_codes_text(codes)} | {_steps_text(reaction.steps)} | {stale} |")
    stale = "same" if rules.otherwise.stale is None else _steps_text(rules.otherwise.stale)
    lines.append(f"| any other | {_steps_text(rules.otherwise.steps)} | {stale} |")
    return "\n".join(lines)


def _commit_table(
    title: str = "**OffsetCommit** (per partition; the first error decides)",
    table: Mapping[int, CommitReaction] = OFFSET_COMMIT,
    who: str = "generation",
) -> str:
    lines = [
        title,
        "",
        f"| error | {who} unchanged | caller gets | {who} changed since sending | caller gets |",
        "|---|---|---|---|---|",
    ]
    rows = [*_grouped(table), ([], OFFSET_COMMIT_OTHERWISE)]
    for codes, r in rows:
        stale_steps, stale_verdict = r.for_(False)
        lines.append(
            f"| {_codes_text(codes) if codes else 'any other'} | {_steps_text(r.steps)} | {r.verdict.value} "
            f"| {_steps_text(stale_steps)} | {stale_verdict.value} |"
        )
    return "\n".join(lines)


def markdown() -> str:
    """The error tables of docs/membership.md, generated from the data above."""
    return "\n\n".join(
        [_api_table(JOIN_GROUP), _api_table(SYNC_GROUP), _api_table(HEARTBEAT), _commit_table()]
    )


def consumer_markdown() -> str:
    """The consumer protocol's error tables of docs/membership.md, generated from the data above."""
    return "\n\n".join(
        [
            _api_table(CONSUMER_GROUP_HEARTBEAT),
            _commit_table(
                "**OffsetCommit from a consumer-protocol member** (per partition; the first error decides)",
                CONSUMER_OFFSET_COMMIT,
                "member epoch",
            ),
        ]
    )


BEGIN_MARKER = "<!-- error tables: generated by `python -m staticconsumer.membership --write`; begin -->"
END_MARKER = "<!-- error tables: end -->"
CONSUMER_BEGIN_MARKER = (
    "<!-- consumer protocol error tables: generated by `python -m staticconsumer.membership --write`; "
    "begin -->"
)
CONSUMER_END_MARKER = "<!-- consumer protocol error tables: end -->"


def _between(document: str, begin: str, end: str, text: str) -> str:
    start = document.index(begin) + len(begin)
    stop = document.index(end)
    return document[:start] + "\n\n" + text + "\n\n" + document[stop:]


def replace_tables(document: str) -> str:
    """``document`` with the text between the markers replaced by :func:`markdown` (and, where the page
    has its markers, by :func:`consumer_markdown`)."""
    document = _between(document, BEGIN_MARKER, END_MARKER, markdown())
    if CONSUMER_BEGIN_MARKER in document:
        document = _between(document, CONSUMER_BEGIN_MARKER, CONSUMER_END_MARKER, consumer_markdown())
    return document

"""Every name the telemetry emits: attribute keys, span names, event names, metric names.

Kept in one module so dashboards, alerts and docs/telemetry.md have a single source to agree with:
the tables at the end (``SPANS``, ``EVENTS``, ``ATTRIBUTES``, ``METRICS``) are what the docs page is
generated from (``python -m staticconsumer.telemetry.reference --write-doc docs/telemetry.md``).
Keys follow the OpenTelemetry messaging semantic conventions (``SEMCONV_VERSION``) where a convention
exists (``messaging.*``, ``server.*``, ``error.type``); everything Kafka's group protocol adds on top
lives under ``staticconsumer.``, so it can never collide with a future semantic-convention key.
None of these ever carries a setting's value other than ids and the bootstrap server's address: no
credentials, no TLS material.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

SCOPE: Final = "staticconsumer"
"""Instrumentation scope of the tracer and the meter."""

# -- OpenTelemetry semantic conventions (messaging, error) -----------------------------------------

MESSAGING_SYSTEM: Final = "messaging.system"
MESSAGING_SYSTEM_KAFKA: Final = "kafka"
MESSAGING_CONSUMER_GROUP_NAME: Final = "messaging.consumer.group.name"
MESSAGING_CLIENT_ID: Final = "messaging.client.id"
MESSAGING_OPERATION_NAME: Final = "messaging.operation.name"
MESSAGING_OPERATION_TYPE: Final = "messaging.operation.type"
OPERATION_COMMIT: Final = "commit"
OPERATION_TYPE_SETTLE: Final = "settle"
"""Committing offsets is the convention's "settle" operation type."""
ERROR_TYPE: Final = "error.type"
"""Kafka's error name (``FENCED_INSTANCE_ID``) for broker answers, else the exception's qualified type."""

# -- group membership (ours) ------------------------------------------------------------------------

GROUP_INSTANCE_ID: Final = "staticconsumer.group.instance_id"
MEMBER_ID: Final = "staticconsumer.group.member_id"
GENERATION: Final = "staticconsumer.group.generation"
PROTOCOL_NAME: Final = "staticconsumer.group.protocol"
"""The assignor the coordinator chose (``range``, ``cooperative-sticky``, ...)."""
KAFKA_ERROR_CODE: Final = "staticconsumer.kafka.error_code"
"""The numeric code of a non-NONE answer, also when it is a normal step (KIP-394's MEMBER_ID_REQUIRED)."""
REQUEST_OUTCOME: Final = "staticconsumer.request.outcome"
"""``abandoned`` on a JoinGroup/SyncGroup/FindCoordinator span whose answer came after the rebalance ended."""

REBALANCE_KIND: Final = "staticconsumer.rebalance.kind"
REBALANCE_OUTCOME: Final = "staticconsumer.rebalance.outcome"
REBALANCE_REASON: Final = "staticconsumer.rebalance.reason"
REBALANCE_PROTOCOL: Final = "staticconsumer.rebalance.protocol"
"""How the member moves partitions under the classic protocol: ``eager`` or ``cooperative`` (KIP-429)."""
GENERATION_BEFORE: Final = "staticconsumer.rebalance.generation.before"
GENERATION_AFTER: Final = "staticconsumer.rebalance.generation.after"
LEADER: Final = "staticconsumer.rebalance.leader"
LEADERSHIP_GUESSED: Final = "staticconsumer.rebalance.leadership_guessed"
ASSIGNMENT_SKIPPED: Final = "staticconsumer.rebalance.assignment_skipped"
JOIN_ATTEMPTS: Final = "staticconsumer.rebalance.join_attempts"
PARTITIONS_ASSIGNED: Final = "staticconsumer.rebalance.partitions.assigned"
PARTITIONS_REVOKED: Final = "staticconsumer.rebalance.partitions.revoked"
PARTITIONS_LOST: Final = "staticconsumer.rebalance.partitions.lost"

RELEASE_REASON: Final = "staticconsumer.partitions.reason"
"""Why partitions were revoked or lost: rebalance, stop, membership lost, poll timeout, fenced, fatal."""
CALLBACK: Final = "staticconsumer.callback"
"""Which rebalance listener callback ran: ``assigned``, ``revoked`` or ``lost``."""

COMMIT_KIND: Final = "staticconsumer.commit.kind"
"""``application`` (commit() or auto-commit) or ``release`` (after a revoke, before a rejoin or stop)."""
COMMIT_PARTITIONS: Final = "staticconsumer.commit.partitions"

# Values of REBALANCE_KIND: see docs/telemetry.md for why a first join is not counted as a rebalance.
KIND_JOIN: Final = "join"
"""The first join of this consumer: it held no generation, so whether the group rebalanced is unknown."""
KIND_REBALANCE: Final = "rebalance"
"""The member held a generation and ended in a different one: the group rebalanced."""
KIND_REJOIN: Final = "rejoin"
"""The member rejoined and got its old generation back (a static member replacing itself): no rebalance."""

OUTCOME_STABLE: Final = "stable"
OUTCOME_FAILED: Final = "failed"
OUTCOME_STOPPED: Final = "stopped"
OUTCOME_ABANDONED: Final = "abandoned"

COMMIT_APPLICATION: Final = "application"
COMMIT_RELEASE: Final = "release"

# -- span and event names ---------------------------------------------------------------------------
# Spans are named ``{operation} {destination}`` as the messaging conventions name them: the group for
# membership spans (what the coordinator's requests are about), the topic for commits and records.

OPERATION_JOIN_GROUP: Final = "JoinGroup"
OPERATION_SYNC_GROUP: Final = "SyncGroup"
OPERATION_FIND_COORDINATOR: Final = "FindCoordinator"
OPERATION_HEARTBEAT: Final = "Heartbeat"
OPERATION_CONSUMER_GROUP_HEARTBEAT: Final = "ConsumerGroupHeartbeat"
"""The group requests' ``messaging.operation.name``: Kafka's API name, as the Kafka conventions do for
requests that have no convention of their own."""
FENCED: Final = "fenced"

SPAN_JOIN: Final = f"{KIND_JOIN} {{group}}"
SPAN_REBALANCE: Final = f"{KIND_REBALANCE} {{group}}"
SPAN_REJOIN: Final = f"{KIND_REJOIN} {{group}}"
SPAN_JOIN_GROUP: Final = f"{OPERATION_JOIN_GROUP} {{group}}"
SPAN_SYNC_GROUP: Final = f"{OPERATION_SYNC_GROUP} {{group}}"
SPAN_FIND_COORDINATOR: Final = f"{OPERATION_FIND_COORDINATOR} {{group}}"
SPAN_CONSUMER_GROUP_HEARTBEAT: Final = f"{OPERATION_CONSUMER_GROUP_HEARTBEAT} {{group}}"
"""The consumer protocol's (KIP-848) join, and the release of an earlier holder's place, in a (re)join."""
SPAN_HEARTBEAT: Final = f"{OPERATION_HEARTBEAT} {{group}}"
"""Only failed heartbeats get a span: one every few seconds for a healthy member would be noise."""
SPAN_COMMIT: Final = f"{OPERATION_COMMIT} {{topic}}"
"""``commit`` alone when the offsets are of several topics."""
SPAN_FENCED: Final = f"{FENCED} {{group}}"
"""Fallback span for a fencing that no request span can carry (not expected; kept so it is never lost)."""

EVENT_HEARTBEAT_FAILED: Final = "staticconsumer.heartbeat.failed"
EVENT_FENCED: Final = "staticconsumer.fenced"

SPAN_TOPICS_MISSING: Final = "missing topics"
"""One span each time the set of subscribed topics that do not exist changes (telemetry/topics.py)."""
TOPICS_MISSING: Final = "staticconsumer.topics.missing"
"""Attribute of that span: every subscribed topic missing after the change (empty: all exist now)."""
TOPICS: Final = "staticconsumer.topics"
"""Attribute of its events: the topics that went missing, or that appeared."""
EVENT_TOPICS_MISSING: Final = "staticconsumer.topics.not_found"
EVENT_TOPICS_APPEARED: Final = "staticconsumer.topics.appeared"

# -- metric names -----------------------------------------------------------------------------------

METRIC_REBALANCES: Final = "staticconsumer.rebalances"
METRIC_REBALANCE_FAILURES: Final = "staticconsumer.rebalance.failures"
METRIC_REBALANCE_DURATION: Final = "staticconsumer.rebalance.duration"
METRIC_TIME_SINCE_REBALANCE: Final = "staticconsumer.rebalance.time_since_last"
METRIC_TIME_SINCE_HEARTBEAT: Final = "staticconsumer.heartbeat.time_since_last"
METRIC_HEARTBEAT_FAILURES: Final = "staticconsumer.heartbeat.failures"
METRIC_PARTITIONS_ASSIGNED: Final = "staticconsumer.partitions.assigned"
METRIC_PARTITIONS_REVOKED: Final = "staticconsumer.partitions.revoked"
METRIC_PARTITIONS_LOST: Final = "staticconsumer.partitions.lost"
METRIC_CALLBACK_DURATION: Final = "staticconsumer.callback.duration"
METRIC_FENCINGS: Final = "staticconsumer.fencings"
METRIC_COMMIT_DURATION: Final = "staticconsumer.commit.duration"

# -- records: the messaging conventions for Kafka consumers -----------------------------------------

SEMCONV_VERSION: Final = "1.44.0"
"""The OpenTelemetry semantic conventions the record spans and metrics follow (messaging: Development)."""

MESSAGING_DESTINATION_NAME: Final = "messaging.destination.name"
MESSAGING_DESTINATION_PARTITION_ID: Final = "messaging.destination.partition.id"
"""The partition number as a string, as the conventions define it."""
MESSAGING_KAFKA_OFFSET: Final = "messaging.kafka.offset"
MESSAGING_KAFKA_MESSAGE_KEY: Final = "messaging.kafka.message.key"
"""Set only when the key has a canonical string form (str, UTF-8 bytes, int) that is printable and short."""
MESSAGING_KAFKA_MESSAGE_TOMBSTONE: Final = "messaging.kafka.message.tombstone"
"""Set (to true) only for a record without a value; absent means false, as the conventions say."""
MESSAGING_BATCH_MESSAGE_COUNT: Final = "messaging.batch.message_count"
SERVER_ADDRESS: Final = "server.address"
SERVER_PORT: Final = "server.port"

OPERATION_POLL: Final = "poll"
"""``getmany``: the Kafka conventions' name for a pull (their example names the span ``poll {topic}``)."""
OPERATION_PROCESS: Final = "process"
OPERATION_TYPE_RECEIVE: Final = "receive"
OPERATION_TYPE_PROCESS: Final = "process"

METRIC_CONSUMED_MESSAGES: Final = "messaging.client.consumed.messages"
METRIC_PROCESS_DURATION: Final = "messaging.process.duration"
METRIC_OPERATION_DURATION: Final = "messaging.client.operation.duration"
METRIC_CONSUMER_LAG: Final = "staticconsumer.consumer.lag"
"""No convention defines lag yet, so it lives under ``staticconsumer.`` (Java: ``records-lag``)."""

SPAN_POLL: Final = f"{OPERATION_POLL} {{topic}}"
SPAN_PROCESS: Final = f"{OPERATION_PROCESS} {{topic}}"


def span_name(operation: str, destination: str | None) -> str:
    """``{operation} {destination}`` as the conventions name messaging spans; the operation alone when
    the operation has no single destination (a poll that returned records of several topics)."""
    return f"{operation} {destination}" if destination else operation


# -- the reference tables docs/telemetry.md is generated from ---------------------------------------


@dataclass(frozen=True, slots=True)
class SpanDoc:
    name: str
    kind: str
    extent: str
    """From what to what the span lasts."""
    parent: str


@dataclass(frozen=True, slots=True)
class EventDoc:
    name: str
    on: str
    attributes: str


@dataclass(frozen=True, slots=True)
class AttributeDoc:
    key: str
    """The key, or several keys of one family written ``a`` / ``b``; each is a constant above."""
    on: str
    value: str


@dataclass(frozen=True, slots=True)
class MetricDoc:
    name: str
    instrument: str
    unit: str
    java: str
    """The Java client's metric it corresponds to, if any."""
    attributes: str
    """Attributes beyond the identity ones every point carries."""


def _c(*names: str) -> str:
    """Names as inline code, joined the way the tables write families of keys."""
    return " / ".join(f"`{n}`" for n in names)


def _each(*names: str) -> str:
    """Names as inline code, listed."""
    return ", ".join(f"`{n}`" for n in names)


SPANS: Final[tuple[SpanDoc, ...]] = (
    SpanDoc(
        _c(SPAN_JOIN, SPAN_REBALANCE, SPAN_REJOIN),
        "INTERNAL",
        "the first sign of the (re)join (the revoke callback of an eager rebalance, the lost partitions of "
        "a member dropped by the coordinator, else the first JoinGroup) → the SyncGroup that makes the "
        "member STABLE, or the fatal error, or the stop",
        "none (a root)",
    ),
    SpanDoc(
        _c(SPAN_FIND_COORDINATOR), "CLIENT", "request → answer, when it is part of a (re)join", "the (re)join"
    ),
    SpanDoc(
        _c(SPAN_JOIN_GROUP),
        "CLIENT",
        "request → answer, one per attempt (KIP-394's MEMBER_ID_REQUIRED makes two)",
        "the (re)join",
    ),
    SpanDoc(_c(SPAN_SYNC_GROUP), "CLIENT", "request → answer", "the (re)join"),
    SpanDoc(
        _c(SPAN_CONSUMER_GROUP_HEARTBEAT),
        "CLIENT",
        "request → answer, for the consumer protocol's joins at epoch 0 and releases of an earlier "
        "holder's place (epoch -2); its other heartbeats are `Heartbeat` spans when they fail",
        "the (re)join",
    ),
    SpanDoc(
        _c(SPAN_COMMIT),
        "CLIENT",
        "`commit()` (or auto-commit) → its verdict, also when refused locally; a release commit (after the "
        "revoke callback) → its answer. `commit` alone when the offsets are of several topics",
        "the span current where `commit()` was awaited, if any; the rebalance for a release commit during "
        "one; else none (auto-commit)",
    ),
    SpanDoc(
        _c(SPAN_HEARTBEAT),
        "CLIENT",
        "request → answer, **only for failed heartbeats** (a healthy member would send one every few "
        "seconds)",
        "none",
    ),
    SpanDoc(
        _c(SPAN_FENCED),
        "INTERNAL",
        "a fencing no request span could carry (not expected; kept so a fencing is never lost)",
        "none",
    ),
    SpanDoc(
        _c(SPAN_TOPICS_MISSING),
        "INTERNAL",
        "zero-length, each time the set of subscribed topics that do not exist changes (ERROR status while "
        "any is missing)",
        "none",
    ),
    SpanDoc(
        _c(SPAN_POLL),
        "CLIENT",
        "`getmany()` called → it returned records (a poll that returns nothing records no span); links to "
        "the producer context of each record (the first 128, the SDK's default link limit)",
        "the span current where `getmany()` was awaited, if any",
    ),
    SpanDoc(
        _c(SPAN_PROCESS),
        "CONSUMER",
        "`getone()` / `async for` handed the record over → the next record is requested, the loop is left, "
        "or the consumer stops; or the `processing(record)` block",
        "the record's producer context when no span is current, else the current span (see *Parent or link*)",
    ),
)

EVENTS: Final[tuple[EventDoc, ...]] = (
    EventDoc(
        _c(EVENT_FENCED),
        "the span of the request that was answered FENCED_INSTANCE_ID (`JoinGroup`, `SyncGroup`, "
        "`Heartbeat` or `commit`), else a `fenced` span",
        f"`{ERROR_TYPE}=FENCED_INSTANCE_ID` and the identity attributes",
    ),
    EventDoc(_c(EVENT_HEARTBEAT_FAILED), "the failed `Heartbeat` span", _c(ERROR_TYPE)),
    EventDoc(_c(EVENT_TOPICS_MISSING), "`missing topics`: subscribed topics went missing", _c(TOPICS)),
    EventDoc(_c(EVENT_TOPICS_APPEARED), "`missing topics`: missing topics exist now", _c(TOPICS)),
    EventDoc(
        "`exception`",
        "a `process` span whose record's handling raised",
        "`exception.type`, `exception.message`, `exception.stacktrace` (the OpenTelemetry API's "
        "`record_exception`)",
    ),
)

_ALL = "all spans, all metrics"

ATTRIBUTES: Final[tuple[AttributeDoc, ...]] = (
    AttributeDoc(_c(MESSAGING_SYSTEM), _ALL, f"`{MESSAGING_SYSTEM_KAFKA}`"),
    AttributeDoc(_c(MESSAGING_CONSUMER_GROUP_NAME), _ALL, "the group id"),
    AttributeDoc(
        _c(MESSAGING_CLIENT_ID),
        _ALL,
        "`client.id` as sent (the Java default `consumer-<group>-<instance>` when unset)",
    ),
    AttributeDoc(_c(GROUP_INSTANCE_ID), f"{_ALL} (static members)", "`group.instance.id`"),
    AttributeDoc(
        _c(MEMBER_ID),
        "membership spans",
        "the member id (after the join, on the (re)join; as sent, on requests)",
    ),
    AttributeDoc(
        _c(GENERATION),
        "`JoinGroup` (answered), `SyncGroup`, `commit`",
        "the generation of the request or answer",
    ),
    AttributeDoc(_c(PROTOCOL_NAME), "(re)join, `JoinGroup`", "the assignor the coordinator chose"),
    AttributeDoc(
        _c(REBALANCE_KIND),
        "(re)join; `rebalance.duration`, `rebalance.failures`",
        f"`{KIND_JOIN}`, `{KIND_REBALANCE}`, `{KIND_REJOIN}`",
    ),
    AttributeDoc(
        _c(REBALANCE_OUTCOME), "(re)join", f"`{OUTCOME_STABLE}`, `{OUTCOME_FAILED}`, `{OUTCOME_STOPPED}`"
    ),
    AttributeDoc(
        _c(REBALANCE_REASON),
        "(re)join, `JoinGroup`",
        "the JoinGroup reason (as sent to the broker, 255 chars at most), e.g. `group is already "
        "rebalancing`; absent on a first join",
    ),
    AttributeDoc(
        _c(REBALANCE_PROTOCOL),
        "(re)join",
        "how the member moves partitions: `eager` (everything revoked before it rejoins) or "
        "`cooperative` (KIP-429: only what moves is revoked, after SyncGroup)",
    ),
    AttributeDoc(
        _c(GENERATION_BEFORE), "(re)join", "the generation the member last was STABLE in; -1 for a first join"
    ),
    AttributeDoc(_c(GENERATION_AFTER), "(re)join", "the generation it is STABLE in now"),
    AttributeDoc(_c(LEADER), "(re)join, `JoinGroup`", "whether this member leads the generation"),
    AttributeDoc(
        _c(LEADERSHIP_GUESSED),
        "(re)join",
        "a below-v9 broker named our predecessor as leader (KAFKA-13435)",
    ),
    AttributeDoc(
        _c(ASSIGNMENT_SKIPPED), "(re)join, `JoinGroup`", "KIP-814: the leader kept the existing assignment"
    ),
    AttributeDoc(_c(JOIN_ATTEMPTS), "(re)join", "JoinGroups sent"),
    AttributeDoc(
        f"`{PARTITIONS_ASSIGNED}` / `.{PARTITIONS_REVOKED.rsplit('.', 1)[1]}` / "
        f"`.{PARTITIONS_LOST.rsplit('.', 1)[1]}`",
        "(re)join",
        "partition counts",
    ),
    AttributeDoc(
        _c(KAFKA_ERROR_CODE),
        "request spans",
        "the numeric code of a non-NONE answer (also MEMBER_ID_REQUIRED, which is not a failure)",
    ),
    AttributeDoc(
        _c(REQUEST_OUTCOME),
        "request spans, `commit`",
        f"`{OUTCOME_ABANDONED}` when the (re)join ended (fatal error, stop) before the answer; on a release "
        "`commit`, when its rebalance ended first (the answer still counts in "
        f"`{METRIC_COMMIT_DURATION}`)",
    ),
    AttributeDoc(
        _c(MESSAGING_OPERATION_NAME, MESSAGING_OPERATION_TYPE),
        "`commit`, `poll`, `process`; the name only on the group requests and the `messaging.*` metrics",
        f"`{OPERATION_COMMIT}` / `{OPERATION_TYPE_SETTLE}`, `{OPERATION_POLL}` / `{OPERATION_TYPE_RECEIVE}`, "
        f"`{OPERATION_PROCESS}` / `{OPERATION_TYPE_PROCESS}`; the API name on "
        f"`{OPERATION_FIND_COORDINATOR}`, `{OPERATION_JOIN_GROUP}`, `{OPERATION_SYNC_GROUP}`, "
        f"`{OPERATION_HEARTBEAT}`",
    ),
    AttributeDoc(
        _c(MESSAGING_DESTINATION_NAME),
        "`process`; `poll`, `commit` and their `operation.duration` when all records or offsets are of one "
        "topic (else on each link of a poll); `consumed.messages`, `process.duration`, `consumer.lag`",
        "the topic",
    ),
    AttributeDoc(
        _c(MESSAGING_DESTINATION_PARTITION_ID),
        "`process`; `poll` and `commit` when all records or offsets are of one partition (else on each link "
        "of a poll); `consumed.messages`, `process.duration`, `consumer.lag`",
        'the partition number, as a string (`"3"`)',
    ),
    AttributeDoc(_c(MESSAGING_KAFKA_OFFSET), "`process`; each link of `poll`", "the record's offset"),
    AttributeDoc(
        _c(MESSAGING_KAFKA_MESSAGE_KEY),
        "`process`",
        "the record's key when it has a canonical, printable string form (a str, UTF-8 bytes or an int) "
        "of at most 64 characters (`staticconsumer.telemetry.key.max.length`, "
        "`KAFKA_STATICCONSUMER_TELEMETRY_KEY_MAX_LENGTH`; 0 never records keys); else absent",
    ),
    AttributeDoc(
        _c(MESSAGING_KAFKA_MESSAGE_TOMBSTONE), "`process`", "`true` for a record without a value; else absent"
    ),
    AttributeDoc(_c(MESSAGING_BATCH_MESSAGE_COUNT), "`poll`", "records the poll returned"),
    AttributeDoc(
        _c(SERVER_ADDRESS, SERVER_PORT),
        f"`poll`, `{OPERATION_JOIN_GROUP}`, `{OPERATION_SYNC_GROUP}`, `{OPERATION_HEARTBEAT}`, "
        "`commit` (when sent); `consumed.messages` of a poll, `operation.duration`",
        "a poll: the first bootstrap server, as configured (no DNS lookup); the group requests and commits: "
        "the coordinator, as FindCoordinator answered (FindCoordinator itself goes to whichever broker the "
        "client picks: none recorded)",
    ),
    AttributeDoc(
        _c(COMMIT_KIND), "`commit`; `commit.duration`", f"`{COMMIT_APPLICATION}` or `{COMMIT_RELEASE}`"
    ),
    AttributeDoc(_c(COMMIT_PARTITIONS), "`commit`", "partitions in the commit"),
    AttributeDoc(
        _c(RELEASE_REASON),
        "`partitions.revoked`, `partitions.lost`",
        "`rebalance`, `stop`, `membership lost`, `poll timeout`, `fenced`, `fatal error`",
    ),
    AttributeDoc(_c(CALLBACK), "`callback.duration`", "`assigned`, `revoked`, `lost`"),
    AttributeDoc(
        _c(TOPICS_MISSING), "`missing topics`", "every subscribed topic missing after the change (or none)"
    ),
    AttributeDoc(_c(TOPICS), "the `missing topics` events", "the topics that went missing, or appeared"),
    AttributeDoc(
        _c(ERROR_TYPE),
        "failed spans, events, failure metrics, `process.duration` of a failed record",
        "Kafka's error name for broker answers (`FENCED_INSTANCE_ID`, `REBALANCE_IN_PROGRESS`; "
        "`REQUEST_TIMED_OUT` / `NETWORK_EXCEPTION` for requests without an answer), else the exception's "
        "qualified class (`staticconsumer.membership.commit_errors.CommitFailedError`, `builtins.KeyError` "
        "raised by a handler)",
    ),
)

METRICS: Final[tuple[MetricDoc, ...]] = (
    MetricDoc(
        _c(METRIC_REBALANCES),
        "counter",
        "`{rebalance}`",
        "`rebalance-total` (but first joins excluded, see above)",
        "",
    ),
    MetricDoc(
        _c(METRIC_REBALANCE_FAILURES),
        "counter",
        "`{rebalance}`",
        "`failed-rebalance-total` (per (re)join that ended in a fatal error, not per failed attempt)",
        _each(REBALANCE_KIND, ERROR_TYPE),
    ),
    MetricDoc(
        _c(METRIC_REBALANCE_DURATION),
        "histogram",
        "`s`",
        "`rebalance-latency-avg/max/total`",
        _c(REBALANCE_KIND),
    ),
    MetricDoc(
        _c(METRIC_TIME_SINCE_REBALANCE),
        "gauge",
        "`s`",
        "`last-rebalance-seconds-ago` (absent before the first rebalance)",
        "",
    ),
    MetricDoc(
        _c(METRIC_TIME_SINCE_HEARTBEAT),
        "gauge",
        "`s`",
        "`last-heartbeat-seconds-ago` (since the last heartbeat the coordinator **acknowledged**, not sent: "
        "a member whose heartbeats fail shows it)",
        "",
    ),
    MetricDoc(_c(METRIC_HEARTBEAT_FAILURES), "counter", "`{heartbeat}`", "", _c(ERROR_TYPE)),
    MetricDoc(_c(METRIC_PARTITIONS_ASSIGNED), "counter", "`{partition}`", "", ""),
    MetricDoc(_c(METRIC_PARTITIONS_REVOKED), "counter", "`{partition}`", "", _c(RELEASE_REASON)),
    MetricDoc(_c(METRIC_PARTITIONS_LOST), "counter", "`{partition}`", "", _c(RELEASE_REASON)),
    MetricDoc(
        _c(METRIC_CALLBACK_DURATION),
        "histogram",
        "`s`",
        "`partition-assigned/revoked/lost-latency`",
        _c(CALLBACK),
    ),
    MetricDoc(_c(METRIC_FENCINGS), "counter", "`{fencing}`", "", ""),
    MetricDoc(
        _c(METRIC_COMMIT_DURATION),
        "histogram",
        "`s`",
        "`commit-latency-avg/max`",
        _each(COMMIT_KIND, ERROR_TYPE),
    ),
    MetricDoc(
        _c(METRIC_CONSUMED_MESSAGES),
        "counter (observable: a monotonic sum, as the conventions' counter, for an integer addition per "
        "record)",
        "`{message}`",
        "`records-consumed-total`",
        _each(MESSAGING_OPERATION_NAME)
        + f" (`{OPERATION_POLL}` for `getmany`, `{OPERATION_PROCESS}` for `getone` / `async for`), "
        + _each(MESSAGING_DESTINATION_NAME, MESSAGING_DESTINATION_PARTITION_ID)
        + "; "
        + _each(SERVER_ADDRESS, SERVER_PORT)
        + " for a poll",
    ),
    MetricDoc(
        _c(METRIC_PROCESS_DURATION),
        "histogram",
        "`s`",
        "",
        _each(MESSAGING_OPERATION_NAME, MESSAGING_DESTINATION_NAME, MESSAGING_DESTINATION_PARTITION_ID)
        + f" (`{OPERATION_PROCESS}`), "
        + _each(ERROR_TYPE)
        + " when the handling raised; equal to the `process` span's duration",
    ),
    MetricDoc(
        _c(METRIC_OPERATION_DURATION),
        "histogram",
        "`s`",
        "",
        _each(MESSAGING_OPERATION_NAME)
        + f" (`{OPERATION_POLL}`, `{OPERATION_COMMIT}`), "
        + _each(MESSAGING_DESTINATION_NAME)
        + " when all records or offsets are of one topic, "
        + _each(SERVER_ADDRESS, SERVER_PORT)
        + ", "
        + _each(ERROR_TYPE)
        + " for a failed commit; equal to the `poll` span's duration (polls that return records) and the "
        "`commit` span's",
    ),
    MetricDoc(
        _c(METRIC_CONSUMER_LAG),
        "gauge",
        "`{message}`",
        "`records-lag` (per partition)",
        _each(MESSAGING_DESTINATION_NAME, MESSAGING_DESTINATION_PARTITION_ID)
        + ": the high watermark (the last stable offset with `read_committed`) minus the position the "
        "application has consumed to; absent until both are known",
    ),
)

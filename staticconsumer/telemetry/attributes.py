"""Every name the telemetry emits: attribute keys, span names, event names, metric names.

Kept in one module so dashboards, alerts and docs/telemetry.md have a single source to agree with.
Keys follow the OpenTelemetry messaging semantic conventions where a convention exists
(``messaging.*``, ``error.type``); everything Kafka's group protocol adds on top lives under
``staticconsumer.``, so it can never collide with a future semantic-convention key.
None of these ever carries a setting's value other than ids: no credentials, no TLS material.
"""

from __future__ import annotations

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

SPAN_JOIN_GROUP: Final = "JoinGroup"
SPAN_SYNC_GROUP: Final = "SyncGroup"
SPAN_FIND_COORDINATOR: Final = "FindCoordinator"
SPAN_HEARTBEAT: Final = "Heartbeat"
"""Only failed heartbeats get a span: one every few seconds for a healthy member would be noise."""
SPAN_COMMIT: Final = OPERATION_COMMIT
SPAN_FENCED: Final = "fenced"
"""Fallback span for a fencing that no request span can carry (not expected; kept so it is never lost)."""

EVENT_HEARTBEAT_FAILED: Final = "staticconsumer.heartbeat.failed"
EVENT_FENCED: Final = "staticconsumer.fenced"

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

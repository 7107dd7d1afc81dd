"""Every consumer setting in one typed, frozen object, read from the environment and checked up front.

Deployments (Kubernetes StatefulSets above all) configure consumers through environment variables, and a
typo or a bad number there otherwise surfaces minutes later as a fencing storm or a broker rejection.
So :class:`Settings` validates everything before any connection and reports *every* problem at once in a
:class:`~staticconsumer.errors.SettingsError`, naming the variable, its value (secrets masked) and what
is allowed.

Each field has one Kafka property name in :data:`SETTINGS`; the environment variable is derived from it
(prefix + property upper-cased, dots and dashes to underscores: ``group.instance.id`` ->
``KAFKA_GROUP_INSTANCE_ID``), and the table in ``docs/configuration.md`` is generated from the same data
(``python -m staticconsumer.settings --markdown``), so docs and code cannot drift apart unnoticed.
"""

from __future__ import annotations

import os
import re
import ssl
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

import msgspec

from assignors import BUILT_IN as BUILT_IN_ASSIGNORS
from assignors import names as registered_assignors
from staticconsumer.connection.reconnect import (
    DEFAULT_RECONNECT_BACKOFF_MAX_MS,
    DEFAULT_RECONNECT_BACKOFF_MS,
)
from staticconsumer.errors import (
    ConfigurationError,
    InvalidGroupInstanceIdError,
    SettingProblem,
    SettingsError,
)
from staticconsumer.membership.types import (
    DEFAULT_HEARTBEAT_INTERVAL_MS,
    DEFAULT_MAX_POLL_INTERVAL_MS,
    DEFAULT_REQUEST_TIMEOUT_MS,
    DEFAULT_RETRY_BACKOFF_MAX_MS,
    DEFAULT_RETRY_BACKOFF_MS,
    DEFAULT_SESSION_TIMEOUT_MS,
    MAX_GROUP_INSTANCE_ID_LENGTH,
    RebalanceProtocol,
    heartbeat_interval_problem,
    validate_group_instance_id,
)

if TYPE_CHECKING:
    import assignors as assignor_lib

DEFAULT_PREFIX: Final = "KAFKA_"

MIN_SESSION_TIMEOUT_MS: Final = 6_000
"""Brokers' default group.min.session.timeout.ms: a JoinGroup with less fails INVALID_SESSION_TIMEOUT."""

MAX_SESSION_TIMEOUT_MS: Final = 1_800_000
"""Brokers' default group.max.session.timeout.ms (30 minutes)."""

MAX_INT32: Final = 2_147_483_647
"""Kafka's numeric settings are Java ints; anything larger cannot be sent on the wire."""

DEFAULT_KAFKA_PORT: Final = 9092
"""The port of a bootstrap server given without one, as aiokafka and the Java client assume."""

DEFAULT_TELEMETRY_KEY_MAX_LENGTH: Final = 64
"""``RecordTracer``'s default (``telemetry.records.DEFAULT_KEY_MAX_LENGTH``), repeated here so reading
settings never imports OpenTelemetry; a unit test keeps the two equal."""

SecurityProtocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
SaslMechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI"]
AutoOffsetReset = Literal["earliest", "latest", "none"]
IsolationLevel = Literal["read_uncommitted", "read_committed"]
GroupProtocol = Literal["classic", "consumer"]

SECURITY_PROTOCOLS: Final = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS: Final = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI")
PASSWORD_MECHANISMS: Final = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
"""The SASL mechanisms that log in with sasl.username and sasl.password; OAUTHBEARER uses a token
provider object and GSSAPI a Kerberos ticket instead."""
AUTO_OFFSET_RESETS: Final = ("earliest", "latest", "none")
ISOLATION_LEVELS: Final = ("read_uncommitted", "read_committed")
GROUP_PROTOCOLS: Final = ("classic", "consumer")
"""group.protocol as Java names it: the classic JoinGroup/SyncGroup protocol, or KIP-848's (Kafka 4.0+)."""
REMOTE_ASSIGNORS: Final = ("uniform", "range")
"""The brokers' built-in server-side assignors (group.consumer.assignors; the first listed is the default)."""
CLASSIC_ONLY_SETTINGS: Final = ("assignors", "session_timeout_ms", "heartbeat_interval_ms")
"""Refused under group.protocol=consumer when set explicitly, as Java's ConsumerConfig refuses them: the
broker assigns partitions (group.remote.assignor picks how) and owns the session timeout and heartbeat
interval (group.consumer.session.timeout.ms, group.consumer.heartbeat.interval.ms)."""
CONSUMER_ONLY_SETTINGS: Final = ("group_remote_assignor",)
"""Refused under group.protocol=classic when set, as Java does: the classic protocol assigns on the client."""

OBJECT_FIELDS: Final = ("ssl_context", "sasl_oauth_token_provider")
"""Settings fields that hold Python objects, as aiokafka's constructor keywords of the same names: keyword
arguments only (no Kafka property, no environment variable, not in the docs table or startup log)."""
AIOKAFKA_SPELLINGS: Final[Mapping[str, str]] = {
    "sasl_plain_username": "sasl_username",
    "sasl_plain_password": "sasl_password",
}
"""aiokafka's keyword names for our settings: accepted as keyword arguments, so aiokafka code ports as is."""

_SASL_PROTOCOLS: Final = ("SASL_PLAINTEXT", "SASL_SSL")
_TLS_PROTOCOLS: Final = ("SSL", "SASL_SSL")

TYPO_SIMILARITY: Final = 0.81
"""How close an unknown variable must be to a known one to count as a typo rather than someone else's.

Chosen so ``KAFKA_SASL_USER`` or ``KAFKA_GROUP_INSTANCEID`` are caught while the variables Kubernetes
injects for a Service named ``kafka`` (``KAFKA_PORT``, ``KAFKA_SERVICE_HOST``...) and the broker image's
own (``KAFKA_HEAP_OPTS``, ``KAFKA_JMX_PORT``) are left alone.
"""

_SECRET_LOOKING = r"(?i)PASS|SECRET|TOKEN|CREDENTIAL|KEY"
"""Unknown variables whose names look like this have their values masked too: a typo of a secret is one."""

MASK: Final = "***"


class Secret:
    """A string that never shows itself: repr, str and f-strings print ``***``.

    The value comes out only through :meth:`reveal`, so leaking it takes a deliberate, greppable call.
    """

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The real value, for handing to the Kafka client and nothing else."""
        return self._value

    def __repr__(self) -> str:
        return MASK

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Secret):
            return NotImplemented
        import hmac  # not at import time: only secrets compared need it

        return hmac.compare_digest(self._value.encode(), other._value.encode())

    def __hash__(self) -> int:
        return hash((Secret, self._value))

    def __bool__(self) -> bool:
        return bool(self._value)


Kind = Literal["string", "optional_string", "int", "bool", "list", "choice", "secret"]


class SettingSpec(msgspec.Struct, frozen=True):
    """How one field is named in Kafka, parsed from text, documented and bounded."""

    field: str
    kafka_property: str
    kind: Kind
    description: str
    choices: tuple[str, ...] = ()
    minimum: int = 0
    maximum: int = MAX_INT32
    allowed_text: str = ""
    """Overrides the generic description of valid values where the generic one would mislead."""
    none_allowed: bool = False
    """An int setting that also takes None (``none`` in the environment): aiokafka's "no limit"."""

    def env_var(self, prefix: str = DEFAULT_PREFIX) -> str:
        """The environment variable: Kafka's convention of upper case with dots and dashes as underscores."""
        return prefix + self.kafka_property.upper().replace(".", "_").replace("-", "_")

    @property
    def secret(self) -> bool:
        return self.kind == "secret"

    def allowed(self) -> str:
        """What a valid value looks like, for error messages and the docs table."""
        if self.allowed_text:
            return self.allowed_text
        if self.kind == "choice":
            return "one of " + ", ".join(self.choices)
        if self.kind == "int":
            return f"an integer from {self.minimum} to {self.maximum}"
        if self.kind == "bool":
            return "true or false"
        if self.kind == "list":
            if self.choices:
                return "comma-separated, from " + ", ".join(self.choices)
            return "comma-separated host:port list"
        if self.kind == "secret":
            return "any string (kept secret)"
        if self.kind == "string":
            return "a non-empty string"
        return "any string; empty means unset"


SETTINGS: Final[tuple[SettingSpec, ...]] = (
    SettingSpec(
        "bootstrap_servers",
        "bootstrap.servers",
        "list",
        f"Brokers to fetch cluster metadata from. Required. A server without a port is on port "
        f"{DEFAULT_KAFKA_PORT}, as in aiokafka.",
        allowed_text="comma-separated host or host:port list ([v6 address]:port for IPv6)",
    ),
    SettingSpec(
        "group_id",
        "group.id",
        "string",
        "The consumer group. Required; group_id=None in code makes a consumer without a group.",
    ),
    SettingSpec(
        "group_instance_id",
        "group.instance.id",
        "optional_string",
        "Static member id; unset means dynamic membership. Must be unique in the group and stable across "
        "restarts: use the StatefulSet pod name.",
        allowed_text="1 to 249 of a-z A-Z 0-9 . _ -, not . or ..; unset for dynamic membership",
    ),
    SettingSpec(
        "client_id",
        "client.id",
        "optional_string",
        "Name in broker logs and quotas. Unset: `consumer-<group.id>-<group.instance.id>` "
        "(`consumer-<group.id>` for dynamic members), as the Java client does.",
    ),
    SettingSpec(
        "client_rack", "client.rack", "optional_string", "Rack of this consumer, for rack-aware assignment."
    ),
    SettingSpec(
        "session_timeout_ms",
        "session.timeout.ms",
        "int",
        "How long the broker waits without heartbeats before removing the member (and, for static members, "
        "how long a restart may take without a rebalance).",
        minimum=1,
        allowed_text=(
            "an integer within the brokers' group.min/max.session.timeout.ms "
            f"({MIN_SESSION_TIMEOUT_MS} to {MAX_SESSION_TIMEOUT_MS} by default), judged by the brokers "
            "at start() (InvalidSessionTimeoutError)"
        ),
    ),
    SettingSpec(
        "heartbeat_interval_ms",
        "heartbeat.interval.ms",
        "int",
        "Time between heartbeats. Must be below a third of session.timeout.ms.",
        minimum=1,
    ),
    SettingSpec(
        "max_poll_interval_ms",
        "max.poll.interval.ms",
        "int",
        "Longest allowed gap between polls; also the rebalance timeout sent in JoinGroup.",
        minimum=1,
    ),
    SettingSpec(
        "broker_min_session_timeout_ms",
        "group.min.session.timeout.ms",
        "int",
        "The brokers' setting of this name, only so that the error of a session.timeout.ms the brokers "
        "refuse can name their bounds: set it here if your cluster changed it (test brokers often lower it).",
        minimum=1,
    ),
    SettingSpec(
        "broker_max_session_timeout_ms",
        "group.max.session.timeout.ms",
        "int",
        "The brokers' setting of this name, as above.",
        minimum=1,
    ),
    SettingSpec(
        "assignors",
        "partition.assignment.strategy",
        "list",
        "Assignor protocol names in order of preference (protocol names, not Java class names). Any "
        "assignor registered with `assignors.register` before the settings are built is accepted. The "
        "default shares a protocol with groups formed by Java's defaults and by aiokafka's (roundrobin), "
        "see docs/migrating.md; aiokafka's `partition_assignment_strategy=` classes map to these names.",
        allowed_text=(
            "comma-separated names of registered assignors: "
            + ", ".join(BUILT_IN_ASSIGNORS)
            + ", or your own (assignors.register)"
        ),
    ),
    SettingSpec(
        "group_protocol",
        "group.protocol",
        "choice",
        "Which group protocol: `classic` (JoinGroup/SyncGroup, client-side assignors) or `consumer` "
        "(KIP-848, brokers 4.0+: the broker assigns and reconciles partitions incrementally). Under "
        "`consumer`, partition.assignment.strategy, session.timeout.ms and heartbeat.interval.ms must not "
        "be set; under `classic`, group.remote.assignor must not.",
        choices=GROUP_PROTOCOLS,
    ),
    SettingSpec(
        "group_remote_assignor",
        "group.remote.assignor",
        "optional_string",
        "Server-side assignor for group.protocol=consumer; unset: the brokers' default (the first of their "
        "group.consumer.assignors, `uniform` unless changed).",
        allowed_text="uniform or range; unset for the brokers' default",
    ),
    SettingSpec(
        "enable_auto_commit", "enable.auto.commit", "bool", "Commit consumed offsets in the background."
    ),
    SettingSpec(
        "auto_commit_interval_ms",
        "auto.commit.interval.ms",
        "int",
        "Time between background commits.",
        minimum=1,
    ),
    SettingSpec(
        "auto_offset_reset",
        "auto.offset.reset",
        "choice",
        "Where to start when the group has no committed offset (none: fail instead).",
        choices=AUTO_OFFSET_RESETS,
    ),
    SettingSpec(
        "isolation_level",
        "isolation.level",
        "choice",
        "read_committed hides records of aborted and open transactions.",
        choices=ISOLATION_LEVELS,
    ),
    SettingSpec("fetch_min_bytes", "fetch.min.bytes", "int", "Bytes a fetch waits for.", minimum=0),
    SettingSpec("fetch_max_bytes", "fetch.max.bytes", "int", "Upper bound of one fetch response.", minimum=0),
    SettingSpec(
        "max_partition_fetch_bytes",
        "max.partition.fetch.bytes",
        "int",
        "Upper bound of data per partition in one fetch.",
        minimum=0,
    ),
    SettingSpec(
        "receive_message_max_bytes",
        "receive.message.max.bytes",
        "int",
        "Largest response a broker may send: a larger frame is refused before it is read "
        "(ResponseTooLargeError) and its connection closed. 0: fetch connections take "
        "max(fetch.max.bytes, max.partition.fetch.bytes) + 1 MiB, all others 100 MiB. librdkafka's name.",
        allowed_text="0 (derived) or a byte count from max(fetch.max.bytes, max.partition.fetch.bytes) + 512 "
        "to 2147483647",
    ),
    SettingSpec(
        "fetch_max_wait_ms",
        "fetch.max.wait.ms",
        "int",
        "How long a fetch waits for fetch.min.bytes.",
        minimum=0,
    ),
    SettingSpec(
        "max_poll_records",
        "max.poll.records",
        "int",
        "Most records one `getmany` returns when it is not given `max_records`; none: no limit "
        "(aiokafka's default), everything fetched so far.",
        minimum=1,
        none_allowed=True,
        allowed_text="an integer from 1 to 2147483647, or none for no limit",
    ),
    SettingSpec(
        "check_crcs",
        "check.crcs",
        "bool",
        "Check the CRC32 of every fetched record batch (corruption on the wire or on disk raises); false "
        "saves that CPU time.",
    ),
    SettingSpec(
        "exclude_internal_topics",
        "exclude.internal.topics",
        "bool",
        "Whether a pattern subscription leaves out internal topics (`__consumer_offsets`, "
        "`__transaction_state` ...); false lets a pattern match them. Topics subscribed by name are "
        "always read. Classic protocol only: under group.protocol=consumer the brokers resolve the "
        "pattern.",
    ),
    SettingSpec(
        "connections_max_idle_ms",
        "connections.max.idle.ms",
        "int",
        "Close a broker connection idle this long (every client of the consumer); none: never.",
        minimum=1,
        none_allowed=True,
        allowed_text="an integer from 1 to 2147483647, or none to never close idle connections",
    ),
    SettingSpec(
        "retry_backoff_ms", "retry.backoff.ms", "int", "First wait before retrying a request.", minimum=0
    ),
    SettingSpec(
        "retry_backoff_max_ms",
        "retry.backoff.max.ms",
        "int",
        "Longest wait between retries as the backoff grows.",
        minimum=0,
    ),
    SettingSpec(
        "reconnect_backoff_ms",
        "reconnect.backoff.ms",
        "int",
        "First wait before connecting again to a broker after a failed attempt, per broker, doubling per "
        "consecutive failure, each wait +/-20% random so a fleet does not reconnect in step; 0: no wait.",
        minimum=0,
    ),
    SettingSpec(
        "reconnect_backoff_max_ms",
        "reconnect.backoff.max.ms",
        "int",
        "Longest wait between attempts to connect to a broker that keeps failing (before the +/-20%).",
        minimum=0,
    ),
    SettingSpec(
        "request_timeout_ms", "request.timeout.ms", "int", "How long to wait for a response.", minimum=1
    ),
    SettingSpec(
        "metadata_max_age_ms",
        "metadata.max.age.ms",
        "int",
        "Refresh cluster metadata at least this often, to notice new partitions.",
        minimum=0,
    ),
    SettingSpec(
        "fail_on_missing_topics",
        "staticconsumer.fail.on.missing.topics",
        "bool",
        "When a subscribed topic does not exist: true fails with `MissingTopicsError`; false waits for it, "
        "with a WARNING that repeats with backoff and `consumer.missing_topics` listing it.",
    ),
    SettingSpec(
        "telemetry_key_max_length",
        "staticconsumer.telemetry.key.max.length",
        "int",
        "Longest record key recorded on `process` spans (`messaging.kafka.message.key`); longer keys are "
        "left out. 0: keys are never recorded.",
        minimum=0,
    ),
    SettingSpec(
        "security_protocol",
        "security.protocol",
        "choice",
        "How to talk to brokers.",
        choices=SECURITY_PROTOCOLS,
    ),
    SettingSpec(
        "sasl_mechanism",
        "sasl.mechanism",
        "choice",
        "SASL mechanism, used with SASL_PLAINTEXT and SASL_SSL. OAUTHBEARER needs the keyword argument "
        "`sasl_oauth_token_provider`; GSSAPI needs the Python package `gssapi` and a Kerberos ticket.",
        choices=SASL_MECHANISMS,
    ),
    SettingSpec(
        "sasl_username",
        "sasl.username",
        "optional_string",
        "SASL user; required with SASL_PLAINTEXT and SASL_SSL for PLAIN and SCRAM. aiokafka's keyword "
        "`sasl_plain_username` is accepted too.",
    ),
    SettingSpec(
        "sasl_password",
        "sasl.password",
        "secret",
        "SASL password; required with SASL_PLAINTEXT and SASL_SSL for PLAIN and SCRAM. aiokafka's keyword "
        "`sasl_plain_password` is accepted too.",
    ),
    SettingSpec(
        "sasl_kerberos_service_name",
        "sasl.kerberos.service.name",
        "string",
        "Kerberos principal name the brokers run as (GSSAPI only).",
    ),
    SettingSpec(
        "sasl_kerberos_domain_name",
        "sasl.kerberos.domain.name",
        "optional_string",
        "Kerberos domain of the brokers' service principal; unset: each broker's host name (GSSAPI only; "
        "aiokafka's keyword, not a Java property).",
    ),
    SettingSpec(
        "ssl_ca_location",
        "ssl.ca.location",
        "optional_string",
        "PEM file of CAs that sign the brokers' certificates; unset uses the system CAs.",
        allowed_text="path of a readable PEM file",
    ),
    SettingSpec(
        "ssl_certificate_location",
        "ssl.certificate.location",
        "optional_string",
        "PEM client certificate for mutual TLS; needs ssl.key.location.",
        allowed_text="path of a readable PEM file",
    ),
    SettingSpec(
        "ssl_key_location",
        "ssl.key.location",
        "optional_string",
        "PEM private key of the client certificate; needs ssl.certificate.location.",
        allowed_text="path of a readable PEM file",
    ),
    SettingSpec(
        "ssl_key_password", "ssl.key.password", "secret", "Password of an encrypted ssl.key.location."
    ),
    SettingSpec(
        "event_log_path",
        "staticconsumer.event.log.path",
        "optional_string",
        "Write the membership event log (docs/event-log.md) as JSON lines to this file; `{group}`, "
        "`{instance}`, `{pid}` and `{session}` are filled in, so processes sharing a directory never "
        "share a file. Unset: no file log.",
        allowed_text="a file path, optionally with {group} {instance} {pid} {session}; empty means unset",
    ),
    SettingSpec(
        "event_log_max_bytes",
        "staticconsumer.event.log.max.bytes",
        "int",
        "Rotate the event log file when it would grow past this size.",
        minimum=1024,
    ),
    SettingSpec(
        "event_log_backups",
        "staticconsumer.event.log.backups",
        "int",
        "Rotated event log files kept (`path.1` is the newest); older ones are deleted.",
        minimum=1,
        maximum=1000,
    ),
    SettingSpec(
        "event_log_topic",
        "staticconsumer.event.log.topic",
        "optional_string",
        "Also send the event log to this Kafka topic (same cluster and credentials, keyed by group), "
        "asynchronously through a bounded buffer. Unset: no topic.",
    ),
    SettingSpec(
        "event_log_buffer_records",
        "staticconsumer.event.log.buffer.records",
        "int",
        "Records the event log topic buffers while the producer catches up; when full, new records are "
        "dropped and counted, so consumption never waits on the log.",
        minimum=1,
        maximum=10_000_000,
    ),
    SettingSpec(
        "event_log_drop_report_ms",
        "staticconsumer.event.log.drop.report.ms",
        "int",
        "At most this often, a `dropped` record with the running count of dropped records is logged "
        "(only when the count grew).",
        minimum=1,
    ),
)
"""The one table of Kafka property names. Field order here is the order of docs and error listings."""

SPEC_BY_FIELD: Final[Mapping[str, SettingSpec]] = {spec.field: spec for spec in SETTINGS}

RECORD_FIELDS: Final = ("explicit_fields",)
"""Settings fields that are not settings: a record of how the others were given (no row, no variable)."""

_TLS_FILE_FIELDS: Final = ("ssl_ca_location", "ssl_certificate_location", "ssl_key_location")


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    """Everything a consumer needs to know before connecting; invalid values never make an instance.

    Defaults are the Java client's, except ``bootstrap_servers`` and ``group_id`` which have none. Times
    are in milliseconds, like Kafka's settings, so values copy across from a Java configuration.
    """

    bootstrap_servers: tuple[str, ...] = ()
    group_id: str = ""
    group_instance_id: str | None = None
    client_id: str | None = None
    client_rack: str | None = None
    session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS
    heartbeat_interval_ms: int = DEFAULT_HEARTBEAT_INTERVAL_MS
    max_poll_interval_ms: int = DEFAULT_MAX_POLL_INTERVAL_MS
    broker_min_session_timeout_ms: int = MIN_SESSION_TIMEOUT_MS
    broker_max_session_timeout_ms: int = MAX_SESSION_TIMEOUT_MS
    assignors: tuple[str, ...] = ("range", "cooperative-sticky", "roundrobin")
    group_protocol: GroupProtocol = "classic"
    group_remote_assignor: str | None = None
    enable_auto_commit: bool = True
    auto_commit_interval_ms: int = 5_000
    auto_offset_reset: AutoOffsetReset = "latest"
    isolation_level: IsolationLevel = "read_uncommitted"
    fetch_min_bytes: int = 1
    fetch_max_bytes: int = 52_428_800
    max_partition_fetch_bytes: int = 1_048_576
    receive_message_max_bytes: int = 0
    fetch_max_wait_ms: int = 500
    max_poll_records: int | None = 500
    check_crcs: bool = True
    exclude_internal_topics: bool = True
    connections_max_idle_ms: int | None = 540_000
    retry_backoff_ms: int = DEFAULT_RETRY_BACKOFF_MS
    retry_backoff_max_ms: int = DEFAULT_RETRY_BACKOFF_MAX_MS
    reconnect_backoff_ms: int = DEFAULT_RECONNECT_BACKOFF_MS
    reconnect_backoff_max_ms: int = DEFAULT_RECONNECT_BACKOFF_MAX_MS
    request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS
    metadata_max_age_ms: int = 300_000
    fail_on_missing_topics: bool = False
    telemetry_key_max_length: int = DEFAULT_TELEMETRY_KEY_MAX_LENGTH
    security_protocol: SecurityProtocol = "PLAINTEXT"
    sasl_mechanism: SaslMechanism = "PLAIN"
    sasl_username: str | None = None
    sasl_password: Secret | None = None
    sasl_kerberos_service_name: str = "kafka"
    sasl_kerberos_domain_name: str | None = None
    ssl_ca_location: str | None = None
    ssl_certificate_location: str | None = None
    ssl_key_location: str | None = None
    ssl_key_password: Secret | None = None
    event_log_path: str | None = None
    event_log_max_bytes: int = 64 * 1024 * 1024
    event_log_backups: int = 5
    event_log_topic: str | None = None
    event_log_buffer_records: int = 10_000
    event_log_drop_report_ms: int = 60_000
    explicit_fields: frozenset[str] = frozenset()
    """The fields that were configured rather than defaulted (Java's ``originals()``): set by
    :meth:`from_env` from the variables and keyword arguments it was given. A field whose value differs
    from its default counts as configured in any case. Settings that belong to one group protocol are
    refused under the other when configured, even at their default value, as Java refuses them."""
    ssl_context: ssl.SSLContext | None = None
    """aiokafka's ``ssl_context``: a ready TLS context for SSL and SASL_SSL, instead of the ssl.* files."""
    sasl_oauth_token_provider: Any = None
    """aiokafka's ``sasl_oauth_token_provider`` (an ``aiokafka.abc.AbstractTokenProvider``), for
    OAUTHBEARER. Its ``token()`` is awaited on the membership thread's event loop as well as the
    application's, so it must not hold on to one loop's objects."""

    def __post_init__(self) -> None:
        values = {spec.field: getattr(self, spec.field) for spec in SETTINGS}
        labels = _Labels.for_fields(values)
        explicit = self.configured_fields()
        groupless = self.group_id == "" and "group_id" in self.explicit_fields
        problems = _check_fields(values, labels, groupless) + _check_combinations(
            values, labels, explicit, groupless
        )
        problems += _object_problems(values, {name: getattr(self, name) for name in OBJECT_FIELDS}, labels)
        unknown = sorted(self.explicit_fields - SPEC_BY_FIELD.keys())
        if unknown:
            problems.append(SettingProblem("explicit_fields", repr(unknown), "only names of Settings fields"))
        if problems:
            raise SettingsError(_sorted_by_field(problems, labels.names))
        servers = tuple(_with_default_port(server) for server in self.bootstrap_servers)
        if servers != self.bootstrap_servers:  # every reader of the settings sees host:port
            msgspec.structs.force_setattr(self, "bootstrap_servers", servers)

    def configured_fields(self) -> frozenset[str]:
        """Fields set explicitly (:attr:`explicit_fields`) or holding a value other than their default."""
        changed = {spec.field for spec in SETTINGS if getattr(self, spec.field) != DEFAULTS[spec.field]}
        return self.explicit_fields | changed

    @classmethod
    def from_env(
        cls,
        environ: Mapping[str, str] | None = None,
        prefix: str = DEFAULT_PREFIX,
        *,
        ignore: Collection[str] = (),
        **overrides: Any,
    ) -> Settings:
        """Read ``<prefix><PROPERTY>`` variables, let keyword arguments (field names) win, validate it all.

        ``ignore`` names variables under the prefix that belong to something else and merely look like a
        typo of ours. Raises :class:`SettingsError` listing every problem found.
        """
        return _from_env(os.environ if environ is None else environ, prefix, ignore, overrides)

    @classmethod
    def from_keywords(cls, **fields: Any) -> Settings:
        """Keyword arguments (field names) alone, validated; no environment is read.

        What ``StaticConsumer(...)`` uses: its errors name the keyword argument (``bootstrap_servers
        (keyword argument)``), never a ``KAFKA_*`` variable its caller did not set.
        """
        return _from_env({}, DEFAULT_PREFIX, (), fields, keywords_only=True)

    @property
    def groupless(self) -> bool:
        """Whether these are settings of a consumer without a group (``group_id=None``): it joins no
        group and commits nothing. Stored as an empty group_id configured explicitly."""
        return not self.group_id

    @property
    def is_static(self) -> bool:
        """Whether this consumer is a static member (has a group.instance.id)."""
        return self.group_instance_id is not None

    @property
    def effective_client_id(self) -> str:
        """client.id as sent: the configured one, else the Java client's default for this membership."""
        if self.client_id:
            return self.client_id
        if self.group_instance_id is not None:
            return f"consumer-{self.group_id}-{self.group_instance_id}"
        return f"consumer-{self.group_id}" if self.group_id else "consumer"

    def for_worker(self, index: int) -> Settings:
        """Settings for the ``index``-th of several consumers in one process, each with its own instance id.

        Two consumers sharing an instance id fence each other in turn for as long as both run, so every
        worker gets ``<instance id>-w<index>``. Dynamic members need no distinct id and are returned as is.
        """
        if self.group_instance_id is None:
            return self
        return msgspec.structs.replace(self, group_instance_id=instance_id_for(self.group_instance_id, index))

    def __repr__(self) -> str:
        """Every field as msgspec shows it, except the objects (:data:`OBJECT_FIELDS`) by type only: a
        token provider's own repr may hold its token."""
        shown = (
            f"{name}={_object_repr(value) if name in OBJECT_FIELDS else repr(value)}"
            for name, value in msgspec.structs.asdict(self).items()
        )
        return f"Settings({', '.join(shown)})"

    def loggable_properties(self) -> dict[str, str]:
        """Every setting by Kafka property name, secrets masked: what to log at startup, as Java does."""
        return {spec.kafka_property: _show_default(getattr(self, spec.field), spec) for spec in SETTINGS}

    def tls_context(self) -> ssl.SSLContext | None:
        """The given ``ssl_context``, else one built from the ssl.* files; None when the security protocol
        uses no TLS."""
        if self.security_protocol not in _TLS_PROTOCOLS:
            return None
        if self.ssl_context is not None:
            return self.ssl_context
        context = _trusting(self.ssl_ca_location or None)
        if self.ssl_certificate_location and self.ssl_key_location:
            _present_certificate(
                context, self.ssl_certificate_location, self.ssl_key_location, self.ssl_key_password
            )
        return context

    def response_limits(self) -> tuple[int, int]:
        """Largest response frame accepted on (group/admin/metadata, fetch) connections, in bytes."""
        from staticconsumer._aiokafka import GROUP_RESPONSE_MAX_BYTES, fetch_response_limit

        if self.receive_message_max_bytes:
            return self.receive_message_max_bytes, self.receive_message_max_bytes
        return GROUP_RESPONSE_MAX_BYTES, fetch_response_limit(
            self.fetch_max_bytes, self.max_partition_fetch_bytes
        )

    def aiokafka_client_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``aiokafka.AIOKafkaClient``: connection, security and metadata only.

        The result holds the revealed SASL password (aiokafka needs it); never log it.
        """
        kwargs: dict[str, Any] = {
            "bootstrap_servers": list(self.bootstrap_servers),
            "client_id": self.effective_client_id,
            "metadata_max_age_ms": self.metadata_max_age_ms,
            "request_timeout_ms": self.request_timeout_ms,
            "retry_backoff_ms": self.retry_backoff_ms,
            "security_protocol": self.security_protocol,
            "ssl_context": self.tls_context(),
            "connections_max_idle_ms": self.connections_max_idle_ms,
        }
        if self.security_protocol not in _SASL_PROTOCOLS:
            return kwargs
        kwargs["sasl_mechanism"] = self.sasl_mechanism
        if self.sasl_mechanism in PASSWORD_MECHANISMS:
            kwargs["sasl_plain_username"] = self.sasl_username
            kwargs["sasl_plain_password"] = (
                None if self.sasl_password is None else self.sasl_password.reveal()
            )
        elif self.sasl_mechanism == "OAUTHBEARER":
            kwargs["sasl_oauth_token_provider"] = self.sasl_oauth_token_provider
        else:
            kwargs["sasl_kerberos_service_name"] = self.sasl_kerberos_service_name
            kwargs["sasl_kerberos_domain_name"] = self.sasl_kerberos_domain_name
        return kwargs

    def aiokafka_consumer_kwargs(self, assignor_for: Callable[[str], object] | None = None) -> dict[str, Any]:
        """Keyword arguments for ``aiokafka.AIOKafkaConsumer``, including the client's.

        aiokafka wants assignor objects, not names, and knows no cooperative-sticky, so the caller maps
        each protocol name with ``assignor_for``; without it ``partition_assignment_strategy`` is left out.
        The rebalance timeout is max.poll.interval.ms, as in the Java client.
        """
        kwargs = self.aiokafka_client_kwargs()
        kwargs.update(
            group_id=self.group_id,
            group_instance_id=self.group_instance_id,
            session_timeout_ms=self.session_timeout_ms,
            heartbeat_interval_ms=self.heartbeat_interval_ms,
            max_poll_interval_ms=self.max_poll_interval_ms,
            rebalance_timeout_ms=self.max_poll_interval_ms,
            enable_auto_commit=self.enable_auto_commit,
            auto_commit_interval_ms=self.auto_commit_interval_ms,
            auto_offset_reset=self.auto_offset_reset,
            isolation_level=self.isolation_level,
            fetch_min_bytes=self.fetch_min_bytes,
            fetch_max_bytes=self.fetch_max_bytes,
            max_partition_fetch_bytes=self.max_partition_fetch_bytes,
            fetch_max_wait_ms=self.fetch_max_wait_ms,
            max_poll_records=self.max_poll_records,
            client_rack=self.client_rack,
            check_crcs=self.check_crcs,
            exclude_internal_topics=self.exclude_internal_topics,
        )
        if assignor_for is not None:
            kwargs["partition_assignment_strategy"] = tuple(assignor_for(name) for name in self.assignors)
        return kwargs


def _struct_defaults(cls: type[msgspec.Struct]) -> dict[str, object]:
    """Each field's default, from the struct's own tables: ``msgspec.structs.fields`` would also resolve
    every field's annotation (53 forward references compiled and evaluated, ~0.6 ms of each import; issue
    26). Every field of Settings has a plain default (no factory), which the settings tests pin."""
    names, defaults = cls.__struct_fields__, cls.__struct_defaults__
    return dict(zip(names[len(names) - len(defaults) :], defaults, strict=True))


DEFAULTS: Final[Mapping[str, object]] = _struct_defaults(Settings)
"""Each field's default, read from the struct itself so docs and errors can never disagree with it."""


def _object_repr(value: object) -> str:
    return "None" if value is None else f"<{type(value).__name__}>"


def _trusting(ca_location: str | None) -> ssl.SSLContext:
    """A context that verifies brokers (and their host names) against these CAs, or the system's."""
    return ssl.create_default_context(cafile=ca_location)


def _present_certificate(
    context: ssl.SSLContext, certificate: str, key: str, key_password: Secret | None
) -> None:
    """Load the client certificate for mutual TLS.

    The password is always given as a callable so that an encrypted key without a password fails at
    once instead of OpenSSL prompting on a terminal that a pod does not have.
    """
    password = "" if key_password is None else key_password.reveal()
    context.load_cert_chain(certificate, key, lambda: password)


def instance_id_for(base: str, index: int) -> str:
    """A distinct, valid group.instance.id for worker ``index`` of a process whose own id is ``base``.

    ``instance_id_for("orders-0", 1) == "orders-0-w1"``. Stable across restarts as long as the worker
    count is, which is what keeps static membership free of rebalances.
    """
    if index < 0:
        raise InvalidGroupInstanceIdError(f"{base}-w{index}", "the worker index must not be negative")
    derived = f"{base}-w{index}"
    if len(derived) > MAX_GROUP_INSTANCE_ID_LENGTH:
        raise InvalidGroupInstanceIdError(
            derived,
            f"it is {len(derived)} characters long; the limit is {MAX_GROUP_INSTANCE_ID_LENGTH}, "
            f"so the base id must leave room for the '-w{index}' suffix",
        )
    validate_group_instance_id(derived)
    return derived


# --- parsing -----------------------------------------------------------------------------------------


class _Unparsable(Exception):
    """A raw value that cannot become the field's type; carries what would have been accepted."""

    def __init__(self, allowed: str) -> None:
        super().__init__(allowed)
        self.allowed = allowed


_TRUE: Final = frozenset({"true", "1", "yes", "on"})
_FALSE: Final = frozenset({"false", "0", "no", "off"})


def _parse_text(raw: str, spec: SettingSpec) -> object:
    """Turn an environment string into the field's Python value."""
    text = raw.strip()
    if spec.none_allowed and text.lower() == "none":
        return None
    if spec.kind == "int":
        try:
            return int(text)
        except ValueError:
            raise _Unparsable(f"not a number; expected {spec.allowed()}") from None
    if spec.kind == "bool":
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise _Unparsable("not a boolean; expected true or false (also 1/0, yes/no, on/off)")
    if spec.kind == "list":
        return tuple(item.strip() for item in text.split(",") if item.strip())
    if spec.field == "group_instance_id":
        return raw
    if spec.kind in ("secret", "optional_string") and not text:
        return None
    if spec.kind == "secret":
        return Secret(raw)
    return text


def _coerce_override(value: object, spec: SettingSpec) -> object:
    """Accept a keyword argument in its natural Python type, or as text parsed like the environment."""
    if isinstance(value, str):
        return _parse_text(value, spec)
    if value is None:
        if spec.kind in ("optional_string", "secret") or spec.none_allowed:
            return None
        raise _Unparsable(f"None is not allowed; expected {spec.allowed()}")
    if spec.kind == "int" and isinstance(value, int) and not isinstance(value, bool):
        return value
    if spec.kind == "bool" and isinstance(value, bool):
        return value
    if spec.kind == "list" and isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return tuple(value)
    if spec.kind == "secret" and isinstance(value, Secret):
        return value
    raise _Unparsable(f"wrong type {type(value).__name__}; expected {spec.allowed()}")


def _show(value: object, spec: SettingSpec | None) -> str:
    """A value as error messages show it: quoted text, bare numbers, secrets masked."""
    if (spec is not None and spec.secret) or isinstance(value, Secret):
        return MASK
    if isinstance(value, tuple):
        return repr(",".join(str(item) for item in value))
    return repr(value)


def _show_default(value: object, spec: SettingSpec) -> str:
    """A value as the docs and startup logs show it: unquoted, lists comma-joined, secrets masked."""
    if value is None:
        return "none" if spec.none_allowed else "(unset)"
    if spec.secret:
        return MASK
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(value) if value else "(none)"
    return str(value)


class _Labels(msgspec.Struct, frozen=True):
    """For each field, the name the operator used and the value to show, so errors point at their input."""

    names: Mapping[str, str]
    shown: Mapping[str, str]

    @classmethod
    def for_fields(cls, values: Mapping[str, object]) -> _Labels:
        return cls(
            names={field: field for field in values},
            shown={field: _show(value, SPEC_BY_FIELD[field]) for field, value in values.items()},
        )

    def problem(self, field: str, allowed: str) -> SettingProblem:
        return SettingProblem(self.names[field], self.shown[field], allowed)


def _from_env(
    environ: Mapping[str, str],
    prefix: str,
    ignore: Collection[str],
    overrides: Mapping[str, object],
    *,
    keywords_only: bool = False,
) -> Settings:
    """``keywords_only``: no environment was read, so problems name keywords (``Settings.from_keywords``)."""
    problems: list[SettingProblem] = []
    values: dict[str, Any] = {}
    names: dict[str, str] = {}
    shown: dict[str, str] = {}
    overrides = translate_assignment_strategy(overrides)
    # A Settings re-validated with changes (``from_env(**all its fields, **changes)``) passes its own
    # explicit_fields: then a keyword counts as configured if it was before or differs from the default.
    carried = overrides.pop("explicit_fields", None)
    revalidating = isinstance(carried, frozenset | set | tuple | list)
    explicit: set[str] = {str(name) for name in carried} if isinstance(carried, Collection) else set()
    objects: dict[str, Any] = {name: overrides.pop(name) for name in OBJECT_FIELDS if name in overrides}
    spelled, problems = _take_aiokafka_spellings(overrides, revalidating)
    # group_id=None asks for a consumer without a group, kept as "" marked configured; a blank group_id
    # given any other way is still missing (a forgotten KAFKA_GROUP_ID must not drop the group).
    groupless = "group_id" in overrides and overrides["group_id"] is None
    if groupless:
        overrides["group_id"] = ""
        explicit.add("group_id")
    elif revalidating and overrides.get("group_id") == "" and "group_id" in explicit:
        groupless = True  # a group-less Settings re-validated with changes
    for spec in SETTINGS:
        variable = spec.env_var(prefix)
        if spec.field in overrides:
            configured = not revalidating or overrides[spec.field] != DEFAULTS[spec.field]
        else:
            configured = environ.get(variable, "").strip() != ""  # Java ignores blank values too
        if configured:
            explicit.add(spec.field)
        if spec.field in overrides:
            raw: object = overrides[spec.field]
            names[spec.field] = f"{spelled.get(spec.field, spec.field)} (keyword argument)"
            shown[spec.field] = _show(raw, spec)
            parse: Callable[[Any, SettingSpec], object] = _coerce_override
        elif variable in environ and (environ[variable].strip() != "" or spec.field == "group_instance_id"):
            raw = environ[variable]
            names[spec.field] = variable
            shown[spec.field] = _show(raw, spec)
            parse = _parse_text
        else:
            default = DEFAULTS[spec.field]
            unset = default in ("", (), None)
            source = f"{spec.field} (keyword argument)" if keywords_only else variable
            names[spec.field] = source if unset else f"{spec.field if keywords_only else variable} (default)"
            shown[spec.field] = "(unset)" if unset else _show_default(default, spec)
            values[spec.field] = default
            continue
        try:
            values[spec.field] = parse(raw, spec)
        except _Unparsable as bad:
            problems.append(SettingProblem(names[spec.field], shown[spec.field], bad.allowed))

    labels = _Labels(names, shown)
    problems.extend(_check_fields(values, labels, groupless))
    problems.extend(_check_combinations(values, labels, explicit, groupless))
    problems.extend(_object_problems(values, objects, labels))
    problems.extend(_unknown_keywords(overrides))
    problems.extend(_typos(environ, prefix, ignore))
    if problems:
        raise SettingsError(_sorted_by_field(problems, names))
    return Settings(**values, **objects, explicit_fields=frozenset(explicit & SPEC_BY_FIELD.keys()))


def _take_aiokafka_spellings(
    overrides: dict[str, object], revalidating: bool
) -> tuple[dict[str, str], list[SettingProblem]]:
    """Move aiokafka's spellings (``sasl_plain_username``) to our fields; returns which field came by
    which spelling, and a problem for each setting given by both names."""
    spelled: dict[str, str] = {}
    problems: list[SettingProblem] = []
    for alias, field in AIOKAFKA_SPELLINGS.items():
        if alias not in overrides:
            continue
        value = overrides.pop(alias)
        # re-validating a Settings passes all its fields: an unset one is no second spelling
        if field in overrides and not (revalidating and overrides[field] == DEFAULTS[field]):
            problems.append(
                SettingProblem(
                    f"{alias} (keyword argument)",
                    _show(value, SPEC_BY_FIELD[field]),
                    f"{field} is given too: both are the same setting (aiokafka's name and ours); pass one",
                )
            )
            continue
        overrides[field] = value
        spelled[field] = alias
    return spelled, problems


def _sorted_by_field(problems: list[SettingProblem], names: Mapping[str, str]) -> list[SettingProblem]:
    """Problems in table order (then unknown names), whatever order the checks found them in."""
    position = {name: index for index, name in enumerate(names.values())}
    return sorted(problems, key=lambda problem: position.get(problem.name, len(position)))


_REFUSED_AIOKAFKA_OPTIONS: Final = {
    "api_version": "aiokafka ignores it since 0.13 (a deprecated no-op): API versions are negotiated with "
    "each broker; remove it (api_version_caps= caps a group API's version)",
    "loop": "deprecated by aiokafka since 0.7.1: the consumer runs on the event loop it is started on; "
    "remove it",
}
"""aiokafka consumer options that have no meaning here, each refused with the reason."""


def _unknown_keywords(overrides: Mapping[str, object]) -> list[SettingProblem]:
    problems = []
    for keyword in overrides:
        if keyword in SPEC_BY_FIELD:
            continue
        if keyword in _REFUSED_AIOKAFKA_OPTIONS:
            reason = _REFUSED_AIOKAFKA_OPTIONS[keyword]
            value = _show(overrides[keyword], None)
            problems.append(
                SettingProblem(f"{keyword} (keyword argument)", value, f"not a setting: {reason}")
            )
            continue
        import difflib  # not at import time: only a misspelt name needs suggestions

        known = [*SPEC_BY_FIELD, *OBJECT_FIELDS, *AIOKAFKA_SPELLINGS]
        close = difflib.get_close_matches(keyword, known, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]}?" if close else ""
        meant = SPEC_BY_FIELD.get(AIOKAFKA_SPELLINGS.get(close[0], close[0])) if close else None
        secretish = re.search(_SECRET_LOOKING, keyword) or (meant is not None and meant.secret)
        # None and functions hold no secret (key_deserializer=None is not a password): shown as they are.
        could_hide = overrides[keyword] is not None and not callable(overrides[keyword])
        value = MASK if secretish and could_hide else _show(overrides[keyword], None)
        problems.append(SettingProblem(f"{keyword} (keyword argument)", value, f"not a setting{hint}"))
    return problems


def _typos(environ: Mapping[str, str], prefix: str, ignore: Collection[str]) -> list[SettingProblem]:
    """Variables under the prefix that are not ours but nearly are: almost certainly misspelt."""
    known = {spec.env_var(prefix)[len(prefix) :]: spec for spec in SETTINGS}
    problems = []
    for variable in sorted(environ):
        if not variable.startswith(prefix) or variable in ignore:
            continue
        suffix = variable[len(prefix) :]
        if suffix in known:
            continue
        import difflib  # not at import time: only a misspelt name needs suggestions

        close = difflib.get_close_matches(suffix.upper(), list(known), n=1, cutoff=TYPO_SIMILARITY)
        if not close:
            continue
        meant = known[close[0]]
        value = MASK if meant.secret or re.search(_SECRET_LOOKING, suffix) else repr(environ[variable])
        problems.append(
            SettingProblem(
                variable,
                value,
                f"unknown variable; did you mean {meant.env_var(prefix)}? "
                f"(pass ignore={{{variable!r}}} if it belongs to something else)",
            )
        )
    return problems


# --- validation --------------------------------------------------------------------------------------


def _check_fields(
    values: Mapping[str, object], labels: _Labels, groupless: bool = False
) -> list[SettingProblem]:
    """Rules about one field at a time; fields that failed to parse are absent and skipped.
    ``groupless``: group_id was given as None, so its empty value is not a missing one."""
    problems: list[SettingProblem] = []
    for spec in SETTINGS:
        if spec.field not in values or (groupless and spec.field == "group_id"):
            continue
        value = values[spec.field]
        allowed = _field_problem(spec, value)
        if allowed is not None:
            problems.append(labels.problem(spec.field, allowed))
    return problems


def _field_problem(spec: SettingSpec, value: object) -> str | None:
    """What is wrong with ``value`` for ``spec``, or None when it is fine."""
    if spec.field == "group_remote_assignor" and value is not None:
        if value in REMOTE_ASSIGNORS:
            return None
        return f"unknown server-side assignor; expected {spec.allowed()}" + _suggestion(
            value, REMOTE_ASSIGNORS
        )
    if spec.kind == "int":
        if value is None and spec.none_allowed:
            return None
        if not isinstance(value, int) or isinstance(value, bool):
            return f"wrong type; expected {spec.allowed()}"
        if spec.minimum <= value <= spec.maximum:
            return None
        if value > spec.maximum:
            return f"too large; expected {spec.allowed()}"
        what = "negative" if value < 0 else "zero" if value == 0 else "too small"
        return f"{what}; expected {spec.allowed()}"
    if spec.kind == "bool":
        return None if isinstance(value, bool) else "wrong type; expected true or false"
    if spec.kind == "choice":
        if value in spec.choices:
            return None
        return spec.allowed() + _suggestion(value, spec.choices)
    if spec.kind == "list":
        return _list_problem(spec, value)
    if spec.kind == "secret":
        return None if value is None or isinstance(value, Secret) else "wrong type; expected a Secret"
    if spec.field == "group_instance_id":
        return _instance_id_problem(value)
    if spec.kind == "string":
        if not isinstance(value, str) or not value.strip():
            if spec.field == "group_id":
                return (
                    "required; set it to a non-empty string "
                    "(in code, StaticConsumer(group_id=None) or no group_id at all means no group)"
                )
            return "required; set it to a non-empty string"
        return None
    return None if value is None or isinstance(value, str) else "wrong type; expected a string or None"


def _suggestion(value: object, choices: Sequence[str]) -> str:
    if not isinstance(value, str):
        return ""
    lowered = {choice.lower(): choice for choice in choices}
    import difflib  # not at import time: only a misspelt name needs suggestions

    close = difflib.get_close_matches(value.lower(), list(lowered), n=1, cutoff=0.6)
    return f" (did you mean {lowered[close[0]]}?)" if close else ""


def _list_problem(spec: SettingSpec, value: object) -> str | None:
    if not isinstance(value, tuple) or not all(isinstance(item, str) for item in value):
        return f"wrong type; expected {spec.allowed()}"
    if not value:
        return f"required; expected {spec.allowed()}"
    if spec.field == "assignors":
        return _assignors_problem(value)
    bad = [server for server in value if _host_port_problem(_with_default_port(server))]
    if bad:
        return (
            f"{', '.join(repr(server) for server in bad)}: expected host or host:port with a port from 1 "
            "to 65535"
        )
    return None


def _assignors_problem(value: tuple[str, ...]) -> str | None:
    """Names are checked against the assignor registry as it is now, so a custom assignor registered
    with ``assignors.register`` before the settings are built is as valid as a built-in one."""
    custom = sorted(set(registered_assignors()) - set(BUILT_IN_ASSIGNORS))
    registered = [*BUILT_IN_ASSIGNORS, *custom]
    unknown = [name for name in value if name not in registered]
    if unknown:
        hints = "".join(_suggestion(name, registered) for name in unknown)
        return (
            f"unknown assignor {', '.join(unknown)}{hints}; registered: {', '.join(registered)} "
            "(register a custom one with assignors.register before building the settings)"
        )
    if len(set(value)) != len(value):
        return "an assignor is listed twice; list each once, in order of preference"
    return None


def _with_default_port(server: str) -> str:
    """``server`` as ``host:port``: aiokafka's reading of a server given without a port (port 9092; a
    bare IPv6 address is bracketed). Anything else, malformed included, is left for validation."""
    text = server.strip()
    if text.startswith("[") and text.endswith("]"):
        return f"{text}:{DEFAULT_KAFKA_PORT}"
    if ":" not in text:
        return f"{text}:{DEFAULT_KAFKA_PORT}" if text else text
    if text.count(":") > 1 and not text.startswith("["):
        import ipaddress  # not at import time: only bare IPv6 addresses need it

        try:
            ipaddress.IPv6Address(text)
        except ValueError:
            return text
        return f"[{text}]:{DEFAULT_KAFKA_PORT}"
    return text


def _host_port_problem(server: str) -> bool:
    host, colon, port = server.rpartition(":")
    if not colon or not host.strip("[]") or not port.isdigit():
        return True
    return not 1 <= int(port) <= 65535


def _instance_id_problem(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        return "wrong type; expected a string or None"
    if value == "":
        return (
            "empty; a static member needs a non-empty id (leave it unset for dynamic membership; "
            "in a StatefulSet use the pod name)"
        )
    try:
        validate_group_instance_id(value)
    except InvalidGroupInstanceIdError as invalid:
        return invalid.reason
    return None


def _check_combinations(
    values: Mapping[str, object], labels: _Labels, explicit: Collection[str] = (), groupless: bool = False
) -> list[SettingProblem]:
    """Rules between fields; each runs only when the fields it needs parsed and are individually valid.

    ``explicit`` names the fields that were configured rather than defaulted (group protocol rules);
    ``groupless``: group_id was given as None."""
    valid = {
        field: value for field, value in values.items() if _field_problem(SPEC_BY_FIELD[field], value) is None
    }
    problems: list[SettingProblem] = []
    session, heartbeat = valid.get("session_timeout_ms"), valid.get("heartbeat_interval_ms")
    lowest, highest = valid.get("broker_min_session_timeout_ms"), valid.get("broker_max_session_timeout_ms")
    # Whether session.timeout.ms lies within the brokers' bounds is the brokers' to judge (as for aiokafka
    # and Java: INVALID_SESSION_TIMEOUT at start()); only settings that contradict each other are ours.
    if isinstance(lowest, int) and isinstance(highest, int) and lowest > highest:
        problems.append(
            labels.problem(
                "broker_max_session_timeout_ms",
                f"below group.min.session.timeout.ms ({lowest}); no session timeout could be accepted",
            )
        )
    if isinstance(session, int) and isinstance(heartbeat, int):
        problem = heartbeat_interval_problem(heartbeat, session)
        if problem is not None:
            problems.append(labels.problem("heartbeat_interval_ms", problem))
    receive = valid.get("receive_message_max_bytes")
    fetch_bounds = [valid.get("fetch_max_bytes"), valid.get("max_partition_fetch_bytes")]
    if isinstance(receive, int) and receive > 0:
        needed = max((bound for bound in fetch_bounds if isinstance(bound, int)), default=0) + 512
        if receive < needed:
            problems.append(
                labels.problem(
                    "receive_message_max_bytes",
                    f"below max(fetch.max.bytes, max.partition.fetch.bytes) + 512 = {needed}: full fetch "
                    "responses would be refused; raise it, or 0 to derive it",
                )
            )
    protocol = valid.get("security_protocol")
    if isinstance(protocol, str):
        problems.extend(_security_problems(protocol, valid, labels))
    problems.extend(_group_protocol_problems(valid, labels, explicit))
    if groupless and valid.get("group_instance_id") is not None:
        problems.append(
            labels.problem(
                "group_instance_id",
                "set without a group (group_id=None): a static member is a member of a group; "
                "unset group_instance_id, or set group_id",
            )
        )
    return problems


_CONSUMER_PROTOCOL_REFUSALS: Final = {
    "assignors": "the broker assigns the partitions; pick its assignor with group.remote.assignor "
    "(uniform or range) instead",
    "session_timeout_ms": "the brokers' group.consumer.session.timeout.ms applies; unset it",
    "heartbeat_interval_ms": "the broker tells the heartbeat interval (its "
    "group.consumer.heartbeat.interval.ms); unset it",
}


def _group_protocol_problems(
    valid: Mapping[str, object], labels: _Labels, explicit: Collection[str]
) -> list[SettingProblem]:
    """Java's ConsumerConfig refusals: settings of one group protocol may not be set under the other."""
    group_protocol = valid.get("group_protocol")
    if group_protocol == "consumer":
        return [
            labels.problem(field, f"cannot be set when group.protocol=consumer: {why}")
            for field, why in _CONSUMER_PROTOCOL_REFUSALS.items()
            if field in explicit
        ]
    if group_protocol == "classic":
        return [
            labels.problem(
                field,
                "cannot be set when group.protocol=classic: server-side assignors exist only in the "
                "consumer protocol (set group.protocol=consumer, or choose client-side assignors with "
                "partition.assignment.strategy)",
            )
            for field in CONSUMER_ONLY_SETTINGS
            if field in explicit and valid.get(field) is not None
        ]
    return []


def _security_problems(protocol: str, valid: Mapping[str, object], labels: _Labels) -> list[SettingProblem]:
    problems: list[SettingProblem] = []
    uses_sasl = protocol in _SASL_PROTOCOLS
    mechanism = valid.get("sasl_mechanism")
    for field in ("sasl_username", "sasl_password"):
        present = bool(valid.get(field))
        if uses_sasl and mechanism not in PASSWORD_MECHANISMS and mechanism is not None and present:
            problems.append(labels.problem(field, f"ignored with sasl.mechanism {mechanism}; unset it"))
        elif uses_sasl and not present and field in valid and mechanism not in ("OAUTHBEARER", "GSSAPI"):
            mechanism_text = mechanism or "the SASL mechanism"
            problems.append(
                labels.problem(field, f"required: {protocol} with {mechanism_text} needs credentials")
            )
        if not uses_sasl and present:
            problems.append(
                labels.problem(
                    field, f"ignored with security.protocol {protocol}; use SASL_SSL or SASL_PLAINTEXT"
                )
            )
    uses_tls = protocol in _TLS_PROTOCOLS
    for field in (*_TLS_FILE_FIELDS, "ssl_key_password"):
        value = valid.get(field)
        if not value:
            continue
        if not uses_tls:
            problems.append(
                labels.problem(field, f"ignored with security.protocol {protocol}; use SSL or SASL_SSL")
            )
        elif field in _TLS_FILE_FIELDS and isinstance(value, str) and not Path(value).is_file():
            problems.append(labels.problem(field, "no such file (is the Secret mounted at this path?)"))
    if uses_tls:
        certificate, key = valid.get("ssl_certificate_location"), valid.get("ssl_key_location")
        if bool(certificate) != bool(key):
            missing = "ssl.key.location" if certificate else "ssl.certificate.location"
            given = "ssl_certificate_location" if certificate else "ssl_key_location"
            problems.append(labels.problem(given, f"mutual TLS needs both files; {missing} is unset"))
        if valid.get("ssl_key_password") and not key:
            problems.append(labels.problem("ssl_key_password", "set but ssl.key.location is unset"))
        if not problems:
            problems.extend(_tls_load_problems(valid, labels))
    return problems


def _object_problems(
    values: Mapping[str, object], objects: Mapping[str, object], labels: _Labels
) -> list[SettingProblem]:
    """Rules for the object keywords (:data:`OBJECT_FIELDS`) and the settings they go with. Objects
    show as their type only: a token provider's repr may hold a token."""
    problems: list[SettingProblem] = []
    protocol, mechanism = values.get("security_protocol"), values.get("sasl_mechanism")
    context = objects.get("ssl_context")
    if context is not None:
        where, shown = "ssl_context (keyword argument)", _object_repr(context)
        files = [field for field in (*_TLS_FILE_FIELDS, "ssl_key_password") if values.get(field)]
        if not isinstance(context, ssl.SSLContext):
            problems.append(SettingProblem(where, shown, "wrong type; expected an ssl.SSLContext"))
        elif protocol not in _TLS_PROTOCOLS:
            problems.append(
                SettingProblem(
                    where, shown, f"ignored with security.protocol {protocol}; use SSL or SASL_SSL"
                )
            )
        elif files:
            given = ", ".join(labels.names[field] for field in files)
            problems.append(
                SettingProblem(
                    where, shown, f"given together with {given}: both configure TLS; pass one or the other"
                )
            )
    uses_oauth = protocol in _SASL_PROTOCOLS and mechanism == "OAUTHBEARER"
    provider = objects.get("sasl_oauth_token_provider")
    if provider is not None:
        from aiokafka.abc import AbstractTokenProvider  # only when one is given: settings stay light

        where, shown = "sasl_oauth_token_provider (keyword argument)", _object_repr(provider)
        if not isinstance(provider, AbstractTokenProvider):
            problems.append(
                SettingProblem(where, shown, "wrong type; expected an aiokafka.abc.AbstractTokenProvider")
            )
        elif not uses_oauth:
            problems.append(
                SettingProblem(
                    where,
                    shown,
                    f"ignored with security.protocol {protocol} and sasl.mechanism {mechanism}; "
                    "it needs SASL_SSL (or SASL_PLAINTEXT) with OAUTHBEARER",
                )
            )
    elif uses_oauth:
        problems.append(
            labels.problem(
                "sasl_mechanism",
                "OAUTHBEARER needs the keyword argument sasl_oauth_token_provider "
                "(an aiokafka.abc.AbstractTokenProvider)",
            )
        )
    if protocol in _SASL_PROTOCOLS and mechanism == "GSSAPI" and not _gssapi_installed():
        problems.append(
            labels.problem(
                "sasl_mechanism",
                "GSSAPI needs the Python package gssapi, which is not installed (pip install gssapi), and "
                "a Kerberos ticket (kinit or a keytab)",
            )
        )
    return problems


def _gssapi_installed() -> bool:
    """Whether aiokafka's GSSAPI login can run: it imports ``gssapi`` when it is there, else refuses."""
    import importlib.util

    return importlib.util.find_spec("gssapi") is not None


def _tls_load_problems(valid: Mapping[str, object], labels: _Labels) -> list[SettingProblem]:
    """Load the TLS files now, so a wrong file or key password fails here rather than at first connect."""
    ca, certificate, key = (valid.get(field) for field in _TLS_FILE_FIELDS)
    password = valid.get("ssl_key_password")
    try:
        context = _trusting(ca if isinstance(ca, str) and ca else None)
    except (ssl.SSLError, OSError) as failure:
        return [labels.problem("ssl_ca_location", f"not a readable PEM file of CA certificates ({failure})")]
    if not (isinstance(certificate, str) and certificate and isinstance(key, str) and key):
        return []
    try:
        _present_certificate(context, certificate, key, password if isinstance(password, Secret) else None)
    except (ssl.SSLError, OSError) as failure:
        return [
            labels.problem(
                "ssl_key_location",
                "could not load with ssl.certificate.location: wrong or missing ssl.key.password, a key "
                f"that does not match the certificate, or not PEM ({failure})",
            )
        ]
    return []


# -- aiokafka's partition_assignment_strategy keyword, and the rebalance protocol of the assignors ------
#
# aiokafka's ``partition_assignment_strategy=`` keyword, mapped to our ``assignors`` setting.
#
# A service moved from ``AIOKafkaConsumer`` by changing one import keeps passing aiokafka's assignor
# classes; each one aiokafka ships has an assignor here under the same protocol name (and wire format),
# so the keyword becomes ``assignors=`` names. Classes are recognised by where aiokafka defines them, not
# imported: settings stay free of aiokafka, and a look-alike class of the user's is not taken for one.
#
# The rebalance protocol the configured assignors allow (``rebalance_protocol_of``) is chosen here too,
# when a consumer is built: this module is loaded by ``import staticconsumer``, the leader's assignment
# step (``runtime.assignment``, which re-exports it) only once a member starts.
#
# Here, not in a module of its own (``settings._strategy`` before): every ``import staticconsumer`` loads
# it, and a module costs a finder lookup, a stat and an unmarshal (issue 26).

KEYWORD: Final = "partition_assignment_strategy"
"""aiokafka's keyword (a tuple of assignor classes, in order of preference)."""

AIOKAFKA_ASSIGNORS: Final[Mapping[str, str]] = {
    "aiokafka.coordinator.assignors.range.RangePartitionAssignor": "range",
    "aiokafka.coordinator.assignors.roundrobin.RoundRobinPartitionAssignor": "roundrobin",
    "aiokafka.coordinator.assignors.sticky.sticky_assignor.StickyPartitionAssignor": "sticky",
}
"""aiokafka 0.14's assignor classes (by defining module) and the protocol name of ours for each."""


def translate_assignment_strategy(options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` with aiokafka's ``partition_assignment_strategy`` replaced by ``assignors`` names.

    Raises :class:`SettingsError` naming each class without an equivalent here (and the ``assignors``
    setting that replaces the keyword), or when both keywords are given.
    """
    if KEYWORD not in options:
        return dict(options)
    translated = {name: value for name, value in options.items() if name != KEYWORD}
    strategy = options[KEYWORD]
    label = f"{KEYWORD} (keyword argument)"
    if "assignors" in options:
        raise SettingsError(
            [
                SettingProblem(
                    label,
                    _shown(strategy),
                    "aiokafka's keyword for what assignors= sets; pass one of the two, not both",
                )
            ]
        )
    entries = strategy if isinstance(strategy, (tuple, list)) else (strategy,)
    names: list[str] = []
    unknown: list[object] = []
    for entry in entries:
        if isinstance(entry, str):
            names.append(entry)  # a protocol name already; the assignors check judges it
            continue
        name = AIOKAFKA_ASSIGNORS.get(_path(entry))
        if name is None:
            unknown.append(entry)
        else:
            names.append(name)
    if unknown:
        raise SettingsError([SettingProblem(label, _shown(strategy), _no_equivalent(unknown))])
    if not names:
        raise SettingsError(
            [SettingProblem(label, _shown(strategy), "empty; list at least one assignor (or leave it out)")]
        )
    translated["assignors"] = tuple(names)
    return translated


def _path(entry: object) -> str:
    cls = entry if isinstance(entry, type) else type(entry)
    return f"{cls.__module__}.{cls.__qualname__}"


def _shown(strategy: object) -> str:
    entries = strategy if isinstance(strategy, (tuple, list)) else (strategy,)
    return "(" + ", ".join(e if isinstance(e, str) else _name(e) for e in entries) + ")"


def _name(entry: object) -> str:
    cls = entry if isinstance(entry, type) else type(entry)
    return cls.__qualname__


def _no_equivalent(unknown: list[object]) -> str:
    culprits = ", ".join(f"{_path(e)} (protocol {getattr(e, 'name', '?')!r})" for e in unknown)
    known = ", ".join(path.rsplit(".", 1)[1] for path in AIOKAFKA_ASSIGNORS)
    return (
        f"no assignor here is equivalent to {culprits}; set assignors= (KAFKA_PARTITION_ASSIGNMENT_STRATEGY) "
        f"to protocol names instead: range, roundrobin, sticky, cooperative-sticky, or one registered with "
        f"assignors.register under the same protocol name (aiokafka classes mapped: {known})"
    )


_PROTOCOL_ORDER = (RebalanceProtocol.EAGER, RebalanceProtocol.COOPERATIVE)
"""Java's RebalanceProtocol ids, lowest first: the later one is the more advanced."""


def rebalance_protocol_of(assignors: Sequence[assignor_lib.Assignor]) -> RebalanceProtocol:
    """The most advanced protocol every configured assignor supports (Java's ConsumerCoordinator).

    ``cooperative-sticky`` alone is cooperative; adding ``range`` (eager only) makes the member eager,
    which is the first step of a migration. A custom assignor declares its ``rebalance_protocols``.
    """
    if not assignors:
        raise ConfigurationError("at least one assignor is needed to choose a rebalance protocol")
    known = {protocol.value: protocol for protocol in _PROTOCOL_ORDER}
    common = set(_PROTOCOL_ORDER)
    for assignor in assignors:
        declared = tuple(getattr(assignor, "rebalance_protocols", ("eager",)))
        unknown = [p for p in declared if p not in known]
        if unknown:
            raise ConfigurationError(
                f"assignor {assignor.name!r} declares rebalance protocols {unknown}; "
                f"the classic protocol knows {sorted(known)}"
            )
        common &= {known[p] for p in declared}
    if not common:
        names = [a.name for a in assignors]
        raise ConfigurationError(
            f"the assignors {names} have no rebalance protocol in common "
            f"({', '.join(f'{a.name}: {list(a.rebalance_protocols)}' for a in assignors)})"
        )
    return max(common, key=_PROTOCOL_ORDER.index)

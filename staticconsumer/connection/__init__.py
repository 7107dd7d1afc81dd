"""Connecting to Kafka with failures that say why, and watching the connection afterwards.

Internal: not part of the public API, it may change in any release (docs/consumer.md, "What is
public", lists what is). docs/connection.md shows these helpers on a plain ``AIOKafkaClient`` for
diagnosis; the consumer uses them for you.

- :func:`bootstrap` replaces ``client.bootstrap()``: every bootstrap server probed at once, bounded by
  ``request.timeout.ms``, and a typed error naming each server's fate (nothing listening, silent server,
  refused credentials, wrong security protocol).
- :func:`check_access` finds missing ACLs at start and names them; it also reports missing topics.
- :class:`ConnectionMonitor` folds aiokafka's per-retry ERROR lines into one WARNING per broker state
  change and exposes :class:`ConnectionState`.
- :class:`MissingTopics` warns, with backoff, about subscribed topics that do not exist, or fails.
- ``reconnect``: Java's per-broker reconnect backoff with jitter, shared by a consumer's clients;
  ``ratelimit``: one WARNING per broker and cause per minute for faults that repeat at every retry.

See docs/connection.md.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from staticconsumer.connection.access import (
        AccessReport,
        acl_hint,
        check_access,
        explain_authorization,
        group_authorization_error,
        principal_of,
        topic_authorization_error,
    )
    from staticconsumer.connection.bootstrapping import bootstrap, bootstrap_answered
    from staticconsumer.connection.monitor import BrokerOutage, ConnectionMonitor, ConnectionState
    from staticconsumer.connection.topics import MissingTopics, TopicsChange
else:
    _LAZY = {
        "AccessReport": "access",
        "acl_hint": "access",
        "check_access": "access",
        "explain_authorization": "access",
        "group_authorization_error": "access",
        "principal_of": "access",
        "topic_authorization_error": "access",
        "bootstrap": "bootstrapping",
        "bootstrap_answered": "bootstrapping",
        "BrokerOutage": "monitor",
        "ConnectionMonitor": "monitor",
        "ConnectionState": "monitor",
        "MissingTopics": "topics",
        "TopicsChange": "topics",
    }
    """Each name loads its module on first use (issue 26): a start's bootstrap probe needs
    ``bootstrapping`` only, and the access check (with the group messages it reads) loads while the
    probe waits on the network."""

    def __getattr__(name: str) -> Any:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        globals()[name] = value
        return value


__all__ = [
    "AccessReport",
    "BrokerOutage",
    "ConnectionMonitor",
    "ConnectionState",
    "MissingTopics",
    "TopicsChange",
    "acl_hint",
    "bootstrap",
    "bootstrap_answered",
    "check_access",
    "explain_authorization",
    "group_authorization_error",
    "principal_of",
    "topic_authorization_error",
]

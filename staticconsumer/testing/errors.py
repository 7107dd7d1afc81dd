"""Errors of the embedded test broker and the Java oracle: each says what is missing and what to do."""

from __future__ import annotations

from staticconsumer.errors import StaticConsumerError


class TestInfrastructureError(StaticConsumerError):
    """Something the real-broker test set-up needs is missing or broken."""

    __test__ = False  # not a pytest test class, whatever its name says


class JavaNotFoundError(TestInfrastructureError):
    """No usable ``java`` (Kafka 4.x needs Java 17 or later)."""


class MavenNotFoundError(TestInfrastructureError):
    """No ``mvn`` to resolve Kafka's jars or build the Java oracle."""


class JarResolutionError(TestInfrastructureError):
    """Maven could not resolve the broker's jars (offline and uncached, or an unpublished version)."""


class PortInUseError(TestInfrastructureError):
    """The port asked for is already bound by another process."""


class BrokerStartError(TestInfrastructureError):
    """The broker process died or never became ready; the message carries the tail of its log."""


class OracleError(TestInfrastructureError):
    """The Java oracle refused a request (for example a field the version cannot carry) or died."""


class ClientNotInstalledError(TestInfrastructureError):
    """A benchmark mode runs a client library that is not installed (the ``dev`` extra has it)."""

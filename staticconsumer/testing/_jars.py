"""Resolve Apache Kafka's broker jars from Maven Central, once, into a cache outside the repository.

Maven does the resolving (it knows the registry, proxies and checksums); we only write a throwaway
pom that depends on ``org.apache.kafka:kafka_2.13`` and copy its runtime classpath into
``<cache>/kafka/<version>/libs``. A marker file records a complete resolution, so later runs do not
start Maven at all and work offline.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

from staticconsumer import _maven
from staticconsumer._maven import cache_root, file_lock, maven_progress
from staticconsumer.testing.errors import JarResolutionError, MavenNotFoundError

# slf4j-simple gives both broker lines (3.9 and 4.x) one logging setup: everything to stderr, which
# the launcher sends to the broker's log file.
_LOGGING_BINDING = ("org.slf4j", "slf4j-simple", "1.7.36")

_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.staticconsumer.cache</groupId>
  <artifactId>kafka-broker-classpath</artifactId>
  <version>{version}</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_2.13</artifactId>
      <version>{version}</version>
    </dependency>
    <dependency>
      <groupId>{log_group}</groupId>
      <artifactId>{log_artifact}</artifactId>
      <version>{log_version}</version>
    </dependency>
  </dependencies>
</project>
"""

_MARKER = ".complete"


def find_maven() -> str:
    """The ``mvn`` on PATH, else MavenNotFoundError saying what it is needed for."""
    return _maven.find_maven(
        lambda: MavenNotFoundError(
            "Maven ('mvn') is not on PATH; it is needed once to fetch Kafka's jars from Maven Central "
            "(apt-get install maven, or set STATICCONSUMER_KAFKA_BOOTSTRAP to use an existing cluster)"
        )
    )


def broker_classpath(version: str) -> tuple[list[Path], float]:
    """The broker's jars for ``version`` and the seconds spent resolving them (0.0 when cached)."""
    home = cache_root() / "kafka" / version
    libs = home / "libs"
    with file_lock(home / ".lock"):
        if (home / _MARKER).exists():
            return sorted(libs.glob("*.jar")), 0.0
        mvn = find_maven()
        started = time.monotonic()
        if libs.exists():
            shutil.rmtree(libs)
        (home / "pom.xml").write_text(
            _POM.format(
                version=version,
                log_group=_LOGGING_BINDING[0],
                log_artifact=_LOGGING_BINDING[1],
                log_version=_LOGGING_BINDING[2],
            )
        )
        command = [
            mvn,
            "-B",
            "-q",
            "-f",
            str(home / "pom.xml"),
            "dependency:copy-dependencies",
            f"-DoutputDirectory={libs}",
            "-DincludeScope=runtime",
        ]
        with maven_progress(f"org.apache.kafka:kafka_2.13:{version}"):
            result = subprocess.run(command, capture_output=True, text=True, check=False)
        jars = sorted(libs.glob("*.jar"))
        if result.returncode != 0 or not any(j.name.startswith(f"kafka_2.13-{version}") for j in jars):
            output = (result.stdout + result.stderr).strip().splitlines()
            raise JarResolutionError(
                f"could not resolve org.apache.kafka:kafka_2.13:{version} with Maven "
                f"(exit {result.returncode}); last lines:\n" + "\n".join(output[-15:])
            )
        (home / _MARKER).write_text("\n".join(j.name for j in jars) + "\n")
        return jars, time.monotonic() - started

"""Spark's Kafka source (spark-sql-kafka) from Maven Central, resolved once into the project's cache.

PySpark ships without it. ``--follow`` needs it on the JVM's classpath before Spark starts, so this
resolves ``org.apache.spark:spark-sql-kafka-0-10_<scala>:<spark version>`` with Maven (the same tool
and cache as the broker's jars, ~/.cache/staticconsumer and ~/.m2), keeps only the jars PySpark lacks,
and prints progress lines while the first download runs. Later runs find the marker and start no Maven.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from staticconsumer._maven import cache_root, file_lock, find_maven, maven_progress
from staticconsumer.errors import AnalyticsError

_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.staticconsumer.cache</groupId>
  <artifactId>spark-kafka-classpath</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.spark</groupId>
      <artifactId>{artifact}</artifactId>
      <version>{version}</version>
    </dependency>
  </dependencies>
</project>
"""
_SETTINGS = """<settings xmlns="http://maven.apache.org/SETTINGS/1.0.0">
  <mirrors>
    <!-- Spark's poms list other repositories (a cloud mirror, jitpack): Maven Central serves it all. -->
    <mirror>
      <id>central-for-spark-mirror</id>
      <mirrorOf>*</mirrorOf>
      <url>https://repo.maven.apache.org/maven2</url>
    </mirror>
  </mirrors>
</settings>
"""
_MARKER = ".complete"
_VERSIONED = re.compile(r"^(?P<name>.+?)-\d[\w.\-]*\.jar$")


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def spark_versions() -> tuple[str, str]:
    """(Spark version, Scala binary version) of the installed PySpark, read from its own jars."""
    import pyspark

    for jar in (spark_home() / "jars").glob("spark-core_*.jar"):
        scala = jar.name.split("_", 1)[1].split("-", 1)[0]
        return pyspark.__version__, scala
    raise AnalyticsError(f"no spark-core jar under {spark_home() / 'jars'}: is PySpark installed whole?")


def kafka_source_coordinate() -> str:
    version, scala = spark_versions()
    return f"org.apache.spark:spark-sql-kafka-0-10_{scala}:{version}"


def connector_versions(version: str) -> list[str]:
    """The Kafka connector versions to try for this Spark: its own, then earlier x.y.0 of its major."""
    parts = version.split(".")
    if len(parts) < 2 or not parts[0].isdigit() or not parts[1].isdigit():
        return [version]
    major, minor = int(parts[0]), int(parts[1])
    return [version, *(f"{major}.{m}.0" for m in range(minor - 1, -1, -1))]


def _artifact(jar: Path) -> str:
    match = _VERSIONED.match(jar.name)
    return match.group("name") if match else jar.stem


def kafka_source_jars(*, quiet: bool = False) -> list[Path]:
    """The jars that give this PySpark the ``kafka`` source: cached, else resolved with Maven now."""
    version, scala = spark_versions()
    artifact = f"spark-sql-kafka-0-10_{scala}"
    home = cache_root() / "spark-kafka" / version
    libs = home / "libs"
    with file_lock(home / ".lock"):
        if (home / _MARKER).exists():
            return sorted(libs.glob("*.jar"))
        mvn = find_maven(
            lambda: AnalyticsError(
                "Maven ('mvn') is not on PATH; it is needed once to fetch Spark's Kafka source "
                f"({artifact}) from Maven Central for --follow (apt-get install maven)"
            )
        )
        if libs.exists():
            shutil.rmtree(libs)
        settings: list[str] = []
        if not (Path.home() / ".m2" / "settings.xml").exists():  # your own settings (mirrors) win
            (home / "settings.xml").write_text(_SETTINGS)
            settings = ["-s", str(home / "settings.xml")]
        tried: list[str] = []
        with maven_progress(f"org.apache.spark:{artifact}:{version}", quiet=quiet) as progress:
            for candidate in connector_versions(version):
                (home / "pom.xml").write_text(_POM.format(artifact=artifact, version=candidate))
                command = [
                    mvn, "-B", "-q", *settings, "-f", str(home / "pom.xml"), "dependency:copy-dependencies",
                    f"-DoutputDirectory={libs}", "-DincludeScope=runtime",
                ]  # fmt: skip
                result = subprocess.run(command, capture_output=True, text=True, check=False)
                output = (result.stdout + result.stderr).strip()
                tried.append(candidate)
                if result.returncode == 0 or not (
                    "Could not find artifact" in output or "was not found" in output
                ):
                    break
            if candidate != version and result.returncode == 0:
                progress.say(
                    f"Maven Central has no {artifact}:{version}; using {candidate}, the newest "
                    "release before it (the Kafka source's API is stable within Spark's major line)"
                )
        if result.returncode != 0 or not any(j.name.startswith(artifact) for j in libs.glob("*.jar")):
            tail = output.splitlines()[-10:]
            raise AnalyticsError(
                f"could not resolve org.apache.spark:{artifact} ({', '.join(tried)}) with Maven "
                f"(exit {result.returncode}): {' / '.join(tail)}"
            )
        # Keep only what PySpark lacks: two copies of one library on a classpath is a conflict.
        shipped = {_artifact(jar) for jar in (spark_home() / "jars").glob("*.jar")}
        for jar in libs.glob("*.jar"):
            if _artifact(jar) in shipped:
                jar.unlink()
        jars = sorted(libs.glob("*.jar"))
        (home / _MARKER).write_text("\n".join(j.name for j in jars) + "\n")
        return jars

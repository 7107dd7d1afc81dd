"""``staticconsumer analyze``: arguments and the run, kept here so the main CLI stays a thin switch."""

from __future__ import annotations

import argparse
import sys

from staticconsumer.errors import AnalyticsError

from . import INSTALL_HINT, pyspark_available

PROG = "staticconsumer analyze"


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"--conf {text!r}: expected KEY=VALUE")
    return key.strip(), value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The analyze subcommand's options (shared by ``staticconsumer analyze`` and ``python -m``)."""
    parser.add_argument(
        "paths", nargs="*", metavar="PATH", help="event log files or directories (any Spark path)"
    )
    parser.add_argument(
        "--master", default=None, help="Spark master; default local[*], or the cluster's under spark-submit"
    )
    parser.add_argument(
        "--out", default="analytics-out", help="directory for the Parquet tables and the report"
    )
    parser.add_argument(
        "--deploy-gap", type=float, default=60.0, help="seconds of quiet that separate deploy windows (60)"
    )
    parser.add_argument(
        "--skew-tolerance", type=float, default=1.0, help="clock skew between hosts to absorb, seconds (1)"
    )
    parser.add_argument("--driver-memory", default=None, help="spark.driver.memory, e.g. 2g (local runs)")
    parser.add_argument(
        "--conf",
        type=_key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting, as spark-submit's --conf (repeatable); wins over the job's own",
    )
    parser.add_argument(
        "--packages",
        action="extend",
        type=_package_list,
        default=[],
        metavar="GROUP:ARTIFACT:VERSION[,...]",
        help="Maven packages Spark fetches at start (spark.jars.packages), e.g. hadoop-aws for s3a://",
    )
    parser.add_argument("--no-report", action="store_true", help="write the Parquet tables only")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    live = parser.add_argument_group("live analysis (Spark Structured Streaming on the event log topic)")
    live.add_argument(
        "--follow", metavar="TOPIC", default=None, help="read the event log topic as it is written"
    )
    live.add_argument(
        "--bootstrap-servers", default=None, help="Kafka brokers (default $KAFKA_BOOTSTRAP_SERVERS)"
    )
    live.add_argument(
        "--storm-rebalances", type=int, default=3, help="a storm is MORE than this many rebalances (3) ..."
    )
    live.add_argument("--storm-seconds", type=float, default=300.0, help="... within this many seconds (300)")
    live.add_argument(
        "--watermark", type=float, default=60.0, help="seconds a record may arrive late and still count (60)"
    )
    live.add_argument("--trigger", type=float, default=2.0, help="seconds between micro-batches (2)")
    live.add_argument(
        "--starting-offsets", default="earliest", help="earliest (default: the whole topic) or latest"
    )
    live.add_argument(
        "--for-seconds", type=float, default=None, help="stop after this long (default: Ctrl-C)"
    )
    live.add_argument(
        "--kafka-option",
        type=_key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Kafka source option, e.g. kafka.security.protocol=SSL (repeatable)",
    )


def _package_list(value: str) -> list[str]:
    """One ``--packages`` value, a comma-separated list as spark-submit takes; repeated ones extend it."""
    return [p.strip() for p in value.split(",") if p.strip()]


def run(args: argparse.Namespace) -> int:
    """Run the job (or follow the topic) and print the summary; one line and a non-zero exit on errors."""
    if not pyspark_available():
        print(f"{PROG}: {INSTALL_HINT}", file=sys.stderr)
        return 2
    if args.follow is None and not args.paths:
        print(f"{PROG}: give event log PATHs, or --follow TOPIC", file=sys.stderr)
        return 2
    try:
        if args.follow is not None:
            from .live import follow_command

            return follow_command(args)
        return _batch(args)
    except AnalyticsError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except Exception as error:
        # Spark's own errors come as pages of JVM stack; the first line says what happened.
        print(f"{PROG}: {spark_error_line(error)}", file=sys.stderr)
        return 1


def spark_error_line(error: BaseException) -> str:
    """The line of a (JVM) exception that names the problem, without the stack."""
    text = str(error).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in lines:
        if any(marker in line for marker in ("Exception:", "Error:", "error:")) and not line.startswith(
            "at "
        ):
            return f"{type(error).__name__}: {line[:400]}"
    return f"{type(error).__name__}: {(lines[0] if lines else text)[:400]}"


def _batch(args: argparse.Namespace) -> int:
    from pyspark.sql import SparkSession

    from .job import Options
    from .progress import Progress
    from .run import analyze
    from .session import spark_session

    conf = dict(args.conf)
    progress = Progress(quiet=args.quiet)
    borrowed = SparkSession.getActiveSession() is not None  # a notebook's or a test's: leave it running
    if not borrowed:
        progress.say(f"starting Spark ({args.master or 'local[*]'}) ...")
    spark = spark_session(args.master, driver_memory=args.driver_memory, config=conf, packages=args.packages)
    try:
        analysis = analyze(
            args.paths,
            args.out,
            spark=spark,
            options=Options(deploy_gap_seconds=args.deploy_gap, skew_tolerance_seconds=args.skew_tolerance),
            report=not args.no_report,
            progress=progress,
            size_shuffles="spark.sql.shuffle.partitions" not in conf,
        )
        print(analysis.text())
        print(f"Tables: {args.out}/<table> (Parquet)")
    finally:
        if not borrowed:
            spark.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m staticconsumer.analytics", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))

"""``staticconsumer analyze``: arguments and the run, kept here so the main CLI stays a thin switch."""

from __future__ import annotations

import argparse
import sys

from . import INSTALL_HINT, pyspark_available


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The analyze subcommand's options (shared by ``staticconsumer analyze`` and ``python -m``)."""
    parser.add_argument(
        "paths", nargs="+", metavar="PATH", help="event log files or directories (any Spark path)"
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
    parser.add_argument("--driver-memory", default=None, help="spark.driver.memory, e.g. 4g (local runs)")
    parser.add_argument("--no-report", action="store_true", help="write the Parquet tables only")


def run(args: argparse.Namespace) -> int:
    """Run the job and print the summary; exit status 2 when PySpark is missing."""
    if not pyspark_available():
        print(f"staticconsumer analyze: {INSTALL_HINT}", file=sys.stderr)
        return 2
    from pyspark.sql import SparkSession

    from .job import Options
    from .run import analyze
    from .session import spark_session

    borrowed = SparkSession.getActiveSession() is not None  # a notebook's or a test's: leave it running
    spark = spark_session(args.master, driver_memory=args.driver_memory)
    try:
        analysis = analyze(
            args.paths,
            args.out,
            spark=spark,
            options=Options(deploy_gap_seconds=args.deploy_gap, skew_tolerance_seconds=args.skew_tolerance),
            report=not args.no_report,
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

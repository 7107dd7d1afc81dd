"""Fleet rebalance analytics on Spark: ``staticconsumer analyze`` over membership event logs.

Importing this package needs no Spark; :func:`analyze` does (``pip install 'staticconsumer[analytics]'``).
See docs/analytics.md for the tables, the windowing and running on a cluster.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .run import Analysis

INSTALL_HINT = (
    "the analysis needs PySpark (and matplotlib for the plots) and Java 17+: "
    "pip install 'staticconsumer[analytics]'"
)


def pyspark_available() -> bool:
    """Whether PySpark can be imported (the demo and the CLI check before they start Spark)."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return False
    return True


def analyze(
    paths: list[str | Path] | tuple[str | Path, ...], out: str | Path | None = None, **kwargs: Any
) -> Analysis:
    """See :func:`staticconsumer.analytics.run.analyze`; imported late so this package loads without Spark."""
    from .run import analyze as run_analyze

    return run_analyze(paths, out, **kwargs)


__all__ = ["INSTALL_HINT", "analyze", "pyspark_available"]

"""``python -m staticconsumer.analytics PATH...`` (also what spark-submit runs; see docs/analytics.md)."""

import sys

from .cli import main

sys.exit(main())

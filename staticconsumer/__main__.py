"""``python -m staticconsumer``: the ``staticconsumer`` command, for when the script is not on PATH."""

from staticconsumer.cli import main

raise SystemExit(main())

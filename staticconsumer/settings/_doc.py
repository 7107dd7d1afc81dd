"""The settings table of docs/configuration.md and ``python -m staticconsumer.settings``.

Apart from the settings themselves: only the docs check and the command line read it, so no
``import staticconsumer`` loads it (issue 26).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from staticconsumer import settings as _settings
from staticconsumer.errors import SettingsError
from staticconsumer.settings import DEFAULT_PREFIX, SETTINGS, Settings, _show_default

TABLE_BEGIN: Final = "<!-- BEGIN GENERATED settings table: python -m staticconsumer.settings --write-doc -->"
TABLE_END: Final = "<!-- END GENERATED settings table -->"


def markdown_table(prefix: str = DEFAULT_PREFIX) -> str:
    """The environment variable table of docs/configuration.md, straight from :data:`SETTINGS`."""
    rows = [
        "| Variable | Kafka property | Default | Allowed | What it does |",
        "|---|---|---|---|---|",
    ]
    for spec in SETTINGS:
        default = _settings.DEFAULTS[spec.field]  # read at call time: a test swaps the defaults
        shown = "(required)" if default in ("", ()) else _show_default(default, spec)
        cells = (
            f"`{spec.env_var(prefix)}`",
            f"`{spec.kafka_property}`",
            f"`{shown}`",
            spec.allowed(),
            spec.description,
        )
        rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(rows) + "\n"


def replace_generated_table(document: str, table: str) -> str:
    """``document`` with the text between the table markers replaced by ``table``."""
    before, begin, rest = document.partition(TABLE_BEGIN)
    _, end, after = rest.partition(TABLE_END)
    if not begin or not end:
        raise ValueError(f"the document lacks the markers {TABLE_BEGIN!r} ... {TABLE_END!r}")
    return f"{before}{TABLE_BEGIN}\n{table}{TABLE_END}{after}"


def generated_table_in(document: str) -> str:
    """The text currently between the table markers of ``document``."""
    _, begin, rest = document.partition(TABLE_BEGIN + "\n")
    table, end, _ = rest.partition(TABLE_END)
    if not begin or not end:
        raise ValueError(f"the document lacks the markers {TABLE_BEGIN!r} ... {TABLE_END!r}")
    return table


def main(argv: Sequence[str] | None = None) -> int:
    """Print the docs table, rewrite it in a document, or check the current environment."""
    import argparse  # not at import time: the command line only

    parser = argparse.ArgumentParser(prog="python -m staticconsumer.settings", description=main.__doc__)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--markdown", action="store_true", help="print the environment variable table")
    action.add_argument("--write-doc", metavar="PATH", help="replace the generated table inside PATH")
    action.add_argument("--check", action="store_true", help="validate this environment and print the result")
    parser.add_argument("--prefix", default=DEFAULT_PREFIX)
    args = parser.parse_args(argv)
    if args.markdown:
        sys.stdout.write(markdown_table(args.prefix))
        return 0
    if args.write_doc:
        path = Path(args.write_doc)
        path.write_text(replace_generated_table(path.read_text(), markdown_table(args.prefix)))
        return 0
    try:
        settings = Settings.from_env(prefix=args.prefix)
    except SettingsError as error:
        print(error, file=sys.stderr)
        return 2
    for name, value in settings.loggable_properties().items():
        print(f"{name}={value}")
    return 0

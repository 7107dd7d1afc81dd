"""The span, event, attribute and metric tables of docs/telemetry.md, rendered from ``attributes``.

    python -m staticconsumer.telemetry.reference --write-doc docs/telemetry.md   # rewrite the tables
    python -m staticconsumer.telemetry.reference --markdown                     # print them

The page keeps its prose; only the text between each table's markers is generated, and a unit test
fails when the page and ``attributes`` drift apart.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from . import attributes as a

GENERATOR: Final = "python -m staticconsumer.telemetry.reference --write-doc docs/telemetry.md"


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = [_row(header), "|" + "---|" * len(header), *(_row(r) for r in rows)]
    return "\n".join(lines) + "\n"


def tables() -> dict[str, str]:
    """Each generated table of the page by its marker name, in page order."""
    return {
        "spans": _table(
            ("span", "kind", "from → to", "parent"),
            [(s.name, s.kind, s.extent, s.parent) for s in a.SPANS],
        ),
        "events": _table(("event", "on", "attributes"), [(e.name, e.on, e.attributes) for e in a.EVENTS]),
        "attributes": _table(("key", "on", "value"), [(x.key, x.on, x.value) for x in a.ATTRIBUTES]),
        "metrics": _table(
            ("metric", "instrument", "unit", "Java counterpart", "attributes beyond the identity"),
            [(m.name, m.instrument, m.unit, m.java, m.attributes) for m in a.METRICS],
        ),
    }


def begin_marker(name: str) -> str:
    return f"<!-- BEGIN GENERATED {name} table: {GENERATOR} -->"


def end_marker(name: str) -> str:
    return f"<!-- END GENERATED {name} table -->"


def generated_in(document: str, name: str) -> str:
    """The text currently between the markers of table ``name``."""
    _, begin, rest = document.partition(begin_marker(name) + "\n")
    table, end, _ = rest.partition(end_marker(name))
    if not begin or not end:
        raise ValueError(f"the document lacks the markers of the {name} table ({begin_marker(name)!r})")
    return table


def replace_generated(document: str, rendered: dict[str, str] | None = None) -> str:
    """``document`` with every generated table replaced by its current rendering."""
    for name, table in (rendered or tables()).items():
        before, begin, rest = document.partition(begin_marker(name))
        _, end, after = rest.partition(end_marker(name))
        if not begin or not end:
            raise ValueError(f"the document lacks the markers of the {name} table ({begin_marker(name)!r})")
        document = f"{before}{begin}\n{table}{end}{after}"
    return document


def main(argv: Sequence[str] | None = None) -> int:
    """Print the generated tables, or rewrite them inside a document."""
    parser = argparse.ArgumentParser(
        prog="python -m staticconsumer.telemetry.reference", description=main.__doc__
    )
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--markdown", action="store_true", help="print every generated table")
    action.add_argument("--write-doc", metavar="PATH", help="replace the generated tables inside PATH")
    args = parser.parse_args(argv)
    if args.markdown:
        for name, table in tables().items():
            sys.stdout.write(f"{begin_marker(name)}\n{table}{end_marker(name)}\n\n")
        return 0
    path = Path(args.write_doc)
    path.write_text(replace_generated(path.read_text()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

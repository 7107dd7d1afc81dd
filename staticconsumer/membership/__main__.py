"""``python -m staticconsumer.membership [--write [PATH]]``: print the error tables, or write them into
docs/membership.md between its markers."""

from __future__ import annotations

import argparse
from pathlib import Path

from .rules import markdown, replace_tables


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m staticconsumer.membership")
    parser.add_argument("--write", metavar="PATH", nargs="?", const="docs/membership.md")
    args = parser.parse_args(argv)
    if args.write is None:
        print(markdown())
        return 0
    path = Path(args.write)
    path.write_text(replace_tables(path.read_text()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

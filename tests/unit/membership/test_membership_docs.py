"""docs/membership.md shows the error rules the machine runs, generated from membership/rules.py."""

from __future__ import annotations

from pathlib import Path

from staticconsumer.membership import rules

PAGE = Path(__file__).resolve().parents[3] / "docs" / "membership.md"


def test_the_error_tables_on_the_page_are_the_machines_rules() -> None:
    page = PAGE.read_text()
    assert rules.replace_tables(page) == page, "regenerate: python -m staticconsumer.membership --write"

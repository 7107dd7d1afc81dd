"""docs/configuration.md stays generated from the settings object, and the generator's CLI works."""

from __future__ import annotations

from pathlib import Path

import pytest

from staticconsumer import settings as settings_module
from staticconsumer.settings import SETTINGS
from staticconsumer.settings._doc import (
    TABLE_BEGIN,
    TABLE_END,
    generated_table_in,
    main,
    markdown_table,
    replace_generated_table,
)

CONFIGURATION_DOC = Path(__file__).resolve().parents[3] / "docs" / "configuration.md"


def test_the_documented_table_is_the_generated_one() -> None:
    documented = generated_table_in(CONFIGURATION_DOC.read_text())
    assert documented == markdown_table(), (
        "docs/configuration.md is out of date: run "
        "`python -m staticconsumer.settings --write-doc docs/configuration.md`"
    )


def test_the_table_has_one_row_per_setting_with_default_and_allowed_values() -> None:
    rows = markdown_table().splitlines()[2:]
    assert len(rows) == len(SETTINGS)
    session = next(row for row in rows if row.startswith("| `KAFKA_SESSION_TIMEOUT_MS`"))
    assert "| `session.timeout.ms` | `45000` | an integer within the brokers' group.min/max" in session
    assert any("| `KAFKA_GROUP_ID` | `group.id` | `(required)` |" in row for row in rows)


def test_the_drift_check_notices_a_changed_default(monkeypatch: pytest.MonkeyPatch) -> None:
    documented = generated_table_in(CONFIGURATION_DOC.read_text())
    changed = dict(settings_module.DEFAULTS, session_timeout_ms=10_000)
    monkeypatch.setattr(settings_module, "DEFAULTS", changed)
    assert markdown_table() != documented


def test_replacing_the_table_keeps_the_text_around_it() -> None:
    document = f"intro\n{TABLE_BEGIN}\nstale\n{TABLE_END}\noutro\n"
    updated = replace_generated_table(document, "| fresh |\n")
    assert updated == f"intro\n{TABLE_BEGIN}\n| fresh |\n{TABLE_END}\noutro\n"
    assert generated_table_in(updated) == "| fresh |\n"


def test_a_document_without_markers_is_refused() -> None:
    with pytest.raises(ValueError, match="lacks the markers"):
        replace_generated_table("no markers here", "| x |\n")
    with pytest.raises(ValueError, match="lacks the markers"):
        generated_table_in(f"{TABLE_BEGIN}\nunterminated")


def test_cli_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--markdown"]) == 0
    assert capsys.readouterr().out == markdown_table()


def test_cli_rewrites_a_document(tmp_path: Path) -> None:
    document = tmp_path / "doc.md"
    document.write_text(f"# Title\n{TABLE_BEGIN}\nold\n{TABLE_END}\n")
    assert main(["--write-doc", str(document)]) == 0
    assert generated_table_in(document.read_text()) == markdown_table()
    assert document.read_text().startswith("# Title\n")


def test_cli_check_prints_masked_settings(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "b:9092")
    monkeypatch.setenv("KAFKA_GROUP_ID", "orders")
    monkeypatch.setenv("KAFKA_SECURITY_PROTOCOL", "SASL_PLAINTEXT")
    monkeypatch.setenv("KAFKA_SASL_USERNAME", "svc")
    monkeypatch.setenv("KAFKA_SASL_PASSWORD", "hunter2")
    assert main(["--check"]) == 0
    out = capsys.readouterr().out
    assert "group.id=orders\n" in out
    assert "sasl.password=***\n" in out
    assert "hunter2" not in out


def test_cli_check_reports_problems_with_exit_status_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("APP_BOOTSTRAP_SERVERS", "b:9092")
    monkeypatch.setenv("APP_SESSION_TIMEOUT_MS", "45s")
    assert main(["--check", "--prefix", "APP_"]) == 2
    err = capsys.readouterr().err
    assert "APP_GROUP_ID=(unset): required" in err
    assert "APP_SESSION_TIMEOUT_MS='45s': not a number" in err


def test_defaults_are_the_structs_own_and_every_field_has_a_plain_one() -> None:
    """DEFAULTS is read from the struct's tables without resolving annotations: the same mapping, in
    field order, as ``msgspec.structs.fields`` gives; a default factory would break that reading."""
    import msgspec

    fields = msgspec.structs.fields(settings_module.Settings)
    assert all(f.default_factory is msgspec.NODEFAULT for f in fields)
    assert list(settings_module.DEFAULTS.items()) == [(f.name, f.default) for f in fields]

"""``troupe store copy``: a SQLite troupe into PostgreSQL, every row, counted on both sides."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli.main import main
from bot.kernel.errors import EXIT_CONFIG


def test_copy_needs_a_postgres_target(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["store", "copy", "--from", str(tmp_path / "troupe.db")]) == EXIT_CONFIG
    assert "give --to postgresql://… or set TROUPE_DATABASE_URL" in capsys.readouterr().err
    assert main(["store", "copy", "--to", "sqlite:///x.db"]) == EXIT_CONFIG


def test_copy_needs_a_sqlite_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nothing.db"
    assert main(["store", "copy", "--from", str(missing), "--to", "postgresql://db.example/troupe"]) == EXIT_CONFIG
    assert f"there is no SQLite database at {missing}" in capsys.readouterr().err

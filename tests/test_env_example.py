""".env.example names every variable the example characters read, and troupe reads it as it is."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from bot.cli.main import main

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / ".env.example"


def referenced_variables() -> set[str]:
    """Every NAME of an ``env:NAME`` reference in the shipped characters."""
    names: set[str] = set()
    for path in (REPO / "characters").glob("*.json"):
        names.update(re.findall(r'"env:([A-Z0-9_]+)\??"', path.read_text()))
    return names


def test_every_variable_the_example_characters_read_is_in_env_example() -> None:
    listed = set(re.findall(r"^([A-Z0-9_]+)=", EXAMPLE.read_text(), re.MULTILINE))
    wanted = referenced_variables()
    assert len(wanted) >= 10  # the three characters' tokens and keys
    assert wanted - listed == set()
    assert "OPENAI_API_KEY" in listed  # what characters without their own key share


def test_env_example_copied_to_env_says_what_to_fill_in_and_checks_clean_once_filled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copytree(REPO / "characters", tmp_path / "characters")
    shutil.copy(EXAMPLE, tmp_path / ".env")
    monkeypatch.chdir(tmp_path)
    # As shipped, every value is empty: nothing could run, and check says what is missing.
    assert main(["check"]) == 78
    out = capsys.readouterr().out
    assert "OPENAI_API_KEY" in out and "TELEGRAM_BOT_TOKEN (env:IRIS_TELEGRAM_BOT_TOKEN? resolves to nothing)" in out
    filled = re.sub(
        r"^([A-Z0-9_]+)=$",
        lambda m: f"{m[1]}={'1234:secret' if m[1].endswith('_TOKEN') else '1234'}",
        EXAMPLE.read_text(),
        flags=re.MULTILINE,
    )
    (tmp_path / ".env").write_text(filled)
    assert main(["check"]) == 0, capsys.readouterr()

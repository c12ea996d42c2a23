""".env.example names every variable the example characters read, and troupe reads it as it is."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from bot.cli import main

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


def test_env_example_copied_to_env_checks_clean(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copytree(REPO / "characters", tmp_path / "characters")
    shutil.copy(EXAMPLE, tmp_path / ".env")
    monkeypatch.chdir(tmp_path)
    assert main(["check"]) == 0, capsys.readouterr()

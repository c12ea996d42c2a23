"""Settings written into .env as the console's setup page writes them: merged, 0600, read back as given."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from dotenv import dotenv_values

from bot.config.env_file import set_env_values


def test_values_are_merged_with_the_files_other_lines_and_read_back_as_given(tmp_path: Path) -> None:
    path = tmp_path / ".env"
    path.write_text('# my settings\nTROUPE_LOG_LEVEL=DEBUG\nexport OPENAI_API_KEY=old\nOPENAI_API_KEY="older"\n')
    path.chmod(0o644)
    set_env_values(path, {"OPENAI_API_KEY": 'sk-new"\\key', "OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"})
    lines = path.read_text().splitlines()
    assert lines[:2] == ["# my settings", "TROUPE_LOG_LEVEL=DEBUG"]
    assert sum("OPENAI_API_KEY" in line for line in lines) == 1  # where it was, once
    assert dotenv_values(path) == {
        "TROUPE_LOG_LEVEL": "DEBUG",
        "OPENAI_API_KEY": 'sk-new"\\key',
        "OPENAI_BASE_URL": "http://127.0.0.1:11434/v1",
    }
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == [".env"]  # no temporary file left behind


def test_a_new_file_is_made_0600_and_bad_input_says_what_is_wrong(tmp_path: Path) -> None:
    path = tmp_path / ".env"
    set_env_values(path, {"OPENAI_API_KEY": "sk-1"})
    assert path.read_text() == 'OPENAI_API_KEY="sk-1"\n'
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    with pytest.raises(ValueError, match="holds a line break"):
        set_env_values(path, {"OPENAI_API_KEY": "sk-1\nEVIL=1"})
    with pytest.raises(ValueError, match="is not a setting's name"):
        set_env_values(path, {"A B": "x"})
    # .env expands ${NAME} in any value, quoted or not: such a value would not read back as given.
    with pytest.raises(ValueError, match="which .env would expand; set it in the environment"):
        set_env_values(path, {"OPENAI_API_KEY": "sk-${HOME}"})
    assert path.read_text() == 'OPENAI_API_KEY="sk-1"\n'  # unchanged

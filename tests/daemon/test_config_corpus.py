"""A corpus of configuration that once crashed ``troupe`` (exit 70, a traceback, every character
down, systemd restart-looping): each is now a clear message naming the file or setting, exit 78,
and with several characters the broken file is skipped while the others start."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from .test_service import Service, service  # noqa: F401  (the fixture)

GOOD = {"name": "Good", "bio": "x"}

# File name → contents of a character file that once crashed loading; and what the message names.
BROKEN_FILES: dict[str, tuple[bytes, str]] = {
    "settings-text.json": (b'{"name": "S", "bio": "x", "settings": "oops"}', "$.settings: must be an object"),
    "deep.json": (
        b'{"name": "D", "bio": "x", "settings": {"a": ' + b"[" * 1000 + b"]" * 1000 + b"}}",
        "$: nested too deeply to read",
    ),
    "huge-number.json": (
        b'{"name": "H", "bio": "x", "settings": {"n": ' + b"9" * 4400 + b"}}",
        "$.settings.n: a number with 4400 digits",
    ),
    "nan.json": (b'{"name": "N", "bio": "x", "settings": {"t": NaN}}', "$.settings.t: NaN is not a number"),
    "surrogate.json": (b'{"name": "U\\udc80", "bio": "x"}', "$.name: text with a lone surrogate escape"),
    "empty.json": (b"", "$: the file is empty"),
}

# Daemon settings that once crashed ``troupe start``; and what the message names.
BROKEN_SETTINGS = {
    "TROUPE_LOG_LEVEL": ("LOUD", "TROUPE_LOG_LEVEL is 'LOUD': must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL"),
    "TROUPE_HEALTH_PORT": ("notaport", "TROUPE_HEALTH_PORT is 'notaport': input should be a valid integer"),
    "TROUPE_STOP_TIMEOUT_S": ("-5", "TROUPE_STOP_TIMEOUT_S is '-5': input should be greater than 0"),
}


def troupe(*args: str, cwd: Path, env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run the real command; its exit status and everything it printed."""
    # The console has its own tests; here it would only contend for its port.
    base = {"PATH": os.environ.get("PATH", ""), "HOME": str(cwd), "LANG": "C.UTF-8", "TROUPE_CONSOLE_PORT": "0"}
    proc = subprocess.run(
        [sys.executable, "-m", "bot.cli.main", *args],
        cwd=cwd,
        env=base | (env or {}),
        capture_output=True,
        text=True,
        timeout=60,
    )
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.parametrize("command", ["check", "start"])
@pytest.mark.parametrize("name", sorted(BROKEN_FILES))
def test_a_character_file_that_once_crashed_exits_78_naming_the_file_and_field(
    tmp_path: Path, command: str, name: str
) -> None:
    content, expected = BROKEN_FILES[name]
    (tmp_path / name).write_bytes(content)
    code, output = troupe(command, name, cwd=tmp_path)
    assert code == 78, output
    assert f"{name}: 1 problem\n  {expected}" in output
    assert "Traceback" not in output


@pytest.mark.parametrize("variable", sorted(BROKEN_SETTINGS))
def test_a_daemon_setting_that_once_crashed_exits_78_naming_the_setting(tmp_path: Path, variable: str) -> None:
    (tmp_path / "good.json").write_text(json.dumps(GOOD))
    value, expected = BROKEN_SETTINGS[variable]
    code, output = troupe("start", "good.json", cwd=tmp_path, env={variable: value})
    assert code == 78, output
    assert expected in output and "Traceback" not in output


@pytest.mark.parametrize("command", ["check", "start"])
def test_a_dotenv_that_is_not_utf8_exits_78_naming_it(tmp_path: Path, command: str) -> None:
    (tmp_path / "good.json").write_text(json.dumps(GOOD))
    (tmp_path / ".env").write_bytes(b"OPENAI_API_KEY=caf\xe9\n")
    code, output = troupe(command, "good.json", cwd=tmp_path)
    assert code == 78, output
    assert "troupe: .env is not UTF-8 text (bad byte at offset 18); save it as UTF-8" in output
    assert "Traceback" not in output


@pytest.mark.parametrize("command", ["check", "start"])
def test_a_named_pipe_in_the_characters_folder_is_skipped_not_waited_on(tmp_path: Path, command: str) -> None:
    (tmp_path / "characters").mkdir()
    os.mkfifo(tmp_path / "characters" / "pipe.json")
    (tmp_path / "characters" / "good.json").write_text(json.dumps(GOOD))
    code, output = troupe(command, cwd=tmp_path)  # the default folder, characters/
    assert "characters/pipe.json: skipped, a named pipe (FIFO), not a regular file" in output
    assert code == 78, output  # Good has no platform: start cannot run it, and check says so
    assert "Traceback" not in output


async def test_with_several_characters_the_broken_files_are_named_and_the_others_start(service: Service) -> None:  # noqa: F811
    s = service
    s.write("Ada")
    s.write("Brann")
    for name, (content, _) in BROKEN_FILES.items():
        (s.dir / "characters" / name).write_bytes(content)
    os.mkfifo(s.dir / "characters" / "pipe.json")
    await s.start()
    ready = await s.notify.wait("READY")
    assert ready["STATUS"] == "2 agents running; 2 of 2 platform connections up"
    logs = s.logs()
    for name, (_, expected) in BROKEN_FILES.items():
        assert f"{name}: 1 problem\n  {expected}" in logs
    assert "pipe.json: skipped, a named pipe (FIFO), not a regular file" in logs
    assert "Traceback" not in logs
    s.signal(signal.SIGTERM)
    assert await s.exit_code() == 0

"""The troupe command: check and start, as a user runs them."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bot.cli.main import main
from bot.kernel.errors import EXIT_CONFIG

REPO = Path(__file__).resolve().parents[1]


def write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data))
    return path


#: A character that can run: a platform, its token, and (OPENAI_API_KEY set) a model.
RUNNABLE = {"plugins": ["@elizaos/plugin-discord"], "settings": {"secrets": {"DISCORD_API_TOKEN": "dc-token"}}}


@pytest.fixture
def model_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")


def test_check_ok(tmp_path: Path, capsys: pytest.CaptureFixture[str], model_key: None) -> None:
    good = write(tmp_path / "a.json", {"name": "A", "bio": "x", **RUNNABLE})
    assert main(["check", str(good)]) == 0
    assert capsys.readouterr().out == f"{good}: OK  A (6dcd4ce2-3d88-02ee-9568-ba546c007c63; discord)\n"


def test_check_reports_every_problem_and_exits_78(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], model_key: None
) -> None:
    good = write(tmp_path / "a.json", {"name": "A", "bio": "x", **RUNNABLE})
    bad = write(tmp_path / "b.json", {"name": "", "bio": [], "people": []})
    assert main(["check", str(good), str(bad)]) == EXIT_CONFIG
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{good}: OK")
    assert out[1] == f"{bad}: 2 problems"
    assert out[2].startswith("  $.name: Character name is required")
    assert out[3].startswith("  $.bio: Character bio is required")


def test_check_a_folder_and_warnings(tmp_path: Path, capsys: pytest.CaptureFixture[str], model_key: None) -> None:
    write(tmp_path / "a.json", {"name": "A", "bio": "x", "clients": ["twitter"], **RUNNABLE})
    assert main(["check", str(tmp_path)]) == 0
    assert "  warning: $.clients[0]: no troupe platform 'twitter'" in capsys.readouterr().out


def test_check_says_when_embeddings_are_off(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], model_key: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_EMBEDDING_MODEL", "none")
    good = write(tmp_path / "a.json", {"name": "A", "bio": "x", **RUNNABLE})
    assert main(["check", str(good)]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == [
        "  note: embeddings are off (OPENAI_EMBEDDING_MODEL is none): memory and knowledge are searched by "
        "keywords alone"
    ]


def test_check_with_nothing_to_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(tmp_path)]) == EXIT_CONFIG
    assert "no character files found" in capsys.readouterr().err


def test_check_resolves_references_from_dotenv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("A_TOKEN=t\nOPENAI_API_KEY=sk-test-key\n")
    c = write(
        tmp_path / "a.json",
        {
            "name": "A",
            "bio": "x",
            "plugins": ["@elizaos/plugin-discord"],
            "secrets": {"DISCORD_API_TOKEN": "env:A_TOKEN"},
        },
    )
    assert main(["check", str(c)]) == 0


def test_shipped_characters_are_valid(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    shipped = sorted((REPO / "characters").glob("*.json"))
    assert len(shipped) >= 3
    # Given what they read (as .env.example names it), they can run.
    for path in shipped:
        for name in re.findall(r'"env:([A-Z0-9_]+)\??"', path.read_text()):
            monkeypatch.setenv(name, "1234:secret" if name.endswith("_TOKEN") else "1234")
    assert main(["check", *map(str, shipped)]) == 0, capsys.readouterr().out


def test_start_without_a_platform_stops_with_a_clear_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], model_key: None
) -> None:
    c = write(tmp_path / "a.json", {"name": "A", "bio": "x", "plugins": ["@elizaos/plugin-discord"]})
    assert main(["start", str(c)]) == EXIT_CONFIG
    last = capsys.readouterr().err.splitlines()[-1]
    assert "no character can run, so troupe does not start. A: discord: DISCORD_API_TOKEN not set." in last
    assert not Path("data").exists()  # nothing created for a start that cannot run


def test_start_names_the_variable_a_reference_points_at(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = {
        "name": "A",
        "bio": "x",
        "plugins": ["@elizaos/plugin-telegram"],
        "settings": {"secrets": {"TELEGRAM_BOT_TOKEN": "env:A_TELEGRAM_TOKEN?"}},
    }
    assert main(["start", str(write(tmp_path / "a.json", data))]) == EXIT_CONFIG
    assert (
        "A: telegram: TELEGRAM_BOT_TOKEN (env:A_TELEGRAM_TOKEN? resolves to nothing) not set" in capsys.readouterr().err
    )


def _cannot_run(tmp_path: Path) -> list[Path]:
    """Two files that validate but cannot run: one's token resolves to nothing, the other's
    platform needs a token it does not have; and (no OPENAI_API_KEY) neither has a model."""
    iris = {
        "name": "Iris",
        "bio": "x",
        "plugins": ["@elizaos/plugin-telegram"],
        "settings": {"secrets": {"TELEGRAM_BOT_TOKEN": "env:IRIS_TELEGRAM_TOKEN?"}},
    }
    brann = {"name": "Brann", "bio": "x", "plugins": ["@elizaos/plugin-discord"]}
    return [write(tmp_path / "iris.json", iris), write(tmp_path / "brann.json", brann)]


NO_MODEL = "no OpenAI-compatible endpoint is configured for plugin openai"
IRIS_TOKEN = "TELEGRAM_BOT_TOKEN (env:IRIS_TELEGRAM_TOKEN? resolves to nothing) not set"


def test_check_reports_what_start_would_refuse_all_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    iris, brann = _cannot_run(tmp_path)
    assert main(["check", str(iris), str(brann)]) == EXIT_CONFIG
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{iris}: 2 problems"
    assert out[1].startswith(f"  {NO_MODEL}; set OPENAI_API_KEY") and out[2] == f"  telegram: {IRIS_TOKEN}"
    assert out[3] == f"{brann}: 2 problems"
    assert out[4].startswith(f"  {NO_MODEL}") and out[5] == "  discord: DISCORD_API_TOKEN not set"
    assert out[6].startswith("troupe check: no character can run") and len(out) == 7


def test_check_reports_a_platform_setting_start_would_refuse(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], model_key: None
) -> None:
    data = {
        "name": "A",
        "bio": "x",
        "plugins": ["@elizaos/plugin-telegram"],
        "settings": {"secrets": {"TELEGRAM_BOT_TOKEN": "no-colon-here"}},
    }
    c = write(tmp_path / "a.json", data)
    assert main(["check", str(c)]) == EXIT_CONFIG
    out = capsys.readouterr().out
    assert "  TELEGRAM_BOT_TOKEN does not look like a bot token (<digits>:<secret>)" in out
    assert "no-colon-here" not in out


def test_start_names_every_missing_setting_in_its_last_line_and_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    monkeypatch.setenv("TROUPE_DATA_DIR", str(data))
    assert main(["start", *map(str, _cannot_run(tmp_path))]) == EXIT_CONFIG
    last = capsys.readouterr().err.splitlines()[-1]
    assert "no character can run, so troupe does not start." in last
    for missing in (f"Iris: {NO_MODEL}", f"Iris: telegram: {IRIS_TOKEN}", f"Brann: {NO_MODEL}"):
        assert missing in last
    assert "Brann: discord: DISCORD_API_TOKEN not set" in last
    assert not data.exists()  # no database, no data directory


def test_start_with_only_broken_characters(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write(tmp_path / "bad.json", {"bio": "x"})
    assert main(["start", str(bad)]) == EXIT_CONFIG
    err = capsys.readouterr().err
    assert "$.name: required field is missing" in err and "no valid character to run" in err


def test_console_script_runs_without_a_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{ nope")
    proc = subprocess.run(
        [sys.executable, "-m", "bot.cli.main", "check", str(bad)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert proc.returncode == EXIT_CONFIG
    assert "invalid JSON at line 1, column 3" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert re.fullmatch(r"troupe \d+\.\d+\.\d+\S*\n", capsys.readouterr().out)


@pytest.mark.parametrize("command", ["check", "start"])
def test_no_argument_and_no_characters_folder_says_so(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert not Path("characters").exists()  # the tests run in an empty folder
    assert main([command]) == EXIT_CONFIG
    err = capsys.readouterr().err
    assert re.search(
        rf"troupe {command}: there is no characters/ folder in .+; give character files or folders "
        rf"of them: troupe {command} path/to/character\.json",
        err,
    ), err


def test_log_level_that_means_nothing_is_refused_by_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["start", "--log-level", "LOUD"])
    assert exit_.value.code == 2
    assert "log level 'LOUD' is not understood" in capsys.readouterr().err


def _with_reader_gone(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run ``troupe ARGV | head`` where head has already gone: every write to stdout fails (EPIPE)."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            [sys.executable, "-m", "bot.cli.main", *argv],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            cwd=cwd,
            timeout=60,
            env=env,
        )
    finally:
        os.close(write)


def test_check_into_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    for name in ("iris", "wren", "captain"):
        shutil.copy(REPO / "characters" / f"{name}.json", tmp_path / f"{name}.json")
    proc = _with_reader_gone(["check", str(tmp_path)], cwd=tmp_path)
    assert proc.stderr == ""
    assert proc.returncode == 141  # what a shell reports for a command its reader left (128 + SIGPIPE)


def test_check_piped_into_head_ends_quietly(tmp_path: Path) -> None:
    shutil.copy(REPO / "characters" / "iris.json", tmp_path / "iris.json")
    troupe = Path(sys.executable).with_name("troupe")
    # head -n 0 leaves at once, long before troupe has checked anything: its writes find no reader.
    proc = subprocess.run(
        ["sh", "-c", f"'{troupe}' check iris.json 2>stderr.txt | head -n 0; cat stderr.txt"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert proc.stdout == "" and proc.stderr == ""


def test_check_with_the_console_on_passes_a_character_with_no_platform_token(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], model_key: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As troupe start: with the console on, the character runs on its Chat page (the web platform)."""
    data = {"name": "A", "bio": "x", "plugins": ["@elizaos/plugin-telegram"]}
    c = write(tmp_path / "a.json", data)
    monkeypatch.setenv("TROUPE_CONSOLE_PORT", "8420")
    assert main(["check", str(c)]) == 0
    out = capsys.readouterr().out
    assert re.match(rf"{re.escape(str(c))}: OK  A \([0-9a-f-]+; telegram, web\)$", out.splitlines()[0]), out
    monkeypatch.setenv("TROUPE_CONSOLE_PORT", "0")
    assert main(["check", str(c)]) == EXIT_CONFIG
    assert "telegram: TELEGRAM_BOT_TOKEN not set" in capsys.readouterr().out

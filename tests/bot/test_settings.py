import json
import os
import re
from pathlib import Path

import pytest

from bot.config.character import load_character
from bot.config.settings import DaemonSettings, character_setting, load_environ
from bot.kernel.errors import ConfigError


def make(tmp_path: Path, **data):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"name": "A", "bio": "x", **data}))
    return load_character(path, environ={}).character


def test_resolution_order_secrets_then_settings_secrets_then_settings_then_env(tmp_path: Path) -> None:
    env = {"K": "env"}
    both = make(tmp_path, secrets={"K": "top"}, settings={"K": "plain", "secrets": {"K": "nested"}})
    assert character_setting(both, "K", env) == "top"
    nested = make(tmp_path, settings={"K": "plain", "secrets": {"K": "nested"}})
    assert character_setting(nested, "K", env) == "nested"
    plain = make(tmp_path, settings={"K": "plain"})
    assert character_setting(plain, "K", env) == "plain"
    assert character_setting(make(tmp_path), "K", env) == "env"
    assert character_setting(make(tmp_path), "MISSING", env) is None


def test_empty_values_fall_through(tmp_path: Path) -> None:
    c = make(tmp_path, secrets={"K": ""}, settings={"K": ""})
    assert character_setting(c, "K", {"K": "env"}) == "env"
    assert character_setting(c, "K", {"K": ""}) is None


def test_scalar_settings_become_strings_and_objects_are_skipped(tmp_path: Path) -> None:
    c = make(tmp_path, settings={"flag": True, "n": 3, "voice": {"model": "x"}})
    assert character_setting(c, "flag", {}) == "true"
    assert character_setting(c, "n", {}) == "3"
    assert character_setting(c, "voice", {}) is None


def test_a_list_of_scalars_in_settings_reads_as_a_json_array_and_others_fall_through(tmp_path: Path) -> None:
    c = make(tmp_path, settings={"ids": ["-100123", -100456], "empty": [], "mixed": ["a", {"b": 1}], "flags": [True]})
    assert json.loads(character_setting(c, "ids", {}) or "") == ["-100123", -100456]
    assert character_setting(c, "empty", {"empty": "env"}) == "env"
    assert character_setting(c, "mixed", {}) is None and character_setting(c, "flags", {}) is None


def test_two_characters_get_their_own_tokens(tmp_path: Path) -> None:
    env = {"DISCORD_API_TOKEN": "shared"}
    a = make(tmp_path, settings={"secrets": {"DISCORD_API_TOKEN": "a-token"}})
    b = make(tmp_path)
    assert character_setting(a, "DISCORD_API_TOKEN", env) == "a-token"
    assert character_setting(b, "DISCORD_API_TOKEN", env) == "shared"


def test_dotenv_is_read_and_the_process_environment_wins(tmp_path: Path) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text("A=from-file\nB=from-file\n")
    assert load_environ(dotenv, base={"B": "from-process"}) == {"A": "from-file", "B": "from-process"}
    assert load_environ(tmp_path / "none", base={"B": "p"}) == {"B": "p"}


def test_daemon_settings_defaults_and_env(monkeypatch) -> None:
    assert DaemonSettings().database == Path("data/troupe.db")
    monkeypatch.setenv("TROUPE_DATA_DIR", "/var/lib/troupe")
    assert DaemonSettings().database == Path("/var/lib/troupe/troupe.db")
    monkeypatch.setenv("TROUPE_DB_PATH", "/tmp/x.db")
    assert DaemonSettings().database == Path("/tmp/x.db")


def test_setting_reader_reads_flags_numbers_and_id_lists() -> None:
    from bot.config.settings import SettingReader
    from bot.kernel.errors import ConfigError

    values = {
        "ON": " yes ",
        "OFF": "0",
        "BAD": "maybe",
        "IDS": "123, 456,,789",
        "JSON": '[1, "-100200"]',
        "WORDS": "general, 42",
        "BROKEN": "[1, 2",
        "N": "3",
        "BLANK": "  ",
    }
    read = SettingReader(values.get, "Ada")
    assert read.flag("ON") is True and read.flag("OFF") is False and read.flag("MISSING", True) is True
    assert read.flag("BLANK") is False and read.optional("BLANK") is None
    with pytest.raises(ConfigError, match="Ada: BAD must be true or false, not 'maybe'"):
        read.flag("BAD")
    assert read.id_list("IDS") == ["123", "456", "789"] and read.id_list("JSON") == ["1", "-100200"]
    assert read.id_list("MISSING") is None
    with pytest.raises(ConfigError, match="WORDS has entries that are not ids: 'general'"):
        read.id_list("WORDS")
    with pytest.raises(ConfigError, match="BROKEN is not a valid JSON array"):
        read.id_list("BROKEN")
    assert read.count("N", 1) == 3 and read.positive_float("MISSING", 2.5) == 2.5


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        (
            "TROUPE_LOG_LEVEL",
            "LOUD",
            "TROUPE_LOG_LEVEL is 'LOUD': must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL",
        ),
        ("TROUPE_HEALTH_PORT", "notaport", "TROUPE_HEALTH_PORT is 'notaport': input should be a valid integer"),
        ("TROUPE_HEALTH_PORT", "70000", "TROUPE_HEALTH_PORT is '70000': input should be less than or equal to 65535"),
        ("TROUPE_STOP_TIMEOUT_S", "-5", "TROUPE_STOP_TIMEOUT_S is '-5': input should be greater than 0"),
        ("TROUPE_STOP_TIMEOUT_S", "inf", "TROUPE_STOP_TIMEOUT_S is 'inf': input should be a finite number"),
        ("TROUPE_RECONNECT_BASE_S", "nan", "TROUPE_RECONNECT_BASE_S is 'nan': input should be a finite number"),
        ("TROUPE_HEALTH_PORT", "9" * 5000, "TROUPE_HEALTH_PORT is '999999999999999999999999999999'… (5000 characters)"),
    ],
)
def test_a_bad_daemon_setting_is_a_config_error_naming_the_variable(
    monkeypatch, tmp_path: Path, variable: str, value: str, expected: str
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError, match=re.escape(expected)):
        DaemonSettings()


@pytest.mark.parametrize(
    "variable", ["TROUPE_DATA_DIR", "TROUPE_DB_PATH", "TROUPE_CONTROL_SOCKET", "TROUPE_HEALTH_HOST"]
)
def test_a_nul_byte_in_a_dotenv_setting_is_a_config_error(monkeypatch, tmp_path: Path, variable: str) -> None:
    monkeypatch.chdir(tmp_path)
    Path(".env").write_bytes(f"{variable}=data\x00dir\n".encode())
    with pytest.raises(ConfigError, match=f"{variable} is 'data\\\\x00dir': contains a NUL byte"):
        DaemonSettings()


def test_log_level_is_case_insensitive(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TROUPE_LOG_LEVEL", " debug ")
    assert DaemonSettings().log_level == "DEBUG"


def test_a_dotenv_that_is_not_utf8_is_a_config_error_naming_the_file(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    Path(".env").write_bytes(b"A=ok\nB=\xff\xfe\n")
    message = r"^\.env is not UTF-8 text \(bad byte at offset 7\); save it as UTF-8$"
    with pytest.raises(ConfigError, match=message):
        load_environ()
    with pytest.raises(ConfigError, match=message):
        DaemonSettings()


def test_a_dotenv_that_is_a_named_pipe_is_refused_without_waiting(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    os.mkfifo(".env")
    with pytest.raises(ConfigError, match=r"^\.env is a named pipe \(FIFO\), not a regular file"):
        load_environ()

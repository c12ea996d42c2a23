"""SHOULD_RESPOND_BYPASS_TYPES and SHOULD_RESPOND_BYPASS_SOURCES: elizaOS's forms, and names checked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import plugins.core
from bot.config.character import Character, load_character
from bot.config.settings import SettingsView
from bot.kernel.errors import ConfigError
from bot.kernel.types import ChannelType
from plugins.core._bypass import Bypass, read_bypass

PLATFORMS = ("console", "discord", "telegram", "web")


def character(tmp_path: Path, **settings: Any) -> Character:
    path = tmp_path / "ada.json"
    path.write_text(json.dumps({"name": "Ada", "bio": "A test character.", "settings": settings}))
    return load_character(path, environ={}).raise_for_problems()


def read(tmp_path: Path, environ: dict[str, str] | None = None, **settings: Any) -> Bypass:
    view = SettingsView(character(tmp_path, **settings), environ or {})
    return read_bypass(view.get_setting, view.character, PLATFORMS)


@pytest.mark.parametrize(
    "written",
    [
        "group, thread",
        '["GROUP", "thread"]',  # elizaOS's documented form: its quotes are not part of the names
        "[group,Thread]",  # elizaOS's bracketed list
        ["group", "THREAD"],  # a list in the character file
    ],
)
def test_room_types_in_every_form_elizaos_takes_in_any_case(tmp_path: Path, written: Any) -> None:
    bypass = read(tmp_path, SHOULD_RESPOND_BYPASS_TYPES=written)
    assert bypass.types == {ChannelType.GROUP, ChannelType.THREAD} and bypass.sources == frozenset()


def test_sources_are_platforms_and_elizaos_chat_names_mean_the_consoles(tmp_path: Path) -> None:
    assert read(tmp_path, {"SHOULD_RESPOND_BYPASS_SOURCES": "Telegram"}).sources == {"telegram"}
    documented = read(tmp_path, SHOULD_RESPOND_BYPASS_SOURCES='["client_chat", "api"]')
    assert documented.sources == {"console", "web"}
    assert read(tmp_path) == Bypass()  # unset: nothing beyond the built-in rules
    assert read(tmp_path, SHOULD_RESPOND_BYPASS_TYPES=" ", SHOULD_RESPOND_BYPASS_SOURCES="[]") == Bypass()


def test_a_name_that_does_not_exist_is_an_error_naming_it_and_the_valid_ones(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as types:
        read(tmp_path, SHOULD_RESPOND_BYPASS_TYPES=["dm", "support", "ticket"])  # the seeds' example
    assert str(types.value) == (
        "Ada: SHOULD_RESPOND_BYPASS_TYPES names 'support', 'ticket', which are not room types; "
        "valid: API, DM, FEED, FORUM, GROUP, SELF, THREAD, VOICE_DM, VOICE_GROUP, WORLD"
    )
    with pytest.raises(ConfigError) as sources:
        read(tmp_path, SHOULD_RESPOND_BYPASS_SOURCES="discord, slack")
    assert str(sources.value) == (
        "Ada: SHOULD_RESPOND_BYPASS_SOURCES names 'slack', which is not a platform; "
        "valid: console, discord, telegram, web, client_chat, api"
    )
    with pytest.raises(ConfigError, match=r"lists 3, which is not a name"):
        read(tmp_path, SHOULD_RESPOND_BYPASS_SOURCES=["discord", 3])


def test_troupe_check_reports_a_bad_name(tmp_path: Path) -> None:
    good = SettingsView(character(tmp_path), {"SHOULD_RESPOND_BYPASS_TYPES": "group"})
    plugins.core.check(good)
    bad = SettingsView(character(tmp_path), {"SHOULD_RESPOND_BYPASS_SOURCES": "slack"})
    with pytest.raises(ConfigError, match=r"'slack', which is not a platform; valid: console, discord"):
        plugins.core.check(bad)

"""Reading a character's Telegram settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.config.character import Character, load_character
from bot.config.settings import SettingsView
from bot.kernel.errors import ConfigError
from platforms import telegram
from platforms.telegram._config import read_config


def config(**values):
    return read_config({"TELEGRAM_BOT_TOKEN": "123:secret-value", **values}.get, "Ada")


def test_defaults_and_the_token_stays_secret() -> None:
    c = config()
    assert c.api_root == "https://api.telegram.org" and c.base_url == "https://api.telegram.org/bot"
    assert c.base_file_url == "https://api.telegram.org/file/bot" and c.allowed_chats is None
    assert c.allow_direct_messages is True and "secret-value" not in repr(c)


def test_missing_or_malformed_token() -> None:
    with pytest.raises(ConfigError, match="Ada: TELEGRAM_BOT_TOKEN is not set; put the token @BotFather gave you"):
        read_config(lambda _name: None, "Ada")
    with pytest.raises(ConfigError, match="does not look like a bot token"):
        config(TELEGRAM_BOT_TOKEN="just-a-word")


def test_allowed_chats_as_json_or_a_comma_list_and_anything_else_is_an_error() -> None:
    assert config(TELEGRAM_ALLOWED_CHATS='["123456789", -987654321]').allowed_chats == {"123456789", "-987654321"}
    assert config(TELEGRAM_ALLOWED_CHATS="123, -1001234, @newsy_channel").allowed_chats == {
        "123",
        "-1001234",
        "@newsy_channel",
    }
    with pytest.raises(ConfigError, match="TELEGRAM_ALLOWED_CHATS is not a valid JSON array"):
        config(TELEGRAM_ALLOWED_CHATS='["123",')
    with pytest.raises(ConfigError, match="TELEGRAM_ALLOWED_CHATS has entries that are not ids: 'general'"):
        config(TELEGRAM_ALLOWED_CHATS="general")


def test_api_root_for_a_self_hosted_bot_api_server() -> None:
    c = config(TELEGRAM_API_ROOT="http://127.0.0.1:8081/")
    assert c.base_url == "http://127.0.0.1:8081/bot" and c.base_file_url == "http://127.0.0.1:8081/file/bot"
    with pytest.raises(ConfigError, match="TELEGRAM_API_ROOT must be an http"):
        config(TELEGRAM_API_ROOT="localhost:8081")


def test_voice_replies_auto_by_default_always_or_never_and_nothing_else() -> None:
    assert config().voice_replies == "auto"
    assert config(TELEGRAM_VOICE_REPLIES=" Always ").voice_replies == "always"
    assert config(TELEGRAM_VOICE_REPLIES="never").voice_replies == "never"
    with pytest.raises(
        ConfigError,
        match=r"Ada: TELEGRAM_VOICE_REPLIES must be auto \(answer a voice message with "
        r"a voice note too\), always or never, not 'sometimes'",
    ):
        config(TELEGRAM_VOICE_REPLIES="sometimes")


def test_send_deadline_is_a_minute_by_default_and_checked() -> None:
    assert config().send_deadline == 60.0
    assert config(TELEGRAM_SEND_DEADLINE_S="90").send_deadline == 90.0
    with pytest.raises(
        ConfigError,
        match=r"Ada: TELEGRAM_SEND_DEADLINE_S must be a number from 1 to 3600 "
        r"\(such as 60\), not 'soon'",
    ):
        config(TELEGRAM_SEND_DEADLINE_S="soon")


def test_channel_posts_are_off_unless_switched_on() -> None:
    assert config().channel_posts is False
    assert config(TELEGRAM_CHANNEL_POSTS="true").channel_posts is True
    with pytest.raises(ConfigError, match="TELEGRAM_CHANNEL_POSTS must be true or false, not .sometimes."):
        config(TELEGRAM_CHANNEL_POSTS="sometimes")


def test_allowed_groups_only_with_the_option_on_ids_as_numbers_or_strings() -> None:
    assert config(allowedGroupIds='["-1001234567890"]').allowed_groups is None  # the option is off
    on = config(shouldOnlyJoinInAllowedGroups="true", allowedGroupIds='["-1001234567890", -987654321]')
    assert on.allowed_groups == {"-1001234567890", "-987654321"}
    assert config(shouldOnlyJoinInAllowedGroups="true", allowedGroupIds="-100111, -222").allowed_groups == {
        "-100111",
        "-222",
    }
    assert config(shouldOnlyJoinInAllowedGroups="true").allowed_groups == frozenset()  # no group at all


def test_a_bad_allowed_group_is_named_even_with_the_option_off() -> None:
    with pytest.raises(ConfigError, match="Ada: allowedGroupIds has entries that are not ids: 'writers'"):
        config(allowedGroupIds='["-100123", "writers"]')
    with pytest.raises(ConfigError, match=r"allowedGroupIds has ids that are not groups' \('123456'\)"):
        config(shouldOnlyJoinInAllowedGroups="true", allowedGroupIds="[123456]")
    with pytest.raises(ConfigError, match="allowedGroupIds is not a valid JSON array"):
        config(allowedGroupIds='["-100123"')
    with pytest.raises(ConfigError, match="shouldOnlyJoinInAllowedGroups must be true or false, not 'only'"):
        config(shouldOnlyJoinInAllowedGroups="only")


def test_troupe_check_reads_the_groups_as_a_character_file_writes_them(tmp_path: Path) -> None:
    def character(settings: dict[str, object]) -> Character:
        path = tmp_path / "ada.json"
        secrets = {"secrets": {"TELEGRAM_BOT_TOKEN": "123:secret-value"}}
        path.write_text(json.dumps({"name": "Ada", "bio": "A test character.", "settings": {**settings, **secrets}}))
        return load_character(path, environ={}).raise_for_problems()

    good = character({"shouldOnlyJoinInAllowedGroups": True, "allowedGroupIds": ["-1001234567890", -100987]})
    telegram.check(SettingsView(good, {}))
    assert read_config(SettingsView(good, {}).get_setting, "Ada").allowed_groups == frozenset(
        {"-1001234567890", "-100987"}
    )
    bad = character({"shouldOnlyJoinInAllowedGroups": True, "allowedGroupIds": [-100123, "@writers"]})
    with pytest.raises(ConfigError, match="Ada: allowedGroupIds has entries that are not ids: '@writers'"):
        telegram.check(SettingsView(bad, {}))

"""Reading a character's Discord settings."""

from __future__ import annotations

import pytest

from bot.kernel.errors import ConfigError
from platforms.discord._config import read_config
from platforms.discord._rest import reset_api_base, use_api_base


def config(section=None, **values):
    return read_config({"DISCORD_API_TOKEN": "MTIz.secret-value", **values}.get, "Ada", section)


def test_defaults_and_token_is_secret() -> None:
    c = config()
    assert c.token.get_secret_value() == "MTIz.secret-value" and "secret-value" not in repr(c)
    assert (c.channel_ids, c.ignore_bot_messages, c.ignore_direct_messages, c.respond_only_to_mentions, c.api_base) == (
        None,
        False,
        False,
        False,
        None,
    )


def test_missing_token_says_where_to_put_it() -> None:
    with pytest.raises(ConfigError, match="Ada: DISCORD_API_TOKEN is not set; put the bot's token in"):
        read_config({}.get, "Ada")


def test_flags_from_the_discord_object_win_over_flat_settings() -> None:
    c = config(
        {"shouldIgnoreBotMessages": True, "shouldRespondOnlyToMentions": "false"},
        DISCORD_SHOULD_IGNORE_BOT_MESSAGES="false",
        DISCORD_SHOULD_RESPOND_ONLY_TO_MENTIONS="true",
        DISCORD_SHOULD_IGNORE_DIRECT_MESSAGES="yes",
    )
    assert c.ignore_bot_messages is True and c.respond_only_to_mentions is False and c.ignore_direct_messages is True
    with pytest.raises(ConfigError, match="settings.discord.shouldIgnoreBotMessages must be true or false"):
        config({"shouldIgnoreBotMessages": "sometimes"})
    with pytest.raises(ConfigError, match="DISCORD_SHOULD_IGNORE_DIRECT_MESSAGES must be true or false"):
        config(DISCORD_SHOULD_IGNORE_DIRECT_MESSAGES="maybe")


def test_channel_ids() -> None:
    assert config(CHANNEL_IDS="123, 456,789").channel_ids == {"123", "456", "789"}
    assert config(CHANNEL_IDS='["123"]').channel_ids == {"123"}
    assert config({"allowedChannelIds": ["123", "999"]}, CHANNEL_IDS="123,456").channel_ids == {"123"}
    assert config({"allowedChannelIds": [555]}).channel_ids == {"555"}
    with pytest.raises(ConfigError, match="CHANNEL_IDS has entries that are not ids: '#general'"):
        config(CHANNEL_IDS="#general")
    with pytest.raises(ConfigError, match="allowedChannelIds must be a list of channel ids"):
        config({"allowedChannelIds": "123"})


def test_api_base() -> None:
    assert config(DISCORD_API_BASE="https://chat.example/api/").api_base == "https://chat.example/api/v10"
    assert config(DISCORD_API_BASE="http://127.0.0.1:3001/api/v9").api_base == "http://127.0.0.1:3001/api/v9"
    with pytest.raises(ConfigError, match="DISCORD_API_BASE must be an http"):
        config(DISCORD_API_BASE="chat.example")


def test_one_process_talks_to_one_discord_server() -> None:
    from discord.http import Route

    try:
        use_api_base("http://127.0.0.1:1/api/v10", "Ada")
        use_api_base("http://127.0.0.1:1/api/v10", "Wren")
        assert Route.BASE == "http://127.0.0.1:1/api/v10"
        with pytest.raises(ConfigError, match="Brann: DISCORD_API_BASE is https://discord.com/api/v10, but another"):
            use_api_base(None, "Brann")
    finally:
        reset_api_base()
    assert Route.BASE == "https://discord.com/api/v10"


def test_catch_up_limits_after_a_lost_session() -> None:
    default = config().catchup
    assert (default.window_s, default.max_messages, default.max_channels, default.enabled) == (600.0, 50, 20, True)
    c = config(DISCORD_CATCHUP_WINDOW_S="120", DISCORD_CATCHUP_MAX_MESSAGES="100", DISCORD_CATCHUP_MAX_CHANNELS="5")
    assert (c.catchup.window_s, c.catchup.max_messages, c.catchup.max_channels) == (120.0, 100, 5)
    assert config(DISCORD_CATCHUP_WINDOW_S="0").catchup.enabled is False
    with pytest.raises(
        ConfigError, match="Ada: DISCORD_CATCHUP_MAX_MESSAGES must be a whole number from 0 to 100, not '500'"
    ):
        config(DISCORD_CATCHUP_MAX_MESSAGES="500")
    with pytest.raises(ConfigError, match="Ada: DISCORD_CATCHUP_WINDOW_S must be a number from 0 to 86400"):
        config(DISCORD_CATCHUP_WINDOW_S="ten minutes")


def test_send_deadline_is_a_minute_by_default_and_checked() -> None:
    assert config().send_deadline == 60.0
    assert config(DISCORD_SEND_DEADLINE_S="90").send_deadline == 90.0
    with pytest.raises(
        ConfigError,
        match=r"DISCORD_SEND_DEADLINE_S must be a number from 1 to 3600 \(such as 60\), "
        r"not '0'",
    ):
        config(DISCORD_SEND_DEADLINE_S="0")


def test_leaving_an_empty_voice_channel_takes_a_minute_by_default_zero_never_and_is_checked() -> None:
    assert config().voice_alone_s == 60.0
    assert config(DISCORD_VOICE_ALONE_S="0").voice_alone_s == 0.0
    assert config(DISCORD_VOICE_ALONE_S="2.5").voice_alone_s == 2.5
    with pytest.raises(
        ConfigError, match=r"DISCORD_VOICE_ALONE_S must be a number from 0 to 86400 \(such as 60\), not 'soon'"
    ):
        config(DISCORD_VOICE_ALONE_S="soon")


def test_joining_by_itself_needs_its_channel_for_stay_and_either_setting_switches_voice_on() -> None:
    c = config(DISCORD_VOICE_CHANNEL_ID="123")
    assert (c.voice_enabled, c.voice_channel_id, c.voice_stay, c.voice_auto_join) == (True, "123", False, False)
    assert config(DISCORD_VOICE_CHANNEL_ID="123", DISCORD_VOICE_STAY="true").voice_stay is True
    c = config(DISCORD_VOICE_AUTO_JOIN="yes")
    assert (c.voice_enabled, c.voice_auto_join) == (True, True)
    with pytest.raises(ConfigError, match="Ada: DISCORD_VOICE_STAY is set but DISCORD_VOICE_CHANNEL_ID is not"):
        config(DISCORD_VOICE_STAY="true")
    with pytest.raises(ConfigError, match="DISCORD_VOICE_AUTO_JOIN must be true or false, not 'always'"):
        config(DISCORD_VOICE_AUTO_JOIN="always")


def test_the_barge_in_threshold_is_voice_barge_in_db_or_voice_activity_threshold_as_an_amplitude() -> None:
    assert config().barge_in_db == -40.0
    assert config(VOICE_BARGE_IN_DB="-30").barge_in_db == -30.0
    assert config(VOICE_ACTIVITY_THRESHOLD="0.1").barge_in_db == pytest.approx(-20.0)
    assert config(VOICE_ACTIVITY_THRESHOLD="0.01").barge_in_db == pytest.approx(-40.0)
    assert config(VOICE_ACTIVITY_THRESHOLD="1").barge_in_db == 0.0
    for bad in ("loud", "0", "-0.2", "1.5", "nan", "inf"):
        with pytest.raises(
            ConfigError,
            match=rf"Ada: VOICE_ACTIVITY_THRESHOLD must be a number above 0 and at most 1 .*, not '{bad}'",
        ):
            config(VOICE_ACTIVITY_THRESHOLD=bad)
    with pytest.raises(
        ConfigError, match="Ada: VOICE_BARGE_IN_DB and VOICE_ACTIVITY_THRESHOLD are both set; .* keep one"
    ):
        config(VOICE_BARGE_IN_DB="-30", VOICE_ACTIVITY_THRESHOLD="0.05")
    with pytest.raises(ConfigError, match=r"VOICE_BARGE_IN_DB must be a number from -90 to 0 \(such as -40\)"):
        config(VOICE_BARGE_IN_DB="5")

"""One character's Discord settings, read and checked before anything connects.

Behaviour flags come from the character's ``settings.discord`` object first (elizaOS's
``shouldIgnoreBotMessages`` …), then the flat ``DISCORD_*`` settings, then the environment.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from pydantic import SecretStr

from bot.errors import ConfigError
from bot.settings import SettingReader

__all__ = ["DiscordConfig", "read_config"]

_FLAGS = {
    "ignore_bot_messages": ("shouldIgnoreBotMessages", "DISCORD_SHOULD_IGNORE_BOT_MESSAGES"),
    "ignore_direct_messages": ("shouldIgnoreDirectMessages", "DISCORD_SHOULD_IGNORE_DIRECT_MESSAGES"),
    "respond_only_to_mentions": ("shouldRespondOnlyToMentions", "DISCORD_SHOULD_RESPOND_ONLY_TO_MENTIONS"),
}


@dataclass(frozen=True, slots=True)
class DiscordConfig:
    token: SecretStr
    application_id: str | None = None
    channel_ids: frozenset[str] | None = None
    """Where the bot listens (threads follow their parent channel); ``None`` means everywhere."""
    ignore_bot_messages: bool = False
    ignore_direct_messages: bool = False
    respond_only_to_mentions: bool = False
    api_base: str | None = None
    """A Discord-compatible REST base URL (``…/api/v10``); ``None`` for discord.com."""
    guild_ready_timeout: float = 2.0
    """How long discord.py waits for more servers before it calls the bot ready."""


def _object_flag(agent: str, section: Mapping[str, Any], key: str) -> bool | None:
    if key not in section:
        return None
    value = section[key]
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off", ""):
        return False
    raise ConfigError(f"{agent}: settings.discord.{key} must be true or false, not {value!r}")


def _api_base(agent: str, raw: str | None) -> str | None:
    if raw is None:
        return None
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"{agent}: DISCORD_API_BASE must be an http(s) URL such as https://chat.example/api/v10, "
                          f"not {raw!r}")
    base = raw.rstrip("/")
    return base if re.search(r"/v\d+$", base) else f"{base}/v10"


def read_config(get_setting: Any, agent: str, discord_section: Any = None) -> DiscordConfig:
    """The agent's Discord configuration.

    Raises:
        ConfigError: the token is missing, or a setting has the wrong form (the message names it).
    """
    read = SettingReader(get_setting, agent)
    token = read.optional("DISCORD_API_TOKEN")
    if token is None:
        raise ConfigError(f"{agent}: DISCORD_API_TOKEN is not set; put the bot's token in the character's "
                          "settings.secrets (or an env:/file:/credential: reference to it)")
    section = discord_section if isinstance(discord_section, Mapping) else {}
    flags = {}
    for field, (key, setting) in _FLAGS.items():
        from_object = _object_flag(agent, section, key)
        flags[field] = from_object if from_object is not None else read.flag(setting)

    channel_ids = read.id_list("CHANNEL_IDS")
    allowed = section.get("allowedChannelIds")
    if allowed is not None:
        if not isinstance(allowed, list) or not all(re.fullmatch(r"\d+", str(i).strip()) for i in allowed):
            raise ConfigError(f"{agent}: settings.discord.allowedChannelIds must be a list of channel ids")
        listed = {str(i).strip() for i in allowed}
        # Both lists given: upstream applies them one after the other, so only their overlap is heard.
        channel_ids = sorted(listed & set(channel_ids)) if channel_ids is not None else sorted(listed)
    return DiscordConfig(
        token=SecretStr(token),
        application_id=read.optional("DISCORD_APPLICATION_ID"),
        channel_ids=frozenset(channel_ids) if channel_ids is not None else None,
        api_base=_api_base(agent, read.optional("DISCORD_API_BASE")),
        guild_ready_timeout=read.positive_float("DISCORD_GUILD_READY_TIMEOUT_S", 2.0),
        **flags,
    )

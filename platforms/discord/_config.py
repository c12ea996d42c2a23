"""One character's Discord settings, read and checked before anything connects.

Behaviour flags come from the character's ``settings.discord`` object first (elizaOS's
``shouldIgnoreBotMessages`` …), then the flat ``DISCORD_*`` settings, then the environment.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import SecretStr

from bot.sdk import ConfigError, SettingReader
from bot.sdk.media import VadConfig

from ._catchup import CatchUpLimits
from ._outbound import DEFAULT_DEADLINE_S

__all__ = ["DiscordConfig", "read_config"]

_FLAGS = {
    "ignore_bot_messages": ("shouldIgnoreBotMessages", "DISCORD_SHOULD_IGNORE_BOT_MESSAGES"),
    "ignore_direct_messages": ("shouldIgnoreDirectMessages", "DISCORD_SHOULD_IGNORE_DIRECT_MESSAGES"),
    "respond_only_to_mentions": ("shouldRespondOnlyToMentions", "DISCORD_SHOULD_RESPOND_ONLY_TO_MENTIONS"),
}

DEFAULT_VOICE_ALONE_S = 60.0
DEFAULT_BARGE_IN_DB = -40.0


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
    voice_enabled: bool = False
    """Joining voice channels (by action, ``/join``, DISCORD_VOICE_CHANNEL_ID or
    DISCORD_VOICE_AUTO_JOIN)."""
    voice_channel_id: str | None = None
    """The character's own voice channel: joined when a person enters it (or is there at start)."""
    voice_stay: bool = False
    """``DISCORD_VOICE_STAY``: join the DISCORD_VOICE_CHANNEL_ID channel at start and wait there,
    people or not."""
    voice_auto_join: bool = False
    """``DISCORD_VOICE_AUTO_JOIN``: go, unasked, into whichever voice channel of its servers a
    person enters (while it is in none there)."""
    voice_listen: bool = True
    """Listen to people in voice channels (off: speak replies to text only)."""
    voice_alone_s: float = DEFAULT_VOICE_ALONE_S
    """``DISCORD_VOICE_ALONE_S``: leave a voice channel with no people in it (bots do not count)
    after this long; 0 never leaves. With DISCORD_VOICE_STAY, its own channel is stayed in."""
    vad: VadConfig = field(default_factory=VadConfig)
    barge_in_db: float = DEFAULT_BARGE_IN_DB
    """How loud (dBFS) someone must speak over the character, for 200 ms, to stop it
    (``VOICE_BARGE_IN_DB``, or ``VOICE_ACTIVITY_THRESHOLD`` as an amplitude)."""
    ca_file: str | None = None
    """Extra CA certificates to trust (a self-hosted Discord-compatible server with its own CA)."""
    catchup: CatchUpLimits = field(default_factory=CatchUpLimits)
    """What to read back after the gateway session was lost for good (see ``_catchup.py``)."""
    send_deadline: float = DEFAULT_DEADLINE_S
    """``DISCORD_SEND_DEADLINE_S``: how long one message may wait for rate limits and network
    retries before it is given up (and the loss logged)."""


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
    raise ConfigError(f"settings.discord.{key} must be true or false, not {value!r}", agent=agent)


def _api_base(agent: str, raw: str | None) -> str | None:
    if raw is None:
        return None
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(
            f"DISCORD_API_BASE must be an http(s) URL such as https://chat.example/api/v10, not {raw!r}", agent=agent
        )
    base = raw.rstrip("/")
    return base if re.search(r"/v\d+$", base) else f"{base}/v10"


def _barge_in_db(agent: str, read: SettingReader) -> float:
    """VOICE_BARGE_IN_DB (dBFS), or elizaOS's VOICE_ACTIVITY_THRESHOLD: the same threshold as an
    amplitude from 0 to 1 (full scale), in dB ``20·log10(x)``. Both set is an error rather than a
    silent choice: they say the same thing and could disagree."""
    threshold = read.optional("VOICE_ACTIVITY_THRESHOLD")
    if threshold is None:
        return read.number("VOICE_BARGE_IN_DB", DEFAULT_BARGE_IN_DB, -90.0, 0.0)
    if read.optional("VOICE_BARGE_IN_DB") is not None:
        raise ConfigError(
            "VOICE_BARGE_IN_DB and VOICE_ACTIVITY_THRESHOLD are both set; they are the same threshold "
            "(how loud someone must talk over the character to stop it), in dBFS and as an amplitude: "
            "keep one",
            agent=agent,
        )
    try:
        amplitude = float(threshold)
    except ValueError:
        amplitude = math.nan
    if not 0 < amplitude <= 1:  # NaN fails too
        raise ConfigError(
            f"VOICE_ACTIVITY_THRESHOLD must be a number above 0 and at most 1 (an amplitude, "
            f"such as 0.05; 1 is full scale), not {threshold!r}",
            agent=agent,
        )
    return 20 * math.log10(amplitude)


def _check_voice_libraries(agent: str) -> None:
    """Voice needs PyNaCl (transport encryption) and davey (DAVE): say so at start, not at first use."""
    missing = []
    for module, package in (("nacl.secret", "PyNaCl"), ("davey", "davey")):
        try:
            __import__(module)
        except ImportError:
            missing.append(package)
    if missing:
        raise ConfigError(
            f"Discord voice needs {' and '.join(missing)}; install troupe again "
            "(pip install -e .) — they come with discord.py[voice]",
            agent=agent,
        )


def read_config(get_setting: Any, agent: str, discord_section: Any = None) -> DiscordConfig:
    """The agent's Discord configuration.

    Raises:
        ConfigError: the token is missing, or a setting has the wrong form (the message names it).
    """
    read = SettingReader(get_setting, agent)
    token = read.optional("DISCORD_API_TOKEN")
    if token is None:
        raise ConfigError(
            "DISCORD_API_TOKEN is not set; put the bot's token in the character's "
            "settings.secrets (or an env:/file:/credential: reference to it)",
            agent=agent,
        )
    section = discord_section if isinstance(discord_section, Mapping) else {}
    flags = {}
    for name, (key, setting) in _FLAGS.items():
        from_object = _object_flag(agent, section, key)
        flags[name] = from_object if from_object is not None else read.flag(setting)

    channel_ids = read.id_list("CHANNEL_IDS")
    allowed = section.get("allowedChannelIds")
    if allowed is not None:
        if not isinstance(allowed, list) or not all(re.fullmatch(r"\d+", str(i).strip()) for i in allowed):
            raise ConfigError("settings.discord.allowedChannelIds must be a list of channel ids", agent=agent)
        listed = {str(i).strip() for i in allowed}
        # Both lists given: upstream applies them one after the other, so only their overlap is heard.
        channel_ids = sorted(listed & set(channel_ids)) if channel_ids is not None else sorted(listed)
    voice_channel = read.optional("DISCORD_VOICE_CHANNEL_ID")
    if voice_channel is not None and not re.fullmatch(r"\d+", voice_channel.strip()):
        raise ConfigError(
            f"DISCORD_VOICE_CHANNEL_ID must be a channel id (digits; right-click the "
            f"channel → Copy Channel ID), not {voice_channel!r}",
            agent=agent,
        )
    voice_stay = read.flag("DISCORD_VOICE_STAY")
    if voice_stay and voice_channel is None:
        raise ConfigError(
            "DISCORD_VOICE_STAY is set but DISCORD_VOICE_CHANNEL_ID is not; give the id of the voice "
            "channel to wait in",
            agent=agent,
        )
    voice_auto_join = read.flag("DISCORD_VOICE_AUTO_JOIN")
    voice_enabled = read.flag("DISCORD_VOICE_ENABLED") or voice_channel is not None or voice_auto_join
    vad = VadConfig(
        silence_s=read.positive_float("VOICE_SILENCE_S", VadConfig.silence_s),
        min_speech_s=read.positive_float("VOICE_MIN_SPEECH_S", VadConfig.min_speech_s),
        max_utterance_s=read.positive_float("VOICE_MAX_UTTERANCE_S", VadConfig.max_utterance_s),
    )
    if vad.min_speech_s >= vad.max_utterance_s:
        raise ConfigError(
            f"VOICE_MIN_SPEECH_S ({vad.min_speech_s}) must be less than VOICE_MAX_UTTERANCE_S ({vad.max_utterance_s})",
            agent=agent,
        )
    ca_file = read.optional("DISCORD_CA_FILE")
    if ca_file is not None and not Path(ca_file).is_file():
        raise ConfigError(f"DISCORD_CA_FILE {ca_file!r} is not a file; give the path of a PEM bundle", agent=agent)
    if voice_enabled:
        _check_voice_libraries(agent)
    return DiscordConfig(
        voice_enabled=voice_enabled,
        voice_channel_id=voice_channel.strip() if voice_channel else None,
        voice_stay=voice_stay,
        voice_auto_join=voice_auto_join,
        voice_listen=read.flag("DISCORD_VOICE_LISTEN", True),
        voice_alone_s=read.number("DISCORD_VOICE_ALONE_S", DEFAULT_VOICE_ALONE_S, 0, 86_400),
        vad=vad,
        barge_in_db=_barge_in_db(agent, read),
        ca_file=ca_file,
        token=SecretStr(token),
        application_id=read.optional("DISCORD_APPLICATION_ID"),
        channel_ids=frozenset(channel_ids) if channel_ids is not None else None,
        api_base=_api_base(agent, read.optional("DISCORD_API_BASE")),
        guild_ready_timeout=read.positive_float("DISCORD_GUILD_READY_TIMEOUT_S", 2.0),
        catchup=CatchUpLimits(
            window_s=read.number("DISCORD_CATCHUP_WINDOW_S", CatchUpLimits.window_s, 0, 86_400),
            # One history request per channel: Discord gives at most 100 messages per request.
            max_messages=read.whole("DISCORD_CATCHUP_MAX_MESSAGES", CatchUpLimits.max_messages, 0, 100),
            max_channels=read.whole("DISCORD_CATCHUP_MAX_CHANNELS", CatchUpLimits.max_channels, 0, 200),
        ),
        send_deadline=read.number("DISCORD_SEND_DEADLINE_S", DEFAULT_DEADLINE_S, 1, 3600),
        **flags,
    )

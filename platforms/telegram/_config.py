"""One character's Telegram settings, read and checked before anything connects."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from pydantic import SecretStr

from bot.sdk import ConfigError, SettingReader

from ._outbound import DEFAULT_DEADLINE_S

__all__ = ["TelegramConfig", "VOICE_REPLIES", "read_config"]

DEFAULT_API_ROOT = "https://api.telegram.org"
VOICE_REPLIES = ("auto", "always", "never")
"""``TELEGRAM_VOICE_REPLIES``: a voice note after the text of a reply to a spoken message
(``auto``); after every reply and every message SEND_MESSAGE delivers (``always``; the canned
``/start`` and ``/help`` answers stay text); or never."""


@dataclass(frozen=True, slots=True)
class TelegramConfig:
    token: SecretStr
    api_root: str = DEFAULT_API_ROOT
    allowed_chats: frozenset[str] | None = None
    """Chat ids (or ``@username``) the bot serves; ``None`` means every chat."""
    allow_direct_messages: bool = True
    poll_timeout: float = 30.0
    """Long-polling wait in seconds (how long one getUpdates may hang open)."""
    voice_replies: str = "auto"
    """When what the character sends is also spoken as a voice note: ``auto``, ``always`` or ``never``."""
    channel_posts: bool = False
    """``TELEGRAM_CHANNEL_POSTS``: posts in channels where the bot is an administrator are heard
    (and may be answered in the channel); off, they are not even fetched."""
    send_deadline: float = DEFAULT_DEADLINE_S
    """``TELEGRAM_SEND_DEADLINE_S``: how long one message may wait for flood control and network
    retries before it is given up (and the loss logged)."""
    allowed_groups: frozenset[str] | None = None
    """``shouldOnlyJoinInAllowedGroups`` on: the group ids (``allowedGroupIds``) the bot may stay
    in; it says why and leaves any other group. ``None``: every group."""

    @property
    def base_url(self) -> str:
        return f"{self.api_root}/bot"

    @property
    def base_file_url(self) -> str:
        return f"{self.api_root}/file/bot"


def _api_root(agent: str, raw: str | None) -> str:
    if raw is None:
        return DEFAULT_API_ROOT
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(
            f"TELEGRAM_API_ROOT must be an http(s) URL such as http://127.0.0.1:8081, not {raw!r}", agent=agent
        )
    return raw.rstrip("/")


def _voice_replies(agent: str, raw: str | None) -> str:
    if raw is None:
        return "auto"
    value = raw.strip().lower()
    if value not in VOICE_REPLIES:
        raise ConfigError(
            f"TELEGRAM_VOICE_REPLIES must be auto (answer a voice message with a voice note "
            f"too), always or never, not {raw!r}",
            agent=agent,
        )
    return value


def _allowed_groups(read: SettingReader) -> frozenset[str] | None:
    """``allowedGroupIds`` when ``shouldOnlyJoinInAllowedGroups`` is on (an empty set: no group),
    else ``None``; the ids are checked either way, so a mistake shows before the option is on."""
    ids = read.id_list("allowedGroupIds") or []
    people = [i for i in ids if not i.startswith("-")]
    if people:
        raise ConfigError(
            f"allowedGroupIds has ids that are not groups' ({', '.join(map(repr, people))}): a Telegram "
            "group's id is negative, such as -1001234567890 for a supergroup; the bot sees it in "
            "what it logs when added to the group",
            agent=read.agent,
        )
    return frozenset(ids) if read.flag("shouldOnlyJoinInAllowedGroups") else None


def read_config(get_setting: Callable[[str], str | None], agent: str) -> TelegramConfig:
    """The agent's Telegram configuration.

    Raises:
        ConfigError: no token, or a setting of the wrong form (the message names it and the fix).
    """
    read = SettingReader(get_setting, agent)
    token = read.optional("TELEGRAM_BOT_TOKEN")
    if token is None:
        raise ConfigError(
            "TELEGRAM_BOT_TOKEN is not set; put the token @BotFather gave you in the "
            "character's settings.secrets (or an env:/file:/credential: reference to it)",
            agent=agent,
        )
    if ":" not in token:
        raise ConfigError(
            "TELEGRAM_BOT_TOKEN does not look like a bot token (<digits>:<secret>); copy it again from @BotFather",
            agent=agent,
        )
    allowed = read.id_list("TELEGRAM_ALLOWED_CHATS", pattern=r"-?\d+|@\w{5,}")
    return TelegramConfig(
        token=SecretStr(token),
        api_root=_api_root(agent, read.optional("TELEGRAM_API_ROOT")),
        allowed_chats=frozenset(allowed) if allowed is not None else None,
        allow_direct_messages=read.flag("allowDirectMessages", True),
        poll_timeout=read.positive_float("TELEGRAM_POLL_TIMEOUT_S", 30.0),
        voice_replies=_voice_replies(agent, read.optional("TELEGRAM_VOICE_REPLIES")),
        channel_posts=read.flag("TELEGRAM_CHANNEL_POSTS"),
        send_deadline=read.number("TELEGRAM_SEND_DEADLINE_S", DEFAULT_DEADLINE_S, 1, 3600),
        allowed_groups=_allowed_groups(read),
    )

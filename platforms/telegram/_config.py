"""One character's Telegram settings, read and checked before anything connects."""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from pydantic import SecretStr

from bot.sdk import ConfigError, SettingReader

from ._outbound import DEFAULT_DEADLINE_S

__all__ = ["TelegramConfig", "VOICE_REPLIES", "Webhook", "read_config"]

DEFAULT_API_ROOT = "https://api.telegram.org"
VOICE_REPLIES = ("auto", "always", "never")
"""``TELEGRAM_VOICE_REPLIES``: a voice note after the text of a reply to a spoken message
(``auto``); after every reply and every message SEND_MESSAGE delivers (``always``; the canned
``/start`` and ``/help`` answers stay text); or never."""


@dataclass(frozen=True, slots=True)
class Webhook:
    """``TELEGRAM_WEBHOOK_URL``: Telegram pushes updates there instead of being polled."""

    url: str
    """What Telegram posts to (the reverse proxy's public address)."""
    secret: SecretStr
    """What Telegram sends in ``X-Telegram-Bot-Api-Secret-Token`` with each update."""

    @property
    def path(self) -> str:
        """The path the daemon answers on its webhook port (the proxy forwards it unchanged)."""
        return urlsplit(self.url).path


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
    webhook: Webhook | None = None
    """Updates by webhook; ``None``: long polling."""

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


_SECRET = re.compile(r"[A-Za-z0-9_-]{1,256}")  # what Telegram accepts as a secret token


def _webhook(read: SettingReader, token: str, api_root: str) -> Webhook | None:
    raw = read.optional("TELEGRAM_WEBHOOK_URL")
    if raw is None:
        return None
    parts = urlsplit(raw)
    # Telegram posts only to https; a local Bot API server (and the tests' fake) to http too.
    schemes = ("https",) if api_root == DEFAULT_API_ROOT else ("http", "https")
    if parts.scheme not in schemes or not parts.netloc or parts.query or parts.fragment:
        raise ConfigError(
            f"TELEGRAM_WEBHOOK_URL must be the https URL your reverse proxy serves for this bot, such as "
            f"https://bots.example.com/telegram/{read.agent.lower()}, not {raw!r}",
            agent=read.agent,
        )
    if parts.path.strip("/") == "":
        raise ConfigError(
            f"TELEGRAM_WEBHOOK_URL needs a path of its own for this character (each bot posts to its "
            f"own), such as {raw.rstrip('/')}/telegram/{read.agent.lower()}",
            agent=read.agent,
        )
    secret = read.optional("TELEGRAM_WEBHOOK_SECRET")
    if secret is None:
        # The same on every daemon of a troupe without being configured, and unknown to anyone
        # without the bot's token.
        secret = hmac.new(token.encode(), b"troupe telegram webhook", hashlib.sha256).hexdigest()
    elif not _SECRET.fullmatch(secret):
        raise ConfigError(
            "TELEGRAM_WEBHOOK_SECRET may hold only letters, digits, _ and - (1 to 256 of them); "
            "or leave it unset and troupe derives one from the bot token",
            agent=read.agent,
        )
    return Webhook(raw, SecretStr(secret))


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
    api_root = _api_root(agent, read.optional("TELEGRAM_API_ROOT"))
    return TelegramConfig(
        token=SecretStr(token),
        api_root=api_root,
        allowed_chats=frozenset(allowed) if allowed is not None else None,
        allow_direct_messages=read.flag("allowDirectMessages", True),
        poll_timeout=read.positive_float("TELEGRAM_POLL_TIMEOUT_S", 30.0),
        voice_replies=_voice_replies(agent, read.optional("TELEGRAM_VOICE_REPLIES")),
        channel_posts=read.flag("TELEGRAM_CHANNEL_POSTS"),
        send_deadline=read.number("TELEGRAM_SEND_DEADLINE_S", DEFAULT_DEADLINE_S, 1, 3600),
        allowed_groups=_allowed_groups(read),
        webhook=_webhook(read, token, api_root),
    )

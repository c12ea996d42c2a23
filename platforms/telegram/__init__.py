"""Telegram: every character its own bot, in private chats, groups and forum topics.

``connect(runtime)`` is how the daemon brings a character online: it reads the character's
Telegram settings, checks the token and starts long polling in the daemon's event loop. See
``_adapter.py`` for what happens to messages both ways, and ``_relay.py`` for how characters in
one group hear each other.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

from bot.sdk import PluginMeta

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime, SettingsView, WebhookHost, WebhookRoute

__all__ = ["check", "connect", "meta", "webhooks"]

# Durations (a 429's retry_after) as timedelta: the type python-telegram-bot moves to in its next
# major version; opting in now also silences its deprecation warning on every 429.
os.environ.setdefault("PTB_TIMEDELTA", "1")

meta = PluginMeta(
    name="telegram",
    kind="platform",
    requires=("TELEGRAM_BOT_TOKEN",),
    description="Telegram bot per character (TELEGRAM_BOT_TOKEN)",
    aliases=("@elizaos/plugin-telegram", "@elizaos-plugins/client-telegram", "@elizaos/client-telegram"),
)


def check(settings: SettingsView) -> None:
    """Raise :class:`~bot.kernel.errors.ConfigError` if the character's Telegram settings cannot work
    (``troupe check``, and ``troupe start`` before it opens the database)."""
    from ._config import read_config

    read_config(settings.get_setting, settings.agent)


def webhooks(settings: SettingsView, host: WebhookHost) -> list[WebhookRoute]:
    """The character's webhook route when it takes updates by webhook (``TELEGRAM_WEBHOOK_URL``):
    every daemon of the troupe serves it, whichever serves the character.

    Raises:
        ConfigError: its Telegram settings cannot work (``check`` says so at start).
    """
    from ._config import read_config
    from ._webhook import TelegramWebhook

    webhook = read_config(settings.get_setting, settings.agent).webhook
    return [TelegramWebhook(settings.agent, settings.agent_id, webhook, host)] if webhook is not None else []


async def connect(runtime: AgentRuntime) -> None:
    """Bring ``runtime``'s character online as its own Telegram bot.

    Raises:
        ConfigError: a setting is wrong or the token was refused; the message says what to do.
            Other agents are unaffected.
    """
    from ._adapter import TelegramAdapter
    from ._config import read_config

    if runtime.get_setting("messageTrackingLimit") is not None:
        # elizaOS's bound on the messages it held per chat; troupe holds none (docs/telegram.md).
        logging.getLogger(__name__).info(
            "%s: messageTrackingLimit is not used: CONVERSATION_LENGTH is how many recent messages of a "
            "chat or topic the character sees, MEMORY_ROOM_CAP how many are kept",
            runtime.character.name,
        )
    await TelegramAdapter(runtime, read_config(runtime.get_setting, runtime.character.name)).start()

"""Telegram: every character its own bot, in private chats, groups and forum topics."""

from bot.plugins import PluginMeta

__all__ = ["meta"]

meta = PluginMeta(
    name="telegram",
    kind="platform",
    requires=("TELEGRAM_BOT_TOKEN",),
    description="Telegram bot per character (TELEGRAM_BOT_TOKEN)",
    aliases=("@elizaos/plugin-telegram", "@elizaos-plugins/client-telegram", "@elizaos/client-telegram"),
)

"""Discord: every character its own bot, in guilds, threads, DMs and voice channels."""

from bot.plugins import PluginMeta

__all__ = ["meta"]

meta = PluginMeta(
    name="discord",
    kind="platform",
    requires=("DISCORD_API_TOKEN",),
    description="Discord bot per character (DISCORD_API_TOKEN, DISCORD_APPLICATION_ID)",
    aliases=("@elizaos/plugin-discord", "@elizaos-plugins/client-discord", "@elizaos/client-discord"),
)

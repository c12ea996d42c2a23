"""Discord: every character its own bot, in guilds, threads, DMs and voice channels.

``connect(runtime, shards=None)`` is how the daemon brings a character online: it reads the
character's Discord settings, checks the token and the bot's intents, and connects a discord.py
client in the daemon's event loop (an ``AutoShardedClient`` with the given shard ids when the bot
is sharded: ``DISCORD_SHARD_COUNT``, :mod:`bot.config.shards`). See ``_adapter.py`` for what happens to messages both ways.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.sdk import PluginMeta

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime, SettingsView, Shards

__all__ = ["check", "connect", "meta"]

meta = PluginMeta(
    name="discord",
    kind="platform",
    requires=("DISCORD_API_TOKEN",),
    shardable=True,
    description="Discord bot per character (DISCORD_API_TOKEN, DISCORD_APPLICATION_ID)",
    aliases=("@elizaos/plugin-discord", "@elizaos-plugins/client-discord", "@elizaos/client-discord"),
)


def check(settings: SettingsView) -> None:
    """Raise :class:`~bot.kernel.errors.ConfigError` if the character's Discord settings cannot work
    (``troupe check``, and ``troupe start`` before it opens the database)."""
    from ._config import read_config

    read_config(settings.get_setting, settings.agent, settings.character.settings.get("discord"))


async def connect(runtime: AgentRuntime, *, shards: Shards | None = None) -> None:
    """Bring ``runtime``'s character online as its own Discord bot: unsharded (``shards=None``,
    one gateway connection), or with just the ``shards`` given (the adapter, the runtime's
    ``discord`` service, can later :meth:`~platforms.discord._adapter.DiscordAdapter.reshard`).

    Raises:
        ConfigError: a setting is wrong, the token was refused, or the bot lacks the Message
            Content intent; the message says what to do. Other agents are unaffected.
    """
    from ._adapter import DiscordAdapter
    from ._config import read_config
    from ._rest import use_api_base

    config = read_config(runtime.get_setting, runtime.character.name, runtime.character.settings.get("discord"))
    use_api_base(config.api_base, runtime.character.name)
    await DiscordAdapter(runtime, config, shards).start()

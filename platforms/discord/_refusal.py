"""A Discord bot token reset while the bot runs (:mod:`bot.runtime.refusals`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord

from bot.sdk import TokenRefusal

from ._client import rest_only
from ._mapping import SOURCE

if TYPE_CHECKING:
    from ._adapter import DiscordAdapter

__all__ = ["token_refusal"]


def token_refusal(adapter: DiscordAdapter, token: str) -> TokenRefusal:
    """The bot's refused-token state: Discord is asked over REST whether it takes the token
    again; once it does, the adapter connects anew (discord.py closed its client on 4004) and
    reads back what was said meanwhile."""

    async def taken() -> bool:
        try:
            async with rest_only(token):
                pass
        except discord.LoginFailure:
            return False
        await adapter.reconnect(adapter.shards, "now that it takes the bot token again", again=True)
        return True

    return TokenRefusal(adapter.runtime, SOURCE, "Discord", "DISCORD_API_TOKEN", taken)

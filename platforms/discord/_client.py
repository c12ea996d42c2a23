"""The bot's connection to Discord: the intents it asks for, the check of its token and
settings before connecting, and the discord.py client that hands every event troupe cares
about to the adapter."""

from __future__ import annotations

import asyncio
import logging
import ssl
from typing import TYPE_CHECKING, Any

import aiohttp
import discord

from bot.connections import TokenClaims
from bot.errors import ConfigError
from bot.links import LinkState

from ._mapping import SOURCE
from ._rest import point_gateway

if TYPE_CHECKING:
    from ._adapter import DiscordAdapter

__all__ = ["Client", "DiscordTokens", "LOGIN_TIMEOUT_S", "PORTAL", "base_intents", "check_application", "run_client"]

_log = logging.getLogger(__name__)

LOGIN_TIMEOUT_S = 30.0
PORTAL = "https://discord.com/developers/applications"


class DiscordTokens(TokenClaims):
    """The Discord bot tokens a daemon's characters use (``runtime.shared.one(DiscordTokens)``)."""

    def __init__(self) -> None:
        super().__init__("DISCORD_API_TOKEN", "one application per character in the Developer Portal")


def base_intents() -> discord.Intents:
    """What troupe needs: guilds, messages and their content, reactions. Members only when allowed."""
    intents = discord.Intents.none()
    intents.guilds = True
    intents.guild_messages = True
    intents.dm_messages = True
    intents.message_content = True
    intents.guild_reactions = True
    intents.dm_reactions = True
    return intents


async def check_application(token: str, agent: str) -> bool:
    """Check the token and the bot's privileged intents before connecting; True if the
    Server Members intent is enabled (troupe then also hears people join and leave).

    Raises:
        ConfigError: the token was refused, or the Message Content intent is not enabled (the
            message says where to enable it).
    """
    probe = discord.Client(intents=discord.Intents(guilds=True))  # never connects: only REST
    try:
        async with asyncio.timeout(LOGIN_TIMEOUT_S):
            await probe.login(token)
            info = await probe.application_info()
    except discord.LoginFailure:
        raise ConfigError(
            f"Discord refused the bot token in DISCORD_API_TOKEN; copy a fresh one from "
            f"{PORTAL} → your app → Bot → Reset Token",
            agent=agent,
        ) from None
    finally:
        await probe.close()
    flags = info.flags
    if not (flags.gateway_message_content or flags.gateway_message_content_limited):
        raise ConfigError(
            f"the Message Content intent is not enabled for the bot {info.name}; enable it at "
            f"{PORTAL}/{info.id}/bot under Privileged Gateway Intents, then start again",
            agent=agent,
        )
    return bool(flags.gateway_guild_members or flags.gateway_guild_members_limited)


async def run_client(client: discord.Client, agent: str) -> None:
    """Keep ``client`` connected (discord.py reconnects by itself) until it is closed.

    Raises:
        ConfigError: Discord refused an intent or the token.
    """
    try:
        await client.connect(reconnect=True)
    except discord.PrivilegedIntentsRequired:
        raise ConfigError(
            f"Discord refused an intent this bot has not enabled; enable the Message "
            f"Content intent at {PORTAL} → your app → Bot → Privileged Gateway Intents",
            agent=agent,
        ) from None
    except discord.LoginFailure:
        raise ConfigError("Discord refused the bot token in DISCORD_API_TOKEN", agent=agent) from None


class Client(discord.Client):
    """A discord.py client that hands every event it cares about to its adapter."""

    def __init__(self, adapter: DiscordAdapter, intents: discord.Intents) -> None:
        extra: dict[str, Any] = {}
        if adapter.config.ca_file:
            # discord.py dials voice servers over wss:// only; a self-hosted server's own CA must be trusted.
            extra["connector"] = aiohttp.TCPConnector(ssl=ssl.create_default_context(cafile=adapter.config.ca_file))
        # No member chunking at start: large guilds would take minutes, and entities are
        # created as people speak.
        super().__init__(
            intents=intents,
            chunk_guilds_at_startup=False,
            max_messages=500,
            guild_ready_timeout=adapter.config.guild_ready_timeout,
            **extra,
        )
        self.adapter = adapter
        self.tree = discord.app_commands.CommandTree(self)

    async def setup_hook(self) -> None:
        await point_gateway(self.http)

    async def on_ready(self) -> None:
        await self.adapter.on_ready()

    async def on_guild_join(self, guild: discord.Guild) -> None:
        await self.adapter.guarded("guild join", self.adapter.on_guild_join(guild))

    async def on_message(self, message: discord.Message) -> None:
        await self.adapter.guarded("message", self.adapter.on_message(message))

    async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        await self.adapter.guarded("edit", self.adapter.on_edit(payload))

    async def on_raw_message_delete(self, payload: discord.RawMessageDeleteEvent) -> None:
        await self.adapter.guarded("delete", self.adapter.on_delete(payload))

    async def on_raw_reaction_add(self, payload: discord.RawReactionActionEvent) -> None:
        await self.adapter.guarded("reaction", self.adapter.on_reaction(payload))

    async def on_member_join(self, member: discord.Member) -> None:
        await self.adapter.guarded("member join", self.adapter.on_member(member, joined=True))

    async def on_member_remove(self, member: discord.Member) -> None:
        await self.adapter.guarded("member leave", self.adapter.on_member(member, joined=False))

    async def on_resumed(self) -> None:
        _log.info("%s: Discord connection resumed", self.adapter.name)
        self.adapter.missed.resumed()
        self.adapter.runtime.links.set(SOURCE, LinkState.CONNECTED)

    async def on_disconnect(self) -> None:
        # discord.py reconnects by itself (with back-off); until then the link is down.
        self.adapter.missed.connection_lost()
        if not self.is_closed():
            self.adapter.runtime.links.set(SOURCE, LinkState.RETRYING, "gateway connection lost; reconnecting")

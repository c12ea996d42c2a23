"""The bot's connection to Discord: the intents it asks for, the check of its token and
settings before connecting, and the discord.py client that hands every event troupe cares
about to the adapter."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import aiohttp
import discord

from bot.sdk import SHARD_COUNT_KEY, ConfigError, LinkState, Shards, TokenClaims, TokenRefused

from ._events import (
    channel_created,
    channel_deleted,
    channel_renamed,
    guild_left,
    member_changed,
    message_deleted,
    message_edited,
    reaction_added,
)
from ._interactions import interaction_used
from ._mapping import SOURCE
from ._rest import point_gateway
from ._voice_presence import voice_state_changed

if TYPE_CHECKING:
    from ._adapter import DiscordAdapter

__all__ = [
    "Client",
    "DiscordTokens",
    "LOGIN_TIMEOUT_S",
    "PORTAL",
    "ShardedClient",
    "base_intents",
    "check_application",
    "make_client",
    "rest_only",
    "run_client",
]

_log = logging.getLogger(__name__)

LOGIN_TIMEOUT_S = 30.0
_AUTHENTICATION_FAILED = 4004  # gateway close codes
_INVALID_SHARD = 4010
_SHARDING_REQUIRED = 4011
PORTAL = "https://discord.com/developers/applications"


class DiscordTokens(TokenClaims):
    """The Discord bot tokens a daemon's characters use (``runtime.shared.instance_of(DiscordTokens)``)."""

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
    try:
        async with rest_only(token) as probe:
            info = await probe.application_info()
    except discord.LoginFailure:
        raise ConfigError(
            f"Discord refused the bot token in DISCORD_API_TOKEN; copy a fresh one from "
            f"{PORTAL} → your app → Bot → Reset Token",
            agent=agent,
        ) from None
    flags = info.flags
    if not (flags.gateway_message_content or flags.gateway_message_content_limited):
        raise ConfigError(
            f"the Message Content intent is not enabled for the bot {info.name}; enable it at "
            f"{PORTAL}/{info.id}/bot under Privileged Gateway Intents, then start again",
            agent=agent,
        )
    return bool(flags.gateway_guild_members or flags.gateway_guild_members_limited)


@contextlib.asynccontextmanager
async def rest_only(token: str) -> AsyncIterator[discord.Client]:
    """A client logged in with ``token`` that never connects to the gateway (REST only), closed
    after the block; login and block together have :data:`LOGIN_TIMEOUT_S`.

    Raises:
        discord.LoginFailure: the token was refused.
    """
    probe = discord.Client(intents=discord.Intents(guilds=True))
    try:
        async with asyncio.timeout(LOGIN_TIMEOUT_S):
            await probe.login(token)
            yield probe
    finally:
        await probe.close()


async def _recommended_shards(token: str) -> int | None:
    """The shard count Discord recommends for the bot (``GET /gateway/bot``); None if it cannot
    be asked now."""
    try:
        async with rest_only(token) as probe:
            count, _, _ = await probe.http.get_bot_gateway()
    except (discord.DiscordException, aiohttp.ClientError, OSError, TimeoutError) as exc:
        _log.debug("could not ask Discord how many shards it recommends: %s", exc.__class__.__name__)
        return None
    return int(count)


async def run_client(client: discord.Client, agent: str, token: str) -> None:
    """Keep ``client`` connected (discord.py reconnects by itself) until it is closed.

    Raises:
        ConfigError: Discord refused an intent, the token, or the shards (the bot must be
            sharded, or more finely: the message says how many shards to set).
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
    except discord.ConnectionClosed as exc:
        if exc.code == _AUTHENTICATION_FAILED:
            raise TokenRefused(
                "Discord refused the bot token in DISCORD_API_TOKEN (close code 4004)", agent=agent
            ) from None
        if exc.code == _SHARDING_REQUIRED:
            raise ConfigError(await _sharding_required(client, token), agent=agent) from None
        if exc.code == _INVALID_SHARD:
            raise ConfigError(
                f"Discord refused the shard ids this daemon connected with (close code 4010, invalid "
                f"shard); every daemon serving the character must read the same {SHARD_COUNT_KEY}",
                agent=agent,
            ) from None
        raise


async def _sharding_required(client: discord.Client, token: str) -> str:
    """What to do when Discord closed the gateway with 4011: how many shards to set."""
    have = client.shard_count or 1
    needed = await _recommended_shards(token)
    at_least = f"at least {needed}" if needed is not None and needed > have else f"more than {have}"
    return (
        f"the bot is in too many Discord servers for {'one connection' if have == 1 else f'{have} shards'}: "
        f"set {SHARD_COUNT_KEY} to {at_least} in the character's settings (Discord requires a shard "
        "per 2,500 servers at most)"
    )


class Client(discord.Client):
    """A discord.py client that hands every event it cares about to its adapter."""

    def __init__(self, adapter: DiscordAdapter, intents: discord.Intents, **options: Any) -> None:
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
            **options,
        )
        self.adapter = adapter
        self.tree = discord.app_commands.CommandTree(self)

    def dispatch(self, event: str, /, *args: Any, **kwargs: Any) -> None:
        # A connection being replaced (new shards) hands the adapter nothing more: its successor
        # reads back the messages it missed (_catchup.py).
        if self.adapter.is_current_connection(self):
            super().dispatch(event, *args, **kwargs)

    async def setup_hook(self) -> None:
        await point_gateway(self.http)

    async def on_ready(self) -> None:
        await self.adapter.on_ready()

    async def on_guild_join(self, guild: discord.Guild) -> None:
        await self.adapter.run_handler("guild join", self.adapter.on_guild_join(guild))

    async def on_guild_remove(self, guild: discord.Guild) -> None:
        await self.adapter.run_handler("guild leave", guild_left(self.adapter, guild))

    async def on_message(self, message: discord.Message) -> None:
        await self.adapter.run_handler("message", self.adapter.on_message(message))

    async def on_interaction(self, interaction: discord.Interaction) -> None:
        # Slash commands are the command tree's (announced here); other code's components are its views'.
        await self.adapter.run_handler("interaction", interaction_used(self.adapter, interaction))

    async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        await self.adapter.run_handler("edit", message_edited(self.adapter, payload))

    async def on_raw_message_delete(self, payload: discord.RawMessageDeleteEvent) -> None:
        await self.adapter.run_handler("delete", message_deleted(self.adapter, payload))

    async def on_raw_reaction_add(self, payload: discord.RawReactionActionEvent) -> None:
        await self.adapter.run_handler("reaction", reaction_added(self.adapter, payload))

    async def on_member_join(self, member: discord.Member) -> None:
        await self.adapter.run_handler("member join", member_changed(self.adapter, member, joined=True))

    async def on_member_remove(self, member: discord.Member) -> None:
        await self.adapter.run_handler("member leave", member_changed(self.adapter, member, joined=False))

    async def on_guild_channel_create(self, channel: discord.abc.GuildChannel) -> None:
        await self.adapter.run_handler("channel create", channel_created(self.adapter, channel))

    async def on_thread_create(self, thread: discord.Thread) -> None:
        await self.adapter.run_handler("thread create", channel_created(self.adapter, thread))

    async def on_thread_join(self, thread: discord.Thread) -> None:
        await self.adapter.run_handler("thread join", channel_created(self.adapter, thread))

    async def on_guild_channel_update(self, before: discord.abc.GuildChannel, after: discord.abc.GuildChannel) -> None:
        await self.adapter.run_handler("channel update", channel_renamed(self.adapter, before, after))

    async def on_thread_update(self, before: discord.Thread, after: discord.Thread) -> None:
        await self.adapter.run_handler("thread update", channel_renamed(self.adapter, before, after))

    async def on_guild_channel_delete(self, channel: discord.abc.GuildChannel) -> None:
        await self.adapter.run_handler("channel delete", channel_deleted(self.adapter, channel))

    async def on_voice_state_update(
        self, member: discord.Member, before: discord.VoiceState, after: discord.VoiceState
    ) -> None:
        await self.adapter.run_handler("voice state", voice_state_changed(self.adapter, member, before, after))

    async def on_resumed(self) -> None:
        _log.info("%s: Discord connection resumed", self.adapter.name)
        self.adapter.missed.resumed()
        self.adapter.runtime.links.set(SOURCE, LinkState.CONNECTED)

    async def on_disconnect(self) -> None:
        # discord.py reconnects by itself (with back-off); until then the link is down.
        self.adapter.missed.connection_lost()
        if not self.is_closed() and not self.adapter.refusal.refused:
            self.adapter.runtime.links.set(SOURCE, LinkState.RETRYING, "gateway connection lost; reconnecting")


class ShardedClient(Client, discord.AutoShardedClient):
    """The client of a bot split into shards: connected with the shard ids this daemon holds."""

    def __init__(self, adapter: DiscordAdapter, intents: discord.Intents, shards: Shards) -> None:
        super().__init__(adapter, intents, shard_ids=list(shards.ids), shard_count=shards.count)

    # discord.py says "disconnect" and "resumed" for any shard, "ready" only once all are: each
    # shard's own events keep track of what it missed.
    async def on_disconnect(self) -> None:
        pass

    async def on_resumed(self) -> None:
        pass

    async def on_shard_disconnect(self, shard_id: int) -> None:
        self.adapter.missed.connection_lost(shard_id)
        if not self.is_closed() and not self.adapter.refusal.refused:
            self.adapter.runtime.links.set(
                SOURCE, LinkState.RETRYING, f"gateway connection of shard {shard_id} lost; reconnecting"
            )

    async def on_shard_resumed(self, shard_id: int) -> None:
        _log.info("%s: Discord connection of shard %d resumed", self.adapter.name, shard_id)
        self.adapter.missed.resumed(shard_id)
        self.adapter.runtime.links.set(SOURCE, LinkState.CONNECTED)

    async def on_shard_ready(self, shard_id: int) -> None:
        await self.adapter.on_shard_ready(shard_id)


def make_client(adapter: DiscordAdapter, intents: discord.Intents, shards: Shards | None) -> Client:
    """An unsharded client (``shards=None``), or one connected with just ``shards``."""
    return Client(adapter, intents) if shards is None else ShardedClient(adapter, intents, shards)

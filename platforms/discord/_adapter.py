"""One character's Discord bot: a discord.py client in the daemon's loop, translating both ways.

Inbound, a message becomes an incoming message for the runtime, with its reply channel
(:mod:`bot.messages`); other gateway events become troupe events (REACTION_RECEIVED, MESSAGE_UPDATED/DELETED, WORLD_CONNECTED/JOINED, ENTITY_JOINED/LEFT) after the
listening rules of the character's settings. Worlds, rooms, entities and participants are
written once per run and remembered, not re-written for every message. When Discord could not
resume a lost session, what was said meanwhile is read back and handled the same way
(``_catchup.py``).

Outbound, the reply channel answers the triggering message (split, safe mentions, uploads,
retries), shows "typing…" while an answer is being prepared, and stores what was sent. The
adapter is also the runtime's ``discord`` Messenger, for SEND_MESSAGE.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import aiohttp
import discord

from bot.connections import Connections, TokenClaims, record_sent
from bot.errors import ConfigError, PartlySent, SendError
from bot.events import EventType
from bot.links import LinkState
from bot.messages import IncomingMessage, QuietChannel
from bot.text import first_words
from bot.types import JSON, ChannelType, Entity, Memory, Role, Room, now_ms

from ._catchup import MissedMessages
from ._config import DiscordConfig
from ._mapping import (
    SOURCE,
    channel_type,
    discord_id,
    entity_for_user,
    memory_for_message,
    parent_id,
    room_for_channel,
    world_for_guild,
)
from ._outbound import describe, files_of, send_chunks
from ._rest import point_gateway
from ._voice import VoiceManager

if TYPE_CHECKING:
    from bot.runtime import AgentRuntime

__all__ = ["DiscordAdapter"]

_log = logging.getLogger(__name__)

_READY_TIMEOUT_S = 60.0
_TYPING_CAP_S = 60.0
_LOGIN_TIMEOUT_S = 30.0
_DRAIN_TIMEOUT_S = 10.0
_MESSAGE_TYPES = frozenset({discord.MessageType.default, discord.MessageType.reply})
_PORTAL = "https://discord.com/developers/applications"
_PERMISSIONS = 380141685824  # read/send messages and threads, reactions, files, history, voice


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


class _Client(discord.Client):
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


class DiscordAdapter:
    """Connects one runtime to Discord as its own bot."""

    def __init__(self, runtime: AgentRuntime, config: DiscordConfig) -> None:
        self.runtime = runtime
        self.config = config
        self.name = runtime.character.name
        self.client: _Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._worlds: set[int] = set()
        self._tokens = runtime.shared.one(DiscordTokens)  # the bots of this daemon's other characters
        self.connections = Connections(runtime, SOURCE)
        self.voice = VoiceManager(self)
        self._admins_seen: set[tuple[int, int]] = set()
        self._handling: set[asyncio.Task[Any]] = set()
        self.missed = MissedMessages(config.catchup)

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        """Log in, check the bot's settings on Discord, connect; returns once ready.

        On failure everything started is stopped again before the error is raised.

        Raises:
            ConfigError: the token was refused or is another character's, or the Message
                Content intent is not enabled for this bot (the message says where to enable it).
        """
        token = self.config.token.get_secret_value()
        self._tokens.claim(token, self.name)
        try:
            await self._connect(token)
        except BaseException:
            await self.close()
            raise
        self.runtime.on_close(self.close)
        if self.runtime.get_service(SOURCE) is None:
            self.runtime.register_service(SOURCE, self)
        if self.config.voice_enabled:
            from ._voice_actions import join_voice, leave_voice

            for action in (join_voice, leave_voice):
                self.runtime.register_action(action)

    async def _connect(self, token: str) -> None:
        intents = base_intents()
        intents.voice_states = self.config.voice_enabled  # who is in which voice channel
        intents.members = await self._check_application()
        self.client = client = _Client(self, intents)
        from ._commands import register_commands

        register_commands(self, client.tree)
        async with asyncio.timeout(_LOGIN_TIMEOUT_S):
            await client.login(token)
        self._task = self.runtime.create_task(self._run(client), "discord:client")
        ready = asyncio.ensure_future(self._ready.wait())
        done, _ = await asyncio.wait({ready, self._task}, timeout=_READY_TIMEOUT_S, return_when=asyncio.FIRST_COMPLETED)
        ready.cancel()
        if self._task in done:
            self._task.result()  # raises what ended the connection (e.g. the intents error)
            raise ConfigError("the Discord connection closed before it was ready", agent=self.name)
        if not done:
            _log.warning(
                "%s: Discord is not ready after %.0f s; still trying in the background", self.name, _READY_TIMEOUT_S
            )
            self.runtime.links.set(SOURCE, LinkState.CONNECTING, "waiting for Discord to say it is ready")

    async def _check_application(self) -> bool:
        """Check the token and the bot's privileged intents before connecting; True if the
        Server Members intent is enabled (troupe then also hears people join and leave)."""
        probe = discord.Client(intents=discord.Intents(guilds=True))  # never connects: only REST
        try:
            async with asyncio.timeout(_LOGIN_TIMEOUT_S):
                await probe.login(self.config.token.get_secret_value())
                info = await probe.application_info()
        except discord.LoginFailure:
            raise ConfigError(
                f"Discord refused the bot token in DISCORD_API_TOKEN; copy a fresh one from "
                f"{_PORTAL} → your app → Bot → Reset Token",
                agent=self.name,
            ) from None
        finally:
            await probe.close()
        flags = info.flags
        if not (flags.gateway_message_content or flags.gateway_message_content_limited):
            raise ConfigError(
                f"the Message Content intent is not enabled for the bot {info.name}; enable it at "
                f"{_PORTAL}/{info.id}/bot under Privileged Gateway Intents, then start again",
                agent=self.name,
            )
        return bool(flags.gateway_guild_members or flags.gateway_guild_members_limited)

    async def _run(self, client: _Client) -> None:
        try:
            await client.connect(reconnect=True)
        except discord.PrivilegedIntentsRequired:
            raise ConfigError(
                f"Discord refused an intent this bot has not enabled; enable the Message "
                f"Content intent at {_PORTAL} → your app → Bot → Privileged Gateway Intents",
                agent=self.name,
            ) from None
        except discord.LoginFailure:
            raise ConfigError("Discord refused the bot token in DISCORD_API_TOKEN", agent=self.name) from None

    async def close(self) -> None:
        """Disconnect, then let messages being answered finish (up to a limit) before the
        runtime and its database go away."""
        self.runtime.unregister_service(SOURCE)
        self._tokens.release(self.config.token.get_secret_value(), self.name)
        await self.voice.close()
        if self.client is not None and not self.client.is_closed():
            await self.client.close()
        if self._handling:
            _, late = await asyncio.wait(set(self._handling), timeout=_DRAIN_TIMEOUT_S)
            for task in late:
                task.cancel()
            if late:
                _log.warning("%s: stopped %d Discord events still being handled", self.name, len(late))
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task

    async def guarded(self, what: str, work: Any) -> None:
        """Run an event handler; a failure is logged with the agent, never raised into discord.py.

        discord.py runs each event in a task of its own; they are tracked so that closing waits
        for them rather than pulling the database from under a reply.
        """
        task = asyncio.current_task()
        if task is not None:
            self._handling.add(task)
        try:
            await work
        except Exception:
            _log.exception("%s: failed to handle a Discord %s", self.name, what)
        finally:
            self._handling.discard(task)

    @property
    def bot_id(self) -> int:
        assert self.client is not None and self.client.user is not None
        return self.client.user.id

    # -- worlds, rooms, entities ----------------------------------------------------------

    async def on_ready(self) -> None:
        """Each fresh IDENTIFY: sync the servers; after the first, also read what the gap hid."""
        assert self.client is not None
        # Taken at once (messages arriving live from now on are no gap), and on every READY: the
        # first one has no gap to fill, but must not leave one behind for the next.
        missed = self.missed.plan()
        if not self._ready.is_set():
            missed = []
        _log.info("%s: online on Discord as %s in %d servers", self.name, self.client.user, len(self.client.guilds))
        if not self.client.guilds:
            _log.warning(
                "%s: the bot is in no server yet; invite it with https://discord.com/oauth2/authorize"
                "?client_id=%s&scope=bot%%20applications.commands&permissions=%d",
                self.name,
                self.client.application_id,
                _PERMISSIONS,
            )
        for guild in self.client.guilds:
            await self.guarded("server sync", self._announce(guild, EventType.WORLD_CONNECTED))
        try:
            await self.client.tree.sync()
        except discord.HTTPException as exc:
            _log.warning("%s: could not register the /troupe command: %s", self.name, exc)
        self._ready.set()
        self.runtime.links.set(SOURCE, LinkState.CONNECTED)
        if missed:
            self.runtime.create_task(self.guarded("catch-up", self._catch_up(missed)), "discord:catch-up")
        if self.config.voice_enabled:
            await self.guarded("voice auto-join", self.voice.auto_join(list(self.client.guilds)))

    async def _catch_up(self, plan: list[tuple[int, int]]) -> None:
        """The session was lost for good: hand over what was said meanwhile as if it had just
        arrived (the gate decides), skipping what was already handed over or stored."""
        assert self.client is not None
        agent, read, handed = self.runtime.agent_id, 0, 0
        for channel_id, after in plan:
            try:
                messages = await self.missed.fetch(self.client, channel_id, after)
            except (discord.HTTPException, TimeoutError) as exc:
                detail = f"{exc.status} {exc.text}" if isinstance(exc, discord.HTTPException) else "no answer in time"
                _log.warning("%s: could not read the messages missed in channel %s: %s", self.name, channel_id, detail)
                continue
            read += 1
            for message in messages:
                if (
                    self.missed.claimed(message.id)
                    or await self.runtime.store.get_memory(discord_id(agent, message.id)) is not None
                ):
                    continue
                handed += 1
                # Like the gateway: one task per message, in order, so a burst behaves like one.
                self.runtime.create_task(self.guarded("message", self.on_message(message)), "discord:message")
        _log.info(
            "%s: the Discord session was lost; read back %d of %d channel(s), %d missed message(s) handed over",
            self.name,
            read,
            len(plan),
            handed,
        )

    async def on_guild_join(self, guild: discord.Guild) -> None:
        await self._announce(guild, EventType.WORLD_JOINED)

    async def _announce(self, guild: discord.Guild, event: EventType) -> None:
        world, rooms = await self.ensure_world(guild)
        entities = [entity_for_user(self.runtime.agent_id, m) for m in guild.members if m.id != self.bot_id]
        await self.runtime.emit(event, {"world": world, "rooms": rooms, "entities": entities, "source": SOURCE})

    async def ensure_world(self, guild: discord.Guild) -> tuple[Any, list[Room]]:
        """Write the guild's world and rooms (once per run); roles set by UPDATE_ROLE are kept."""
        agent, store = self.runtime.agent_id, self.runtime.store
        admins = [m for m in guild.members if m.guild_permissions.administrator]
        world = world_for_guild(agent, guild, admins)
        rooms = [r for c in [*guild.channels, *guild.threads] if (r := room_for_channel(agent, c)) is not None]
        if guild.id in self._worlds:
            return world, rooms
        existing = await store.get_world(world.id)
        if existing is None:
            await store.create_world(world)
        else:
            roles = {**world.metadata["roles"], **(existing.metadata.get("roles") or {})}
            owner = world.metadata.get("ownership")
            if owner:
                roles[owner["ownerId"]] = Role.OWNER.value  # whoever owns the guild on Discord
            merged = {**existing.metadata, **({"ownership": owner} if owner else {}), "roles": roles}
            if merged != existing.metadata or existing.name != world.name:
                existing.metadata, existing.name = merged, world.name
                await store.update_world(existing)
            world = existing
        await self.connections.ensure_rooms(rooms)
        self._worlds.add(guild.id)
        return world, rooms

    async def ensure_room(self, channel: Any, *, dm_with: Any = None) -> str:
        room_id = discord_id(self.runtime.agent_id, channel.id)
        if not self.connections.knows_room(room_id):
            guild = getattr(channel, "guild", None)
            if guild is not None:
                await self.ensure_world(guild)
            room = room_for_channel(self.runtime.agent_id, channel, dm_with=dm_with)
            if room is not None:
                await self.connections.ensure_rooms([room])
        return room_id

    async def ensure_entity(self, user: Any, room_id: str) -> str:
        """The user's entity, created (or its names refreshed) once per run, and in the room."""
        entity_id = await self.connections.ensure_entity(entity_for_user(self.runtime.agent_id, user), room_id)
        await self._note_admin(user)
        return entity_id

    async def _note_admin(self, member: Any) -> None:
        """A Discord administrator seen for the first time becomes ADMIN, unless a role is recorded."""
        guild = getattr(member, "guild", None)
        permissions = getattr(member, "guild_permissions", None)
        if guild is None or permissions is None or not permissions.administrator:
            return
        if (guild.id, member.id) in self._admins_seen:
            return
        self._admins_seen.add((guild.id, member.id))
        world = await self.runtime.store.get_world(discord_id(self.runtime.agent_id, guild.id))
        entity_id = discord_id(self.runtime.agent_id, member.id)
        if world is not None and entity_id not in (world.metadata.get("roles") or {}):
            world.metadata = {
                **world.metadata,
                "roles": {**(world.metadata.get("roles") or {}), entity_id: Role.ADMIN.value},
            }
            await self.runtime.store.update_world(world)

    # -- inbound --------------------------------------------------------------------------

    def listens_in(self, channel: Any) -> bool:
        """CHANNEL_IDS: a listed channel, or a thread of one; DMs unless they are switched off."""
        if channel_type(channel) is ChannelType.DM:
            return not self.config.ignore_direct_messages
        allowed = self.config.channel_ids
        if allowed is None:
            return True
        parent = parent_id(channel)
        return str(channel.id) in allowed or (parent is not None and str(parent) in allowed)

    async def on_message(self, message: discord.Message) -> None:
        if not self.listens_in(message.channel) or not self.missed.claim(message):
            return  # not heard here, or already handed over (live and read back after a lost session)
        if message.author.id == self.bot_id or message.type not in _MESSAGE_TYPES:
            return
        if message.author.bot and self.config.ignore_bot_messages:
            return
        memory = memory_for_message(self.runtime.agent_id, message, bot_user_id=self.bot_id)
        direct = memory.metadata["isMention"] or memory.metadata["isReply"] or memory.content["channelType"] == "DM"
        if self.config.respond_only_to_mentions and not direct:
            return
        room_id = await self.ensure_room(message.channel, dm_with=message.author)
        await self.ensure_entity(message.author, room_id)
        channel = _Answer(self, message, memory)
        try:
            await self.runtime.receive(IncomingMessage(memory, channel))
        finally:
            await channel.typing_indicator.stop()

    async def on_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        message = payload.message
        if message.author.id == self.bot_id or not self.listens_in(message.channel):
            return
        memory = memory_for_message(self.runtime.agent_id, message, bot_user_id=self.bot_id)
        await self.runtime.emit(EventType.MESSAGE_UPDATED, {"message": memory, "source": SOURCE})

    async def on_delete(self, payload: discord.RawMessageDeleteEvent) -> None:
        agent = self.runtime.agent_id
        await self.runtime.emit(
            EventType.MESSAGE_DELETED,
            {
                "messageId": discord_id(agent, payload.message_id),
                "roomId": discord_id(agent, payload.channel_id),
                "source": SOURCE,
            },
        )

    async def on_reaction(self, payload: discord.RawReactionActionEvent) -> None:
        assert self.client is not None
        if payload.user_id == self.bot_id:
            return
        channel = self.client.get_channel(payload.channel_id) or await self.client.fetch_channel(payload.channel_id)
        if not self.listens_in(channel):
            return
        user = payload.member or self.client.get_user(payload.user_id) or await self.client.fetch_user(payload.user_id)
        cached = discord.utils.get(self.client.cached_messages, id=payload.message_id)
        snippet = (cached.content[:50] + ("..." if len(cached.content) > 50 else "")) if cached else ""
        emoji = str(payload.emoji)
        text = f'*reacted {emoji} to: "{snippet}"*' if snippet else f"*reacted {emoji}*"
        agent = self.runtime.agent_id
        room_id = await self.ensure_room(channel, dm_with=user)
        entity_id = await self.ensure_entity(user, room_id)
        memory = Memory(
            id=discord_id(agent, f"{payload.message_id}-{payload.user_id}-{emoji}"),
            entity_id=entity_id,
            agent_id=agent,
            room_id=room_id,
            world_id=discord_id(agent, payload.guild_id) if payload.guild_id else None,
            content={
                "text": text,
                "source": SOURCE,
                "inReplyTo": discord_id(agent, payload.message_id),
                "channelType": (channel_type(channel) or ChannelType.GROUP).value,
            },
            metadata={"type": "reaction", "authorIsBot": bool(getattr(user, "bot", False)), "emoji": emoji},
            created_at=now_ms(),
        )
        await self.runtime.emit(EventType.REACTION_RECEIVED, {"message": memory, "source": SOURCE})

    async def on_member(self, member: discord.Member, *, joined: bool) -> None:
        if member.id == self.bot_id:
            return
        agent = self.runtime.agent_id
        entity = entity_for_user(agent, member)
        if joined:
            await self.ensure_world(member.guild)
            await self.connections.ensure_entity(entity)
        await self.runtime.emit(
            EventType.ENTITY_JOINED if joined else EventType.ENTITY_LEFT,
            {
                "entityId": entity.id,
                "worldId": discord_id(agent, member.guild.id),
                "source": SOURCE,
                "metadata": {
                    "originalId": str(member.id),
                    "username": member.name,
                    "displayName": member.display_name,
                    "roles": [r.name for r in member.roles if not r.is_default()],
                },
            },
        )

    # -- outbound -------------------------------------------------------------------------

    async def _send_reply(
        self, channel: Any, text: str, content: Mapping[str, Any], answering: Any
    ) -> tuple[list[discord.Message], bool]:
        """Send a reply to ``answering`` (a message, or a partial one): what went out, and whether
        that is all of it. Never raises: a reply not sent, or not all of it, is logged."""
        try:
            return await send_chunks(
                channel, text, files=files_of(content), reference=answering, deadline_s=self.config.send_deadline
            ), True
        except Exception as exc:
            self._log_send_failure(channel, text, exc, answering=answering)
            # What did go out is part of the conversation.
            return (exc.sent, False) if isinstance(exc, PartlySent) else ([], False)

    def _log_send_failure(self, channel: Any, text: str, exc: Exception, *, answering: Any = None) -> None:
        """What could not be sent: where, in answer to which message, what it began with, and why."""
        where = f"#{channel.name}" if getattr(channel, "name", None) else "a DM"
        what = (
            f"a reply in {where} (channel {channel.id}) to message {answering.id}"
            if answering is not None
            else (f"a message in {where} (channel {channel.id})")
        )
        _log.error('%s: could not send %s, "%s": %s', self.name, what, first_words(text), describe(exc))

    async def _remember(
        self,
        sent: list[discord.Message],
        content: Mapping[str, Any],
        room_id: str,
        world_id: str | None,
        *,
        in_reply_to: str | None = None,
    ) -> list[Memory]:
        agent, memories = self.runtime.agent_id, []
        for message in sent:
            body = {**content, "text": message.content, "source": SOURCE, "url": message.jump_url}
            body.pop("files", None)
            if in_reply_to is not None:
                body["inReplyTo"] = in_reply_to
            memories.append(
                Memory(
                    id=discord_id(agent, message.id),
                    entity_id=agent,
                    agent_id=agent,
                    room_id=room_id,
                    world_id=world_id,
                    content=body,
                    created_at=int(message.created_at.timestamp() * 1000),
                    metadata={"type": "message", "discordMessageId": str(message.id)},
                )
            )
        return await record_sent(self.runtime, memories, SOURCE)

    async def send_to_room(self, room: Room, content: dict[str, Any]) -> list[Memory]:
        """Messenger: post in a channel of a server this bot is in."""
        assert self.client is not None
        if not room.channel_id or room.source != SOURCE:
            raise SendError("that is not a Discord channel")
        channel = self.client.get_channel(int(room.channel_id))
        if channel is None:
            try:
                channel = await self.client.fetch_channel(int(room.channel_id))
            except discord.HTTPException:
                raise SendError(f"I can't see #{room.name} any more") from None
        if not self.listens_in(channel):
            raise SendError(f"I'm not allowed to talk in #{room.name}")
        return await self._deliver(channel, content, room.id, room.world_id)

    async def send_to_entity(self, entity: Entity, content: dict[str, Any]) -> list[Memory]:
        """Messenger: a direct message to a person."""
        assert self.client is not None
        user_id = (entity.metadata.get(SOURCE) or {}).get("userId")
        if not user_id:
            raise SendError(f"I don't know {entity.names[0] if entity.names else 'them'} on Discord")
        try:
            user = self.client.get_user(int(user_id)) or await self.client.fetch_user(int(user_id))
            channel = await user.create_dm()
        except discord.HTTPException:
            raise SendError("I can't reach them on Discord") from None
        room_id = await self.ensure_room(channel, dm_with=user)
        await self.ensure_entity(user, room_id)
        return await self._deliver(channel, content, room_id, None)

    async def reply_to(self, message: Memory, content: dict[str, Any]) -> list[Memory]:
        """Messenger: answer a stored Discord message in its channel, replying to it (if it still
        exists). Nothing sent (logged) gives ``[]``, as for a live reply."""
        assert self.client is not None
        channel_id, quoted = message.metadata.get("channelId"), message.metadata.get("discordMessageId")
        if not channel_id:
            return []
        text = str(content.get("text") or "")
        try:
            channel = self.client.get_channel(int(channel_id)) or await self.client.fetch_channel(int(channel_id))
        except discord.HTTPException as exc:
            _log.error(
                '%s: could not send a reply in channel %s to message %s, "%s": %s',
                self.name,
                channel_id,
                quoted,
                first_words(text),
                describe(exc),
            )
            return []
        reference = channel.get_partial_message(int(quoted)) if quoted else None  # type: ignore[union-attr]
        sent, _ = await self._send_reply(channel, text, content, reference)
        return await self._remember(sent, content, message.room_id, message.world_id, in_reply_to=message.id)

    async def _deliver(self, channel: Any, content: dict[str, Any], room_id: str, world_id: str | None) -> list[Memory]:
        text = str(content.get("text") or "")
        try:
            sent = await send_chunks(channel, text, files=files_of(content), deadline_s=self.config.send_deadline)
        except discord.Forbidden:
            raise SendError(
                "Discord says I'm not allowed to send there (they may not accept direct messages)"
            ) from None
        except PartlySent as exc:
            self._log_send_failure(channel, text, exc)
            await self._remember(exc.sent, content, room_id, world_id)
            raise SendError(
                "only the beginning of the message went out; Discord did not take the rest, try again later"
            ) from None
        except Exception as exc:
            self._log_send_failure(channel, text, exc)
            raise SendError("Discord did not take the message; try again later") from None
        return await self._remember(sent, content, room_id, world_id)


class _Answer(QuietChannel):
    """The reply channel of one Discord message: replies quote it; in a voice session whose text
    side this channel is, they are said aloud too."""

    def __init__(self, adapter: DiscordAdapter, message: discord.Message, incoming: Memory) -> None:
        self.adapter, self.message, self.incoming = adapter, message, incoming
        self.typing_indicator = _Typing(message.channel, adapter.name)

    async def send(self, content: JSON) -> list[Memory]:
        await self.typing_indicator.stop()
        adapter, incoming = self.adapter, self.incoming
        text = str(content.get("text") or "")
        sent, whole = await adapter._send_reply(self.message.channel, text, content, self.message)
        session = adapter.voice.session_for_text_channel(self.message.channel.id)
        if session is not None and whole:  # in voice with this channel as its text side: say it too
            session.say(text)
        return await adapter._remember(sent, content, incoming.room_id, incoming.world_id, in_reply_to=incoming.id)

    async def typing(self) -> None:
        await self.typing_indicator.start()

    async def fetch(self, attachment: Mapping[str, Any]) -> bytes:
        for item in self.message.attachments:
            if str(item.id) == str(attachment.get("id")):
                return await item.read()
        raise LookupError("no such attachment on the message")


class _Typing:
    """ "typing…" in a channel from when an answer is coming until it is sent (or 60 s)."""

    def __init__(self, channel: Any, agent: str) -> None:
        self.channel, self.agent = channel, agent
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"troupe:{self.agent}:typing")

    async def _run(self) -> None:
        try:
            async with asyncio.timeout(_TYPING_CAP_S), self.channel.typing():
                await asyncio.Event().wait()
        except Exception as exc:  # typing is a courtesy: never worth an error
            _log.debug("%s: typing indicator stopped: %s", self.agent, exc.__class__.__name__)

    async def stop(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task

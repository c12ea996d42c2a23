"""One character's Discord bot: a discord.py client in the daemon's loop, translating both ways.

Inbound, a message becomes an incoming message for the runtime, with its reply channel
(:mod:`bot.kernel.messages`); a server becomes WORLD_CONNECTED/JOINED, and other gateway events become
troupe events (``_events.py``), after the listening rules of the character's settings. Worlds,
rooms, entities and participants are written once per run and remembered, not re-written for
every message. At every start, and when Discord could not resume a lost session or shards were
taken on, what was said meanwhile is read back and handled the same way (``_catchup.py``).

A message is translated in one call (:func:`._mapping.translate`), then its server, channel and
author are stored (:meth:`DiscordAdapter.ensure_stored`) before it is handed over.

Outbound, the reply channel (:class:`bot.runtime.adapters.PlatformReplyChannel`) answers the triggering
message: this adapter sends natively (split, safe mentions, uploads, retries: ``_outbound.py``;
buttons as components, and their presses: ``_presses.py``; a ``/chat`` or ``/ask`` is answered
as the interaction's follow-ups: ``_chat.py``) and, in a voice session whose text
side the channel is, says the reply aloud too (:meth:`DiscordAdapter.after_sent`). The adapter
is also the runtime's ``discord`` service, for SEND_MESSAGE; its lifecycle and the flow of
sending are :class:`bot.runtime.adapters.PlatformAdapter`'s, the discord.py client and the checks before
connecting are in ``_client.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast

import discord

from bot.sdk import (
    AdapterState,
    ChannelType,
    ConfigError,
    Delivery,
    Entity,
    EventType,
    IncomingMessage,
    LinkState,
    Memory,
    NativeRef,
    PlatformAdapter,
    PlatformConnected,
    PlatformProfile,
    PlatformReplyChannel,
    Reply,
    Room,
    SendError,
    SentMessage,
    Settled,
    Shards,
    StoreError,
    TokenRefused,
    TypingIndicator,
    World,
    WorldConnected,
    WorldJoined,
    first_words,
    now_ms,
    reason_for,
    with_note,
)

from ._catchup import MissedMessages, active_since, catch_up, taken_on, with_stored_gap
from ._client import LOGIN_TIMEOUT_S, Client, DiscordTokens, base_intents, check_application, make_client, run_client
from ._config import DiscordConfig
from ._mapping import (
    SOURCE,
    Translated,
    channel_type,
    discord_id,
    entity_for_user,
    on_cdn,
    parent_id,
    room_for_channel,
    sent_record,
    translate,
    world_for_guild,
)
from ._outbound import add_reaction, describe, embeds_of, send_chunks, uploads_of, what_is_sent
from ._presses import components_of
from ._refusal import token_refusal
from ._voice import VoiceManager

if TYPE_CHECKING:
    from discord.abc import MessageableChannel, PartialMessageableChannel

    from bot.sdk import AgentRuntime

    from ._chat import Followups

__all__ = ["DiscordAdapter", "TYPING_EVERY_S"]

_log = logging.getLogger(__name__)

_READY_TIMEOUT_S = 60.0
_MESSAGE_TYPES = frozenset({discord.MessageType.default, discord.MessageType.reply})
_PERMISSIONS = 380141685824  # read/send messages and threads, reactions, files, history, voice
TYPING_EVERY_S = 5.0  # Discord shows "typing…" for about 10 s; discord.py renews it every 5


class DiscordAdapter(
    PlatformAdapter["MessageableChannel | Followups", discord.Message, "discord.Message | discord.PartialMessage"]
):
    """Connects one runtime to Discord as its own bot: it sends to channels (or as a slash
    command's follow-ups), and a reply quotes a message (a partial one for a reply to a stored
    message)."""

    source = SOURCE
    label = "Discord"
    where = "channel"
    reacts = True

    def __init__(self, runtime: AgentRuntime, config: DiscordConfig, shards: Shards | None = None) -> None:
        super().__init__(runtime, DiscordTokens, config.token.get_secret_value())
        self.config = config
        self.shards = shards
        """The shards this connection serves; ``None``: the bot is not sharded."""
        self.client: Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()  # the current client's first READY
        self._was_online = False  # an earlier client of this run was ready: a new one may have a gap to fill
        self._listening_since = 0  # ms: this run's first READY
        self._commands_synced = False  # this run registered its slash commands with Discord
        self._resharding = False
        self._reshard_lock = asyncio.Lock()
        self.refusal = token_refusal(self, config.token.get_secret_value())
        # Every start takes its shards on (unsharded: its one shard, 0), alone or placed.
        self._taken_on = frozenset(shards.ids) if shards is not None else frozenset({0})
        """Shards this connection took on and has not read back yet: no one listened on them (the
        daemon was down, or another just let them go), and what was said in between is in no one's
        memory but Discord's."""
        self._worlds: set[int] = set()
        self.voice = VoiceManager(self)
        self._admins_seen: set[tuple[int, int]] = set()
        self.missed = MissedMessages(config.catchup)

    # -- lifecycle ------------------------------------------------------------------------

    async def on_started(self) -> None:
        from ._providers import channel_state, voice_state

        self.runtime.register_provider(channel_state)
        if self.config.voice_enabled:
            from ._voice_actions import join_voice, leave_voice

            for action in (join_voice, leave_voice):
                self.runtime.register_action(action)
            self.runtime.register_provider(voice_state)

    async def connect(self, token: str) -> None:
        """Log in, check the bot's settings on Discord, connect; returns once ready.

        Raises:
            ConfigError: the token was refused, or the Message Content intent is not enabled for
                this bot (the message says where to enable it).
        """
        intents = base_intents()
        intents.voice_states = self.config.voice_enabled  # who is in which voice channel
        intents.members = await check_application(token, self.name)
        self._ready = asyncio.Event()
        self.client = client = make_client(self, intents, self.shards)
        from ._commands import register_commands

        register_commands(self, client.tree)
        async with asyncio.timeout(LOGIN_TIMEOUT_S):
            await client.login(token)
        self._task = self.runtime.create_task(self._run_client(client, token), "discord:client")
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

    async def _run_client(self, client: Client, token: str) -> None:
        """Keep ``client`` connected; Discord refusing it later (the bot outgrew its shards:
        4011) fails the link with the reason, as refusing it at start fails the start."""
        try:
            await run_client(client, self.name, token)
        except ConfigError as exc:
            if not self._ready.is_set():
                raise  # start() or reshard() is waiting for this connection: it reports the error
            if isinstance(exc, TokenRefused):
                self.refusal.refused_now("gateway closed with 4004")  # connected again once it is taken
                return
            reason = exc.reason_for(self.name)
            _log.error("%s: Discord closed the connection: %s", self.name, reason)
            self.runtime.links.set(SOURCE, LinkState.FAILED, reason)

    async def disconnect(self) -> None:
        """Disconnect, then let messages being answered finish (up to a limit) before the
        runtime and its database go away."""
        await self._end_client()
        await self.finish_handling()

    async def _end_client(self) -> None:
        """Close the client and wait for its connection task to end."""
        await self.voice.close()
        if self.client is not None and not self.client.is_closed():
            await self.client.close()
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task

    def is_current_connection(self, client: Client) -> bool:
        """Whether events of ``client`` are handled: it is the current one, and not being replaced."""
        return client is self.client and not self._resharding

    def covers(self, guild_id: int | None) -> bool:
        """Whether this connection hears the server ``guild_id`` (``None``: direct messages)."""
        return self.shards is None or self.shards.covers(guild_id)

    def user_id_in(self, profile: PlatformProfile) -> str | None:
        return profile.user_id  # Discord's profile keeps the person's id as userId

    def serves(self, message: Memory) -> bool:
        """Whether a stored message from Discord is this connection's to answer after a crash: one
        from a server on a shard it holds (another daemon may be answering the others)."""
        server = message.metadata.server_id
        return self.covers(int(server) if server else None)

    async def reshard(self, shards: Shards) -> None:
        """Serve ``shards`` instead of the shards held now (discord.py cannot add shards to a
        connected client): :meth:`reconnect` with them, then take up what a cut-short reply left
        (``PLATFORM_CONNECTED``). Returns once connected.

        Raises:
            ConfigError: Discord refused the new connection (the shard count, the token); the
                adapter is then disconnected, and ``reshard`` may be called again.
            RuntimeError: the adapter is not running.
        """
        if await self.reconnect(shards, f"with {shards} (was {self.shards or 'unsharded'})"):
            await self.runtime.emit(PlatformConnected(source=SOURCE))

    async def reconnect(self, shards: Shards | None, how: str, *, again: bool = False) -> bool:
        """Connect anew with ``shards`` (or ``again`` with the same): the replies being written go
        out first (bounded; one cut short stays claimed for whoever holds its shard), and what was
        said meanwhile is read back (``_catchup.py``). Whether it did (not when nothing changes)."""
        async with self._reshard_lock:
            if self.state is not AdapterState.RUNNING:
                raise RuntimeError(f"{self.name}: the Discord connection is {self.state.value}; it cannot move shards")
            if shards == self.shards and not again:
                return False
            _log.info("%s: reconnecting to Discord %s", self.name, how)
            self._resharding = True
            self._taken_on = taken_on(self.shards, shards) if shards is not None else frozenset()
            self.missed.connection_lost()
            self.runtime.links.set(SOURCE, LinkState.CONNECTING, f"reconnecting {how}")
            try:
                await self.finish_handling()
                await self._end_client()
            finally:
                self._resharding = False
            self.shards = shards
            try:
                await self.connect(self.token)
            except BaseException as exc:
                await self._end_client()
                self.runtime.links.set(SOURCE, LinkState.FAILED, reason_for(exc, self.name) or exc.__class__.__name__)
                raise
            if self._closed():  # closed while connecting: nothing may stay open
                await self._end_client()
        return True

    def _closed(self) -> bool:
        return self.state is AdapterState.CLOSED

    def _quiet(self, shard_ids: Iterable[int]) -> list[tuple[int, int]]:
        """Channels of these shards' servers with messages since this run began listening."""
        assert self.client is not None
        shards = self.shards or Shards.all(1)
        return active_since(self.client.guilds, dict.fromkeys(shard_ids, self._listening_since), shards.shard_of)

    async def run_handler(self, what: str, work: Awaitable[object]) -> None:
        """Run an event handler, tracked (:meth:`handling`); a failure is logged with the agent,
        never raised into discord.py."""
        with self.handling():
            try:
                await work
            except Exception:
                _log.exception("%s: failed to handle a Discord %s", self.name, what)

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
        shards = self.shards or Shards.all(1)
        if self._was_online:  # only where this connection hears: other shards are others'
            missed = self.missed.plan(covers=self.covers, quiet=self._quiet(shards.ids))
        else:
            self.missed.plan()  # nothing to fill, and nothing left behind for the next READY
            self._listening_since = now_ms()
            missed = []
        if self._taken_on:
            missed = await with_stored_gap(self, missed, self._taken_on)
            self._taken_on = frozenset()
        sharded = f" ({self.shards})" if self.shards is not None else ""
        _log.info(
            "%s: online on Discord as %s in %d servers%s", self.name, self.client.user, len(self.client.guilds), sharded
        )
        if not self.client.guilds:
            _log.warning(
                "%s: the bot is in no server yet; invite it with https://discord.com/oauth2/authorize"
                "?client_id=%s&scope=bot%%20applications.commands&permissions=%d",
                self.name,
                self.client.application_id,
                _PERMISSIONS,
            )
        for guild in self.client.guilds:
            await self.run_handler("server sync", self._announce(guild, EventType.WORLD_CONNECTED))
        # Once per character (every daemon serving shards of it would use up the rate limit), and
        # once per run: a later READY (a session lost for good, new shards) has the same commands.
        if self.runtime.home and not self._commands_synced:
            try:
                await self.client.tree.sync()
                self._commands_synced = True
            except discord.HTTPException as exc:
                _log.warning("%s: could not register the slash commands: %s", self.name, exc)
        self._ready.set()
        self._was_online = True
        self.runtime.links.set(SOURCE, LinkState.CONNECTED)
        if missed:
            self.runtime.create_task(self.run_handler("catch-up", catch_up(self, missed)), "discord:catch-up")
        if self.config.voice_enabled:
            await self.run_handler("voice auto-join", self.voice.auto_join(list(self.client.guilds)))

    async def on_shard_ready(self, shard_id: int) -> None:
        """One shard identified afresh after its session was lost for good (the first READY of
        every shard is :meth:`on_ready`'s): read back what that shard missed."""
        shards = self.shards
        if not self._ready.is_set() or shards is None:
            return
        missed = self.missed.plan(
            covers=lambda guild: shards.shard_of(guild) == shard_id, shard=shard_id, quiet=self._quiet((shard_id,))
        )
        self.runtime.links.set(SOURCE, LinkState.CONNECTED)
        if missed:
            self.runtime.create_task(self.run_handler("catch-up", catch_up(self, missed)), "discord:catch-up")

    async def on_guild_join(self, guild: discord.Guild) -> None:
        # Back in a server it was removed from: its rooms are no longer marked as left.
        await self.connections.mark_world_rooms(discord_id(self.runtime.agent_id, guild.id), None)
        await self._announce(guild, EventType.WORLD_JOINED)
        if self.config.voice_enabled:  # people may be in voice there already
            await self.voice.join_by_itself(guild)

    def forget_world(self, guild_id: int) -> None:
        """The bot is no longer in the server: written again if it comes back."""
        self._worlds.discard(guild_id)

    async def _announce(self, guild: discord.Guild, event: EventType) -> None:
        world, rooms = await self.ensure_world(guild)
        entities = [entity_for_user(self.runtime.agent_id, m) for m in guild.members if m.id != self.bot_id]
        announced = WorldJoined if event is EventType.WORLD_JOINED else WorldConnected
        await self.runtime.emit(announced(world=world, rooms=rooms, entities=entities, source=SOURCE))

    async def ensure_world(self, guild: discord.Guild) -> tuple[World, list[Room]]:
        """Write the guild's world and rooms (once per run); roles set by UPDATE_ROLE are kept."""
        agent = self.runtime.agent_id
        admins = [m for m in guild.members if m.guild_permissions.administrator]
        world = world_for_guild(agent, guild, admins)
        rooms = [r for c in [*guild.channels, *guild.threads] if (r := room_for_channel(agent, c)) is not None]
        if guild.id in self._worlds:
            return world, rooms
        world, _ = await self.connections.merge_world(world)
        await self.connections.ensure_rooms(rooms)
        self._worlds.add(guild.id)
        return world, rooms

    async def ensure_room(self, channel: Any, *, dm_with: Any = None) -> str:
        """The channel's room (and its server's world) stored, once per run; its id."""
        room_id = discord_id(self.runtime.agent_id, channel.id)
        if not self.connections.knows_room(room_id):
            await self._write_room(channel, room_for_channel(self.runtime.agent_id, channel, dm_with=dm_with))
        return room_id

    async def _write_room(self, channel: Any, room: Room | None) -> None:
        guild = getattr(channel, "guild", None)
        if guild is not None:
            await self.ensure_world(guild)
        if room is not None:
            await self.connections.ensure_rooms([room])

    async def ensure_entity(self, user: Any, room_id: str) -> str:
        """The user's entity, created (or its names refreshed) once per run, and in the room."""
        return await self._write_entity(user, entity_for_user(self.runtime.agent_id, user), room_id)

    async def _write_entity(self, user: Any, entity: Entity, room_id: str) -> str:
        entity_id = await self.connections.ensure_entity(entity, room_id)
        await self._note_admin(user)
        return entity_id

    async def ensure_stored(self, message: discord.Message, seen: Translated) -> None:
        """The server, channel and author of a message about to be handled stored (each once
        per run), as :func:`._mapping.translate` made them."""
        room_id = seen.memory.room_id
        if not self.connections.knows_room(room_id):
            await self._write_room(message.channel, seen.room)
        await self._write_entity(message.author, seen.entity, room_id)

    async def _note_admin(self, member: Any) -> None:
        """A Discord administrator seen for the first time becomes ADMIN, unless a role is recorded."""
        guild = getattr(member, "guild", None)
        permissions = getattr(member, "guild_permissions", None)
        if guild is None or permissions is None or not permissions.administrator:
            return
        if (guild.id, member.id) in self._admins_seen:
            return
        self._admins_seen.add((guild.id, member.id))
        await self.connections.merge_world(world_for_guild(self.runtime.agent_id, guild, [member]))

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
        seen = translate(self.runtime.agent_id, message, bot_user_id=self.bot_id)
        memory = seen.memory
        direct = memory.metadata.is_mention or memory.metadata.is_reply or memory.content.channel_type == ChannelType.DM
        if self.config.respond_only_to_mentions and not direct:
            return
        # While the store cannot write (it said so, once), the message waits here, then goes on.
        runtime = self.runtime
        health, going_on = runtime.store.health, lambda: runtime.accepting
        try:
            await health.retry(lambda: self.ensure_stored(message, seen), going_on=going_on)
        except StoreError as exc:
            if runtime.accepting:
                raise
            _log.info(
                "%s: not handling Discord message %s: stopped while the store could not write", self.name, message.id
            )
            _log.debug("%s: the store's last error: %s", self.name, exc)
            return
        await self.hand_over(message, seen.memory, seen.native)

    async def hand_over(self, message: discord.Message, memory: Memory, native: NativeRef) -> None:
        """Give the runtime ``memory`` (``message`` translated, or a press of one of its buttons)
        with its reply channel: replies quote ``message``, "typing…" shows in its channel."""
        typing = TypingIndicator(self.runtime, message.channel.typing, every_s=TYPING_EVERY_S, job="discord:typing")
        # A press's answer may edit the message its button was under (the bot's own).
        under = message if memory.content.button is not None else None
        channel = PlatformReplyChannel(self, message.channel, message, memory, typing, under=under)
        try:
            await self.runtime.receive(IncomingMessage(memory, channel, native=native))
        finally:
            await typing.stop()

    # -- sending (the flow is PlatformAdapter's) ------------------------------------------

    async def send_native(
        self,
        target: MessageableChannel | Followups,
        text: str,
        reply: Reply,
        quoting: discord.Message | discord.PartialMessage | None,
    ) -> list[discord.Message]:
        guild = getattr(target, "guild", None)  # the server's limit where known (boosted servers take more)
        limit = guild.filesize_limit if guild is not None else discord.utils.DEFAULT_FILE_SIZE_LIMIT_BYTES
        files, note = await uploads_of(reply.files, limit)
        if note:
            text = with_note(text, note)
        return await send_chunks(
            target,
            text,
            files=files,
            embeds=embeds_of(reply.extra.get("embeds")),  # Discord's own: a plugin's, kept in extra
            view=components_of(reply.buttons, reply.menu),
            reference=quoting,
            deadline_s=self.config.send_deadline,
        )

    async def settle_native(
        self, target: MessageableChannel | Followups, under: discord.Message, settled: Settled
    ) -> discord.Message:
        """The bot's own message edited (its content with the note under it, no components),
        bounded by the send deadline."""
        async with asyncio.timeout(self.config.send_deadline):
            return await under.edit(content=settled.shown_under(under.content), view=None)

    def record_of_sent(self, message: discord.Message) -> SentMessage:
        return sent_record(self.runtime.agent_id, message)

    def describe_send(
        self, target: MessageableChannel | Followups, quoting: discord.Message | discord.PartialMessage | None
    ) -> str:
        return what_is_sent(target, quoting)

    def failure_reason(self, exc: Exception) -> str:
        return describe(exc)

    def refusal_message(self, exc: Exception) -> str | None:
        if isinstance(exc, discord.Forbidden):
            return "Discord says I'm not allowed to send there (they may not accept direct messages)"
        if isinstance(exc, discord.HTTPException) and exc.status == 401:
            self.refusal.refused_now()  # the gateway may not have said so yet
            return "Discord refused my bot token; my operator has to give me a new one"
        return None

    async def react_native(
        self, target: MessageableChannel | Followups, quoting: discord.Message | discord.PartialMessage, emoji: str
    ) -> None:
        """A unicode emoji, or a server's own as ``<:name:id>`` (``<a:name:id>`` animated)."""
        # discord.py would send "<:name:id>" as ":name:id"; Discord's route wants "name:id".
        await add_reaction(quoting, discord.PartialEmoji.from_str(emoji), deadline_s=self.config.send_deadline)

    async def fetch_attachment(
        self, quoting: discord.Message | discord.PartialMessage | None, attachment: Mapping[str, object]
    ) -> bytes:
        """One of the message's attachments; else one of an earlier message, from its URL on
        Discord's CDN (which Discord stops serving after about a day: then LookupError)."""
        for item in quoting.attachments if isinstance(quoting, discord.Message) else ():
            if str(item.id) == str(attachment.get("id")):
                return await item.read()
        url = attachment.get("url")
        if (
            self.client is None
            or not isinstance(url, str)
            or not on_cdn(url, attachment.get("id"), self.config.api_base)
        ):
            raise LookupError("no such attachment on the message")
        try:
            return await self.client.http.get_from_cdn(url)
        except (discord.NotFound, discord.Forbidden):
            raise LookupError("Discord no longer serves that attachment") from None

    async def after_sent(
        self,
        delivery: Delivery[MessageableChannel | Followups, discord.Message, discord.Message | discord.PartialMessage],
    ) -> None:
        """A live reply in the text side of a voice session is said aloud too."""
        if delivery.in_reply_to is None or not delivery.text.strip():
            return
        session = self.voice.session_for_text_channel(delivery.target.id)
        if session is not None:
            session.say(delivery.text)

    async def room_target(self, room: Room) -> MessageableChannel:
        """A channel of a server this bot is in, and listens in."""
        assert self.client is not None and room.channel_id is not None
        channel = self.client.get_channel(int(room.channel_id))
        if channel is None:
            try:
                channel = await self.client.fetch_channel(int(room.channel_id))
            except discord.HTTPException:
                raise SendError(f"I can't see #{room.name} any more") from None
        if not self.listens_in(channel):
            raise SendError(f"I'm not allowed to talk in #{room.name}")
        return cast("MessageableChannel", channel)  # a room with a channel id is one messages go to

    async def entity_target(self, entity: Entity, user_id: str) -> tuple[MessageableChannel, str, str | None]:
        """The DM channel with the person, written to the store with them in it."""
        assert self.client is not None
        try:
            user = self.client.get_user(int(user_id)) or await self.client.fetch_user(int(user_id))
            channel = await user.create_dm()
        except discord.HTTPException:
            raise SendError("I can't reach them on Discord") from None
        room_id = await self.ensure_room(channel, dm_with=user)
        await self.ensure_entity(user, room_id)
        return channel, room_id, None

    async def reply_target(
        self, message: Memory, text: str
    ) -> tuple[MessageableChannel, discord.PartialMessage | None] | None:
        """The stored message's channel, and the message itself (if it still exists) to reply to."""
        assert self.client is not None
        channel_id, quoted = message.metadata.channel_id, message.metadata.discord_message_id
        if not channel_id:
            return None
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
            return None
        target = cast("PartialMessageableChannel", channel)  # a stored message's channel is one messages go to
        return target, target.get_partial_message(int(quoted)) if quoted else None

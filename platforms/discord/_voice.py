"""A character in Discord voice channels: joining and leaving, listening, answering aloud.

One voice connection per server (Discord's rule). Each connection is a :class:`VoiceSession`:
its voice channel is a VOICE_GROUP room; what each person says becomes, once they pause, a
transcribed message from that person in that room, handled by the normal pipeline; the
character's reply is spoken sentence by sentence while the model is still writing it. A person
who starts talking over the character stops it (barge-in).

If listening cannot work on a connection (DAVE decryption failing, say), the character says so
once in the linked text channel and keeps speaking its replies to what is written there.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

import discord
from discord.voice_state import VoiceConnectionState

from bot.sdk import (
    ChannelType,
    Content,
    IncomingMessage,
    Memory,
    MemoryMetadata,
    MemoryType,
    ModelError,
    QuietChannel,
    Reply,
    SentenceStream,
    VoiceEnded,
    VoiceStarted,
    now_ms,
    record_sent,
    transcribe,
    unique_uuid,
)
from bot.sdk.media import SPEECH_PCM, Utterance, resample, wav

from ._mapping import SOURCE, discord_id, user_names
from ._voice_player import SpeechPlayer
from ._voice_presence import AloneTimer, alone_with, channel_to_join, company
from ._voice_receive import VoiceReceiver

if TYPE_CHECKING:
    from ._adapter import DiscordAdapter

__all__ = ["VoiceError", "VoiceManager", "VoiceSession"]

_log = logging.getLogger(__name__)

V = TypeVar("V", VoiceStarted, VoiceEnded)

_CONNECT_TIMEOUT_S = 20.0
_DISCONNECT_TIMEOUT_S = 3.0
_MIN_TRANSCRIPT_CHARS = 3
_BARGE_IN_FRAMES = 10  # 200 ms more of someone's voice than of quiet, over the character, stops it


class VoiceError(Exception):
    """A voice request that cannot be done; the message is fit to show the person who asked."""


class _VoiceClient(discord.VoiceClient):
    """discord.py's VoiceClient, plus the SPEAKING messages that say which SSRC is whom."""

    receiver: VoiceReceiver | None = None

    def create_connection_state(self) -> VoiceConnectionState:
        return VoiceConnectionState(self, hook=self._on_voice_ws)

    async def _on_voice_ws(self, ws: Any, message: dict[str, Any]) -> None:
        if message.get("op") == 5 and self.receiver is not None:
            self.receiver.on_speaking(message.get("d") or {})


class VoiceSession:
    """One voice connection: its channel, its room, its player and its ears."""

    def __init__(
        self, manager: VoiceManager, client: _VoiceClient, channel: Any, text_channel: Any, room_id: str
    ) -> None:
        self.manager = manager
        self.client = client
        self.channel = channel
        self.text_channel = text_channel
        self.room_id = room_id
        self.player = SpeechPlayer(manager.runtime, client)
        self.receiver: VoiceReceiver | None = None
        self.alone = AloneTimer()
        self._loud: dict[int, int] = {}

    def _is_bot(self, user_id: int) -> bool:
        # Other bots (other characters included) are not listened to: each character answers the people.
        member = self.channel.guild.get_member(user_id)
        return bool(member is not None and member.bot)

    def listen(self) -> None:
        adapter = self.manager.adapter
        self.receiver = VoiceReceiver(
            self.client,
            adapter.config.vad,
            on_utterance=self._heard,
            on_voice=self._voice_level,
            on_failure=self._cannot_listen,
            is_bot=self._is_bot,
            agent=adapter.name,
        )
        self.client.receiver = self.receiver
        self.receiver.start()

    async def close(self) -> None:
        self.alone.cancel()
        if self.receiver is not None:
            await self.receiver.close()
        await self.player.close()

    def say(self, text: str) -> None:
        """Speak ``text`` (all of it, sentence by sentence)."""
        stream = SentenceStream()
        for sentence in stream.feed(text) + stream.finish(text):
            self.player.say(sentence)

    # -- hearing --------------------------------------------------------------------------

    def _voice_level(self, user: int, level_db: float) -> None:
        if not self.player.speaking:
            self._loud.clear()
            return
        if level_db < self.manager.adapter.config.barge_in_db:
            # A quiet frame (a gap between syllables) takes one back rather than starting over:
            # it takes ten more loud frames than quiet ones to interrupt.
            self._loud[user] = max(0, self._loud.get(user, 0) - 1)
            return
        self._loud[user] = self._loud.get(user, 0) + 1
        if self._loud[user] == _BARGE_IN_FRAMES:
            _log.info("%s: interrupted in %s; stopping", self.manager.name, self.channel.name)
            self.player.stop()

    async def _cannot_listen(self, reason: str) -> None:
        name = self.manager.name
        _log.warning(
            "%s: cannot listen in voice channel %s: %s; replies to text are still spoken",
            name,
            self.channel.name,
            reason,
        )
        try:
            await self.text_channel.send(
                f"I can't hear anyone in {self.channel.mention} right now, but I'll still "
                "speak my replies to what you write here."
            )
        except discord.HTTPException as exc:
            _log.warning("%s: could not say so in #%s: %s", name, getattr(self.text_channel, "name", "?"), exc)

    async def _heard(self, user_id: int, utterance: Utterance) -> None:
        runtime, adapter = self.manager.runtime, self.manager.adapter
        member = self.channel.guild.get_member(user_id)
        if member is None:
            try:
                member = await self.channel.guild.fetch_member(user_id)
            except discord.HTTPException:
                _log.debug("%s: speech from unknown user %s ignored", self.manager.name, user_id)
                return
        audio = await asyncio.to_thread(lambda: wav(resample(utterance.pcm, utterance.fmt, SPEECH_PCM), SPEECH_PCM))
        try:
            text = await transcribe(runtime, audio, "speech.wav")
        except ModelError as exc:
            _log.warning(
                "%s: could not transcribe %s in %s: %s", self.manager.name, member.display_name, self.channel.name, exc
            )
            return
        if len(text) < _MIN_TRANSCRIPT_CHARS or "[BLANK_AUDIO]" in text:
            return
        await adapter.ensure_entity(member, self.room_id)
        agent = runtime.agent_id
        # Just the two of them in the channel: what is said is said to the character (_gate.py).
        one_to_one = alone_with(self.channel, adapter.bot_id, user_id)
        memory = Memory(
            id=unique_uuid(agent, f"{SOURCE}:voice:{self.channel.id}:{user_id}:{uuid.uuid4()}"),
            entity_id=discord_id(agent, user_id),
            agent_id=agent,
            room_id=self.room_id,
            world_id=discord_id(agent, self.channel.guild.id),
            content=Content(text=text, source=SOURCE, channel_type=ChannelType.VOICE_GROUP, is_voice_message=True),
            created_at=now_ms(),
            metadata=MemoryMetadata(
                type=MemoryType.MESSAGE,
                entity_name=(user_names(member) or [str(user_id)])[0],
                author_is_bot=False,
                is_mention=False,
                is_reply=False,
                one_to_one=one_to_one,
                author_id=str(user_id),
                channel_id=str(self.channel.id),
                server_id=str(self.channel.guild.id),
            ),
        )
        await runtime.receive(IncomingMessage(memory, _Spoken(self, memory)))


class _Spoken(QuietChannel):
    """The reply channel of something said in a voice channel: the answer is spoken, sentence by
    sentence while the model is still writing it, and stored as said there."""

    streams = True

    def __init__(self, session: VoiceSession, heard: Memory) -> None:
        self.session, self.heard = session, heard
        self._sentences = SentenceStream()

    def stream(self, text_so_far: str) -> None:
        for sentence in self._sentences.feed(text_so_far):
            self.session.player.say(sentence)

    async def send(self, reply: Reply) -> list[Memory]:
        text = reply.text.strip()
        if not text:
            return []
        for sentence in self._sentences.finish(text):
            self.session.player.say(sentence)
        runtime = self.session.manager.runtime
        agent = runtime.agent_id
        spoken = Memory(
            id=str(uuid.uuid4()),
            entity_id=agent,
            agent_id=agent,
            room_id=self.session.room_id,
            world_id=self.heard.world_id,
            created_at=now_ms(),
            # What a plugin sent along, as it gave it; spoken, no file or button goes out.
            content=replace(
                Content.from_json(reply.extra),
                text=text,
                actions=reply.actions or None,
                thought=reply.thought,
                source=SOURCE,
                in_reply_to=self.heard.id,
                is_voice_message=True,
                channel_type=ChannelType.VOICE_GROUP,
            ),
            metadata=MemoryMetadata(type=MemoryType.MESSAGE),
        )
        return await record_sent(runtime, [spoken], SOURCE)


class VoiceManager:
    """Every voice connection of one character (at most one per server)."""

    def __init__(self, adapter: DiscordAdapter) -> None:
        self.adapter = adapter
        self.runtime = adapter.runtime
        self.name = adapter.name
        self.sessions: dict[int, VoiceSession] = {}
        self._locks: dict[int, asyncio.Lock] = {}

    def session_for_text_channel(self, channel_id: int) -> VoiceSession | None:
        return next((s for s in self.sessions.values() if s.text_channel.id == channel_id), None)

    async def join(self, channel: Any, *, text_channel: Any = None) -> VoiceSession:
        """Join ``channel`` (leaving another voice channel of the same server first).

        Raises:
            VoiceError: voice is off for this character, or it may not join that channel.
        """
        self._check_joinable(channel)
        async with self._locks.setdefault(channel.guild.id, asyncio.Lock()):
            current = self.sessions.get(channel.guild.id)
            if current is not None and current.channel.id == channel.id:
                return current
            if current is not None:
                await self._end(channel.guild.id)
            session = await self._connect(channel, text_channel)
        await self._joined(session)
        return session

    async def join_by_itself(self, guild: Any, entered: Any = None) -> None:
        """Go, unasked, into the voice channel :func:`channel_to_join` picks (``entered``: the one a
        person just entered), unless the character is in one of ``guild`` already. A failure is
        logged, once: it is tried again only when a person next enters, never in a loop."""
        channel = channel_to_join(guild, self.adapter.config, self.adapter.bot_id, entered)
        if channel is None or guild.id in self.sessions:
            return
        try:
            self._check_joinable(channel)
            async with self._locks.setdefault(guild.id, asyncio.Lock()):
                if guild.id in self.sessions:  # joined meanwhile, asked or not: that one stays
                    return
                session = await self._connect(channel, None)
        except VoiceError as exc:
            _log.error(
                "%s: could not join voice channel %s by itself: %s (tried again when someone next enters it)",
                self.name,
                channel.name,
                exc,
            )
            return
        await self._joined(session)

    def _check_joinable(self, channel: Any) -> None:
        if not self.adapter.config.voice_enabled:
            raise VoiceError(f"Voice is switched off for {self.name} (DISCORD_VOICE_ENABLED).")
        permissions = channel.permissions_for(channel.guild.me)
        if not (permissions.connect and permissions.speak):
            raise VoiceError(f"I'm not allowed to connect and speak in {channel.name}.")
        if channel.user_limit and len(channel.members) >= channel.user_limit and not permissions.move_members:
            raise VoiceError(f"{channel.name} is full.")

    async def _connect(self, channel: Any, text_channel: Any) -> VoiceSession:
        """Connect to ``channel`` and start its session; the server's lock is held."""
        try:
            client = await channel.connect(
                cls=_VoiceClient, timeout=_CONNECT_TIMEOUT_S, self_deaf=False, reconnect=True
            )
        except (TimeoutError, discord.ClientException, discord.HTTPException, OSError) as exc:
            _log.warning("%s: could not join voice channel %s: %s", self.name, channel.name, exc.__class__.__name__)
            raise VoiceError(f"I couldn't connect to {channel.name}; try again in a moment.") from exc
        room_id = await self.adapter.ensure_room(channel)
        session = VoiceSession(self, client, channel, text_channel or channel, room_id)
        self.sessions[channel.guild.id] = session
        if self.adapter.config.voice_listen:
            session.listen()
        return session

    async def _joined(self, session: VoiceSession) -> None:
        _log.info("%s: joined voice channel %s in %s", self.name, session.channel.name, session.channel.guild.name)
        await self.runtime.emit(self._event(session, VoiceStarted))
        self.consider_company(session.channel.guild.id)

    async def follow(self, channel: Any) -> None:
        """The bot was moved to ``channel`` (by someone else): the session, and the room it hears
        and speaks in, go with it. discord.py keeps the voice connection itself."""
        guild = channel.guild
        async with self._locks.setdefault(guild.id, asyncio.Lock()):
            session = self.sessions.get(guild.id)
            if session is None or session.channel.id == channel.id:
                return  # a join of ours, already done
            left = self._event(session, VoiceEnded)
            if session.text_channel is session.channel:
                session.text_channel = channel  # it wrote in the voice channel's own chat: still does
            old, session.channel = session.channel, channel
            session.room_id = await self.adapter.ensure_room(channel)
        _log.info("%s: moved from voice channel %s to %s", self.name, old.name, channel.name)
        await self.runtime.emit(left)
        await self.runtime.emit(self._event(session, VoiceStarted))

    async def disconnected(self, guild_id: int) -> None:
        """Someone else disconnected the bot from voice: the session is over."""
        async with self._locks.setdefault(guild_id, asyncio.Lock()):
            await self._end(guild_id, confirmed=False)

    def consider_company(self, guild_id: int) -> None:
        """Start counting down to leaving when nobody (no person) is left in the server's voice
        channel; stop when someone is there again (see ``_voice_presence.py``)."""
        session = self.sessions.get(guild_id)
        if session is None:
            return
        config = self.adapter.config
        wait = config.voice_alone_s
        home = config.voice_stay and config.voice_channel_id == str(session.channel.id)
        if not wait or home or company(session.channel, self.adapter.bot_id).people:
            session.alone.cancel()
        elif not session.alone.running:
            session.alone.task = self.runtime.create_task(self._leave_when_alone(session, wait), "discord:voice-alone")

    async def _leave_when_alone(self, session: VoiceSession, wait: float) -> None:
        await asyncio.sleep(wait)
        guild_id = session.channel.guild.id
        async with self._locks.setdefault(guild_id, asyncio.Lock()):
            if self.sessions.get(guild_id) is not session or company(session.channel, self.adapter.bot_id).people:
                return
            _log.info("%s: nobody in voice channel %s for %g s; leaving", self.name, session.channel.name, wait)
            await self._end(guild_id)
        # People in its own channel meanwhile (or elsewhere, with DISCORD_VOICE_AUTO_JOIN): go to them.
        await self.join_by_itself(session.channel.guild)

    async def leave(self, guild: Any) -> str | None:
        """Leave the server's voice channel; its name, or ``None`` if not in one."""
        async with self._locks.setdefault(guild.id, asyncio.Lock()):
            return await self._end(guild.id)

    async def _end(self, guild_id: int, *, confirmed: bool = True) -> str | None:
        session = self.sessions.pop(guild_id, None)
        if session is None:
            return None
        await session.close()
        try:
            if confirmed:  # discord.py waits for Discord to confirm (up to 30 s) before one may join again
                await asyncio.wait_for(session.client.disconnect(force=True), _DISCONNECT_TIMEOUT_S)
            else:
                await asyncio.wait_for(_disconnect_now(session.client), _DISCONNECT_TIMEOUT_S)
        except Exception as exc:  # already gone is fine: the goal is to be out
            _log.debug("%s: voice disconnect: %s", self.name, exc)
        _log.info("%s: left voice channel %s", self.name, session.channel.name)
        await self.runtime.emit(self._event(session, VoiceEnded))
        return str(session.channel.name)

    def _event(self, session: VoiceSession, kind: type[V]) -> V:
        agent = self.runtime.agent_id
        return kind(
            room_id=session.room_id,
            world_id=discord_id(agent, session.channel.guild.id),
            channel_id=str(session.channel.id),
            channel_name=session.channel.name,
            source=SOURCE,
        )

    async def auto_join(self, guilds: list[Any]) -> None:
        """At start (each READY): go where people already are (:meth:`join_by_itself`) in each
        server, and say once if DISCORD_VOICE_CHANNEL_ID cannot be the character's channel."""
        config = self.adapter.config
        wanted = config.voice_channel_id
        if wanted is not None:
            found = next((c for g in guilds if (c := g.get_channel(int(wanted))) is not None), None)
            if found is None:
                _log.warning("%s: DISCORD_VOICE_CHANNEL_ID %s is in none of the bot's servers", self.name, wanted)
            elif not isinstance(found, discord.VoiceChannel | discord.StageChannel):
                _log.error("%s: DISCORD_VOICE_CHANNEL_ID %s is #%s, not a voice channel", self.name, wanted, found.name)
            elif not config.voice_stay and not company(found, self.adapter.bot_id).people:
                _log.info("%s: will join voice channel %s when someone enters it", self.name, found.name)
        for guild in guilds:
            await self.join_by_itself(guild)

    async def close(self) -> None:
        # Shutting down: the runtime has already stopped the gateway's reader, so Discord's
        # confirmation could never arrive. Say we leave, close the voice connection, and go.
        for guild_id in list(self.sessions):
            await self._end(guild_id, confirmed=False)


async def _disconnect_now(client: discord.VoiceClient) -> None:
    """``client.disconnect(force=True)`` without waiting for Discord to confirm the leave."""
    client.stop()
    await client._connection.disconnect(force=True, wait=False)
    client.cleanup()

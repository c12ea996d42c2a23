"""One character's Telegram bot: a python-telegram-bot Application driven inside the daemon's
loop (initialize, start, long polling — never ``run_polling()``), translating both ways.

Inbound, a message becomes an incoming message for the runtime with its reply channel
(:mod:`bot.messages`); other updates become troupe events: MESSAGE_UPDATED for edits, REACTION_RECEIVED, WORLD_JOINED the first time a chat is seen, ENTITY_JOINED/LEFT.
Chats, topics and people are written once per run and remembered. ``/start`` and ``/help`` are
answered without the model. Voice notes, audio files and round videos are transcribed before
the pipeline sees them, so the words are the message (and a name said aloud addresses the
character); if that fails the message goes on with its attachment, as any other file. Audio over
the 20 MB the Bot API lets bots download is never fetched: the character sees a voice message
it could not listen to, and why.

Outbound, replies quote the triggering message, are converted to MarkdownV2 (plain text if
Telegram still refuses), split at 4096 characters, stay in their forum topic, and show
"typing…" while an answer is prepared. A reply to a voice message (or, by
``TELEGRAM_VOICE_REPLIES=always``, every reply and every message SEND_MESSAGE delivers) is
also spoken as a voice note, after the text. What one character sends in a group is relayed to
the daemon's other characters there. The adapter is also the runtime's ``telegram`` Messenger.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from telegram import Message, Update
from telegram.error import BadRequest, Conflict, Forbidden, InvalidToken, TelegramError
from telegram.ext import Application, ApplicationBuilder, ContextTypes, TypeHandler

from bot.adapters import PlatformAdapter, TypingIndicator
from bot.backoff import ExponentialBackoff
from bot.connections import SentMessage, TokenClaims
from bot.errors import ConfigError, ModelError, PartlySent, reason_for
from bot.events import EventType
from bot.lifecycle import AdapterState
from bot.links import LinkState
from bot.messages import IncomingMessage, QuietChannel
from bot.models import ModelType
from bot.types import JSON, ChannelType, Entity, Memory, Room, now_ms

from ._config import TelegramConfig
from ._inbox import InboxQueue, replay
from ._mapping import (
    SOURCE,
    channel_type,
    entity_for_user,
    entity_id,
    is_topic,
    memory_for_message,
    message_id,
    room_for_message,
    room_id,
    world_for_chat,
    world_id,
)
from ._outbound import send_text, send_voice
from ._relay import Relay
from ._voice import speakable, speech_audio, spoken_media, voice_note

if TYPE_CHECKING:
    from bot.runtime import AgentRuntime

__all__ = ["TelegramAdapter"]

_log = logging.getLogger(__name__)

_ALLOWED_UPDATES = ["message", "edited_message", "message_reaction", "my_chat_member", "chat_member"]
_START_TIMEOUT_S = 30.0
_TYPING_EVERY_S = 4.5  # Telegram shows a chat action for 5 s
_MAX_DOWNLOAD = 20 * 1024 * 1024  # the Bot API serves files up to 20 MB
_TOO_LARGE = "larger than the 20 MB the Telegram Bot API lets bots download"
_DOWNLOAD_TIMEOUT_S = 60.0
_PROBE_TIMEOUT_S = 15.0
# Telegram answers 409 while a previous poll of a restarted process is still open; only a
# conflict that keeps coming back means another process really uses the token.
_CONFLICTS_TO_STOP = 3
_CONFLICT_WINDOW_S = 120.0


class TelegramTokens(TokenClaims):
    """The Telegram bot tokens a daemon's characters use (``runtime.shared.one(TelegramTokens)``)."""

    def __init__(self) -> None:
        super().__init__("TELEGRAM_BOT_TOKEN", "create one per character with @BotFather")


class ChatTarget(NamedTuple):
    """Where a message goes: a chat, and a forum topic in it."""

    chat_id: int
    thread_id: int | None = None
    title: str | None = None  # the chat's title, for the log, when known


class TelegramAdapter(PlatformAdapter[ChatTarget, Message]):
    """Connects one runtime to Telegram as its own bot."""

    source = SOURCE
    label = "Telegram"
    where = "chat"
    sends_files = False

    def __init__(self, runtime: AgentRuntime, config: TelegramConfig) -> None:
        super().__init__(runtime, TelegramTokens, config.token.get_secret_value())
        self.config = config
        self.app: Application | None = None
        self.bot_id = 0
        self.username = ""
        self._chats: set[int] = set()
        self._members: dict[int, bool] = {}  # chat id -> whether this bot is in it (for the relay)
        self._conflicts: list[float] = []
        self._watching: asyncio.Task[None] | None = None
        self._relay = runtime.shared.one(Relay)  # this daemon's other Telegram characters

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        """Check the token, remove any webhook, start long polling.

        Raises:
            ConfigError: the token was refused, or another character uses it.
        """
        await super().start()

    async def _started(self) -> None:
        # Stop fetching when the agent drains: an update fetched and then refused would be lost
        # (the next poll confirms it); one never fetched waits for the next start.
        self.runtime.on_drain(self._stop_polling)
        self._relay.join(self)
        _log.info("%s: online on Telegram as @%s", self.name, self.username)

    async def _connect(self, token: str) -> None:
        timeout = self.config.poll_timeout
        self.app = app = (
            ApplicationBuilder()
            .token(token)
            .base_url(self.config.base_url)
            .base_file_url(self.config.base_file_url)
            .connect_timeout(10)
            .read_timeout(30)
            .write_timeout(30)
            .pool_timeout(10)
            .get_updates_read_timeout(timeout + 10)
            .concurrent_updates(64)
            .update_queue(InboxQueue(self.runtime))
            .build()
        )
        app.add_handler(TypeHandler(Update, self._on_update))
        app.add_error_handler(self._on_handler_error)
        try:
            async with asyncio.timeout(_START_TIMEOUT_S):
                await app.initialize()
                await app.bot.delete_webhook(drop_pending_updates=False)  # polling and a webhook exclude each other
        except InvalidToken:
            raise ConfigError(
                "Telegram refused the bot token in TELEGRAM_BOT_TOKEN; copy it again from "
                "@BotFather (/mybots → your bot → API Token)",
                agent=self.name,
            ) from None
        self.bot_id, self.username = app.bot.id, app.bot.username
        await app.start()
        await replay(self.runtime, app.bot, app.update_queue)
        assert app.updater is not None  # ApplicationBuilder makes one unless told not to
        await app.updater.start_polling(
            timeout=int(timeout), allowed_updates=_ALLOWED_UPDATES, error_callback=self._on_polling_error
        )

    async def _disconnect(self) -> None:
        """Stop polling, let messages being answered finish (up to a limit), shut down."""
        self._relay.leave(self)
        app = self.app
        if app is None:
            return
        with contextlib.suppress(Exception):
            if app.updater is not None and app.updater.running:
                await app.updater.stop()
        await self._finish_handling()
        with contextlib.suppress(Exception):
            if app.running:
                await app.stop()
        with contextlib.suppress(Exception):
            await app.shutdown()

    def _on_polling_error(self, exc: TelegramError) -> None:
        if isinstance(exc, Conflict):
            now = time.monotonic()
            self._conflicts = [t for t in self._conflicts if now - t < _CONFLICT_WINDOW_S] + [now]
            if len(self._conflicts) >= _CONFLICTS_TO_STOP:
                _log.error(
                    "%s: another process is polling Telegram with this bot's token (409 Conflict); stopping "
                    "Telegram for this character. Stop the other process (or give each its own bot) and "
                    "restart troupe",
                    self.name,
                )
                self.runtime.links.set(SOURCE, LinkState.FAILED, "another process polls with this bot's token")
                self.runtime.create_task(self._stop_polling(), "telegram:stop-polling")
            return
        _log.warning("%s: Telegram polling error (%s); retrying", self.name, exc.__class__.__name__)
        self.runtime.links.set(SOURCE, LinkState.RETRYING, f"polling failed ({exc.__class__.__name__})")
        if self._watching is None or self._watching.done():
            self._watching = self.runtime.create_task(self._watch_recovery(), "telegram:recovery")

    async def _watch_recovery(self) -> None:
        """python-telegram-bot retries polling by itself but says nothing when it works again: ask
        Telegram (getMe) with back-off until it answers, then the link is up again."""
        backoff = ExponentialBackoff(1.0, 30.0)
        while self.app is not None and self.state is not AdapterState.CLOSED:
            await asyncio.sleep(backoff.delay())
            try:
                async with asyncio.timeout(_PROBE_TIMEOUT_S):
                    await self.app.bot.get_me()
            except (TelegramError, TimeoutError):
                continue
            self.runtime.links.set(SOURCE, LinkState.CONNECTED)
            return

    async def _stop_polling(self) -> None:
        if self.app is not None and self.app.updater is not None and self.app.updater.running:
            await self.app.updater.stop()

    async def _on_handler_error(self, update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        _log.error("%s: failed to handle a Telegram update", self.name, exc_info=context.error)

    # -- chats, rooms, people -------------------------------------------------------------

    def allowed(self, chat: Any) -> bool:
        if channel_type(chat) is ChannelType.DM and not self.config.allow_direct_messages:
            return False
        allowed = self.config.allowed_chats
        if allowed is None:
            return True
        username = getattr(chat, "username", None)
        return str(chat.id) in allowed or (username is not None and f"@{username}" in allowed)

    async def is_member(self, chat_id: int) -> bool:
        """Whether this bot is in the chat (asked once, then remembered)."""
        if chat_id in self._chats:
            return True
        if chat_id not in self._members:
            assert self.app is not None
            try:
                member = await self.app.bot.get_chat_member(chat_id, self.bot_id)
                self._members[chat_id] = member.status not in ("left", "kicked")
            except TelegramError:
                self._members[chat_id] = False
        return self._members[chat_id]

    async def _ensure_chat(self, message: Message) -> None:
        """The chat's world and main room, written the first time the chat is seen; WORLD_JOINED
        when troupe has never seen it before."""
        chat = message.chat
        if chat.id in self._chats:
            return
        agent = self.runtime.agent_id
        owner, admins = await self._administrators(chat)
        world = world_for_chat(agent, chat, owner_id=owner, admin_ids=admins)
        main = (
            room_for_message(agent, message)
            if not is_topic(message)
            else Room(
                room_id(agent, chat.id),
                source=SOURCE,
                type=channel_type(chat),
                agent_id=agent,
                name=world.name,
                world_id=world.id,
                server_id=str(chat.id),
                channel_id=str(chat.id),
            )
        )
        # Keeps roles given through UPDATE_ROLE; adds what Telegram says about new admins.
        _, created = await self.connections.merge_world(world)
        await self.connections.ensure_rooms([main])
        self._chats.add(chat.id)
        if created:
            sender = message.from_user  # this bot, for a chat first seen through what it sent there
            entities = [entity_for_user(agent, sender)] if sender and sender.id != self.bot_id else []
            await self.runtime.emit(
                EventType.WORLD_JOINED, {"world": world, "rooms": [main], "entities": entities, "source": SOURCE}
            )

    async def _administrators(self, chat: Any) -> tuple[int | None, list[int]]:
        if channel_type(chat) is ChannelType.DM or self.app is None:
            return None, []
        try:
            members = await self.app.bot.get_chat_administrators(chat.id)
        except TelegramError as exc:
            _log.info("%s: could not list the administrators of %s: %s", self.name, chat.id, exc)
            return None, []
        owner = next((m.user.id for m in members if m.status == "creator"), None)
        return owner, [m.user.id for m in members if m.status == "administrator" and not m.user.is_bot]

    async def _ensure_room(self, message: Message) -> str:
        await self._ensure_chat(message)
        room = room_for_message(self.runtime.agent_id, message)
        await self.connections.ensure_rooms([room])
        return room.id

    async def _ensure_entity(self, user: Any, room: str) -> str:
        return await self.connections.ensure_entity(entity_for_user(self.runtime.agent_id, user), room)

    # -- inbound --------------------------------------------------------------------------

    async def _on_update(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._handling.add(task)
        try:
            chat = update.effective_chat
            if chat is None or not self.allowed(chat):
                return
            if update.message is not None:
                await self._on_message(update.message)
            elif update.edited_message is not None:
                await self._on_edit(update.edited_message)
            elif update.message_reaction is not None:
                await self._on_reaction(update)
            elif update.chat_member is not None:
                await self._on_chat_member(update)
        finally:
            self._handling.discard(task)
        # Dealt with. One refused because the agent is draining stays in the inbox for the next start.
        if self.runtime.accepting:
            await self.runtime.store.inbox_done(SOURCE, str(update.update_id))

    async def _on_message(self, message: Message) -> None:
        sender = message.from_user
        if sender is None or sender.id == self.bot_id:
            return
        if message.new_chat_members or message.left_chat_member:
            await self._on_membership_message(message)
            return
        await self._handle(message)

    async def on_relayed(self, messages: list[Message]) -> None:
        """Another of the daemon's characters said this in a chat this bot is in."""
        if not self.allowed(messages[0].chat):
            return
        await self._handle(messages[0], text="\n".join(m.text or "" for m in messages), relayed=True)

    async def _handle(self, message: Message, *, text: str | None = None, relayed: bool = False) -> None:
        agent = self.runtime.agent_id
        room = await self._ensure_room(message)
        await self._ensure_entity(message.from_user, room)
        if not relayed and await self._answer_command(message):
            return
        memory = memory_for_message(agent, message, bot_id=self.bot_id, bot_username=self.username)
        if text is not None:
            memory.content["text"] = text
            memory.metadata["isMention"] = (
                memory.metadata["isMention"] or f"@{self.username}".casefold() in text.casefold()
            )
        attachments = _attachments(message)
        if attachments:
            memory.content["attachments"] = attachments
        if not relayed:
            # In this update's own task (the Application handles updates concurrently): polling
            # and other chats go on while the audio is fetched and transcribed.
            await self._listen(message, memory)
        if not memory.content["text"] and not attachments:
            return
        channel = _Answer(self, message, memory)
        try:
            await self.runtime.receive(IncomingMessage(memory, channel))
        finally:
            await channel.typing_indicator.stop()

    async def _answer_command(self, message: Message) -> bool:
        """``/start`` and ``/help`` (also ``/help@thisbot``): answered here, without the model."""
        command = (message.text or "").split(maxsplit=1)[0].lower() if message.text else ""
        name, _, target = command.partition("@")
        if name not in ("/start", "/help") or (target and target != self.username.lower()):
            return False
        character = self.runtime.character
        about = character.bio[0] if character.bio else ""
        if name == "/start":
            text = f"Hi, I'm {character.name}. {about}".strip() + "\n\nJust write to me here."
        else:
            text = (
                f"I'm {character.name}. In a private chat, just write to me. In a group, mention "
                f"@{self.username}, reply to one of my messages, or call me by name."
            )
        await self._send_reply(
            message.chat.id,
            text,
            reply_to=message.message_id,
            thread_id=message.message_thread_id if is_topic(message) else None,
            title=message.chat.title,
        )
        return True

    async def _listen(self, message: Message, memory: Memory) -> None:
        """Transcribe the message's voice note, audio file or round video into its text (after
        the caption, if any); its attachment keeps the transcript and is marked ``transcribed``,
        so the core does not transcribe it again.

        Spoken notes set ``content.isVoiceMessage``. A failure is logged and leaves the
        attachment untranscribed: the core tries again if the character answers. Audio over
        20 MB (by the update's size, else by what ``getFile`` says) is not downloaded: its
        attachment is marked ``transcribed`` with no words and a description saying it was too
        large, so the character knows why it cannot hear it and the core does not try again.
        """
        spoken = spoken_media(message)
        if spoken is None:
            return
        if spoken.said:
            memory.content["isVoiceMessage"] = True
        where = message.chat.title or "a private chat"
        try:
            if spoken.size and spoken.size > _MAX_DOWNLOAD:
                raise FileTooLarge(_TOO_LARGE)
            async with asyncio.timeout(_DOWNLOAD_TIMEOUT_S):
                audio = await self._download({"id": spoken.file_id})
            params = {"audio": audio, "filename": spoken.filename}
            transcript = str(await self.runtime.use_model(ModelType.TRANSCRIPTION, params) or "").strip()
        except FileTooLarge:
            _log.info(
                "%s: a %s in %s (chat %s) is %s; it goes on untranscribed",
                self.name,
                spoken.label,
                where,
                message.chat.id,
                _TOO_LARGE,
            )
            _mark_heard(
                memory,
                spoken.file_id,
                "",
                f"A {spoken.label} too large to listen to: it is {_TOO_LARGE}, so it was not transcribed",
            )
            return
        except Exception as exc:
            # A download error may quote the file URL, which carries the token: name only its kind.
            reason = reason_for(exc, self.name) if isinstance(exc, (ModelError, ValueError)) else type(exc).__name__
            _log.warning(
                "%s: could not transcribe a %s in %s (chat %s): %s; it goes on untranscribed",
                self.name,
                spoken.label,
                where,
                message.chat.id,
                reason,
            )
            return
        _mark_heard(
            memory,
            spoken.file_id,
            transcript,
            f"Transcript of a {spoken.label}" if transcript else f"A {spoken.label} with no words in it",
        )
        if transcript:
            caption = memory.content.get("text")
            memory.content["text"] = f"{caption}\n{transcript}" if caption else transcript

    async def _download(self, item: Mapping[str, Any]) -> bytes:
        """The file's bytes.

        Raises:
            FileTooLarge: over 20 MB (Telegram's "file is too big", or the size it reports).
        """
        assert self.app is not None
        try:
            file = await self.app.bot.get_file(str(item["id"]))
        except BadRequest as exc:
            if "file is too big" in exc.message.lower():
                raise FileTooLarge(_TOO_LARGE) from None
            raise
        if file.file_size and file.file_size > _MAX_DOWNLOAD:
            raise FileTooLarge(_TOO_LARGE)
        return bytes(await file.download_as_bytearray())

    async def _on_edit(self, message: Message) -> None:
        if message.from_user is None or message.from_user.id == self.bot_id:
            return
        # An edit of a message troupe never saw is stored as new: its room and author must exist.
        room = await self._ensure_room(message)
        await self._ensure_entity(message.from_user, room)
        memory = memory_for_message(self.runtime.agent_id, message, bot_id=self.bot_id, bot_username=self.username)
        await self.runtime.emit(EventType.MESSAGE_UPDATED, {"message": memory, "source": SOURCE})

    async def _on_reaction(self, update: Update) -> None:
        reaction = update.message_reaction
        assert reaction is not None
        user = reaction.user
        if user is None or user.id == self.bot_id or not reaction.new_reaction:
            return  # anonymous reactions, our own, and removals carry nothing to remember
        kind = reaction.new_reaction[0]
        emoji = getattr(kind, "emoji", None) or getattr(kind, "custom_emoji_id", None) or str(kind.type)
        agent = self.runtime.agent_id
        room = room_id(agent, reaction.chat.id)
        entity = await self._ensure_entity(user, room) if reaction.chat.id in self._chats else entity_id(agent, user.id)
        memory = Memory(
            id=message_id(agent, reaction.chat.id, f"{reaction.message_id}-reaction-{user.id}-{emoji}"),
            entity_id=entity,
            agent_id=agent,
            room_id=room,
            world_id=world_id(agent, reaction.chat.id),
            content={
                "text": f"*reacted {emoji}*",
                "source": SOURCE,
                "inReplyTo": message_id(agent, reaction.chat.id, reaction.message_id),
                "channelType": channel_type(reaction.chat).value,
            },
            metadata={"type": "reaction", "authorIsBot": bool(user.is_bot), "emoji": emoji},
            created_at=now_ms(),
        )
        await self.runtime.emit(EventType.REACTION_RECEIVED, {"message": memory, "source": SOURCE})

    async def _on_membership_message(self, message: Message) -> None:
        room = await self._ensure_room(message)
        for user in message.new_chat_members or ():
            if user.id != self.bot_id:
                await self._ensure_entity(user, room)
                await self._member_event(EventType.ENTITY_JOINED, user, message.chat.id, room)
        left = message.left_chat_member
        if left is not None and left.id != self.bot_id:
            await self._member_event(EventType.ENTITY_LEFT, left, message.chat.id, room)

    async def _on_chat_member(self, update: Update) -> None:
        change = update.chat_member
        assert change is not None
        user = change.new_chat_member.user
        if user.id == self.bot_id:
            return
        joined = change.new_chat_member.status in ("member", "administrator", "creator", "restricted")
        was_in = change.old_chat_member.status in ("member", "administrator", "creator", "restricted")
        if joined == was_in:
            return
        room = room_id(self.runtime.agent_id, change.chat.id)
        if joined and change.chat.id in self._chats:
            await self._ensure_entity(user, room)
        await self._member_event(
            EventType.ENTITY_JOINED if joined else EventType.ENTITY_LEFT, user, change.chat.id, room
        )

    async def _member_event(self, event: EventType, user: Any, chat_id: int, room: str) -> None:
        agent = self.runtime.agent_id
        await self.runtime.emit(
            event,
            {
                "entityId": entity_id(agent, user.id),
                "worldId": world_id(agent, chat_id),
                "roomId": room,
                "source": SOURCE,
                "metadata": {SOURCE: {"id": str(user.id), "username": user.username, "name": user.full_name}},
            },
        )

    # -- outbound -------------------------------------------------------------------------

    async def _send(
        self, chat_id: int, text: str, *, reply_to: int | None = None, thread_id: int | None = None
    ) -> list[Message]:
        assert self.app is not None
        try:
            sent = await send_text(
                self.app.bot,
                chat_id,
                text,
                reply_to=reply_to,
                thread_id=thread_id,
                deadline_s=self.config.send_deadline,
            )
        except PartlySent as exc:
            self._relay.deliver(self, exc.sent)  # the other characters saw that much too
            raise
        self._relay.deliver(self, sent)
        return sent

    async def _send_reply(
        self, chat_id: int, text: str, *, reply_to: int | None, thread_id: int | None, title: str | None = None
    ) -> tuple[list[Message], bool]:
        """Send a reply to message ``reply_to``: what went out, and whether that is all of it.

        Never raises: a reply not sent, or not all of it, is logged with the chat (``title`` if
        known), the message it answers, its first words and why.
        """
        return await self.send_reply(ChatTarget(chat_id, thread_id, title), text, {}, reply_to)

    async def _speak(
        self, chat: Any, text: str, memory: Memory, *, reply_to: int | None, thread: int | None, what: str = "reply"
    ) -> None:
        """Say ``text`` in ``chat`` as a voice note (quoting ``reply_to``, if given), after the
        text message ``memory`` stores; the voice note is added to it as an attachment, by file
        id. ``what`` names the text in the log: ``reply``, or ``message`` for one sent unasked.

        Never raises: without a voice the text stands, and a warning says why.
        """
        words = speakable(text)
        if not words:
            return
        assert self.app is not None
        recording = _Typing(self, chat.id, thread, action="record_voice")
        await recording.start()
        try:
            result = await self.runtime.use_model(ModelType.TEXT_TO_SPEECH, {"text": words, "format": "opus"})
            audio, audio_format = await speech_audio(result)
            note = await asyncio.to_thread(voice_note, audio, audio_format)
            sent = await send_voice(
                self.app.bot,
                chat.id,
                note.data,
                duration=note.duration,
                reply_to=reply_to,
                thread_id=thread,
                deadline_s=self.config.send_deadline,
            )
        except Exception as exc:
            reason = (
                reason_for(exc, self.name)
                if isinstance(exc, (ModelError, ValueError))
                else (getattr(exc, "message", None) or type(exc).__name__)
            )
            _log.warning(
                "%s: the %s in %s (chat %s) went out as text only, without a voice note: %s",
                self.name,
                what,
                chat.title or "a private chat",
                chat.id,
                reason,
            )
            return
        finally:
            await recording.stop()
        voice = sent.voice
        attachment = {
            "id": voice.file_id if voice else "",
            "title": "voice.ogg",
            "contentType": "audio/ogg",
            "source": SOURCE,
            "private": True,
            "transcribed": True,
            "text": words,
            "description": f"Voice note of this {what}",
            "url": f"telegram:file:{voice.file_unique_id}" if voice else "",
            "duration": note.duration,
            "messageId": sent.message_id,
        }
        memory.content["attachments"] = [*(memory.content.get("attachments") or ()), attachment]
        assert memory.id is not None  # a Telegram message's memory is named after its chat and id
        await self.runtime.store.update_memory(memory.id, content=memory.content)

    async def _remember(
        self, sent: list[Message], content: Mapping[str, Any], room: str, *, in_reply_to: str | None = None
    ) -> list[Memory]:
        world = world_id(self.runtime.agent_id, sent[0].chat.id) if sent else None
        return await self.remember_sent(sent, content, room, world, in_reply_to=in_reply_to)

    # -- sending (the Messenger's flow is PlatformAdapter's) ------------------------------

    async def _send_native(
        self, target: ChatTarget, text: str, content: Mapping[str, Any], answering: Any
    ) -> list[Message]:
        return await self._send(target.chat_id, text, reply_to=answering, thread_id=target.thread_id)

    def _record_of(self, message: Message) -> SentMessage:
        return SentMessage(
            id=message_id(self.runtime.agent_id, message.chat.id, message.message_id),
            text=message.text or "",
            created_at=int(message.date.timestamp() * 1000),
            content={"channelType": channel_type(message.chat).value},
        )

    def _what(self, target: ChatTarget, answering: Any) -> str:
        if answering is None:
            return f"to Telegram chat {target.chat_id}"
        # People's chat ids are positive, groups' negative.
        where = target.title or ("a private chat" if target.chat_id > 0 else "a group")
        return f"a reply in {where} (chat {target.chat_id}) to message {answering}"

    def _refusal(self, exc: Exception) -> str | None:
        if isinstance(exc, Forbidden):
            return "Telegram won't let me write there (they may not have started a chat with me)"
        return None

    async def _room_target(self, room: Room) -> ChatTarget:
        """A chat (or forum topic) this bot is in."""
        assert room.channel_id is not None
        chat, _, topic = room.channel_id.partition(":")
        return ChatTarget(int(chat), int(topic) if topic else None)

    async def _entity_target(self, entity: Entity, user_id: str) -> tuple[ChatTarget, str, str | None]:
        """A private chat (the person must have started a chat with this bot)."""
        agent = self.runtime.agent_id
        return ChatTarget(int(user_id)), room_id(agent, user_id), world_id(agent, int(user_id))

    async def _reply_target(self, message: Memory, text: str) -> tuple[ChatTarget, Any] | None:
        """The stored message's chat and topic, quoting it."""
        native = message.metadata.get(SOURCE) or {}
        if not native.get("chatId"):
            return None
        quoted, thread = native.get("messageId"), native.get("threadId")
        return ChatTarget(int(native["chatId"]), int(thread) if thread else None), int(quoted) if quoted else None

    async def _delivered(self, target: ChatTarget, sent: list[Message], room_id: str, person: Entity | None) -> None:
        """A private chat with ``person`` is written to the store (with them in it) if troupe has
        never seen it: they may have started the bot before troupe ran, or met it only in a group."""
        if person is not None and sent:
            await self._ensure_chat(sent[0])
            await self.connections.ensure_entity(person, room_id)

    async def _after_delivery(self, target: ChatTarget, text: str, sent: list[Message], memories: list[Memory]) -> None:
        """With ``TELEGRAM_VOICE_REPLIES=always`` a message sent unasked is also said as a voice
        note, after it (it answers no voice message, so ``auto`` does not speak)."""
        if self.config.voice_replies == "always" and memories:
            await self._speak(sent[-1].chat, text, memories[-1], reply_to=None, thread=target.thread_id, what="message")


class FileTooLarge(ValueError):
    """A file over the 20 MB the Bot API lets bots download."""


def _mark_heard(memory: Memory, file_id: str, transcript: str, description: str) -> None:
    """The attachment ``file_id`` of ``memory`` is dealt with (``transcribed``): the core leaves it."""
    for item in memory.content.get("attachments") or ():
        if item.get("id") == file_id:
            item["transcribed"] = True
            item["text"] = transcript
            item["description"] = description


def _attachments(message: Message) -> list[dict[str, Any]]:
    """Files on the message, by file id: their URLs carry the bot token and are never stored."""
    found: list[dict[str, Any]] = []
    if message.photo:
        photo = message.photo[-1]  # the largest size
        found.append(
            {
                "id": photo.file_id,
                "title": "photo.jpg",
                "contentType": "image/jpeg",
                "private": True,
                "url": f"telegram:file:{photo.file_unique_id}",
                "size": photo.file_size,
            }
        )
    for kind, default_type, default_name in (
        ("document", "application/octet-stream", "document"),
        ("voice", "audio/ogg", "voice.ogg"),
        ("audio", "audio/mpeg", "audio.mp3"),
        ("video_note", "video/mp4", "video_note.mp4"),
    ):
        item = getattr(message, kind, None)
        if item is not None:
            found.append(
                {
                    "id": item.file_id,
                    "title": getattr(item, "file_name", None) or default_name,
                    "contentType": getattr(item, "mime_type", None) or default_type,
                    "private": True,
                    "url": f"telegram:file:{item.file_unique_id}",
                    "size": item.file_size,
                }
            )
    for item in found:
        item["source"] = SOURCE
    return found


class _Answer(QuietChannel):
    """The reply channel of one Telegram message: replies quote it, in its topic; with
    ``TELEGRAM_VOICE_REPLIES`` they are also said as a voice note."""

    def __init__(self, adapter: TelegramAdapter, message: Message, incoming: Memory) -> None:
        self.adapter, self.message, self.incoming = adapter, message, incoming
        self.thread = message.message_thread_id if is_topic(message) else None
        self.typing_indicator = _Typing(adapter, message.chat.id, self.thread)
        mode = adapter.config.voice_replies
        self.speak = mode == "always" or (mode == "auto" and bool(incoming.content.get("isVoiceMessage")))

    async def send(self, content: JSON) -> list[Memory]:
        await self.typing_indicator.stop()
        text = str(content.get("text") or "").strip()
        if not text:
            return []
        adapter, message, incoming = self.adapter, self.message, self.incoming
        sent, whole = await adapter._send_reply(
            message.chat.id, text, reply_to=message.message_id, thread_id=self.thread, title=message.chat.title
        )
        memories = await adapter._remember(sent, content, incoming.room_id, in_reply_to=incoming.id)
        if self.speak and memories and whole:
            await adapter._speak(message.chat, text, memories[-1], reply_to=message.message_id, thread=self.thread)
        return memories

    async def typing(self) -> None:
        await self.typing_indicator.start()

    async def fetch(self, attachment: Mapping[str, Any]) -> bytes:
        return await self.adapter._download(attachment)


class _Typing(TypingIndicator):
    """ "typing…" (or another chat action, such as "recording a voice message…") in a chat, renewed
    every few seconds, from when an answer is coming until it is sent."""

    def __init__(self, adapter: TelegramAdapter, chat_id: int, thread_id: int | None, action: str = "typing") -> None:
        async def show_once() -> None:
            assert adapter.app is not None
            await adapter.app.bot.send_chat_action(chat_id, action, message_thread_id=thread_id)

        super().__init__(adapter.runtime, show_once, every_s=_TYPING_EVERY_S, job=f"telegram:{action}")

"""One character's Telegram bot: a python-telegram-bot Application driven inside the daemon's
loop (initialize, start, long polling — never ``run_polling()``), sending and receiving.

Inbound, python-telegram-bot's handlers take each update (:mod:`._handlers`); a message is
translated once (:func:`._mapping.translate`), its voice note transcribed (:mod:`._listening`),
and handed to the runtime as an incoming message with its reply channel (:mod:`bot.messages`).
Chats, topics and people are written once per run and remembered.

Outbound, replies quote the triggering message, are converted to MarkdownV2 (plain text if
Telegram still refuses), split at 4096 characters (:mod:`._outbound`), stay in their forum
topic, and show "typing…" while an answer is prepared; they may also be spoken
(:mod:`._speaking`). What one character sends in a group is relayed to the daemon's other
characters there (:mod:`._relay`). The adapter is also the runtime's ``telegram`` Messenger.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from telegram import Chat, Message, User
from telegram.error import Forbidden, InvalidToken, TelegramError
from telegram.ext import Application, ApplicationBuilder

from bot.connections import Connections, TokenClaims, record_sent
from bot.errors import ConfigError, PartlySent, SendError
from bot.events import EventType
from bot.messages import IncomingMessage
from bot.text import first_words
from bot.types import ChannelType, Entity, Memory, Room

from ._answer import Answer
from ._config import TelegramConfig
from ._handlers import UpdateHandlers
from ._inbox import InboxQueue, replay
from ._listening import listen
from ._mapping import (
    SOURCE,
    Translated,
    channel_type,
    chat_room,
    entity_for_user,
    message_id,
    room_id,
    translate,
    world_for_chat,
    world_id,
)
from ._outbound import send_text
from ._polling import PollingWatch
from ._relay import Relay
from ._speaking import speak

if TYPE_CHECKING:
    from bot.runtime import AgentRuntime

__all__ = ["TelegramAdapter"]

_log = logging.getLogger(__name__)

_ALLOWED_UPDATES = ["message", "edited_message", "message_reaction", "my_chat_member", "chat_member"]
_START_TIMEOUT_S = 30.0
_TYPING_EVERY_S = 4.5
_TYPING_CAP_S = 60.0
_DRAIN_TIMEOUT_S = 10.0


class TelegramTokens(TokenClaims):
    """The Telegram bot tokens a daemon's characters use (``runtime.shared.one(TelegramTokens)``)."""

    def __init__(self) -> None:
        super().__init__("TELEGRAM_BOT_TOKEN", "create one per character with @BotFather")


class TelegramAdapter:
    """Connects one runtime to Telegram as its own bot."""

    def __init__(self, runtime: AgentRuntime, config: TelegramConfig) -> None:
        self.runtime = runtime
        self.config = config
        self.name = runtime.character.name
        self.app: Application | None = None
        self.bot_id = 0
        self.username = ""
        self._chats: set[int] = set()
        self._members: dict[int, bool] = {}  # chat id -> whether this bot is in it (for the relay)
        self.connections = Connections(runtime, SOURCE)
        self._handling: set[asyncio.Task[Any]] = set()
        self._closed = False
        self._relay = runtime.shared.one(Relay)  # this daemon's other Telegram characters
        self._tokens = runtime.shared.one(TelegramTokens)  # the bots of this daemon's other characters

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        """Check the token, remove any webhook, start long polling.

        Raises:
            ConfigError: the token was refused, or another character uses it.
        """
        token = self.config.token.get_secret_value()
        self._tokens.claim(token, self.name)
        try:
            await self._connect(token)
        except BaseException:
            await self.close()
            raise
        self.runtime.on_close(self.close)
        # Stop fetching when the agent drains: an update fetched and then refused would be lost
        # (the next poll confirms it); one never fetched waits for the next start.
        self.runtime.on_drain(self.stop_polling)
        if self.runtime.get_service(SOURCE) is None:
            self.runtime.register_service(SOURCE, self)
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
        UpdateHandlers(self).install(app)
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
            timeout=int(timeout), allowed_updates=_ALLOWED_UPDATES, error_callback=PollingWatch(self).on_error
        )

    async def close(self) -> None:
        """Stop polling, let messages being answered finish (up to a limit), shut down."""
        if self._closed:
            return
        self._closed = True
        self._relay.leave(self)
        self.runtime.unregister_service(SOURCE)
        self._tokens.release(self.config.token.get_secret_value(), self.name)
        app = self.app
        if app is None:
            return
        with contextlib.suppress(Exception):
            if app.updater is not None and app.updater.running:
                await app.updater.stop()
        if self._handling:
            _, late = await asyncio.wait(set(self._handling), timeout=_DRAIN_TIMEOUT_S)
            for task in late:
                task.cancel()
        with contextlib.suppress(Exception):
            if app.running:
                await app.stop()
        with contextlib.suppress(Exception):
            await app.shutdown()

    @property
    def closed(self) -> bool:
        return self._closed

    async def stop_polling(self) -> None:
        if self.app is not None and self.app.updater is not None and self.app.updater.running:
            await self.app.updater.stop()

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
        agent, store = self.runtime.agent_id, self.runtime.store
        existing = await store.get_world(world_id(agent, chat.id))
        owner, admins = await self._administrators(chat)
        world = world_for_chat(agent, chat, owner_id=owner, admin_ids=admins)
        main = chat_room(agent, chat)
        if existing is None:
            await store.create_world(world)
        else:
            # Keep roles given through UPDATE_ROLE; add what Telegram says about new admins.
            roles = {**world.metadata["roles"], **(existing.metadata.get("roles") or {})}
            if world.metadata.get("ownership"):
                roles[world.metadata["ownership"]["ownerId"]] = "OWNER"
            existing.metadata = {
                **existing.metadata,
                **{k: v for k, v in world.metadata.items() if k != "roles"},
                "roles": roles,
            }
            existing.name = world.name
            await store.update_world(existing)
        await self.connections.ensure_rooms([main])
        self._chats.add(chat.id)
        if existing is None:
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

    def knows(self, chat_id: int) -> bool:
        """Whether the chat has been written to the store in this run."""
        return chat_id in self._chats

    async def ensure_room(self, message: Message, room: Room) -> str:
        """The message's chat (the first time it is seen) and ``room`` stored; the room's id."""
        await self._ensure_chat(message)
        await self.connections.ensure_rooms([room])
        return room.id

    async def ensure_entity(self, user: User, room: str) -> str:
        return await self.connections.ensure_entity(entity_for_user(self.runtime.agent_id, user), room)

    async def meet(self, message: Message, seen: Translated) -> str:
        """The chat, room and author of a message about to be handled stored; its room's id."""
        room = await self.ensure_room(message, seen.room)
        await self.connections.ensure_entity(seen.entity, room)
        return room

    # -- inbound --------------------------------------------------------------------------

    async def on_relayed(self, messages: list[Message]) -> None:
        """Another of the daemon's characters said this in a chat this bot is in."""
        if not self.allowed(messages[0].chat):
            return
        await self.hear(messages[0], text="\n".join(m.text or "" for m in messages), relayed=True)

    async def hear(self, message: Message, *, text: str | None = None, relayed: bool = False) -> None:
        """A message for the pipeline, with its reply channel (``text`` replaces its words)."""
        seen = translate(self.runtime.agent_id, message, bot_id=self.bot_id, bot_username=self.username, text=text)
        await self.meet(message, seen)
        if not relayed:
            # In this update's own task (the Application handles updates concurrently): polling
            # and other chats go on while the audio is fetched and transcribed.
            assert self.app is not None
            await listen(self.runtime, self.app.bot, seen)
        if not seen.memory.content["text"] and not seen.attachments:
            return
        channel = Answer(self, message, seen, _Typing(self, seen.chat_id, seen.thread_id))
        try:
            await self.runtime.receive(IncomingMessage(seen.memory, channel))
        finally:
            await channel.typing_indicator.stop()

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
        try:
            return await self._send(chat_id, text, reply_to=reply_to, thread_id=thread_id), True
        except Exception as exc:
            where = title or ("a private chat" if chat_id > 0 else "a group")  # people's chat ids are positive
            _log.error(
                '%s: could not send a reply in %s (chat %s) to message %s, "%s": %s',
                self.name,
                where,
                chat_id,
                reply_to,
                first_words(text),
                getattr(exc, "message", None) or exc.__class__.__name__,
            )
            # What did go out is part of the conversation.
            return (exc.sent, False) if isinstance(exc, PartlySent) else ([], False)

    async def _speak(
        self, chat: Chat, text: str, memory: Memory, *, reply_to: int | None, thread: int | None, what: str = "reply"
    ) -> None:
        """Say ``text`` as a voice note after the text message ``memory`` stores (see :mod:`._speaking`)."""
        recording = _Typing(self, chat.id, thread, action="record_voice")
        await speak(self, recording, chat, text, memory, reply_to=reply_to, thread=thread, what=what)

    async def _remember(
        self, sent: list[Message], content: Mapping[str, Any], room: str, *, in_reply_to: str | None = None
    ) -> list[Memory]:
        agent, memories = self.runtime.agent_id, []
        for message in sent:
            body = {
                **content,
                "text": message.text or "",
                "source": SOURCE,
                "channelType": channel_type(message.chat).value,
            }
            if in_reply_to is not None:
                body["inReplyTo"] = in_reply_to
            memories.append(
                Memory(
                    id=message_id(agent, message.chat.id, message.message_id),
                    entity_id=agent,
                    agent_id=agent,
                    room_id=room,
                    world_id=world_id(agent, message.chat.id),
                    content=body,
                    created_at=int(message.date.timestamp() * 1000),
                    metadata={"type": "message"},
                )
            )
        return await record_sent(self.runtime, memories, SOURCE)

    async def send_to_room(self, room: Room, content: dict[str, Any]) -> list[Memory]:
        """Messenger: post in a chat (or forum topic) this bot is in."""
        if room.source != SOURCE or not room.channel_id:
            raise SendError("that is not a Telegram chat")
        chat, _, topic = room.channel_id.partition(":")
        return await self._deliver(int(chat), int(topic) if topic else None, content, room.id)

    async def send_to_entity(self, entity: Entity, content: dict[str, Any]) -> list[Memory]:
        """Messenger: a private message (the person must have started a chat with this bot)."""
        user_id = (entity.metadata.get(SOURCE) or {}).get("id")
        if not user_id:
            raise SendError(f"I don't know {entity.names[0] if entity.names else 'them'} on Telegram")
        return await self._deliver(int(user_id), None, content, room_id(self.runtime.agent_id, user_id), person=entity)

    async def reply_to(self, message: Memory, content: dict[str, Any]) -> list[Memory]:
        """Messenger: answer a stored Telegram message in its chat and topic, quoting it (if it
        still exists). Nothing sent (logged) gives ``[]``, as for a live reply."""
        native = message.metadata.get(SOURCE) or {}
        text = str(content.get("text") or "").strip()
        if not native.get("chatId") or not text:
            return []
        chat_id, quoted, thread = int(native["chatId"]), native.get("messageId"), native.get("threadId")
        sent, _ = await self._send_reply(
            chat_id, text, reply_to=int(quoted) if quoted else None, thread_id=int(thread) if thread else None
        )
        return await self._remember(sent, content, message.room_id, in_reply_to=message.id)

    async def _deliver(
        self, chat_id: int, topic: int | None, content: dict[str, Any], room: str, *, person: Entity | None = None
    ) -> list[Memory]:
        """Send ``content`` as text; with ``TELEGRAM_VOICE_REPLIES=always`` also as a voice note,
        after it (a message sent unasked answers no voice message, so ``auto`` does not speak).

        A private chat with ``person`` is written to the store (with them in it) if troupe has
        never seen it: they may have started the bot before troupe ran, or met it only in a group.
        """
        text = str(content.get("text") or "")
        whole = True
        try:
            sent = await self._send(chat_id, text, thread_id=topic)
        except Forbidden:
            raise SendError("Telegram won't let me write there (they may not have started a chat with me)") from None
        except (TelegramError, PartlySent) as exc:
            _log.error(
                '%s: could not send to Telegram chat %s, "%s": %s', self.name, chat_id, first_words(text), exc.message
            )
            if not isinstance(exc, PartlySent):
                raise SendError("Telegram did not take the message; try again later") from None
            sent, whole = exc.sent, False
        if person is not None and sent:
            await self._ensure_chat(sent[0])
            await self.connections.ensure_entity(person, room)
        memories = await self._remember(sent, content, room)
        if not whole:
            raise SendError(
                "only the beginning of the message went out; Telegram did not take the rest, try again later"
            )
        if self.config.voice_replies == "always" and memories:
            await self._speak(sent[-1].chat, text, memories[-1], reply_to=None, thread=topic, what="message")
        return memories


class _Typing:
    """ "typing…" (or another chat action, such as "recording a voice message…") in a chat, renewed
    every few seconds, from when an answer is coming until it is sent."""

    def __init__(self, adapter: TelegramAdapter, chat_id: int, thread_id: int | None, action: str = "typing") -> None:
        self.adapter, self.chat_id, self.thread_id, self.action = adapter, chat_id, thread_id, action
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"troupe:{self.adapter.name}:typing")

    async def _run(self) -> None:
        assert self.adapter.app is not None
        try:
            async with asyncio.timeout(_TYPING_CAP_S):
                while True:
                    await self.adapter.app.bot.send_chat_action(
                        self.chat_id, self.action, message_thread_id=self.thread_id
                    )
                    await asyncio.sleep(_TYPING_EVERY_S)
        except Exception as exc:  # typing is a courtesy: never worth an error
            _log.debug("%s: typing indicator stopped: %s", self.adapter.name, exc.__class__.__name__)

    async def stop(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task

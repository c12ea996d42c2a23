"""One character's Telegram bot: a python-telegram-bot Application driven inside the daemon's
loop (initialize, start, long polling — never ``run_polling()``), sending and receiving.

Inbound, python-telegram-bot's handlers take each update (:mod:`._handlers`); a message is
translated once (:func:`._mapping.translate`; an album's parts together, :mod:`._albums`), its
voice note transcribed (:mod:`._listening`), and handed to the runtime as an incoming message
with its reply channel (:class:`bot.runtime.adapters.PlatformReplyChannel`).
Chats, topics and people are written once per run and remembered (:meth:`TelegramAdapter.ensure_stored`).

Outbound, replies quote the triggering message, are converted to MarkdownV2 (plain text if
Telegram still refuses), split at 4096 characters (:mod:`._outbound`), stay in their forum
topic, and show "typing…" while an answer is prepared; they may also be spoken
(:mod:`._speaking`, from :meth:`TelegramAdapter.after_sent`). What one character sends in a group is relayed to the troupe's other
characters there, on this daemon or another (:mod:`._relay`). The adapter is also the runtime's
``telegram`` Messenger.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from telegram import Chat, MaybeInaccessibleMessage, Message, Update, User
from telegram.error import Forbidden, InvalidToken, TelegramError
from telegram.ext import ApplicationBuilder

from bot.sdk import (
    AdapterState,
    ChannelType,
    ConfigError,
    Content,
    Delivery,
    Entity,
    IncomingMessage,
    Memory,
    NativeRef,
    OutgoingFile,
    PartlySent,
    PlatformAdapter,
    PlatformReplyChannel,
    Reply,
    Room,
    SendError,
    SentMessage,
    Settled,
    TokenClaims,
    TypingIndicator,
    WorldJoined,
)

from ._albums import Albums, translate_album
from ._config import TelegramConfig
from ._files import send_with_files
from ._groups import GroupGate
from ._handlers import TelegramApp, UpdateHandlers
from ._inbox import InboxQueue, replay
from ._listening import download, listen
from ._mapping import (
    SOURCE,
    Translated,
    attachments,
    channel_type,
    chat_room,
    entity_for_user,
    message_id,
    room_id,
    said_at,
    translate,
    world_for_chat,
    world_id,
)
from ._message_ref import TelegramMessageRef
from ._outbound import ChatTarget, ReplyMarkup, send_text
from ._polling import PollingWatch
from ._presses import markup_of, settle
from ._prompts import answer_to
from ._reactions import react
from ._relay import Relay
from ._request import AiohttpRequest, UpdatesRequest
from ._speaking import speak
from ._webhook import WebhookDesk, WebhookWatch

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["TelegramAdapter"]

_log = logging.getLogger(__name__)

_ALLOWED_UPDATES = [
    "message",
    "edited_message",
    "message_reaction",
    "my_chat_member",
    "chat_member",
    "callback_query",  # button presses
]
_START_TIMEOUT_S = 30.0
_TYPING_EVERY_S = 4.5  # Telegram shows a chat action for 5 s


class TelegramTokens(TokenClaims):
    """The Telegram bot tokens a daemon's characters use (``runtime.shared.instance_of(TelegramTokens)``)."""

    def __init__(self) -> None:
        super().__init__("TELEGRAM_BOT_TOKEN", "create one per character with @BotFather")


class TelegramAdapter(PlatformAdapter[ChatTarget, Message, int]):
    """Connects one runtime to Telegram as its own bot: it sends to chats (and their topics),
    and a reply quotes a message by its id."""

    source = SOURCE
    label = "Telegram"
    where = "chat"
    strips_replies = True
    reacts = True

    def __init__(self, runtime: AgentRuntime, config: TelegramConfig) -> None:
        super().__init__(runtime, TelegramTokens, config.token.get_secret_value())
        self.config = config
        self.app: TelegramApp | None = None
        self._requests: tuple[AiohttpRequest, ...] = ()  # the app's HTTP sessions (its bot's and its poll's)
        self.bot_id = 0
        self.username = ""
        self._chats: set[int] = set()
        self._members: dict[int, bool] = {}  # chat id -> whether this bot is in it (for the relay)
        self._relay = runtime.shared.instance_of(Relay)  # the troupe's other Telegram characters
        self._handlers = UpdateHandlers(self)
        self.groups = GroupGate(self)  # groups the bot may not stay in (shouldOnlyJoinInAllowedGroups)
        self._albums = Albums()
        self._watch: PollingWatch | None = None  # made by connect
        self._webhook: WebhookWatch | None = None  # made by connect, with TELEGRAM_WEBHOOK_URL
        self._desk = runtime.shared.instance_of(WebhookDesk)

    # -- lifecycle ------------------------------------------------------------------------

    async def on_started(self) -> None:
        # Stop fetching when the agent drains: an update fetched and then refused would be lost
        # (the next poll confirms it); one never fetched waits for the next start.
        self.runtime.on_drain(self.stop_polling)
        self._relay.join(self)
        if self.app is not None:
            self.runtime.create_task(self._handlers.publish_commands(self.app.bot), "telegram:commands")
        _log.info("%s: online on Telegram as @%s", self.name, self.username)

    async def connect(self, token: str) -> None:
        """Check the token, then take updates: by webhook when ``TELEGRAM_WEBHOOK_URL`` is set
        (:mod:`._webhook`), else by long polling (any webhook removed).

        Raises:
            ConfigError: Telegram refused the token.
        """
        webhook = self.config.webhook
        timeout = self.config.poll_timeout
        self._watch = watch = PollingWatch(self)
        calls = AiohttpRequest(connect_timeout=10, read_timeout=30, write_timeout=30, pool_timeout=10)
        builder = (
            ApplicationBuilder()
            .token(token)
            .base_url(self.config.base_url)
            .base_file_url(self.config.base_file_url)
            .request(calls)
            .concurrent_updates(64)
        )
        if webhook is None:
            # One long poll at a time; Bot.get_updates adds the poll's own wait to this read timeout.
            polls = UpdatesRequest(
                connection_pool_size=1,
                read_timeout=timeout + 10,
                may_poll=watch.may_poll,
                on_refused=watch.refusal.refused_now,
            )
            self._requests = (calls, polls)
            builder = builder.get_updates_request(polls).update_queue(InboxQueue(self.runtime, polls))
        else:
            self._requests = (calls,)
            builder = builder.updater(None).update_queue(InboxQueue(self.runtime))
        self.app = app = builder.build()
        self._handlers.install(app)
        allowed = [*_ALLOWED_UPDATES, *(["channel_post"] if self.config.channel_posts else [])]
        try:
            async with asyncio.timeout(_START_TIMEOUT_S):
                await app.initialize()
                if webhook is None:
                    await app.bot.delete_webhook(drop_pending_updates=False)  # polling and a webhook exclude each other
        except InvalidToken:
            raise ConfigError(
                "Telegram refused the bot token in TELEGRAM_BOT_TOKEN; copy it again from "
                "@BotFather (/mybots → your bot → API Token)",
                agent=self.name,
            ) from None
        self.bot_id, self.username = app.bot.id, app.bot.username
        await app.start()
        if webhook is not None:
            self._desk.join(self)  # first: what the webhook is given from now on comes here
        await replay(self.runtime, app.bot, self.inbox)
        if webhook is not None:
            self._webhook = WebhookWatch(self, webhook, allowed)
            await self._webhook.set()
            self.runtime.create_task(self._webhook.run(), "telegram:webhook")
            return
        assert app.updater is not None  # ApplicationBuilder makes one unless told not to
        await app.updater.start_polling(timeout=int(timeout), allowed_updates=allowed, error_callback=watch.on_error)

    @property
    def inbox(self) -> InboxQueue:
        """The Application's update queue (the adapter builds it with an :class:`InboxQueue`)."""
        assert self.app is not None
        queue = self.app.update_queue
        assert isinstance(queue, InboxQueue)
        return queue

    async def take_kept(self, update: dict[str, Any]) -> None:
        """Handle an update the webhook kept in the inbox (as Telegram sent it, read), unless it
        is already being handled or this adapter no longer takes any."""
        if self.app is None or self.closed or not self.runtime.accepting:
            return  # it stays in the inbox: the next start handles it
        await self.inbox.put_kept(Update.de_json(update, self.app.bot))

    async def disconnect(self) -> None:
        """Stop taking updates, let messages being answered finish (up to a limit), shut down."""
        self._relay.leave(self)
        app = self.app
        if app is None:
            return
        self._desk.leave(self)
        if self._webhook is not None and not self.runtime.shared.bus.spans_daemons:
            # Alone, the webhook goes with the daemon: Telegram keeps what comes meanwhile, and
            # the next start (by webhook or polling) gets it. In a troupe the other daemons keep
            # taking updates into the inbox, for whoever serves the character next.
            with contextlib.suppress(TelegramError, TimeoutError):
                async with asyncio.timeout(_START_TIMEOUT_S):
                    await app.bot.delete_webhook(drop_pending_updates=False)
        with contextlib.suppress(Exception):
            if app.updater is not None and app.updater.running:
                await app.updater.stop()
        await self.finish_handling()
        with contextlib.suppress(Exception):
            if app.running:
                await app.stop()
        with contextlib.suppress(Exception):
            await app.shutdown()
        # After a failed initialize (Telegram unreachable at start) Application.shutdown does nothing:
        # the sessions are closed here, or their connections would leak.
        for request in self._requests:
            await request.shutdown()

    @property
    def closed(self) -> bool:
        return self.state is AdapterState.CLOSED

    async def stop_polling(self) -> None:
        """Take no more updates: stop polling, or leave the webhook desk (what the webhook keeps
        from now on waits in the inbox for the next start)."""
        self._desk.leave(self)
        if self.app is not None and self.app.updater is not None and self.app.updater.running:
            await self.app.updater.stop()

    # -- chats, rooms, people -------------------------------------------------------------

    def allowed(self, chat: Any) -> bool:
        if channel_type(chat) is ChannelType.DM and not self.config.allow_direct_messages:
            return False
        if self.groups.refuses(chat):
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
        await self._write_chat(message.chat, message.from_user)

    async def _write_chat(self, chat: Chat, sender: User | None, *, joined: bool = False) -> None:
        """What :meth:`_ensure_chat` says; ``joined``: the bot was just added to the chat, so
        WORLD_JOINED even if troupe has seen it before (it had left) — and even if a message
        from the chat, handled meanwhile, has just written it."""
        if chat.id in self._chats and not joined:
            return
        agent = self.runtime.agent_id
        owner, admins = await self._administrators(chat)
        world = world_for_chat(agent, chat, owner_id=owner, admin_ids=admins)
        main = chat_room(agent, chat)
        # Keeps roles given through UPDATE_ROLE; adds what Telegram says about new admins.
        _, created = await self.connections.merge_world(world)
        await self.connections.ensure_rooms([main])
        self._chats.add(chat.id)
        if created or joined:
            # The sender may be this bot, for a chat first seen through what it sent there.
            entities = [entity_for_user(agent, sender)] if sender and sender.id != self.bot_id else []
            await self.runtime.emit(WorldJoined(world=world, rooms=[main], entities=entities, source=SOURCE))

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

    async def joined_chat(self, chat: Chat, by: User | None) -> None:
        """The bot was added to ``chat`` (again): its rooms are no longer marked as left, the
        relay hands it what the other characters say there again, WORLD_JOINED."""
        _log.info("%s: added to Telegram chat %s (%s)", self.name, chat.id, chat.title or chat.type)
        self._members[chat.id] = True
        self._chats.discard(chat.id)
        await self.connections.mark_world_rooms(world_id(self.runtime.agent_id, chat.id), None)
        await self._write_chat(chat, by, joined=True)

    async def left_chat(self, chat: Chat, status: str) -> None:
        """The bot left, or was removed or banned from, ``chat`` (``status``: ``left`` or
        ``kicked``): the relay stops handing it what is said there, its rooms are marked
        (``metadata.left_at``, ``left_as``: SEND_MESSAGE refuses them), WORLD_LEFT."""
        _log.info("%s: no longer in Telegram chat %s (%s): %s", self.name, chat.id, chat.title or chat.type, status)
        self._chats.discard(chat.id)
        self._members[chat.id] = False
        await self.connections.left_world(world_id(self.runtime.agent_id, chat.id), status)

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

    async def ensure_stored(self, message: Message, seen: Translated) -> str:
        """The chat, room and author of a message about to be handled stored; its room's id."""
        room = await self.ensure_room(message, seen.room)
        await self.connections.ensure_entity(seen.entity, room)
        return room

    # -- inbound --------------------------------------------------------------------------

    async def on_relayed(self, messages: list[Message]) -> None:
        """Another of the daemon's characters said this in a chat this bot is in (in a channel,
        heard only with TELEGRAM_CHANNEL_POSTS on, as the channel's own posts are)."""
        chat = messages[0].chat
        if not self.allowed(chat) or (channel_type(chat) is ChannelType.FEED and not self.config.channel_posts):
            return
        # A picture's words are its caption.
        await self.receive(messages[0], text="\n".join(m.text or m.caption or "" for m in messages), relayed=True)

    async def receive(self, message: Message, *, text: str | None = None, relayed: bool = False) -> None:
        """A message for the pipeline, with its reply channel (``text`` replaces its words); the
        parts of an album are gathered and received as one (:mod:`._albums`)."""
        if message.media_group_id is not None and not relayed:
            await self._albums.gather(message, self._receive_album)
            return
        seen = translate(self.runtime.agent_id, message, bot_id=self.bot_id, bot_username=self.username, text=text)
        under = None
        if not relayed:  # the answer to a question a button asked (:mod:`._prompts`)?
            seen, under = await answer_to(self, message, seen)
        await self._receive_translated(message, seen, relayed=relayed, under=under)

    async def _receive_album(self, parts: list[Message]) -> None:
        seen = translate_album(self.runtime.agent_id, parts, bot_id=self.bot_id, bot_username=self.username)
        await self._receive_translated(next(m for m in parts if m.message_id == seen.message_id), seen, relayed=False)

    async def _receive_translated(
        self, message: Message, seen: Translated, *, relayed: bool, under: Message | None = None
    ) -> None:
        await self.ensure_stored(message, seen)
        if not relayed:
            # In this update's own task (the Application handles updates concurrently): polling
            # and other chats go on while the audio is fetched and transcribed.
            assert self.app is not None
            seen = await listen(self.runtime, self.app.bot, seen)
        if not seen.memory.content.text and not seen.attachments:
            return
        await self._hand_over(message, seen, self._native(message, seen), under)

    async def receive_press(self, message: MaybeInaccessibleMessage, seen: Translated) -> None:
        """A press of one of this bot's buttons under ``message``, translated (:mod:`._presses`),
        for the pipeline. Only this bot receives it: no other character shares the moment."""
        await self._write_chat(message.chat, None)
        await self.connections.ensure_rooms([seen.room])
        await self.connections.ensure_entity(seen.entity, seen.room.id)
        # A press's answer may edit the message its button was under (one the bot can still read).
        await self._hand_over(message, seen, None, message if isinstance(message, Message) else None)

    async def _hand_over(
        self, message: MaybeInaccessibleMessage, seen: Translated, native: NativeRef | None, under: Message | None
    ) -> None:
        """``seen`` to the pipeline; ``under``: for a press (or a prompt's answer), the message
        its button was under, which the answer may settle."""
        typing = _Typing(self, seen.chat_id, seen.thread_id)
        target = ChatTarget(message.chat.id, seen.thread_id, message.chat.title)
        channel = PlatformReplyChannel(self, target, message.message_id, seen.memory, typing, under=under)
        try:
            await self.runtime.receive(IncomingMessage(seen.memory, channel, native=native))
        finally:
            await typing.stop()

    def _native(self, message: Message, seen: Translated) -> NativeRef:
        room = f"{seen.chat_id}:{seen.thread_id}" if seen.thread_id is not None else str(seen.chat_id)
        author = str(message.from_user.id) if message.from_user else ""
        return NativeRef(SOURCE, room, str(seen.message_id), author, str(self.bot_id))

    # -- outbound -------------------------------------------------------------------------

    async def _send(
        self,
        chat_id: int,
        text: str,
        *,
        reply_to: int | None = None,
        thread_id: int | None = None,
        files: Sequence[OutgoingFile] = (),
        markup: ReplyMarkup | None = None,
    ) -> list[Message]:
        assert self.app is not None
        bot, deadline = self.app.bot, self.config.send_deadline
        where: dict[str, Any] = {"reply_to": reply_to, "thread_id": thread_id, "deadline_s": deadline, "markup": markup}
        try:
            if files:
                sent = await send_with_files(bot, chat_id, text, files, **where)
            else:
                sent = await send_text(bot, chat_id, text, **where)
        except PartlySent as exc:
            await self._relay.deliver(self, exc.sent)  # the other characters saw that much too
            raise
        await self._relay.deliver(self, sent)
        return sent

    async def _speak(
        self, chat: Chat, text: str, memory: Memory, *, reply_to: int | None, thread: int | None, what: str = "reply"
    ) -> Memory | None:
        """Say ``text`` as a voice note after the text message ``memory`` stores (see :mod:`._speaking`);
        ``memory`` with the voice note, or None when none went out."""
        recording = _Typing(self, chat.id, thread, action="record_voice")
        return await speak(self, recording, chat, text, memory, reply_to=reply_to, thread=thread, what=what)

    # -- sending (the flow is PlatformAdapter's) ------------------------------------------

    async def send_native(self, target: ChatTarget, text: str, reply: Reply, quoting: int | None) -> list[Message]:
        files, markup = list(reply.files), markup_of(reply, replying=quoting is not None)
        return await self._send(
            target.chat_id, text, reply_to=quoting, thread_id=target.thread_id, files=files, markup=markup
        )

    async def settle_native(self, target: ChatTarget, under: Message, settled: Settled) -> Message:
        """editMessageText (a picture's caption: editMessageCaption), its keyboard removed (:func:`._presses.settle`)."""
        assert self.app is not None
        return await settle(self.app.bot, under, settled, self.config.send_deadline)

    def record_of_sent(self, message: Message) -> SentMessage:
        return SentMessage(
            id=message_id(self.runtime.agent_id, message.chat.id, message.message_id),
            text=message.text or message.caption or "",
            created_at=said_at(message),
            content=Content(
                channel_type=channel_type(message.chat),
                # What Telegram says it carries, by file id.
                attachments=attachments(message) or None,
            ),
        )

    def describe_send(self, target: ChatTarget, quoting: int | None) -> str:
        if quoting is None:
            return f"to Telegram chat {target.chat_id}"
        # People's chat ids are positive, groups' negative.
        where = target.title or ("a private chat" if target.chat_id > 0 else "a group")
        return f"a reply in {where} (chat {target.chat_id}) to message {quoting}"

    def refusal_message(self, exc: Exception) -> str | None:
        if isinstance(exc, Forbidden):
            return "Telegram won't let me write there (they may not have started a chat with me)"
        if isinstance(exc, InvalidToken) and self._watch is not None:
            self._watch.refusal.refused_now()  # polls may not have met it yet: say so now
            return "Telegram refused my bot token; my operator has to give me a new one"
        return None

    async def react_native(self, target: ChatTarget, quoting: int, emoji: str) -> None:
        """Only the emoji Telegram lets bots react with (:mod:`._reactions`)."""
        assert self.app is not None
        await react(self.app.bot, target.chat_id, quoting, emoji, deadline_s=self.config.send_deadline)

    async def fetch_attachment(self, quoting: int | None, attachment: Mapping[str, object]) -> bytes:
        assert self.app is not None
        return await download(self.app.bot, attachment)

    async def room_target(self, room: Room) -> ChatTarget:
        """A chat (or forum topic) this bot is in."""
        assert room.channel_id is not None
        if room.metadata.left_at:
            raise SendError(f"I'm no longer in {room.name or 'that chat'} on Telegram")
        chat, _, topic = room.channel_id.partition(":")
        return ChatTarget(int(chat), int(topic) if topic else None)

    async def entity_target(self, entity: Entity, user_id: str) -> tuple[ChatTarget, str, str | None]:
        """A private chat (the person must have started a chat with this bot)."""
        agent = self.runtime.agent_id
        return ChatTarget(int(user_id)), room_id(agent, user_id), world_id(agent, int(user_id))

    async def reply_target(self, message: Memory, text: str) -> tuple[ChatTarget, int | None] | None:
        """The stored message's chat and topic, quoting it."""
        where = TelegramMessageRef.of(message)
        if where is None:
            return None
        return ChatTarget(int(where.chat_id), where.thread_id), where.message_id

    async def record_direct_chat(self, sent: list[Message], room_id: str, person: Entity) -> None:
        """A private chat with ``person`` is written to the store (with them in it) if troupe has
        never seen it: they may have started the bot before troupe ran, or met it only in a group."""
        await self._ensure_chat(sent[0])
        await self.connections.ensure_entity(person, room_id)

    async def after_sent(self, delivery: Delivery[ChatTarget, Message, int]) -> None:
        """``TELEGRAM_VOICE_REPLIES``: ``always``, every reply and message sent unasked is also said
        as a voice note, after it; ``auto``, a reply to a voice message is."""
        mode, memories, text = self.config.voice_replies, delivery.memories, delivery.text
        if not memories:
            return
        chat, thread = delivery.sent[-1].chat, delivery.target.thread_id
        answering, said = delivery.in_reply_to, None
        if answering is None:
            if mode == "always":
                said = await self._speak(chat, text, memories[-1], reply_to=None, thread=thread, what="message")
        elif text and (mode == "always" or (mode == "auto" and bool(answering.content.is_voice_message))):
            said = await self._speak(chat, text, memories[-1], reply_to=delivery.quoting, thread=thread)
        if said is not None:
            # The list the send returns: its caller gets the message with its voice note.
            memories[-1] = said


class _Typing(TypingIndicator):
    """ "typing…" (or another chat action, such as "recording a voice message…") in a chat, renewed
    every few seconds, from when an answer is coming until it is sent."""

    def __init__(self, adapter: TelegramAdapter, chat_id: int, thread_id: int | None, action: str = "typing") -> None:
        async def show_once() -> None:
            assert adapter.app is not None
            await adapter.app.bot.send_chat_action(chat_id, action, message_thread_id=thread_id)

        super().__init__(adapter.runtime, show_once, every_s=_TYPING_EVERY_S, job=f"telegram:{action}")

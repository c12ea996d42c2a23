"""Which python-telegram-bot handler takes which update, and what the updates that are not
messages to answer become.

The handlers are registered on the Application in three groups, run one after the other for
each update (in that update's own task: the Application handles updates concurrently):

- ``-1``: the update is counted as being handled, so closing waits for it;
- ``0``: at most one handler takes it — a button press is acknowledged at once, then (from
  a chat the character is in) handed to the pipeline (:mod:`._presses`); in a group the bot may
  not stay in (``shouldOnlyJoinInAllowedGroups``) any update makes it say why and leave
  (:mod:`._groups`); other updates from chats the character stays out of go nowhere;
  ``/start`` and ``/help`` (also ``/help@thisbot``) are answered without the model,
  ``/summarize [N]`` with a summary of the room's (the topic's) last N messages (a long one as
  a file);
  people joining and leaving become ENTITY_JOINED/LEFT, the bot itself added to or removed
  from a group WORLD_JOINED/LEFT; other messages go to the pipeline
  (:meth:`TelegramAdapter.receive`), and so do channel posts when TELEGRAM_CHANNEL_POSTS is on;
  edits become MESSAGE_UPDATED, reactions REACTION_RECEIVED;
- ``1``: the update is dealt with and leaves the inbox (:mod:`._inbox`). It stays there — to
  be handled again at the next start — when a handler failed, or when the agent was draining
  and refused it; when a handler failed because the store could not write, it is handled
  again as soon as the store writes (``InboxQueue.again``).

The commands are one list (:meth:`UpdateHandlers.commands`): their handlers are built from it,
and so is the menu Telegram shows when someone types ``/`` (``setMyCommands``, at each start).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeAlias

from telegram import Bot, BotCommand, Message, Update, User
from telegram.error import TelegramError
from telegram.ext import (
    Application,
    ApplicationHandlerStop,
    BaseHandler,
    CallbackQueryHandler,
    ChatMemberHandler,
    CommandHandler,
    ContextTypes,
    ExtBot,
    JobQueue,
    MessageHandler,
    MessageReactionHandler,
    TypeHandler,
    filters,
)

from bot.sdk import (
    CONVERSATION_SUMMARIES,
    SUMMARY_DEFAULT_COUNT,
    SUMMARY_MAX_COUNT,
    ChannelType,
    Content,
    EntityJoined,
    EntityLeft,
    EventType,
    Memory,
    MemoryMetadata,
    MemoryType,
    MessageUpdated,
    ReactionReceived,
    Reply,
    StoreState,
    classify,
    now_ms,
)

from ._groups import IN_CHAT
from ._inbox import InboxQueue
from ._mapping import (
    SOURCE,
    Translated,
    channel_type,
    chat_room,
    entity_id,
    message_id,
    message_memory_id,
    room_for_message,
    room_id,
    translate,
    world_id,
)
from ._outbound import ChatTarget
from ._presses import take_press

if TYPE_CHECKING:
    from ._adapter import TelegramAdapter

#: What ``ApplicationBuilder().build()`` makes: PTB's default bot, context and data types.
TelegramApp: TypeAlias = Application[
    ExtBot[None],
    ContextTypes.DEFAULT_TYPE,
    dict[Any, Any],
    dict[Any, Any],
    dict[Any, Any],
    JobQueue[ContextTypes.DEFAULT_TYPE],
]

__all__ = ["Command", "TelegramApp", "UpdateHandlers"]

_log = logging.getLogger(__name__)

Context = ContextTypes.DEFAULT_TYPE

_MENU_TIMEOUT_S = 15.0


@dataclass(frozen=True, slots=True)
class Command:
    """A command the bot answers without the model."""

    names: tuple[str, ...]
    """What it is typed as; the menu shows the first."""
    description: str
    """What the menu says it does."""
    answer: Callable[[Update, Context], Coroutine[Any, Any, None]]
    in_menu: bool = True


class UpdateHandlers:
    """The handlers of one character's bot."""

    def __init__(self, adapter: TelegramAdapter) -> None:
        self.adapter = adapter
        self.runtime = adapter.runtime

    def commands(self) -> list[Command]:
        """The commands this bot answers (``/summarize`` is in the menu only when the character
        can summarise: the command still answers, to say it cannot)."""
        can_summarise = self.runtime.get_service(CONVERSATION_SUMMARIES) is not None
        return [
            Command(("start",), "Say hello", self.on_start),
            Command(("help",), f"How to talk to {self.runtime.character.name}", self.on_help),
            Command(
                ("summarize", "summarise"),
                f"Sum up the last messages here (/summarize N: the last N, up to {SUMMARY_MAX_COUNT})",
                self.on_summarize,
                in_menu=can_summarise,
            ),
        ]

    async def publish_commands(self, bot: Bot) -> None:
        """Show the commands in Telegram's menu. A failure is logged (once) and is not fatal: the
        commands work all the same, only the menu is missing."""
        menu = [BotCommand(c.names[0], c.description) for c in self.commands() if c.in_menu]
        try:
            async with asyncio.timeout(_MENU_TIMEOUT_S):
                await bot.set_my_commands(menu)
        except (TelegramError, TimeoutError) as exc:
            _log.warning("%s: could not set the Telegram command menu: %s", self.adapter.name, str(exc) or "timed out")

    def install(self, app: TelegramApp) -> None:
        new = filters.UpdateType.MESSAGE & _FromOthers(self.adapter)
        edited = filters.UpdateType.EDITED_MESSAGE & _FromOthers(self.adapter)
        joined_or_left = filters.StatusUpdate.NEW_CHAT_MEMBERS | filters.StatusUpdate.LEFT_CHAT_MEMBER
        app.add_handler(TypeHandler(Update, self.begin), group=-1)
        app.add_handlers(
            [
                CallbackQueryHandler(self.on_press),  # first: a press is acknowledged wherever it comes from
                _NotAllowedGroup(self.adapter),
                _Elsewhere(self.adapter),
                *(CommandHandler(c.names, c.answer, filters=new) for c in self.commands()),
                MessageHandler(new & joined_or_left, self.on_membership),
                MessageHandler(new & filters.StatusUpdate.NEW_CHAT_TITLE, self.on_title),
                MessageHandler(new, self.on_message),
                MessageHandler(edited, self.on_edit),
                MessageReactionHandler(
                    self.on_reaction, message_reaction_types=MessageReactionHandler.MESSAGE_REACTION_UPDATED
                ),
                ChatMemberHandler(self.on_chat_member, ChatMemberHandler.CHAT_MEMBER),
                ChatMemberHandler(self.on_my_chat_member, ChatMemberHandler.MY_CHAT_MEMBER),
                MessageHandler(filters.UpdateType.CHANNEL_POST, self.on_channel_post),
            ],
            group=0,
        )
        app.add_handler(TypeHandler(Update, self.done), group=1)
        app.add_error_handler(self.on_error)

    async def begin(self, update: Update, context: Context) -> None:
        task = asyncio.current_task()
        if task is not None:
            self.adapter.track_handling(task)

    async def done(self, update: Update, context: Context) -> None:
        # One refused because the agent is draining stays in the inbox for the next start.
        runtime = self.runtime
        if runtime.accepting:
            store, event_id = runtime.store, str(update.update_id)
            await store.health.retry(lambda: store.inbox_done(SOURCE, event_id), going_on=lambda: runtime.accepting)
            self._inbox().dealt_with(update.update_id)

    async def on_error(self, update: object, context: Context) -> None:
        error = context.error
        outage = classify(error)
        if isinstance(update, Update) and outage not in (None, StoreState.CORRUPT) and self.runtime.accepting:
            # The store could not write (it said so, once): handled again when it writes.
            _log.debug("%s: Telegram update %s waits for the store: %s", self.adapter.name, update.update_id, error)
            self.runtime.create_task(self._inbox().again(update), "telegram:update-again")
            raise ApplicationHandlerStop  # not done: it stays in the inbox
        if outage is None:  # the store's own failures are logged once, by the store
            _log.error("%s: failed to handle a Telegram update", self.adapter.name, exc_info=error)
        if isinstance(update, Update):
            raise ApplicationHandlerStop  # not done: it stays in the inbox

    def _inbox(self) -> InboxQueue:
        assert self.adapter.app is not None  # handlers run only while the app does
        queue = self.adapter.app.update_queue
        assert isinstance(queue, InboxQueue)  # the adapter builds the app with it
        return queue

    async def on_start(self, update: Update, context: Context) -> None:
        character = self.runtime.character
        about = character.bio[0] if character.bio else ""
        await self._answer(update, f"Hi, I'm {character.name}. {about}".strip() + "\n\nJust write to me here.")

    async def on_help(self, update: Update, context: Context) -> None:
        await self._answer(
            update,
            f"I'm {self.runtime.character.name}. In a private chat, just write to me. In a group, mention "
            f"@{self.adapter.username}, reply to one of my messages, or call me by name.",
        )

    async def on_summarize(self, update: Update, context: Context) -> None:
        seen = await self._translate_and_store(update)
        count = _summary_count(context.args or [])
        summaries = self.runtime.get_service(CONVERSATION_SUMMARIES)
        if count is None:
            reply = Reply(text=_SUMMARIZE_USAGE)
        elif summaries is None:
            reply = Reply(text=f"{self.runtime.character.name} can't summarise conversations.")
        else:
            reply = (await summaries.summarize_room(seen.room.id, count)).reply()  # a long one as a file
        await self._reply(seen, reply.text, reply)

    async def _answer(self, update: Update, text: str) -> None:
        """Answer a command with ``text``, without the model."""
        await self._reply(await self._translate_and_store(update), text)

    async def _translate_and_store(self, update: Update) -> Translated:
        adapter, message = self.adapter, _message(update)
        seen = translate(self.runtime.agent_id, message, bot_id=adapter.bot_id, bot_username=adapter.username)
        await adapter.ensure_stored(message, seen)
        return seen

    async def _reply(self, seen: Translated, text: str, reply: Reply | None = None) -> None:
        target = ChatTarget(seen.chat_id, seen.thread_id, seen.title)
        await self.adapter.try_send(target, text, reply or Reply(text=text), seen.message_id)

    async def on_press(self, update: Update, context: Context) -> None:
        assert update.callback_query is not None  # the handler's kind
        await take_press(self.adapter, update.callback_query)

    async def on_message(self, update: Update, context: Context) -> None:
        await self.adapter.receive(_message(update))

    async def on_edit(self, update: Update, context: Context) -> None:
        adapter, message = self.adapter, update.edited_message
        assert message is not None  # the handler's filter
        seen = translate(self.runtime.agent_id, message, bot_id=adapter.bot_id, bot_username=adapter.username)
        await adapter.ensure_stored(message, seen)  # an edit of a message troupe never saw is stored as new
        # An album's caption: the album's message.
        edit = replace(seen.edit(), id=message_memory_id(self.runtime.agent_id, message))
        await self.runtime.emit(MessageUpdated(message=edit, source=SOURCE))

    async def on_reaction(self, update: Update, context: Context) -> None:
        reaction = update.message_reaction
        assert reaction is not None  # the handler's kind
        user = reaction.user
        if user is None or user.id == self.adapter.bot_id or not reaction.new_reaction:
            return  # anonymous reactions, our own, and removals carry nothing to remember
        kind = reaction.new_reaction[0]
        emoji = getattr(kind, "emoji", None) or getattr(kind, "custom_emoji_id", None) or str(kind.type)
        agent, chat = self.runtime.agent_id, reaction.chat
        room = room_id(agent, chat.id)
        entity = (
            await self.adapter.ensure_entity(user, room) if self.adapter.knows(chat.id) else entity_id(agent, user.id)
        )
        memory = Memory(
            id=message_id(agent, chat.id, f"{reaction.message_id}-reaction-{user.id}-{emoji}"),
            entity_id=entity,
            agent_id=agent,
            room_id=room,
            world_id=world_id(agent, chat.id),
            content=Content(
                text=f"*reacted {emoji}*",
                source=SOURCE,
                in_reply_to=message_id(agent, chat.id, reaction.message_id),
                channel_type=channel_type(chat),
            ),
            metadata=MemoryMetadata(type=MemoryType.REACTION, author_is_bot=bool(user.is_bot), emoji=emoji),
            created_at=now_ms(),
        )
        await self.runtime.emit(ReactionReceived(message=memory, source=SOURCE))

    async def on_membership(self, update: Update, context: Context) -> None:
        adapter, message = self.adapter, _message(update)
        room = await adapter.ensure_room(message, room_for_message(self.runtime.agent_id, message))
        for user in message.new_chat_members or ():
            if user.id != adapter.bot_id:
                await adapter.ensure_entity(user, room)
                await self._member_event(EventType.ENTITY_JOINED, user, message.chat.id, room)
        left = message.left_chat_member
        if left is not None and left.id != adapter.bot_id:
            await self._member_event(EventType.ENTITY_LEFT, left, message.chat.id, room)

    async def on_title(self, update: Update, context: Context) -> None:
        """The group was renamed: its room takes the new title (ROOM_UPDATED)."""
        adapter, message = self.adapter, _message(update)
        room = chat_room(self.runtime.agent_id, message.chat)
        if room.name and not await adapter.connections.renamed(room.id, room.name):
            await adapter.ensure_room(message, room)

    async def on_chat_member(self, update: Update, context: Context) -> None:
        change = update.chat_member
        assert change is not None  # the handler's kind
        user = change.new_chat_member.user
        if user.id == self.adapter.bot_id:
            return
        joined, was_in = change.new_chat_member.status in IN_CHAT, change.old_chat_member.status in IN_CHAT
        if joined == was_in:
            return
        room = room_id(self.runtime.agent_id, change.chat.id)
        if joined and self.adapter.knows(change.chat.id):
            await self.adapter.ensure_entity(user, room)
        await self._member_event(
            EventType.ENTITY_JOINED if joined else EventType.ENTITY_LEFT, user, change.chat.id, room
        )

    async def on_my_chat_member(self, update: Update, context: Context) -> None:
        """The bot itself was added to a group or channel (WORLD_JOINED), or removed or banned
        from one (WORLD_LEFT: the relay stops handing it what is said there)."""
        change = update.my_chat_member
        assert change is not None  # the handler's kind
        joined, was_in = change.new_chat_member.status in IN_CHAT, change.old_chat_member.status in IN_CHAT
        if joined == was_in or channel_type(change.chat) is ChannelType.DM:
            return  # promoted or restricted; a person blocking the bot is not a world it leaves
        if joined:
            await self.adapter.joined_chat(change.chat, change.from_user)
        else:
            await self.adapter.left_chat(change.chat, change.new_chat_member.status)

    async def on_channel_post(self, update: Update, context: Context) -> None:
        """A post in a channel: heard only with TELEGRAM_CHANNEL_POSTS on (then fetched at all)."""
        post = update.channel_post
        assert post is not None  # the handler's filter
        if self.adapter.config.channel_posts:
            await self.adapter.receive(post)

    async def _member_event(self, event: EventType, user: User, chat_id: int, room: str) -> None:
        agent = self.runtime.agent_id
        await self.runtime.emit(
            (EntityJoined if event is EventType.ENTITY_JOINED else EntityLeft)(
                entity_id=entity_id(agent, user.id),
                world_id=world_id(agent, chat_id),
                room_id=room,
                source=SOURCE,
                metadata={SOURCE: {"id": str(user.id), "username": user.username, "name": user.full_name}},
            )
        )


_SUMMARIZE_USAGE = (
    f"Use /summarize, or /summarize N for the last N messages (1 to {SUMMARY_MAX_COUNT}; "
    f"{SUMMARY_DEFAULT_COUNT} when left out)."
)


def _summary_count(args: list[str]) -> int | None:
    """How many messages ``/summarize`` asks for; None for anything but one whole number >= 1."""
    if not args:
        return SUMMARY_DEFAULT_COUNT
    if len(args) != 1 or not args[0].isdigit() or int(args[0]) < 1:
        return None
    return min(int(args[0]), SUMMARY_MAX_COUNT)


def _message(update: Update) -> Message:
    message = update.message
    assert message is not None  # filters.UpdateType.MESSAGE
    return message


class _FromOthers(filters.MessageFilter):
    """Messages someone other than this bot wrote (Telegram never sends a bot its own, but an
    update without a sender — a channel speaking in a group — has no one to answer)."""

    def __init__(self, adapter: TelegramAdapter) -> None:
        super().__init__(name="from others")
        self.adapter = adapter

    def filter(self, message: Message) -> bool:
        sender = message.from_user
        return sender is not None and sender.id != self.adapter.bot_id


class _NotAllowedGroup(BaseHandler[Update, Context, None]):
    """Takes the updates of groups the bot may not stay in (``shouldOnlyJoinInAllowedGroups``,
    ``allowedGroupIds``): the first says why and leaves (:class:`._groups.GroupGate`), none
    reaches the character."""

    def __init__(self, adapter: TelegramAdapter) -> None:
        super().__init__(self._refuse)
        self.adapter = adapter

    def check_update(self, update: object) -> bool:
        if not isinstance(update, Update):
            return False
        chat = update.effective_chat
        return chat is not None and self.adapter.groups.refuses(chat)

    async def _refuse(self, update: Update, context: Context) -> None:
        gate, chat, change = self.adapter.groups, update.effective_chat, update.my_chat_member
        assert chat is not None  # check_update
        if change is None or change.old_chat_member.status in IN_CHAT:
            if change is None or change.new_chat_member.status in IN_CHAT:
                await gate.seen(chat)  # said there, or the bot's rights changed: it is still in
            else:
                gate.gone(chat)
        elif change.new_chat_member.status in IN_CHAT:
            await gate.added(chat)


class _Elsewhere(BaseHandler[Update, Context, None]):
    """Takes the updates of chats the character stays out of (``TELEGRAM_ALLOWED_CHATS``, private
    chats when the ``allowDirectMessages`` setting is off) and of no chat, so that no other handler
    of the group does: they are dealt with by being left alone."""

    def __init__(self, adapter: TelegramAdapter) -> None:
        super().__init__(_nothing)
        self.adapter = adapter

    def check_update(self, update: object) -> bool:
        if not isinstance(update, Update):
            return False
        chat = update.effective_chat
        return chat is None or not self.adapter.allowed(chat)


async def _nothing(update: Update, context: Context) -> None:
    return None

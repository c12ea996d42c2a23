"""Buttons on Telegram: a reply's buttons as an inline keyboard (its fixed answers as a reply
keyboard, :func:`reply_keyboard`), a press of one (a callback query) as a message from the person
who pressed it, and the question a press answered edited to say so (:func:`settle`).

A press is acknowledged first (answerCallbackQuery, bounded by a short timeout: the person's
client shows a spinner until then), before the character thinks about it. Then it becomes a
message in the room (and forum topic) of the message the button was under, its text the
button's label, replying to that message: the bot's own message, so the press addresses the
character even in a group where it would not otherwise answer. Its id comes from the query's id:
a redelivered update is claimed once by the pipeline (and Telegram refuses to acknowledge a query
twice, which is logged at debug).

A press on a message too old for the bot to read (an InaccessibleMessage, date 0) still counts:
its chat is known but not its forum topic nor the button's label, so it goes to the chat's main
room with the button's value as its text. A press of a button that asks for text asks it first
(:mod:`._prompts`): the answer is the press.

A reply's menu (Telegram has none) is shown as buttons, its options first: for a menu choosing
one option, a tap chooses it; for one taking several, taps tick options and Done chooses those
ticked (:mod:`._menus`). A press on a message sent in inline mode (no message,
an ``inline_message_id``) is acknowledged and ignored: troupe sends none.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from telegram import (
    Bot,
    CallbackQuery,
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    KeyboardButton,
    MaybeInaccessibleMessage,
    Message,
    ReplyKeyboardMarkup,
    ReplyKeyboardRemove,
)
from telegram.error import BadRequest, TelegramError

from bot.sdk import Button, Content, Deadline, Memory, Press, Reply, ReplyKeyboard, Settled, buttons_shown, now_ms, rows

from ._mapping import (
    SOURCE,
    Translated,
    channel_type,
    chat_room,
    entity_for_user,
    message_id,
    message_metadata,
    room_for_message,
)
from ._menus import TICK, MenuTap, menu_rows, take_menu_tap
from ._message_ref import TelegramMessageRef
from ._outbound import ReplyMarkup, SendGaveUp, with_retries
from ._prompts import ask, prompt_of

if TYPE_CHECKING:
    from ._adapter import TelegramAdapter

__all__ = [
    "ACK_TIMEOUT_S",
    "acknowledge",
    "keyboard",
    "markup_of",
    "reply_keyboard",
    "settle",
    "shown_buttons",
    "take_press",
    "translate_press",
]

_log = logging.getLogger(__name__)

#: How long acknowledging a press may take; Telegram's client gives up on its spinner after some 15 s.
ACK_TIMEOUT_S = 5.0
_PER_ROW = 3


def keyboard(buttons: Sequence[Button]) -> InlineKeyboardMarkup | None:
    """The inline keyboard that shows ``buttons`` (laid out by :func:`bot.kernel.buttons.rows`; links
    as url buttons), or None for none."""
    if not buttons:
        return None
    return InlineKeyboardMarkup(
        [
            [
                InlineKeyboardButton(b.label, url=b.url)
                if b.is_link
                else InlineKeyboardButton(b.label, callback_data=b.value)
                for b in row
            ]
            for row in rows(buttons, _PER_ROW)
        ]
    )


def reply_keyboard(wanted: ReplyKeyboard, *, selective: bool) -> ReplyKeyboardMarkup | ReplyKeyboardRemove:
    """The reply keyboard that offers ``wanted``'s answers (laid out as buttons are), or its
    removal. ``selective``: shown only to the person the message replies to (in a group, the
    others keep their own keyboard)."""
    if wanted.removes:
        return ReplyKeyboardRemove(selective=selective or None)
    laid = rows([Button(a, value=str(i)) for i, a in enumerate(wanted.answers)], _PER_ROW)
    return ReplyKeyboardMarkup(
        [[KeyboardButton(b.label) for b in row] for row in laid],
        resize_keyboard=wanted.resize,
        one_time_keyboard=wanted.one_time,
        selective=selective or None,
    )


def markup_of(reply: Reply, *, replying: bool) -> ReplyMarkup | None:
    """What ``reply`` carries under its last message: its menu's options and its buttons, else
    its reply keyboard (a message holds one or the other: the buttons win, the keyboard is left
    out with a warning)."""
    menu = reply.menu
    if menu is not None or reply.buttons:
        if reply.keyboard is not None:
            _log.warning("a reply keyboard left out: the reply has buttons, and a message carries one or the other")
        if menu is not None and menu.max_values > 1:  # ticked, then Done (:mod:`._menus`)
            after = keyboard(reply.buttons)
            return InlineKeyboardMarkup([*menu_rows(menu), *(after.inline_keyboard if after is not None else ())])
        return keyboard([*(menu.options if menu is not None else ()), *reply.buttons])
    return reply_keyboard(reply.keyboard, selective=replying) if reply.keyboard is not None else None


async def settle(bot: Bot, message: Message, settled: Settled, deadline_s: float) -> Message:
    """Edit ``message`` (one of the bot's, a button of which was pressed) to show ``settled``'s
    note under its text or caption, its formatting kept, its keyboard removed (an edit that
    names none removes it). A message already showing exactly that (a second press meanwhile)
    is left as it is.

    Raises:
        TelegramError: Telegram refused the edit (the message gone, or too long with the note).
    """
    chat, number = message.chat_id, message.message_id

    async def edit() -> Message | bool:
        if message.caption is not None:
            shown = settled.shown_under(message.caption)
            return await bot.edit_message_caption(
                chat, number, caption=shown, caption_entities=message.caption_entities
            )
        if message.text is not None:
            shown = settled.shown_under(message.text)
            return await bot.edit_message_text(shown, chat, number, entities=message.entities)
        return await bot.edit_message_reply_markup(chat, number)

    try:
        edited = await with_retries(edit, Deadline.after(deadline_s))
    except BadRequest as exc:
        if "not modified" not in exc.message.lower():
            raise
        return message
    return edited if isinstance(edited, Message) else message


def shown_buttons(message: MaybeInaccessibleMessage) -> list[Button]:
    """The buttons with a value under ``message``, as Telegram shows them (none when the bot
    cannot read the message)."""
    markup = message.reply_markup if isinstance(message, Message) else None
    if markup is None:
        return []
    return buttons_shown(
        (b.text.removeprefix(TICK), b.callback_data)
        for row in markup.inline_keyboard
        for b in row
        if isinstance(b.callback_data, str)
    )


def translate_press(
    agent_id: str, query: CallbackQuery, message: MaybeInaccessibleMessage, press: Press | None = None
) -> Translated:
    """A press of a button under ``message`` (``press``: the options ticked in a menu, when it
    is Done) as the message the pipeline receives (pure)."""
    chat, presser = message.chat, query.from_user
    # An InaccessibleMessage says nothing of its forum topic: the chat's main room it is.
    room = room_for_message(agent_id, message) if isinstance(message, Message) else chat_room(agent_id, chat)
    topic = room.metadata.thread_id
    press = press or Press.find(str(query.data), shown_buttons(message))
    where = TelegramMessageRef.heard(chat, message.message_id, presser, topic, callback_query_id=query.id)
    memory = Memory(
        id=message_id(agent_id, chat.id, f"press-{query.id}"),
        entity_id=entity_for_user(agent_id, presser).id,
        agent_id=agent_id,
        room_id=room.id,
        world_id=room.world_id,
        content=Content(
            text=press.text,
            button=press,
            in_reply_to=message_id(agent_id, chat.id, message.message_id),
            source=SOURCE,
            channel_type=channel_type(chat),
        ),
        created_at=now_ms(),
        # A button under the bot's own message: the press is addressed to it.
        metadata=where.kept_in(message_metadata(presser, is_mention=False, is_reply=True)),
    )
    return Translated(
        chat_id=int(chat.id),
        message_id=int(message.message_id),
        thread_id=int(topic) if topic is not None else None,
        title=getattr(chat, "title", None),
        room=room,
        main_room=chat_room(agent_id, chat),
        entity=entity_for_user(agent_id, presser),
        memory=memory,
        spoken=None,
    )


async def acknowledge(query: CallbackQuery, agent: str) -> None:
    """answerCallbackQuery, at once and bounded; never raises. A query Telegram calls too old or
    invalid (a redelivered update, a press answered after some 15 s) is logged at debug."""
    try:
        async with asyncio.timeout(ACK_TIMEOUT_S):
            await query.answer()
    except BadRequest as exc:
        _log.debug("%s: Telegram refused to acknowledge press %s: %s", agent, query.id, exc.message)
    except (TelegramError, TimeoutError) as exc:
        _log.info("%s: could not acknowledge a press on Telegram (%s)", agent, exc.__class__.__name__)


async def take_press(adapter: TelegramAdapter, query: CallbackQuery) -> None:
    """Acknowledge a press, then hand it to the pipeline (see the module docstring); a tap in a
    menu of several options is :mod:`._menus`'s."""
    message = query.message
    if message is not None and query.data and adapter.allowed(message.chat):
        tapped = await take_menu_tap(adapter, query)
        if isinstance(tapped, Press):
            await adapter.receive_press(message, translate_press(adapter.runtime.agent_id, query, message, tapped))
        if tapped is not MenuTap.ELSEWHERE:
            return
    await acknowledge(query, adapter.name)
    if message is None:
        _log.debug("%s: a press on an inline-mode message (%s) is ignored", adapter.name, query.inline_message_id)
        return
    if not query.data or not adapter.allowed(message.chat):
        return  # a game's button, or a chat the character stays out of
    prompt = await prompt_of(adapter, message, query.data) if isinstance(message, Message) else None
    if prompt is not None and isinstance(message, Message):
        press, person = Press.find(query.data, shown_buttons(message)), query.from_user
        try:
            await ask(adapter, message, press, prompt, person.id, person.first_name)
        except (TelegramError, SendGaveUp) as exc:
            _log.warning("%s: could not ask %r on Telegram (%s)", adapter.name, prompt.label, exc.__class__.__name__)
        return
    await adapter.receive_press(message, translate_press(adapter.runtime.agent_id, query, message))

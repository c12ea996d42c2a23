"""Buttons on Telegram: a reply's buttons as an inline keyboard, and a press of one (a callback
query) as a message from the person who pressed it.

A press is acknowledged first (answerCallbackQuery, bounded by a short timeout: the person's
client shows a spinner until then), before the character thinks about it. Then it becomes a
message in the room (and forum topic) of the message the button was under, its text the
button's label, replying to that message: the bot's own message, so the press addresses the
character even in a group where it would not otherwise answer. Its id comes from the query's id:
a redelivered update is claimed once by the pipeline (and Telegram refuses to acknowledge a query
twice, which is logged at debug).

A press on a message too old for the bot to read (an InaccessibleMessage, date 0) still counts:
its chat is known but not its forum topic nor the button's label, so it goes to the chat's main
room with the button's value as its text. A press on a message sent in inline mode (no message,
an ``inline_message_id``) is acknowledged and ignored: troupe sends none.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from telegram import CallbackQuery, InlineKeyboardButton, InlineKeyboardMarkup, MaybeInaccessibleMessage, Message
from telegram.error import BadRequest, TelegramError

from bot.sdk import Button, Content, Memory, Press, buttons_shown, now_ms, rows

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
from ._message_ref import TelegramMessageRef

if TYPE_CHECKING:
    from ._adapter import TelegramAdapter

__all__ = ["ACK_TIMEOUT_S", "acknowledge", "keyboard", "shown_buttons", "take_press", "translate_press"]

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


def shown_buttons(message: MaybeInaccessibleMessage) -> list[Button]:
    """The buttons with a value under ``message``, as Telegram shows them (none when the bot
    cannot read the message)."""
    markup = message.reply_markup if isinstance(message, Message) else None
    if markup is None:
        return []
    return buttons_shown(
        (b.text, b.callback_data) for row in markup.inline_keyboard for b in row if isinstance(b.callback_data, str)
    )


def translate_press(agent_id: str, query: CallbackQuery, message: MaybeInaccessibleMessage) -> Translated:
    """A press of a button under ``message`` as the message the pipeline receives (pure)."""
    chat, presser = message.chat, query.from_user
    # An InaccessibleMessage says nothing of its forum topic: the chat's main room it is.
    room = room_for_message(agent_id, message) if isinstance(message, Message) else chat_room(agent_id, chat)
    topic = room.metadata.thread_id
    press = Press.find(str(query.data), shown_buttons(message))
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
    """Acknowledge a press, then hand it to the pipeline (see the module docstring)."""
    await acknowledge(query, adapter.name)
    message = query.message
    if message is None:
        _log.debug("%s: a press on an inline-mode message (%s) is ignored", adapter.name, query.inline_message_id)
        return
    if not query.data or not adapter.allowed(message.chat):
        return  # a game's button, or a chat the character stays out of
    await adapter.receive_press(message, translate_press(adapter.runtime.agent_id, query, message))

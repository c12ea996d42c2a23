"""A button that asks for text, on Telegram: a press of it sends the question as a ForceReply
(the person's app opens a reply to it, its placeholder greyed in the field), and the person's
reply to that question comes back as the press, with the text as its ``answer``.

What the button asks is read from the stored message it was under (``content.buttons`` keeps a
button's prompt). The question sent is stored as the character's message, and remembered in the store's cache (a day, then forgotten)
with the press it answers, the person who pressed, and the message the button was under: a
reply to it, by that person, on any daemon serving the character and also after a restart, is
the answer. It replies to the bot's own message, so it addresses the character; its id is the
reply's own, so a redelivered update is claimed once. An answer that settles the press edits
the message the button was under, as a press's does.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from telegram import ForceReply, Message
from telegram.constants import ParseMode

from bot.sdk import Deadline, JSONValue, Press, Reply, TextPrompt, now_ms

from ._mapping import SOURCE, Translated, message_id, room_for_message
from ._markdown import escape
from ._outbound import with_retries

if TYPE_CHECKING:
    from ._adapter import TelegramAdapter

__all__ = ["answer_to", "ask", "prompt_of", "PROMPT_KEPT_S"]

_log = logging.getLogger(__name__)

#: How long a question waits for its answer.
PROMPT_KEPT_S = 24 * 3600
_MAX_PLACEHOLDER = 64  # Telegram's limit on input_field_placeholder


def _key(chat_id: int, question_id: int) -> str:
    return f"telegram:prompt:{chat_id}:{question_id}"


async def prompt_of(adapter: TelegramAdapter, message: Message, value: str) -> TextPrompt | None:
    """What the button carrying ``value`` under ``message`` asks, as the stored message keeps
    it; None for a button that asks nothing (or a message the store does not know)."""
    stored = await adapter.runtime.store.get_memory(
        message_id(adapter.runtime.agent_id, message.chat.id, message.message_id)
    )
    for button in (stored.content.buttons or ()) if stored is not None else ():
        if button.value == value:
            return button.asks
    return None


async def ask(
    adapter: TelegramAdapter, message: Message, press: Press, prompt: TextPrompt, person: int, name: str
) -> None:
    """Send ``prompt`` as a ForceReply in the chat (and topic) of ``message``, naming ``person``
    in a group (a selective ForceReply opens only for those it names), store it as said (the
    conversation shows the question), and remember what it asks.

    Raises:
        TelegramError: Telegram refused the question.
        SendGaveUp: it could not be sent within the send deadline.
    """
    assert adapter.app is not None
    bot, chat = adapter.app.bot, message.chat
    private = chat.type == chat.PRIVATE
    asked = escape(prompt.label)
    text = asked if private else f"[{escape(name)}](tg://user?id={person}), {asked}"
    markup = ForceReply(selective=not private, input_field_placeholder=prompt.placeholder[:_MAX_PLACEHOLDER] or None)

    async def send() -> Message:
        return await bot.send_message(
            chat.id,
            text,
            parse_mode=ParseMode.MARKDOWN_V2,
            reply_markup=markup,
            message_thread_id=message.message_thread_id if message.is_topic_message else None,
        )

    question = await with_retries(send, Deadline.after(adapter.config.send_deadline))
    room = room_for_message(adapter.runtime.agent_id, message)
    await adapter.remember_sent([question], Reply(text=question.text or "", source=SOURCE), room.id, room.world_id)
    kept: JSONValue = {"press": press.record(), "person": person, "under": message.to_dict()}
    await adapter.runtime.store.set_cache(
        _key(chat.id, question.message_id), kept, expires_at=now_ms() + PROMPT_KEPT_S * 1000
    )


async def answer_to(adapter: TelegramAdapter, message: Message, seen: Translated) -> tuple[Translated, Message | None]:
    """``seen`` as the answer to a question :func:`ask` sent, when ``message`` is its asker's
    reply to it (its press with the text as ``answer``), and the message the button was under;
    ``seen`` as it is, and None, for any other message."""
    question = message.reply_to_message
    if question is None or question.from_user is None or question.from_user.id != adapter.bot_id:
        return seen, None
    if message.from_user is None:
        return seen, None
    kept = await adapter.runtime.store.get_cache(_key(message.chat.id, question.message_id))
    if not isinstance(kept, Mapping) or kept.get("person") != message.from_user.id:
        return seen, None
    press = Press.of(kept.get("press"))
    under = kept.get("under")
    if press is None:
        return seen, None
    text = seen.memory.content.text or ""
    content = replace(seen.memory.content, button=replace(press, answer=text))
    assert adapter.app is not None
    shown = Message.de_json(dict(under), adapter.app.bot) if isinstance(under, Mapping) else None
    return replace(seen, memory=replace(seen.memory, content=content)), shown

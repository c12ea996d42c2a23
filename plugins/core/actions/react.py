"""REACT: put an emoji on the message being answered, as people do — with a reply, or instead of one.

The plan names the emoji (``content.emoji``: ``<emoji>👍</emoji>``); a plan that names none gets
👍, or the text when that is a lone emoji (a weak model's way of writing it). The reaction goes
through the reply channel (:attr:`ActionContext.react`), recorded like a reply, so a message
delivered again never gets a second one; it is kept in the conversation as people's reactions
are (``*reacted 👍*``). A platform that refuses it (no permission, the message
deleted, an emoji Telegram does not let bots use) has logged why; the rest of the plan still
runs, and a REACT planned alone says the emoji in a message instead, so the person still gets an
answer.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from bot.sdk import (
    Action,
    ActionContext,
    ActionResult,
    ChannelType,
    Content,
    Memory,
    MemoryMetadata,
    MemoryType,
    Reacted,
    Reply,
    State,
    StoreError,
    now_ms,
)

from .._incoming import MESSAGES

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["NAME", "action"]

_log = logging.getLogger(__name__)

NAME = "REACT"
DEFAULT_EMOJI = "👍"
_MAX_EMOJI_CHARS = 64  # a custom Discord emoji, <a:name:id>, is the longest there is


# Words said in a voice channel are no message anyone could put a reaction on.
_SPOKEN = frozenset({ChannelType.VOICE_DM, ChannelType.VOICE_GROUP})


async def _validate(runtime: AgentRuntime, message: Memory, state: State) -> bool:
    """Offered where the message's platform can react (its connection says so), for a message
    written there (not words said in a voice channel)."""
    source = message.content.source
    if not source or message.content.channel_type in _SPOKEN:
        return False
    return bool(getattr(runtime.services.get(str(source)), "reacts", False))


def emoji_of(content: Content) -> str:
    """The emoji the plan asked for: its ``emoji``, else its text when that is a lone emoji,
    else :data:`DEFAULT_EMOJI`."""
    named = (content.emoji or "").strip()
    if named and len(named) <= _MAX_EMOJI_CHARS:
        return named
    text = (content.text or "").strip()
    if text and len(text) <= 8 and not any(c.isalnum() or c.isspace() for c in text):
        return text
    return DEFAULT_EMOJI


async def _handler(context: ActionContext) -> ActionResult:
    message, responses = context.message, context.responses
    content = responses[0].content if responses else Content()
    emoji = emoji_of(content)
    reacted = await context.react(emoji) if context.react is not None else Reacted.UNSUPPORTED
    if reacted is Reacted.DONE:
        await _remember(context.runtime, message, emoji)
        return ActionResult(
            text=f"Reacted with {emoji}", values={"reacted": True}, data={"actionName": NAME, "emoji": emoji}
        )
    planned = [a.strip().upper() for a in content.actions or ()]
    if reacted is not Reacted.NOT_SENT and "REPLY" not in planned:
        # The reaction was the whole answer: say it instead, rather than leave the person unanswered.
        await context.reply(Reply(text=emoji, actions=(NAME,), in_reply_to=message.id, source=content.source))
    why = {
        Reacted.REFUSED: "the platform refused the reaction",
        Reacted.UNSUPPORTED: "reactions are not possible here",
        Reacted.NOT_SENT: "the answer is not this runtime's to give",
    }[reacted]
    return ActionResult(success=False, error=f"no reaction {emoji}: {why}", data={"actionName": NAME, "emoji": emoji})


async def _remember(runtime: AgentRuntime, message: Memory, emoji: str) -> None:
    """Keep the reaction in the conversation, as a person's is kept (``*reacted 👍*``), so the
    next turn knows the message was answered; once, whatever runs it again."""
    reaction = Memory(
        id=runtime.unique_id(f"{message.id}:reaction:{emoji}"),
        entity_id=runtime.agent_id,
        agent_id=runtime.agent_id,
        room_id=message.room_id,
        world_id=message.world_id,
        content=Content(
            text=f"*reacted {emoji}*", actions=(NAME,), in_reply_to=message.id, source=message.content.source
        ),
        metadata=MemoryMetadata(type=MemoryType.REACTION, emoji=emoji),
        created_at=now_ms(),
    )
    try:
        await runtime.store.create_memory(reaction, MESSAGES, unique=False)
    except StoreError as exc:  # the reaction is on the message; only the history misses it
        _log.warning("%s: could not remember reacting with %s: %s", runtime.character.name, emoji, exc)


action = Action(
    name=NAME,
    handler=_handler,
    validate=_validate,
    description="Put an emoji reaction on the message you answer, as people do; say which in emoji. Use it "
    "alone, with no text, when a reaction says enough (a thank-you, an agreement, good news), or with REPLY.",
    similes=("ADD_REACTION", "REACT_WITH_EMOJI", "EMOJI_REACTION", "REACTION", "EMOJI"),
)

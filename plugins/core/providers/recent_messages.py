"""RECENT_MESSAGES: the conversation so far, the message being answered, and who to answer.

Shows the room's last ``conversation_length`` messages (``CONVERSATION_LENGTH``, else the
character's ``conversationLength``, else 32), oldest first, one ``HH:MM (age) Name: text`` line
each. Stored decisions not to speak (no text, only IGNORE) are left out. Speaker names come from
one batched entity lookup; the agent is always its character's name.

The message being answered is shown once, as the received message, not also as the last line of
the conversation. The ``recentMessages`` value (reflection's conversation) keeps it. Its sections
let a prompt short of room drop the oldest lines first and shorten the received message last
(``_budget``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.sdk import Memory, Provider, ProviderResult, State

from .._budget import Cut, Piece, Section
from ._common import (
    MESSAGES,
    POST_TYPES,
    UNKNOWN_USER,
    conversation_length,
    entity_names,
    find_room,
    format_messages,
    is_decision,
    said,
)

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["provider"]

_EMPTY = "No recent messages available."


async def _get(runtime: AgentRuntime, message: Memory, state: State) -> ProviderResult:
    count = conversation_length(runtime)
    room = await find_room(runtime, message)
    # Prompts need text, not vectors: this read skips decoding embeddings.
    stored = await runtime.store.get_memories_by_room_ids(table=MESSAGES, room_ids=[message.room_id], limit=count)
    dialogue = [m for m in reversed(stored) if not is_decision(m)]  # the store gives newest first

    names = await entity_names(runtime, [*(m.entity_id for m in dialogue), message.entity_id])
    sender = names.get(message.entity_id, UNKNOWN_USER)
    text_now = (message.content.text or "").strip()
    if not dialogue and not text_now:
        return ProviderResult(
            text=_EMPTY, values={"recentMessages": "", "recentMessage": ""}, data={"recentMessages": []}
        )

    now = runtime.clock()
    per_message = [format_messages([m], names, now) for m in dialogue]
    lines = "\n".join(per_message)
    is_post = room is not None and room.type in POST_TYPES
    heading = "# Posts in This Thread" if is_post else "# Conversation Messages"
    history = f"{heading}\n{lines}" if lines else ""
    # Shown below as the received message: not twice.
    earlier = [line for m, line in zip(dialogue, per_message, strict=True) if not (text_now and m.id == message.id)]

    newest = dialogue[-1] if dialogue else message
    newest_text = (newest.content.text or "").strip()
    recent_message = f"{names.get(newest.entity_id, UNKNOWN_USER)}: {newest_text}" if newest_text else ""

    sections = [Section([Piece(line, Cut.OLD_MESSAGE) for line in earlier], heading=heading)]
    if text_now:
        received = Section([Piece(said(message, names), Cut.NEWEST_MESSAGE)], heading="# Received Message")
        focus = (
            f"# Focus\nYou are replying to the message above from **{sender}**. "
            "Use the earlier messages only as context."
        )
        sections += [received, Section.of(focus)]
    text = "\n\n".join(t for t in (s.render() for s in sections) if t)
    values = {
        "recentMessages": history,
        "recentPosts": history if is_post else "",
        "recentMessage": recent_message,
    }
    return ProviderResult(
        text=text,
        values=values,
        data={"recentMessages": dialogue, "sections": sections, "lines": per_message, "heading": heading},
    )


provider = Provider(
    name="RECENT_MESSAGES",
    get=_get,
    description="The latest messages in the room, oldest first, and the message being answered.",
    position=100,
)

"""RECENT_MESSAGES: the conversation so far, the message being answered, and who to answer.

Shows the room's last ``conversation_length`` messages (``CONVERSATION_LENGTH``, else the
character's ``conversationLength``, else 32), oldest first, one ``HH:MM (age) Name: text`` line
each. Stored decisions not to speak (no text, only IGNORE) are left out. Speaker names come from
one batched entity lookup; the agent is always its character's name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.components import Provider, ProviderResult, State
from bot.types import Memory

from ._common import (
    MESSAGES,
    POST_TYPES,
    UNKNOWN_USER,
    conversation_length,
    entity_names,
    find_room,
    format_messages,
    is_decision,
)

if TYPE_CHECKING:
    from bot.runtime import AgentRuntime

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
    text_now = str(message.content.get("text") or "").strip()
    if not dialogue and not text_now:
        return ProviderResult(
            text=_EMPTY, values={"recentMessages": "", "recentMessage": ""}, data={"recentMessages": []}
        )

    lines = format_messages(dialogue, names, runtime.clock())
    is_post = room is not None and room.type in POST_TYPES
    heading = "# Posts in This Thread" if is_post else "# Conversation Messages"
    history = f"{heading}\n{lines}" if lines else ""

    newest = dialogue[-1] if dialogue else message
    newest_text = str(newest.content.get("text") or "").strip()
    recent_message = f"{names.get(newest.entity_id, UNKNOWN_USER)}: {newest_text}" if newest_text else ""

    sections = [history]
    if text_now:
        sections.append(f"# Received Message\n{sender}: {text_now}")
        sections.append(
            f"# Focus\nYou are replying to the message above from **{sender}**. "
            "Use the earlier messages only as context."
        )
    text = "\n\n".join(s for s in sections if s)
    values = {
        "recentMessages": history,
        "recentPosts": history if is_post else "",
        "recentMessage": recent_message,
    }
    return ProviderResult(text=text, values=values, data={"recentMessages": dialogue})


provider = Provider(
    name="RECENT_MESSAGES",
    get=_get,
    description="The latest messages in the room, oldest first, and the message being answered.",
    position=100,
)

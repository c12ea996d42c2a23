"""ATTACHMENTS (dynamic): images, files and links shared in the message and the recent conversation.

Attachments of messages sent more than an hour before the newest message with attachments keep
their description but have their extracted text hidden, to keep prompts short. Embedded
``data:`` URLs are summarised, never pasted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from bot.components import Provider, ProviderResult, State
from bot.types import Memory

from ._common import MESSAGES, conversation_length, describe_media

if TYPE_CHECKING:
    from bot.runtime import AgentRuntime

__all__ = ["provider"]

_HIDE_AFTER_MS = 60 * 60 * 1000
_HIDDEN = "[Hidden]"
_NONE = "# Attachments\nNo attachments in this conversation."


def _attachments(memory: Memory) -> list[Mapping[str, Any]]:
    items = (memory.content or {}).get("attachments")
    return [i for i in items if isinstance(i, Mapping)] if isinstance(items, list) else []


def _format(item: Mapping[str, Any]) -> str:
    lines = [f"ID: {item['id'] or '(none)'}"]
    for label, key in (
        ("Name", "title"),
        ("URL", "url"),
        ("Type", "contentType"),
        ("Source", "source"),
        ("Description", "description"),
        ("Text", "text"),
    ):
        if item[key]:
            lines.append(f"{label}: {item[key]}")
    return "\n".join(lines)


async def _get(runtime: AgentRuntime, message: Memory, state: State) -> ProviderResult:
    recent = await runtime.store.get_memories_by_room_ids(
        table=MESSAGES, room_ids=[message.room_id], limit=conversation_length(runtime)
    )
    memories = [*reversed(recent), message]  # oldest first; the current message last
    with_files = [m for m in memories if _attachments(m)]
    if not with_files:
        return ProviderResult(text=_NONE, values={"attachments": ""}, data={"attachments": []})

    newest = max((m.created_at for m in with_files if m.created_at is not None), default=None)
    seen: set[str] = set()
    items: list[dict[str, Any]] = []
    for memory in with_files:
        old = newest is not None and memory.created_at is not None and newest - memory.created_at > _HIDE_AFTER_MS
        for raw in _attachments(memory):
            item = describe_media(raw)
            key = item["id"] or item["url"]
            if key in seen:
                continue
            seen.add(key)
            if old and item["text"]:
                item["text"] = _HIDDEN
            items.append(item)
    text = "# Attachments\n" + "\n\n".join(_format(i) for i in items)
    return ProviderResult(text=text, values={"attachments": text}, data={"attachments": items})


provider = Provider(
    name="ATTACHMENTS",
    get=_get,
    description="Images, files and links shared in the recent conversation, with their descriptions.",
    dynamic=True,
)

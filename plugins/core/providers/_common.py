"""What several providers share: room lookups, speaker names, message lines, settings.

Not a provider itself (the leading underscore keeps it out of discovery).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from bot.sdk import Attachment, ChannelType, Entity, Memory, Room

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = [
    "DEFAULT_CONVERSATION_LENGTH",
    "GROUP_TYPES",
    "MESSAGES",
    "POST_TYPES",
    "UNKNOWN_USER",
    "VOICE_TYPES",
    "channel_type",
    "clock_time",
    "conversation_length",
    "describe_media",
    "display_name",
    "entity_names",
    "find_room",
    "fork_rng",
    "format_messages",
    "is_decision",
    "recent_attachment_records",
    "recent_attachments",
    "relative_age",
    "said",
]

_log = logging.getLogger(__name__)

MESSAGES = "messages"
DEFAULT_CONVERSATION_LENGTH = 32
UNKNOWN_USER = "Unknown User"

#: Rooms written as posts rather than chat (the CHARACTER and RECENT_MESSAGES post formats): only
#: a feed (a Telegram channel). A thread, a forum post or a topic is a conversation, in chat format.
POST_TYPES = frozenset({ChannelType.FEED})
#: Rooms where several people talk and the agent must not answer everything.
GROUP_TYPES = frozenset({ChannelType.GROUP, ChannelType.VOICE_GROUP, ChannelType.THREAD, ChannelType.FORUM})
VOICE_TYPES = frozenset({ChannelType.VOICE_DM, ChannelType.VOICE_GROUP})

# An embedded data: URL is summarised, never pasted into a prompt: it can be megabytes of base64.
_DATA_URL_PREFIX = "data:"


def fork_rng(runtime: AgentRuntime) -> random.Random:
    """A private random source seeded from ``runtime.rng``.

    Call it before the provider's first ``await``: providers run concurrently, and the order in
    which they resume after store reads is not guaranteed, but the order in which they start is
    (position order). Drawing the seed first keeps a seeded runtime's prompts byte-identical.
    """
    return random.Random(runtime.rng.getrandbits(64))


async def find_room(runtime: AgentRuntime, message: Memory) -> Room | None:
    """The message's room, or None when the store has no row for it (logged at debug)."""
    room = await runtime.store.get_room(message.room_id)
    if room is None:
        _log.debug("%s: no room row for %s", runtime.character.name, message.room_id)
    return room


def channel_type(room: Room | None, message: Memory) -> ChannelType | None:
    """The room's type, else the channel type the adapter put on the message, else None."""
    if room is not None:
        return ChannelType(room.type)
    if message.content.channel_type is not None:
        return message.content.channel_type
    # Spellings elizaOS-style clients write ("dm", "TEXT") are not a ChannelType: the content
    # keeps them as stored, among its other keys.
    raw = message.content.extra.get("channelType")
    if isinstance(raw, str):
        key = raw.strip().upper()
        if key == "TEXT":  # an alias some elizaOS docs use; it behaves as a group
            return ChannelType.GROUP
        try:
            return ChannelType(key)
        except ValueError:
            return None
    return None


def conversation_length(runtime: AgentRuntime) -> int:
    """How many recent messages a prompt shows: the runtime's conversation length;
    ``LIMIT_TO_LAST_MESSAGE`` makes it 1."""
    return 1 if runtime.get_bool("LIMIT_TO_LAST_MESSAGE") else runtime.conversation_length


def is_decision(memory: Memory) -> bool:
    """A stored decision not to speak: no text, and IGNORE as its only action."""
    content = memory.content
    if (content.text or "").strip():
        return False
    return [a.upper() for a in content.actions or ()] == ["IGNORE"]


async def entity_names(runtime: AgentRuntime, entity_ids: Iterable[str]) -> dict[str, str]:
    """Display name per id, fetched in one store call; the agent is always its character's name.

    Ids the store does not know are left out; callers fall back to :data:`UNKNOWN_USER`.
    """
    wanted = [i for i in dict.fromkeys(entity_ids) if i and i != runtime.agent_id]
    names: dict[str, str] = {runtime.agent_id: runtime.character.name}
    if wanted:
        for entity in await runtime.store.get_entities_by_ids(wanted):
            names[entity.id] = display_name(entity)
    return names


def display_name(entity: Entity) -> str:
    """The entity's first non-empty name, else :data:`UNKNOWN_USER`."""
    return next((n for n in entity.names if n), UNKNOWN_USER)


def relative_age(delta_ms: int) -> str:
    """``just now``, ``5 minutes ago``, ``1 hour ago``, ``3 days ago``."""
    seconds = max(0, delta_ms) // 1000
    for unit, size in (("day", 86_400), ("hour", 3_600), ("minute", 60)):
        if seconds >= size:
            count = seconds // size
            return f"{count} {unit}{'' if count == 1 else 's'} ago"
    return "just now"


def clock_time(created_at: int | None) -> str:
    """``HH:MM`` in UTC, ``--:--`` for no time."""
    if created_at is None:
        return "--:--"
    # UTC HH:MM by arithmetic: one per line of every prompt, where datetime and strftime cost
    # several times as much for the same string.
    minutes = created_at // 60_000 % 1440
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def _attachment_refs(attachments: Sequence[Attachment] | None) -> str:
    refs = []
    for item in attachments or ():
        url = item.url or ""
        if url.startswith(_DATA_URL_PREFIX):
            url = "embedded"
        refs.append(f"[{item.id or '?'} - {item.title or 'untitled'} ({url})]")
    return f" (Attachments: {', '.join(refs)})" if refs else ""


def format_messages(memories: Sequence[Memory], names: Mapping[str, str], now_ms: int) -> str:
    """One line per message, in the order given: ``HH:MM (age) Name: text``.

    A message with actions gets a ``(Name's actions: A, B)`` line; attachments are referenced
    inline. Times are UTC, like the TIME provider's.
    """
    lines = []
    for memory in memories:
        name = names.get(memory.entity_id, UNKNOWN_USER)
        age = relative_age(now_ms - memory.created_at) if memory.created_at is not None else "unknown time"
        lines.append(f"{clock_time(memory.created_at)} ({age}) {said(memory, names)}")
        actions = [a for a in memory.content.actions or () if a]
        if actions:
            lines.append(f"({name}'s actions: {', '.join(actions)})")
    return "\n".join(lines)


def said(memory: Memory, names: Mapping[str, str]) -> str:
    """``Name: text`` for one message, a press shown as one, its attachments referenced inline."""
    content = memory.content
    text = (content.text or "").strip()
    press = content.button
    if press is not None:  # what a press says is its button's label: show that it was one
        text = f'pressed "{press.text}"'
    line = f"{names.get(memory.entity_id, UNKNOWN_USER)}:"
    if text:
        line += f" {text}"
    return line + _attachment_refs(content.attachments)


async def recent_attachments(runtime: AgentRuntime, message: Memory) -> list[tuple[int | None, dict[str, Any]]]:
    """The attachments of the room's recent messages and of ``message`` (the ATTACHMENTS
    provider's window), oldest first, each once (by id, else URL), as :func:`describe_media`
    shows them, with the time of the message that carried it."""
    return [(memory.created_at, describe_media(a)) for memory, a in await recent_attachment_records(runtime, message)]


async def recent_attachment_records(runtime: AgentRuntime, message: Memory) -> list[tuple[Memory, Attachment]]:
    """What :func:`recent_attachments` lists, as stored: each attachment (as its platform
    described it, what a download needs) with the message that carried it."""
    recent = await runtime.store.get_memories_by_room_ids(
        table=MESSAGES, room_ids=[message.room_id], limit=conversation_length(runtime)
    )
    seen: set[str] = set()
    found: list[tuple[Memory, Attachment]] = []
    for memory in [*reversed(recent), message]:  # oldest first; the current message last
        for attachment in memory.content.attachments or ():
            key = attachment.id or describe_media(attachment)["url"]
            if key not in seen:
                seen.add(key)
                found.append((memory, attachment))
    return found


def describe_media(item: Attachment) -> dict[str, Any]:
    """An attachment as a prompt may show it: embedded data URLs summarised by type and size."""
    url = item.url or ""
    if url.startswith(_DATA_URL_PREFIX):
        mime = url[len(_DATA_URL_PREFIX) :].split(";", 1)[0].split(",", 1)[0] or "data"
        kilobytes = max(1, round(len(url.split(",", 1)[-1]) * 3 / 4 / 1024))
        url = f"[Embedded {mime} ~{kilobytes}KB]"
    return {
        "id": item.id or "",
        "title": item.title or "",
        "url": url,
        "contentType": item.content_type or "",
        "source": item.source or "",
        "description": item.description or "",
        "text": item.text or "",
    }

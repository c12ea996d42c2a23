"""Who and where on the web platform, as troupe records them (pure functions).

The web is one world per character. A person is the name they gave the console; each has one DM
room with each character, and one entity. Ids are deterministic (``unique_uuid`` of the agent and
``web:...``), so a person who comes back under the same name finds their conversation again.
"""

from __future__ import annotations

import unicodedata
import uuid
from collections.abc import Sequence

from bot.sdk import (
    ChannelType,
    Content,
    Entity,
    EntityMetadata,
    Memory,
    MemoryMetadata,
    PlatformProfile,
    Press,
    Room,
    World,
    now_ms,
    repair_text,
    unique_uuid,
)

from ._lines import FileRef, file_attachment

__all__ = [
    "MAX_NAME_CHARS",
    "SOURCE",
    "entity_for",
    "entity_id",
    "heard",
    "person_name",
    "pressed",
    "room_for",
    "room_id",
    "world_for",
    "world_id",
]

SOURCE = "web"
MAX_NAME_CHARS = 40


def person_name(raw: str) -> str:
    """The name a person gives the console, tidied (spaces collapsed).

    Raises:
        ValueError: no name, one too long, or one with control characters; the message says so.
    """
    name = " ".join(raw.split())
    if not name:
        raise ValueError("give a name: the character calls you by it, and your conversation is kept under it")
    if len(name) > MAX_NAME_CHARS:
        raise ValueError(f"a name is at most {MAX_NAME_CHARS} characters, not {len(name)}")
    if any(unicodedata.category(c).startswith("C") for c in name):
        raise ValueError("a name cannot hold control characters")
    return name


def world_id(agent_id: str) -> str:
    return unique_uuid(agent_id, f"{SOURCE}:world")


def room_id(agent_id: str, person: str) -> str:
    return unique_uuid(agent_id, f"{SOURCE}:room:{person}")


def entity_id(agent_id: str, person: str) -> str:
    return unique_uuid(agent_id, f"{SOURCE}:user:{person}")


def world_for(agent_id: str) -> World:
    return World(world_id(agent_id), agent_id, name="web", server_id=SOURCE)


def room_for(agent_id: str, person: str, character: str) -> Room:
    """The DM room of ``person`` with the character: its channel id is the person's name."""
    return Room(
        room_id(agent_id, person),
        source=SOURCE,
        type=ChannelType.DM,
        name=f"{character} with {person} (web)",
        world_id=world_id(agent_id),
        server_id=SOURCE,
        channel_id=person,
    )


def entity_for(agent_id: str, person: str) -> Entity:
    return Entity(
        entity_id(agent_id, person),
        agent_id,
        names=[person],
        metadata=EntityMetadata(platforms={SOURCE: PlatformProfile(id=person, name=person)}),
    )


def _message(agent_id: str, person: str, content: Content, *, is_reply: bool = False) -> Memory:
    return Memory(
        id=str(uuid.uuid4()),
        entity_id=entity_id(agent_id, person),
        agent_id=agent_id,
        room_id=room_id(agent_id, person),
        world_id=world_id(agent_id),
        content=content,
        created_at=now_ms(),
        metadata=MemoryMetadata(
            entity_name=person, author_id=person, author_is_bot=False, is_mention=False, is_reply=is_reply
        ),
    )


def heard(agent_id: str, person: str, text: str, files: Sequence[FileRef] = ()) -> Memory:
    """What ``person`` typed (and uploaded) in the browser, as the message the pipeline receives.
    An uploaded sound is a voice note: the pipeline transcribes it, as Telegram's."""
    attachments = tuple(file_attachment(f) for f in files)
    content = Content(
        text=repair_text(text.strip()),
        source=SOURCE,
        channel_type=ChannelType.DM,
        attachments=attachments or None,
        is_voice_message=True if any(f.is_sound for f in files) else None,
    )
    return _message(agent_id, person, content)


def pressed(agent_id: str, person: str, press: Press, under: str) -> Memory:
    """A press of a button under the character's message ``under`` as a message from ``person``:
    its text the button's label, replying to that message (pure but for the new id)."""
    content = Content(text=press.text, button=press, in_reply_to=under, source=SOURCE, channel_type=ChannelType.DM)
    return _message(agent_id, person, content, is_reply=True)

"""Discord → troupe: guilds become worlds, channels rooms, users entities, messages memories.

Pure functions of discord.py objects (or anything with the same attributes, which is how tests
feed them recorded gateway payloads). Ids are agent-scoped: ``unique_uuid(agent_id,
"discord:<snowflake>")``, so one Discord user is a different entity for each character and the
same one across restarts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from bot.sdk import (
    Attachment,
    ChannelType,
    Content,
    Entity,
    EntityMetadata,
    Memory,
    MemoryMetadata,
    MemoryType,
    NativeRef,
    Ownership,
    PlatformProfile,
    Role,
    Room,
    RoomMetadata,
    SentMessage,
    World,
    WorldMetadata,
    repair_text,
    unique_uuid,
)

__all__ = [
    "SOURCE",
    "Translated",
    "channel_type",
    "discord_id",
    "entity_for_user",
    "memory_for_message",
    "on_cdn",
    "parent_id",
    "room_for_channel",
    "sent_attachments",
    "sent_record",
    "translate",
    "user_names",
    "world_for_guild",
]

SOURCE = "discord"

_CDN_HOSTS = frozenset({"cdn.discordapp.com", "media.discordapp.net"})

# discord.ChannelType member names → the room type. Categories are not rooms.
_CHANNEL_TYPES = {
    "private": ChannelType.DM,
    "group": ChannelType.GROUP,
    "text": ChannelType.GROUP,
    "news": ChannelType.GROUP,
    "voice": ChannelType.VOICE_GROUP,
    "stage_voice": ChannelType.VOICE_GROUP,
    "public_thread": ChannelType.THREAD,
    "private_thread": ChannelType.THREAD,
    "news_thread": ChannelType.THREAD,
    "forum": ChannelType.FORUM,
    "media": ChannelType.FORUM,
}
_USER_MENTION = re.compile(r"<@!?(\d+)>")


def discord_id(agent_id: str, snowflake: int | str) -> str:
    """The agent-scoped id of a Discord object (guild, channel, user, message)."""
    return unique_uuid(agent_id, f"{SOURCE}:{snowflake}")


def channel_type(channel: Any) -> ChannelType | None:
    """The room type of a channel; ``None`` for what is not a room (a category)."""
    kind = getattr(getattr(channel, "type", None), "name", None)
    if kind is None:  # a DMChannel built without a type: it is a DM
        return ChannelType.DM if getattr(channel, "guild", None) is None else None
    if kind in _CHANNEL_TYPES:
        return _CHANNEL_TYPES[kind]
    return None if kind == "category" else ChannelType.GROUP


def parent_id(channel: Any) -> int | None:
    """The channel a thread or forum post belongs to, or None."""
    return getattr(channel, "parent_id", None) if channel_type(channel) is ChannelType.THREAD else None


def user_names(user: Any) -> list[str]:
    """Names people know the user by, most specific first, without repeats (repaired: people put
    anything in their names)."""
    names = [getattr(user, "display_name", None), getattr(user, "global_name", None), getattr(user, "name", None)]
    return list(dict.fromkeys(repair_text(n) for n in names if n))


def entity_for_user(agent_id: str, user: Any) -> Entity:
    names = user_names(user)
    username = getattr(user, "name", "") or ""
    global_name = getattr(user, "global_name", None)
    profile = PlatformProfile(
        user_id=str(user.id),
        username=username,
        name=names[0] if names else "",
        global_name=global_name,
        bot=bool(getattr(user, "bot", False)),
        # stored as null when the person has none, as before
        extra={} if global_name is not None else {"globalName": None},
    )
    return Entity(
        discord_id(agent_id, user.id),
        agent_id,
        names=names,
        metadata=EntityMetadata(platforms={SOURCE: profile}, username=username),
    )


def world_for_guild(agent_id: str, guild: Any, admins: Iterable[Any] = ()) -> World:
    """A guild as a world: its owner is OWNER, ``admins`` (members with Administrator) ADMIN."""
    roles = {discord_id(agent_id, m.id): Role.ADMIN for m in admins}
    ownership = None
    if getattr(guild, "owner_id", None):
        owner = discord_id(agent_id, guild.owner_id)
        ownership = Ownership(owner_id=owner)
        roles[owner] = Role.OWNER
    metadata = WorldMetadata(roles=roles, ownership=ownership)
    return World(
        discord_id(agent_id, guild.id),
        agent_id,
        name=repair_text(guild.name or ""),
        server_id=str(guild.id),
        metadata=metadata,
    )


def room_for_channel(agent_id: str, channel: Any, *, dm_with: Any = None) -> Room | None:
    """A channel as a room; ``None`` for a category. ``dm_with`` names a DM after the person."""
    kind = channel_type(channel)
    if kind is None:
        return None
    guild = getattr(channel, "guild", None)
    metadata = RoomMetadata()
    parent = parent_id(channel)
    if parent is not None:
        metadata = RoomMetadata(parent_channel_id=str(parent), parent_room_id=discord_id(agent_id, parent))
    if kind is ChannelType.DM:
        person = user_names(dm_with)[0] if dm_with is not None and user_names(dm_with) else "someone"
        name = f"DM with {person}"
    else:
        name = repair_text(getattr(channel, "name", None) or str(channel.id))
    return Room(
        discord_id(agent_id, channel.id),
        source=SOURCE,
        type=kind,
        agent_id=agent_id,
        name=name,
        world_id=discord_id(agent_id, guild.id) if guild is not None else None,
        server_id=str(guild.id) if guild is not None else None,
        channel_id=str(channel.id),
        metadata=metadata,
    )


def _ms(moment: datetime | None) -> int | None:
    return int(moment.timestamp() * 1000) if moment is not None else None


def _text(message: Any) -> str:
    """The message text with user mentions written as ``@name``, so names read naturally;
    repaired (see :func:`bot.kernel.text.repair_text`), NUL characters removed (they break storage and prompts)."""
    names = {m.id: (user_names(m) or [str(m.id)])[0] for m in getattr(message, "mentions", ()) or ()}
    text = repair_text(message.content or "").replace("\x00", "")
    return _USER_MENTION.sub(lambda match: f"@{names.get(int(match.group(1)), match.group(1))}", text)


def _attachments(message: Any) -> tuple[Attachment, ...]:
    return tuple(
        Attachment(
            id=str(a.id),
            url=a.url,
            title=a.filename,
            content_type=getattr(a, "content_type", None) or "",
            source=SOURCE,
            size=getattr(a, "size", None),
        )
        for a in getattr(message, "attachments", ()) or ()
    )


def _sent_attachments(message: Any) -> tuple[Attachment, ...]:
    return tuple(
        replace(found, content_type=found.content_type or "application/octet-stream", description=a.description or "")
        for found, a in zip(_attachments(message), message.attachments, strict=True)
    )


def sent_attachments(message: Any) -> list[dict[str, Any]]:
    """What Discord says a message the bot sent carries: its attachments, with their alt text."""
    return [found.to_json() for found in _sent_attachments(message)]


def sent_record(agent_id: str, message: Any) -> SentMessage:
    """What the store keeps of a message the bot sent: its text, link and attachments."""
    return SentMessage(
        id=discord_id(agent_id, message.id),
        text=message.content,
        created_at=int(message.created_at.timestamp() * 1000),
        # What Discord says the message carries.
        content=Content(url=message.jump_url, attachments=_sent_attachments(message) or None),
        metadata=MemoryMetadata(discord_message_id=str(message.id)),
    )


def _replied_author(message: Any) -> int | None:
    reference = getattr(message, "reference", None)
    resolved = getattr(reference, "resolved", None) if reference is not None else None
    author = getattr(resolved, "author", None)
    return getattr(author, "id", None)


def memory_for_message(agent_id: str, message: Any, *, bot_user_id: int) -> Memory:
    """A Discord message as the memory the pipeline receives.

    ``metadata`` tells the gate what it needs: whether the author is a bot, whether this bot
    was @-mentioned (directly or through one of its roles) and whether this is a reply to it.
    """
    channel = message.channel
    guild = getattr(message, "guild", None)
    kind = channel_type(channel) or ChannelType.GROUP
    mentioned = any(m.id == bot_user_id for m in getattr(message, "mentions", ()) or ())
    if not mentioned and guild is not None:
        me = guild.get_member(bot_user_id) if hasattr(guild, "get_member") else None
        own_roles = {r.id for r in getattr(me, "roles", ()) or ()}
        mentioned = any(r.id in own_roles for r in getattr(message, "role_mentions", ()) or () if r.id != guild.id)
    reference = getattr(message, "reference", None)
    reply_to = getattr(reference, "message_id", None) if reference is not None else None
    author = message.author
    return Memory(
        id=discord_id(agent_id, message.id),
        entity_id=discord_id(agent_id, author.id),
        agent_id=agent_id,
        room_id=discord_id(agent_id, channel.id),
        world_id=discord_id(agent_id, guild.id) if guild is not None else None,
        content=Content(
            text=_text(message),
            source=SOURCE,
            channel_type=kind,
            url=getattr(message, "jump_url", None),
            in_reply_to=discord_id(agent_id, reply_to) if reply_to is not None else None,
            attachments=_attachments(message) or None,
        ),
        created_at=_ms(getattr(message, "created_at", None)),
        metadata=MemoryMetadata(
            type=MemoryType.MESSAGE,
            entity_name=(user_names(author) or [str(author.id)])[0],
            author_is_bot=bool(getattr(author, "bot", False)),
            is_mention=mentioned,
            is_reply=_replied_author(message) == bot_user_id,
            author_id=str(author.id),
            channel_id=str(channel.id),
            server_id=str(guild.id) if guild is not None else None,
            discord_message_id=str(message.id),
        ),
    )


@dataclass(frozen=True, slots=True)
class Translated:
    """A Discord message as troupe takes it in: what the pipeline receives, and what the store
    needs before (its room, its author)."""

    memory: Memory
    room: Room | None
    """Its channel as a room; None for a channel that is no room (never, for a message)."""
    entity: Entity
    """Its author."""
    native: NativeRef
    """Where Discord heard it, for the characters of the daemon that hear it too."""


def translate(agent_id: str, message: Any, *, bot_user_id: int) -> Translated:
    """A Discord message heard by the bot ``bot_user_id``, translated once (nothing is stored)."""
    channel, author = message.channel, message.author
    return Translated(
        memory=memory_for_message(agent_id, message, bot_user_id=bot_user_id),
        room=room_for_channel(agent_id, channel, dm_with=author),
        entity=entity_for_user(agent_id, author),
        native=NativeRef(SOURCE, str(channel.id), str(message.id), str(author.id), str(bot_user_id)),
    )


def on_cdn(url: str, attachment_id: object, api_base: str | None) -> bool:
    """Whether ``url`` is Discord's address of the attachment ``attachment_id``
    (``/attachments/<channel>/<id>/<name>`` on its CDN, or on the host of ``DISCORD_API_BASE``):
    the only URLs downloaded for an earlier message's attachment, so a stored URL cannot send the
    bot anywhere else."""
    parts = urlsplit(url)
    hosts = _CDN_HOSTS | ({urlsplit(api_base).netloc} if api_base else set())
    segments = parts.path.split("/")
    return (
        parts.scheme in ("http", "https")
        and parts.netloc in hosts
        and segments[1:2] == ["attachments"]
        and segments[3:4] == [str(attachment_id)]
    )

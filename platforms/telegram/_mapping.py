"""Telegram → troupe: chats become worlds with a main room (plus one room per forum topic), users
entities, messages memories.

Pure functions of python-telegram-bot objects (tests build them from recorded updates with
``Update.de_json``). Ids are agent-scoped and say what they are, so a private chat, its user
and a message never share an id, and message ids (unique only within a chat) never collide
across chats: ``unique_uuid(agent, "telegram:chat:<id>")``, ``…:room:<chat>[:<topic>]``,
``…:user:<id>``, ``…:message:<chat>:<message id>``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from telegram import Chat, Message, User

from bot.sdk import (
    Attachment,
    ChannelType,
    Content,
    Entity,
    EntityMetadata,
    Memory,
    MemoryMetadata,
    MemoryType,
    Ownership,
    PlatformProfile,
    Role,
    Room,
    RoomMetadata,
    World,
    WorldMetadata,
    repair_text,
    unique_uuid,
)

from ._message_ref import TelegramMessageRef
from ._voice import Spoken, spoken_media

__all__ = [
    "SOURCE",
    "Translated",
    "album_memory_id",
    "attachments",
    "channel_type",
    "chat_room",
    "entity_for_user",
    "entity_id",
    "is_topic",
    "memory_for_message",
    "message_id",
    "message_memory_id",
    "message_metadata",
    "message_text",
    "room_for_message",
    "room_id",
    "said_at",
    "translate",
    "user_names",
    "world_for_chat",
    "world_id",
]

SOURCE = "telegram"

_CHANNEL_TYPES = {
    "private": ChannelType.DM,
    "group": ChannelType.GROUP,
    "supergroup": ChannelType.GROUP,
    "channel": ChannelType.FEED,
}


def world_id(agent_id: str, chat_id: int | str) -> str:
    return unique_uuid(agent_id, f"{SOURCE}:chat:{chat_id}")


def room_id(agent_id: str, chat_id: int | str, topic: int | None = None) -> str:
    return unique_uuid(agent_id, f"{SOURCE}:room:{chat_id}" + (f":{topic}" if topic is not None else ""))


def entity_id(agent_id: str, user_id: int | str) -> str:
    return unique_uuid(agent_id, f"{SOURCE}:user:{user_id}")


def message_id(agent_id: str, chat_id: int | str, message: int | str) -> str:
    return unique_uuid(agent_id, f"{SOURCE}:message:{chat_id}:{message}")


def album_memory_id(agent_id: str, chat_id: int | str, media_group_id: str) -> str:
    """The memory id of an album (:mod:`._albums`): the same whichever of its parts it is made from."""
    return message_id(agent_id, chat_id, f"album:{media_group_id}")


def said_at(message: Any) -> int:
    """When ``message`` was said, in ms, for ordering a room's history by.

    Telegram dates messages to the second, and several in one second are common in a group; a
    chat numbers its messages in the order they were said. So the milliseconds are taken from the
    message's number (``message_id % 1000``): still within the second it was said, and within that
    second in the chat's own order, whichever order troupe hears and stores them in (a relayed
    or redelivered message comes late). Only a second in which the numbers pass a multiple of
    1,000 is ordered wrongly.
    """
    return int(message.date.timestamp()) * 1000 + int(message.message_id) % 1000


def message_memory_id(agent_id: str, message: Any) -> str:
    """The memory id of the message ``message`` is heard as: its own, or its album's."""
    album = getattr(message, "media_group_id", None)
    if album is not None:
        return album_memory_id(agent_id, message.chat.id, album)
    return message_id(agent_id, message.chat.id, message.message_id)


def channel_type(chat: Any) -> ChannelType:
    """DM for a private chat, FEED for a channel, GROUP otherwise (never raises)."""
    return _CHANNEL_TYPES.get(str(getattr(chat, "type", "")), ChannelType.GROUP)


def is_topic(message: Any) -> bool:
    """A message in a forum topic (not merely a reply thread in an ordinary supergroup)."""
    chat = message.chat
    return bool(
        getattr(chat, "is_forum", False)
        and getattr(message, "is_topic_message", False)
        and getattr(message, "message_thread_id", None) is not None
    )


def user_names(user: Any) -> list[str]:
    """The user's full name, first name and @username, without repeats (repaired: people put
    anything in their names)."""
    full = " ".join(n for n in (user.first_name, getattr(user, "last_name", None)) if n)
    names = [full, user.first_name, f"@{user.username}" if getattr(user, "username", None) else None]
    return list(dict.fromkeys(repair_text(n) for n in names if n)) or ["Unknown User"]


def entity_for_user(agent_id: str, user: Any) -> Entity:
    names = user_names(user)
    username = getattr(user, "username", None) or ""
    profile = PlatformProfile(
        id=str(user.id), username=username, name=names[0], bot=bool(getattr(user, "is_bot", False))
    )
    return Entity(
        entity_id(agent_id, user.id),
        agent_id,
        names=names,
        metadata=EntityMetadata(platforms={SOURCE: profile}, username=username),
    )


def _chat_name(chat: Any) -> str:
    if getattr(chat, "title", None):
        return repair_text(chat.title)
    person = " ".join(n for n in (getattr(chat, "first_name", None), getattr(chat, "last_name", None)) if n)
    return repair_text(f"Chat with {person or 'Unknown User'}")


def world_for_chat(agent_id: str, chat: Any, *, owner_id: int | None = None, admin_ids: Sequence[int] = ()) -> World:
    """A chat as a world: the creator is OWNER, administrators ADMIN (in a DM, the person is OWNER)."""
    roles = {entity_id(agent_id, a): Role.ADMIN for a in admin_ids}
    ownership = None
    if owner_id is None and channel_type(chat) is ChannelType.DM:
        owner_id = chat.id  # a private chat's id is the person's id
    if owner_id is not None:
        owner = entity_id(agent_id, owner_id)
        roles[owner] = Role.OWNER
        ownership = Ownership(owner_id=owner)
    metadata = WorldMetadata(roles=roles, ownership=ownership, chat_type=str(chat.type))
    return World(
        world_id(agent_id, chat.id), agent_id, name=_chat_name(chat), server_id=str(chat.id), metadata=metadata
    )


def _topic_name(message: Any) -> str:
    for source in (message, getattr(message, "reply_to_message", None)):
        created = getattr(source, "forum_topic_created", None) if source is not None else None
        if created is not None:
            return repair_text(created.name)
    return f"Topic #{message.message_thread_id}"


def chat_room(agent_id: str, chat: Chat) -> Room:
    """The chat's main room (a forum's General topic, too)."""
    return Room(
        room_id(agent_id, chat.id),
        source=SOURCE,
        type=channel_type(chat),
        agent_id=agent_id,
        name=_chat_name(chat),
        world_id=world_id(agent_id, chat.id),
        server_id=str(chat.id),
        channel_id=str(chat.id),
    )


def room_for_message(agent_id: str, message: Message) -> Room:
    """The room a message belongs to: its forum topic, or the chat's main room."""
    return _room(agent_id, message, _thread(message))


def _thread(message: Message) -> int | None:
    """The message's forum topic, if it is in one."""
    topic = message.message_thread_id
    return topic if topic is not None and is_topic(message) else None


def _room(agent_id: str, message: Message, topic: int | None) -> Room:
    chat = message.chat
    if topic is None:
        return chat_room(agent_id, chat)
    return Room(
        room_id(agent_id, chat.id, topic),
        source=SOURCE,
        type=channel_type(chat),
        agent_id=agent_id,
        name=f"{_chat_name(chat)} › {_topic_name(message)}",
        world_id=world_id(agent_id, chat.id),
        server_id=str(chat.id),
        channel_id=f"{chat.id}:{topic}",
        metadata=RoomMetadata(thread_id=topic, is_forum_topic=True, parent_room_id=room_id(agent_id, chat.id)),
    )


def message_text(message: Any) -> str:
    """Text or caption, repaired (see :func:`bot.kernel.text.repair_text`), NUL characters removed (they
    break storage and prompts); a sticker (still, animated or video) is its emoji: ``[sticker 😀]``."""
    text = getattr(message, "text", None) or getattr(message, "caption", None)
    sticker = getattr(message, "sticker", None)
    if not text and sticker is not None:
        text = f"[sticker {sticker.emoji}]" if sticker.emoji else "[sticker]"
    return repair_text(text or "").replace("\x00", "")


def _mentions_bot(message: Any, bot_id: int, bot_username: str) -> bool:
    handle = f"@{bot_username}".casefold()
    text = message_text(message)
    for entity in [*(message.entities or ()), *(message.caption_entities or ())]:
        fragment = message.parse_entity(entity) if message.text else message.parse_caption_entity(entity)
        if entity.type == "mention" and fragment.casefold() == handle:
            return True
        if entity.type == "text_mention" and entity.user is not None and entity.user.id == bot_id:
            return True
        if entity.type == "bot_command" and fragment.casefold().endswith(handle):
            return True
    return handle in text.casefold()


def memory_for_message(agent_id: str, message: Message, *, bot_id: int, bot_username: str) -> Memory:
    """A Telegram message's words as a memory, without its files (what an edit changes).

    ``metadata`` tells the gate what it needs: whether the sender is a bot, whether this bot
    was mentioned (``@username``, a text mention, ``/cmd@username``) and whether this replies
    to one of its messages.
    """
    return _memory(agent_id, message, _thread(message), bot_id=bot_id, bot_username=bot_username)


def _memory(agent_id: str, message: Message, topic: int | None, *, bot_id: int, bot_username: str) -> Memory:
    chat, sender = message.chat, _sender(message)
    reply = getattr(message, "reply_to_message", None)
    # In a forum, every message "replies" to the topic's first message: that is not a reply.
    quoted = None if reply is None or (topic is not None and reply.message_id == topic) else reply
    where = TelegramMessageRef.heard(chat, message.message_id, sender, topic)
    return Memory(
        id=message_id(agent_id, chat.id, message.message_id),
        entity_id=entity_id(agent_id, sender.id),
        agent_id=agent_id,
        room_id=room_id(agent_id, chat.id, topic),
        world_id=world_id(agent_id, chat.id),
        content=Content(
            text=message_text(message),
            source=SOURCE,
            channel_type=channel_type(chat),
            in_reply_to=message_memory_id(agent_id, quoted) if quoted is not None else None,
        ),
        created_at=said_at(message),
        metadata=where.kept_in(
            message_metadata(
                sender,
                is_mention=_mentions_bot(message, bot_id, bot_username),
                is_reply=quoted is not None and quoted.from_user is not None and quoted.from_user.id == bot_id,
            )
        ),
    )


def message_metadata(sender: User, *, is_mention: bool, is_reply: bool) -> MemoryMetadata:
    """What the gate needs of a message from ``sender``: who wrote it, and whether it is
    addressed to the bot (a mention, or a reply to one of its messages)."""
    return MemoryMetadata(
        type=MemoryType.MESSAGE,
        entity_name=user_names(sender)[0],
        entity_user_name=sender.username,
        author_is_bot=bool(sender.is_bot),
        is_mention=is_mention,
        is_reply=is_reply,
    )


def _sender(message: Message) -> User:
    """Who wrote ``message``; a channel's post is signed by the channel, which speaks as a user
    with its (negative, never a person's) id and its title."""
    if message.from_user is not None:
        return message.from_user
    chat = message.sender_chat
    if chat is None:
        raise ValueError("a message with no sender, neither a user nor a chat, is not translated")
    return User(chat.id, _chat_name(chat), False, username=chat.username)


def attachments(message: Message) -> tuple[Attachment, ...]:
    """Files on the message, by file id: their URLs carry the bot token and are never stored."""
    found: list[Attachment] = []
    if message.photo:
        photo = message.photo[-1]  # the largest size
        found.append(
            Attachment(
                id=photo.file_id,
                title="photo.jpg",
                content_type="image/jpeg",
                private=True,
                url=f"telegram:file:{photo.file_unique_id}",
                size=photo.file_size,
                source=SOURCE,
            )
        )
    for kind, default_type, default_name in (
        ("document", "application/octet-stream", "document"),
        ("voice", "audio/ogg", "voice.ogg"),
        ("audio", "audio/mpeg", "audio.mp3"),
        ("video_note", "video/mp4", "video_note.mp4"),
        ("video", "video/mp4", "video.mp4"),  # its sound heard and a frame seen by the core (_attachments.py)
    ):
        item = getattr(message, kind, None)
        if item is not None:
            found.append(
                Attachment(
                    id=item.file_id,
                    title=getattr(item, "file_name", None) or default_name,
                    content_type=getattr(item, "mime_type", None) or default_type,
                    private=True,
                    url=f"telegram:file:{item.file_unique_id}",
                    size=item.file_size,
                    source=SOURCE,
                )
            )
    return tuple(found)


@dataclass(frozen=True, slots=True)
class Translated:
    """One Telegram message as everything troupe needs of it: made once, by :func:`translate`."""

    chat_id: int
    message_id: int
    """Telegram's id of the message, unique within its chat."""
    thread_id: int | None
    """Its forum topic (replies go there), or None outside forum topics."""
    title: str | None
    """The chat's title; None for a private chat."""
    room: Room
    """Its forum topic's room, or the chat's main room."""
    main_room: Room
    entity: Entity
    """Who wrote it."""
    memory: Memory
    """What the pipeline receives: words and files (``content.attachments``, if any). The
    adapter adds a voice note's transcript to it before handing it over."""
    spoken: Spoken | None
    """The voice note, audio file or round video to transcribe, if any."""

    @property
    def is_topic(self) -> bool:
        return self.thread_id is not None

    @property
    def attachments(self) -> tuple[Attachment, ...]:
        """The files on the message."""
        return self.memory.content.attachments or ()

    def edit(self) -> Memory:
        """The message as an edit of one already stored: its words, not its files (the stored
        message's files, with their transcripts and descriptions, stay as they are)."""
        return replace(self.memory, content=replace(self.memory.content, attachments=None))


def translate(
    agent_id: str, message: Message, *, bot_id: int, bot_username: str, text: str | None = None
) -> Translated:
    """``message`` as everything troupe needs of it, in one pure call. ``text`` replaces its
    words (the relay joins what another character sent in several messages); a mention of
    ``@bot_username`` in it counts."""
    chat, topic = message.chat, _thread(message)
    memory = _memory(agent_id, message, topic, bot_id=bot_id, bot_username=bot_username)
    content, metadata = memory.content, memory.metadata
    if text is not None:
        content = replace(content, text=text)
        mentioned = f"@{bot_username}".casefold() in text.casefold()
        metadata = replace(metadata, is_mention=metadata.is_mention or mentioned)
    memory = replace(memory, content=replace(content, attachments=attachments(message) or None), metadata=metadata)
    return Translated(
        chat_id=int(chat.id),
        message_id=int(message.message_id),
        thread_id=topic,
        title=getattr(chat, "title", None),
        room=_room(agent_id, message, topic),
        main_room=chat_room(agent_id, chat),
        entity=entity_for_user(agent_id, _sender(message)),
        memory=memory,
        spoken=spoken_media(message),
    )

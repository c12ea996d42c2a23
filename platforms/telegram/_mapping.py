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
from typing import Any

from bot.ids import unique_uuid
from bot.text import repair_text
from bot.types import ChannelType, Entity, Memory, Role, Room, World

__all__ = [
    "SOURCE",
    "channel_type",
    "entity_for_user",
    "entity_id",
    "is_topic",
    "memory_for_message",
    "message_id",
    "message_text",
    "room_for_message",
    "room_id",
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
    info = {
        "id": str(user.id),
        "username": getattr(user, "username", None) or "",
        "name": names[0],
        "bot": bool(getattr(user, "is_bot", False)),
    }
    return Entity(
        entity_id(agent_id, user.id), agent_id, names=names, metadata={SOURCE: info, "username": info["username"]}
    )


def _chat_name(chat: Any) -> str:
    if getattr(chat, "title", None):
        return repair_text(chat.title)
    person = " ".join(n for n in (getattr(chat, "first_name", None), getattr(chat, "last_name", None)) if n)
    return repair_text(f"Chat with {person or 'Unknown User'}")


def world_for_chat(agent_id: str, chat: Any, *, owner_id: int | None = None, admin_ids: Sequence[int] = ()) -> World:
    """A chat as a world: the creator is OWNER, administrators ADMIN (in a DM, the person is OWNER)."""
    roles = {entity_id(agent_id, a): Role.ADMIN.value for a in admin_ids}
    metadata: dict[str, Any] = {"roles": roles, "chatType": str(chat.type)}
    if owner_id is None and channel_type(chat) is ChannelType.DM:
        owner_id = chat.id  # a private chat's id is the person's id
    if owner_id is not None:
        owner = entity_id(agent_id, owner_id)
        roles[owner] = Role.OWNER.value
        metadata["ownership"] = {"ownerId": owner}
    return World(
        world_id(agent_id, chat.id), agent_id, name=_chat_name(chat), server_id=str(chat.id), metadata=metadata
    )


def _topic_name(message: Any) -> str:
    for source in (message, getattr(message, "reply_to_message", None)):
        created = getattr(source, "forum_topic_created", None) if source is not None else None
        if created is not None:
            return repair_text(created.name)
    return f"Topic #{message.message_thread_id}"


def room_for_message(agent_id: str, message: Any) -> Room:
    """The room a message belongs to: its forum topic, or the chat's main room."""
    chat = message.chat
    kind = channel_type(chat)
    world = world_id(agent_id, chat.id)
    if is_topic(message):
        topic = message.message_thread_id
        return Room(
            room_id(agent_id, chat.id, topic),
            source=SOURCE,
            type=kind,
            agent_id=agent_id,
            name=f"{_chat_name(chat)} › {_topic_name(message)}",
            world_id=world,
            server_id=str(chat.id),
            channel_id=f"{chat.id}:{topic}",
            metadata={"threadId": topic, "isForumTopic": True, "parentRoomId": room_id(agent_id, chat.id)},
        )
    return Room(
        room_id(agent_id, chat.id),
        source=SOURCE,
        type=kind,
        agent_id=agent_id,
        name=_chat_name(chat),
        world_id=world,
        server_id=str(chat.id),
        channel_id=str(chat.id),
    )


def message_text(message: Any) -> str:
    """Text or caption, repaired (see :func:`bot.text.repair_text`), NUL characters removed (they
    break storage and prompts)."""
    return repair_text(getattr(message, "text", None) or getattr(message, "caption", None) or "").replace("\x00", "")


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


def memory_for_message(agent_id: str, message: Any, *, bot_id: int, bot_username: str) -> Memory:
    """A Telegram message as the memory the pipeline receives.

    ``metadata`` tells the gate what it needs: whether the sender is a bot, whether this bot
    was mentioned (``@username``, a text mention, ``/cmd@username``) and whether this replies
    to one of its messages.
    """
    chat, sender = message.chat, message.from_user
    room = room_for_message(agent_id, message)
    reply = getattr(message, "reply_to_message", None)
    # In a forum, every message "replies" to the topic's first message: that is not a reply.
    quoted = None if reply is None or (is_topic(message) and reply.message_id == message.message_thread_id) else reply
    content: dict[str, Any] = {"text": message_text(message), "source": SOURCE, "channelType": channel_type(chat).value}
    if quoted is not None:
        content["inReplyTo"] = message_id(agent_id, chat.id, quoted.message_id)
    return Memory(
        id=message_id(agent_id, chat.id, message.message_id),
        entity_id=entity_id(agent_id, sender.id),
        agent_id=agent_id,
        room_id=room.id,
        world_id=world_id(agent_id, chat.id),
        content=content,
        created_at=int(message.date.timestamp() * 1000),
        metadata={
            "type": "message",
            "entityName": user_names(sender)[0],
            "entityUserName": sender.username,
            "authorIsBot": bool(sender.is_bot),
            "isMention": _mentions_bot(message, bot_id, bot_username),
            "isReply": quoted is not None and quoted.from_user is not None and quoted.from_user.id == bot_id,
            SOURCE: {
                "chatId": str(chat.id),
                "chatType": str(chat.type),
                "messageId": message.message_id,
                "userId": str(sender.id),
                "threadId": message.message_thread_id if is_topic(message) else None,
            },
        },
    )

"""Discord's other gateway events, as troupe events: an edit (MESSAGE_UPDATED), a deletion
(MESSAGE_DELETED), a reaction (REACTION_RECEIVED) and a member joining or leaving a server
(ENTITY_JOINED / ENTITY_LEFT), the bot itself removed from a server (WORLD_LEFT), after the listening rules of the character's settings. Messages
themselves are the adapter's (:meth:`DiscordAdapter.on_message`). Channels and threads created,
renamed or deleted keep their rooms current; the shared layer (``bot.runtime.connections``) says
so (ROOM_JOINED, ROOM_UPDATED, ROOM_LEFT).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord

from bot.sdk import (
    ChannelType,
    Content,
    EntityJoined,
    EntityLeft,
    Memory,
    MemoryMetadata,
    MemoryType,
    MessageDeleted,
    MessageUpdated,
    ReactionReceived,
    now_ms,
)

from ._mapping import SOURCE, channel_type, discord_id, entity_for_user, memory_for_message

if TYPE_CHECKING:
    from ._adapter import DiscordAdapter

__all__ = [
    "channel_created",
    "channel_deleted",
    "channel_renamed",
    "guild_left",
    "member_changed",
    "message_deleted",
    "message_edited",
    "reaction_added",
]


async def message_edited(adapter: DiscordAdapter, payload: discord.RawMessageUpdateEvent) -> None:
    """MESSAGE_UPDATED, for an edit heard where the character listens (not its own messages)."""
    message = payload.message
    if message.author.id == adapter.bot_id or not adapter.listens_in(message.channel):
        return
    memory = memory_for_message(adapter.runtime.agent_id, message, bot_user_id=adapter.bot_id)
    await adapter.runtime.emit(MessageUpdated(message=memory, source=SOURCE))


async def message_deleted(adapter: DiscordAdapter, payload: discord.RawMessageDeleteEvent) -> None:
    """MESSAGE_DELETED, with the ids the deleted message and its room have in the store."""
    agent = adapter.runtime.agent_id
    await adapter.runtime.emit(
        MessageDeleted(
            message_id=discord_id(agent, payload.message_id),
            room_id=discord_id(agent, payload.channel_id),
            source=SOURCE,
        )
    )


async def reaction_added(adapter: DiscordAdapter, payload: discord.RawReactionActionEvent) -> None:
    """REACTION_RECEIVED, as a message of its own that quotes the start of the message reacted to."""
    assert adapter.client is not None
    if payload.user_id == adapter.bot_id:
        return
    channel = adapter.client.get_channel(payload.channel_id) or await adapter.client.fetch_channel(payload.channel_id)
    if not adapter.listens_in(channel):
        return
    user = (
        payload.member or adapter.client.get_user(payload.user_id) or await adapter.client.fetch_user(payload.user_id)
    )
    cached = discord.utils.get(adapter.client.cached_messages, id=payload.message_id)
    snippet = (cached.content[:50] + ("..." if len(cached.content) > 50 else "")) if cached else ""
    emoji = str(payload.emoji)
    text = f'*reacted {emoji} to: "{snippet}"*' if snippet else f"*reacted {emoji}*"
    agent = adapter.runtime.agent_id
    room_id = await adapter.ensure_room(channel, dm_with=user)
    entity_id = await adapter.ensure_entity(user, room_id)
    memory = Memory(
        id=discord_id(agent, f"{payload.message_id}-{payload.user_id}-{emoji}"),
        entity_id=entity_id,
        agent_id=agent,
        room_id=room_id,
        world_id=discord_id(agent, payload.guild_id) if payload.guild_id else None,
        content=Content(
            text=text,
            source=SOURCE,
            in_reply_to=discord_id(agent, payload.message_id),
            channel_type=channel_type(channel) or ChannelType.GROUP,
        ),
        metadata=MemoryMetadata(type=MemoryType.REACTION, author_is_bot=bool(getattr(user, "bot", False)), emoji=emoji),
        created_at=now_ms(),
    )
    await adapter.runtime.emit(ReactionReceived(message=memory, source=SOURCE))


async def member_changed(adapter: DiscordAdapter, member: discord.Member, *, joined: bool) -> None:
    """ENTITY_JOINED or ENTITY_LEFT for someone joining or leaving a server (joining: written first)."""
    if member.id == adapter.bot_id:
        return
    agent = adapter.runtime.agent_id
    entity = entity_for_user(agent, member)
    if joined:
        await adapter.ensure_world(member.guild)
        await adapter.connections.ensure_entity(entity)
    await adapter.runtime.emit(
        (EntityJoined if joined else EntityLeft)(
            entity_id=entity.id,
            world_id=discord_id(agent, member.guild.id),
            source=SOURCE,
            metadata={
                "originalId": str(member.id),
                "username": member.name,
                "displayName": member.display_name,
                "roles": [r.name for r in member.roles if not r.is_default()],
            },
        )
    )


async def guild_left(adapter: DiscordAdapter, guild: discord.Guild) -> None:
    """The bot left, or was removed from, a server (or the server was deleted): its voice session
    there is over, the server's rooms are marked, and WORLD_LEFT says so."""
    adapter.forget_world(guild.id)
    await adapter.voice.disconnected(guild.id)
    await adapter.connections.left_world(discord_id(adapter.runtime.agent_id, guild.id), "removed")


async def channel_created(adapter: DiscordAdapter, channel: discord.abc.GuildChannel | discord.Thread) -> None:
    """A channel or thread the bot now sees: its room stored (ROOM_JOINED when it is new)."""
    await adapter.ensure_room(channel)


async def channel_renamed(
    adapter: DiscordAdapter,
    before: discord.abc.GuildChannel | discord.Thread,
    after: discord.abc.GuildChannel | discord.Thread,
) -> None:
    """A channel or thread renamed: its room keeps the new name (ROOM_UPDATED)."""
    if before.name == after.name:  # permissions, topic, position: nothing a room keeps
        return
    if not await adapter.connections.renamed(discord_id(adapter.runtime.agent_id, after.id), after.name):
        await adapter.ensure_room(after)


async def channel_deleted(adapter: DiscordAdapter, channel: discord.abc.GuildChannel) -> None:
    """A channel deleted: its room is marked as left (ROOM_LEFT); its messages stay remembered."""
    room = await adapter.runtime.store.get_room(discord_id(adapter.runtime.agent_id, channel.id))
    if room is not None and room.metadata.left_at is None:
        await adapter.connections.left_room(room, "deleted")

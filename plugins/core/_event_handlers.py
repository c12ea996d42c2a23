"""Keeping memory in step with the platform: reactions, edits, deletions, cleared channels,
people joining and leaving.

Platforms emit these events; the handlers only touch the store. Each handler logs and returns
on an event it cannot use (never raises into the emitter), and is idempotent: platforms redeliver
events after reconnects.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import fields, replace
from enum import StrEnum
from typing import TYPE_CHECKING, TypeVar

from bot.sdk import (
    ChannelCleared,
    Content,
    EntityJoined,
    EntityLeft,
    Event,
    Memory,
    MessageDeleted,
    MessageUpdated,
    ReactionReceived,
    now_ms,
)

from ._embedding import embeddings

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["register"]

_log = logging.getLogger(__name__)

MESSAGES = "messages"

E = TypeVar("E", bound=Event)


class Presence(StrEnum):
    """Whether a person is in the world, kept in their entity's ``metadata.status``."""

    ACTIVE = "ACTIVE"
    INACTIVE = "INACTIVE"  # left


def _message(runtime: AgentRuntime, message: Memory, event: str) -> str | None:
    """The event's message's id; None (logged) when it has none."""
    if not message.id:
        _log.error("%s: %s without a message id; ignored", runtime.character.name, event)
        return None
    return message.id


async def on_reaction(runtime: AgentRuntime, event: ReactionReceived) -> None:
    """Store the reaction as a message of its own, once."""
    reaction = event.message
    reaction_id = _message(runtime, reaction, event.name)
    if reaction_id is None:
        return
    if await runtime.store.get_memory(reaction_id) is not None:
        return
    await runtime.store.create_memory(replace(reaction, agent_id=runtime.agent_id), MESSAGES, unique=False)


async def on_message_updated(runtime: AgentRuntime, event: MessageUpdated) -> None:
    """An edited message replaces the stored text (its vector is recomputed); an unknown one is stored."""
    edited = event.message
    edited_id = _message(runtime, edited, event.name)
    if edited_id is None:
        return
    stored = await runtime.store.get_memory(edited_id)
    if stored is None:
        await runtime.store.create_memory(replace(edited, agent_id=runtime.agent_id), MESSAGES, unique=False)
        return
    content = _edited(stored.content, edited.content)
    metadata = replace(stored.metadata, edited_at=now_ms())
    await runtime.store.update_memory(edited_id, content=content, metadata=metadata)
    text = content.text or ""
    if text != stored.content.text:
        embeddings(runtime).embed_later(edited_id, text)


def _edited(stored: Content, edited: Content) -> Content:
    """``stored`` with what the edit says: each part the edit has replaces the stored one."""
    changed = {
        f.name: value for f in fields(Content) if f.name != "extra" and (value := getattr(edited, f.name)) is not None
    }
    return replace(stored, **changed, extra={**stored.extra, **edited.extra})


async def on_message_deleted(runtime: AgentRuntime, event: MessageDeleted) -> None:
    if not event.message_id:
        _log.error("%s: MESSAGE_DELETED without a message id; ignored", runtime.character.name)
        return
    await runtime.store.delete_memory(event.message_id)


async def on_channel_cleared(runtime: AgentRuntime, event: ChannelCleared) -> None:
    if not event.room_id:
        _log.error("%s: CHANNEL_CLEARED without a roomId; ignored", runtime.character.name)
        return
    removed = await runtime.store.delete_all_memories(event.room_id, MESSAGES)
    _log.info("%s: cleared %d messages of room %s", runtime.character.name, removed, event.room_id)


async def _set_presence(runtime: AgentRuntime, event: EntityJoined | EntityLeft, status: Presence) -> None:
    entity_id = event.entity_id
    entity = await runtime.store.get_entity(entity_id) if entity_id else None
    if entity is None:
        if not entity_id:
            _log.error("%s: %s without an entityId; ignored", runtime.character.name, event.name)
        return  # the adapter creates entities it has not seen; nothing to mark yet
    if (entity.metadata.status or Presence.ACTIVE) == status:
        return
    if status is Presence.INACTIVE:
        entity.metadata = replace(entity.metadata, status=status.value, left_at=now_ms())
    else:
        entity.metadata = replace(entity.metadata, status=status.value, joined_at=now_ms())
    await runtime.store.update_entity(entity)


async def on_entity_joined(runtime: AgentRuntime, event: EntityJoined) -> None:
    await _set_presence(runtime, event, Presence.ACTIVE)


async def on_entity_left(runtime: AgentRuntime, event: EntityLeft) -> None:
    await _set_presence(runtime, event, Presence.INACTIVE)


def _bound(
    runtime: AgentRuntime, handler: Callable[[AgentRuntime, E], Awaitable[None]]
) -> Callable[[E], Awaitable[None]]:
    """``handler`` with ``runtime`` given, named as itself in the runtime's log of failures."""

    async def run(event: E) -> None:
        await handler(runtime, event)

    run.__qualname__ = handler.__qualname__
    return run


def register(runtime: AgentRuntime) -> None:
    """Register every handler above with ``runtime``."""
    runtime.on(ReactionReceived, _bound(runtime, on_reaction))
    runtime.on(MessageUpdated, _bound(runtime, on_message_updated))
    runtime.on(MessageDeleted, _bound(runtime, on_message_deleted))
    runtime.on(ChannelCleared, _bound(runtime, on_channel_cleared))
    runtime.on(EntityJoined, _bound(runtime, on_entity_joined))
    runtime.on(EntityLeft, _bound(runtime, on_entity_left))

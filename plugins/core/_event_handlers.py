"""Keeping memory in step with the platform: reactions, edits, deletions, cleared channels,
people joining and leaving.

Platforms emit these events; the handlers only touch the store. Each handler logs and returns
on a payload it cannot use (never raises into the emitter), and is idempotent: platforms redeliver
events after reconnects.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from dataclasses import replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from bot.events import EventType
from bot.types import Memory, now_ms

from ._embedding import embeddings

if TYPE_CHECKING:
    from bot.runtime import AgentRuntime

__all__ = ["register"]

_log = logging.getLogger(__name__)

MESSAGES = "messages"
Handler = Callable[["AgentRuntime", dict[str, Any]], Coroutine[Any, Any, None]]


class Presence(StrEnum):
    """Whether a person is in the world, kept in their entity's ``metadata.status``."""

    ACTIVE = "ACTIVE"
    INACTIVE = "INACTIVE"  # left


def _message(runtime: AgentRuntime, payload: dict[str, Any], event: str) -> tuple[Memory, str] | None:
    """The event's message and its id; None (logged) when it has none."""
    message = payload.get("message")
    if not isinstance(message, Memory) or not message.id:
        _log.error("%s: %s without a message id; ignored", runtime.character.name, event)
        return None
    return message, message.id


async def on_reaction(runtime: AgentRuntime, payload: dict[str, Any]) -> None:
    """Store the reaction as a message of its own, once."""
    found = _message(runtime, payload, EventType.REACTION_RECEIVED)
    if found is None:
        return
    reaction, reaction_id = found
    if await runtime.store.get_memory(reaction_id) is not None:
        return
    reaction.agent_id = runtime.agent_id
    await runtime.store.create_memory(reaction, MESSAGES, unique=False)


async def on_message_updated(runtime: AgentRuntime, payload: dict[str, Any]) -> None:
    """An edited message replaces the stored text (its vector is recomputed); an unknown one is stored."""
    found = _message(runtime, payload, EventType.MESSAGE_UPDATED)
    if found is None:
        return
    edited, edited_id = found
    stored = await runtime.store.get_memory(edited_id)
    if stored is None:
        edited.agent_id = runtime.agent_id
        await runtime.store.create_memory(edited, MESSAGES, unique=False)
        return
    content = {**stored.content, **edited.content}
    metadata = {**stored.metadata, "editedAt": now_ms()}
    await runtime.store.update_memory(edited_id, content=content, metadata=metadata)
    text = str(content.get("text") or "")
    if text != stored.content.get("text"):
        embeddings(runtime).embed_later(edited_id, text)


async def on_message_deleted(runtime: AgentRuntime, payload: dict[str, Any]) -> None:
    message = payload.get("message")
    memory_id = message.id if isinstance(message, Memory) else payload.get("messageId")
    if not memory_id:
        _log.error("%s: MESSAGE_DELETED without a message id; ignored", runtime.character.name)
        return
    await runtime.store.delete_memory(str(memory_id))


async def on_channel_cleared(runtime: AgentRuntime, payload: dict[str, Any]) -> None:
    room_id = payload.get("roomId")
    if not room_id:
        _log.error("%s: CHANNEL_CLEARED without a roomId; ignored", runtime.character.name)
        return
    removed = await runtime.store.delete_all_memories(str(room_id), MESSAGES)
    _log.info("%s: cleared %d messages of room %s", runtime.character.name, removed, room_id)


async def _set_presence(runtime: AgentRuntime, payload: dict[str, Any], event: str, status: Presence) -> None:
    entity_id = payload.get("entityId")
    entity = await runtime.store.get_entity(str(entity_id)) if entity_id else None
    if entity is None:
        if not entity_id:
            _log.error("%s: %s without an entityId; ignored", runtime.character.name, event)
        return  # the adapter creates entities it has not seen; nothing to mark yet
    if (entity.metadata.status or Presence.ACTIVE) == status:
        return
    if status is Presence.INACTIVE:
        entity.metadata = replace(entity.metadata, status=status.value, left_at=now_ms())
    else:
        entity.metadata = replace(entity.metadata, status=status.value, joined_at=now_ms())
    await runtime.store.update_entity(entity)


async def on_entity_joined(runtime: AgentRuntime, payload: dict[str, Any]) -> None:
    await _set_presence(runtime, payload, EventType.ENTITY_JOINED, Presence.ACTIVE)


async def on_entity_left(runtime: AgentRuntime, payload: dict[str, Any]) -> None:
    await _set_presence(runtime, payload, EventType.ENTITY_LEFT, Presence.INACTIVE)


_HANDLERS: dict[EventType, Handler] = {
    EventType.REACTION_RECEIVED: on_reaction,
    EventType.MESSAGE_UPDATED: on_message_updated,
    EventType.MESSAGE_DELETED: on_message_deleted,
    EventType.CHANNEL_CLEARED: on_channel_cleared,
    EventType.ENTITY_JOINED: on_entity_joined,
    EventType.ENTITY_LEFT: on_entity_left,
}


def register(runtime: AgentRuntime) -> None:
    """Register every handler above with ``runtime``."""
    for event, handler in _HANDLERS.items():

        async def run(payload: dict[str, Any], handler: Handler = handler) -> None:
            await handler(runtime, payload)

        run.__qualname__ = handler.__qualname__
        runtime.register_event(event, run)

"""Storing an incoming message: once, and even when what it refers to was forgotten meanwhile."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from bot.sdk import ChannelType, Entity, Memory, Room, StoreError

from ._embedding import embeddings
from .providers._common import channel_type

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["MESSAGES", "store_incoming"]

_log = logging.getLogger(__name__)

MESSAGES = "messages"


async def store_incoming(rt: AgentRuntime, message: Memory, *, stored_before: bool) -> None:
    """Store ``message``; ``stored_before``: a crashed process may have stored it already."""
    store = rt.store
    # The pipeline's own copy has its id and the agent's: the store keeps that id.
    assert message.id is not None and message.agent_id == rt.agent_id
    if stored_before and await store.get_memory(message.id) is not None:
        return
    try:
        await store.create_memory(message, MESSAGES)
    except StoreError:
        if not await _restore_references(rt, message):
            raise
        await store.create_memory(message, MESSAGES)
    if message.embedding is None:
        embeddings(rt).hold(message.id, message.content.text or "")


async def _restore_references(rt: AgentRuntime, message: Memory) -> bool:
    """Write the room and the sender of ``message`` again when the store no longer has them;
    True if anything was missing.

    ``troupe memory forget`` may remove a room or a person while this process runs, and the
    platform adapter writes a room or person only the first time it sees them in a run. What
    the message itself says is enough to carry on; a restart brings back the rest (the room's
    name and channel, the person's platform details).
    """
    store = rt.store
    restored = False
    if await store.get_room(message.room_id) is None:
        kind = channel_type(None, message) or ChannelType.GROUP
        await store.create_rooms(
            [
                Room(
                    message.room_id,
                    source=message.content.source or "unknown",
                    type=kind,
                    world_id=message.world_id,
                )
            ]
        )
        await store.add_participant(rt.agent_id, message.room_id)
        restored = True
    if await store.get_entity(message.entity_id) is None:
        names = [n for n in (message.metadata.entity_name, message.metadata.entity_user_name) if n]
        await store.create_entities([Entity(message.entity_id, rt.agent_id, names=list(dict.fromkeys(names)))])
        restored = True
    if restored:
        await store.add_participant(message.entity_id, message.room_id)
        _log.info("%s: wrote again the room or sender of a message that the store had forgotten", rt.character.name)
    return restored

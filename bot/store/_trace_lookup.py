"""Finding the traces a person names: a message id, a platform's link or id, or a room id, across
every character's store (``troupe why`` and the console's "Why" page look up the same way)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from bot.kernel.message_refs import Platform, PlatformRef, parse_platform_ref
from bot.kernel.traces import MessageTrace, TraceQuery
from bot.store._protocol import Store

__all__ = ["TraceLookup", "look_up_traces", "newest_first"]


@dataclass(frozen=True, slots=True)
class TraceLookup:
    """What a lookup found, and what it looked for (to say so when it found nothing)."""

    traces: list[MessageTrace]
    of_room: bool
    """Whether they are a room's last messages (else one message's traces, one per character)."""
    looked_for: str
    """``message or room 'x'``, ``Discord message 123`` …"""


def newest_first(traces: Sequence[MessageTrace]) -> list[MessageTrace]:
    """Traces of several characters in one listing's order: newest first, then by message id and
    character (each store lists its own in this order)."""
    return sorted(traces, key=lambda t: (t.ended_at, t.message_id, t.agent_id), reverse=True)


async def look_up_traces(stores: Sequence[Store], target: str, *, limit: int) -> TraceLookup:
    """The traces ``target`` names in ``stores``: the message of that id (as troupe keeps it, or as
    its platform names it: a link or a bare id), else the last ``limit`` messages of that room."""
    target = target.strip()
    found = [t for t in await asyncio.gather(*(s.get_trace(target) for s in stores)) if t is not None]
    if found:
        return TraceLookup(newest_first(found), False, f"message {target!r}")
    ref = parse_platform_ref(target)
    if ref is not None:
        listed = await asyncio.gather(*(_of_platform_ref(s, ref) for s in stores))
        traces = newest_first([t for ts in listed for t in ts])
        if traces or ref.platform is not Platform.ANY:  # a link names a message, never a room
            return TraceLookup(traces, False, str(ref))
    room_id = target.lower()
    query = TraceQuery(room_ids=(room_id,))
    listed = await asyncio.gather(*(s.find_traces(query, limit=limit) for s in stores))
    in_room = newest_first([t for ts in listed for t in ts])[:limit]
    looked_for = f"{ref} or room {target!r}" if ref is not None else f"message or room {target!r}"
    return TraceLookup(in_room, True, looked_for)


async def _of_platform_ref(store: Store, ref: PlatformRef) -> list[MessageTrace]:
    chats: list[str] = []
    if ref.needs_chats:
        rooms = await store.get_rooms_with_counts()
        chats = [room.server_id for room, _ in rooms if room.source == "telegram" and room.server_id]
    ids = ref.message_ids(store.agent_id, chats)
    if not ids:
        return []
    return await store.find_traces(TraceQuery(message_ids=tuple(ids)), limit=len(ids))

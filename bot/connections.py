"""What every platform adapter needs from the store, written once per run.

Platforms see the same rooms and people over and over; :class:`Connections` writes a room, an
entity (refreshing its names when they change) and a participant the first time in a run and
remembers it, so a message costs no writes for them after that. :func:`record_sent` stores what
the agent sent and announces it. :class:`TokenClaims` stops two
characters of one daemon from connecting with the same bot token (they would answer twice).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import ConfigError
from .events import EventType
from .types import Entity, Memory, Room

if TYPE_CHECKING:
    from .runtime import AgentRuntime

__all__ = ["Connections", "TokenClaims", "record_sent"]


class Connections:
    """One agent's rooms, entities and participants on one platform, as written this run."""

    def __init__(self, runtime: AgentRuntime, source: str) -> None:
        self.runtime = runtime
        self.source = source
        self._rooms: set[str] = set()
        self._entities: set[str] = set()
        self._participants: set[tuple[str, str]] = set()

    def knows_room(self, room_id: str) -> bool:
        return room_id in self._rooms

    async def ensure_rooms(self, rooms: list[Room]) -> None:
        """Write rooms not written yet this run, with the agent as a participant."""
        new = [r for r in rooms if r.id not in self._rooms]
        if not new:
            return
        await self.runtime.store.create_rooms(new)
        for room in new:
            await self.runtime.store.add_participant(self.runtime.agent_id, room.id)
            self._rooms.add(room.id)

    async def ensure_entity(self, entity: Entity, room_id: str | None = None) -> str:
        """Write the entity (or merge in new names and platform details) once per run, and make
        it a participant of ``room_id``."""
        store = self.runtime.store
        if entity.id not in self._entities:
            existing = await store.get_entity(entity.id)
            if existing is None:
                await store.create_entities([entity])
            elif existing.names != entity.names or existing.metadata.get(self.source) != entity.metadata.get(
                self.source
            ):
                existing.names = list(dict.fromkeys([*entity.names, *existing.names]))
                existing.metadata = {**existing.metadata, **entity.metadata}
                await store.update_entity(existing)
            self._entities.add(entity.id)
        if room_id is not None and (entity.id, room_id) not in self._participants:
            await store.add_participant(entity.id, room_id)
            self._participants.add((entity.id, room_id))
        return entity.id


class TokenClaims:
    """Which character holds each bot token of one platform in one daemon (a platform keeps its
    claims in ``runtime.shared``)."""

    def __init__(self, setting: str, advice: str) -> None:
        self.setting, self.advice = setting, advice
        self._holders: dict[str, str] = {}

    def claim(self, token: str, agent: str) -> None:
        """Raises ConfigError when another character already connected with ``token``."""
        holder = self._holders.get(token)
        if holder is not None and holder != agent:
            raise ConfigError(
                f"uses the same {self.setting} as {holder}; each character needs a bot of its own ({self.advice})",
                agent=agent,
            )
        self._holders[token] = agent

    def release(self, token: str, agent: str) -> None:
        if self._holders.get(token) == agent:
            del self._holders[token]


async def record_sent(runtime: AgentRuntime, memories: list[Memory], source: str) -> list[Memory]:
    """Store the memories of messages the agent just sent, and emit MESSAGE_SENT for each."""
    runtime.metrics.messages_sent.labels(agent=runtime.character.name, platform=source).inc(len(memories))
    for memory in memories:
        await runtime.store.create_memory(memory, "messages", unique=False)
        await runtime.emit(EventType.MESSAGE_SENT, {"message": memory, "source": source})
    return memories

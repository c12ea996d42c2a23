"""Worlds, rooms, participants and the agent's per-room FOLLOWED/MUTED/STOPPED state. Both backends."""

from __future__ import annotations

from collections.abc import Sequence

from bot.kernel.errors import StoreError
from bot.kernel.types import Room, RoomState, World, now_ms
from bot.store._dialect import Statements
from bot.store._rows import dumps, room_values, row_to_room, row_to_world
from bot.store._scoped import new_id
from bot.store._values import parse_room_state

__all__ = ["RoomsMixin"]

# What each group of writes may change: see Database.write.
_WORLDS = ("worlds",)
_ROOMS = ("rooms",)
_PARTICIPANTS = ("participants",)


class RoomsMixin(Statements):
    """The ``worlds``, ``rooms`` and ``participants`` tables."""

    __slots__ = ()

    # -- worlds ------------------------------------------------------------------------------------

    async def create_world(self, world: World) -> str:
        """Store a world for this agent (left alone if the id exists) and return its id."""
        world_id = world.id or new_id()
        await self._run(
            "INSERT INTO worlds (id, agent_id, name, metadata, server_id, created_at) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (id) DO NOTHING",
            (
                world_id,
                self._agent_id,
                world.name or "",
                dumps(world.metadata.to_json()),
                world.server_id or "default",
                world.created_at or now_ms(),
            ),
            tables=_WORLDS,
        )
        return world_id

    async def get_world(self, world_id: str) -> World | None:
        """A world by id, whichever agent stored it (cross-agent, as upstream), or None."""
        rows = await self._shared_rows("SELECT * FROM worlds WHERE id = ?", (world_id,), tables=("worlds",))
        return row_to_world(rows[0]) if rows else None

    async def get_all_worlds(self) -> list[World]:
        """This agent's worlds, oldest first."""
        rows = await self._rows("SELECT * FROM worlds WHERE agent_id = ? ORDER BY created_at, {seq}", (self._agent_id,))
        return [row_to_world(r) for r in rows]

    async def get_worlds_with_settings(self) -> list[World]:
        """This agent's worlds whose metadata has settings (onboarding), oldest first.

        What a direct message needs to find the servers its sender configures: reading every
        world instead grows with the number of chats the character is in, on every message.
        """
        rows = await self._shared_rows(
            "SELECT * FROM worlds WHERE agent_id = ? AND {json_set:metadata.settings} ORDER BY created_at, {seq}",
            (self._agent_id,),
            tables=("worlds",),
        )
        return [row_to_world(r) for r in rows]

    async def update_world(self, world: World) -> bool:
        """Overwrite name, server id and metadata of one of this agent's worlds; False if not found."""
        changed = await self._run(
            "UPDATE worlds SET name = ?, server_id = ?, metadata = ? WHERE id = ? AND agent_id = ?",
            (world.name or "", world.server_id or "default", dumps(world.metadata.to_json()), world.id, self._agent_id),
            tables=_WORLDS,
        )
        return changed > 0

    async def remove_world(self, world_id: str) -> bool:
        """Delete one of this agent's worlds (its rooms stay: rooms have no FK to worlds); False if not found."""
        deleted = await self._run(
            "DELETE FROM worlds WHERE id = ? AND agent_id = ?", (world_id, self._agent_id), tables=_WORLDS
        )
        return deleted > 0

    # -- rooms -------------------------------------------------------------------------------------

    async def create_rooms(self, rooms: Sequence[Room]) -> list[str]:
        """Store rooms for this agent (existing ids are left alone); returns their ids.

        Raises ValueError if a room's type is not a ChannelType.
        """
        if not rooms:
            return []
        ids = [room.id or new_id() for room in rooms]
        now = now_ms()
        rows = [
            (*room_values(room, room_id, self._agent_id), room.created_at or now)
            for room, room_id in zip(rooms, ids, strict=True)
        ]
        await self._run_many(
            "INSERT INTO rooms (agent_id, source, type, server_id, world_id, name, metadata, channel_id, id, "
            "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
            rows,
            tables=_ROOMS,
        )
        return ids

    async def get_room(self, room_id: str) -> Room | None:
        """One of this agent's rooms, or None."""
        rows = await self._shared_rows(
            "SELECT * FROM rooms WHERE id = ? AND agent_id = ?", (room_id, self._agent_id), tables=("rooms",)
        )
        return row_to_room(rows[0]) if rows else None

    async def get_rooms_by_ids(self, room_ids: Sequence[str]) -> list[Room]:
        """This agent's rooms with these ids, in the order asked."""
        if not room_ids:
            return []
        rows = await self._rows(
            "SELECT * FROM rooms WHERE {scan_agent}agent_id = ? AND id {in_list}",
            (self._agent_id, self.dialect.id_list(room_ids)),
        )
        by_id = {r["id"]: row_to_room(r) for r in rows}
        return [by_id[i] for i in dict.fromkeys(room_ids) if i in by_id]

    async def get_rooms_by_world(self, world_id: str) -> list[Room]:
        """This agent's rooms in ``world_id`` (upstream does not scope this; troupe does), oldest first."""
        rows = await self._rows(
            "SELECT * FROM rooms WHERE agent_id = ? AND world_id = ? ORDER BY created_at, {seq}",
            (self._agent_id, world_id),
        )
        return [row_to_room(r) for r in rows]

    async def update_room(self, room: Room) -> bool:
        """Overwrite one of this agent's rooms by id; False if not found. Raises ValueError for a bad type."""
        if not room.id:
            raise ValueError("update_room needs a room id")
        changed = await self._run(
            "UPDATE rooms SET agent_id = ?, source = ?, type = ?, server_id = ?, world_id = ?, name = ?, "
            "metadata = ?, channel_id = ? WHERE id = ? AND agent_id = ?",
            (*room_values(room, room.id, self._agent_id), self._agent_id),
            tables=_ROOMS,
        )
        return changed > 0

    async def delete_room(self, room_id: str) -> bool:
        """Delete one of this agent's rooms; cascades to participants, memories, embeddings, logs and
        components. False if not found. Raises ValueError without an id."""
        if not room_id:
            raise ValueError("delete_room needs a room id")
        # Cascades to many tables: tables=None tells shared reads that anything may have changed.
        deleted = await self._run(
            "DELETE FROM rooms WHERE id = ? AND agent_id = ?", (room_id, self._agent_id), tables=None
        )
        return deleted > 0

    async def get_rooms_for_participant(self, entity_id: str) -> list[str]:
        """Ids of this agent's rooms that ``entity_id`` takes part in."""
        return await self.get_rooms_for_participants([entity_id])

    async def get_rooms_for_participants(self, entity_ids: Sequence[str]) -> list[str]:
        """Ids of this agent's rooms that any of ``entity_ids`` take part in (distinct)."""
        if not entity_ids:
            return []
        rows = await self._rows(
            "SELECT DISTINCT p.room_id{by_code_point} AS room_id FROM participants p JOIN rooms r "
            "ON r.id = p.room_id WHERE r.agent_id = ? AND p.agent_id = ? AND p.entity_id {in_list} ORDER BY 1",
            (self._agent_id, self._agent_id, self.dialect.id_list(entity_ids)),
        )
        return [r["room_id"] for r in rows]

    # -- participants ------------------------------------------------------------------------------

    async def add_participant(self, entity_id: str, room_id: str) -> bool:
        """Add ``entity_id`` to ``room_id`` in this agent's view (no-op if present); False on error
        (e.g. an unknown entity or room)."""
        return await self.add_participants([entity_id], room_id)

    async def add_participants(self, entity_ids: Sequence[str], room_id: str) -> bool:
        """Add several entities to ``room_id`` at once: all or none. False on error."""
        if not entity_ids:
            return True
        now = now_ms()
        try:
            await self._run_many(
                "INSERT INTO participants (id, entity_id, room_id, agent_id, created_at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (entity_id, room_id, agent_id) DO NOTHING",
                [(new_id(), e, room_id, self._agent_id, now) for e in entity_ids],
                tables=_PARTICIPANTS,
            )
        except StoreError as exc:
            return self._fail("add_participants", exc)
        return True

    async def remove_participant(self, entity_id: str, room_id: str) -> bool:
        """Remove ``entity_id`` from ``room_id`` in this agent's view; True iff it was there."""
        deleted = await self._run(
            "DELETE FROM participants WHERE entity_id = ? AND room_id = ? AND agent_id = ?",
            (entity_id, room_id, self._agent_id),
            tables=_PARTICIPANTS,
        )
        return deleted > 0

    async def get_participants_for_room(self, room_id: str) -> list[str]:
        """Entity ids taking part in ``room_id`` in this agent's view, in the order they joined."""
        rows = await self._rows(
            "SELECT entity_id FROM participants WHERE room_id = ? AND agent_id = ? ORDER BY created_at, {seq}",
            (room_id, self._agent_id),
        )
        return [r["entity_id"] for r in rows]

    async def is_room_participant(self, room_id: str, entity_id: str) -> bool:
        """True if ``entity_id`` takes part in ``room_id`` in this agent's view."""
        row = await self._row(
            "SELECT 1 FROM participants WHERE room_id = ? AND entity_id = ? AND agent_id = ?",
            (room_id, entity_id, self._agent_id),
        )
        return row is not None

    async def get_participant_state(self, room_id: str, entity_id: str) -> RoomState | None:
        """The FOLLOWED/MUTED/STOPPED state of a participant row of this agent; None if unset or no such row."""
        rows = await self._shared_rows(
            "SELECT room_state FROM participants WHERE room_id = ? AND entity_id = ? AND agent_id = ?",
            (room_id, entity_id, self._agent_id),
            tables=("participants",),
        )
        return RoomState(rows[0]["room_state"]) if rows and rows[0]["room_state"] else None

    async def set_participant_state(self, room_id: str, entity_id: str, state: RoomState | None) -> bool:
        """Set (or with None clear) the state of an existing participant row; False if there is no row.

        This agent's own state in a room lives on its row ``(room_id, entity_id=agent_id)``.
        Raises ValueError for a state that is not a RoomState.
        """
        value = parse_room_state(state)
        changed = await self._run(
            "UPDATE participants SET room_state = ? WHERE room_id = ? AND entity_id = ? AND agent_id = ?",
            (value.value if value else None, room_id, entity_id, self._agent_id),
            tables=_PARTICIPANTS,
        )
        return changed > 0

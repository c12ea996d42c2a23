"""Inspecting what an agent stores (``troupe memory``): counts, listings, exports. Both backends.

Searching every memory table by keywords is full-text search, each backend's own (``_search``,
``postgres/_search``); it filters as listings do (:func:`listing_filter`).
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.kernel.types import Memory, Room, RoomState
from bot.store._dialect import IdList, Statements, Step, Unit
from bot.store._memories import MEMORY_COLUMNS
from bot.store._rows import (
    Row,
    entities_with_components,
    loads,
    row_to_memory,
    row_to_relationship,
    row_to_room,
    row_to_world,
)
from bot.store._scoped import validate_count
from bot.store._selection import ABOUT, select_entity
from bot.store._values import MemoryExport, Participation

__all__ = ["InspectionMixin", "listing_filter"]


def listing_filter(
    agent_id: str, id_list: IdList, tables: Sequence[str] | None, room_id: str | None, entity_id: str | None
) -> tuple[list[str], list[object]]:
    """The clauses (templates) and parameters keeping this agent's memories of ``tables`` (all when
    None), in ``room_id``, written by ``entity_id`` or about them (each only when given)."""
    clauses: list[str] = ["m.agent_id = ?"]
    params: list[object] = [agent_id]
    if tables:
        clauses.append("m.type {in_list}")
        params.append(id_list(tables))
    if room_id is not None:
        clauses.append("m.room_id = ?")
        params.append(room_id)
    if entity_id is not None:
        clauses.append(f"(m.entity_id = ? OR {ABOUT})")
        params += [entity_id, entity_id]
    return clauses, params


class InspectionMixin(Statements):
    """Counting, listing and exporting the memories and rows of this agent."""

    __slots__ = ()

    async def count_memories_by_table(self) -> dict[str, int]:
        """How many memories this agent has in each memory table, by table name."""
        rows = await self._rows(
            "SELECT type, count(*) AS n FROM memories WHERE agent_id = ? GROUP BY type ORDER BY type",
            (self._agent_id,),
        )
        return {r["type"]: int(r["n"]) for r in rows}

    async def get_rooms_with_counts(self) -> list[tuple[Room, int]]:
        """Every room of this agent with how many memories it holds, most first."""
        rows = await self._rows(
            "SELECT r.*, (SELECT count(*) FROM memories m WHERE m.room_id = r.id AND m.agent_id = r.agent_id) AS n "
            "FROM rooms r WHERE r.agent_id = ? ORDER BY n DESC, r.created_at, r.{seq}",
            (self._agent_id,),
        )
        return [(row_to_room(r), int(r["n"])) for r in rows]

    async def list_memories(
        self,
        *,
        tables: Sequence[str] | None = None,
        room_id: str | None = None,
        entity_id: str | None = None,
        count: int | None = None,
        offset: int | None = None,
    ) -> list[Memory]:
        """This agent's memories of any of ``tables`` (all when None), newest first, without embeddings.

        ``entity_id`` keeps those the entity wrote or that are about it (``metadata.entityIds``).
        """
        validate_count(count)
        validate_count(offset, "offset")
        clauses, params = listing_filter(self._agent_id, self.dialect.id_list, tables, room_id, entity_id)
        rows = await self._rows(
            f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE {' AND '.join(clauses)} "
            "ORDER BY m.created_at DESC, m.seq DESC LIMIT ? OFFSET ?",
            (*params, self.dialect.no_limit if count is None else count, offset or 0),
        )
        return [row_to_memory(r, self._payloads) for r in rows]

    async def export_memories(self, *, room_id: str | None = None, entity_id: str | None = None) -> MemoryExport:
        """Everything this agent stores (or only one room's, or one entity's), without vectors,
        read as one snapshot.

        For an entity: what :meth:`forget_entity` would remove, plus the rooms they were in.
        Raises LookupError if the room or entity is not this agent's, ValueError for both.
        """
        if room_id is not None and entity_id is not None:
            raise ValueError("export one room or one entity, not both")
        return await self._snapshot(lambda: self._export(room_id, entity_id))

    def _export(self, room_id: str | None, entity_id: str | None) -> Unit[MemoryExport]:
        agent, ids, columns = self._agent_id, self.dialect.id_list, MEMORY_COLUMNS

        def fetch(sql: str, *params: object) -> Unit[Sequence[Row]]:
            return (yield Step(sql, params)).rows

        if entity_id is not None:
            entities = yield from fetch("SELECT * FROM entities WHERE id = ? AND agent_id = ?", entity_id, agent)
            if not entities:
                raise LookupError(entity_id)
            selection = yield from select_entity(agent, entity_id, loads(entities[0]["names"], []), ids)
            elsewhere = yield from fetch(
                "SELECT room_id FROM participants WHERE entity_id = ? AND agent_id = ? "
                "UNION SELECT room_id FROM memories WHERE entity_id = ? AND agent_id = ? AND room_id IS NOT NULL",
                entity_id,
                agent,
                entity_id,
                agent,
            )
            room_ids = sorted({*selection.dm_rooms, *(r["room_id"] for r in elsewhere)})
            memories = yield from fetch(
                f"SELECT {columns} FROM memories m WHERE m.agent_id = ? "
                "AND (m.id {in_list} OR m.room_id {in_list}) ORDER BY m.created_at, m.seq",
                agent,
                ids(selection.memories),
                ids(selection.dm_rooms),
            )
            participants = yield from fetch(
                "SELECT * FROM participants WHERE entity_id = ? AND agent_id = ?", entity_id, agent
            )
            relationships = yield from fetch(
                "SELECT * FROM relationships WHERE agent_id = ? AND (source_entity_id = ? OR target_entity_id = ?) "
                "ORDER BY created_at, {seq}",
                agent,
                entity_id,
                entity_id,
            )
        elif room_id is not None:
            room_ids = [room_id]
            if not (yield from fetch("SELECT 1 FROM rooms WHERE id = ? AND agent_id = ?", room_id, agent)):
                raise LookupError(room_id)
            memories = yield from fetch(
                f"SELECT {columns} FROM memories m WHERE m.agent_id = ? AND m.room_id = ? ORDER BY m.created_at, m.seq",
                agent,
                room_id,
            )
            participants = yield from fetch(
                "SELECT * FROM participants WHERE room_id = ? AND agent_id = ?", room_id, agent
            )
            entities = yield from fetch(
                "SELECT * FROM entities WHERE agent_id = ? AND id {in_list} ORDER BY created_at, {seq}",
                agent,
                ids(sorted({*(p["entity_id"] for p in participants), *(m["entity_id"] for m in memories)} - {None})),
            )
            relationships = []
        else:
            room_ids = [r["id"] for r in (yield from fetch("SELECT id FROM rooms WHERE agent_id = ?", agent))]
            memories = yield from fetch(
                f"SELECT {columns} FROM memories m WHERE m.agent_id = ? ORDER BY m.created_at, m.seq", agent
            )
            participants = yield from fetch("SELECT * FROM participants WHERE agent_id = ?", agent)
            entities = yield from fetch("SELECT * FROM entities WHERE agent_id = ? ORDER BY created_at, {seq}", agent)
            relationships = yield from fetch(
                "SELECT * FROM relationships WHERE agent_id = ? ORDER BY created_at, {seq}", agent
            )
        rooms = yield from fetch(
            "SELECT * FROM rooms WHERE agent_id = ? AND id {in_list} ORDER BY created_at, {seq}", agent, ids(room_ids)
        )
        worlds = yield from fetch(
            "SELECT * FROM worlds WHERE agent_id = ? AND id {in_list} ORDER BY created_at, {seq}",
            agent,
            ids(sorted({r["world_id"] for r in rooms if r["world_id"]})),
        )
        components = yield from fetch(
            "SELECT * FROM components WHERE agent_id = ? AND entity_id {in_list} ORDER BY created_at, {seq}",
            agent,
            ids([e["id"] for e in entities]),
        )
        return MemoryExport(
            worlds=[row_to_world(r) for r in worlds],
            rooms=[row_to_room(r) for r in rooms],
            entities=entities_with_components(entities, components),
            participants=[
                Participation(p["entity_id"], p["room_id"], RoomState(p["room_state"]) if p["room_state"] else None)
                for p in participants
            ],
            memories=[row_to_memory(r, self._payloads) for r in memories],
            relationships=[row_to_relationship(r) for r in relationships],
        )

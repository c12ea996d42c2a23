"""Inspecting what an agent stores (``troupe memory``): counts, listings, searches, exports."""

from __future__ import annotations

from collections.abc import Sequence

from bot.store._connect import Connection, Row, SQLValue
from bot.store._memories import MEMORY_COLUMNS
from bot.store._rows import (
    loads,
    row_to_component,
    row_to_entity,
    row_to_memory,
    row_to_relationship,
    row_to_room,
    row_to_world,
)
from bot.store._scoped import AgentScoped, json_list, validate_count
from bot.store._search import fts_query
from bot.store._selection import ABOUT, select_entity
from bot.store._values import MemoryExport, Participation
from bot.types import Component, Memory, Room, RoomState

__all__ = ["InspectionMixin"]


class InspectionMixin(AgentScoped):
    """Counting, listing, searching and exporting the memories and rows of this agent."""

    __slots__ = ()

    async def count_memories_by_table(self) -> dict[str, int]:
        """How many memories this agent has in each memory table, by table name."""
        rows = await self._db.fetchall(
            "SELECT type, count(*) FROM memories WHERE agent_id = ? GROUP BY type ORDER BY type", (self._agent_id,)
        )
        return {r[0]: int(r[1]) for r in rows}

    async def get_rooms_with_counts(self) -> list[tuple[Room, int]]:
        """Every room of this agent with how many memories it holds, most first."""
        rows = await self._db.fetchall(
            "SELECT r.*, (SELECT count(*) FROM memories m WHERE m.room_id = r.id AND m.agent_id = r.agent_id) AS n "
            "FROM rooms r WHERE r.agent_id = ? ORDER BY n DESC, r.created_at, r.rowid",
            (self._agent_id,),
        )
        return [(row_to_room(r), int(r["n"])) for r in rows]

    def _listing_filter(
        self, tables: Sequence[str] | None, room_id: str | None, entity_id: str | None
    ) -> tuple[list[str], list[str]]:
        clauses, params = ["m.agent_id = ?"], [self._agent_id]
        if tables:
            clauses.append("m.type IN (SELECT value FROM json_each(?))")
            params.append(json_list(tables))
        if room_id is not None:
            clauses.append("m.room_id = ?")
            params.append(room_id)
        if entity_id is not None:
            clauses.append(f"(m.entity_id = ? OR {ABOUT})")
            params += [entity_id, entity_id]
        return clauses, params

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
        clauses, params = self._listing_filter(tables, room_id, entity_id)
        rows = await self._db.fetchall(
            f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE {' AND '.join(clauses)} "
            "ORDER BY m.created_at DESC, m.seq DESC LIMIT ? OFFSET ?",
            (*params, -1 if count is None else count, offset or 0),
        )
        return [row_to_memory(r) for r in rows]

    async def search_all_memories_by_text(
        self,
        query: str,
        *,
        tables: Sequence[str] | None = None,
        room_id: str | None = None,
        entity_id: str | None = None,
        count: int = 10,
    ) -> list[Memory]:
        """Like :meth:`search_memories_by_text` across several memory tables (all when None).

        ``entity_id`` keeps memories the entity wrote or that are about it. Best match first,
        with the BM25 relevance in ``similarity``; a query without words returns [].
        """
        validate_count(count)
        match = fts_query(query)
        if match is None or count == 0:
            return []
        clauses, params = self._listing_filter(tables, room_id, entity_id)
        rows = await self._db.fetchall(
            f"SELECT {MEMORY_COLUMNS}, -bm25(memories_fts) AS score FROM memories_fts "
            "JOIN memories m ON m.seq = memories_fts.rowid "
            f"WHERE memories_fts MATCH ? AND {' AND '.join(clauses)} "
            "ORDER BY bm25(memories_fts), m.created_at DESC, m.seq DESC LIMIT ?",
            (match, *params, count),
        )
        return [row_to_memory(r, similarity=r["score"]) for r in rows]

    async def export_memories(self, *, room_id: str | None = None, entity_id: str | None = None) -> MemoryExport:
        """Everything this agent stores (or only one room's, or one entity's), without vectors.

        For an entity: what :meth:`forget_entity` would remove, plus the rooms they were in.
        Raises LookupError if the room or entity is not this agent's, ValueError for both.
        """
        if room_id is not None and entity_id is not None:
            raise ValueError("export one room or one entity, not both")
        agent = self._agent_id

        def read(conn: Connection) -> MemoryExport:
            out = MemoryExport()

            def fetch(sql: str, *params: SQLValue) -> list[Row]:
                rows: list[Row] = conn.execute(sql, params).fetchall()
                return rows

            if entity_id is not None:
                entity = fetch("SELECT * FROM entities WHERE id = ? AND agent_id = ?", entity_id, agent)
                if not entity:
                    raise LookupError(entity_id)
                selection = select_entity(conn, agent, entity_id, loads(entity[0]["names"], []))
                room_ids = sorted(
                    {
                        *selection.dm_rooms,
                        *(
                            r[0]
                            for r in fetch(
                                "SELECT room_id FROM participants WHERE entity_id = ? AND agent_id = ? "
                                "UNION SELECT room_id FROM memories WHERE entity_id = ? AND agent_id = ? AND room_id IS NOT NULL",
                                entity_id,
                                agent,
                                entity_id,
                                agent,
                            )
                        ),
                    }
                )
                memories = fetch(
                    f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE m.agent_id = ? AND (m.id IN "
                    "(SELECT value FROM json_each(?)) OR m.room_id IN (SELECT value FROM json_each(?))) "
                    "ORDER BY m.created_at, m.seq",
                    agent,
                    json_list(selection.memories),
                    json_list(selection.dm_rooms),
                )
                entities = entity
                participants = fetch(
                    "SELECT * FROM participants WHERE entity_id = ? AND agent_id = ?", entity_id, agent
                )
                relationships = fetch(
                    "SELECT * FROM relationships WHERE agent_id = ? AND (source_entity_id = ? OR target_entity_id = ?) "
                    "ORDER BY created_at, rowid",
                    agent,
                    entity_id,
                    entity_id,
                )
            elif room_id is not None:
                room_ids = [room_id]
                if not fetch("SELECT 1 FROM rooms WHERE id = ? AND agent_id = ?", room_id, agent):
                    raise LookupError(room_id)
                memories = fetch(
                    f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE m.agent_id = ? AND m.room_id = ? "
                    "ORDER BY m.created_at, m.seq",
                    agent,
                    room_id,
                )
                participants = fetch("SELECT * FROM participants WHERE room_id = ? AND agent_id = ?", room_id, agent)
                entities = fetch(
                    "SELECT * FROM entities WHERE agent_id = ? AND id IN (SELECT value FROM json_each(?)) "
                    "ORDER BY created_at, rowid",
                    agent,
                    json_list({*(p["entity_id"] for p in participants), *(m["entity_id"] for m in memories)}),
                )
                relationships = []
            else:
                room_ids = [r[0] for r in fetch("SELECT id FROM rooms WHERE agent_id = ?", agent)]
                memories = fetch(
                    f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE m.agent_id = ? ORDER BY m.created_at, m.seq", agent
                )
                participants = fetch("SELECT * FROM participants WHERE agent_id = ?", agent)
                entities = fetch("SELECT * FROM entities WHERE agent_id = ? ORDER BY created_at, rowid", agent)
                relationships = fetch(
                    "SELECT * FROM relationships WHERE agent_id = ? ORDER BY created_at, rowid", agent
                )
            rooms = fetch(
                "SELECT * FROM rooms WHERE agent_id = ? AND id IN (SELECT value FROM json_each(?)) "
                "ORDER BY created_at, rowid",
                agent,
                json_list(room_ids),
            )
            worlds = fetch(
                "SELECT * FROM worlds WHERE agent_id = ? AND id IN (SELECT value FROM json_each(?)) "
                "ORDER BY created_at, rowid",
                agent,
                json_list({r["world_id"] for r in rooms if r["world_id"]}),
            )
            components: dict[str, list[Component]] = {}
            for row in fetch(
                "SELECT * FROM components WHERE agent_id = ? AND entity_id IN "
                "(SELECT value FROM json_each(?)) ORDER BY created_at, rowid",
                agent,
                json_list(e["id"] for e in entities),
            ):
                components.setdefault(row["entity_id"], []).append(row_to_component(row))
            out.worlds = [row_to_world(r) for r in worlds]
            out.rooms = [row_to_room(r) for r in rooms]
            out.entities = [row_to_entity(r, components.get(r["id"], [])) for r in entities]
            out.participants = [
                Participation(p["entity_id"], p["room_id"], RoomState(p["room_state"]) if p["room_state"] else None)
                for p in participants
            ]
            out.memories = [row_to_memory(r) for r in memories]
            out.relationships = [row_to_relationship(r) for r in relationships]
            return out

        return await self._db.read(read)

"""Inspecting what an agent stores on PostgreSQL (``troupe memory``): counts, listings, searches, exports.

As SQLite's (``bot/store/_inspection.py``); ``seq`` stands for SQLite's ``rowid`` in orderings.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from bot.store._memories import MEMORY_COLUMNS
from bot.store._rows import (
    entities_with_components,
    loads,
    row_to_memory,
    row_to_relationship,
    row_to_room,
    row_to_world,
)
from bot.store._scoped import validate_count
from bot.store._values import MemoryExport, Participation
from bot.store.postgres._database import Row
from bot.store.postgres._scoped import PgScoped
from bot.store.postgres._search import KEYWORD_QUERY, keyword_query
from bot.store.postgres._selection import ABOUT, select_entity
from bot.types import Memory, Room, RoomState

__all__ = ["PgInspectionMixin"]


class PgInspectionMixin(PgScoped):
    """Counting, listing, searching and exporting the memories and rows of this agent."""

    __slots__ = ()

    async def count_memories_by_table(self) -> dict[str, int]:
        """How many memories this agent has in each memory table, by table name."""
        rows = await self._db.fetchall(
            "SELECT type, count(*) AS n FROM memories WHERE agent_id = %s GROUP BY type ORDER BY type",
            (self._agent_id,),
        )
        return {r["type"]: int(r["n"]) for r in rows}

    async def get_rooms_with_counts(self) -> list[tuple[Room, int]]:
        """Every room of this agent with how many memories it holds, most first."""
        rows = await self._db.fetchall(
            "SELECT r.*, (SELECT count(*) FROM memories m WHERE m.room_id = r.id AND m.agent_id = r.agent_id) AS n "
            "FROM rooms r WHERE r.agent_id = %s ORDER BY n DESC, r.created_at, r.seq",
            (self._agent_id,),
        )
        return [(row_to_room(r), int(r["n"])) for r in rows]

    def _listing_filter(
        self, tables: Sequence[str] | None, room_id: str | None, entity_id: str | None
    ) -> tuple[list[str], list[object]]:
        clauses = ["m.agent_id = %s"]
        params: list[object] = [self._agent_id]
        if tables:
            clauses.append("m.type = ANY(%s)")
            params.append(list(tables))
        if room_id is not None:
            clauses.append("m.room_id = %s")
            params.append(room_id)
        if entity_id is not None:
            clauses.append(f"(m.entity_id = %s OR {ABOUT})")
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
        """As SQLite's: newest first, without embeddings; ``entity_id`` keeps what they wrote or is about them."""
        validate_count(count)
        validate_count(offset, "offset")
        clauses, params = self._listing_filter(tables, room_id, entity_id)
        rows = await self._db.fetchall(
            f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE {' AND '.join(clauses)} "
            "ORDER BY m.created_at DESC, m.seq DESC LIMIT %s OFFSET %s",
            (*params, count, offset or 0),
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
        """As SQLite's, with ``ts_rank`` as the relevance in ``similarity``; no words, no results."""
        validate_count(count)
        terms = keyword_query(query)
        if terms is None or count == 0:
            return []
        clauses, params = self._listing_filter(tables, room_id, entity_id)
        # The query folded as the stored text is (KEYWORD_QUERY): "café" finds "cafe" and back.
        rows = await self._db.fetchall(
            f"SELECT {MEMORY_COLUMNS}, ts_rank(m.text_search, q.q) AS score "
            f"FROM memories m, (SELECT {KEYWORD_QUERY} AS q) q "
            f"WHERE m.text_search @@ q.q AND {' AND '.join(clauses)} "
            "ORDER BY score DESC, m.created_at DESC, m.seq DESC LIMIT %s",
            (terms, *params, count),
        )
        return [row_to_memory(r, similarity=float(r["score"])) for r in rows]

    async def export_memories(self, *, room_id: str | None = None, entity_id: str | None = None) -> MemoryExport:
        """Everything this agent stores (or only one room's, or one entity's), without vectors,
        read as one snapshot.

        For an entity: what :meth:`forget_entity` would remove, plus the rooms they were in.
        Raises LookupError if the room or entity is not this agent's, ValueError for both.
        """
        if room_id is not None and entity_id is not None:
            raise ValueError("export one room or one entity, not both")
        async with self._db.transaction() as conn:
            # One snapshot for every query below: an export never mixes before and after a write.
            await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            return await _Export(conn, self._agent_id).run(room_id, entity_id)


class _Export:
    """One export inside its read-only transaction."""

    def __init__(self, conn: psycopg.AsyncConnection[Any], agent: str) -> None:
        self.conn = conn
        self.agent = agent

    async def fetch(self, sql: str, *params: object) -> list[Row]:
        cur = await self.conn.execute(sql, params)
        rows: list[Row] = await cur.fetchall()
        return rows

    async def run(self, room_id: str | None, entity_id: str | None) -> MemoryExport:
        fetch, agent = self.fetch, self.agent
        columns = MEMORY_COLUMNS
        if entity_id is not None:
            entities = await fetch("SELECT * FROM entities WHERE id = %s AND agent_id = %s", entity_id, agent)
            if not entities:
                raise LookupError(entity_id)
            selection = await select_entity(self.conn, agent, entity_id, loads(entities[0]["names"], []))
            elsewhere = await fetch(
                "SELECT room_id FROM participants WHERE entity_id = %s AND agent_id = %s "
                "UNION SELECT room_id FROM memories WHERE entity_id = %s AND agent_id = %s AND room_id IS NOT NULL",
                entity_id,
                agent,
                entity_id,
                agent,
            )
            room_ids = sorted({*selection.dm_rooms, *(r["room_id"] for r in elsewhere)})
            memories = await fetch(
                f"SELECT {columns} FROM memories m WHERE m.agent_id = %s "
                "AND (m.id = ANY(%s) OR m.room_id = ANY(%s)) ORDER BY m.created_at, m.seq",
                agent,
                selection.memories,
                selection.dm_rooms,
            )
            participants = await fetch(
                "SELECT * FROM participants WHERE entity_id = %s AND agent_id = %s", entity_id, agent
            )
            relationships = await fetch(
                "SELECT * FROM relationships WHERE agent_id = %s AND (source_entity_id = %s OR target_entity_id = %s) "
                "ORDER BY created_at, seq",
                agent,
                entity_id,
                entity_id,
            )
        elif room_id is not None:
            room_ids = [room_id]
            if not await fetch("SELECT 1 FROM rooms WHERE id = %s AND agent_id = %s", room_id, agent):
                raise LookupError(room_id)
            memories = await fetch(
                f"SELECT {columns} FROM memories m WHERE m.agent_id = %s AND m.room_id = %s ORDER BY m.created_at, m.seq",
                agent,
                room_id,
            )
            participants = await fetch(
                "SELECT * FROM participants WHERE room_id = %s AND agent_id = %s", room_id, agent
            )
            entities = await fetch(
                "SELECT * FROM entities WHERE agent_id = %s AND id = ANY(%s) ORDER BY created_at, seq",
                agent,
                sorted({*(p["entity_id"] for p in participants), *(m["entity_id"] for m in memories)} - {None}),
            )
            relationships = []
        else:
            room_ids = [r["id"] for r in await fetch("SELECT id FROM rooms WHERE agent_id = %s", agent)]
            memories = await fetch(
                f"SELECT {columns} FROM memories m WHERE m.agent_id = %s ORDER BY m.created_at, m.seq", agent
            )
            participants = await fetch("SELECT * FROM participants WHERE agent_id = %s", agent)
            entities = await fetch("SELECT * FROM entities WHERE agent_id = %s ORDER BY created_at, seq", agent)
            relationships = await fetch(
                "SELECT * FROM relationships WHERE agent_id = %s ORDER BY created_at, seq", agent
            )
        rooms = await fetch(
            "SELECT * FROM rooms WHERE agent_id = %s AND id = ANY(%s) ORDER BY created_at, seq", agent, room_ids
        )
        worlds = await fetch(
            "SELECT * FROM worlds WHERE agent_id = %s AND id = ANY(%s) ORDER BY created_at, seq",
            agent,
            sorted({r["world_id"] for r in rooms if r["world_id"]}),
        )
        components = await fetch(
            "SELECT * FROM components WHERE agent_id = %s AND entity_id = ANY(%s) ORDER BY created_at, seq",
            agent,
            [e["id"] for e in entities],
        )
        return MemoryExport(
            worlds=[row_to_world(r) for r in worlds],
            rooms=[row_to_room(r) for r in rooms],
            entities=entities_with_components(entities, components),
            participants=[
                Participation(p["entity_id"], p["room_id"], RoomState(p["room_state"]) if p["room_state"] else None)
                for p in participants
            ],
            memories=[row_to_memory(r) for r in memories],
            relationships=[row_to_relationship(r) for r in relationships],
        )

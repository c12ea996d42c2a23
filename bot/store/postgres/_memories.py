"""Memories on PostgreSQL: writes (with the near-duplicate check) and reads.

The behaviour and the scoping are SQLite's (bot/store/_memories.py). A memory's vectors are
pgvector values in ``embeddings``, one row per memory and dimension (``dim``, generated from
the vector), so an agent that changes embedding model keeps its old vectors, invisible until it
switches back, as SQLite keeps one column per dimension. Reads show the vector of the agent's
active dimension only.

The active dimension lives in ``meta`` (the key SQLite uses) and is read by every call that
needs it, inside the statement where it can be: an agent served by this daemon now may have
been served by another one a minute ago, so a copy kept in this process could be stale.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import psycopg

from bot.store._memories import DEDUP_THRESHOLD, ENCODE_IN_THREAD, MEMORY_COLUMNS, MemoryFilter, nearest_hits
from bot.store._rows import json_text, row_to_memory
from bot.store._scoped import new_id, validate_count
from bot.store._vectors import DEFAULT_EMBEDDING_DIMENSION, check_dimension, dimension_key, encode_vector
from bot.store.postgres._database import Row
from bot.store.postgres._scoped import PgScoped
from bot.types import Memory, now_ms

__all__ = [
    "CREATE_VECTOR",
    "INSERT_MEMORY",
    "PgMemoriesMixin",
    "PgMemoryFilter",
    "json_text",
    "pg_vector",
    "similarity_hits",
]

_log = logging.getLogger(__name__)

#: A vector as the pgvector adapter sends it (float32, cleaned as SQLite's are).
PgVector = np.ndarray[Any, np.dtype[np.float32]]

# The agent's active dimension inside a statement (parameters: the meta key, the default).
_ACTIVE_DIM = "coalesce((SELECT value::integer FROM meta WHERE key = %s), %s)"
#: A memory row (parameters: :meth:`PgMemoriesMixin._memory_row`); an id already stored is left alone.
INSERT_MEMORY = (
    "INSERT INTO memories (id, type, created_at, content, entity_id, agent_id, room_id, world_id, is_unique, "
    "metadata) VALUES (%s, %s, %s, %s::jsonb, %s, %s, %s, %s, %s, %s::jsonb) ON CONFLICT (id) DO NOTHING"
)
# A memory another daemon wrote first (the same message id) keeps its row and vector.
_INSERT_VECTOR = "INSERT INTO embeddings (id, memory_id, embedding, created_at) VALUES (%s, %s, %s, %s)"
CREATE_VECTOR = f"{_INSERT_VECTOR} ON CONFLICT (memory_id, dim) DO NOTHING"
_UPSERT_VECTOR = f"{_INSERT_VECTOR} ON CONFLICT (memory_id, dim) DO UPDATE SET embedding = excluded.embedding"


def pg_vector(values: Sequence[float], dim: int) -> PgVector:
    """``values`` cleaned and checked as SQLite stores them (:func:`encode_vector`), for pgvector.

    Raises EmbeddingDimensionError for a wrong length.
    """
    return np.frombuffer(encode_vector(values, dim), dtype="<f4")


def vector_list(value: Any) -> list[float] | None:
    """A pgvector value read back (``pgvector.Vector``) as the floats of its float32 elements."""
    return None if value is None else list(value.to_list())


class PgMemoryFilter(MemoryFilter):
    """:class:`MemoryFilter` with psycopg's placeholders."""

    __slots__ = ()
    MARK = "%s"
    UNIQUE = "m.is_unique"


class PgMemoriesMixin(PgScoped):
    """The ``memories`` and ``embeddings`` tables (the keyword index is a column of ``memories``)."""

    __slots__ = ()

    # -- embedding dimension -----------------------------------------------------------------------

    async def ensure_embedding_dimension(self, dim: int) -> None:
        """Make ``dim`` this agent's active embedding dimension, stored in the database.

        Vectors of other dimensions stay, invisible to search and reads until the agent switches
        back. Raises ValueError for a length no store takes (see check_dimension).
        """
        check_dimension(dim)
        changed = await self._db.execute(
            "INSERT INTO meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = excluded.value "
            "WHERE meta.value IS DISTINCT FROM excluded.value",
            (dimension_key(self._agent_id), str(dim)),
        )
        if changed:
            _log.info("agent %s: embedding dimension is now %d", self._agent_id, dim)

    async def get_embedding_dimension(self) -> int:
        """This agent's active embedding dimension (384 until ensure_embedding_dimension is called)."""
        row = await self._db.fetchone(f"SELECT {_ACTIVE_DIM} AS dim", self._dim_params())
        return int(row["dim"]) if row else DEFAULT_EMBEDDING_DIMENSION

    def _dim_params(self) -> tuple[str, int]:
        return dimension_key(self._agent_id), DEFAULT_EMBEDDING_DIMENSION

    # -- memories: writes --------------------------------------------------------------------------

    async def create_memory(self, memory: Memory, table: str, unique: bool | None = None) -> str:
        """Store a memory in ``table`` with its embedding; return its id (as SQLite's create_memory:
        ``unique`` or ``memory.unique`` as given, else unique unless a memory at least 95% similar
        exists from the same author, room, world and table; an existing id is left alone).

        Raises EmbeddingDimensionError for a vector of the wrong length, StoreError if the database
        rejects the row.
        """
        ids = await self.create_memories([memory], table, unique=unique)
        return ids[0]

    async def create_memories(self, memories: Sequence[Memory], table: str, unique: bool | None = None) -> list[str]:
        """Store many memories in one transaction (all or none), each as :meth:`create_memory`
        would; returns the ids in input order."""
        if not table:
            raise ValueError("a memory table name is required (e.g. 'messages', 'facts')")
        if not memories:
            return []
        dim = await self.get_embedding_dimension()

        def encode_all() -> list[PgVector | None]:
            return [pg_vector(m.embedding, dim) if m.embedding is not None else None for m in memories]

        n_vectors = sum(m.embedding is not None for m in memories)
        # Cleaning a 1536-dim vector costs ~35 µs; big batches would stall the loop.
        vectors = await asyncio.to_thread(encode_all) if n_vectors > ENCODE_IN_THREAD else encode_all()
        ids = [m.id or new_id() for m in memories]
        # JSON first: a value JSON cannot hold (NaN) is a ValueError before anything is written.
        documents = [(json_text(m.content or {}), json_text(m.metadata or {})) for m in memories]
        now = now_ms()
        async with self._db.transaction() as conn:
            cur = await conn.execute("SELECT id FROM memories WHERE id = ANY(%s)", (ids,))
            seen = {r["id"] for r in await cur.fetchall()}
            rows: list[tuple[object, ...]] = []
            vector_rows: list[tuple[object, ...]] = []

            async def flush() -> None:
                async with conn.cursor() as cursor:
                    if rows:
                        await cursor.executemany(INSERT_MEMORY, rows)
                    if vector_rows:
                        await cursor.executemany(CREATE_VECTOR, vector_rows)
                rows.clear()
                vector_rows.clear()

            for memory, memory_id, vector, (content, metadata) in zip(memories, ids, vectors, documents, strict=True):
                if memory_id in seen:  # already stored (or twice in this batch): keep the first
                    continue
                seen.add(memory_id)
                is_unique = unique if unique is not None else memory.unique
                if is_unique is None:
                    is_unique = True
                    if vector is not None:
                        await flush()  # the check must see every earlier row of this batch
                        where = PgMemoryFilter(self._agent_id, table).fields(
                            memory.room_id, memory.world_id, memory.entity_id
                        )
                        hits = await self._nearest_on(conn, vector, dim, where, count=1)
                        is_unique = not (hits and hits[0][1] >= DEDUP_THRESHOLD)
                rows.append(self._memory_row(memory, table, memory_id, is_unique, now, content, metadata))
                if vector is not None:
                    vector_rows.append((new_id(), memory_id, vector, now))
            await flush()
        return ids

    def _memory_row(
        self, memory: Memory, table: str, memory_id: str, is_unique: bool, now: int, content: str, metadata: str
    ) -> tuple[object, ...]:
        """The parameters of :data:`INSERT_MEMORY` for ``memory`` (``content`` and ``metadata`` as JSON text)."""
        return (
            memory_id,
            table,
            memory.created_at or now,
            content,
            memory.entity_id,
            self._agent_id,
            memory.room_id,
            memory.world_id,
            is_unique,
            metadata,
        )

    async def update_memory(
        self,
        memory_id: str,
        *,
        content: Mapping[str, object] | None = None,
        metadata: Mapping[str, object] | None = None,
        embedding: Sequence[float] | None = None,
    ) -> bool:
        """Replace the content and/or metadata of one of this agent's memories and/or set its
        vector of the active dimension (its vectors of other dimensions stay); False if there is
        no such memory. EmbeddingDimensionError for a wrong-length vector, StoreError for a change
        the database refuses."""
        vector = pg_vector(embedding, await self.get_embedding_dimension()) if embedding is not None else None
        sets, params = [], []
        if content is not None:
            sets.append("content = %s::jsonb")
            params.append(json_text(dict(content)))
        if metadata is not None:
            sets.append("metadata = %s::jsonb")
            params.append(json_text(dict(metadata)))
        async with self._db.transaction() as conn:
            # Locked until the commit: a memory another daemon is deleting is waited for, then not found.
            cur = await conn.execute(
                "SELECT 1 FROM memories WHERE id = %s AND agent_id = %s FOR NO KEY UPDATE", (memory_id, self._agent_id)
            )
            if await cur.fetchone() is None:
                return False
            if sets:
                await conn.execute(f"UPDATE memories SET {', '.join(sets)} WHERE id = %s", (*params, memory_id))
            if vector is not None:
                await conn.execute(_UPSERT_VECTOR, (new_id(), memory_id, vector, now_ms()))
        return True

    async def delete_memory(self, memory_id: str) -> bool:
        """Delete one of this agent's memories, its fragments (``metadata.documentId``) and all
        their vectors, in one transaction; True iff the memory existed."""
        return await self.delete_many_memories([memory_id]) > 0

    async def delete_many_memories(self, memory_ids: Sequence[str]) -> int:
        """Delete several of this agent's memories like :meth:`delete_memory`, in one transaction;
        how many of ``memory_ids`` existed."""
        if not memory_ids:
            return 0
        ids = list(memory_ids)
        async with self._db.transaction() as conn:
            # Vectors go with each row (ON DELETE CASCADE); the tsvector is a column of the row.
            await conn.execute(
                "DELETE FROM memories WHERE agent_id = %s AND metadata->>'documentId' = ANY(%s) AND id <> ALL(%s)",
                (self._agent_id, ids, ids),
            )
            cur = await conn.execute("DELETE FROM memories WHERE agent_id = %s AND id = ANY(%s)", (self._agent_id, ids))
            return cur.rowcount

    async def delete_all_memories(self, room_id: str, table: str) -> int:
        """Delete this agent's memories of ``table`` in ``room_id`` with their fragments and
        vectors; how many memories of the room went."""
        if not table:
            raise ValueError("a memory table name is required (e.g. 'messages', 'facts')")
        agent = self._agent_id
        async with self._db.transaction() as conn:
            await conn.execute(
                "DELETE FROM memories WHERE agent_id = %s AND metadata->>'documentId' IN ("
                "  SELECT id FROM memories WHERE agent_id = %s AND room_id = %s AND type = %s) "
                "AND NOT (room_id IS NOT DISTINCT FROM %s AND type = %s)",
                (agent, agent, room_id, table, room_id, table),
            )
            cur = await conn.execute(
                "DELETE FROM memories WHERE agent_id = %s AND room_id = %s AND type = %s", (agent, room_id, table)
            )
            return cur.rowcount

    # -- memories: reads ---------------------------------------------------------------------------

    async def get_memories(
        self,
        *,
        table: str,
        room_id: str | None = None,
        entity_id: str | None = None,
        world_id: str | None = None,
        count: int | None = None,
        offset: int | None = None,
        unique: bool | None = None,
        start: int | None = None,
        end: int | None = None,
    ) -> list[Memory]:
        """This agent's memories of ``table``, newest first (ties: last written first), with the
        vectors of the active dimension. Filters are ANDed; ``start``/``end`` are inclusive ms
        bounds; ``count=None`` means no limit. ValueError without a table or for a negative
        count/offset."""
        validate_count(count)
        validate_count(offset, "offset")
        where = (
            PgMemoryFilter(self._agent_id, table)
            .add("m.room_id = %s", room_id)
            .add("m.entity_id = %s", entity_id)
            .add("m.world_id = %s", world_id)
            .add("m.created_at >= %s", start)
            .add("m.created_at <= %s", end)
            .unique(unique)
        )
        rows = await self._db.fetchall(
            f"SELECT {MEMORY_COLUMNS}, e.embedding FROM memories m {self._vector_join()} WHERE {where.where} "
            "ORDER BY m.created_at DESC, m.seq DESC LIMIT %s OFFSET %s",
            (*self._dim_params(), *where.params, count, offset or 0),
        )
        return [row_to_memory(r, embedding=vector_list(r["embedding"])) for r in rows]

    @staticmethod
    def _vector_join() -> str:
        """Each memory's vector of the active dimension, if any (parameters: :meth:`_dim_params`)."""
        return f"LEFT JOIN embeddings e ON e.memory_id = m.id AND e.dim = {_ACTIVE_DIM}"

    async def get_memory(self, memory_id: str) -> Memory | None:
        """One of this agent's memories with its vector, or None."""
        found = await self.get_memories_by_ids([memory_id])
        return found[0] if found else None

    async def get_memories_by_ids(self, memory_ids: Sequence[str], table: str | None = None) -> list[Memory]:
        """This agent's memories with these ids (optionally of ``table`` only), newest first, with vectors."""
        if not memory_ids:
            return []
        clause, params = ("AND m.type = %s", [table]) if table else ("", [])
        rows = await self._db.fetchall(
            f"SELECT {MEMORY_COLUMNS}, e.embedding FROM memories m {self._vector_join()} "
            f"WHERE m.agent_id = %s AND m.id = ANY(%s) {clause} ORDER BY m.created_at DESC, m.seq DESC",
            (*self._dim_params(), self._agent_id, list(memory_ids), *params),
        )
        return [row_to_memory(r, embedding=vector_list(r["embedding"])) for r in rows]

    async def get_memories_by_room_ids(
        self, *, table: str, room_ids: Sequence[str], limit: int | None = None
    ) -> list[Memory]:
        """This agent's memories of ``table`` in any of ``room_ids``, newest first, without vectors."""
        validate_count(limit, "limit")
        if not room_ids:
            return []
        rooms = list(dict.fromkeys(room_ids))
        where = PgMemoryFilter(self._agent_id, table)
        # One room: "=" reads the room's index newest first and stops at the limit.
        in_rooms = "m.room_id = %s" if len(rooms) == 1 else "m.room_id = ANY(%s)"
        rows = await self._db.fetchall(
            f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE {where.where} AND {in_rooms} "
            "ORDER BY m.created_at DESC, m.seq DESC LIMIT %s",
            (*where.params, rooms[0] if len(rooms) == 1 else rooms, limit),
        )
        return [row_to_memory(r) for r in rows]

    async def get_recent_memory_ids(self, *, table: str, room_id: str, limit: int) -> list[str]:
        """The ids of this agent's newest ``limit`` memories of ``table`` in ``room_id``, newest first."""
        validate_count(limit, "limit")
        where = PgMemoryFilter(self._agent_id, table).add("m.room_id = %s", room_id)
        rows = await self._db.fetchall(
            f"SELECT m.id FROM memories m WHERE {where.where} ORDER BY m.created_at DESC, m.seq DESC LIMIT %s",
            (*where.params, limit),
        )
        return [str(r["id"]) for r in rows]

    async def count_memories(self, room_id: str, table: str, unique: bool = True) -> int:
        """How many of this agent's memories of ``table`` are in ``room_id`` (unique ones only by default)."""
        where = PgMemoryFilter(self._agent_id, table).add("m.room_id = %s", room_id).unique(unique)
        row = await self._db.fetchone(f"SELECT count(*) AS n FROM memories m WHERE {where.where}", where.params)
        return int(row["n"]) if row else 0

    # -- vector search: shared by dedup and search (_search) ----------------------------------------

    @staticmethod
    def _nearest_sql(where: MemoryFilter, columns: str = "m.seq") -> str:
        """Exact search: ``columns`` and the cosine ``distance`` of every pre-filtered vector of the
        dimension, best first (parameters: the query, the filter's, the dimension, the count).

        The distance is on the column itself, not on a cast to one dimension as an HNSW index
        would be, so the planner never answers it from an index (see ``_search``). A zero
        vector's distance is NaN, which sorts after every number, as SQLite's NULL similarity does.
        """
        return (
            f"SELECT {columns}, e.embedding <=> %s AS distance FROM memories m JOIN embeddings e ON e.memory_id = m.id "
            f"WHERE {where.where} AND e.dim = %s ORDER BY distance, m.created_at DESC, m.seq DESC LIMIT %s"
        )

    async def _nearest_on(
        self,
        conn: psycopg.AsyncConnection[Row],
        query: PgVector,
        dim: int,
        where: MemoryFilter,
        *,
        count: int,
        threshold: float | None = None,
    ) -> list[tuple[int, float]]:
        """(seq, cosine similarity) of the best ``count`` rows, read on ``conn``."""
        cur = await conn.execute(self._nearest_sql(where), (query, *where.params, dim, count))
        return similarity_hits(await cur.fetchall(), threshold)


def similarity_hits(rows: Sequence[Row], threshold: float | None = None) -> list[tuple[int, float]]:
    """(seq, similarity) of nearest-neighbour rows (``seq``, ``distance``), as :func:`nearest_hits`."""
    pairs = [(r["seq"], None if math.isnan(r["distance"]) else 1.0 - r["distance"]) for r in rows]
    return nearest_hits(pairs, threshold)

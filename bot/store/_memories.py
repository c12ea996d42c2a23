"""Memories: writes (with dedup) and reads; the SQL pieces their search (``_search``) shares."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence

from bot.store._connect import Connection, Row, RowValues, SQLValue
from bot.store._rows import dumps, row_to_memory
from bot.store._scoped import AgentScoped, json_list, new_id, validate_count
from bot.store._vectors import VectorColumn, check_dimension, encode_vector
from bot.types import Memory, now_ms

__all__ = ["DEDUP_THRESHOLD", "ENCODE_IN_THREAD", "MEMORY_COLUMNS", "MemoriesMixin", "MemoryFilter", "nearest_hits"]

_log = logging.getLogger(__name__)

#: A new memory at least this similar to one from the same author, room and table is not unique.
DEDUP_THRESHOLD = 0.95
#: Above this many vectors, create_memories cleans and packs them off the event loop.
ENCODE_IN_THREAD = 64

MEMORY_COLUMNS = (
    "m.seq, m.id, m.type, m.created_at, m.content, m.entity_id, m.agent_id, m.room_id, m.world_id, "
    "m.is_unique, m.metadata"
)
# What writing memories changes (the keyword index through triggers): see Database.write.
_MEMORY_TABLES = ("memories", "embeddings", "memories_fts")


def nearest_hits(
    rows: Sequence[Row | tuple[int, float | None]], threshold: float | None = None
) -> list[tuple[int, float]]:
    """(seq, similarity) pairs of nearest-neighbour rows, without those below ``threshold``.

    Filtering after LIMIT gives the same rows as before it: the order is by similarity, and NULL
    similarities (zero vectors) sort last.
    """
    return [(r[0], r[1]) for r in rows if r[1] is not None and (not threshold or r[1] >= threshold)]


class MemoryFilter:
    """The SQL pre-filter shared by listing, vector and keyword search of memories."""

    __slots__ = ("clauses", "params")

    #: The driver's parameter placeholder, and the clause that keeps unique memories only.
    MARK = "?"
    UNIQUE = "m.is_unique = 1"

    def __init__(self, agent_id: str, table: str) -> None:
        if not table:
            raise ValueError("a memory table name is required (e.g. 'messages', 'facts')")
        self.clauses = [f"m.agent_id = {self.MARK}", f"m.type = {self.MARK}"]
        self.params: list[SQLValue] = [agent_id, table]

    def add(self, clause: str, value: SQLValue) -> MemoryFilter:
        if value is not None:
            self.clauses.append(clause)
            self.params.append(value)
        return self

    def unique(self, unique: bool | None) -> MemoryFilter:
        if unique:
            self.clauses.append(self.UNIQUE)
        return self

    def fields(self, room_id: str | None, world_id: str | None, entity_id: str | None) -> MemoryFilter:
        """Keep the memories of this room, world and author (each only when given)."""
        mark = self.MARK
        return (
            self.add(f"m.room_id = {mark}", room_id)
            .add(f"m.world_id = {mark}", world_id)
            .add(f"m.entity_id = {mark}", entity_id)
        )

    @property
    def where(self) -> str:
        return " AND ".join(self.clauses)


class MemoriesMixin(AgentScoped):
    """The ``memories`` and ``embeddings`` tables and the ``memories_fts`` keyword index."""

    __slots__ = ()

    # -- embedding dimension -----------------------------------------------------------------------

    async def ensure_embedding_dimension(self, dim: int) -> None:
        """Make ``dim`` this agent's active embedding dimension, persisted in the file.

        Vectors stored under another dimension stay, but are invisible to search and reads until the
        agent switches back. Raises ValueError for a length no store takes (see check_dimension).
        """
        check_dimension(dim)
        if await self._db.embedding_dimension(self._agent_id) != dim:
            await self._db.set_embedding_dimension(self._agent_id, dim)
            _log.info("agent %s: embedding dimension is now %d", self._agent_id, dim)

    async def get_embedding_dimension(self) -> int:
        """This agent's active embedding dimension (384 until ensure_embedding_dimension is called)."""
        return await self._db.embedding_dimension(self._agent_id)

    async def _active_column(self) -> tuple[int, VectorColumn]:
        dim = await self._db.embedding_dimension(self._agent_id)
        return dim, check_dimension(dim)

    # -- memories: writes --------------------------------------------------------------------------

    def _memory_row(self, memory: Memory, table: str, memory_id: str, is_unique: bool, now: int) -> RowValues:
        return (
            memory_id,
            table,
            memory.created_at or now,
            dumps(memory.content or {}),
            memory.entity_id,
            self._agent_id,
            memory.room_id,
            memory.world_id,
            int(is_unique),
            dumps(memory.metadata or {}),
        )

    async def create_memory(self, memory: Memory, table: str, unique: bool | None = None) -> str:
        """Store a memory in ``table`` ('messages', 'facts', …) with its embedding; return its id.

        ``unique`` (or else ``memory.unique``) is stored as given; when both are None the memory is
        unique unless a memory at least 95% similar exists from the same entity in the same room
        (and world, if set) and table. An id that already exists is left alone and returned. The
        memory, its embedding and its keyword-index entry are written in one transaction.
        Raises EmbeddingDimensionError for a vector of the wrong length, StoreError if the database
        rejects the row (e.g. a fragment without documentId/position).
        """
        ids = await self.create_memories([memory], table, unique=unique)
        return ids[0]

    async def create_memories(self, memories: Sequence[Memory], table: str, unique: bool | None = None) -> list[str]:
        """Store many memories in one transaction (all or none), each as :meth:`create_memory` would.

        The bulk path for imports: rows that need no similarity check are written with one
        statement per batch. Returns the ids in input order.
        """
        if not table:
            raise ValueError("a memory table name is required (e.g. 'messages', 'facts')")
        if not memories:
            return []
        dim, column = await self._active_column()

        def encode_all() -> list[bytes | None]:
            return [encode_vector(m.embedding, dim) if m.embedding is not None else None for m in memories]

        n_vectors = sum(m.embedding is not None for m in memories)
        # Packing a 1536-dim vector costs ~35 µs; big batches would stall the loop.
        blobs = await asyncio.to_thread(encode_all) if n_vectors > ENCODE_IN_THREAD else encode_all()
        ids = [m.id or new_id() for m in memories]
        now = now_ms()

        def write(conn: Connection) -> None:  # on the writer's thread, inside the transaction
            seen = {
                r[0]
                for r in conn.execute(
                    "SELECT id FROM memories WHERE id IN (SELECT value FROM json_each(?))", (json_list(ids),)
                )
            }
            pending_rows: list[RowValues] = []
            pending_vectors: list[tuple[str, str, bytes, int]] = []

            def flush() -> None:
                if pending_rows:
                    conn.executemany(
                        "INSERT INTO memories (id, type, created_at, content, entity_id, agent_id, room_id, "
                        "world_id, is_unique, metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        pending_rows,
                    )
                if pending_vectors:
                    conn.executemany(
                        f"INSERT INTO embeddings (id, memory_id, {column.name}, created_at) VALUES (?, ?, ?, ?)",
                        pending_vectors,
                    )
                pending_rows.clear()
                pending_vectors.clear()

            for memory, memory_id, blob in zip(memories, ids, blobs, strict=True):
                if memory_id in seen:  # already stored (or twice in this batch): keep the first
                    continue
                seen.add(memory_id)
                is_unique = unique if unique is not None else memory.unique
                if is_unique is None:
                    is_unique = True
                    if blob is not None:
                        # The check must see every earlier row of this batch, so write those first.
                        flush()
                        sql, params = self._nearest_sql(
                            column,
                            MemoryFilter(self._agent_id, table).fields(
                                memory.room_id, memory.world_id, memory.entity_id
                            ),
                            count=1,
                        )
                        hits = nearest_hits(conn.execute(sql, [blob, *params]).fetchall())
                        is_unique = not (hits and hits[0][1] >= DEDUP_THRESHOLD)
                pending_rows.append(self._memory_row(memory, table, memory_id, is_unique, now))
                if blob is not None:
                    pending_vectors.append((new_id(), memory_id, blob, now))
            flush()

        # One trip to the writer's thread for the whole batch, however many statements it takes.
        await self._db.write(write, tables=_MEMORY_TABLES)
        return ids

    async def update_memory(
        self,
        memory_id: str,
        *,
        content: Mapping[str, object] | None = None,
        metadata: Mapping[str, object] | None = None,
        embedding: Sequence[float] | None = None,
    ) -> bool:
        """Replace the content and/or metadata of one of this agent's memories and/or upsert its
        embedding in the active column; False if there is no such memory.

        Raises EmbeddingDimensionError for a vector of the wrong length, StoreError if the database
        rejects the change.
        """
        blob = None
        if embedding is not None:
            dim, column = await self._active_column()
            blob = encode_vector(embedding, dim)
        sets, params = [], []
        if content is not None:
            sets.append("content = ?")
            params.append(dumps(dict(content)))
        if metadata is not None:
            sets.append("metadata = ?")
            params.append(dumps(dict(metadata)))

        def write(conn: Connection) -> bool:  # on the writer's thread: one trip for the whole update
            if (
                conn.execute(
                    "SELECT 1 FROM memories WHERE id = ? AND agent_id = ?", (memory_id, self._agent_id)
                ).fetchone()
                is None
            ):
                return False
            if sets:
                conn.execute(f"UPDATE memories SET {', '.join(sets)} WHERE id = ?", (*params, memory_id))
            if blob is not None:
                conn.execute(
                    f"INSERT INTO embeddings (id, memory_id, {column.name}, created_at) VALUES (?, ?, ?, ?) "
                    f"ON CONFLICT(memory_id) DO UPDATE SET {column.name} = excluded.{column.name}",
                    (new_id(), memory_id, blob, now_ms()),
                )
            return True

        return await self._db.write(write, tables=_MEMORY_TABLES)

    async def delete_memory(self, memory_id: str) -> bool:
        """Delete one of this agent's memories, the fragments of it (``metadata.documentId``) and all
        their embeddings, in one transaction; True iff the memory existed."""
        return await self.delete_many_memories([memory_id]) > 0

    async def delete_many_memories(self, memory_ids: Sequence[str]) -> int:
        """Delete several of this agent's memories like :meth:`delete_memory`, in one transaction;
        returns how many of ``memory_ids`` existed."""
        if not memory_ids:
            return 0
        ids = json_list(memory_ids)

        def write(conn: Connection) -> int:
            # Embeddings and keyword-index entries go with each row (ON DELETE CASCADE, triggers).
            conn.execute(
                "DELETE FROM memories WHERE agent_id = ? "
                "AND json_extract(metadata, '$.documentId') IN (SELECT value FROM json_each(?)) "
                "AND id NOT IN (SELECT value FROM json_each(?))",
                (self._agent_id, ids, ids),
            )
            return conn.execute(  # "+": look ids up by the unique index (see get_memories_by_ids)
                "DELETE FROM memories WHERE +agent_id = ? AND id IN (SELECT value FROM json_each(?))",
                (self._agent_id, ids),
            ).rowcount

        return await self._db.write(write, tables=_MEMORY_TABLES)

    async def delete_all_memories(self, room_id: str, table: str) -> int:
        """Delete this agent's memories of ``table`` in ``room_id`` with their fragments and
        embeddings; returns how many memories of the room went."""
        if not table:
            raise ValueError("a memory table name is required (e.g. 'messages', 'facts')")

        def write(conn: Connection) -> int:
            conn.execute(
                "DELETE FROM memories WHERE agent_id = ? AND json_extract(metadata, '$.documentId') IN ("
                "  SELECT id FROM memories WHERE agent_id = ? AND room_id = ? AND type = ?) "
                "AND NOT (room_id IS ? AND type = ?)",
                (self._agent_id, self._agent_id, room_id, table, room_id, table),
            )
            return conn.execute(
                "DELETE FROM memories WHERE agent_id = ? AND room_id = ? AND type = ?",
                (self._agent_id, room_id, table),
            ).rowcount

        return await self._db.write(write, tables=_MEMORY_TABLES)

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
        """This agent's memories of ``table``, newest first (ties: last written first), with embeddings.

        Filters are ANDed; ``start``/``end`` are inclusive ms bounds on created_at; ``unique=True``
        keeps unique memories only; ``count=None`` means no limit. Raises ValueError without a
        table or for a negative count/offset.
        """
        validate_count(count)
        validate_count(offset, "offset")
        where = (
            MemoryFilter(self._agent_id, table)
            .add("m.room_id = ?", room_id)
            .add("m.entity_id = ?", entity_id)
            .add("m.world_id = ?", world_id)
            .add("m.created_at >= ?", start)
            .add("m.created_at <= ?", end)
            .unique(unique)
        )
        _, column = await self._active_column()
        rows = await self._db.fetchall(
            f"SELECT {MEMORY_COLUMNS}, {column.value()} AS embedding FROM memories m "
            f"LEFT JOIN embeddings e ON e.memory_id = m.id WHERE {where.where} "
            "ORDER BY m.created_at DESC, m.seq DESC LIMIT ? OFFSET ?",
            (*where.params, -1 if count is None else count, offset or 0),
        )
        return [row_to_memory(r, embedding=r["embedding"]) for r in rows]

    async def get_memory(self, memory_id: str) -> Memory | None:
        """One of this agent's memories with its embedding, or None."""
        found = await self.get_memories_by_ids([memory_id])
        return found[0] if found else None

    async def get_memories_by_ids(self, memory_ids: Sequence[str], table: str | None = None) -> list[Memory]:
        """This agent's memories with these ids (optionally only of ``table``), newest first, with embeddings."""
        if not memory_ids:
            return []
        _, column = await self._active_column()
        clause, params = ("AND m.type = ?", [table]) if table else ("", [])
        rows = await self._db.fetchall(
            f"SELECT {MEMORY_COLUMNS}, {column.value()} AS embedding FROM memories m "
            "LEFT JOIN embeddings e ON e.memory_id = m.id "
            # "+" keeps the planner off the agent's indexes: without it SQLite may walk every memory
            # of the agent instead of looking the ids up in the unique index.
            f"WHERE +m.agent_id = ? AND m.id IN (SELECT value FROM json_each(?)) {clause} "
            "ORDER BY m.created_at DESC, m.seq DESC",
            (self._agent_id, json_list(memory_ids), *params),
        )
        return [row_to_memory(r, embedding=r["embedding"]) for r in rows]

    async def get_memories_by_room_ids(
        self, *, table: str, room_ids: Sequence[str], limit: int | None = None
    ) -> list[Memory]:
        """This agent's memories of ``table`` in any of ``room_ids``, newest first, without embeddings."""
        validate_count(limit, "limit")
        if not room_ids:
            return []
        rooms = list(dict.fromkeys(room_ids))
        where = MemoryFilter(self._agent_id, table)
        if len(rooms) == 1:
            # With "=" SQLite walks the room's index from the newest row and stops at the limit;
            # with IN it would scan the agent's whole history of ``table``.
            where.add("m.room_id = ?", rooms[0])
        else:
            where.add("m.room_id IN (SELECT value FROM json_each(?))", json_list(rooms))
        rows = await self._db.fetchall(
            f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE {where.where} "
            "ORDER BY m.created_at DESC, m.seq DESC LIMIT ?",
            (*where.params, -1 if limit is None else limit),
        )
        return [row_to_memory(r) for r in rows]

    async def get_recent_memory_ids(self, *, table: str, room_id: str, limit: int) -> list[str]:
        """The ids of this agent's newest ``limit`` memories of ``table`` in ``room_id``, newest first.

        For checks that only need to know which messages came last (reflection's cadence, after
        every reply): no row is decoded.
        """
        validate_count(limit, "limit")
        where = MemoryFilter(self._agent_id, table).add("m.room_id = ?", room_id)
        rows = await self._db.fetchall(
            f"SELECT m.id FROM memories m WHERE {where.where} ORDER BY m.created_at DESC, m.seq DESC LIMIT ?",
            (*where.params, limit),
        )
        return [str(r[0]) for r in rows]

    async def count_memories(self, room_id: str, table: str, unique: bool = True) -> int:
        """How many of this agent's memories of ``table`` are in ``room_id`` (unique ones only by default)."""
        where = MemoryFilter(self._agent_id, table).add("m.room_id = ?", room_id).unique(unique)
        row = await self._db.fetchone(f"SELECT count(*) FROM memories m WHERE {where.where}", where.params)
        return int(row[0]) if row else 0

    # -- vector search: shared by dedup and search (_search) ----------------------------------------

    @staticmethod
    def _nearest_sql(column: VectorColumn, where: MemoryFilter, count: int) -> tuple[str, list[SQLValue]]:
        # Exact search: cosine similarity of every pre-filtered row, best first. SQLite evaluates the
        # select list only for rows passing WHERE, so the vector function never sees a NULL (nor,
        # in the column of other lengths, a vector of another length).
        # Only (seq, similarity) go through the sorter; full rows are read for the winners only.
        sql = (
            f"SELECT m.seq, 1 - vec_distance_cosine(e.{column.name}, ?) AS similarity "
            f"FROM memories m JOIN embeddings e ON e.memory_id = m.id "
            f"WHERE {where.where} AND {column.present()} "
            "ORDER BY similarity DESC, m.created_at DESC, m.seq DESC LIMIT ?"
        )
        return sql, [*where.params, count]

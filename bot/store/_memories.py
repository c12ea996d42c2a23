"""Memories, both backends: writes (with the near-duplicate check) and reads.

Where vectors live differs: SQLite keeps one column per vector length in ``embeddings``,
PostgreSQL one row per memory and length (``dim``). Each backend's vector search module
(``_sqlite_search``, ``postgres/_search``) implements the few hooks of :class:`MemoriesMixin` that
touch them; an agent that changes embedding model keeps its old vectors on both, invisible
until it switches back. Reads show the vector of the agent's active dimension only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import ClassVar

from bot.kernel.content import Content, MemoryMetadata
from bot.kernel.types import Memory, now_ms
from bot.store._connect import Row as SQLiteRow
from bot.store._connect import SQLValue
from bot.store._dialect import Statements, Step, Unit
from bot.store._rows import Row, dumps, json_text, row_to_memory
from bot.store._scoped import new_id, validate_count

__all__ = [
    "DEDUP_THRESHOLD",
    "ENCODE_IN_THREAD",
    "INSERT_MEMORY",
    "MEMORY_COLUMNS",
    "MEMORY_TABLES",
    "MemoriesMixin",
    "MemoryFilter",
    "memory_json",
    "nearest_hits",
]

#: A new memory at least this similar to one from the same author, room and table is not unique.
DEDUP_THRESHOLD = 0.95
#: Above this many vectors, create_memories cleans and packs them off the event loop.
ENCODE_IN_THREAD = 64

MEMORY_COLUMNS = (
    "m.seq, m.id, m.type, m.created_at, m.content, m.entity_id, m.agent_id, m.room_id, m.world_id, "
    "m.is_unique, m.metadata"
)
#: What writing memories changes (SQLite's keyword index through triggers): see Database.write.
MEMORY_TABLES = ("memories", "embeddings", "memories_fts")
#: A memory row (parameters: :meth:`MemoriesMixin._memory_row`); on PostgreSQL an id another
#: daemon stored first is left alone.
INSERT_MEMORY = (
    "INSERT INTO memories (id, type, created_at, content, entity_id, agent_id, room_id, world_id, is_unique, "
    "metadata) VALUES (?, ?, ?, ?{json}, ?, ?, ?, ?, ?, ?{json}){keep_stored}"
)
_NO_TABLE = "a memory table name is required (e.g. 'messages', 'facts')"


def nearest_hits(
    rows: Sequence[SQLiteRow | tuple[int, float | None]], threshold: float | None = None
) -> list[tuple[int, float]]:
    """(seq, similarity) pairs of nearest-neighbour rows, without those below ``threshold``.

    Filtering after LIMIT gives the same rows as before it: the order is by similarity, and NULL
    similarities (zero vectors) sort last.
    """
    return [(r[0], r[1]) for r in rows if r[1] is not None and (not threshold or r[1] >= threshold)]


def memory_json(memory: Memory, to_json: Callable[[object], str]) -> tuple[str, str]:
    """A memory's content and metadata as the JSON text of their columns."""
    return to_json(memory.content.to_json()), to_json(memory.metadata.to_json())


class MemoryFilter:
    """The SQL pre-filter shared by listing, vector and keyword search of memories."""

    __slots__ = ("clauses", "params")

    #: The parameter placeholder, and the clause that keeps unique memories only.
    MARK = "?"
    UNIQUE = "m.is_unique = 1"

    def __init__(self, agent_id: str, table: str) -> None:
        if not table:
            raise ValueError(_NO_TABLE)
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


class MemoriesMixin(Statements):
    """The ``memories`` and ``embeddings`` tables; the hooks are where each backend keeps vectors."""

    __slots__ = ()

    #: The filter of the store's SQL templates (``?`` marks, the backend's boolean).
    memory_filter: ClassVar[type[MemoryFilter]] = MemoryFilter

    # -- hooks: where the vectors live -------------------------------------------------------------

    async def ensure_embedding_dimension(self, dim: int) -> None:
        """Make ``dim`` this agent's active embedding dimension, stored in the database.

        Vectors of other dimensions stay, invisible to search and reads until the agent switches
        back. Raises ValueError for a length no store takes (see check_dimension).
        """
        raise NotImplementedError

    async def get_embedding_dimension(self) -> int:
        """This agent's active embedding dimension (384 until ensure_embedding_dimension is called)."""
        raise NotImplementedError

    def _vector(self, values: Sequence[float], dim: int) -> object:
        """``values`` as the backend stores a vector of ``dim``; EmbeddingDimensionError if not that long."""
        raise NotImplementedError

    def _store_vector(self, dim: int, *, replace: bool) -> str:
        """The statement storing a memory's vector of ``dim`` (parameters: id, memory id, vector,
        created_at); ``replace``: over the one it has."""
        raise NotImplementedError

    async def _vector_join(self) -> tuple[str, Sequence[object]]:
        """``embedding`` (the active dimension's vector or NULL) selected from ``memories m``: the
        SQL from ``, <value> AS embedding FROM`` up to WHERE, and its parameters."""
        raise NotImplementedError

    def _read_vector(self, value: object) -> bytes | list[float] | None:
        """A vector as read back, as :func:`row_to_memory` takes it."""
        raise NotImplementedError

    def _nearest_step(self, vector: object, dim: int, where: MemoryFilter) -> Step:
        """Exact search for the one nearest vector passing ``where``; its rows go to :meth:`_hits`."""
        raise NotImplementedError

    def _hits(self, rows: Sequence[Row]) -> list[tuple[int, float]]:
        """(seq, similarity) of :meth:`_nearest_step`'s rows."""
        raise NotImplementedError

    # -- memories: writes --------------------------------------------------------------------------

    def _to_json(self, value: object) -> str:
        # jsonb cannot hold U+0000: PostgreSQL stores it as U+FFFD (see json_text).
        return dumps(value) if self.dialect.text_holds_nul else json_text(value)

    def _memory_row(
        self, memory: Memory, table: str, memory_id: str, is_unique: bool, now: int, json: tuple[str, str]
    ) -> tuple[object, ...]:
        """The parameters of :data:`INSERT_MEMORY` (``json``: from :func:`memory_json`)."""
        content, metadata = json
        return (
            memory_id,
            table,
            memory.created_at or now,
            content,
            memory.entity_id,
            self._agent_id,
            memory.room_id,
            memory.world_id,
            self.dialect.boolean(is_unique),
            metadata,
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
            raise ValueError(_NO_TABLE)
        if not memories:
            return []
        dim = await self.get_embedding_dimension()

        def encode_all() -> list[object | None]:
            return [self._vector(m.embedding, dim) if m.embedding is not None else None for m in memories]

        n_vectors = sum(m.embedding is not None for m in memories)
        # Packing a 1536-dim vector costs ~35 µs; big batches would stall the loop.
        vectors = await asyncio.to_thread(encode_all) if n_vectors > ENCODE_IN_THREAD else encode_all()
        ids = [m.id or new_id() for m in memories]
        # JSON first: a value JSON cannot hold (NaN) is a ValueError before anything is written.
        documents = [memory_json(m, self._to_json) for m in memories]
        now = now_ms()
        store_vector = self._store_vector(dim, replace=False)

        def write() -> Unit[None]:  # SQLite: on the writer's thread, one trip for the whole batch
            done = yield Step("SELECT id FROM memories WHERE id {in_list}", (self.dialect.id_list(ids),))
            seen = {r["id"] for r in done.rows}
            rows: list[tuple[object, ...]] = []
            vector_rows: list[tuple[object, ...]] = []

            def flush() -> Unit[None]:
                if rows:
                    yield Step(INSERT_MEMORY, list(rows), many=True)
                if vector_rows:
                    yield Step(store_vector, list(vector_rows), many=True)
                rows.clear()
                vector_rows.clear()

            for memory, memory_id, vector, json in zip(memories, ids, vectors, documents, strict=True):
                if memory_id in seen:  # already stored (or twice in this batch): keep the first
                    continue
                seen.add(memory_id)
                is_unique = unique if unique is not None else memory.unique
                if is_unique is None:
                    is_unique = True
                    if vector is not None:
                        yield from flush()  # the check must see every earlier row of this batch
                        where = self.memory_filter(self._agent_id, table)
                        where.fields(memory.room_id, memory.world_id, memory.entity_id)
                        hits = self._hits((yield self._nearest_step(vector, dim, where)).rows)
                        is_unique = not (hits and hits[0][1] >= DEDUP_THRESHOLD)
                rows.append(self._memory_row(memory, table, memory_id, is_unique, now, json))
                if vector is not None:
                    vector_rows.append((new_id(), memory_id, vector, now))
            yield from flush()

        await self._write(write, tables=MEMORY_TABLES)
        return ids

    async def update_memory(
        self,
        memory_id: str,
        *,
        content: Content | None = None,
        metadata: MemoryMetadata | None = None,
        embedding: Sequence[float] | None = None,
    ) -> bool:
        """Replace the content and/or metadata of one of this agent's memories and/or set its
        vector of the active dimension (its vectors of other dimensions stay); False if there is
        no such memory.

        Raises EmbeddingDimensionError for a vector of the wrong length, StoreError if the database
        rejects the change.
        """
        vector, store_vector = None, ""
        if embedding is not None:
            dim = await self.get_embedding_dimension()
            vector, store_vector = self._vector(embedding, dim), self._store_vector(dim, replace=True)
        sets, params = [], []
        if content is not None:
            sets.append("content = ?{json}")
            params.append(self._to_json(content.to_json()))
        if metadata is not None:
            sets.append("metadata = ?{json}")
            params.append(self._to_json(metadata.to_json()))

        def write() -> Unit[bool]:  # SQLite: on the writer's thread, one trip for the whole update
            # Locked until the commit: a memory another daemon is deleting is waited for, then not found.
            found = yield Step(
                "SELECT 1 FROM memories WHERE id = ? AND agent_id = ?{lock_memory}", (memory_id, self._agent_id)
            )
            if not found.rows:
                return False
            if sets:
                yield Step(f"UPDATE memories SET {', '.join(sets)} WHERE id = ?", (*params, memory_id))
            if vector is not None:
                yield Step(store_vector, (new_id(), memory_id, vector, now_ms()))
            return True

        return await self._write(write, tables=MEMORY_TABLES)

    async def delete_memory(self, memory_id: str) -> bool:
        """Delete one of this agent's memories, the fragments of it (``metadata.documentId``) and all
        their embeddings, in one transaction; True iff the memory existed."""
        return await self.delete_many_memories([memory_id]) > 0

    async def delete_many_memories(self, memory_ids: Sequence[str]) -> int:
        """Delete several of this agent's memories like :meth:`delete_memory`, in one transaction;
        returns how many of ``memory_ids`` existed."""
        if not memory_ids:
            return 0
        ids = self.dialect.id_list(memory_ids)

        def write() -> Unit[int]:
            # Vectors and SQLite's keyword-index entries go with each row (ON DELETE CASCADE, triggers).
            yield Step(
                "DELETE FROM memories WHERE agent_id = ? "
                "AND {json_text:metadata.documentId} {in_list} AND id {not_in_list}",
                (self._agent_id, ids, ids),
            )
            done = yield Step(  # "+": look ids up by the unique index (see get_memories_by_ids)
                "DELETE FROM memories WHERE {scan_agent}agent_id = ? AND id {in_list}", (self._agent_id, ids)
            )
            return done.rowcount

        return await self._write(write, tables=MEMORY_TABLES)

    async def delete_all_memories(self, room_id: str, table: str) -> int:
        """Delete this agent's memories of ``table`` in ``room_id`` with their fragments and
        embeddings; returns how many memories of the room went."""
        if not table:
            raise ValueError(_NO_TABLE)
        agent = self._agent_id

        def write() -> Unit[int]:
            yield Step(
                "DELETE FROM memories WHERE agent_id = ? AND {json_text:metadata.documentId} IN ("
                "  SELECT id FROM memories WHERE agent_id = ? AND room_id = ? AND type = ?) "
                "AND NOT (room_id {is} ? AND type = ?)",
                (agent, agent, room_id, table, room_id, table),
            )
            done = yield Step(
                "DELETE FROM memories WHERE agent_id = ? AND room_id = ? AND type = ?", (agent, room_id, table)
            )
            return done.rowcount

        return await self._write(write, tables=MEMORY_TABLES)

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
            self.memory_filter(self._agent_id, table)
            .add("m.room_id = ?", room_id)
            .add("m.entity_id = ?", entity_id)
            .add("m.world_id = ?", world_id)
            .add("m.created_at >= ?", start)
            .add("m.created_at <= ?", end)
            .unique(unique)
        )
        join, join_params = await self._vector_join()
        rows = await self._rows(
            f"SELECT {MEMORY_COLUMNS}{join} WHERE {where.where} "
            "ORDER BY m.created_at DESC, m.seq DESC LIMIT ? OFFSET ?",
            (*join_params, *where.params, self.dialect.no_limit if count is None else count, offset or 0),
        )
        return [row_to_memory(r, self._payloads, embedding=self._read_vector(r["embedding"])) for r in rows]

    async def get_memory(self, memory_id: str) -> Memory | None:
        """One of this agent's memories with its embedding, or None."""
        found = await self.get_memories_by_ids([memory_id])
        return found[0] if found else None

    async def get_memories_by_ids(self, memory_ids: Sequence[str], table: str | None = None) -> list[Memory]:
        """This agent's memories with these ids (optionally only of ``table``), newest first, with embeddings."""
        if not memory_ids:
            return []
        join, join_params = await self._vector_join()
        clause, params = ("AND m.type = ?", [table]) if table else ("", [])
        rows = await self._rows(
            # "+" keeps SQLite's planner off the agent's indexes: without it SQLite may walk every
            # memory of the agent instead of looking the ids up in the unique index.
            f"SELECT {MEMORY_COLUMNS}{join} WHERE {{scan_agent}}m.agent_id = ? AND m.id {{in_list}} {clause} "
            "ORDER BY m.created_at DESC, m.seq DESC",
            (*join_params, self._agent_id, self.dialect.id_list(memory_ids), *params),
        )
        return [row_to_memory(r, self._payloads, embedding=self._read_vector(r["embedding"])) for r in rows]

    async def get_memories_by_room_ids(
        self, *, table: str, room_ids: Sequence[str], limit: int | None = None
    ) -> list[Memory]:
        """This agent's memories of ``table`` in any of ``room_ids``, newest first, without embeddings."""
        validate_count(limit, "limit")
        if not room_ids:
            return []
        rooms = list(dict.fromkeys(room_ids))
        where = self.memory_filter(self._agent_id, table)
        # With "=" the room's index is read from the newest row and stops at the limit; with a
        # list SQLite would scan the agent's whole history of ``table``.
        one = len(rooms) == 1
        rows = await self._rows(
            f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE {where.where} "
            f"AND m.room_id {'= ?' if one else '{in_list}'} ORDER BY m.created_at DESC, m.seq DESC LIMIT ?",
            (
                *where.params,
                rooms[0] if one else self.dialect.id_list(rooms),
                self.dialect.no_limit if limit is None else limit,
            ),
        )
        return [row_to_memory(r, self._payloads) for r in rows]

    async def get_recent_memory_ids(self, *, table: str, room_id: str, limit: int) -> list[str]:
        """The ids of this agent's newest ``limit`` memories of ``table`` in ``room_id``, newest first.

        For checks that only need to know which messages came last (reflection's cadence, after
        every reply): no row is decoded.
        """
        validate_count(limit, "limit")
        where = self.memory_filter(self._agent_id, table).add("m.room_id = ?", room_id)
        rows = await self._rows(
            f"SELECT m.id FROM memories m WHERE {where.where} ORDER BY m.created_at DESC, m.seq DESC LIMIT ?",
            (*where.params, limit),
        )
        return [str(r["id"]) for r in rows]

    async def count_memories(self, room_id: str, table: str, unique: bool = True) -> int:
        """How many of this agent's memories of ``table`` are in ``room_id`` (unique ones only by default)."""
        where = self.memory_filter(self._agent_id, table).add("m.room_id = ?", room_id).unique(unique)
        row = await self._row(f"SELECT count(*) AS n FROM memories m WHERE {where.where}", where.params)
        return int(row["n"]) if row else 0

"""Where SQLite keeps vectors and how it searches them: exact vector search (sqlite-vec), one
``embeddings`` column per vector length; the hooks of :class:`~bot.store._search.SearchMixin`."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING

from bot.kernel.types import Memory, now_ms
from bot.store._connect import Connection, SQLValue
from bot.store._dialect import Step
from bot.store._knowledge import ENCODE_INLINE, FRAGMENTS
from bot.store._memories import MEMORY_COLUMNS, MemoryFilter, nearest_hits
from bot.store._rows import Row, row_to_memory
from bot.store._scoped import AgentScoped, new_id
from bot.store._search import SearchMixin, keyword_sql
from bot.store._vectors import VectorColumn, check_dimension, encode_vector

if TYPE_CHECKING:  # Database builds AgentStore, which builds on this module
    from bot.store._database import Database

__all__ = ["SqliteSearchMixin"]

_log = logging.getLogger(__name__)


class SqliteSearchMixin(SearchMixin, AgentScoped):
    """The hooks of :class:`SearchMixin` and :class:`~bot.store._memories.MemoriesMixin` on
    SQLite, and the turn at the shared knowledge scope (the process's lock)."""

    __slots__ = ()

    # -- memories' vectors -------------------------------------------------------------------------

    async def ensure_embedding_dimension(self, dim: int) -> None:
        """As :meth:`MemoriesMixin.ensure_embedding_dimension`: persisted in the file."""
        check_dimension(dim)
        if await self._db.embedding_dimension(self._agent_id) != dim:
            await self._db.set_embedding_dimension(self._agent_id, dim)
            _log.info("agent %s: embedding dimension is now %d", self._agent_id, dim)

    async def get_embedding_dimension(self) -> int:
        """This agent's active embedding dimension (384 until ensure_embedding_dimension is called)."""
        return await self._db.embedding_dimension(self._agent_id)

    def _vector(self, values: Sequence[float], dim: int) -> bytes:
        return encode_vector(values, dim)

    def _store_vector(self, dim: int, *, replace: bool) -> str:
        name = check_dimension(dim).name
        sql = f"INSERT INTO embeddings (id, memory_id, {name}, created_at) VALUES (?, ?, ?, ?)"
        return f"{sql} ON CONFLICT(memory_id) DO UPDATE SET {name} = excluded.{name}" if replace else sql

    async def _vector_join(self) -> tuple[str, Sequence[object]]:
        column = check_dimension(await self._db.embedding_dimension(self._agent_id))
        return f", {column.value()} AS embedding FROM memories m LEFT JOIN embeddings e ON e.memory_id = m.id", ()

    def _read_vector(self, value: object) -> bytes | None:
        return value if isinstance(value, bytes) else None

    def _nearest_step(self, vector: object, dim: int, where: MemoryFilter) -> Step:
        sql, params = _nearest_sql(check_dimension(dim), where, 1)
        return Step(sql, [vector, *params])

    def _hits(self, rows: Sequence[Row]) -> list[tuple[int, float]]:
        return nearest_hits([(r["seq"], r["similarity"]) for r in rows])

    async def _vector_search(
        self, table: str, query: object, dim: int, where: MemoryFilter, count: int, threshold: float | None
    ) -> list[Memory]:
        assert isinstance(query, bytes)  # as _vector made it
        column = check_dimension(dim)
        sql, params = _nearest_sql(column, where, count)
        hits = nearest_hits(await self._db.fetchall(sql, [query, *params]), threshold)
        return await _by_seq(self._db, hits, column)

    async def _keyword_search(
        self, terms: Sequence[str], where: str, params: Sequence[object], order: str, count: int
    ) -> list[Memory]:
        # Only (seq, score) go through the sorter; full rows are read for the winners only.
        rows = await self._rows(keyword_sql("m.seq", where, order), (self.dialect.keywords(terms), *params, count))
        return await _by_seq(self._db, [(r["seq"], r["score"]) for r in rows])

    # -- knowledge's vectors -----------------------------------------------------------------------

    def lock_shared_knowledge(self) -> AbstractAsyncContextManager[None]:
        """``async with store.lock_shared_knowledge():`` a turn at writing the shared scope.

        Agents take turns there (plugins/knowledge), so a shared document is stored and embedded
        once and not by two agents at the same time. Shared by every store of the database.
        """
        return self._db.shared_knowledge_lock

    def _without_vector(self, dim: int) -> tuple[str, str, Sequence[object]]:
        return "", check_dimension(dim).absent(), ()

    async def set_knowledge_vectors(self, vectors: Sequence[tuple[str, Sequence[float]]]) -> int:
        """Store each fragment's vector in the column of its length; returns how many were stored.

        Only fragments of this agent's scope or the shared one are touched; a fragment deleted
        meanwhile is skipped. Raises ValueError for a vector of an unsupported length.

        Lengths without a column of their own share one: a fragment keeps one vector of those
        lengths, the last stored (agents sharing knowledge with two such models take turns).
        """
        if not vectors:
            return 0
        columns = [check_dimension(len(vector)).name for _, vector in vectors]
        now = now_ms()
        # Packing 1536 floats takes ~35 µs: off the loop when there are many.
        packed = await asyncio.to_thread(_pack, vectors) if len(vectors) > ENCODE_INLINE else _pack(vectors)
        encoded: dict[str, list[tuple[str, str, bytes, int, str]]] = {}
        for (memory_id, _), column, blob in zip(vectors, columns, packed, strict=True):
            encoded.setdefault(column, []).append((new_id(), memory_id, blob, now, memory_id))
        scopes = self.knowledge_scopes

        def write(conn: Connection) -> int:
            stored = 0
            for column, rows in encoded.items():
                before = conn.total_changes
                conn.executemany(
                    f"INSERT INTO embeddings (id, memory_id, {column}, created_at) SELECT ?, ?, ?, ? "
                    "WHERE EXISTS (SELECT 1 FROM memories WHERE id = ? AND type = ? AND agent_id IN (?, ?)) "
                    f"ON CONFLICT(memory_id) DO UPDATE SET {column} = excluded.{column}",
                    [(*row, FRAGMENTS, *scopes) for row in rows],
                )
                stored += conn.total_changes - before
            return stored

        return await self._db.write(write, tables=("embeddings",))

    async def _nearest_fragments(
        self, embedding: Sequence[float], dim: int, count: int, threshold: float | None
    ) -> list[Memory]:
        column = check_dimension(dim)
        rows = await self._db.fetchall(
            f"SELECT m.seq, 1 - vec_distance_cosine(e.{column.name}, ?) AS similarity "
            "FROM memories m JOIN embeddings e ON e.memory_id = m.id "
            f"WHERE m.agent_id IN (?, ?) AND m.type = ? AND {column.present()} "
            "ORDER BY similarity DESC, m.seq LIMIT ?",
            (encode_vector(embedding, dim), *self.knowledge_scopes, FRAGMENTS, count),
        )
        return await _by_seq(self._db, nearest_hits(rows, threshold))


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


async def _by_seq(db: Database, hits: list[tuple[int, float]], column: VectorColumn | None = None) -> list[Memory]:
    """The memories of search ``hits`` (seq, score) in their order, with their vector of ``column``."""
    if not hits:
        return []
    source = " FROM memories m"
    if column:
        source = f", {column.value()} AS embedding{source} LEFT JOIN embeddings e ON e.memory_id = m.id"
    rows = await db.fetchall(
        f"SELECT {MEMORY_COLUMNS}{source} WHERE m.seq IN (SELECT value FROM json_each(?))",
        (json.dumps([seq for seq, _ in hits]),),
    )
    by_seq = {r["seq"]: r for r in rows}
    # A row deleted between the two reads is simply left out.
    return [
        row_to_memory(
            by_seq[seq], db.payloads, embedding=by_seq[seq]["embedding"] if column else None, similarity=score
        )
        for seq, score in hits
        if seq in by_seq
    ]


def _pack(vectors: Sequence[tuple[str, Sequence[float]]]) -> list[bytes]:
    """Each vector as :func:`~bot.store._vectors.encode_vector` stores it, in the column of its length."""
    return [encode_vector(vector, len(vector)) for _, vector in vectors]

"""Searching memories: exact vector search (sqlite-vec) and keyword search (FTS5, BM25)."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING

from bot.kernel.types import Memory, now_ms
from bot.store._connect import Connection, SQLValue, search_text
from bot.store._dialect import SQLITE, Step
from bot.store._inspection import listing_filter
from bot.store._knowledge import ENCODE_INLINE, FRAGMENTS, KnowledgeScopes
from bot.store._memories import MEMORY_COLUMNS, MemoriesMixin, MemoryFilter, nearest_hits
from bot.store._rows import Row, row_to_memory
from bot.store._scoped import AgentScoped, new_id, validate_count
from bot.store._vectors import VectorColumn, check_dimension, encode_vector

if TYPE_CHECKING:  # Database builds AgentStore, which builds on this module
    from bot.store._database import Database

__all__ = ["KnowledgeSearchMixin", "SearchMixin", "fts_query", "fts_terms"]

_log = logging.getLogger(__name__)

#: Default number of search results.
DEFAULT_SEARCH_COUNT = 10
# Keyword queries keep at most this many distinct words; longer texts add noise, not recall.
_MAX_QUERY_TERMS = 32
_WORD = re.compile(r"\w+")


def fts_terms(text: str) -> list[str]:
    """The words a keyword search looks for in user text: runs of word characters, lowercased
    and without accents as the index holds them (``troupe_search_text``), each once, at most 32.
    Nothing else survives, so no query syntax can."""
    folded = str(search_text(text))
    return list(dict.fromkeys(w.lower() for w in _WORD.findall(folded)))[:_MAX_QUERY_TERMS]


def fts_query(text: str) -> str | None:
    """An FTS5 MATCH expression for user text: its words (:func:`fts_terms`), each quoted, joined with OR.

    Quotes, ``-``, ``*``, ``AND``/``NOT`` (quoted, they are plain words), ``NEAR`` and parentheses
    in user text can never form FTS5 syntax. None if no words.
    """
    terms = fts_terms(text)
    if not terms:
        return None
    return " OR ".join(f'"{t}"' for t in terms)


class SearchMixin(MemoriesMixin, AgentScoped):
    """Vector and keyword search over this agent's memories of one table; where SQLite keeps
    vectors (the hooks of :class:`MemoriesMixin`): one ``embeddings`` column per length."""

    __slots__ = ()

    # -- the hooks of MemoriesMixin ------------------------------------------------------------------

    async def ensure_embedding_dimension(self, dim: int) -> None:
        """Make ``dim`` this agent's active embedding dimension, persisted in the file (see
        :meth:`MemoriesMixin.ensure_embedding_dimension`)."""
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

    def _vector(self, values: Sequence[float], dim: int) -> bytes:
        return encode_vector(values, dim)

    def _store_vector(self, dim: int, *, replace: bool) -> str:
        name = check_dimension(dim).name
        sql = f"INSERT INTO embeddings (id, memory_id, {name}, created_at) VALUES (?, ?, ?, ?)"
        return f"{sql} ON CONFLICT(memory_id) DO UPDATE SET {name} = excluded.{name}" if replace else sql

    async def _vector_join(self) -> tuple[str, Sequence[object]]:
        _, column = await self._active_column()
        return f", {column.value()} AS embedding FROM memories m LEFT JOIN embeddings e ON e.memory_id = m.id", ()

    def _read_vector(self, value: object) -> bytes | None:
        return value if isinstance(value, bytes) else None

    def _nearest_step(self, vector: object, dim: int, where: MemoryFilter) -> Step:
        sql, params = self._nearest_sql(check_dimension(dim), where, 1)
        return Step(sql, [vector, *params])

    def _hits(self, rows: Sequence[Row]) -> list[tuple[int, float]]:
        return nearest_hits([(r["seq"], r["similarity"]) for r in rows])

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

    # -- search ------------------------------------------------------------------------------------

    def _search_filter(
        self, table: str, unique: bool | None, room_id: str | None, world_id: str | None, entity_id: str | None
    ) -> MemoryFilter:
        return MemoryFilter(self._agent_id, table).fields(room_id, world_id, entity_id).unique(unique)

    async def _nearest(
        self, query: bytes, column: VectorColumn, where: MemoryFilter, *, count: int, threshold: float | None = None
    ) -> list[tuple[int, float]]:
        """(seq, similarity) of the best ``count`` rows, read on the reader."""
        sql, params = self._nearest_sql(column, where, count)
        return nearest_hits(await self._db.fetchall(sql, [query, *params]), threshold)

    async def search_memories(
        self,
        embedding: Sequence[float],
        table: str,
        *,
        match_threshold: float | None = None,
        count: int = DEFAULT_SEARCH_COUNT,
        unique: bool | None = None,
        room_id: str | None = None,
        world_id: str | None = None,
        entity_id: str | None = None,
    ) -> list[Memory]:
        """This agent's memories of ``table`` most similar to ``embedding``, best first, with
        ``similarity`` (cosine, -1..1) and ``embedding`` set.

        Exact: every row passing the filters is compared (sqlite-vec's ``vec_distance_cosine``).
        ``match_threshold`` of 0 or None means none. Memories without a vector in the active
        dimension are never returned. Raises EmbeddingDimensionError for a wrong-length query.
        """
        validate_count(count)
        dim, column = await self._active_column()
        query = encode_vector(embedding, dim)
        where = self._search_filter(table, unique, room_id, world_id, entity_id)
        hits = await self._nearest(query, column, where, count=count, threshold=match_threshold)
        return await _by_seq(self._db, hits, column)

    async def search_memories_by_text(
        self,
        query: str,
        table: str,
        *,
        count: int = DEFAULT_SEARCH_COUNT,
        unique: bool | None = None,
        room_id: str | None = None,
        world_id: str | None = None,
        entity_id: str | None = None,
    ) -> list[Memory]:
        """This agent's memories of ``table`` whose ``content.text`` matches words of ``query``,
        best BM25 rank first (any word matches; more and rarer words rank higher).

        ``similarity`` carries the BM25 relevance (higher is better, not a cosine); embeddings are
        not loaded. User text is never parsed as FTS5 syntax, so it cannot raise; a query without
        words returns [].
        """
        validate_count(count)
        match = fts_query(query)
        if match is None or count == 0:
            return []
        where = self._search_filter(table, unique, room_id, world_id, entity_id)
        rows = await self._db.fetchall(
            "SELECT m.seq, -bm25(memories_fts) AS score FROM memories_fts "
            "JOIN memories m ON m.seq = memories_fts.rowid "
            f"WHERE memories_fts MATCH ? AND {where.where} "
            "ORDER BY bm25(memories_fts), m.created_at DESC, m.seq DESC LIMIT ?",
            (match, *where.params, count),
        )
        return await _by_seq(self._db, [(r[0], r[1]) for r in rows])

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
        clauses, params = listing_filter(self._agent_id, SQLITE.id_list, tables, room_id, entity_id)
        rows = await self._rows(
            f"SELECT {MEMORY_COLUMNS}, -bm25(memories_fts) AS score FROM memories_fts "
            "JOIN memories m ON m.seq = memories_fts.rowid "
            f"WHERE memories_fts MATCH ? AND {' AND '.join(clauses)} "
            "ORDER BY bm25(memories_fts), m.created_at DESC, m.seq DESC LIMIT ?",
            (match, *params, count),
        )
        return [row_to_memory(r, similarity=r["score"]) for r in rows]


class KnowledgeSearchMixin(KnowledgeScopes, AgentScoped):
    """Knowledge fragments' vectors (one column per length) and their searches: by vector and by
    keywords (see ``_knowledge`` for the rest of knowledge, shared by both backends)."""

    __slots__ = ()

    def lock_shared_knowledge(self) -> AbstractAsyncContextManager[None]:
        """``async with store.lock_shared_knowledge():`` a turn at writing the shared scope.

        Agents take turns there (plugins/knowledge), so a shared document is stored and embedded
        once and not by two agents at the same time. Shared by every store of the database.
        """
        return self._db.shared_knowledge_lock

    async def knowledge_fragments_without_vectors(
        self, dim: int, *, shared: bool = False, limit: int | None = None
    ) -> list[str]:
        """Ids of the fragments of this agent's scope (or the shared one) with no vector of length
        ``dim``, in the order they were stored (at most ``limit``). One pass over the scope's
        fragments: fetch the texts with :meth:`get_knowledge_texts` a batch at a time."""
        column = check_dimension(dim)
        validate_count(limit, "limit")
        rows = await self._db.fetchall(
            f"SELECT m.id FROM memories m LEFT JOIN embeddings e ON e.memory_id = m.id "
            f"WHERE m.agent_id = ? AND m.type = ? AND {column.absent()} ORDER BY m.seq LIMIT ?",
            (self._scope(shared), FRAGMENTS, -1 if limit is None else limit),
        )
        return [r[0] for r in rows]

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

    async def search_knowledge(
        self, embedding: Sequence[float], *, count: int = 20, match_threshold: float | None = None
    ) -> list[Memory]:
        """Fragments (own and shared) nearest to ``embedding``, best first, with ``similarity``
        (cosine) set; those below ``match_threshold`` left out. Exact, like ``search_memories``.

        Raises ValueError for a query of an unsupported length.
        """
        validate_count(count)
        dim = len(embedding)
        column = check_dimension(dim)
        if count == 0:
            return []
        rows = await self._db.fetchall(
            f"SELECT m.seq, 1 - vec_distance_cosine(e.{column.name}, ?) AS similarity "
            "FROM memories m JOIN embeddings e ON e.memory_id = m.id "
            f"WHERE m.agent_id IN (?, ?) AND m.type = ? AND {column.present()} "
            "ORDER BY similarity DESC, m.seq LIMIT ?",
            (encode_vector(embedding, dim), *self.knowledge_scopes, FRAGMENTS, count),
        )
        return await _by_seq(self._db, nearest_hits(rows, match_threshold))

    async def search_knowledge_by_text(self, query: str, *, count: int = 20) -> list[Memory]:
        """Fragments (own and shared) matching words of ``query``, best BM25 rank first, with
        ``similarity`` set to the BM25 relevance (higher is better). User text is never FTS5 syntax."""
        validate_count(count)
        match = fts_query(query)
        if match is None or count == 0:
            return []
        rows = await self._db.fetchall(
            "SELECT m.seq, -bm25(memories_fts) AS score FROM memories_fts "
            "JOIN memories m ON m.seq = memories_fts.rowid "
            "WHERE memories_fts MATCH ? AND m.agent_id IN (?, ?) AND m.type = ? "
            "ORDER BY bm25(memories_fts), m.seq LIMIT ?",
            (match, *self.knowledge_scopes, FRAGMENTS, count),
        )
        return await _by_seq(self._db, [(r[0], r[1]) for r in rows])


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
        row_to_memory(by_seq[seq], embedding=by_seq[seq]["embedding"] if column else None, similarity=score)
        for seq, score in hits
        if seq in by_seq
    ]


def _pack(vectors: Sequence[tuple[str, Sequence[float]]]) -> list[bytes]:
    """Each vector as :func:`~bot.store._vectors.encode_vector` stores it, in the column of its length."""
    return [encode_vector(vector, len(vector)) for _, vector in vectors]

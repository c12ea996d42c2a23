"""Searching memories: exact vector search (sqlite-vec) and keyword search (FTS5, BM25)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from bot.store._connect import search_text
from bot.store._dialect import SQLITE
from bot.store._inspection import listing_filter
from bot.store._memories import MEMORY_COLUMNS, MemoriesMixin, MemoryFilter, nearest_hits
from bot.store._rows import row_to_memory
from bot.store._scoped import validate_count
from bot.store._vectors import VectorColumn, encode_vector
from bot.types import Memory

__all__ = ["SearchMixin", "fts_query", "fts_terms"]

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


class SearchMixin(MemoriesMixin):
    """Vector and keyword search over this agent's memories of one table."""

    __slots__ = ()

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
        return await self._memories_by_seq(hits, column)

    async def _memories_by_seq(self, hits: list[tuple[int, float]], column: VectorColumn | None) -> list[Memory]:
        if not hits:
            return []
        vector = f", {column.value()} AS embedding" if column else ", NULL AS embedding"
        rows = await self._db.fetchall(
            f"SELECT {MEMORY_COLUMNS}{vector} FROM memories m LEFT JOIN embeddings e ON e.memory_id = m.id "
            "WHERE m.seq IN (SELECT value FROM json_each(?))",
            (json.dumps([seq for seq, _ in hits]),),
        )
        by_seq = {r["seq"]: r for r in rows}
        # A row deleted between the two reads is simply left out.
        return [
            row_to_memory(by_seq[seq], embedding=by_seq[seq]["embedding"], similarity=score)
            for seq, score in hits
            if seq in by_seq
        ]

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
        return await self._memories_by_seq([(r[0], r[1]) for r in rows], None)

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

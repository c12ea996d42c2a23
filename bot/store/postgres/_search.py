"""Searching memories on PostgreSQL: vector search (pgvector) and keyword search (full text).

**Vectors.** ``embeddings.embedding`` is one ``vector`` column of any dimension, with the
dimension in ``dim``, and one partial HNSW cosine index per supported dimension on the column
cast to it (``(embedding::vector(1536)) vector_cosine_ops WHERE dim = 1536``; pgvector 0.6
indexes up to 2,000 dimensions, so 3072 has none). Searches are exact for now, as SQLite's are:
the agent's memories of the table pass the filters through the btree indexes of ``memories``,
and the cosine distance of each of their vectors in the active dimension is computed and
sorted. The distance is written on the uncast column, so the planner cannot answer the query
from an HNSW index. That is deliberate: pgvector 0.6 has no iterative index scan, and an HNSW
scan filtered by agent, table or room afterwards returns fewer than ``count`` rows whenever the
nearest ``ef_search`` vectors of the whole troupe are mostly someone else's. Exact search
returns what SQLite returns, ``count`` rows when ``count`` exist, at a cost that grows with the
size of the agent's table; the indexes are there for an approximate path on large tables
(index scan with enough candidates, exact search when fewer than ``count`` survive the
filters), to be chosen on measured recall and latency, not assumed.

**Keywords.** ``memories.text_search`` is a stored ``tsvector`` of ``content.text`` (English
stems, no stop words, diacritics folded, ASCII punctuation as spaces: see the schema) with a GIN
index. A query keeps only the words of the user's text (:func:`~bot.store._search.fts_terms`,
as SQLite), each quoted as one tsquery operand and ORed, so quotes, operators and parentheses
cannot form tsquery syntax and nothing raises. Ranking is ``ts_rank``: texts with more of the
query's words (and more occurrences) rank first, as with BM25, but a word's rarity in the
table does not count, where BM25 weighs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.store._memories import MEMORY_COLUMNS
from bot.store._rows import row_to_memory
from bot.store._scoped import validate_count
from bot.store._search import DEFAULT_SEARCH_COUNT, fts_terms
from bot.store.postgres._memories import PgMemoriesMixin, PgMemoryFilter, pg_vector, similarity_hits, vector_list
from bot.types import Memory

__all__ = ["KEYWORD_QUERY", "PgSearchMixin", "keyword_query"]

#: SQL: the tsquery for a :func:`keyword_query` parameter: each word folded as the stored text
#: is (``troupe_search_text``), quoted as one operand, ORed. The words are runs of word characters,
#: so no quote ends early; a word that folds to nothing ("_") matches nothing.
KEYWORD_QUERY = (
    "to_tsquery('troupe_text', "
    "(SELECT string_agg(quote_literal(troupe_search_text(w)), ' | ') FROM unnest(%s::text[]) w))"
)


def keyword_query(text: str) -> list[str] | None:
    """The words of user text a keyword search looks for (the parameter of :data:`KEYWORD_QUERY`),
    as SQLite's (:func:`~bot.store._search.fts_terms`); None if it has none."""
    return fts_terms(text) or None


class PgSearchMixin(PgMemoriesMixin):
    """Vector and keyword search over this agent's memories of one table."""

    __slots__ = ()

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
        ``similarity`` (cosine, -1..1) and ``embedding`` set; exact (see the module).

        ``match_threshold`` of 0 or None means none. Memories without a vector in the active
        dimension are never returned. Raises EmbeddingDimensionError for a wrong-length query.
        """
        validate_count(count)
        where = PgMemoryFilter(self._agent_id, table).fields(room_id, world_id, entity_id).unique(unique)
        dim = await self.get_embedding_dimension()
        query = pg_vector(embedding, dim)
        rows = await self._db.fetchall(self._nearest_sql(where, count), (query, *where.params, dim, count))
        return await self._memories_by_seq(similarity_hits(rows, match_threshold), dim)

    async def _memories_by_seq(self, hits: list[tuple[int, float]], dim: int | None) -> list[Memory]:
        """The memories of ``hits`` in their order, with their vectors of ``dim`` (None: none)."""
        if not hits:
            return []
        seqs = [seq for seq, _ in hits]
        params: list[Any]
        if dim is None:
            sql, params = f"SELECT {MEMORY_COLUMNS}, NULL AS embedding FROM memories m WHERE m.seq = ANY(%s)", [seqs]
        else:
            sql = (
                f"SELECT {MEMORY_COLUMNS}, e.embedding FROM memories m "
                "LEFT JOIN embeddings e ON e.memory_id = m.id AND e.dim = %s WHERE m.seq = ANY(%s)"
            )
            params = [dim, seqs]
        by_seq = {r["seq"]: r for r in await self._db.fetchall(sql, params)}
        # A row deleted between the two reads is simply left out.
        return [
            row_to_memory(by_seq[seq], embedding=vector_list(by_seq[seq]["embedding"]), similarity=score)
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
        """This agent's memories of ``table`` whose ``content.text`` has words of ``query`` (any
        word matches), best ``ts_rank`` first; ``similarity`` carries that rank (higher is better,
        not a cosine), embeddings are not loaded. User text never forms tsquery syntax, so it
        cannot raise; a query without words returns []."""
        validate_count(count)
        terms = keyword_query(query)
        if terms is None or count == 0:
            return []
        where = PgMemoryFilter(self._agent_id, table).fields(room_id, world_id, entity_id).unique(unique)
        rows = await self._db.fetchall(
            f"SELECT m.seq, ts_rank(m.text_search, q) AS score FROM memories m, {KEYWORD_QUERY} q "
            f"WHERE m.text_search @@ q AND {where.where} "
            "ORDER BY score DESC, m.created_at DESC, m.seq DESC LIMIT %s",
            (terms, *where.params, count),
        )
        return await self._memories_by_seq([(r["seq"], r["score"]) for r in rows], None)

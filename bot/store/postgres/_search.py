"""Searching memories on PostgreSQL: vector search (pgvector) and keyword search (full text).

**Vectors.** ``embeddings.embedding`` is one ``vector`` column of any dimension, with the
dimension in ``dim``. Searches are exact, as SQLite's are: the agent's memories of the table
pass the filters through the btree indexes of ``memories``, and the cosine distance of each of
their vectors in the active dimension is computed and sorted. They return what SQLite returns,
``count`` rows when ``count`` exist, at a cost that grows with the size of the agent's table.

Why no HNSW index yet. pgvector 0.6 has no iterative index scan: an HNSW scan yields the
nearest ``hnsw.ef_search`` vectors of the whole table, and filtering them by agent, table or
room afterwards leaves fewer than ``count`` (none at all, when the nearest are all another
agent's: tests/bot/store/postgres pins that case, which an index-ordered query fails). And an
index costs every write: here 2,000 inserts of 1536-dim vectors took 21 s with an HNSW index
against 0.4 s without. The index comes with the path that uses it, measured for recall and
latency (issue 17's benchmark), as a partial index per dimension on the column cast to it::

    CREATE INDEX ON embeddings USING hnsw ((embedding::vector(1536)) vector_cosine_ops)
        WHERE dim = 1536;  -- pgvector 0.6 indexes up to 2,000 dimensions: not 3072

queried with ``ORDER BY e.embedding::vector(1536) <=> %s`` where the agent's candidate set is
large, and exact search where it is small or fewer than ``count`` survive the filters. Until
then the distance (``_nearest_sql``) is written on the uncast column, which no such index could answer.

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
        # The winners' rows come with the ranking: a top-N sort keeps only ``count`` of them.
        rows = await self._db.fetchall(
            self._nearest_sql(where, f"{MEMORY_COLUMNS}, e.embedding"), (query, *where.params, dim, count)
        )
        hits = dict(similarity_hits(rows, match_threshold))
        return [
            row_to_memory(r, embedding=vector_list(r["embedding"]), similarity=hits[r["seq"]])
            for r in rows
            if r["seq"] in hits
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
            f"SELECT {MEMORY_COLUMNS}, ts_rank(m.text_search, q) AS score FROM memories m, {KEYWORD_QUERY} q "
            f"WHERE m.text_search @@ q AND {where.where} "
            "ORDER BY score DESC, m.created_at DESC, m.seq DESC LIMIT %s",
            (terms, *where.params, count),
        )
        return [row_to_memory(r, similarity=r["score"]) for r in rows]

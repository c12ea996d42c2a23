"""Searching memories on PostgreSQL: vector search (pgvector) and keyword search (full text).

**Vectors.** ``embeddings.embedding`` is one ``vector`` column of any dimension, with the
dimension in ``dim``, and each row carries its memory's agent and table (migration 4). A search
first looks for the agent's HNSW index of the table and dimension (``_vector_index``): a partial
index holding exactly those vectors, so an index scan yields the agent's own nearest ones
whatever other agents hold. It asks it for ``ef_search`` candidates (10 × ``count``, at least 100,
``SET LOCAL``), keeps those passing the room, world, entity and uniqueness filters and returns the
best ``count``. When the filters leave fewer than ``count`` of them (a small room in a big
table), it searches exactly instead, so ``count`` rows come back whenever ``count`` exist; a
``match_threshold`` is applied to the best ``count`` afterwards, as exact search applies it.

Exact search is the other path: the agent's memories of the table pass the filters through the
btree indexes of ``memories``, and the cosine distance of each of their vectors is computed and
sorted (on the uncast column, which no index answers). An agent without an index is searched so;
when such a search compared ``threshold`` vectors or more, the index is built in the background
(the search does not wait). Measured with 1536 dims (tests/bench/bench_vector_search.py, README):
exact search grows with the agent's table (p50 11 ms at 1,000 vectors, 25 ms at 2,000, 124 ms
at 10,000, 1.5 s at 100,000 on two busy cores), the index far less (6, 7, 21 and 14 ms, recall@10
0.98 to 1.0); an index makes writes slower (~7 times here), so tables under the threshold
(1,000 vectors by default) have none.

Why a partial index per agent and not one index or LIST partitions. pgvector 0.6 has no
iterative index scan: an index over every agent's vectors yields the ``ef_search`` nearest of the
whole table, and filtering them by agent afterwards leaves fewer than ``count``, none at all when
the nearest are all another agent's (tests/bot/store/postgres pins that case). Partitioning
``embeddings`` by agent (not built or measured) would give the same per-agent graphs, but needs a partition made per agent
before its first vector, the agent in every key of the table, and indexes on agents that hold a
handful of vectors; partial indexes cost nothing until an agent's table is big enough to need
one. pgvector 0.6 indexes at most 2,000 dimensions: 3072-dim vectors are always searched exactly.

**Keywords** (the SQL is the dialect's). ``memories.text_search`` is a stored ``tsvector`` of
``content.text`` (English stems, no stop words, diacritics folded, ASCII punctuation as spaces:
see the schema) with a GIN index. A query keeps only the words of the user's text
(:func:`~bot.store._search.fts_terms`, as SQLite), each quoted as one tsquery operand and ORed,
so quotes, operators and parentheses cannot form tsquery syntax and nothing raises. Ranking is ``ts_rank``: texts with more of the
query's words (and more occurrences) rank first, as with BM25, but a word's rarity in the
table does not count, where BM25 weighs it.
"""

from __future__ import annotations

from bot.kernel.types import Memory
from bot.store._dialect import POSTGRES
from bot.store._memories import MEMORY_COLUMNS, MemoryFilter
from bot.store._rows import row_to_memory
from bot.store._search import SearchMixin
from bot.store.postgres._database import Row
from bot.store.postgres._memories import PgMemoriesMixin, similarity_hits, vector_list
from bot.store.postgres._vector_index import IndexKey

__all__ = ["MAX_EF_SEARCH", "PgSearchMixin", "ef_search"]

#: pgvector's largest ``hnsw.ef_search``: an index scan yields at most this many vectors, so a
#: search for more is exact.
MAX_EF_SEARCH = 1000


def ef_search(count: int) -> int:
    """Candidates an index scan yields for a search of ``count``: 10 times as many, at least 100.
    Measured at 100k vectors of 1536 dims in one agent's index (m 16, ef_construction 64):
    recall@10 was 0.906 at 40 (pgvector's default), 0.966 at 64, 0.981 at 100 and 0.995 at
    160; the scan took ~3.4, 5.5 and 8.6 ms at 64, 100 and 160 (10k vectors). More candidates
    also leave more after the filters."""
    return min(MAX_EF_SEARCH, max(100, 10 * count))


class PgSearchMixin(SearchMixin, PgMemoriesMixin):
    """Vector search over this agent's memories of one table: by its HNSW index, else exact."""

    __slots__ = ()

    async def _vector_search(
        self, table: str, query: object, dim: int, where: MemoryFilter, count: int, threshold: float | None
    ) -> list[Memory]:
        key = IndexKey(self._agent_id, table, dim)
        indexes = self._db.vector_indexes
        rows: list[Row] | None = None
        if 0 < count <= MAX_EF_SEARCH and indexes.is_ready(key):
            rows = await self._indexed(key, query, where, count)
            if len(rows) < count:  # the filters left fewer among the index's candidates
                rows = None
        if rows is None:
            # The winners' rows come with the ranking: a top-N sort keeps only ``count`` of them.
            async with self._db.session() as conn:
                cur = await conn.execute(
                    POSTGRES.render(
                        self._nearest_sql(where, f"{MEMORY_COLUMNS}, e.embedding, count(*) OVER () AS compared")
                    ),
                    (query, *where.params, dim, count),
                    binary=True,  # vectors as floats, not text
                )
                rows = await cur.fetchall()
            if rows:
                indexes.want(key, int(rows[0]["compared"]))
        hits = dict(similarity_hits(rows, threshold))
        return [
            row_to_memory(r, embedding=vector_list(r["embedding"]), similarity=hits[r["seq"]])
            for r in rows
            if r["seq"] in hits
        ]

    async def _indexed(self, key: IndexKey, query: object, where: MemoryFilter, count: int) -> list[Row]:
        """The best ``count`` rows passing ``where`` among the ``ef_search`` nearest vectors of
        ``key``'s index (fewer if the filters leave fewer)."""
        ef = ef_search(count)
        cast = key.cast()
        # One trip to the server: BEGIN, the setting, the query and COMMIT go together.
        async with self._db.session() as conn, conn.pipeline():
            async with conn.transaction():
                await conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef),))
                # Not prepared: each execution is planned with its values, which must match the
                # partial index's predicate for the planner to use it. The candidates come in the
                # index's order, ranked without reading their vectors: a 1536-dim vector lives
                # out of line (TOAST), and reading one costs more than the rest of a candidate.
                # Each candidate's memory is found by its key (OFFSET 0 keeps that lookup from
                # becoming a scan of all the agent's memories); only the winners' vectors are
                # read, to return them and their exact distance, as floats, not text.
                cur = await conn.execute(
                    POSTGRES.render(
                        "WITH c AS MATERIALIZED ("
                        "  SELECT n.id AS embedding_id, n.memory_id, row_number() OVER () AS rank FROM ("
                        f"    SELECT e.id, e.memory_id FROM embeddings e WHERE e.agent_id = ? AND e.type = ?"
                        f"    AND e.dim = {key.dim} ORDER BY {cast} <=> ? LIMIT ?) n), "
                        f"w AS (SELECT {MEMORY_COLUMNS}, c.embedding_id, c.rank FROM c "
                        "  CROSS JOIN LATERAL (SELECT * FROM memories WHERE id = c.memory_id OFFSET 0) m "
                        f"  WHERE {where.where} ORDER BY c.rank LIMIT ?) "
                        "SELECT w.*, e.embedding, e.embedding <=> ? AS distance FROM w "
                        "JOIN embeddings e ON e.id = w.embedding_id ORDER BY distance, w.created_at DESC, w.seq DESC"
                    ),
                    (key.agent_id, key.table, query, ef, *where.params, count, query),
                    prepare=False,
                    binary=True,
                )
            return await cur.fetchall()

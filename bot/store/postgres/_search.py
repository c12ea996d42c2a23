"""Where PostgreSQL keeps vectors and how it searches them: the hooks of ``SearchMixin``.

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
(the search does not wait). Measured with 1536 dims (tests/bench/bench_vector_search.py, docs/performance.md):
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
so quotes, operators and parentheses cannot form tsquery syntax and nothing raises. Ranking is
``ts_rank``: texts with more of the query's words (and more occurrences) rank first, as with
BM25, but a word's rarity in the table does not count, where BM25 weighs it.

**Knowledge.** Fragments' vectors are rows of ``embeddings`` per memory and length, so agents
of different embedding models each find and fill their own length, as on SQLite; their
searches are exact, among the vectors of the query's length. The shared scope is shared by
several daemons, so a turn at writing it is a PostgreSQL advisory lock as well as the
process's own lock.

**The active dimension** lives in ``meta`` (the key SQLite uses) and is read by every call that
needs it, inside the statement where it can be: an agent served by this daemon now may have
been served by another one a minute ago, so a copy kept in this process could be stale.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import numpy as np

from bot.kernel.types import Memory, now_ms
from bot.store._dialect import POSTGRES, Step
from bot.store._knowledge import ENCODE_INLINE, FRAGMENTS
from bot.store._memories import MEMORY_COLUMNS, MemoryFilter, nearest_hits
from bot.store._rows import Row, row_to_memory
from bot.store._scoped import new_id
from bot.store._search import SearchMixin
from bot.store._vectors import DEFAULT_EMBEDDING_DIMENSION, check_dimension, dimension_key, encode_vector
from bot.store.postgres._database import Row as PgRow
from bot.store.postgres._scoped import PgScoped
from bot.store.postgres._vector_index import IndexKey

__all__ = ["MAX_EF_SEARCH", "PgSearchMixin", "ef_search", "pg_vector", "similarity_hits", "vector_list"]

_log = logging.getLogger(__name__)

#: A vector as the pgvector adapter sends it (float32, cleaned as SQLite's are).
PgVector = np.ndarray[Any, np.dtype[np.float32]]

# The agent's active dimension inside a statement (parameters: the meta key, the default).
_ACTIVE_DIM = "coalesce((SELECT value::integer FROM meta WHERE key = ?), ?)"
# A memory another daemon wrote first (the same message id) keeps its row and vector.
_INSERT_VECTOR = "INSERT INTO embeddings (id, memory_id, embedding, created_at) VALUES (?, ?, ?, ?)"
_CREATE_VECTOR = f"{_INSERT_VECTOR} ON CONFLICT (memory_id, dim) DO NOTHING"
_UPSERT_VECTOR = f"{_INSERT_VECTOR} ON CONFLICT (memory_id, dim) DO UPDATE SET embedding = excluded.embedding"


def pg_vector(values: Sequence[float], dim: int) -> PgVector:
    """``values`` cleaned and checked as SQLite stores them (:func:`encode_vector`), for pgvector.

    Raises EmbeddingDimensionError for a wrong length.
    """
    return np.frombuffer(encode_vector(values, dim), dtype="<f4")


def vector_list(value: Any) -> list[float] | None:
    """A pgvector value read back (``pgvector.Vector``) as the floats of its float32 elements."""
    return None if value is None else list(value.to_list())


def similarity_hits(rows: Sequence[Row], threshold: float | None = None) -> list[tuple[int, float]]:
    """(seq, similarity) of nearest-neighbour rows (``seq``, ``distance``), as :func:`nearest_hits`."""
    pairs = [(r["seq"], None if math.isnan(r["distance"]) else 1.0 - r["distance"]) for r in rows]
    return nearest_hits(pairs, threshold)


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


#: The advisory lock (one bigint) of the turn at the shared-knowledge scope, troupe-wide: "troupeSK".
SHARED_KNOWLEDGE_LOCK = int.from_bytes(b"troupeSK", "big", signed=True)


class _TemplateFilter(MemoryFilter):
    __slots__ = ()
    UNIQUE = "m.is_unique"


class PgSearchMixin(SearchMixin, PgScoped):
    """The hooks of :class:`SearchMixin` and :class:`~bot.store._memories.MemoriesMixin` on
    PostgreSQL, and the troupe-wide turn at writing the shared knowledge scope."""

    __slots__ = ()

    memory_filter = _TemplateFilter

    # -- memories' vectors -------------------------------------------------------------------------

    async def ensure_embedding_dimension(self, dim: int) -> None:
        """Make ``dim`` this agent's active embedding dimension, stored in ``meta`` (see
        :meth:`MemoriesMixin.ensure_embedding_dimension`)."""
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
        row = await self._row(f"SELECT {_ACTIVE_DIM} AS dim", self._dim_params())
        return int(row["dim"]) if row else DEFAULT_EMBEDDING_DIMENSION

    def _dim_params(self) -> tuple[str, int]:
        return dimension_key(self._agent_id), DEFAULT_EMBEDDING_DIMENSION

    def _vector(self, values: Sequence[float], dim: int) -> PgVector:
        return pg_vector(values, dim)

    def _store_vector(self, dim: int, *, replace: bool) -> str:
        return _UPSERT_VECTOR if replace else _CREATE_VECTOR

    async def _vector_join(self) -> tuple[str, Sequence[object]]:
        join = f", e.embedding FROM memories m LEFT JOIN embeddings e ON e.memory_id = m.id AND e.dim = {_ACTIVE_DIM}"
        return join, self._dim_params()

    def _read_vector(self, value: object) -> list[float] | None:
        return vector_list(value)

    def _nearest_step(self, vector: object, dim: int, where: MemoryFilter) -> Step:
        return Step(self._nearest_sql(where), (vector, *where.params, dim, 1))

    def _hits(self, rows: Sequence[Row]) -> list[tuple[int, float]]:
        return similarity_hits(rows)

    @staticmethod
    def _nearest_sql(where: MemoryFilter, columns: str = "m.seq") -> str:
        """Exact search (a template): ``columns`` and the cosine ``distance`` of every pre-filtered
        vector of the dimension, best first (parameters: the query, the filter's, the dimension, the count).

        The distance is on the column itself, not on a cast to one dimension as an HNSW index
        would be, so the planner never answers it from an index (see ``_search``). A zero
        vector's distance is NaN, which sorts after every number, as SQLite's NULL similarity does.
        """
        return (
            f"SELECT {columns}, e.embedding <=> ? AS distance FROM memories m "
            f"JOIN embeddings e ON e.memory_id = m.id WHERE {where.where} AND e.dim = ? "
            "ORDER BY distance, m.created_at DESC, m.seq DESC LIMIT ?"
        )

    async def _vector_search(
        self, table: str, query: object, dim: int, where: MemoryFilter, count: int, threshold: float | None
    ) -> list[Memory]:
        key = IndexKey(self._agent_id, table, dim)
        indexes = self._db.vector_indexes
        rows: list[PgRow] | None = None
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
            row_to_memory(r, self._payloads, embedding=vector_list(r["embedding"]), similarity=hits[r["seq"]])
            for r in rows
            if r["seq"] in hits
        ]

    async def _indexed(self, key: IndexKey, query: object, where: MemoryFilter, count: int) -> list[PgRow]:
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

    # -- knowledge's vectors -----------------------------------------------------------------------

    def lock_shared_knowledge(self) -> AbstractAsyncContextManager[None]:
        """``async with store.lock_shared_knowledge():`` a turn at writing the shared scope, across
        every daemon of the troupe.

        The process's lock first (agents of one daemon queue there, holding no connection), then
        a transaction-scoped advisory lock on a pooled connection kept for the block: PostgreSQL
        releases it when the block ends however it ends (error, cancellation, a lost connection),
        so a turn can never be left held. The connection idles in a transaction that has written
        nothing meanwhile; a server with ``idle_in_transaction_session_timeout`` shorter than an
        ingestion would end the turn early. The block's own queries take other connections of
        the pool, so it needs two at least (the default is six).
        """
        return self._shared_knowledge_turn()

    @asynccontextmanager
    async def _shared_knowledge_turn(self) -> AsyncIterator[None]:
        async with self._db.shared_knowledge_lock, self._db.transaction() as conn:
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (SHARED_KNOWLEDGE_LOCK,))
            yield

    # -- vectors -------------------------------------------------------------------------------

    def _without_vector(self, dim: int) -> tuple[str, str, Sequence[object]]:
        return " AND e.dim = ?", "e.memory_id IS NULL", (dim,)

    async def set_knowledge_vectors(self, vectors: Sequence[tuple[str, Sequence[float]]]) -> int:
        """Store each fragment's vector, beside its vectors of other lengths; how many were stored.

        Only fragments of this agent's scope or the shared one are touched; a fragment deleted
        meanwhile is skipped. Raises ValueError for a vector of an unsupported length.
        """
        if not vectors:
            return 0
        for _, vector in vectors:
            check_dimension(len(vector))
        now = now_ms()
        scopes = list(self.knowledge_scopes)
        # Cleaning 1536 floats takes ~35 µs: off the loop when there are many.
        cleaned = await asyncio.to_thread(_clean, vectors) if len(vectors) > ENCODE_INLINE else _clean(vectors)
        rows = [(new_id(), memory_id, vector, now, memory_id, FRAGMENTS, scopes) for memory_id, vector in cleaned]
        async with self._db.transaction() as conn, conn.cursor() as cur:
            await cur.executemany(
                "INSERT INTO embeddings (id, memory_id, embedding, created_at) SELECT %s, %s, %s, %s "
                # Locked as a foreign key is: a fragment another daemon is deleting is waited for
                # and then skipped, not a foreign-key failure.
                "WHERE EXISTS (SELECT 1 FROM memories WHERE id = %s AND type = %s AND agent_id = ANY(%s) FOR KEY SHARE) "
                "ON CONFLICT (memory_id, dim) DO UPDATE SET embedding = excluded.embedding",
                rows,
            )
            return max(cur.rowcount, 0)

    async def _nearest_fragments(
        self, embedding: Sequence[float], dim: int, count: int, threshold: float | None
    ) -> list[Memory]:
        # The winners' rows come with the ranking: a top-N sort keeps only ``count`` of them.
        rows = await self._db.fetchall(
            f"SELECT {MEMORY_COLUMNS}, e.embedding <=> %s AS distance FROM memories m "
            "JOIN embeddings e ON e.memory_id = m.id "
            "WHERE m.agent_id = ANY(%s) AND m.type = %s AND e.dim = %s ORDER BY distance, m.seq LIMIT %s",
            (pg_vector(embedding, dim), list(self.knowledge_scopes), FRAGMENTS, dim, count),
        )
        hits = dict(similarity_hits(rows, threshold))
        return [row_to_memory(r, self._payloads, similarity=hits[r["seq"]]) for r in rows if r["seq"] in hits]


def _clean(vectors: Sequence[tuple[str, Sequence[float]]]) -> list[tuple[str, PgVector]]:
    """Each vector as the store writes it (:func:`pg_vector`), in the column of its own length."""
    return [(memory_id, pg_vector(vector, len(vector))) for memory_id, vector in vectors]

"""Knowledge on PostgreSQL: its fragments' vectors and searches, and the turn at the shared scope.

Documents, fragments and their sources are both backends' (``bot/store/_knowledge.py``, which
explains the scopes). What differs: the shared scope is shared by several daemons, so a
turn at writing it (:meth:`PgKnowledgeSearchMixin.lock_shared_knowledge`) is a PostgreSQL advisory lock
as well as the process's own lock. Vectors are rows of ``embeddings`` per memory and length
(``dim``), so agents of different embedding models each find and fill their own length, as on
SQLite; searches are exact, among the vectors of the query's length.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from bot.kernel.types import Memory, now_ms
from bot.store._knowledge import ENCODE_INLINE, FRAGMENTS, KnowledgeScopes
from bot.store._memories import MEMORY_COLUMNS
from bot.store._rows import row_to_memory
from bot.store._scoped import new_id
from bot.store._vectors import check_dimension
from bot.store.postgres._memories import PgVector, pg_vector, similarity_hits
from bot.store.postgres._scoped import PgScoped

__all__ = ["PgKnowledgeSearchMixin"]

#: The advisory lock (one bigint) of the turn at the shared-knowledge scope, troupe-wide: "troupeSK".
SHARED_KNOWLEDGE_LOCK = int.from_bytes(b"troupeSK", "big", signed=True)


class PgKnowledgeSearchMixin(KnowledgeScopes, PgScoped):
    """Knowledge fragments' vectors (a row per length), and the troupe-wide turn at writing the
    shared scope: the hooks of :class:`~bot.store._search.SearchMixin` for knowledge."""

    __slots__ = ()

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
        return [row_to_memory(r, similarity=hits[r["seq"]]) for r in rows if r["seq"] in hits]


def _clean(vectors: Sequence[tuple[str, Sequence[float]]]) -> list[tuple[str, PgVector]]:
    """Each vector as the store writes it (:func:`pg_vector`), in the column of its own length."""
    return [(memory_id, pg_vector(vector, len(vector))) for memory_id, vector in vectors]

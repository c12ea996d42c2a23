"""Knowledge on PostgreSQL: documents, their fragments, their sources, and their searches.

As on SQLite (``bot/store/_knowledge.py``, which explains the scopes): documents and fragments
are ordinary memories of the agent's scope or of the shared one, and ``knowledge_sources``
records where each came from. What differs: the shared scope is shared by several daemons, so a
turn at writing it (:meth:`PgKnowledgeMixin.lock_shared_knowledge`) is a PostgreSQL advisory lock
as well as the process's own lock. Vectors are rows of ``embeddings`` per memory and length
(``dim``), so agents of different embedding models each find and fill their own length, as on
SQLite; searches are exact, among the vectors of the query's length.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Collection, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from bot.store._knowledge import (
    DOCUMENT_COLUMNS,
    DOCUMENTS,
    ENCODE_INLINE,
    FRAGMENTS,
    SHARED_NAME,
    SOURCE_COLUMNS,
    SOURCE_UPSERT,
    KnowledgeScopes,
    document_rows,
)
from bot.store._memories import MEMORY_COLUMNS
from bot.store._rows import row_to_memory
from bot.store._scoped import new_id, validate_count
from bot.store._values import KnowledgeDocument, KnowledgeSourceRecord
from bot.store._vectors import check_dimension
from bot.store.postgres._memories import PgVector, json_text, pg_vector, similarity_hits
from bot.store.postgres._scoped import PgScoped
from bot.store.postgres._search import KEYWORD_QUERY, keyword_query
from bot.types import Memory, now_ms

__all__ = ["PgKnowledgeMixin"]

#: The advisory lock (one bigint) of the turn at the shared-knowledge scope, troupe-wide: "troupeSK".
SHARED_KNOWLEDGE_LOCK = int.from_bytes(b"troupeSK", "big", signed=True)


class PgKnowledgeMixin(KnowledgeScopes, PgScoped):
    """Knowledge of this agent (and of the shared scope) in ``memories`` and ``knowledge_sources``."""

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

    # -- sources -------------------------------------------------------------------------------

    async def get_knowledge_sources(self, *, shared: bool = False) -> dict[str, KnowledgeSourceRecord]:
        """This agent's sources in its own scope (or its claims on the shared one), by source key;
        a source whose document is no longer stored is left out (see SQLite's)."""
        rows = await self._db.fetchall(
            "SELECT s.source, s.document_id, s.content_hash, s.size, s.mtime_ns FROM knowledge_sources s "
            "WHERE s.scope_id = %s AND s.owner_id = %s AND EXISTS ("
            "  SELECT 1 FROM memories m WHERE m.id = s.document_id AND m.agent_id = s.scope_id)",
            (self._scope(shared), self._agent_id),
        )
        return {
            r["source"]: KnowledgeSourceRecord(
                r["source"], r["document_id"], r["content_hash"], r["size"], r["mtime_ns"]
            )
            for r in rows
        }

    async def has_knowledge_document(self, document_id: str, *, shared: bool = False) -> bool:
        """Whether the document is stored in this agent's scope (or the shared one)."""
        row = await self._db.fetchone(
            "SELECT 1 FROM memories WHERE id = %s AND agent_id = %s AND type = %s",
            (document_id, self._scope(shared), DOCUMENTS),
        )
        return row is not None

    async def put_knowledge_document(
        self, document: KnowledgeDocument | None, source: KnowledgeSourceRecord, *, shared: bool = False
    ) -> None:
        """Record ``source`` and, if given, store ``document`` and its fragments (without vectors),
        in one transaction; a document or fragment already stored (same id) is left as it is."""
        scope = self._scope(shared)
        now = now_ms()
        async with self._db.transaction() as conn:
            if shared:
                await conn.execute(
                    "INSERT INTO agents (id, name, enabled) VALUES (%s, %s, false) ON CONFLICT (id) DO NOTHING",
                    (scope, SHARED_NAME),
                )
            if document is not None:
                async with conn.cursor() as cur:
                    await cur.executemany(
                        f"INSERT INTO memories ({DOCUMENT_COLUMNS}) VALUES (%s, %s, %s, %s::jsonb, %s, %s, true, %s::jsonb) "
                        "ON CONFLICT (id) DO NOTHING",
                        [
                            (id, kind, now, json_text(content), scope, scope, json_text(metadata))
                            for id, kind, content, metadata in document_rows(document, now)
                        ],
                    )
            await conn.execute(
                f"INSERT INTO knowledge_sources ({SOURCE_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
                f"{SOURCE_UPSERT}",
                self._source_row(scope, self._agent_id, source, now),
            )

    async def forget_knowledge_sources(self, sources: Collection[str], *, shared: bool = False) -> int:
        """Drop this agent's ``sources`` from its scope (or its claims on the shared one), and those
        whose document is gone; then delete every document of that scope no source refers to any
        more, with its fragments and vectors. One transaction; how many documents went."""
        scope = self._scope(shared)
        async with self._db.transaction() as conn:
            await conn.execute(
                "DELETE FROM knowledge_sources AS s WHERE s.scope_id = %s AND s.owner_id = %s "
                "AND (s.source = ANY(%s) OR NOT EXISTS ("
                "  SELECT 1 FROM memories m WHERE m.id = s.document_id AND m.agent_id = s.scope_id))",
                (scope, self._agent_id, list(sources)),
            )
            cur = await conn.execute(orphan_documents_sql(), (scope, DOCUMENTS))
            orphans = [r["id"] for r in await cur.fetchall()]
            if orphans:
                # Vectors go with each row (ON DELETE CASCADE); the keyword index is the row's own.
                await conn.execute(
                    "DELETE FROM memories WHERE agent_id = %s AND type = %s AND metadata->>'documentId' = ANY(%s)",
                    (scope, FRAGMENTS, orphans),
                )
                await conn.execute("DELETE FROM memories WHERE agent_id = %s AND id = ANY(%s)", (scope, orphans))
        return len(orphans)

    # -- vectors -------------------------------------------------------------------------------

    async def knowledge_fragments_without_vectors(
        self, dim: int, *, shared: bool = False, limit: int | None = None
    ) -> list[str]:
        """Ids of the fragments of this agent's scope (or the shared one) with no vector of length
        ``dim``, in the order they were stored (at most ``limit``)."""
        check_dimension(dim)
        validate_count(limit, "limit")
        rows = await self._db.fetchall(
            "SELECT m.id FROM memories m LEFT JOIN embeddings e "
            "  ON e.memory_id = m.id AND e.dim = %s "
            "WHERE m.agent_id = %s AND m.type = %s AND e.memory_id IS NULL ORDER BY m.seq LIMIT %s",
            (dim, self._scope(shared), FRAGMENTS, limit),
        )
        return [r["id"] for r in rows]

    async def get_knowledge_texts(self, fragment_ids: Sequence[str]) -> dict[str, str]:
        """The text of each of these fragments (own or shared) that still exists, by id."""
        if not fragment_ids:
            return {}
        rows = await self._db.fetchall(
            "SELECT id, content->>'text' AS text FROM memories WHERE id = ANY(%s) AND type = %s AND agent_id = ANY(%s)",
            (list(fragment_ids), FRAGMENTS, list(self.knowledge_scopes)),
        )
        return {r["id"]: r["text"] or "" for r in rows}

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

    # -- reads -----------------------------------------------------------------------------------

    async def count_knowledge(self) -> tuple[int, int]:
        """``(documents, fragments)`` this agent can search: its own and the shared ones."""
        rows = await self._db.fetchall(
            "SELECT type, count(*) AS n FROM memories WHERE agent_id = ANY(%s) AND type IN (%s, %s) GROUP BY type",
            (list(self.knowledge_scopes), DOCUMENTS, FRAGMENTS),
        )
        counts = {r["type"]: int(r["n"]) for r in rows}
        return counts.get(DOCUMENTS, 0), counts.get(FRAGMENTS, 0)

    async def has_knowledge(self) -> bool:
        """Whether this agent has any knowledge fragment to search (its own or shared)."""
        row = await self._db.fetchone(
            "SELECT EXISTS (SELECT 1 FROM memories WHERE agent_id = ANY(%s) AND type = %s) AS found",
            (list(self.knowledge_scopes), FRAGMENTS),
        )
        return bool(row and row["found"])

    async def search_knowledge(
        self, embedding: Sequence[float], *, count: int = 20, match_threshold: float | None = None
    ) -> list[Memory]:
        """Fragments (own and shared) nearest to ``embedding``, best first, with ``similarity``
        (cosine) set; those below ``match_threshold`` left out. Exact, among vectors of the query's
        length. Raises ValueError for a query of an unsupported length."""
        validate_count(count)
        dim = len(embedding)
        check_dimension(dim)
        if count == 0:
            return []
        # The winners' rows come with the ranking: a top-N sort keeps only ``count`` of them.
        rows = await self._db.fetchall(
            f"SELECT {MEMORY_COLUMNS}, e.embedding <=> %s AS distance FROM memories m "
            "JOIN embeddings e ON e.memory_id = m.id "
            "WHERE m.agent_id = ANY(%s) AND m.type = %s AND e.dim = %s ORDER BY distance, m.seq LIMIT %s",
            (pg_vector(embedding, dim), list(self.knowledge_scopes), FRAGMENTS, dim, count),
        )
        hits = dict(similarity_hits(rows, match_threshold))
        return [row_to_memory(r, similarity=hits[r["seq"]]) for r in rows if r["seq"] in hits]

    async def search_knowledge_by_text(self, query: str, *, count: int = 20) -> list[Memory]:
        """Fragments (own and shared) matching words of ``query``, best rank first, with
        ``similarity`` set to the relevance (higher is better). User text is never query syntax."""
        validate_count(count)
        terms = keyword_query(query)
        if terms is None or count == 0:
            return []
        rows = await self._db.fetchall(
            f"SELECT {MEMORY_COLUMNS}, ts_rank(m.text_search, q) AS score FROM memories m, {KEYWORD_QUERY} q "
            "WHERE m.text_search @@ q AND m.agent_id = ANY(%s) AND m.type = %s ORDER BY score DESC, m.seq LIMIT %s",
            (terms, list(self.knowledge_scopes), FRAGMENTS, count),
        )
        return [row_to_memory(r, similarity=r["score"]) for r in rows]


def orphan_documents_sql() -> str:
    """The documents of one scope (``%s``, then the documents' table ``%s``) no source refers to."""
    return (
        "SELECT m.id FROM memories m WHERE m.agent_id = %s AND m.type = %s AND NOT EXISTS ("
        "  SELECT 1 FROM knowledge_sources s WHERE s.scope_id = m.agent_id AND s.document_id = m.id)"
    )


def _clean(vectors: Sequence[tuple[str, Sequence[float]]]) -> list[tuple[str, PgVector]]:
    """Each vector as the store writes it (:func:`pg_vector`), in the column of its own length."""
    return [(memory_id, pg_vector(vector, len(vector))) for memory_id, vector in vectors]

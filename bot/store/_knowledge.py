"""Knowledge: documents, their fragments, the sources they came from, and hybrid-search primitives.

What plugins/knowledge ingests lives in ordinary memories — one ``documents`` memory per distinct
content, and its ``knowledge`` fragments (``metadata.documentId``/``position``) — so the
keyword index, vectors and cascades of every other memory apply. They have no entity or room
(upstream uses the agent's): knowledge belongs to its scope alone, and forgetting a room or a
person never touches it. Fragment ids follow from the document's, so storing one twice is a
no-op. ``knowledge_sources`` (schema version 3) remembers which file or fact each document came
from, with the file's size, mtime and content hash, so a restart re-reads only files that
changed and embeds only new content.

Scopes. Knowledge an agent's character lists lives in the agent's own scope (``agent_id`` =
the agent). Knowledge marked ``shared`` lives once in one reserved scope,
:data:`SHARED_KNOWLEDGE_ID`, that every agent reads next to its own: stored once, embedded once
per vector length in use, and still there when the agent that listed it stops. The shared scope
has an ``agents`` row of its own (created on first use, ``enabled = 0``), because memories must
belong to an agent; each of its sources records the agent whose character lists it
(``owner_id``), so an agent that drops a shared source forgets only its own claim and a document
goes when no agent lists it any more.

Why a reserved scope rather than a copy per agent or a flag on the owner's rows: a copy per
agent embeds (and pays for) the same document once per character; rows flagged shared under
their owner would vanish when that character is removed, be duplicated when two characters list
the same file, and carry vectors of the owner's model only.

Vectors are written in the column of their own length and searched in the column of the query's
length, not the agent's active dimension: agents with different embedding models can share the
shared scope, each finding (and, at ingestion, filling) the vectors of its own length. (Two
different models with the same vector length cannot be told apart; nor can they anywhere else
in the store.)
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Collection, Sequence
from contextlib import AbstractAsyncContextManager

from bot.ids import string_to_uuid
from bot.store._connect import Connection
from bot.store._memories import MEMORY_COLUMNS
from bot.store._rows import dumps, row_to_memory
from bot.store._scoped import AgentScoped, json_list, new_id, validate_count
from bot.store._search import fts_query
from bot.store._values import SHARED_KNOWLEDGE_ID, KnowledgeDocument, KnowledgeSourceRecord
from bot.store._vectors import check_dimension, encode_vector
from bot.types import JSON, Memory, now_ms

__all__ = [
    "DOCUMENTS",
    "DOCUMENT_COLUMNS",
    "ENCODE_INLINE",
    "FRAGMENTS",
    "SOURCE_COLUMNS",
    "SOURCE_UPSERT",
    "KnowledgeScopes",
    "SHARED_NAME",
    "KnowledgeMixin",
    "document_rows",
    "fragment_id",
]

_log = logging.getLogger(__name__)

#: The name of the shared scope's ``agents`` row.
SHARED_NAME = "Shared knowledge"
#: Memory table (``memories.type``) of whole documents and of their fragments (upstream's names).
DOCUMENTS = "documents"
FRAGMENTS = "knowledge"
#: Above this many vectors, set_knowledge_vectors packs them in a worker thread.
ENCODE_INLINE = 16
# What a knowledge write may change, for shared reads (Database.write).
_TABLES = ("memories", "embeddings", "memories_fts", "knowledge_sources", "agents")


class KnowledgeScopes:
    """The scopes of an agent's knowledge, for the store of either backend."""

    __slots__ = ()
    _agent_id: str

    def _scope(self, shared: bool) -> str:
        return SHARED_KNOWLEDGE_ID if shared else self._agent_id

    @property
    def knowledge_scopes(self) -> tuple[str, str]:
        """The scopes this agent's knowledge searches read: its own, then the shared one."""
        return (self._agent_id, SHARED_KNOWLEDGE_ID)

    @staticmethod
    def _source_row(scope: str, owner: str, source: KnowledgeSourceRecord, now: int) -> tuple[object, ...]:
        """The ``knowledge_sources`` row of ``source``, in the order of :data:`SOURCE_COLUMNS`."""
        return (scope, owner, source.source, source.document_id, source.content_hash, source.size, source.mtime_ns, now)


class KnowledgeMixin(KnowledgeScopes, AgentScoped):
    """Knowledge of this agent (and of the shared scope) in ``memories`` and ``knowledge_sources``."""

    __slots__ = ()

    def lock_shared_knowledge(self) -> AbstractAsyncContextManager[None]:
        """``async with store.lock_shared_knowledge():`` a turn at writing the shared scope.

        Agents take turns there (plugins/knowledge), so a shared document is stored and embedded
        once and not by two agents at the same time. Shared by every store of the database.
        """
        return self._db.shared_knowledge_lock

    # -- sources -------------------------------------------------------------------------------

    async def get_knowledge_sources(self, *, shared: bool = False) -> dict[str, KnowledgeSourceRecord]:
        """This agent's sources in its own scope (or its claims on the shared one), by source key.

        A source whose document is no longer stored (deleted by other means) is left out, so it
        is ingested again rather than trusted.
        """
        rows = await self._db.fetchall(
            "SELECT s.source, s.document_id, s.content_hash, s.size, s.mtime_ns FROM knowledge_sources s "
            "WHERE s.scope_id = ? AND s.owner_id = ? AND EXISTS ("
            "  SELECT 1 FROM memories m WHERE m.id = s.document_id AND m.agent_id = s.scope_id)",
            (self._scope(shared), self._agent_id),
        )
        return {r[0]: KnowledgeSourceRecord(r[0], r[1], r[2], r[3], r[4]) for r in rows}

    async def has_knowledge_document(self, document_id: str, *, shared: bool = False) -> bool:
        """Whether the document is stored in this agent's scope (or the shared one)."""
        row = await self._db.fetchone(
            "SELECT 1 FROM memories WHERE id = ? AND agent_id = ? AND type = ?",
            (document_id, self._scope(shared), DOCUMENTS),
        )
        return row is not None

    async def put_knowledge_document(
        self, document: KnowledgeDocument | None, source: KnowledgeSourceRecord, *, shared: bool = False
    ) -> None:
        """Record ``source`` and, if given, store ``document`` and its fragments (without vectors),
        all in one transaction.

        A document or fragment already stored (same id) is left as it is, so two agents storing the
        same shared document at once store it once. Fragments are found by keywords at once and by
        vector once :meth:`set_knowledge_vectors` has given them one.
        """
        scope = self._scope(shared)
        now = now_ms()

        def write(conn: Connection) -> None:
            if shared:
                conn.execute(
                    "INSERT INTO agents (id, name, enabled) VALUES (?, ?, 0) ON CONFLICT(id) DO NOTHING",
                    (scope, SHARED_NAME),
                )
            if document is not None:
                # No entity or room: knowledge belongs to the scope alone (world_id names it too).
                conn.executemany(
                    f"INSERT INTO memories ({DOCUMENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, 1, ?) ON CONFLICT(id) DO NOTHING",
                    [
                        (id, kind, now, dumps(content), scope, scope, dumps(metadata))
                        for id, kind, content, metadata in document_rows(document, now)
                    ],
                )
            conn.execute(
                f"INSERT INTO knowledge_sources ({SOURCE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) {SOURCE_UPSERT}",
                self._source_row(scope, self._agent_id, source, now),
            )

        await self._db.write(write, tables=_TABLES)

    async def forget_knowledge_sources(self, sources: Collection[str], *, shared: bool = False) -> int:
        """Drop this agent's ``sources`` from its scope (or its claims on the shared one), and those
        whose document is gone; then delete every document of that scope no source refers to any
        more, with its fragments and vectors.

        One transaction. Returns how many documents were deleted.
        """
        scope = self._scope(shared)

        def write(conn: Connection) -> int:
            conn.execute(
                "DELETE FROM knowledge_sources AS s WHERE s.scope_id = ? AND s.owner_id = ? "
                "AND (s.source IN (SELECT value FROM json_each(?)) OR NOT EXISTS ("
                "  SELECT 1 FROM memories m WHERE m.id = s.document_id AND m.agent_id = s.scope_id))",
                (scope, self._agent_id, json_list(sources)),
            )
            orphans = [
                r[0]
                for r in conn.execute(
                    "SELECT id FROM memories m WHERE m.agent_id = ? AND m.type = ? AND NOT EXISTS ("
                    "  SELECT 1 FROM knowledge_sources s WHERE s.scope_id = m.agent_id AND s.document_id = m.id)",
                    (scope, DOCUMENTS),
                )
            ]
            if orphans:
                ids = json_list(orphans)
                # Vectors and keyword-index entries go with each row (ON DELETE CASCADE, triggers).
                conn.execute(
                    "DELETE FROM memories WHERE agent_id = ? AND type = ? "
                    "AND json_extract(metadata, '$.documentId') IN (SELECT value FROM json_each(?))",
                    (scope, FRAGMENTS, ids),
                )
                conn.execute(
                    "DELETE FROM memories WHERE +agent_id = ? AND id IN (SELECT value FROM json_each(?))", (scope, ids)
                )
            return len(orphans)

        return await self._db.write(write, tables=_TABLES)

    # -- vectors -------------------------------------------------------------------------------

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

    async def get_knowledge_texts(self, fragment_ids: Sequence[str]) -> dict[str, str]:
        """The text of each of these fragments (own or shared) that still exists, by id."""
        if not fragment_ids:
            return {}
        rows = await self._db.fetchall(
            "SELECT m.id, json_extract(m.content, '$.text') FROM memories m "
            "WHERE m.id IN (SELECT value FROM json_each(?)) AND +m.type = ? AND +m.agent_id IN (?, ?)",
            (json_list(fragment_ids), FRAGMENTS, *self.knowledge_scopes),
        )
        return {r[0]: r[1] or "" for r in rows}

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

    # -- reads -----------------------------------------------------------------------------------

    async def count_knowledge(self) -> tuple[int, int]:
        """``(documents, fragments)`` this agent can search: its own and the shared ones."""
        rows = await self._db.fetchall(
            "SELECT type, count(*) FROM memories WHERE agent_id IN (?, ?) AND type IN (?, ?) GROUP BY type",
            (*self.knowledge_scopes, DOCUMENTS, FRAGMENTS),
        )
        counts = {r[0]: int(r[1]) for r in rows}
        return counts.get(DOCUMENTS, 0), counts.get(FRAGMENTS, 0)

    async def has_knowledge(self) -> bool:
        """Whether this agent has any knowledge fragment to search (its own or shared)."""
        row = await self._db.fetchone(
            "SELECT EXISTS (SELECT 1 FROM memories WHERE agent_id IN (?, ?) AND type = ?)",
            (*self.knowledge_scopes, FRAGMENTS),
        )
        return bool(row and row[0])

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
        hits = [(r[0], r[1]) for r in rows if r[1] is not None and (not match_threshold or r[1] >= match_threshold)]
        return await self._fragments_by_seq(hits)

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
        return await self._fragments_by_seq([(r[0], r[1]) for r in rows])

    async def _fragments_by_seq(self, hits: list[tuple[int, float]]) -> list[Memory]:
        if not hits:
            return []
        rows = await self._db.fetchall(
            f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE m.seq IN (SELECT value FROM json_each(?))",
            (json.dumps([seq for seq, _ in hits]),),
        )
        by_seq = {r["seq"]: r for r in rows}
        return [row_to_memory(by_seq[seq], similarity=score) for seq, score in hits if seq in by_seq]


def _pack(vectors: Sequence[tuple[str, Sequence[float]]]) -> list[bytes]:
    """Each vector as :func:`~bot.store._vectors.encode_vector` stores it, in the column of its length."""
    return [encode_vector(vector, len(vector)) for _, vector in vectors]


#: The columns a knowledge document's memories are written with (``is_unique`` is always true).
DOCUMENT_COLUMNS = "id, type, created_at, content, agent_id, world_id, is_unique, metadata"
#: The columns of a ``knowledge_sources`` row (see :meth:`KnowledgeScopes._source_row`), and
#: how a row already there is updated (the same SQL on both backends).
SOURCE_COLUMNS = "scope_id, owner_id, source, document_id, content_hash, size, mtime_ns, updated_at"
SOURCE_UPSERT = (
    "ON CONFLICT(scope_id, owner_id, source) DO UPDATE SET document_id = excluded.document_id, "
    "content_hash = excluded.content_hash, size = excluded.size, mtime_ns = excluded.mtime_ns, "
    "updated_at = excluded.updated_at"
)


def document_rows(document: KnowledgeDocument, now: int) -> list[tuple[str, str, JSON, JSON]]:
    """(id, memory table, content, metadata) of a document's memory and of each of its fragments."""
    meta = {**document.metadata, "type": "document", "timestamp": now}
    base = {k: v for k, v in document.metadata.items() if k in ("source", "title", "shared")}
    rows = [(document.id, DOCUMENTS, {"text": document.title}, meta)]
    rows += [
        (
            fragment_id(document.id, i),
            FRAGMENTS,
            {"text": text},
            {**base, "type": "fragment", "documentId": document.id, "position": i, "timestamp": now},
        )
        for i, text in enumerate(document.fragments)
    ]
    return rows


def fragment_id(document_id: str, position: int) -> str:
    """The id of fragment ``position`` of a document: the same every time it is stored."""
    return string_to_uuid(f"{document_id}:fragment:{position}")

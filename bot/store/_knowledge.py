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

import logging
from collections.abc import Collection, Sequence

from bot.kernel.ids import string_to_uuid
from bot.kernel.types import JSON, now_ms
from bot.store._dialect import Statements, Step, Unit
from bot.store._rows import dumps, json_text
from bot.store._values import (
    SHARED_KNOWLEDGE_ID,
    KnowledgeDocument,
    KnowledgeFragment,
    KnowledgeSourceRecord,
    StoredKnowledgeSource,
)

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
    "ORPHAN_DOCUMENTS",
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


class KnowledgeMixin(KnowledgeScopes, Statements):
    """Knowledge of this agent (and of the shared scope) in ``memories`` and ``knowledge_sources``."""

    __slots__ = ()

    # -- sources -------------------------------------------------------------------------------

    async def get_knowledge_sources(self, *, shared: bool = False) -> dict[str, KnowledgeSourceRecord]:
        """This agent's sources in its own scope (or its claims on the shared one), by source key.

        A source whose document is no longer stored (deleted by other means) is left out, so it
        is ingested again rather than trusted.
        """
        rows = await self._rows(
            "SELECT s.source, s.document_id, s.content_hash, s.size, s.mtime_ns FROM knowledge_sources s "
            "WHERE s.scope_id = ? AND s.owner_id = ? AND EXISTS ("
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
        row = await self._row(
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
        boolean = self.dialect.boolean
        # jsonb cannot hold U+0000: PostgreSQL stores it as U+FFFD (see json_text).
        to_json = dumps if self.dialect.text_holds_nul else json_text

        def write() -> Unit[None]:
            if shared:
                yield Step(
                    "INSERT INTO agents (id, name, enabled) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING",
                    (scope, SHARED_NAME, boolean(False)),
                )
            if document is not None:
                # No entity or room: knowledge belongs to the scope alone (world_id names it too).
                yield Step(
                    f"INSERT INTO memories ({DOCUMENT_COLUMNS}) VALUES (?, ?, ?, ?{{json}}, ?, ?, ?, ?{{json}}) "
                    "ON CONFLICT (id) DO NOTHING",
                    [
                        (id, kind, now, to_json(content), scope, scope, boolean(True), to_json(metadata))
                        for id, kind, content, metadata in document_rows(document, now)
                    ],
                    many=True,
                )
            yield Step(
                f"INSERT INTO knowledge_sources ({SOURCE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) {SOURCE_UPSERT}",
                self._source_row(scope, self._agent_id, source, now),
            )

        await self._write(write, tables=_TABLES)

    async def forget_knowledge_sources(self, sources: Collection[str], *, shared: bool = False) -> int:
        """Drop this agent's ``sources`` from its scope (or its claims on the shared one), and those
        whose document is gone; then delete every document of that scope no source refers to any
        more, with its fragments and vectors.

        One transaction. Returns how many documents were deleted.
        """
        scope = self._scope(shared)

        ids = self.dialect.id_list

        def write() -> Unit[int]:
            yield Step(
                "DELETE FROM knowledge_sources AS s WHERE s.scope_id = ? AND s.owner_id = ? "
                "AND (s.source {in_list} OR NOT EXISTS ("
                "  SELECT 1 FROM memories m WHERE m.id = s.document_id AND m.agent_id = s.scope_id))",
                (scope, self._agent_id, ids(sources)),
            )
            orphans = [r["id"] for r in (yield Step(ORPHAN_DOCUMENTS, (scope, DOCUMENTS))).rows]
            if orphans:
                # Vectors and keyword-index entries go with each row (ON DELETE CASCADE, triggers).
                yield Step(
                    "DELETE FROM memories WHERE agent_id = ? AND type = ? AND {json_text:metadata.documentId} {in_list}",
                    (scope, FRAGMENTS, ids(orphans)),
                )
                yield Step(
                    "DELETE FROM memories WHERE {scan_agent}agent_id = ? AND id {in_list}", (scope, ids(orphans))
                )
            return len(orphans)

        return await self._write(write, tables=_TABLES)

    async def get_knowledge_texts(self, fragment_ids: Sequence[str]) -> dict[str, str]:
        """The text of each of these fragments (own or shared) that still exists, by id."""
        if not fragment_ids:
            return {}
        rows = await self._rows(
            "SELECT m.id, {json_text:m.content.text} AS text FROM memories m "
            "WHERE m.id {in_list} AND {scan_agent}m.type = ? AND {scan_agent}m.agent_id IN (?, ?)",
            (self.dialect.id_list(fragment_ids), FRAGMENTS, *self.knowledge_scopes),
        )
        return {r["id"]: r["text"] or "" for r in rows}

    async def get_knowledge_documents_of(self, fragment_ids: Sequence[str]) -> list[KnowledgeFragment]:
        """Every fragment (own or shared) of the documents these fragments belong to, by document
        and position: what contextual embeddings show the model of a fragment's document."""
        if not fragment_ids:
            return []
        rows = await self._rows(
            "SELECT f.id, {json_text:f.metadata.documentId} AS document_id, "
            "  {json_text:f.metadata.position} AS position, {json_text:f.content.text} AS text "
            "FROM memories f WHERE f.type = ? AND f.agent_id IN (?, ?) AND {json_text:f.metadata.documentId} IN ("
            "  SELECT {json_text:m.metadata.documentId} FROM memories m "
            "  WHERE m.id {in_list} AND {scan_agent}m.type = ? AND {scan_agent}m.agent_id IN (?, ?))",
            (FRAGMENTS, *self.knowledge_scopes, self.dialect.id_list(fragment_ids), FRAGMENTS, *self.knowledge_scopes),
        )
        found = [KnowledgeFragment(r["id"], r["document_id"], int(r["position"]), r["text"] or "") for r in rows]
        return sorted(found, key=lambda f: (f.document_id, f.position))

    # -- reads -----------------------------------------------------------------------------------

    async def count_knowledge(self) -> tuple[int, int]:
        """``(documents, fragments)`` this agent can search: its own and the shared ones."""
        rows = await self._rows(
            "SELECT type, count(*) AS n FROM memories WHERE agent_id IN (?, ?) AND type IN (?, ?) GROUP BY type",
            (*self.knowledge_scopes, DOCUMENTS, FRAGMENTS),
        )
        counts = {r["type"]: int(r["n"]) for r in rows}
        return counts.get(DOCUMENTS, 0), counts.get(FRAGMENTS, 0)

    async def list_knowledge_sources(self) -> list[StoredKnowledgeSource]:
        """This agent's sources, own and its claims on shared ones, each with its document's title
        and fragment count, by source key."""
        rows = await self._rows(
            "SELECT s.scope_id, s.source, s.size, s.updated_at, {json_text:d.content.text} AS title, "
            "  (SELECT count(*) FROM memories f WHERE f.agent_id = s.scope_id AND f.type = ? "
            "   AND {json_text:f.metadata.documentId} = s.document_id) AS fragments "
            "FROM knowledge_sources s JOIN memories d ON d.id = s.document_id AND d.agent_id = s.scope_id "
            "WHERE s.owner_id = ? AND s.scope_id IN (?, ?) ORDER BY s.source{by_code_point}",
            (FRAGMENTS, self._agent_id, *self.knowledge_scopes),
        )
        return [
            StoredKnowledgeSource(
                r["source"],
                r["title"] or "",
                r["scope_id"] == SHARED_KNOWLEDGE_ID,
                int(r["fragments"]),
                r["size"],
                int(r["updated_at"]),
            )
            for r in rows
        ]

    async def has_knowledge(self) -> bool:
        """Whether this agent has any knowledge fragment to search (its own or shared)."""
        row = await self._row(
            "SELECT EXISTS (SELECT 1 FROM memories WHERE agent_id IN (?, ?) AND type = ?) AS found",
            (*self.knowledge_scopes, FRAGMENTS),
        )
        return bool(row and row["found"])


#: The documents of one scope (``?``, then the documents' table ``?``) no source refers to.
ORPHAN_DOCUMENTS = (
    "SELECT m.id FROM memories m WHERE m.agent_id = ? AND m.type = ? AND NOT EXISTS ("
    "  SELECT 1 FROM knowledge_sources s WHERE s.scope_id = m.agent_id AND s.document_id = m.id)"
)
#: The columns a knowledge document's memories are written with (``is_unique`` is always true).
DOCUMENT_COLUMNS = "id, type, created_at, content, agent_id, world_id, is_unique, metadata"
#: The columns of a ``knowledge_sources`` row (see :meth:`KnowledgeScopes._source_row`), and
#: how a row already there is updated (the same SQL on both backends).
SOURCE_COLUMNS = "scope_id, owner_id, source, document_id, content_hash, size, mtime_ns, updated_at"
SOURCE_UPSERT = (
    "ON CONFLICT (scope_id, owner_id, source) DO UPDATE SET document_id = excluded.document_id, "
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

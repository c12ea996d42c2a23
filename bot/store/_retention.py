"""Long-term memory upkeep: compacting old memories, and inspecting, exporting and forgetting.

Compaction (used by the core plugin's retention task): :meth:`RetentionMixin.retention_counts`
says how many memories each room holds and how many are old, :meth:`get_oldest_memories` reads the
oldest, and :meth:`compact_memories` swaps them for one summary in a single transaction — only if
every one of them is still there, so a batch that changed meanwhile (an edit racing a ``troupe
memory forget``) is never half-replaced.

Forgetting (``troupe memory forget``) runs as one transaction that removes rows explicitly, table
by table, so it can say what went; cascades and the keyword-index triggers then have nothing left
to do. A forget turns on ``secure_delete`` and rebuilds the keyword index, so deleted text does not
linger in free pages or in old index segments; :meth:`~bot.store.Database.checkpoint` afterwards
moves it out of the write-ahead log too.

What "everything about a person" means, for :meth:`forget_entity` and an entity export: their
entity row, components (theirs and those they asserted), participations, relationships either way,
every memory they authored, the agent's replies to their messages, their direct-message rooms with
the agent (whole), facts and summaries that name them (by id in ``metadata.entityIds`` or anywhere
in the JSON, or by one of their names, 3 letters or more, as a whole word in the text), logs about
them, cache entries and tasks mentioning them. Other people's messages that mention their id keep
their text, with the id scrubbed out; so do worlds, rooms, other entities and relationships.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from bot.store._connect import Row
from bot.store._knowledge import DOCUMENTS, FRAGMENTS
from bot.store._memories import MemoriesMixin, fts_query
from bot.store._rows import (
    dumps,
    loads,
    row_to_component,
    row_to_entity,
    row_to_memory,
    row_to_relationship,
    row_to_room,
    row_to_world,
)
from bot.store._scoped import json_list, new_id, validate_count
from bot.store._values import (
    DERIVED_TABLES,
    KNOWLEDGE_TABLES,
    SHARED_KNOWLEDGE_ID,
    Forgotten,
    MemoryExport,
    Participation,
)
from bot.store._vectors import encode_vector
from bot.types import Memory, Room, RoomState, now_ms

__all__ = ["RetentionMixin"]

_MESSAGES = "messages"
_DM_TYPES = ("DM", "VOICE_DM")
_MIN_NAME = 3  # shorter names ("Al", "J") would match too much text
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_SCRUBBED = "[forgotten]"
_MEMORY_COLUMNS = (
    "m.seq, m.id, m.type, m.created_at, m.content, m.entity_id, m.agent_id, m.room_id, m.world_id, "
    "m.is_unique, m.metadata"
)
# The ids a memory is about besides its author: summaries and facts list them in metadata.
_ABOUT = "EXISTS (SELECT 1 FROM json_each(m.metadata, '$.entityIds') a WHERE a.value = ?)"


class _DryRun(Exception):
    """Raised inside a forget transaction to roll it back after counting."""

    def __init__(self, result: Forgotten) -> None:
        super().__init__("dry run")
        self.result = result


class _Forget:
    """One forget, on the writer's thread inside its transaction: deletes and counts."""

    def __init__(self, conn: Any, agent_id: str) -> None:
        self.conn = conn
        self.agent = agent_id
        self.result = Forgotten()
        self.gone: set[str] = set()  # ids of deleted rows of any kind: cache entries naming them go too

    def _add(self, bucket: dict[str, int], key: str, n: int) -> None:
        if n:
            bucket[key] = bucket.get(key, 0) + n

    def delete(self, table: str, where: str, params: Sequence[Any]) -> int:
        n: int = self.conn.execute(f"DELETE FROM {table} WHERE {where}", params).rowcount
        self._add(self.result.rows, table, n)
        return n

    def memories(self, ids: Iterable[str], scope: str | None = None) -> None:
        """Delete these memories of the agent (or of ``scope``: the shared knowledge) and their
        vectors, counted by memory table."""
        wanted = json_list(sorted(set(ids)))
        if wanted == "[]":
            return
        owner = scope or self.agent
        in_ids = "IN (SELECT value FROM json_each(?))"
        rows = self.conn.execute(
            f"SELECT id, type FROM memories WHERE +agent_id = ? AND id {in_ids}", (owner, wanted)
        ).fetchall()
        if not rows:
            return
        for table, n in Counter(r[1] for r in rows).items():
            self._add(self.result.memories, table, n)
        found = json_list(r[0] for r in rows)
        self.delete("embeddings", f"memory_id {in_ids}", (found,))
        self.conn.execute(f"DELETE FROM memories WHERE +agent_id = ? AND id {in_ids}", (owner, found))
        self.gone.update(r[0] for r in rows)

    def knowledge(self) -> None:
        """Delete the agent's knowledge: its sources and documents, and its claims on the shared
        scope with the shared documents no other agent claims (for the shared scope itself:
        all of it). Its next sync stores again whatever its character still lists."""
        self.delete(
            "knowledge_sources",
            "scope_id = ? OR (scope_id = ? AND owner_id = ?)",
            (self.agent, SHARED_KNOWLEDGE_ID, self.agent),
        )
        for scope in dict.fromkeys((self.agent, SHARED_KNOWLEDGE_ID)):
            orphans = json_list(
                r[0]
                for r in self.conn.execute(
                    "SELECT id FROM memories m WHERE m.agent_id = ? AND m.type = ? AND NOT EXISTS ("
                    "  SELECT 1 FROM knowledge_sources s WHERE s.scope_id = m.agent_id AND s.document_id = m.id)",
                    (scope, DOCUMENTS),
                )
            )
            fragments = [
                r[0]
                for r in self.conn.execute(
                    "SELECT id FROM memories WHERE agent_id = ? AND type = ? "
                    "AND json_extract(metadata, '$.documentId') IN (SELECT value FROM json_each(?))",
                    (scope, FRAGMENTS, orphans),
                )
            ]
            self.memories([*json.loads(orphans), *fragments], scope)

    def room(self, room_id: str) -> None:
        """Delete one of the agent's rooms and everything in it."""
        self.memories(
            r[0]
            for r in self.conn.execute(
                "SELECT id FROM memories WHERE agent_id = ? AND room_id = ?", (self.agent, room_id)
            )
        )
        self.delete("participants", "room_id = ?", (room_id,))
        self.delete("components", "room_id = ? AND agent_id = ?", (room_id, self.agent))
        self.delete("logs", "room_id = ?", (room_id,))
        self.delete("message_handling", "agent_id = ? AND room_id = ?", (self.agent, room_id))
        self.delete("tasks", "room_id = ? AND agent_id = ?", (room_id, self.agent))
        self.delete("rooms", "id = ? AND agent_id = ?", (room_id, self.agent))
        self.gone.add(room_id)

    def scrub(
        self, table: str, key: str, columns: Sequence[str], needle: str, where: str = "", params: Sequence[Any] = ()
    ) -> None:
        """Remove ``needle`` from the JSON ``columns`` of the agent's rows of ``table`` that mention it."""
        mentions = " OR ".join(f"instr({c}, ?) > 0" for c in columns)
        sql = f"SELECT {key}, {', '.join(columns)} FROM {table} WHERE agent_id = ? AND ({mentions}){where}"
        edited = 0
        for row in self.conn.execute(sql, (self.agent, *[needle] * len(columns), *params)).fetchall():
            values = [dumps(_scrubbed(loads(row[c]), needle)) if row[c] is not None else None for c in columns]
            sets = ", ".join(f"{c} = ?" for c in columns)
            self.conn.execute(f"UPDATE {table} SET {sets} WHERE {key} = ?", (*values, row[0]))
            edited += 1
        self._add(self.result.edited, table, edited)

    def cache(self, *extra: str) -> None:
        """Delete the agent's cache entries that name anything deleted (or ``extra`` ids)."""
        gone = self.gone | set(extra)
        stale = [
            row[0]
            for row in self.conn.execute("SELECT key, value FROM cache WHERE agent_id = ?", (self.agent,))
            if gone.intersection(_UUID.findall(f"{row[0]} {row[1]}"))
        ]
        for key in stale:
            self.delete("cache", "key = ? AND agent_id = ?", (key, self.agent))

    def finish(self) -> None:
        """Rebuild the keyword index: deleted words must not survive in its old segments."""
        self.conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('optimize')")


def _scrubbed(value: Any, needle: str) -> Any:
    """``value`` without ``needle``: dict keys and list items equal to it go, strings lose it."""
    if isinstance(value, dict):
        return {k: _scrubbed(v, needle) for k, v in value.items() if k != needle and v != needle}
    if isinstance(value, list):
        return [_scrubbed(v, needle) for v in value if v != needle]
    if isinstance(value, str):
        return value.replace(needle, _SCRUBBED)
    return value


def _name_pattern(names: Iterable[str], exclude: Iterable[str]) -> re.Pattern[str] | None:
    skip = {n.strip().casefold() for n in exclude}
    usable = sorted(
        {n.strip() for n in names if len(n.strip()) >= _MIN_NAME and n.strip().casefold() not in skip},
        key=len,
        reverse=True,
    )
    if not usable:
        return None
    return re.compile(r"(?<!\w)(?:" + "|".join(re.escape(n) for n in usable) + r")(?!\w)", re.IGNORECASE)


@dataclass(slots=True)
class _Selection:
    """What is about one entity: computed the same way for forgetting and for exporting."""

    dm_rooms: list[str]
    memories: list[str]
    """Memories outside those rooms to remove: theirs, replies to them, facts and summaries about them."""
    mentions: list[str]
    """Messages outside those rooms (others') whose JSON mentions their id: kept, id scrubbed."""


def _select_entity(conn: Any, agent: str, entity_id: str, names: Sequence[str]) -> _Selection:
    """On a database thread: the rows :meth:`RetentionMixin.forget_entity` removes or edits."""
    dm_rooms = [
        r[0]
        for r in conn.execute(
            "SELECT r.id FROM rooms r WHERE r.agent_id = ? AND r.id != ? AND r.type IN (SELECT value FROM json_each(?)) "
            "AND (EXISTS (SELECT 1 FROM participants p WHERE p.room_id = r.id AND p.entity_id = ?) "
            "     OR EXISTS (SELECT 1 FROM memories m WHERE m.room_id = r.id AND m.entity_id = ?)) "
            "AND NOT EXISTS (SELECT 1 FROM participants p WHERE p.room_id = r.id AND p.entity_id NOT IN (?, ?)) "
            "AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.room_id = r.id AND m.entity_id NOT IN (?, ?))",
            (agent, agent, json_list(_DM_TYPES), entity_id, entity_id, entity_id, agent, entity_id, agent),
        )
    ]
    outside = "(m.room_id IS NULL OR m.room_id NOT IN (SELECT value FROM json_each(?)))"
    rooms = json_list(dm_rooms)
    theirs = [
        r[0]
        for r in conn.execute(
            f"SELECT m.id FROM memories m WHERE m.agent_id = ? AND m.entity_id = ? AND {outside}",
            (agent, entity_id, rooms),
        )
    ]
    replies = [
        r[0]
        for r in conn.execute(
            f"SELECT m.id FROM memories m WHERE m.agent_id = ? AND m.type = ? AND m.entity_id = ? AND {outside} "
            "AND json_extract(m.content, '$.inReplyTo') IN (SELECT value FROM json_each(?))",
            (agent, _MESSAGES, agent, rooms, json_list(theirs)),
        )
    ]
    # Mentions of the id anywhere in a memory's JSON (about them, or naming them in passing).
    mentioning = conn.execute(
        f"SELECT m.id, m.type FROM memories m WHERE m.agent_id = ? AND {outside} "
        f"AND (instr(m.content, ?) > 0 OR instr(m.metadata, ?) > 0 OR {_ABOUT})",
        (agent, rooms, entity_id, entity_id, entity_id),
    ).fetchall()
    kept_types = {_MESSAGES, *KNOWLEDGE_TABLES}
    about = [r[0] for r in mentioning if r[1] not in kept_types]
    mentions = [r[0] for r in mentioning if r[1] in kept_types]
    agent_names = [
        n for r in conn.execute("SELECT names FROM entities WHERE id = ?", (agent,)) for n in loads(r[0], [])
    ]
    pattern = _name_pattern(names, agent_names)
    named: list[str] = []
    if pattern is not None:
        for row in conn.execute(
            f"SELECT m.id, json_extract(m.content, '$.text') FROM memories m WHERE m.agent_id = ? AND {outside} "
            "AND m.type IN (SELECT value FROM json_each(?))",
            (agent, rooms, json_list(DERIVED_TABLES)),
        ):
            if isinstance(row[1], str) and pattern.search(row[1]):
                named.append(row[0])
    removed = set(theirs) | set(replies) | set(about) | set(named)
    return _Selection(dm_rooms, sorted(removed), sorted(set(mentions) - removed))


class RetentionMixin(MemoriesMixin):
    """Compaction of old memories, and listing, exporting and forgetting what the agent stores."""

    __slots__ = ()

    # -- compaction --------------------------------------------------------------------------------

    async def retention_counts(self, table: str, *, before: int | None = None) -> dict[str, tuple[int, int]]:
        """Per room of this agent holding memories of ``table``: (how many, how many created before ``before``).

        ``before`` is a time in ms; without it the second number is 0.
        """
        if not table:
            raise ValueError("a memory table name is required (e.g. 'messages')")
        rows = await self._db.fetchall(
            "SELECT room_id, count(*), coalesce(sum(created_at < ?), 0) FROM memories "
            "WHERE agent_id = ? AND type = ? AND room_id IS NOT NULL GROUP BY room_id",
            (-1 if before is None else before, self._agent_id, table),
        )
        return {r[0]: (int(r[1]), int(r[2])) for r in rows}

    async def get_oldest_memories(self, table: str, room_id: str, count: int) -> list[Memory]:
        """The oldest ``count`` memories of ``table`` in ``room_id``, oldest first, without embeddings."""
        validate_count(count)
        rows = await self._db.fetchall(
            f"SELECT {_MEMORY_COLUMNS} FROM memories m WHERE m.agent_id = ? AND m.type = ? AND m.room_id = ? "
            "ORDER BY m.created_at, m.seq LIMIT ?",
            (self._agent_id, table, room_id, count),
        )
        return [row_to_memory(r) for r in rows]

    async def compact_memories(self, summary: Memory, table: str, replaced_ids: Sequence[str]) -> int:
        """Store ``summary`` in ``table`` and delete the memories it replaces, in one transaction.

        Only if every one of ``replaced_ids`` is still one of this agent's memories: otherwise
        nothing is written and 0 is returned (read the batch again). Returns how many memories
        were deleted. ``summary`` is stored as unique, with its embedding if it has one. Raises
        EmbeddingDimensionError for a vector of the wrong length, ValueError without ids.
        """
        if not table:
            raise ValueError("a memory table name is required (e.g. 'summaries')")
        ids = list(dict.fromkeys(replaced_ids))
        if not ids:
            raise ValueError("compact_memories needs the ids of the memories the summary replaces")
        dim, column = await self._active_column()
        blob = encode_vector(summary.embedding, dim) if summary.embedding is not None else None
        summary_id = summary.id or new_id()
        row = self._memory_row(summary, table, summary_id, True, now_ms())
        wanted = json_list(ids)

        def work(conn: Any) -> int:
            present = conn.execute(
                "SELECT count(*) FROM memories WHERE +agent_id = ? AND id IN (SELECT value FROM json_each(?))",
                (self._agent_id, wanted),
            ).fetchone()[0]
            if present != len(ids):
                return 0
            conn.execute(
                "INSERT INTO memories (id, type, created_at, content, entity_id, agent_id, room_id, world_id, "
                "is_unique, metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                row,
            )
            if blob is not None:
                conn.execute(
                    f"INSERT INTO embeddings (id, memory_id, {column}, created_at) VALUES (?, ?, ?, ?)",
                    (new_id(), summary_id, blob, now_ms()),
                )
            return int(
                conn.execute(
                    "DELETE FROM memories WHERE +agent_id = ? AND id IN (SELECT value FROM json_each(?))",
                    (self._agent_id, wanted),
                ).rowcount
            )

        return await self._db.write(work, tables=("memories", "embeddings", "memories_fts"))

    # -- inspecting --------------------------------------------------------------------------------

    async def count_memories_by_table(self) -> dict[str, int]:
        """How many memories this agent has in each memory table, by table name."""
        rows = await self._db.fetchall(
            "SELECT type, count(*) FROM memories WHERE agent_id = ? GROUP BY type ORDER BY type", (self._agent_id,)
        )
        return {r[0]: int(r[1]) for r in rows}

    async def get_rooms_with_counts(self) -> list[tuple[Room, int]]:
        """Every room of this agent with how many memories it holds, most first."""
        rows = await self._db.fetchall(
            "SELECT r.*, (SELECT count(*) FROM memories m WHERE m.room_id = r.id AND m.agent_id = r.agent_id) AS n "
            "FROM rooms r WHERE r.agent_id = ? ORDER BY n DESC, r.created_at, r.rowid",
            (self._agent_id,),
        )
        return [(row_to_room(r), int(r["n"])) for r in rows]

    def _listing_filter(
        self, tables: Sequence[str] | None, room_id: str | None, entity_id: str | None
    ) -> tuple[list[str], list[Any]]:
        clauses, params = ["m.agent_id = ?"], [self._agent_id]
        if tables:
            clauses.append("m.type IN (SELECT value FROM json_each(?))")
            params.append(json_list(tables))
        if room_id is not None:
            clauses.append("m.room_id = ?")
            params.append(room_id)
        if entity_id is not None:
            clauses.append(f"(m.entity_id = ? OR {_ABOUT})")
            params += [entity_id, entity_id]
        return clauses, params

    async def list_memories(
        self,
        *,
        tables: Sequence[str] | None = None,
        room_id: str | None = None,
        entity_id: str | None = None,
        count: int | None = None,
        offset: int | None = None,
    ) -> list[Memory]:
        """This agent's memories of any of ``tables`` (all when None), newest first, without embeddings.

        ``entity_id`` keeps those the entity wrote or that are about it (``metadata.entityIds``).
        """
        validate_count(count)
        validate_count(offset, "offset")
        clauses, params = self._listing_filter(tables, room_id, entity_id)
        rows = await self._db.fetchall(
            f"SELECT {_MEMORY_COLUMNS} FROM memories m WHERE {' AND '.join(clauses)} "
            "ORDER BY m.created_at DESC, m.seq DESC LIMIT ? OFFSET ?",
            (*params, -1 if count is None else count, offset or 0),
        )
        return [row_to_memory(r) for r in rows]

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
        clauses, params = self._listing_filter(tables, room_id, entity_id)
        rows = await self._db.fetchall(
            f"SELECT {_MEMORY_COLUMNS}, -bm25(memories_fts) AS score FROM memories_fts "
            "JOIN memories m ON m.seq = memories_fts.rowid "
            f"WHERE memories_fts MATCH ? AND {' AND '.join(clauses)} "
            "ORDER BY bm25(memories_fts), m.created_at DESC, m.seq DESC LIMIT ?",
            (match, *params, count),
        )
        return [row_to_memory(r, similarity=r["score"]) for r in rows]

    async def export_memories(self, *, room_id: str | None = None, entity_id: str | None = None) -> MemoryExport:
        """Everything this agent stores (or only one room's, or one entity's), without vectors.

        For an entity: what :meth:`forget_entity` would remove, plus the rooms they were in.
        Raises LookupError if the room or entity is not this agent's, ValueError for both.
        """
        if room_id is not None and entity_id is not None:
            raise ValueError("export one room or one entity, not both")
        agent = self._agent_id

        def read(conn: Any) -> MemoryExport:
            out = MemoryExport()

            def fetch(sql: str, *params: Any) -> list[Row]:
                rows: list[Row] = conn.execute(sql, params).fetchall()
                return rows

            if entity_id is not None:
                entity = fetch("SELECT * FROM entities WHERE id = ? AND agent_id = ?", entity_id, agent)
                if not entity:
                    raise LookupError(entity_id)
                selection = _select_entity(conn, agent, entity_id, loads(entity[0]["names"], []))
                room_ids = sorted(
                    {
                        *selection.dm_rooms,
                        *(
                            r[0]
                            for r in fetch(
                                "SELECT room_id FROM participants WHERE entity_id = ? AND agent_id = ? "
                                "UNION SELECT room_id FROM memories WHERE entity_id = ? AND agent_id = ? AND room_id IS NOT NULL",
                                entity_id,
                                agent,
                                entity_id,
                                agent,
                            )
                        ),
                    }
                )
                memories = fetch(
                    f"SELECT {_MEMORY_COLUMNS} FROM memories m WHERE m.agent_id = ? AND (m.id IN "
                    "(SELECT value FROM json_each(?)) OR m.room_id IN (SELECT value FROM json_each(?))) "
                    "ORDER BY m.created_at, m.seq",
                    agent,
                    json_list(selection.memories),
                    json_list(selection.dm_rooms),
                )
                entities = entity
                participants = fetch(
                    "SELECT * FROM participants WHERE entity_id = ? AND agent_id = ?", entity_id, agent
                )
                relationships = fetch(
                    "SELECT * FROM relationships WHERE agent_id = ? AND (source_entity_id = ? OR target_entity_id = ?) "
                    "ORDER BY created_at, rowid",
                    agent,
                    entity_id,
                    entity_id,
                )
            elif room_id is not None:
                room_ids = [room_id]
                if not fetch("SELECT 1 FROM rooms WHERE id = ? AND agent_id = ?", room_id, agent):
                    raise LookupError(room_id)
                memories = fetch(
                    f"SELECT {_MEMORY_COLUMNS} FROM memories m WHERE m.agent_id = ? AND m.room_id = ? "
                    "ORDER BY m.created_at, m.seq",
                    agent,
                    room_id,
                )
                participants = fetch("SELECT * FROM participants WHERE room_id = ? AND agent_id = ?", room_id, agent)
                entities = fetch(
                    "SELECT * FROM entities WHERE agent_id = ? AND id IN (SELECT value FROM json_each(?)) "
                    "ORDER BY created_at, rowid",
                    agent,
                    json_list({*(p["entity_id"] for p in participants), *(m["entity_id"] for m in memories)}),
                )
                relationships = []
            else:
                room_ids = [r[0] for r in fetch("SELECT id FROM rooms WHERE agent_id = ?", agent)]
                memories = fetch(
                    f"SELECT {_MEMORY_COLUMNS} FROM memories m WHERE m.agent_id = ? ORDER BY m.created_at, m.seq", agent
                )
                participants = fetch("SELECT * FROM participants WHERE agent_id = ?", agent)
                entities = fetch("SELECT * FROM entities WHERE agent_id = ? ORDER BY created_at, rowid", agent)
                relationships = fetch(
                    "SELECT * FROM relationships WHERE agent_id = ? ORDER BY created_at, rowid", agent
                )
            rooms = fetch(
                "SELECT * FROM rooms WHERE agent_id = ? AND id IN (SELECT value FROM json_each(?)) "
                "ORDER BY created_at, rowid",
                agent,
                json_list(room_ids),
            )
            worlds = fetch(
                "SELECT * FROM worlds WHERE agent_id = ? AND id IN (SELECT value FROM json_each(?)) "
                "ORDER BY created_at, rowid",
                agent,
                json_list({r["world_id"] for r in rooms if r["world_id"]}),
            )
            components: dict[str, list[Any]] = {}
            for row in fetch(
                "SELECT * FROM components WHERE agent_id = ? AND entity_id IN "
                "(SELECT value FROM json_each(?)) ORDER BY created_at, rowid",
                agent,
                json_list(e["id"] for e in entities),
            ):
                components.setdefault(row["entity_id"], []).append(row_to_component(row))
            out.worlds = [row_to_world(r) for r in worlds]
            out.rooms = [row_to_room(r) for r in rooms]
            out.entities = [row_to_entity(r, components.get(r["id"], [])) for r in entities]
            out.participants = [
                Participation(p["entity_id"], p["room_id"], RoomState(p["room_state"]) if p["room_state"] else None)
                for p in participants
            ]
            out.memories = [row_to_memory(r) for r in memories]
            out.relationships = [row_to_relationship(r) for r in relationships]
            return out

        return await self._db.read(read)

    # -- forgetting --------------------------------------------------------------------------------

    async def _forget(self, work: Any, dry_run: bool) -> Forgotten:
        def run(conn: Any) -> Forgotten:
            before = conn.execute("PRAGMA secure_delete").fetchone()[0]
            conn.execute("PRAGMA secure_delete = ON")  # freed pages are zeroed, not left readable
            try:
                job = _Forget(conn, self._agent_id)
                work(job)
                if dry_run:
                    raise _DryRun(job.result)  # rolls the transaction back
                job.finish()
                return job.result
            finally:
                conn.execute(f"PRAGMA secure_delete = {int(before):d}")

        try:
            return await self._db.write(run)
        except _DryRun as counted:
            return counted.result

    async def forget_knowledge(self, *, dry_run: bool = False) -> Forgotten:
        """Delete this agent's knowledge in one transaction: its own documents, fragments and
        sources, and its claims on shared knowledge with the shared documents no other agent
        lists. For the shared scope's store (:data:`SHARED_KNOWLEDGE_ID`): all shared knowledge.

        A running agent stores again what its character lists at its next sync (start, reload).
        ``dry_run`` counts without deleting.
        """
        return await self._forget(lambda job: job.knowledge(), dry_run)

    async def forget_room(self, room_id: str, *, dry_run: bool = False) -> Forgotten:
        """Delete one of this agent's rooms with everything in it: messages, summaries, facts learned
        there, participants, components, logs, tasks and cache entries; one transaction.

        ``dry_run`` counts without deleting. Raises LookupError if the room is not this agent's,
        ValueError for the agent's own room.
        """
        if room_id == self._agent_id:
            raise ValueError("that is the agent's own room; use forget_all to clear everything")

        def work(job: _Forget) -> None:
            if (
                job.conn.execute(
                    "SELECT 1 FROM rooms WHERE id = ? AND agent_id = ?", (room_id, self._agent_id)
                ).fetchone()
                is None
            ):
                raise LookupError(room_id)
            job.room(room_id)
            job.cache()
            job.scrub("worlds", "id", ("metadata",), room_id)

        return await self._forget(work, dry_run)

    async def forget_entity(self, entity_id: str, *, dry_run: bool = False) -> Forgotten:
        """Delete everything this agent stores about one person (see the module docstring), in one
        transaction; other rows that mention their id keep everything else.

        ``dry_run`` counts without deleting. Raises LookupError if the entity is not this agent's,
        ValueError for the agent itself.
        """
        if entity_id == self._agent_id:
            raise ValueError("that is the agent itself; use forget_all to clear everything")
        agent = self._agent_id

        def work(job: _Forget) -> None:
            row = job.conn.execute(
                "SELECT names FROM entities WHERE id = ? AND agent_id = ?", (entity_id, agent)
            ).fetchone()
            if row is None:
                raise LookupError(entity_id)
            selection = _select_entity(job.conn, agent, entity_id, loads(row[0], []))
            for room in selection.dm_rooms:
                job.room(room)
            job.memories(selection.memories)
            for memory_id in selection.mentions:
                job.scrub("memories", "id", ("content", "metadata"), entity_id, " AND id = ?", (memory_id,))
            job.delete(
                "relationships",
                "agent_id = ? AND (source_entity_id = ? OR target_entity_id = ?)",
                (agent, entity_id, entity_id),
            )
            job.delete(
                "components", "agent_id = ? AND (entity_id = ? OR source_entity_id = ?)", (agent, entity_id, entity_id)
            )
            job.delete("participants", "entity_id = ?", (entity_id,))
            job.delete(
                "logs",
                "entity_id = ? OR (instr(body, ?) > 0 AND room_id IN (SELECT id FROM rooms WHERE agent_id = ?))",
                (entity_id, entity_id, agent),
            )
            job.delete(
                "tasks",
                "agent_id = ? AND (entity_id = ? OR instr(metadata, ?) > 0 OR instr(tags, ?) > 0)",
                (agent, entity_id, entity_id, entity_id),
            )
            job.cache(entity_id)
            for table, key, columns in (
                ("worlds", "id", ("metadata",)),
                ("rooms", "id", ("metadata",)),
                ("entities", "id", ("metadata",)),
                ("components", "id", ("data",)),
                ("relationships", "id", ("metadata",)),
            ):
                job.scrub(table, key, columns, entity_id)
            job.delete("entities", "id = ? AND agent_id = ?", (entity_id, agent))

        return await self._forget(work, dry_run)

    async def forget_all(self, *, dry_run: bool = False, knowledge: bool = False) -> Forgotten:
        """Delete everything this agent learned and keeps about people and conversations, in one
        transaction: every memory but its knowledge (documents and fragments), every entity and
        room but its own, worlds, relationships, components, participants, their logs, cache
        entries and tasks; with ``knowledge``, its knowledge too (see :meth:`forget_knowledge`).

        The agent's record, its own entity and room, and (without ``knowledge``) knowledge stay.
        ``dry_run`` counts without deleting.
        """
        agent = self._agent_id

        def work(job: _Forget) -> None:
            if knowledge:
                job.knowledge()
            kept = json_list(KNOWLEDGE_TABLES)
            # Rooms and entities that knowledge lives in or comes from stay, or it would cascade away.
            keep_rooms = {
                agent,
                *(
                    r[0]
                    for r in job.conn.execute(
                        "SELECT DISTINCT room_id FROM memories WHERE agent_id = ? AND room_id IS NOT NULL "
                        "AND type IN (SELECT value FROM json_each(?))",
                        (agent, kept),
                    )
                ),
            }
            keep_entities = {
                agent,
                *(
                    r[0]
                    for r in job.conn.execute(
                        "SELECT DISTINCT entity_id FROM memories WHERE agent_id = ? AND entity_id IS NOT NULL "
                        "AND type IN (SELECT value FROM json_each(?))",
                        (agent, kept),
                    )
                ),
            }
            job.memories(
                r[0]
                for r in job.conn.execute(
                    "SELECT id FROM memories WHERE agent_id = ? AND type NOT IN (SELECT value FROM json_each(?))",
                    (agent, kept),
                )
            )
            rooms = [
                r[0]
                for r in job.conn.execute("SELECT id FROM rooms WHERE agent_id = ?", (agent,))
                if r[0] not in keep_rooms
            ]
            for room in rooms:
                job.room(room)
            entities = json_list(
                r[0]
                for r in job.conn.execute("SELECT id FROM entities WHERE agent_id = ?", (agent,))
                if r[0] not in keep_entities
            )
            in_entities = "IN (SELECT value FROM json_each(?))"
            job.delete("relationships", "agent_id = ?", (agent,))
            job.delete("components", "agent_id = ?", (agent,))
            job.delete("participants", f"agent_id = ? AND entity_id {in_entities}", (agent, entities))
            job.delete("logs", f"entity_id {in_entities}", (entities,))
            job.delete("tasks", f"agent_id = ? AND (entity_id {in_entities})", (agent, entities))
            job.gone.update(json.loads(entities))
            job.cache()
            job.delete("worlds", "agent_id = ?", (agent,))
            job.delete("inbox", "agent_id = ?", (agent,))
            job.delete("entities", f"agent_id = ? AND id {in_entities}", (agent, entities))

        return await self._forget(work, dry_run)

"""Forgetting (``troupe memory forget``): a room, a person, everything, or the knowledge.

Each forget runs as one transaction that removes rows explicitly, table by table, so it can say
what went; cascades and the keyword-index triggers then have nothing left to do. A forget turns on
``secure_delete`` and rebuilds the keyword index, so deleted text does not linger in free pages or
in old index segments; :meth:`~bot.store.Database.checkpoint` afterwards moves it out of the
write-ahead log too. What a person's forget removes is in ``_selection``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

from bot.store._connect import Connection, Params
from bot.store._dialect import SQLITE
from bot.store._knowledge import DOCUMENTS, FRAGMENTS
from bot.store._rows import dumps, loads
from bot.store._scoped import AgentScoped, drive, json_list
from bot.store._selection import select_entity
from bot.store._values import KNOWLEDGE_TABLES, SHARED_KNOWLEDGE_ID, Forgotten

__all__ = ["UUID_PATTERN", "DryRun", "ForgettingMixin", "Tally", "scrubbed"]

#: A UUID in any text: cache entries naming a forgotten row's id go with it.
UUID_PATTERN = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_SCRUBBED = "[forgotten]"


class DryRun(Exception):
    """Raised inside a forget transaction to roll it back after counting."""

    def __init__(self, result: Forgotten) -> None:
        super().__init__("dry run")
        self.result = result


class Tally:
    """What one forget (of either backend) has deleted so far: counts, and the ids gone."""

    def __init__(self, agent_id: str) -> None:
        self.agent = agent_id
        self.result = Forgotten()
        self.gone: set[str] = set()  # ids of deleted rows of any kind: cache entries naming them go too

    def _add(self, bucket: dict[str, int], key: str, n: int) -> None:
        if n:
            bucket[key] = bucket.get(key, 0) + n

    def stale(self, entries: Iterable[tuple[str, object]], extra: Iterable[str]) -> list[str]:
        """The keys of the cache ``entries`` (key, value) that name anything gone (or ``extra`` ids)."""
        gone = self.gone | set(extra)
        return [key for key, value in entries if gone.intersection(UUID_PATTERN.findall(f"{key} {value}"))]


class _Forget(Tally):
    """One forget, on the writer's thread inside its transaction: deletes and counts."""

    def __init__(self, conn: Connection, agent_id: str) -> None:
        super().__init__(agent_id)
        self.conn = conn

    def delete(self, table: str, where: str, params: Params) -> int:
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
        self, table: str, key: str, columns: Sequence[str], needle: str, where: str = "", params: Params = ()
    ) -> None:
        """Remove ``needle`` from the JSON ``columns`` of the agent's rows of ``table`` that mention it."""
        mentions = " OR ".join(f"instr({c}, ?) > 0" for c in columns)
        sql = f"SELECT {key}, {', '.join(columns)} FROM {table} WHERE agent_id = ? AND ({mentions}){where}"
        edited = 0
        for row in self.conn.execute(sql, (self.agent, *[needle] * len(columns), *params)).fetchall():
            values = [dumps(scrubbed(loads(row[c]), needle)) if row[c] is not None else None for c in columns]
            sets = ", ".join(f"{c} = ?" for c in columns)
            self.conn.execute(f"UPDATE {table} SET {sets} WHERE {key} = ?", (*values, row[0]))
            edited += 1
        self._add(self.result.edited, table, edited)

    def cache(self, *extra: str) -> None:
        """Delete the agent's cache entries that name anything deleted (or ``extra`` ids)."""
        entries = self.conn.execute("SELECT key, value FROM cache WHERE agent_id = ?", (self.agent,)).fetchall()
        for key in self.stale(((r[0], r[1]) for r in entries), extra):
            self.delete("cache", "key = ? AND agent_id = ?", (key, self.agent))

    def finish(self) -> None:
        """Rebuild the keyword index: deleted words must not survive in its old segments."""
        self.conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('optimize')")


def scrubbed(value: object, needle: str) -> object:
    """``value`` without ``needle``: dict keys and list items equal to it go, strings lose it."""
    if isinstance(value, dict):
        return {k: scrubbed(v, needle) for k, v in value.items() if k != needle and v != needle}
    if isinstance(value, list):
        return [scrubbed(v, needle) for v in value if v != needle]
    if isinstance(value, str):
        return value.replace(needle, _SCRUBBED)
    return value


class ForgettingMixin(AgentScoped):
    """Forgetting what the agent stores: one room, one person, everything, or its knowledge."""

    __slots__ = ()

    async def _forget(self, work: Callable[[_Forget], None], dry_run: bool) -> Forgotten:
        def run(conn: Connection) -> Forgotten:
            before = conn.execute("PRAGMA secure_delete").fetchone()[0]
            conn.execute("PRAGMA secure_delete = ON")  # freed pages are zeroed, not left readable
            try:
                job = _Forget(conn, self._agent_id)
                work(job)
                if dry_run:
                    raise DryRun(job.result)  # rolls the transaction back
                job.finish()
                return job.result
            finally:
                conn.execute(f"PRAGMA secure_delete = {int(before):d}")

        try:
            return await self._db.write(run)
        except DryRun as counted:
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
            selection = drive(job.conn, select_entity(agent, entity_id, loads(row[0], []), SQLITE.id_list))
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

"""Forgetting (``troupe memory forget``): a room, a person, everything, or the knowledge.

Each forget runs as one transaction that removes rows explicitly, table by table, so it can say
what went; cascades and the keyword-index triggers then have nothing left to do. On SQLite a
forget turns on ``secure_delete`` and rebuilds the keyword index, so deleted text does not linger
in free pages or in old index segments; :meth:`~bot.store.Database.checkpoint` afterwards moves it
out of the write-ahead log too. What a person's forget removes is in ``_selection``. Both backends.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

from bot.store._dialect import Dialect, Statements, Step, Unit
from bot.store._knowledge import DOCUMENTS, FRAGMENTS, ORPHAN_DOCUMENTS
from bot.store._rows import Row, dumps, loads
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
    """One forget, inside its transaction: the statements that delete, and their counts."""

    def __init__(self, agent_id: str, dialect: Dialect) -> None:
        super().__init__(agent_id)
        self.ids = dialect.id_list

    def rows(self, sql: str, *params: object) -> Unit[Sequence[Row]]:
        return (yield Step(sql, params)).rows

    def delete(self, table: str, where: str, *params: object) -> Unit[int]:
        n = (yield Step(f"DELETE FROM {table} WHERE {where}", params)).rowcount
        self._add(self.result.rows, table, n)
        return n

    def memories(self, ids: Iterable[str], scope: str | None = None) -> Unit[None]:
        """Delete these memories of the agent (or of ``scope``: the shared knowledge) and their
        vectors, counted by memory table."""
        wanted = sorted(set(ids))
        if not wanted:
            return
        owner = scope or self.agent
        rows = yield from self.rows(
            "SELECT id, type FROM memories WHERE {scan_agent}agent_id = ? AND id {in_list}", owner, self.ids(wanted)
        )
        if not rows:
            return
        for table, n in Counter(r["type"] for r in rows).items():
            self._add(self.result.memories, table, n)
        found = [r["id"] for r in rows]
        yield from self.delete("embeddings", "memory_id {in_list}", self.ids(found))
        yield Step("DELETE FROM memories WHERE {scan_agent}agent_id = ? AND id {in_list}", (owner, self.ids(found)))
        self.gone.update(found)

    def knowledge(self) -> Unit[None]:
        """Delete the agent's knowledge: its sources and documents, and its claims on the shared
        scope with the shared documents no other agent claims (for the shared scope itself:
        all of it). Its next sync stores again whatever its character still lists."""
        yield from self.delete(
            "knowledge_sources",
            "scope_id = ? OR (scope_id = ? AND owner_id = ?)",
            self.agent,
            SHARED_KNOWLEDGE_ID,
            self.agent,
        )
        for scope in dict.fromkeys((self.agent, SHARED_KNOWLEDGE_ID)):
            orphans = [r["id"] for r in (yield from self.rows(ORPHAN_DOCUMENTS, scope, DOCUMENTS))]
            fragments = yield from self.rows(
                "SELECT id FROM memories WHERE agent_id = ? AND type = ? AND {json_text:metadata.documentId} {in_list}",
                scope,
                FRAGMENTS,
                self.ids(orphans),
            )
            yield from self.memories([*orphans, *(r["id"] for r in fragments)], scope)

    def room(self, room_id: str) -> Unit[None]:
        """Delete one of the agent's rooms and everything in it."""
        rows = yield from self.rows("SELECT id FROM memories WHERE agent_id = ? AND room_id = ?", self.agent, room_id)
        yield from self.memories(r["id"] for r in rows)
        yield from self.delete("participants", "room_id = ?", room_id)
        yield from self.delete("components", "room_id = ? AND agent_id = ?", room_id, self.agent)
        yield from self.delete("logs", "room_id = ?", room_id)
        yield from self.delete("message_handling", "agent_id = ? AND room_id = ?", self.agent, room_id)
        yield from self.delete("tasks", "room_id = ? AND agent_id = ?", room_id, self.agent)
        yield from self.delete("rooms", "id = ? AND agent_id = ?", room_id, self.agent)
        self.gone.add(room_id)

    def scrub(
        self, table: str, columns: Sequence[str], needle: str, where: str = "", params: Sequence[object] = ()
    ) -> Unit[None]:
        """Remove ``needle`` from the JSON ``columns`` of the agent's rows of ``table`` (keyed by
        ``id``) that mention it."""
        mentions = " OR ".join(f"{{json_holds:{c}}}" for c in columns)
        rows = yield from self.rows(
            f"SELECT id, {', '.join(columns)} FROM {table} WHERE agent_id = ? AND ({mentions}){where}",
            self.agent,
            *[needle] * len(columns),
            *params,
        )
        sets = ", ".join(f"{c} = ?{{json}}" for c in columns)
        for row in rows:
            values = [dumps(scrubbed(loads(row[c]), needle)) if row[c] is not None else None for c in columns]
            yield Step(f"UPDATE {table} SET {sets} WHERE id = ?", (*values, row["id"]))
        self._add(self.result.edited, table, len(rows))

    def cache(self, *extra: str) -> Unit[None]:
        """Delete the agent's cache entries that name anything deleted (or ``extra`` ids)."""
        entries = yield from self.rows("SELECT key, value FROM cache WHERE agent_id = ?", self.agent)
        stale = self.stale(((r["key"], r["value"]) for r in entries), extra)
        if stale:
            yield from self.delete("cache", "agent_id = ? AND key {in_list}", self.agent, self.ids(stale))


def scrubbed(value: object, needle: str) -> object:
    """``value`` without ``needle``: dict keys and list items equal to it go, strings lose it."""
    if isinstance(value, dict):
        return {k: scrubbed(v, needle) for k, v in value.items() if k != needle and v != needle}
    if isinstance(value, list):
        return [scrubbed(v, needle) for v in value if v != needle]
    if isinstance(value, str):
        return value.replace(needle, _SCRUBBED)
    return value


class ForgettingMixin(Statements):
    """Forgetting what the agent stores: one room, one person, everything, or its knowledge."""

    __slots__ = ()

    async def _forget(self, work: Callable[[_Forget], Unit[None]], dry_run: bool) -> Forgotten:
        dialect = self.dialect

        def run() -> Unit[Forgotten]:
            if dialect.secure_delete:  # freed pages are zeroed, not left readable
                before = (yield Step("PRAGMA secure_delete")).rows[0]["secure_delete"]
                yield Step("PRAGMA secure_delete = ON")
            try:
                job = _Forget(self._agent_id, dialect)
                yield from work(job)
                if dry_run:
                    raise DryRun(job.result)  # rolls the transaction back
                for sql in dialect.after_forget:
                    yield Step(sql)
                return job.result
            finally:
                if dialect.secure_delete:
                    yield Step(f"PRAGMA secure_delete = {int(before):d}")

        try:
            return await self._write(run, tables=None)
        except DryRun as counted:
            return counted.result

    async def forget_knowledge(self, *, dry_run: bool = False) -> Forgotten:
        """Delete this agent's knowledge in one transaction: its own documents, fragments and
        sources, and its claims on shared knowledge with the shared documents no other agent
        lists. For the shared scope's store (:data:`SHARED_KNOWLEDGE_ID`): all shared knowledge.

        A running agent stores again what its character lists at its next sync (start, reload).
        ``dry_run`` counts without deleting.
        """
        return await self._forget(_Forget.knowledge, dry_run)

    async def forget_room(self, room_id: str, *, dry_run: bool = False) -> Forgotten:
        """Delete one of this agent's rooms with everything in it: messages, summaries, facts learned
        there, participants, components, logs, tasks and cache entries; one transaction.

        ``dry_run`` counts without deleting. Raises LookupError if the room is not this agent's,
        ValueError for the agent's own room.
        """
        if room_id == self._agent_id:
            raise ValueError("that is the agent's own room; use forget_all to clear everything")

        def work(job: _Forget) -> Unit[None]:
            if not (yield from job.rows("SELECT id FROM rooms WHERE id = ? AND agent_id = ?", room_id, job.agent)):
                raise LookupError(room_id)
            yield from job.room(room_id)
            yield from job.cache()
            yield from job.scrub("worlds", ("metadata",), room_id)

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

        def work(job: _Forget) -> Unit[None]:
            rows = yield from job.rows("SELECT names FROM entities WHERE id = ? AND agent_id = ?", entity_id, agent)
            if not rows:
                raise LookupError(entity_id)
            selection = yield from select_entity(agent, entity_id, loads(rows[0]["names"], []), job.ids)
            for room in selection.dm_rooms:
                yield from job.room(room)
            yield from job.memories(selection.memories)
            if selection.mentions:
                yield from job.scrub(
                    "memories", ("content", "metadata"), entity_id, " AND id {in_list}", (job.ids(selection.mentions),)
                )
            for table, first, second in (
                ("relationships", "source_entity_id", "target_entity_id"),
                ("components", "entity_id", "source_entity_id"),
            ):
                yield from job.delete(
                    table, f"agent_id = ? AND ({first} = ? OR {second} = ?)", agent, entity_id, entity_id
                )
            yield from job.delete("participants", "entity_id = ?", entity_id)
            yield from job.delete(
                "logs",
                "entity_id = ? OR ({json_holds:body} AND room_id IN (SELECT id FROM rooms WHERE agent_id = ?))",
                entity_id,
                entity_id,
                agent,
            )
            yield from job.delete(
                "tasks",
                "agent_id = ? AND (entity_id = ? OR {json_holds:metadata} OR {json_holds:tags})",
                agent,
                entity_id,
                entity_id,
                entity_id,
            )
            yield from job.cache(entity_id)
            for table, columns in (
                ("worlds", ("metadata",)),
                ("rooms", ("metadata",)),
                ("entities", ("metadata",)),
                ("components", ("data",)),
                ("relationships", ("metadata",)),
            ):
                yield from job.scrub(table, columns, entity_id)
            yield from job.delete("entities", "id = ? AND agent_id = ?", entity_id, agent)

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

        def work(job: _Forget) -> Unit[None]:
            if knowledge:
                yield from job.knowledge()
            kept = job.ids(KNOWLEDGE_TABLES)
            # Rooms and entities that knowledge lives in or comes from stay, or it would cascade away.
            keep_rooms = {
                agent,
                *(
                    r["room_id"]
                    for r in (
                        yield from job.rows(
                            "SELECT DISTINCT room_id FROM memories WHERE agent_id = ? AND room_id IS NOT NULL "
                            "AND type {in_list}",
                            agent,
                            kept,
                        )
                    )
                ),
            }
            keep_entities = {
                agent,
                *(
                    r["entity_id"]
                    for r in (
                        yield from job.rows(
                            "SELECT DISTINCT entity_id FROM memories WHERE agent_id = ? AND entity_id IS NOT NULL "
                            "AND type {in_list}",
                            agent,
                            kept,
                        )
                    )
                ),
            }
            others = yield from job.rows(
                "SELECT id FROM memories WHERE agent_id = ? AND type {not_in_list}", agent, kept
            )
            yield from job.memories(r["id"] for r in others)
            for row in (yield from job.rows("SELECT id FROM rooms WHERE agent_id = ?", agent)):
                if row["id"] not in keep_rooms:
                    yield from job.room(row["id"])
            entities = [
                r["id"]
                for r in (yield from job.rows("SELECT id FROM entities WHERE agent_id = ?", agent))
                if r["id"] not in keep_entities
            ]
            in_entities = job.ids(entities)
            yield from job.delete("relationships", "agent_id = ?", agent)
            yield from job.delete("components", "agent_id = ?", agent)
            yield from job.delete("participants", "agent_id = ? AND entity_id {in_list}", agent, in_entities)
            yield from job.delete("logs", "entity_id {in_list}", in_entities)
            yield from job.delete("tasks", "agent_id = ? AND entity_id {in_list}", agent, in_entities)
            job.gone.update(entities)
            yield from job.cache()
            yield from job.delete("worlds", "agent_id = ?", agent)
            yield from job.delete("inbox", "agent_id = ?", agent)
            yield from job.delete("entities", "agent_id = ? AND id {in_list}", agent, in_entities)

        return await self._forget(work, dry_run)

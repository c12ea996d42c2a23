"""Forgetting on PostgreSQL (``troupe memory forget``): a room, a person, everything, or the knowledge.

What each forget removes is SQLite's (``bot/store/_forgetting.py``; a person's selection is in
``_selection``): one transaction that deletes explicitly, table by table, so it can say what
went, or on a dry run counts the same and rolls back. What SQLite adds to keep deleted text out
of the file (``secure_delete``, rebuilding the keyword index) has no counterpart here: the
keyword index is a column of the row, and VACUUM reclaims dead rows in its own time.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from bot.store._dialect import POSTGRES
from bot.store._forgetting import DryRun, Tally, scrubbed
from bot.store._knowledge import DOCUMENTS, FRAGMENTS
from bot.store._rows import loads
from bot.store._selection import select_entity
from bot.store._values import KNOWLEDGE_TABLES, SHARED_KNOWLEDGE_ID, Forgotten
from bot.store.postgres._knowledge import orphan_documents_sql
from bot.store.postgres._scoped import PgScoped, drive

__all__ = ["PgForgettingMixin"]

Connection = psycopg.AsyncConnection[Any]


class _Forget(Tally):
    """One forget inside its transaction: deletes and counts."""

    def __init__(self, conn: Connection, agent_id: str) -> None:
        super().__init__(agent_id)
        self.conn = conn

    async def ids(self, sql: str, params: Sequence[object]) -> list[str]:
        """The first column of each row of a query, as strings."""
        cur = await self.conn.execute(sql, params)
        return [next(iter(r.values())) for r in await cur.fetchall()]

    async def delete(self, table: str, where: str, params: Sequence[object]) -> int:
        cur = await self.conn.execute(f"DELETE FROM {table} WHERE {where}", params)
        self._add(self.result.rows, table, cur.rowcount)
        return cur.rowcount

    async def memories(self, ids: Iterable[str], scope: str | None = None) -> None:
        """Delete these memories of the agent (or of ``scope``: the shared knowledge) and their
        vectors, counted by memory table."""
        wanted = sorted(set(ids))
        if not wanted:
            return
        owner = scope or self.agent
        cur = await self.conn.execute(
            "SELECT id, type FROM memories WHERE agent_id = %s AND id = ANY(%s)", (owner, wanted)
        )
        rows = await cur.fetchall()
        if not rows:
            return
        for table, n in Counter(r["type"] for r in rows).items():
            self._add(self.result.memories, table, n)
        found = [r["id"] for r in rows]
        await self.delete("embeddings", "memory_id = ANY(%s)", (found,))
        await self.conn.execute("DELETE FROM memories WHERE agent_id = %s AND id = ANY(%s)", (owner, found))
        self.gone.update(found)

    async def knowledge(self) -> None:
        """Delete the agent's knowledge: its sources and documents, and its claims on the shared
        scope with the shared documents no other agent claims (for the shared scope itself:
        all of it)."""
        await self.delete(
            "knowledge_sources",
            "scope_id = %s OR (scope_id = %s AND owner_id = %s)",
            (self.agent, SHARED_KNOWLEDGE_ID, self.agent),
        )
        for scope in dict.fromkeys((self.agent, SHARED_KNOWLEDGE_ID)):
            orphans = await self.ids(orphan_documents_sql(), (scope, DOCUMENTS))
            fragments = await self.ids(
                "SELECT id FROM memories WHERE agent_id = %s AND type = %s AND metadata->>'documentId' = ANY(%s)",
                (scope, FRAGMENTS, orphans),
            )
            await self.memories([*orphans, *fragments], scope)

    async def room(self, room_id: str) -> None:
        """Delete one of the agent's rooms and everything in it."""
        await self.memories(
            await self.ids("SELECT id FROM memories WHERE agent_id = %s AND room_id = %s", (self.agent, room_id))
        )
        await self.delete("participants", "room_id = %s", (room_id,))
        await self.delete("components", "room_id = %s AND agent_id = %s", (room_id, self.agent))
        await self.delete("logs", "room_id = %s", (room_id,))
        await self.delete("message_handling", "agent_id = %s AND room_id = %s", (self.agent, room_id))
        await self.delete("tasks", "room_id = %s AND agent_id = %s", (room_id, self.agent))
        await self.delete("rooms", "id = %s AND agent_id = %s", (room_id, self.agent))
        self.gone.add(room_id)

    async def scrub(
        self, table: str, columns: Sequence[str], needle: str, where: str = "", params: Sequence[object] = ()
    ) -> None:
        """Remove ``needle`` from the JSON ``columns`` of the agent's rows of ``table`` (keyed by
        ``id``) that mention it."""
        mentions = " OR ".join(f"strpos({c}::text, %s) > 0" for c in columns)
        cur = await self.conn.execute(
            f"SELECT id, {', '.join(columns)} FROM {table} WHERE agent_id = %s AND ({mentions}){where}",
            (self.agent, *[needle] * len(columns), *params),
        )
        rows = await cur.fetchall()
        sets = ", ".join(f"{c} = %s" for c in columns)
        for row in rows:
            values = [Jsonb(scrubbed(loads(row[c]), needle)) if row[c] is not None else None for c in columns]
            await self.conn.execute(f"UPDATE {table} SET {sets} WHERE id = %s", (*values, row["id"]))
        self._add(self.result.edited, table, len(rows))

    async def cache(self, *extra: str) -> None:
        """Delete the agent's cache entries that name anything deleted (or ``extra`` ids)."""
        cur = await self.conn.execute("SELECT key, value FROM cache WHERE agent_id = %s", (self.agent,))
        stale = self.stale(((r["key"], r["value"]) for r in await cur.fetchall()), extra)
        if stale:
            await self.delete("cache", "agent_id = %s AND key = ANY(%s)", (self.agent, stale))


class PgForgettingMixin(PgScoped):
    """Forgetting what the agent stores: one room, one person, everything, or its knowledge."""

    __slots__ = ()

    async def _forget(self, work: Callable[[_Forget], Awaitable[None]], dry_run: bool) -> Forgotten:
        try:
            async with self._db.transaction() as conn:
                job = _Forget(conn, self._agent_id)
                await work(job)
                if dry_run:
                    raise DryRun(job.result)  # rolls the transaction back
                return job.result
        except DryRun as counted:
            return counted.result

    async def forget_knowledge(self, *, dry_run: bool = False) -> Forgotten:
        """Delete this agent's knowledge in one transaction: its own documents, fragments and
        sources, and its claims on shared knowledge with the shared documents no other agent
        lists. For the shared scope's store (:data:`SHARED_KNOWLEDGE_ID`): all shared knowledge.
        ``dry_run`` counts without deleting."""
        return await self._forget(_Forget.knowledge, dry_run)

    async def forget_room(self, room_id: str, *, dry_run: bool = False) -> Forgotten:
        """Delete one of this agent's rooms with everything in it, in one transaction.

        ``dry_run`` counts without deleting. Raises LookupError if the room is not this agent's,
        ValueError for the agent's own room.
        """
        if room_id == self._agent_id:
            raise ValueError("that is the agent's own room; use forget_all to clear everything")

        async def work(job: _Forget) -> None:
            if not await job.ids("SELECT id FROM rooms WHERE id = %s AND agent_id = %s", (room_id, self._agent_id)):
                raise LookupError(room_id)
            await job.room(room_id)
            await job.cache()
            await job.scrub("worlds", ("metadata",), room_id)

        return await self._forget(work, dry_run)

    async def forget_entity(self, entity_id: str, *, dry_run: bool = False) -> Forgotten:
        """Delete everything this agent stores about one person, in one transaction; other rows
        that mention their id keep everything else.

        ``dry_run`` counts without deleting. Raises LookupError if the entity is not this agent's,
        ValueError for the agent itself.
        """
        if entity_id == self._agent_id:
            raise ValueError("that is the agent itself; use forget_all to clear everything")
        agent = self._agent_id

        async def work(job: _Forget) -> None:
            cur = await job.conn.execute(
                "SELECT names FROM entities WHERE id = %s AND agent_id = %s", (entity_id, agent)
            )
            row = await cur.fetchone()
            if row is None:
                raise LookupError(entity_id)
            selection = await drive(
                job.conn, select_entity(agent, entity_id, loads(row["names"], []), POSTGRES.id_list)
            )
            for room in selection.dm_rooms:
                await job.room(room)
            await job.memories(selection.memories)
            if selection.mentions:
                await job.scrub(
                    "memories", ("content", "metadata"), entity_id, " AND id = ANY(%s)", (selection.mentions,)
                )
            for table, first, second in (
                ("relationships", "source_entity_id", "target_entity_id"),
                ("components", "entity_id", "source_entity_id"),
            ):
                await job.delete(
                    table, f"agent_id = %s AND ({first} = %s OR {second} = %s)", (agent, entity_id, entity_id)
                )
            await job.delete("participants", "entity_id = %s", (entity_id,))
            await job.delete(
                "logs",
                "entity_id = %s OR (strpos(body::text, %s) > 0 AND room_id IN (SELECT id FROM rooms WHERE agent_id = %s))",
                (entity_id, entity_id, agent),
            )
            await job.delete(
                "tasks",
                "agent_id = %s AND (entity_id = %s OR strpos(metadata::text, %s) > 0 OR strpos(tags::text, %s) > 0)",
                (agent, entity_id, entity_id, entity_id),
            )
            await job.cache(entity_id)
            for table, columns in (
                ("worlds", ("metadata",)),
                ("rooms", ("metadata",)),
                ("entities", ("metadata",)),
                ("components", ("data",)),
                ("relationships", ("metadata",)),
            ):
                await job.scrub(table, columns, entity_id)
            await job.delete("entities", "id = %s AND agent_id = %s", (entity_id, agent))

        return await self._forget(work, dry_run)

    async def forget_all(self, *, dry_run: bool = False, knowledge: bool = False) -> Forgotten:
        """Delete everything this agent learned and keeps about people and conversations, in one
        transaction (see SQLite's): every memory but its knowledge, every entity and room but its
        own, worlds, relationships, components, participants, their logs, cache entries and tasks;
        with ``knowledge``, its knowledge too. ``dry_run`` counts without deleting."""
        agent = self._agent_id
        kept = list(KNOWLEDGE_TABLES)

        async def work(job: _Forget) -> None:
            if knowledge:
                await job.knowledge()
            # Rooms and entities that knowledge lives in or comes from stay, or it would cascade away.
            keep_rooms = {
                agent,
                *await job.ids(
                    "SELECT DISTINCT room_id FROM memories WHERE agent_id = %s AND room_id IS NOT NULL "
                    "AND type = ANY(%s)",
                    (agent, kept),
                ),
            }
            keep_entities = {
                agent,
                *await job.ids(
                    "SELECT DISTINCT entity_id FROM memories WHERE agent_id = %s AND entity_id IS NOT NULL "
                    "AND type = ANY(%s)",
                    (agent, kept),
                ),
            }
            await job.memories(
                await job.ids("SELECT id FROM memories WHERE agent_id = %s AND NOT type = ANY(%s)", (agent, kept))
            )
            for room in await job.ids("SELECT id FROM rooms WHERE agent_id = %s", (agent,)):
                if room not in keep_rooms:
                    await job.room(room)
            entities = [
                e
                for e in await job.ids("SELECT id FROM entities WHERE agent_id = %s", (agent,))
                if e not in keep_entities
            ]
            await job.delete("relationships", "agent_id = %s", (agent,))
            await job.delete("components", "agent_id = %s", (agent,))
            await job.delete("participants", "agent_id = %s AND entity_id = ANY(%s)", (agent, entities))
            await job.delete("logs", "entity_id = ANY(%s)", (entities,))
            await job.delete("tasks", "agent_id = %s AND entity_id = ANY(%s)", (agent, entities))
            job.gone.update(entities)
            await job.cache()
            await job.delete("worlds", "agent_id = %s", (agent,))
            await job.delete("inbox", "agent_id = %s", (agent,))
            await job.delete("entities", "agent_id = %s AND id = ANY(%s)", (agent, entities))

        return await self._forget(work, dry_run)

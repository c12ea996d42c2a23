"""The PostgreSQL store's cache, logs and tasks (SQLite's: bot/store/_records.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bot.errors import StoreError
from bot.store._protocol import JSONValue
from bot.store._rows import dumps, loads, log_row, row_to_log, row_to_task, task_row, task_updates
from bot.store._scoped import json_list, new_id, validate_count
from bot.store.postgres._schema import NOW_MS
from bot.store.postgres._scoped import PgScoped
from bot.types import LogEntry, Task, now_ms

__all__ = ["PgRecordsMixin"]

# The rooms a log may be read or deleted from: logs have no agent_id; rooms do, and room ids
# are agent-specific.
_IN_AGENT_ROOMS = "room_id IN (SELECT id FROM rooms WHERE agent_id = %s)"


class PgRecordsMixin(PgScoped):
    """The ``cache``, ``logs`` and ``tasks`` tables."""

    __slots__ = ()

    # -- cache -------------------------------------------------------------------------------------

    async def get_cache(self, key: str) -> JSONValue:
        """This agent's cached value for ``key``; None if absent, expired or unreadable."""
        try:
            row = await self._db.fetchone(
                f"SELECT value, expires_at <= {NOW_MS} AS expired FROM cache WHERE key = %s AND agent_id = %s",
                (key, self._agent_id),
            )
        except StoreError as exc:
            self._fail("get_cache", exc)
            return None
        if row is None:
            return None
        if row["expired"]:
            # Expired rows are removed lazily, by whoever reads them next.
            await self._db.execute(
                f"DELETE FROM cache WHERE key = %s AND agent_id = %s AND expires_at <= {NOW_MS}",
                (key, self._agent_id),
            )
            return None
        value: JSONValue = loads(row["value"])
        return value

    async def set_cache(self, key: str, value: JSONValue, *, expires_at: int | None = None) -> bool:
        """Cache ``value`` (anything JSON) under ``key`` for this agent until ``expires_at`` (ms, None:
        forever); False on error (e.g. a value JSON cannot hold)."""
        try:
            # ``expires_at`` is in this machine's clock: kept as the time left from now, counted
            # on the database's clock, which every daemon reads it by.
            local = now_ms()
            await self._db.execute(
                "INSERT INTO cache (key, agent_id, value, created_at, expires_at) "
                f"VALUES (%s, %s, %s::jsonb, {NOW_MS}, {NOW_MS} + %s::bigint - %s::bigint) "
                "ON CONFLICT (key, agent_id) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at",
                (key, self._agent_id, dumps(value), expires_at, local),
            )
        except (StoreError, TypeError, ValueError) as exc:
            return self._fail("set_cache", exc)
        return True

    async def delete_cache(self, key: str) -> bool:
        """Remove ``key`` from this agent's cache; True even if it was absent, False on error."""
        try:
            await self._db.execute("DELETE FROM cache WHERE key = %s AND agent_id = %s", (key, self._agent_id))
        except StoreError as exc:
            return self._fail("delete_cache", exc)
        return True

    # -- logs --------------------------------------------------------------------------------------

    async def log(self, body: Mapping[str, object], entity_id: str, room_id: str, type: str) -> str:
        """Append a structured log entry (made JSON-safe) and return its id; StoreError if its
        entity or room does not exist (see ``AgentStore.log``)."""
        row = log_row(body, entity_id, room_id, type)
        await self._db.execute(
            "INSERT INTO logs (id, created_at, entity_id, body, type, room_id) VALUES (%s, %s, %s, %s::jsonb, %s, %s)",
            row,
        )
        return row[0]

    def queue_log(self, body: Mapping[str, object], entity_id: str, room_id: str, type: str) -> str:
        """Like :meth:`log`, but written soon, with others (see ``QueuedLogs``); returns its id."""
        row = log_row(body, entity_id, room_id, type)
        self._db.log_queue.put(row)
        return row[0]

    async def get_logs(
        self,
        *,
        entity_id: str | None = None,
        room_id: str | None = None,
        type: str | None = None,
        count: int = 10,
        offset: int = 0,
    ) -> list[LogEntry]:
        """Log entries in this agent's rooms, newest first, optionally filtered."""
        validate_count(count)
        validate_count(offset, "offset")
        await self._db.log_queue.flush()  # rows queued by queue_log are part of the log
        clauses = [_IN_AGENT_ROOMS]
        params: list[object] = [self._agent_id]
        for column, value in (("entity_id", entity_id), ("room_id", room_id), ("type", type)):
            if value is not None:
                clauses.append(f"{column} = %s")  # column is one of the three above
                params.append(value)
        rows = await self._db.fetchall(
            f"SELECT * FROM logs WHERE {' AND '.join(clauses)} ORDER BY created_at DESC, seq DESC LIMIT %s OFFSET %s",
            (*params, count, offset),
        )
        return [row_to_log(r) for r in rows]

    async def delete_log(self, log_id: str) -> bool:
        """Delete a log entry in one of this agent's rooms; False if not found."""
        await self._db.log_queue.flush()  # it may still be queued
        deleted = await self._db.execute(
            f"DELETE FROM logs WHERE id = %s AND {_IN_AGENT_ROOMS}", (log_id, self._agent_id)
        )
        return deleted > 0

    async def prune_logs(self, before: int) -> int:
        """Delete this agent's log entries written before ``before`` (ms); how many went."""
        await self._db.log_queue.flush()
        return await self._db.execute(
            f"DELETE FROM logs WHERE created_at < %s AND {_IN_AGENT_ROOMS}", (before, self._agent_id)
        )

    # -- tasks -------------------------------------------------------------------------------------

    async def create_task(self, task: Task) -> str:
        """Store a task for this agent and return its id (a new one if it has none)."""
        task_id = task.id or new_id()
        await self._db.execute(
            "INSERT INTO tasks (id, name, description, room_id, world_id, entity_id, agent_id, tags, metadata, "
            "created_at, updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s::jsonb, %s, %s)",
            task_row(task, task_id, self._agent_id, now_ms()),
        )
        return task_id

    async def get_tasks(
        self,
        *,
        room_id: str | None = None,
        tags: Sequence[str] | None = None,
        entity_id: str | None = None,
    ) -> list[Task]:
        """This agent's tasks, oldest first, in ``room_id``, of ``entity_id``, and having all of ``tags``."""
        clauses = ["agent_id = %s"]
        params: list[object] = [self._agent_id]
        for column, value in (("room_id", room_id), ("entity_id", entity_id)):
            if value is not None:
                clauses.append(f"{column} = %s")  # column is one of the two above
                params.append(value)
        if tags:
            clauses.append("tags @> %s::jsonb")  # the task's tags hold every one asked for
            params.append(json_list(tags))
        return await self._tasks(" AND ".join(clauses), params)

    async def get_task(self, task_id: str) -> Task | None:
        """One of this agent's tasks, or None."""
        tasks = await self._tasks("id = %s AND agent_id = %s", (task_id, self._agent_id))
        return tasks[0] if tasks else None

    async def get_tasks_by_name(self, name: str) -> list[Task]:
        """This agent's tasks called ``name``, oldest first."""
        return await self._tasks("agent_id = %s AND name = %s", (self._agent_id, name))

    async def _tasks(self, where: str, params: Sequence[object]) -> list[Task]:
        rows = await self._db.fetchall(f"SELECT * FROM tasks WHERE {where} ORDER BY created_at, seq", params)
        return [row_to_task(r) for r in rows]

    async def update_task(self, task_id: str, changes: Mapping[str, Any]) -> bool:
        """Update the given fields of one of this agent's tasks (see ``AgentStore.update_task``);
        False if not found."""
        updates = task_updates(changes)
        # The column names are task_updates' whitelist; tags and metadata come as JSON text.
        sets = ["updated_at = %s"]
        sets += [f"{name} = %s::jsonb" if name in ("tags", "metadata") else f"{name} = %s" for name in updates]
        changed = await self._db.execute(
            f"UPDATE tasks SET {', '.join(sets)} WHERE id = %s AND agent_id = %s",
            (now_ms(), *updates.values(), task_id, self._agent_id),
        )
        return changed > 0

    async def delete_task(self, task_id: str) -> bool:
        """Delete one of this agent's tasks; False if not found."""
        deleted = await self._db.execute("DELETE FROM tasks WHERE id = %s AND agent_id = %s", (task_id, self._agent_id))
        return deleted > 0

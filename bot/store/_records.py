"""Relationships, the cache, logs and tasks. Both backends."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bot.kernel.errors import StoreError
from bot.kernel.record_metadata import RelationshipMetadata
from bot.kernel.types import LogEntry, Relationship, Task, now_ms
from bot.store._dialect import Statements
from bot.store._protocol import JSONValue
from bot.store._rows import (
    dumps,
    loads,
    log_row,
    row_to_log,
    row_to_relationship,
    row_to_task,
    task_row,
    task_updates,
)
from bot.store._scoped import new_id, validate_count

__all__ = ["RecordsMixin"]

# What each group of writes may change: see Database.write.
_RELATIONSHIPS = ("relationships",)
_CACHE = ("cache",)
_TASKS = ("tasks",)
_LOGS = ("logs",)
_JSON = ("tags", "metadata")


class RecordsMixin(Statements):
    """The ``relationships``, ``cache``, ``logs`` and ``tasks`` tables."""

    __slots__ = ()

    # -- relationships -----------------------------------------------------------------------------

    async def create_relationship(
        self,
        source_entity_id: str,
        target_entity_id: str,
        *,
        tags: Sequence[str] | None = None,
        metadata: RelationshipMetadata | None = None,
    ) -> bool:
        """Store a directed relationship for this agent; False on error, including when it exists."""
        try:
            await self._run(
                "INSERT INTO relationships (id, source_entity_id, target_entity_id, agent_id, tags, metadata, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    new_id(),
                    source_entity_id,
                    target_entity_id,
                    self._agent_id,
                    dumps(list(tags or [])),
                    dumps((metadata or RelationshipMetadata()).to_json()),
                    now_ms(),
                ),
                tables=_RELATIONSHIPS,
            )
        except StoreError as exc:
            return self._fail("create_relationship", exc)
        return True

    async def update_relationship(self, relationship: Relationship) -> bool:
        """Overwrite tags and metadata of one of this agent's relationships by id; False if not found."""
        changed = await self._run(
            "UPDATE relationships SET tags = ?, metadata = ? WHERE id = ? AND agent_id = ?",
            (dumps(list(relationship.tags)), dumps(relationship.metadata.to_json()), relationship.id, self._agent_id),
            tables=_RELATIONSHIPS,
        )
        return changed > 0

    async def get_relationship(self, source_entity_id: str, target_entity_id: str) -> Relationship | None:
        """This agent's relationship from ``source_entity_id`` to ``target_entity_id`` (directional), or None."""
        row = await self._row(
            "SELECT * FROM relationships WHERE source_entity_id = ? AND target_entity_id = ? AND agent_id = ?",
            (source_entity_id, target_entity_id, self._agent_id),
        )
        return row_to_relationship(row) if row else None

    async def get_relationships(self, entity_id: str, tags: Sequence[str] | None = None) -> list[Relationship]:
        """This agent's relationships where ``entity_id`` is source or target, having any of ``tags`` if given."""
        sql = "SELECT * FROM relationships WHERE agent_id = ? AND (source_entity_id = ? OR target_entity_id = ?)"
        params: list[object] = [self._agent_id, entity_id, entity_id]
        if tags:
            sql += " AND {has_any:tags}"
            params.append(self.dialect.id_list(tags))
        rows = await self._rows(sql + " ORDER BY created_at, {seq}", params)
        return [row_to_relationship(r) for r in rows]

    # -- cache -------------------------------------------------------------------------------------

    async def get_cache(self, key: str) -> JSONValue:
        """This agent's cached value for ``key``; None if absent, expired or unreadable."""
        try:
            row = await self._row(
                "SELECT value, expires_at <= {clock} AS expired FROM cache WHERE key = ? AND agent_id = ?",
                (key, self._agent_id),
            )
        except StoreError as exc:
            self._fail("get_cache", exc)
            return None
        if row is None:
            return None
        if row["expired"]:
            # Expired rows are removed lazily, by whoever reads them next.
            await self._run(
                "DELETE FROM cache WHERE key = ? AND agent_id = ? AND expires_at <= {clock}",
                (key, self._agent_id),
                tables=_CACHE,
            )
            return None
        value: JSONValue = loads(row["value"])
        return value

    async def set_cache(self, key: str, value: JSONValue, *, expires_at: int | None = None) -> bool:
        """Cache ``value`` (anything JSON) under ``key`` for this agent until ``expires_at`` (ms, None:
        forever); False on error (e.g. a value JSON cannot hold)."""
        try:
            # ``expires_at`` is in this machine's clock: kept as the time left from now, counted
            # on the database's clock, which every daemon sharing it reads it by.
            await self._run(
                "INSERT INTO cache (key, agent_id, value, created_at, expires_at) "
                "VALUES (?, ?, ?{json}, {clock}, {clock} + CAST(? AS BIGINT) - CAST(? AS BIGINT)) "
                "ON CONFLICT (key, agent_id) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at",
                (key, self._agent_id, dumps(value), expires_at, now_ms()),
                tables=_CACHE,
            )
        except (StoreError, TypeError, ValueError) as exc:
            return self._fail("set_cache", exc)
        return True

    async def delete_cache(self, key: str) -> bool:
        """Remove ``key`` from this agent's cache; True even if it was absent, False on error."""
        try:
            await self._run("DELETE FROM cache WHERE key = ? AND agent_id = ?", (key, self._agent_id), tables=_CACHE)
        except StoreError as exc:
            return self._fail("delete_cache", exc)
        return True

    async def prune_cache(self) -> int:
        """Forget this agent's cached values whose time is up; how many went. (A value is also
        forgotten when it is read after its time: this takes those no one reads again.)"""
        return await self._run(
            "DELETE FROM cache WHERE agent_id = ? AND expires_at <= {clock}", (self._agent_id,), tables=_CACHE
        )

    # -- logs --------------------------------------------------------------------------------------

    async def log(self, body: Mapping[str, object], entity_id: str, room_id: str, type: str) -> str:
        """Append a structured log entry and return its id.

        The body is made JSON-safe (NUL characters stripped, cycles cut). Raises StoreError if the
        entity or room does not exist; callers on a model-call path should catch it.
        """
        row = log_row(body, entity_id, room_id, type)
        await self._run(
            "INSERT INTO logs (id, created_at, entity_id, body, type, room_id) VALUES (?, ?, ?, ?{json}, ?, ?)",
            row,
            tables=_LOGS,
        )
        return row[0]

    def queue_log(self, body: Mapping[str, object], entity_id: str, room_id: str, type: str) -> str:
        """Like :meth:`log`, but written soon, in a batch, instead of before returning; returns its id.

        For logs written on a hot path (one per model call). Reads of logs (:meth:`get_logs`)
        and closing the database wait for queued rows, so none is missing or lost; a row whose
        entity or room does not exist is dropped (logged at debug) instead of raising.
        """
        row = log_row(body, entity_id, room_id, type)
        self._queue_log(row)
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
        await self._flush_logs()  # rows queued by queue_log are part of the log
        # logs has no agent_id column; rooms do, and room ids are agent-specific.
        clauses = ["room_id IN (SELECT id FROM rooms WHERE agent_id = ?)"]
        params: list[object] = [self._agent_id]
        for column, value in (("entity_id", entity_id), ("room_id", room_id), ("type", type)):
            if value is not None:
                clauses.append(f"{column} = ?")  # column is one of the three above
                params.append(value)
        rows = await self._rows(
            f"SELECT * FROM logs WHERE {' AND '.join(clauses)} ORDER BY created_at DESC, {{seq}} DESC LIMIT ? OFFSET ?",
            (*params, count, offset),
        )
        return [row_to_log(r) for r in rows]

    async def delete_log(self, log_id: str) -> bool:
        """Delete a log entry in one of this agent's rooms; False if not found."""
        await self._flush_logs()  # it may still be queued
        deleted = await self._run(
            "DELETE FROM logs WHERE id = ? AND room_id IN (SELECT id FROM rooms WHERE agent_id = ?)",
            (log_id, self._agent_id),
            tables=_LOGS,
        )
        return deleted > 0

    async def prune_logs(self, before: int) -> int:
        """Delete this agent's log entries written before ``before`` (ms); how many went."""
        await self._flush_logs()
        return await self._run(
            "DELETE FROM logs WHERE created_at < ? AND room_id IN (SELECT id FROM rooms WHERE agent_id = ?)",
            (before, self._agent_id),
            tables=_LOGS,
        )

    # -- tasks -------------------------------------------------------------------------------------

    async def create_task(self, task: Task) -> str:
        """Store a task for this agent and return its id (a new one if it has none)."""
        task_id = task.id or new_id()
        await self._run(
            "INSERT INTO tasks (id, name, description, room_id, world_id, entity_id, agent_id, tags, metadata, "
            "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?{json}, ?{json}, ?, ?)",
            task_row(task, task_id, self._agent_id, now_ms()),
            tables=_TASKS,
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
        clauses: list[str] = ["agent_id = ?"]
        params: list[object] = [self._agent_id]
        for column, value in (("room_id", room_id), ("entity_id", entity_id)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        if tags:
            clauses.append("{has_all:tags}")  # the task's tags hold every one asked for
            params.append(dumps(sorted(set(tags))))
        rows = await self._rows(
            f"SELECT * FROM tasks WHERE {' AND '.join(clauses)} ORDER BY created_at, {{seq}}", params
        )
        return [row_to_task(r) for r in rows]

    async def get_task(self, task_id: str) -> Task | None:
        """One of this agent's tasks, or None."""
        row = await self._row("SELECT * FROM tasks WHERE id = ? AND agent_id = ?", (task_id, self._agent_id))
        return row_to_task(row) if row else None

    async def get_tasks_by_name(self, name: str) -> list[Task]:
        """This agent's tasks called ``name``, oldest first."""
        rows = await self._rows(
            "SELECT * FROM tasks WHERE agent_id = ? AND name = ? ORDER BY created_at, {seq}", (self._agent_id, name)
        )
        return [row_to_task(r) for r in rows]

    async def update_task(self, task_id: str, changes: Mapping[str, Any]) -> bool:
        """Update the given fields of one of this agent's tasks; False if not found.

        ``changes`` may hold name, description, room_id, world_id, entity_id, tags and metadata
        (a TaskMetadata); metadata is replaced whole, not merged. updated_at becomes now. Raises ValueError for other keys.
        """
        updates = task_updates(changes)
        # The column names are task_updates' whitelist; tags and metadata come as JSON text.
        sets = ", ".join(
            ["updated_at = ?", *(f"{name} = ?{{json}}" if name in _JSON else f"{name} = ?" for name in updates)]
        )
        params: list[object] = [now_ms(), *updates.values()]
        changed = await self._run(
            f"UPDATE tasks SET {sets} WHERE id = ? AND agent_id = ?",
            (*params, task_id, self._agent_id),
            tables=_TASKS,
        )
        return changed > 0

    async def delete_task(self, task_id: str) -> bool:
        """Delete one of this agent's tasks; False if not found."""
        deleted = await self._run(
            "DELETE FROM tasks WHERE id = ? AND agent_id = ?", (task_id, self._agent_id), tables=_TASKS
        )
        return deleted > 0

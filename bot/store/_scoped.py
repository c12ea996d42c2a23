"""The base every part of ``AgentStore`` builds on: the database, the agent, shared helpers."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from bot.store._agent_scope import Scoped
from bot.store._connect import Connection, Params
from bot.store._dialect import SQLITE, Done, Statements, Unit

T = TypeVar("T")

if TYPE_CHECKING:  # Database builds AgentStore, which builds on this module
    from bot.store._database import Database  # noqa: F401  # named in the base class below, as a string
    from bot.store._rows import LogRow, Row

__all__ = ["AgentScoped", "drive", "new_id", "validate_count"]


def new_id() -> str:
    """A fresh random UUID string, for rows the caller gave no id."""
    return str(uuid.uuid4())


def validate_count(count: int | None, name: str = "count") -> None:
    """Raise ValueError for a negative count, limit or offset."""
    if count is not None and count < 0:
        raise ValueError(f"{name} must be >= 0, not {count}")


class AgentScoped(Scoped["Database"], Statements):
    """The SQLite store's base: :class:`Scoped`, the writer's helpers, and :class:`Statements`."""

    __slots__ = ()

    dialect = SQLITE

    async def _rows(self, sql: str, params: Sequence[Any] = ()) -> Sequence[Row]:
        return await self._db.fetchall(SQLITE.render(sql), params)

    async def _shared_rows(self, sql: str, params: Sequence[Any], *, tables: Collection[str]) -> Sequence[Row]:
        return await self._db.fetchall_shared(SQLITE.render(sql), params, tables=tables)

    async def _run(self, sql: str, params: Sequence[Any], *, tables: Collection[str] | None) -> int:
        rendered = SQLITE.render(sql)
        return await self._db.write(lambda conn: conn.execute(rendered, params).rowcount, tables=tables)

    async def _run_many(self, sql: str, rows: Sequence[Sequence[Any]], *, tables: Collection[str]) -> None:
        rendered = SQLITE.render(sql)
        await self._db.write(lambda conn: _execute_many(conn, rendered, rows), tables=tables)

    async def _snapshot(self, unit: Callable[[], Unit[T]]) -> T:
        return await self._db.read(lambda conn: drive(conn, unit()))

    async def _write(self, unit: Callable[[], Unit[T]], *, tables: Collection[str] | None) -> T:
        return await self._db.write(lambda conn: drive(conn, unit()), tables=tables)

    def _after_agent_deleted(self) -> None:
        self._db.forget_agent(self._agent_id)

    def _queue_log(self, row: LogRow) -> None:
        self._db.queue_log(row)

    async def _flush_logs(self) -> None:
        await self._db.flush_logs()


def _execute_many(conn: Connection, sql: str, rows: Sequence[Params]) -> None:
    conn.executemany(sql, rows)


def drive(conn: Connection, unit: Unit[T]) -> T:
    """Run a unit's statements on the writer's thread, inside its transaction."""
    try:
        step = next(unit)
        while True:
            if step.raw:
                cur = conn.execute(step.sql)
            else:
                sql = SQLITE.render(step.sql)
                cur = conn.executemany(sql, step.params) if step.many else conn.execute(sql, step.params)  # type: ignore[arg-type]
            step = unit.send(Done(cur.rowcount, cur.fetchall() if cur.description else []))
    except StopIteration as stop:
        result: T = stop.value
        return result

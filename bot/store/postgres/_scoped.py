"""``PgScoped``: the base every part of the PostgreSQL agent store builds on."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg

from bot.store._agent_scope import Scoped
from bot.store._dialect import POSTGRES, Done, Statements, Unit

if TYPE_CHECKING:  # PostgresDatabase builds PgAgentStore, which builds on this module
    from bot.store._rows import LogRow, Row
    from bot.store.postgres._database import PostgresDatabase  # noqa: F401  # named in the base class below

__all__ = ["PgScoped", "drive"]

T = TypeVar("T")


class PgScoped(Scoped["PostgresDatabase"], Statements):
    """The PostgreSQL store's base: the database and the agent (see :class:`Scoped`), and
    :class:`Statements`."""

    __slots__ = ()

    dialect = POSTGRES

    async def _rows(self, sql: str, params: Sequence[Any] = ()) -> Sequence[Row]:
        return await self._db.fetchall(POSTGRES.render(sql), params)

    async def _shared_rows(self, sql: str, params: Sequence[Any], *, tables: Collection[str]) -> Sequence[Row]:
        return await self._db.fetchall(POSTGRES.render(sql), params)  # nothing to share: see Statements

    async def _run(self, sql: str, params: Sequence[Any], *, tables: Collection[str] | None) -> int:
        return await self._db.execute(POSTGRES.render(sql), params)

    async def _run_many(self, sql: str, rows: Sequence[Sequence[Any]], *, tables: Collection[str]) -> None:
        # One transaction (all rows or none), pipelined in one trip.
        async with self._db.transaction() as conn, conn.cursor() as cur:
            await cur.executemany(POSTGRES.render(sql), rows)

    def _queue_log(self, row: LogRow) -> None:
        self._db.log_queue.put(row)

    async def _flush_logs(self) -> None:
        await self._db.log_queue.flush()

    async def _snapshot(self, unit: Callable[[], Unit[T]]) -> T:
        async with self._db.transaction() as conn:
            # One snapshot for every query: a read never mixes before and after a write.
            await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            return await drive(conn, unit())

    async def _write(self, unit: Callable[[], Unit[T]], *, tables: Collection[str] | None) -> T:
        async with self._db.transaction() as conn:
            return await drive(conn, unit())


async def drive(conn: psycopg.AsyncConnection[Row], unit: Unit[T]) -> T:
    """Run a unit's statements on ``conn``, inside its transaction."""
    try:
        step = next(unit)
        while True:
            sql = POSTGRES.render(step.sql) if not step.raw else step.sql
            async with conn.cursor() as cur:
                if step.raw:
                    await cur.execute(sql.encode())  # no parameters: % is itself
                elif step.many:
                    await cur.executemany(sql, step.params)  # type: ignore[arg-type]
                else:
                    await cur.execute(sql, step.params)
                rows = await cur.fetchall() if cur.description else []
                step = unit.send(Done(cur.rowcount, rows))
    except StopIteration as stop:
        result: T = stop.value
        return result

"""``QueuedLogs``: the PostgreSQL store's ``logs`` rows written off the caller's path.

The runtime logs every model call (``Store.queue_log``); a round trip to the server for each
would sit on the path of every call. Queued rows wait in memory for ``LOG_DELAY`` seconds and
are then written together, in one INSERT, by a short background flush. :meth:`QueuedLogs.flush`
waits for every row queued so far (reads of logs call it first, so none is missing), and
``PostgresDatabase.close()`` flushes before the pool goes, so a clean close loses no row. A row
whose entity or room does not exist is dropped alone (logged at debug), as SQLite does; rows
that cannot be written at all (the server failed, the flush was cancelled) are reported once
with how many they were.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

import psycopg

from bot.kernel.errors import StoreError
from bot.store._rows import LogRow

if TYPE_CHECKING:  # the database holds the queue
    from bot.store.postgres._database import PostgresDatabase

__all__ = ["LOG_DELAY", "QueuedLogs"]

_log = logging.getLogger(__name__)

#: Seconds a queued log row waits for others before they are written together.
LOG_DELAY = 0.05

_INSERT_ONE = "INSERT INTO logs (id, created_at, entity_id, body, type, room_id) VALUES (%s, %s, %s, %s::jsonb, %s, %s)"
# Every row in one statement, in the order queued (seq follows it). Rows whose entity or room is
# gone are left out rather than failing the rest.
_INSERT_MANY = (
    "INSERT INTO logs (id, created_at, entity_id, body, type, room_id) "
    "SELECT r.id, r.created_at, r.entity_id, r.body::jsonb, r.type, r.room_id "
    "FROM unnest(%s::text[], %s::bigint[], %s::text[], %s::text[], %s::text[], %s::text[]) "
    "WITH ORDINALITY AS r(id, created_at, entity_id, body, type, room_id, n) "
    "WHERE EXISTS (SELECT 1 FROM entities e WHERE e.id = r.entity_id) "
    "AND EXISTS (SELECT 1 FROM rooms m WHERE m.id = r.room_id) "
    "ORDER BY r.n"
)


class QueuedLogs:
    """The log rows of one :class:`PostgresDatabase` not written yet."""

    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db
        self._rows: list[LogRow] = []
        # One flush at a time, in the order asked: a flush that returns has written every row
        # queued before it was called, including those an earlier flush took.
        self._turn = asyncio.Lock()
        self._due: asyncio.TimerHandle | None = None
        self._flushes: set[asyncio.Task[None]] = set()

    def put(self, row: LogRow) -> None:
        """Write ``row`` within ``LOG_DELAY`` seconds; RuntimeError if the database is not open."""
        if not self._db.is_open:
            raise RuntimeError(f"cannot queue a log row: {self._db!r} is not open")
        self._rows.append(row)
        if self._due is None:
            self._due = asyncio.get_running_loop().call_later(LOG_DELAY, self._start_flush)

    async def flush(self) -> None:
        """Return once every row queued so far is written, dropped or reported lost."""
        async with self._turn:
            rows, self._rows = self._rows, []
            if not rows:
                return
            try:
                await self._write(rows)
            except asyncio.CancelledError:
                _log.warning(
                    "%d queued log rows were not written to %s: the flush was cancelled", len(rows), self._db.path
                )
                raise

    async def close(self) -> None:
        """Before the pool closes: write what is queued (rows queued meanwhile too), stop the timer."""
        while self._rows or self._flushes:
            await self.flush()
            await asyncio.gather(*self._flushes, return_exceptions=True)
        if self._due is not None:
            self._due.cancel()
            self._due = None

    def _start_flush(self) -> None:
        self._due = None
        if not self._db.is_open:
            return
        task = asyncio.get_running_loop().create_task(self.flush(), name="troupe-log-flush")
        self._flushes.add(task)
        task.add_done_callback(self._flushes.discard)

    async def _write(self, rows: list[LogRow]) -> None:
        try:
            written = await self._db.execute(_INSERT_MANY, [list(column) for column in zip(*rows, strict=True)])
        except StoreError as exc:
            if not isinstance(exc.__cause__, psycopg.errors.ForeignKeyViolation):
                _log.warning("%d queued log rows were not written to %s: %s", len(rows), self._db.path, exc)
                return
            # A room or entity deleted between the check and the insert: each row alone then,
            # so only the rejected ones are dropped.
            for row in rows:
                await self._write_one(row)
            return
        if written < len(rows):
            _log.debug("%d queued log rows dropped: their entity or room does not exist", len(rows) - written)

    async def _write_one(self, row: LogRow) -> None:
        try:
            await self._db.execute(_INSERT_ONE, row)
        except StoreError as exc:
            if isinstance(exc.__cause__, psycopg.errors.ForeignKeyViolation):
                _log.debug("log row %s dropped: %s", row[0], exc)
            else:
                _log.warning("a queued log row was not written to %s: %s", self._db.path, exc)

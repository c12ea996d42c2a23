"""``QueuedLogs``: ``logs`` rows written off the caller's path, riding along with other writes.

The runtime logs every model call (``Store.queue_log``); writing each as a transaction of its
own would put one writer turn on the path of every call. Queued rows are instead added to the
next batch of writes (``DatabaseAccess.write``'s group commit) as one more work of it, so a
burst of rows costs no transaction of its own; when no write comes within ``LOG_DELAY``
seconds, a batch of the rows alone is committed. :meth:`QueuedLogs.flush_logs` waits for the
rows queued so far, and ``close()`` flushes first, so a clean close loses no row; rows that
cannot be written (the database failed, or the committer was cancelled before their turn) are
reported once with how many they were.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os

from bot.store._access import DatabaseAccess, State
from bot.store._batch import Queued
from bot.store._connect import Connection, sqlean
from bot.store._rows import LogRow

__all__ = ["LOG_DELAY", "QueuedLogs"]

_log = logging.getLogger(__name__)

_LOG_TABLES = ("logs",)
#: Seconds queued log rows wait for a write to ride along with before they are written alone.
LOG_DELAY = 0.05


class QueuedLogs(DatabaseAccess):
    """A Database's log rows not written yet."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(path)
        self._log_rows: list[LogRow] = []
        # Set while rows are queued: writes them alone if no batch took them first.
        self._log_deadline: asyncio.TimerHandle | None = None

    def queue_log(self, row: LogRow) -> None:
        """Write a ``logs`` row (id, created_at, entity_id, body, type, room_id) soon, off the caller's path.

        The row rides along with the next write transaction, or is written within ``LOG_DELAY``
        seconds if none comes. :meth:`flush_logs` waits for it; reads of logs through the store
        and :meth:`close` call it first, so no row is lost or missing from a read. A row the
        database rejects (its entity or room is gone) is dropped and logged at debug level, as a
        failed direct write would be by its caller. Raises RuntimeError when the database is not open.
        """
        self._require_open()
        self._log_rows.append(row)
        if self._log_deadline is None:
            self._log_deadline = asyncio.get_running_loop().call_later(LOG_DELAY, self._logs_due)

    async def flush_logs(self) -> None:
        """Return once every log row queued so far is written (or dropped: see :meth:`queue_log`)."""
        if self._state is State.OPEN and (self._log_rows or self._committing):
            # A write of nothing: it commits in the batch that takes the queued rows, or after
            # the batch holding them now.
            await self.write(_no_change, tables=())

    def _close_logs(self) -> None:
        """After the last :meth:`flush_logs`: no timer outlives the database."""
        if self._log_deadline is not None:
            self._log_deadline.cancel()
            self._log_deadline = None

    def _logs_due(self) -> None:
        self._log_deadline = None
        if not self._log_rows or self._state is not State.OPEN:
            return
        if not self._committing:
            self._start_committer()
        # Come back: the batch under way may not take them, or its committer may be cancelled.
        self._log_deadline = asyncio.get_running_loop().call_later(LOG_DELAY, self._logs_due)

    def _riders_waiting(self) -> bool:
        return bool(self._log_rows)

    def _rider(self) -> Queued | None:
        """The queued log rows as one work of the next batch, or None."""
        if not self._log_rows:
            return None
        rows, self._log_rows = self._log_rows, []
        written: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        written.add_done_callback(functools.partial(self._rows_written, len(rows)))
        return Queued(functools.partial(_insert_logs, rows), _LOG_TABLES, written)

    def _rows_written(self, count: int, written: asyncio.Future[None]) -> None:
        """Say once if the ``count`` rows of a batch were not written (and why)."""
        why = "the committer was cancelled before their turn" if written.cancelled() else written.exception()
        if why is not None:
            _log.warning("%d queued log rows were not written to %s: %s", count, self._path, why)


def _no_change(conn: Connection) -> None:
    """A write that changes nothing: returns once the writes queued before it are committed."""


def _insert_logs(rows: list[LogRow], conn: Connection) -> None:
    """On the writer's thread: insert log rows, skipping (and reporting) any the database rejects."""
    for row in rows:
        try:
            conn.execute(
                "INSERT INTO logs (id, created_at, entity_id, body, type, room_id) VALUES (?, ?, ?, ?, ?, ?)", row
            )
        except sqlean.IntegrityError as exc:  # only this statement is undone; the batch goes on
            _log.debug("log row %s dropped: %s", row[0], exc)

"""``QueuedLogs``: ``logs`` rows written in the background, a batch at a time, off the caller's path.

The runtime logs every model call (``Store.queue_log``); writing each as a transaction of its
own would put one writer turn on the path of every call. Rows queued until the writer is free
are written together instead, by one background task per batch. The database owns those tasks:
``close()`` waits for them before it closes anything, so a clean close loses no row, and a batch
that cannot be written (the database failed, or its task was cancelled before its turn) is
reported once with how many rows it held.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os

from bot.background import BackgroundTasks
from bot.store._access import DatabaseAccess
from bot.store._connect import Connection, sqlean

__all__ = ["LogRow", "QueuedLogs"]

_log = logging.getLogger(__name__)

_LOG_TABLES = ("logs",)
#: One ``logs`` row: id, created_at, entity_id, body (JSON), type, room_id.
LogRow = tuple[str, int, str, str, str, str]


class QueuedLogs(DatabaseAccess):
    """A Database's log rows not written yet, and the tasks writing them."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(path)
        # Log rows not written yet (see queue_log): the batch still taking rows, and the tasks
        # writing every batch not yet written (that one included), named troupe:logs:<file>.
        self._log_batch: list[LogRow] | None = None
        self._log_writers = BackgroundTasks("troupe:logs")

    def queue_log(self, row: LogRow) -> None:
        """Write a ``logs`` row (id, created_at, entity_id, body, type, room_id) soon, off the caller's path.

        Rows queued until the writer is free are written together in one transaction, by a
        background task. :meth:`flush_logs` waits for them; reads of logs through the store and
        :meth:`close` call it first, so no row is lost or missing from a read. A row the database
        rejects (its entity or room is gone) is dropped and logged at debug level, as a failed
        direct write would be by its caller. Raises RuntimeError when the database is not open.
        """
        self._require_open()
        if self._log_batch is None:
            batch: list[LogRow] = []
            writer = self._log_writers.start(self._write_log_batch(batch), os.path.basename(self._path))
            writer.add_done_callback(functools.partial(self._writer_ended, batch))
            self._log_batch = batch
        self._log_batch.append(row)

    async def flush_logs(self) -> None:
        """Return once every log row queued so far is written (or dropped: see :meth:`queue_log`)."""
        if writers := list(self._log_writers):
            # Shielded: a caller giving up must not cancel a batch others wait for.
            await asyncio.shield(asyncio.gather(*writers, return_exceptions=True))

    async def _close_logs(self) -> None:
        """After the last :meth:`flush_logs`: end the writers' owner, so no task outlives the database."""
        await self._log_writers.close()

    async def _write_log_batch(self, batch: list[LogRow]) -> None:
        """Write ``batch``, which takes every row queued until the writer is free."""
        try:
            async with self._write_turn(_LOG_TABLES) as conn:
                self._log_batch = None  # it was ``batch``: rows queued from now on start the next one
                # Once handed to the writer's thread, the batch is written even if this task is cancelled.
                await self._run_transaction(conn, functools.partial(_insert_logs, batch))
        except Exception as exc:  # logging must never break anything; say what was lost
            self._drop(batch, exc)

    def _writer_ended(self, batch: list[LogRow], writer: asyncio.Task[object]) -> None:
        if writer.cancelled() and self._log_batch is batch:  # cancelled before its turn (or before it ran)
            self._drop(batch, "its writer was cancelled before its turn")

    def _drop(self, batch: list[LogRow], why: object) -> None:
        """Give up on ``batch``, saying so once; the next row queued starts a new batch."""
        if self._log_batch is batch:
            self._log_batch = None
        _log.warning("%d queued log rows were not written to %s: %s", len(batch), self._path, why)


def _insert_logs(rows: list[LogRow], conn: Connection) -> None:
    """On the writer's thread: insert log rows, skipping (and reporting) any the database rejects."""
    for row in rows:
        try:
            conn.execute(
                "INSERT INTO logs (id, created_at, entity_id, body, type, room_id) VALUES (?, ?, ?, ?, ?, ?)", row
            )
        except sqlean.IntegrityError as exc:  # only this statement is undone; the batch goes on
            _log.debug("log row %s dropped: %s", row[0], exc)

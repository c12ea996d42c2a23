"""``QueuedLogs``: ``logs`` rows written in the background, a batch at a time, off the caller's path.

The runtime logs every model call (``Store.queue_log``); writing each as a transaction of its
own would put one writer turn on the path of every call. Rows queued until the writer is free
are written together instead, by one background task per batch.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from typing import Any

from bot.store._access import DatabaseAccess
from bot.store._connect import sqlean

__all__ = ["QueuedLogs"]

_log = logging.getLogger(__name__)

_LOG_TABLES = ("logs",)


class QueuedLogs(DatabaseAccess):
    """A Database's log rows not written yet, and the tasks writing them."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(path)
        # Log rows not written yet (see queue_log): the batch still taking rows, and the tasks
        # writing every batch not yet written (that one included).
        self._log_batch: list[tuple[Any, ...]] | None = None
        self._log_writers: set[asyncio.Task[None]] = set()

    def queue_log(self, row: tuple[Any, ...]) -> None:
        """Write a ``logs`` row (id, created_at, entity_id, body, type, room_id) soon, off the caller's path.

        Rows queued until the writer is free are written together in one transaction, by a
        background task. :meth:`flush_logs` waits for them; reads of logs through the store and
        :meth:`close` call it first, so no row is lost or missing from a read. A row the database
        rejects (its entity or room is gone) is dropped and logged at debug level, as a failed
        direct write would be by its caller. Raises RuntimeError when the database is not open.
        """
        self._require_open()
        if self._log_batch is None:
            self._log_batch = []
            writer = asyncio.create_task(self._write_log_batch(), name=f"troupe:logs:{os.path.basename(self._path)}")
            self._log_writers.add(writer)
            writer.add_done_callback(self._log_writers.discard)
        self._log_batch.append(row)

    async def flush_logs(self) -> None:
        """Return once every log row queued so far is written (or dropped: see :meth:`queue_log`)."""
        if self._log_writers:
            # Shielded: a caller giving up must not cancel a batch others wait for.
            await asyncio.shield(asyncio.gather(*self._log_writers, return_exceptions=True))

    async def _write_log_batch(self) -> None:
        # Each batch has one writer task: this one, until it takes the batch.
        rows: list[tuple[Any, ...]] | None = None
        try:
            async with self._write_turn(_LOG_TABLES) as conn:
                rows, self._log_batch = self._log_batch or [], None  # all queued until the writer was free
                await self._run_transaction(conn, functools.partial(_insert_logs, rows))
        except Exception as exc:  # logging must never break anything; say what was lost
            _log.warning("could not write queued log rows to %s: %s", self._path, exc)
        finally:
            if rows is None:  # never got the writer: drop the batch, so the next row starts a new one
                self._log_batch = None


def _insert_logs(rows: list[tuple[Any, ...]], conn: Any) -> None:
    """On the writer's thread: insert log rows, skipping (and reporting) any the database rejects."""
    for row in rows:
        try:
            conn.execute(
                "INSERT INTO logs (id, created_at, entity_id, body, type, room_id) VALUES (?, ?, ?, ?, ?, ?)", row
            )
        except sqlean.IntegrityError as exc:  # only this statement is undone; the batch goes on
            _log.debug("log row %s dropped: %s", row[0], exc)

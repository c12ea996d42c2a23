"""Group commit: the writes queued together, run in one transaction on the writer's thread.

Several tasks writing at once (characters handling messages in the same moments) would each
pay a BEGIN/COMMIT and a trip to the writer's thread. ``Database.write`` queues its work
instead; the works queued while the writer is busy go to the thread together and run in one
``BEGIN IMMEDIATE … COMMIT``, each inside a SAVEPOINT of its own, so a work that raises undoes
only itself. This module holds what runs on that thread; the queue is ``_access``'s.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from bot.store._connect import Connection, sqlean

__all__ = ["BATCH_LIMIT", "Batch", "BeginFailed", "Failed", "Queued", "TransactionLost", "transact"]

_log = logging.getLogger(__name__)

#: At most this many works share one transaction: a batch holds the writer while it runs.
BATCH_LIMIT = 64


@dataclass(eq=False)
class Queued:
    """One caller's work waiting for (or in) a batch, and the future its caller awaits."""

    work: Callable[[Connection], object]
    tables: Collection[str] | None  # what ``work`` may change (None: anything), for shared reads
    done: asyncio.Future[Any]  # Any: each caller's own result type
    started: bool = field(default=False)  # handed to the writer's thread: it will run to its end


@dataclass(eq=False)
class Batch:
    """The works of one transaction and, once the writer's thread ran it, how it ended."""

    works: list[Callable[[Connection], object]]
    outcomes: list[object] | None = None  # each work's result or Failed, once COMMIT is done
    error: BaseException | None = None  # what made the whole batch fail (nothing committed)


@dataclass(eq=False)
class Failed:
    """The outcome of a work that raised ``error`` (its savepoint was rolled back)."""

    error: Exception


class BeginFailed(Exception):
    """BEGIN IMMEDIATE failed on the writer's thread with the driver's ``error``."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(error)
        self.error = error


class TransactionLost(Exception):
    """SQLite ended the batch's transaction when work number ``index`` raised ``error``: nothing was committed."""

    def __init__(self, index: int, error: Exception) -> None:
        super().__init__(error)
        self.index = index
        self.error = error


def transact(conn: Connection, batch: Batch) -> None:
    """On the writer's thread: run ``batch`` and record how it ended in it (never raises).

    Recorded there, not returned, so that a caller cancelled while the batch runs can still
    read the outcome once the thread is done with it.
    """
    try:
        batch.outcomes = _run(conn, batch.works)
    except BaseException as exc:
        batch.error = exc


def _run(conn: Connection, works: list[Callable[[Connection], object]]) -> list[object]:
    """Run ``works`` in one transaction; each one's result or :class:`Failed`.

    A single work runs without a savepoint: if it raises, the transaction is rolled back and the
    error raised, as ``write`` always did. With several, a work that raises is rolled back to its
    savepoint and the others commit. Raises (after rolling back) when BEGIN fails (as
    :class:`BeginFailed`), when COMMIT fails, or when SQLite itself ended the transaction under
    a failing work (disk full, I/O error; as :class:`TransactionLost`): then no work of the
    batch was committed.
    """
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlean.Error as exc:
        raise BeginFailed(exc) from exc
    alone = len(works) == 1
    outcomes: list[object] = []
    try:
        for index, work in enumerate(works):
            if not alone:
                conn.execute("SAVEPOINT work")
            try:
                result = work(conn)
            except Exception as exc:
                if alone:
                    raise
                if not conn.in_transaction:
                    raise TransactionLost(index, exc) from exc
                conn.execute("ROLLBACK TO work")
                conn.execute("RELEASE work")
                outcomes.append(Failed(exc))
            else:
                if not alone:
                    conn.execute("RELEASE work")
                outcomes.append(result)
        conn.execute("COMMIT")
    except BaseException:
        try:
            conn.execute("ROLLBACK")
        except sqlean.OperationalError as exc:  # SQLite may already have rolled back (e.g. on SQLITE_FULL)
            _log.debug("rollback: %s", exc)
        raise
    return outcomes

"""``DatabaseAccess``: the two connections of a Database and the only ways to use them.

Writes go through one writer connection, one transaction at a time (an asyncio lock plus
``BEGIN IMMEDIATE``); writes queued while it is busy are committed together, one transaction
and one trip to the writer's thread for the lot (group commit: ``write``, ``_batch``). Reads
use a second, read-only connection outside any transaction, so they never queue behind
writes; reads asked for together go to its thread in one trip (``_reads``), and identical
reads inside one unit of work can share one query (``_shared``). Opening
and closing the connections is :class:`~bot.store.Database`'s.
"""

from __future__ import annotations

import asyncio
import collections
import enum
import functools
import logging
import os
from collections.abc import AsyncIterator, Callable, Collection, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import Context
from typing import Any, TypeVar

import aiosqlite

from bot.kernel.errors import StoreError
from bot.store import _shared
from bot.store._batch import BATCH_LIMIT, Batch, BeginFailed, Failed, Queued, TransactionLost, transact
from bot.store._connect import (
    BEGIN_ATTEMPTS,
    Connection,
    Params,
    Row,
    begin_immediate,
    is_locked_error,
    retry_delay,
    run_on_thread,
    sqlean,
)
from bot.store._health import StoreHealth, StoreState
from bot.store._reads import ReadBatches

__all__ = ["DatabaseAccess", "State"]

_log = logging.getLogger(__name__)

T = TypeVar("T")


class State(enum.Enum):
    UNOPENED = "not open yet"  # created; open() (or ``async with``) has not run
    OPENING = "opening"  # open() is connecting and migrating
    OPEN = "open"  # usable
    CLOSING = "closing"  # close() is waiting for the last transaction to finish
    CLOSED = "closed"  # final: a closed Database is never reopened; make a new one


class DatabaseAccess:
    """Transactions and reads over a writer and a reader connection (see the module docstring).

    A ``":memory:"`` database has a single connection for both (``_reader`` is None), since two
    connections would be two databases.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._path = os.fspath(path)
        self._state = State.UNOPENED
        self._health = StoreHealth(self._path)
        self._writer: aiosqlite.Connection | None = None
        self._reader: aiosqlite.Connection | None = None
        self._reads: ReadBatches | None = None  # the reader's: reads asked for together share a trip
        self._lock = asyncio.Lock()
        self._lock_owner: asyncio.Task[object] | None = None
        # Which tables finished write transactions changed: tells shared reads when they are stale.
        self._writes = _shared.WriteMarks()
        # Group commit (see write): works waiting for the writer, and the task committing them.
        # Whether a caller (or the committer task) is committing; set, others only queue.
        self._queued: collections.deque[Queued] = collections.deque()
        self._in_flight: list[Queued] = []  # the batch on the writer's thread
        self._committing = False
        self._committer: asyncio.Task[None] | None = None

    @property
    def health(self) -> StoreHealth:
        """Whether writes work now, and why not (see ``_health``): learnt from each write."""
        return self._health

    def _require_open(self) -> aiosqlite.Connection:
        if self._state is not State.OPEN or self._writer is None:
            hint = "call open() or use 'async with' first" if self._state is State.UNOPENED else "it cannot be used"
            raise RuntimeError(f"{self!r} is {self._state.value}: {hint}")
        return self._writer

    # -- transactions ------------------------------------------------------------------------------

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        """``async with db.transaction() as conn:`` runs the block as one write transaction.

        The block gets the writer connection inside ``BEGIN IMMEDIATE``; it commits when the block
        ends and rolls back if the block raises (or is cancelled). Driver errors come out as
        StoreError. Transactions run one at a time; calling store methods or ``transaction()``
        again inside the block would wait for itself, so that raises RuntimeError instead.
        """
        async with self._write_turn() as conn:
            try:
                await begin_immediate(conn)
            except sqlean.Error as exc:
                self.health.failed(exc)
                raise StoreError(f"cannot start a write transaction on {self._path}: {exc}") from exc
            try:
                yield conn
                await conn.execute("COMMIT")
            except BaseException as exc:
                await self._rollback(conn)
                if isinstance(exc, sqlean.Error):
                    self.health.failed(exc)
                    raise StoreError(f"database write failed: {exc}") from exc
                raise
            self.health.succeeded()

    async def write(self, work: Callable[[Connection], T], *, tables: Collection[str] | None = None) -> T:
        """Run ``work(conn)`` in a write transaction, in one trip to the writer's thread.

        ``work`` is a plain function given the driver's own connection, so its statements cost no
        thread hop each. Keep it to SQL and light Python: it holds the writer while it runs.
        Writes queued while the writer is busy are committed together (group commit): up to
        ``BATCH_LIMIT`` works in one ``BEGIN IMMEDIATE … COMMIT``, each in a savepoint of its
        own, so a work that raises undoes only its own changes and raises to its own caller
        (driver errors as StoreError) while the others commit. If SQLite itself ends the
        transaction (disk full, I/O error), every work of the batch fails with that error.
        Returns what ``work`` returns, once the COMMIT that includes it is done.

        ``tables``, if given, are all the tables ``work`` may change (triggers and cascades
        included): shared reads of other tables stay current (see :meth:`shared_reads`).
        A caller cancelled before its batch starts takes its work out of the queue; once the
        batch started, the work runs to its end and the caller waits for it before raising.
        Batches and :meth:`transaction` blocks take turns at the writer in the order they asked.
        """
        self._require_open()
        self._refuse_reentry()
        queued = Queued(work, tables, asyncio.get_running_loop().create_future())
        self._queued.append(queued)
        if self._committing:
            waited: T = await self._wait_for(queued)
            return waited
        # Nobody is committing: this caller commits, in its own task (no task to start for a
        # write alone, the common case), until its own work is done; a task takes over the rest.
        self._committing = True
        try:
            # One turn of the loop first: writes of tasks ready to run now join this batch.
            await asyncio.sleep(0)
            while not queued.done.done():
                await self._commit_next_batch()
        except asyncio.CancelledError:
            self._withdraw(queued)
            raise
        finally:
            self._committing = False
            if self._queued:
                self._start_committer()
        result: T = queued.done.result()
        return result

    async def _wait_for(self, queued: Queued) -> Any:
        """The outcome of ``queued``, which another caller or the committer task commits."""
        try:
            return await asyncio.shield(queued.done)
        except asyncio.CancelledError:
            if queued.started:
                # On the writer's thread, where it runs to its end: as transaction() does with its
                # ROLLBACK, keep the caller until it has, so what it does next sees the outcome.
                await asyncio.wait([queued.done])
            self._withdraw(queued)
            raise

    def _withdraw(self, queued: Queued) -> None:
        """For a caller giving up: take its work out of the queue if no batch took it yet."""
        if not queued.started:
            if queued in self._queued:
                self._queued.remove(queued)
            queued.done.cancel()
        elif queued.done.done() and not queued.done.cancelled():
            queued.done.exception()  # retrieved: its caller is gone

    def _start_committer(self) -> None:
        """Start a task committing everything queued, batch after batch (while nobody commits)."""
        self._committing = True
        # A fresh context: the committer serves every caller, so it logs as none of them.
        self._committer = asyncio.get_running_loop().create_task(
            self._commit_queued(), name=f"troupe:commit:{os.path.basename(self._path)}", context=Context()
        )
        # Also when it is cancelled before it ran, when none of its own code runs.
        self._committer.add_done_callback(self._committer_ended)

    async def _commit_queued(self) -> None:
        try:
            while self._queued or self._riders_waiting():
                await self._commit_next_batch()
        finally:
            self._committer_ended(None)

    def _committer_ended(self, task: asyncio.Task[None] | None) -> None:
        """The committer task ended (``task``: seen from its done callback, maybe never started)."""
        if task is not None and self._committer is not task:
            return  # ended through its own ``finally`` already
        self._committer = None
        self._committing = False
        # Only when it was cancelled (the loop is ending): its callers are told so.
        for queued in self._queued:
            queued.done.cancel()
        self._queued.clear()

    async def _commit_next_batch(self) -> None:
        """Commit the works queued now (up to BATCH_LIMIT) in one transaction, when the writer is ours."""
        async with self._lock:  # after transaction() blocks (and close) that asked before
            batch = [self._queued.popleft() for _ in range(min(len(self._queued), BATCH_LIMIT))]
            rider = self._rider()
            if rider is not None:
                batch.append(rider)
            if batch:
                await self._commit(batch)

    def _riders_waiting(self) -> bool:
        """Whether :meth:`_rider` has something to add: for subclasses."""
        return False

    def _rider(self) -> Queued | None:
        """A work that rides along with the next batch (queued log rows): for subclasses."""
        return None

    async def _commit(self, batch: list[Queued]) -> None:
        """Run ``batch`` in one transaction and settle each caller's future with its outcome."""
        record = Batch([queued.work for queued in batch])
        for queued in batch:
            queued.started = True
        self._in_flight = batch
        try:
            conn = self._writer
            if conn is None:  # closed under a queued write: cannot happen while close() waits for us
                raise RuntimeError(f"{self!r} is {self._state.value}: it cannot be used")
            try:
                await self._transact(conn, record)
            except asyncio.CancelledError:
                # The batch runs to its end on the writer's thread; it records how it ended.
                await run_on_thread(conn, _nothing)
                raise
        except Exception as exc:
            record.error = exc
        finally:
            self._in_flight = []
            self._observe(record)
            self._settle(batch, record)

    def _observe(self, record: Batch) -> None:
        """Tell the health how a batch ended: a failure of the store itself, or a commit."""
        was = self.health.state
        failures = [record.error] if record.error is not None else []
        failures += [outcome.error for outcome in record.outcomes or () if isinstance(outcome, Failed)]
        if not any([self.health.failed(error) for error in failures]) and record.outcomes is not None:
            self.health.succeeded()
            if was is StoreState.DISK_FULL:
                self._after_disk_full()

    def _after_disk_full(self) -> None:
        """The disk had room again for a write after being full: for subclasses."""

    async def _transact(self, conn: aiosqlite.Connection, record: Batch) -> None:
        """``batch.transact`` on the writer's thread, retrying a BEGIN that found the file locked."""
        for attempt in range(1, BEGIN_ATTEMPTS + 1):
            await run_on_thread(conn, transact, record)
            failed = record.error
            if not isinstance(failed, BeginFailed) or attempt == BEGIN_ATTEMPTS or not is_locked_error(failed.error):
                return
            record.error = None
            delay = retry_delay(attempt)
            _log.debug("database is locked (attempt %d of %d); retrying in %.2f s", attempt, BEGIN_ATTEMPTS, delay)
            await asyncio.sleep(delay)

    def _settle(self, batch: list[Queued], record: Batch) -> None:
        """Give each caller of ``batch`` its outcome (cancelled if the batch never ended for us)."""
        for queued in batch:
            self._writes.ended(queued.tables)
        error = record.error
        for n, queued in enumerate(batch):
            if queued.done.done():
                continue
            if record.outcomes is not None:
                outcome = record.outcomes[n]
                if isinstance(outcome, Failed):
                    queued.done.set_exception(self._write_error(outcome.error))
                else:
                    queued.done.set_result(outcome)
            elif isinstance(error, TransactionLost):
                queued.done.set_exception(
                    self._write_error(error.error)
                    if n == error.index
                    else StoreError(
                        f"database write failed: SQLite ended the transaction this write shared: {error.error}"
                    )
                )
            elif isinstance(error, Exception):
                queued.done.set_exception(self._write_error(error))
            else:  # cancelled before the batch ran, or something only a process exit would raise
                queued.done.cancel()

    def _write_error(self, exc: Exception) -> Exception:
        """What a caller of :meth:`write` gets for ``exc``: driver errors become StoreError."""
        if isinstance(exc, BeginFailed):
            error = StoreError(f"cannot start a write transaction on {self._path}: {exc.error}")
            error.__cause__ = exc.error
        elif isinstance(exc, sqlean.Error):
            error = StoreError(f"database write failed: {exc}")
            error.__cause__ = exc
        else:
            return exc
        return error

    async def _drain_writes(self) -> None:
        """Return once every write queued so far is committed (or failed): for close()."""
        while pending := [queued.done for queued in (*self._in_flight, *self._queued) if not queued.done.done()]:
            await asyncio.wait(pending)

    def _refuse_reentry(self) -> None:
        task = asyncio.current_task()
        if task is not None and self._lock_owner is task:
            raise RuntimeError("transaction() is not reentrant: do not call store methods inside a transaction block")

    @asynccontextmanager
    async def _write_turn(self, tables: Collection[str] | None = None) -> AsyncIterator[aiosqlite.Connection]:
        """The writer connection, held by this task alone (the asyncio lock) until the block ends.

        ``tables``: what the block may change (None: anything), for shared reads.
        """
        self._require_open()
        self._refuse_reentry()
        task = asyncio.current_task()
        async with self._lock:
            conn = self._require_open()  # close() may have run while we waited
            self._lock_owner = task
            try:
                yield conn
            finally:
                self._lock_owner = None
                self._writes.ended(tables)

    async def _rollback(self, conn: aiosqlite.Connection) -> None:
        # aiosqlite queues the ROLLBACK on its worker thread before this coroutine can be
        # cancelled, so it runs before the next transaction's BEGIN even if we are interrupted.
        try:
            await conn.execute("ROLLBACK")
        except sqlean.OperationalError as exc:  # SQLite may already have rolled back (e.g. on SQLITE_FULL)
            _log.debug("rollback: %s", exc)

    # -- reads -------------------------------------------------------------------------------------

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        """Run one read-only query outside any transaction and return all rows; raises StoreError."""
        self._require_open()
        if self._reads is not None:
            rows: list[Row] = await self._reads.run(functools.partial(_fetchall, sql, params))
            return rows
        # ":memory:": a single connection. Take the writer lock so a read never sees another
        # coroutine's uncommitted transaction.
        self._refuse_memory_read_in_transaction()
        async with self._lock:
            return await self._fetchall_on(self._require_open(), sql, params)

    async def read(self, work: Callable[[Connection], T]) -> T:
        """Run ``work(conn)``, plain read-only queries, in one trip to the reader's thread.

        For reads of several queries (entities and their components): each awaited query would
        be a trip of its own. Like :meth:`fetchall`, the queries run outside any transaction and
        driver errors come out as StoreError. Returns what ``work`` returns.
        """
        self._require_open()
        if self._reads is not None:
            return await self._reads.run(work)
        self._refuse_memory_read_in_transaction()  # ":memory:": as in fetchall
        async with self._lock:
            return await self._read_on(self._require_open(), work)

    def _refuse_memory_read_in_transaction(self) -> None:
        task = asyncio.current_task()
        if task is not None and self._lock_owner is task:
            raise RuntimeError("store reads cannot run inside a transaction block of a ':memory:' Database")

    async def _read_on(self, conn: aiosqlite.Connection, work: Callable[[Connection], T]) -> T:
        try:
            return await run_on_thread(conn, work)
        except sqlean.Error as exc:
            self.health.read_failed(exc)
            raise StoreError(f"database read failed: {exc}") from exc

    @contextmanager
    def shared_reads(self) -> Iterator[None]:
        """``with db.shared_reads():`` lets identical :meth:`fetchall_shared` reads share one query.

        For one unit of work, such as handling one message: within the block, and in tasks
        started inside it, a read with the same SQL and parameters as an earlier (or in-flight)
        one returns the same rows without another trip to the reader thread. A write transaction
        of this Database that may have changed a table the read names (every
        :meth:`transaction`, a :meth:`write` naming that table or no tables) ends the sharing
        of what was read before it. Nested blocks join the outermost one.
        """
        with _shared.scope(self, self._writes):
            yield

    async def fetchall_shared(self, sql: str, params: Params = (), *, tables: Collection[str]) -> list[Row]:
        """Like :meth:`fetchall`, but shared inside a :meth:`shared_reads` block; ``tables``: those ``sql`` reads."""
        shared = _shared.active(self)
        task = asyncio.current_task()
        if shared is None or (task is not None and self._lock_owner is task):
            return await self.fetchall(sql, params)  # no scope, or inside a transaction block: read alone
        return await shared.fetchall(sql, params, tables, lambda: self.fetchall(sql, params))

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        """Like :meth:`fetchall` but returns the first row or None."""
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

    async def _fetchall_on(self, conn: aiosqlite.Connection, sql: str, params: Params) -> list[Row]:
        try:
            return list(await conn.execute_fetchall(sql, params))
        except sqlean.Error as exc:
            self.health.read_failed(exc)
            raise StoreError(f"database read failed: {exc}") from exc


def _fetchall(sql: str, params: Params, conn: Connection) -> list[Row]:
    return conn.execute(sql, params).fetchall()


def _nothing(conn: Connection) -> None:
    """On the writer's thread: returns once every call queued before it has run."""

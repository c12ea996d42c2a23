"""``Database``: one SQLite file shared by every agent, with one writer and one reader connection."""

from __future__ import annotations

import asyncio
import enum
import functools
import logging
import os
from collections.abc import AsyncIterator, Callable, Collection, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any, TypeVar

import aiosqlite

from bot.errors import StoreError
from bot.store import _shared
from bot.store._connect import (
    BEGIN_ATTEMPTS,
    MEMORY_PATH,
    VECTOR_BACKEND,
    Row,
    begin_immediate,
    is_locked_error,
    open_connection,
    retry_delay,
    run_on_thread,
    sqlean,
)
from bot.store._migrations import migrate
from bot.store._sqlite import AgentStore
from bot.store._vectors import DEFAULT_EMBEDDING_DIMENSION

__all__ = ["Database"]

_log = logging.getLogger(__name__)

Params = Sequence[Any]
T = TypeVar("T")

_LOG_TABLES = ("logs",)


class _State(enum.Enum):
    UNOPENED = "not open yet"  # created; open() (or ``async with``) has not run
    OPENING = "opening"  # open() is connecting and migrating
    OPEN = "open"  # usable
    CLOSING = "closing"  # close() is waiting for the last transaction to finish
    CLOSED = "closed"  # final: a closed Database is never reopened; make a new one


class Database:
    """One SQLite database file, shared by every agent of the daemon.

    ``async with Database(path) as db:`` opens it (creating the file, its parent directories and the
    schema, or migrating an older file) and closes it. ``db.for_agent(agent_id)`` gives the
    agent-scoped :class:`~bot.store.Store` that the rest of troupe uses.

    All writes go through one writer connection, one transaction at a time (an asyncio lock plus
    ``BEGIN IMMEDIATE``), so agents never see "database is locked" from each other; other processes
    or other ``Database`` objects on the same file wait on SQLite's busy timeout. Reads use a second,
    read-only connection, so they never queue behind writes (WAL lets them run concurrently). A
    ``":memory:"`` database has a single connection for both, since two connections would be two
    databases.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._path = os.fspath(path)
        self._state = _State.UNOPENED
        self._writer: aiosqlite.Connection | None = None
        self._reader: aiosqlite.Connection | None = None
        self._lock = asyncio.Lock()
        self._lock_owner: asyncio.Task[Any] | None = None
        # Which tables finished write transactions changed: tells shared reads when they are stale.
        self._writes = _shared.WriteMarks()
        self._closed: asyncio.Event | None = None
        self._sqlite_version = ""
        self._vec_version = ""
        self._schema_version = 0
        # agent id -> active embedding dimension; written through by ensure_embedding_dimension.
        self._dimensions: dict[str, int] = {}
        # Log rows not written yet (see queue_log): the batch still taking rows, and the tasks
        # writing every batch not yet written (that one included).
        self._log_batch: list[tuple[Any, ...]] | None = None
        self._log_writers: set[asyncio.Task[None]] = set()
        #: Agents of this process take turns at the shared knowledge scope (plugins/knowledge), so a
        #: shared document is stored and embedded once.
        self.shared_knowledge_lock = asyncio.Lock()

    def __repr__(self) -> str:
        return f"<Database path={self._path!r} state={self._state.name.lower()}>"

    @property
    def path(self) -> str:
        """The file this database lives in (or ``":memory:"``)."""
        return self._path

    @property
    def is_open(self) -> bool:
        """True between a successful open() and close()."""
        return self._state is _State.OPEN

    @property
    def vector_backend(self) -> str:
        """How vector search is computed: always ``"sqlite-vec"`` (open() fails without it)."""
        return VECTOR_BACKEND

    @property
    def sqlite_version(self) -> str:
        """The version of the SQLite library in use (sqlean's, not the system's)."""
        return self._sqlite_version

    @property
    def vec_version(self) -> str:
        """The version of the loaded sqlite-vec extension."""
        return self._vec_version

    @property
    def schema_version(self) -> int:
        """The schema version of the open file."""
        return self._schema_version

    # -- lifecycle -------------------------------------------------------------------------------

    async def open(self) -> None:
        """Connect, load sqlite-vec, set pragmas and migrate the schema.

        Raises RuntimeError if this Database was already opened (or closed), VectorExtensionError
        if sqlite-vec cannot be loaded, SchemaVersionError if the file is from a newer troupe, and
        StoreError if the file cannot be opened. A failed open() leaves nothing open behind.
        """
        if self._state is not _State.UNOPENED:
            raise RuntimeError(f"cannot open {self!r}: it is {self._state.value} (a Database opens once)")
        self._state = _State.OPENING
        try:
            try:
                self._writer = await open_connection(self._path)
                async with self._writer.execute("SELECT sqlite_version(), vec_version()") as cur:
                    row = await cur.fetchone()
                assert row is not None
                self._sqlite_version, self._vec_version = str(row[0]), str(row[1])
                self._schema_version = await migrate(self._writer, self._path)
                # Refresh planner statistics where stale (cheap: SQLite bounds the work itself).
                await self._writer.execute("PRAGMA optimize = 0x10002")
                if self._path != MEMORY_PATH:
                    self._reader = await open_connection(self._path, reader=True)
            except (sqlean.Error, OSError) as exc:  # OSError: making the directory or the file private
                raise StoreError(f"cannot open database {self._path}: {exc}") from exc
        except BaseException:
            await self._close_connections()
            self._state = _State.UNOPENED
            raise
        self._state = _State.OPEN
        _log.info(
            "opened database %s (schema %d, SQLite %s, sqlite-vec %s)",
            self._path,
            self._schema_version,
            self._sqlite_version,
            self._vec_version,
        )

    async def close(self) -> None:
        """Write queued log rows, wait for the running transaction, then close both connections.

        Safe to call more than once.
        """
        while self._state is _State.OPEN and self._log_writers:
            await self.flush_logs()
        if self._state is _State.CLOSED:
            return
        if self._state is _State.OPENING:
            # open() cleans up after itself if it fails; closing under it would leave it "open".
            raise RuntimeError(f"cannot close {self!r} while it is opening: await open() first")
        if self._state is _State.CLOSING:
            assert self._closed is not None
            await self._closed.wait()
            return
        was_open = self._state is _State.OPEN
        self._state = _State.CLOSING
        self._closed = asyncio.Event()
        try:
            # Queued transactions that got the lock before us finish; later ones see CLOSED.
            async with self._lock:
                if was_open and self._writer is not None:
                    try:
                        # Keeps the planner's statistics fresh; cheap when nothing changed.
                        await self._writer.execute("PRAGMA optimize")
                    except sqlean.Error as exc:  # never let housekeeping block a shutdown
                        _log.debug("PRAGMA optimize failed on close: %s", exc)
                await self._close_connections()
        finally:
            self._state = _State.CLOSED
            self._closed.set()
        if was_open:
            _log.info("closed database %s", self._path)

    async def _close_connections(self) -> None:
        for conn in (self._reader, self._writer):
            if conn is not None:
                try:
                    await conn.close()
                except Exception:  # closing is best effort; report and go on with the other one
                    _log.exception("error closing a connection to %s", self._path)
        self._reader = self._writer = None

    async def __aenter__(self) -> Database:
        await self.open()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def _require_open(self) -> aiosqlite.Connection:
        if self._state is not _State.OPEN or self._writer is None:
            hint = "call open() or use 'async with' first" if self._state is _State.UNOPENED else "it cannot be used"
            raise RuntimeError(f"{self!r} is {self._state.value}: {hint}")
        return self._writer

    # -- transactions and queries -----------------------------------------------------------------

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
                raise StoreError(f"cannot start a write transaction on {self._path}: {exc}") from exc
            try:
                yield conn
                await conn.execute("COMMIT")
            except BaseException as exc:
                await self._rollback(conn)
                if isinstance(exc, sqlean.Error):
                    raise StoreError(f"database write failed: {exc}") from exc
                raise

    async def write(self, work: Callable[[Any], T], *, tables: Collection[str] | None = None) -> T:
        """Run ``work(conn)`` as one write transaction in a single trip to the writer's thread.

        The same transaction as :meth:`transaction` (one at a time, ``BEGIN IMMEDIATE``, commit,
        or roll back if ``work`` raises; driver errors as StoreError), but ``work`` is a plain
        function given the driver's own connection, so its statements cost no thread hop each.
        Keep ``work`` to SQL and light Python: it holds the writer while it runs. ``tables``,
        if given, are all the tables ``work`` may change (triggers and cascades included):
        shared reads of other tables stay current (see :meth:`shared_reads`). Returns what
        ``work`` returns.
        """
        async with self._write_turn(tables) as conn:
            return await self._run_transaction(conn, work)

    async def _run_transaction(self, conn: aiosqlite.Connection, work: Callable[[Any], T]) -> T:
        """The body of :meth:`write`, for a caller already holding the writer (``_write_turn``)."""
        for attempt in range(1, BEGIN_ATTEMPTS + 1):
            try:
                return await run_on_thread(conn, _transact, work)
            except asyncio.CancelledError:
                # The transaction still runs to its end on the writer's thread. As transaction()
                # does with its ROLLBACK, keep the writer until it has: the thread runs calls in order.
                await run_on_thread(conn, _nothing)
                raise
            except _BeginFailed as failed:
                exc = failed.error
                if attempt == BEGIN_ATTEMPTS or not is_locked_error(exc):
                    raise StoreError(f"cannot start a write transaction on {self._path}: {exc}") from exc
                delay = retry_delay(attempt)
                _log.warning(
                    "database is locked (attempt %d of %d); retrying in %.2f s", attempt, BEGIN_ATTEMPTS, delay
                )
                await asyncio.sleep(delay)
            except sqlean.Error as exc:
                raise StoreError(f"database write failed: {exc}") from exc
        raise AssertionError("unreachable: the last attempt returns or raises")

    @asynccontextmanager
    async def _write_turn(self, tables: Collection[str] | None = None) -> AsyncIterator[aiosqlite.Connection]:
        """The writer connection, held by this task alone (the asyncio lock) until the block ends.

        ``tables``: what the block may change (None: anything), for shared reads.
        """
        self._require_open()
        task = asyncio.current_task()
        if task is not None and self._lock_owner is task:
            raise RuntimeError("transaction() is not reentrant: do not call store methods inside a transaction block")
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

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        """Run one read-only query outside any transaction and return all rows; raises StoreError."""
        self._require_open()
        if self._reader is not None:
            return await self._fetchall_on(self._reader, sql, params)
        # ":memory:": a single connection. Take the writer lock so a read never sees another
        # coroutine's uncommitted transaction.
        self._refuse_memory_read_in_transaction()
        async with self._lock:
            return await self._fetchall_on(self._require_open(), sql, params)

    async def read(self, work: Callable[[Any], T]) -> T:
        """Run ``work(conn)``, plain read-only queries, in one trip to the reader's thread.

        For reads of several queries (entities and their components): each awaited query would
        be a trip of its own. Like :meth:`fetchall`, the queries run outside any transaction and
        driver errors come out as StoreError. Returns what ``work`` returns.
        """
        self._require_open()
        if self._reader is not None:
            return await self._read_on(self._reader, work)
        self._refuse_memory_read_in_transaction()  # ":memory:": as in fetchall
        async with self._lock:
            return await self._read_on(self._require_open(), work)

    def _refuse_memory_read_in_transaction(self) -> None:
        task = asyncio.current_task()
        if task is not None and self._lock_owner is task:
            raise RuntimeError("store reads cannot run inside a transaction block of a ':memory:' Database")

    async def _read_on(self, conn: aiosqlite.Connection, work: Callable[[Any], T]) -> T:
        try:
            return await run_on_thread(conn, work)
        except sqlean.Error as exc:
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
            raise StoreError(f"database read failed: {exc}") from exc

    # -- logs written in the background -------------------------------------------------------------

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

    async def checkpoint(self) -> bool:
        """Copy the write-ahead log into the database file and empty it (``wal_checkpoint(TRUNCATE)``).

        For after deleting something for good (``troupe memory forget``): until a checkpoint, the
        log may still hold earlier copies of the pages. True when the log was emptied; False when
        another connection (a running daemon) was still reading from it, in which case a later
        checkpoint finishes the job, or for a ``":memory:"`` database. Raises StoreError.
        """
        if self._path == MEMORY_PATH:
            return False
        async with self._write_turn(()) as conn:
            try:
                async with conn.execute("PRAGMA wal_checkpoint(TRUNCATE)") as cur:
                    row = await cur.fetchone()
            except sqlean.Error as exc:
                raise StoreError(f"cannot checkpoint {self._path}: {exc}") from exc
        return row is not None and row[0] == 0

    # -- agents ------------------------------------------------------------------------------------

    def for_agent(self, agent_id: str) -> AgentStore:
        """The store as one agent sees it; every read and write is scoped to ``agent_id``."""
        if not agent_id or not isinstance(agent_id, str):
            raise ValueError(f"for_agent needs a non-empty agent id, not {agent_id!r}")
        return AgentStore(self, agent_id)

    async def embedding_dimension(self, agent_id: str) -> int:
        """The active embedding dimension of ``agent_id`` (384 until ensure_embedding_dimension is called)."""
        dim = self._dimensions.get(agent_id)
        if dim is None:
            row = await self.fetchone("SELECT value FROM meta WHERE key = ?", (_dimension_key(agent_id),))
            dim = int(row[0]) if row else DEFAULT_EMBEDDING_DIMENSION
            self._dimensions[agent_id] = dim
        return dim

    async def set_embedding_dimension(self, agent_id: str, dim: int) -> None:
        """Persist ``dim`` as the active embedding dimension of ``agent_id`` (validated by the caller)."""
        async with self.transaction() as conn:
            await conn.execute(
                "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (_dimension_key(agent_id), str(dim)),
            )
        self._dimensions[agent_id] = dim

    def forget_agent(self, agent_id: str) -> None:
        """Drop cached per-agent settings (after the agent was deleted)."""
        self._dimensions.pop(agent_id, None)


class _BeginFailed(Exception):
    """BEGIN IMMEDIATE failed on the writer's thread with the driver's ``error``."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(error)
        self.error = error


def _insert_logs(rows: list[tuple[Any, ...]], conn: Any) -> None:
    """On the writer's thread: insert log rows, skipping (and reporting) any the database rejects."""
    for row in rows:
        try:
            conn.execute(
                "INSERT INTO logs (id, created_at, entity_id, body, type, room_id) VALUES (?, ?, ?, ?, ?, ?)", row
            )
        except sqlean.IntegrityError as exc:  # only this statement is undone; the batch goes on
            _log.debug("log row %s dropped: %s", row[0], exc)


def _nothing(conn: Any) -> None:
    """On the writer's thread: returns once every call queued before it has run."""


def _transact(conn: Any, work: Callable[[Any], T]) -> T:
    """On the writer's thread: BEGIN IMMEDIATE, ``work(conn)``, COMMIT; ROLLBACK if anything fails."""
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlean.Error as exc:
        raise _BeginFailed(exc) from exc
    try:
        result = work(conn)
        conn.execute("COMMIT")
    except BaseException:
        try:
            conn.execute("ROLLBACK")
        except sqlean.OperationalError as exc:  # SQLite may already have rolled back (e.g. on SQLITE_FULL)
            _log.debug("rollback: %s", exc)
        raise
    return result


def _dimension_key(agent_id: str) -> str:
    return f"embedding_dimension:{agent_id}"

"""``Database``: one SQLite file shared by every agent, with one writer and one reader connection.

This module opens the file (connect, load sqlite-vec, migrate) and closes it, and keeps what the
database knows per agent. Transactions and reads are ``_access``'s; log rows written in the
background are ``_log_queue``'s.
"""

from __future__ import annotations

import asyncio
import logging
import os
from contextvars import Context

from bot.kernel.bus import LocalBus
from bot.kernel.errors import StoreError, StoreLocked
from bot.store._access import State
from bot.store._connect import MEMORY_PATH, VECTOR_BACKEND, open_connection, sqlean
from bot.store._health import CORRUPT_RECOVERY, StoreState, classify
from bot.store._leases import LocalLeases
from bot.store._log_queue import QueuedLogs
from bot.store._migrations import migrate
from bot.store._reads import ReadBatches
from bot.store._roster import LocalRoster
from bot.store._rows import Payloads
from bot.store._sharing import ROOM_SHARING_SQL, RoomSharing
from bot.store._sqlite import AgentStore
from bot.store._vectors import DEFAULT_EMBEDDING_DIMENSION, dimension_key

__all__ = ["Database"]

_log = logging.getLogger(__name__)


class Database(QueuedLogs):
    """One SQLite database file, shared by every agent of the daemon.

    ``async with Database(path) as db:`` opens it (creating the file, its parent directories and the
    schema, or migrating an older file) and closes it. ``db.for_agent(agent_id)`` gives the
    agent-scoped :class:`~bot.store.Store` that the rest of troupe uses.

    All writes go through one writer connection, one transaction at a time (an asyncio lock plus
    ``BEGIN IMMEDIATE``; writes queued meanwhile share the next one: see ``write``), so agents never see "database is locked" from each other; other processes
    or other ``Database`` objects on the same file wait on SQLite's busy timeout. Reads use a second,
    read-only connection, so they never queue behind writes (WAL lets them run concurrently). A
    ``":memory:"`` database has a single connection for both, since two connections would be two
    databases.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(path)
        self._closed: asyncio.Event | None = None
        self._sqlite_version = ""
        self._vec_version = ""
        self._schema_version = 0
        # agent id -> active embedding dimension; written through by ensure_embedding_dimension.
        self._dimensions: dict[str, int] = {}
        self._leases = LocalLeases()
        #: Decoded memory payloads, shared by every agent's store.
        self.payloads = Payloads()
        self._roster = LocalRoster()
        #: Agents of this process take turns at the shared knowledge scope (plugins/knowledge), so a
        #: shared document is stored and embedded once.
        self.shared_knowledge_lock = asyncio.Lock()
        self._reclaiming: asyncio.Task[None] | None = None  # a checkpoint after the disk was full

    def __repr__(self) -> str:
        return f"<Database path={self._path!r} state={self._state.name.lower()}>"

    @property
    def path(self) -> str:
        """The file this database lives in (or ``":memory:"``)."""
        return self._path

    @property
    def is_open(self) -> bool:
        """True between a successful open() and close()."""
        return self._state is State.OPEN

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
        if self._state is not State.UNOPENED:
            raise RuntimeError(f"cannot open {self!r}: it is {self._state.value} (a Database opens once)")
        self._state = State.OPENING
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
                    self._reads = ReadBatches(self._reader, os.path.basename(self._path), self.health.read_failed)
            except (sqlean.Error, OSError) as exc:  # OSError: making the directory or the file private
                raise _open_error(self._path, exc) from exc
        except BaseException:
            await self._close_connections()
            self._state = State.UNOPENED
            raise
        self._state = State.OPEN
        _log.info(
            "opened database %s (schema %d, SQLite %s, sqlite-vec %s)",
            self._path,
            self._schema_version,
            self._sqlite_version,
            self._vec_version,
        )

    async def close(self) -> None:
        """Write queued log rows and writes, wait for the running transaction, then close both connections.

        Safe to call more than once.
        """
        while self._state is State.OPEN and self._log_rows:
            await self.flush_logs()
        if self._state is State.CLOSED:
            return
        if self._state is State.OPENING:
            # open() cleans up after itself if it fails; closing under it would leave it "open".
            raise RuntimeError(f"cannot close {self!r} while it is opening: await open() first")
        if self._state is State.CLOSING:
            assert self._closed is not None
            await self._closed.wait()
            return
        was_open = self._state is State.OPEN
        self._state = State.CLOSING
        self._closed = asyncio.Event()
        try:
            # Writes queued before now are committed: their callers wait for that. Transactions
            # that got the lock before us finish; later ones see CLOSED.
            await self._drain_writes()
            async with self._lock:
                if was_open and self._writer is not None:
                    try:
                        # Keeps the planner's statistics fresh; cheap when nothing changed.
                        await self._writer.execute("PRAGMA optimize")
                    except sqlean.Error as exc:  # never let housekeeping block a shutdown
                        _log.debug("PRAGMA optimize failed on close: %s", exc)
                await self._close_connections()
        finally:
            self._state = State.CLOSED
            self._close_logs()  # flushed above: only stops the timer
            self._closed.set()
        if self._reclaiming is not None:  # it finds the database closed, if it had not run yet
            await asyncio.wait([self._reclaiming])
        if was_open:
            _log.info("closed database %s", self._path)

    async def _close_connections(self) -> None:
        if self._reads is not None:
            await self._reads.idle()  # reads asked for before close() get their rows
            self._reads = None
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

    def bus(self, origin: str) -> LocalBus:
        """The troupe's bus: one daemon uses a SQLite file, so there is nobody to tell."""
        return LocalBus()

    @property
    def leases(self) -> LocalLeases:
        """Leases within this process: one daemon uses a SQLite file, so it holds them all."""
        return self._leases

    async def room_sharing(self) -> list[RoomSharing]:
        """Pairs of characters that share platform rooms (``bot/store/_sharing.py``)."""
        return [RoomSharing(str(a), str(b), int(n)) for a, b, n in await self.fetchall(ROOM_SHARING_SQL)]

    @property
    def roster(self) -> LocalRoster:
        """The daemons within this process: one, since one daemon uses a SQLite file."""
        return self._roster

    # -- housekeeping ------------------------------------------------------------------------------

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

    def _after_disk_full(self) -> None:
        # The write-ahead log of a database that filled its disk may hold many copies of the same
        # pages, written since the last checkpoint: copying them into the file and emptying the
        # log gives the disk back what it can, before the writes held meanwhile fill it again.
        if self._reclaiming is None or self._reclaiming.done():
            self._reclaiming = asyncio.get_running_loop().create_task(
                self._reclaim(), name=f"troupe:reclaim:{os.path.basename(self._path)}", context=Context()
            )

    async def _reclaim(self) -> None:
        try:
            emptied = await self.checkpoint()
        except (StoreError, RuntimeError) as exc:  # full again, or closed meanwhile: nothing lost
            _log.debug("checkpoint after the disk was full: %s", exc)
            return
        _log.debug("checkpoint after the disk was full: the write-ahead log %s", "emptied" if emptied else "in use")

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
            row = await self.fetchone("SELECT value FROM meta WHERE key = ?", (dimension_key(agent_id),))
            dim = int(row[0]) if row else DEFAULT_EMBEDDING_DIMENSION
            self._dimensions[agent_id] = dim
        return dim

    async def set_embedding_dimension(self, agent_id: str, dim: int) -> None:
        """Persist ``dim`` as the active embedding dimension of ``agent_id`` (validated by the caller)."""
        row = (dimension_key(agent_id), str(dim))
        await self.write(
            lambda conn: conn.execute(
                "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", row
            ),
            tables=("meta",),
        )
        self._dimensions[agent_id] = dim

    def forget_agent(self, agent_id: str) -> None:
        """Drop cached per-agent settings (after the agent was deleted)."""
        self._dimensions.pop(agent_id, None)


def _open_error(path: str, exc: BaseException) -> StoreError:
    """What opening ``path`` failing with ``exc`` means: a file locked by another process (worth
    waiting for), a corrupt file (and how to recover), or the driver's words."""
    state = classify(exc)
    if state is StoreState.LOCKED:
        return StoreLocked(f"the database {path} is locked by another process (a backup, sqlite3 at a shell?): {exc}")
    if state is StoreState.CORRUPT:
        return StoreError(f"the database {path} is corrupt ({exc}): {CORRUPT_RECOVERY.replace('FILE', path)}")
    return StoreError(f"cannot open database {path}: {exc}")

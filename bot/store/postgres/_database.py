"""``PostgresDatabase``: one PostgreSQL database shared by every agent of every daemon.

A bounded psycopg pool (``max_size`` connections, none kept while idle), numbered migrations
applied at open under an advisory lock, and the few ways the agent-scoped store uses it:
:meth:`fetchall`/:meth:`fetchone` (rows as dicts), :meth:`execute` (one statement, its own
transaction) and :meth:`transaction` (a block of statements, all or none). Driver errors come
out as StoreError; the URL's password never appears in a log line, an error or a repr.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractContextManager, asynccontextmanager, nullcontext
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import psycopg
from pgvector.psycopg import register_vector_async
from psycopg.abc import Buffer
from psycopg.adapt import Loader
from psycopg.pq import Format
from psycopg.rows import dict_row
from psycopg.types.string import TextLoader
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from bot.kernel.errors import StoreError, StoreUnavailable
from bot.store._health import StoreHealth
from bot.store._rows import Payloads
from bot.store._sharing import ROOM_SHARING_SQL, RoomSharing
from bot.store._urls import is_postgres_url, redacted_url
from bot.store.postgres._bus import PgBus
from bot.store.postgres._leases import PgLeases
from bot.store.postgres._log_queue import QueuedLogs
from bot.store.postgres._migrations import migrate
from bot.store.postgres._roster import PgRoster
from bot.store.postgres._vector_index import DEFAULT_INDEX_THRESHOLD, VectorIndexes

if TYPE_CHECKING:
    from bot.store.postgres._store import PgAgentStore

__all__ = ["PostgresDatabase", "Row", "is_postgres_url", "redacted_url"]

_log = logging.getLogger(__name__)

#: A row as the store reads it: column name to value.
Row = dict[str, Any]

#: Connections per daemon at most (elizaOS pools 20 per agent; its users run out).
DEFAULT_MAX_CONNECTIONS = 6
# How long a caller waits for a free connection, and a connection for the server, in seconds.
_POOL_WAIT_S = 30.0
_CONNECT_TIMEOUT_S = 10
# A pooled connection unused this long is closed: an idle daemon holds none.
_IDLE_S = 60.0


class State(enum.Enum):
    UNOPENED = "not open yet"
    OPEN = "open"
    CLOSED = "closed"


class PostgresDatabase:
    """A PostgreSQL database as a ``StoreBackend``. ``async with PostgresDatabase(url) as db:``
    opens the pool and migrates; ``db.for_agent(agent_id)`` gives one agent's store."""

    def __init__(
        self,
        url: str,
        *,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        application_name: str | None = None,
        vector_index_threshold: int = DEFAULT_INDEX_THRESHOLD,
    ) -> None:
        if not is_postgres_url(url):
            raise ValueError("a PostgreSQL URL starts with postgresql:// or postgres://")
        if max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, not {max_connections}")
        self._url = url
        self._max = max_connections
        # Names this process's connections in pg_stat_activity (``troupe:<daemon id>``).
        self._connection_kwargs: dict[str, Any] = {
            "autocommit": True,
            "row_factory": dict_row,
            "connect_timeout": _CONNECT_TIMEOUT_S,
        }
        if application_name:
            self._connection_kwargs["application_name"] = application_name
        self._pool: AsyncConnectionPool | None = None
        self._listener = False  # whether the pool gave up a place to the bus's connection
        self._state = State.UNOPENED
        self._schema_version = 0
        self._leases = PgLeases(self)
        #: Decoded memory payloads, shared by every agent's store.
        self.payloads = Payloads()
        self._roster = PgRoster(self)
        self._health = StoreHealth(self.path, watched=False)
        #: Agents of this process take turns at the shared knowledge scope (as with SQLite).
        self.shared_knowledge_lock = asyncio.Lock()
        #: Rows of ``Store.queue_log``, written together soon after; flushed by close().
        self.log_queue = QueuedLogs(self)
        #: The HNSW indexes of agents with many vectors (see ``_vector_index``).
        self.vector_indexes = VectorIndexes(self, threshold=vector_index_threshold)

    def __repr__(self) -> str:
        return f"<PostgresDatabase {self.path} state={self._state.name.lower()}>"

    @property
    def path(self) -> str:
        """Where the database is: its URL without the password."""
        return redacted_url(self._url)

    @property
    def is_open(self) -> bool:
        return self._state is State.OPEN

    @property
    def health(self) -> StoreHealth:
        """Whether writes work now (see ``bot.store._health``). Its writes are not watched one by
        one, so it stays ``ok``: a write that failed for the server's disk still waits and tries
        again (``StoreHealth.retry``); the server's outages are the open's and the pool's to wait out."""
        return self._health

    @property
    def schema_version(self) -> int:
        return self._schema_version

    async def open(self) -> None:
        """Open the pool and apply missing migrations; StoreError if the server cannot be used."""
        if self._state is not State.UNOPENED:
            raise RuntimeError(f"cannot open {self!r}: it is {self._state.value} (a database opens once)")
        try:
            # A connection of its own first: a wrong URL or a server that is down fails here at
            # once with the driver's reason, where the pool would keep retrying in the background.
            async with await psycopg.AsyncConnection.connect(self._url, **self._connection_kwargs) as conn:
                await _configure(conn)
                self._schema_version = await migrate(conn)
        except (psycopg.Error, OSError) as exc:
            error = StoreUnavailable if _unreachable(exc) else StoreError
            raise error(f"cannot open PostgreSQL database {self.path}: {_reason(exc, self._url)}") from None
        pool = AsyncConnectionPool(
            self._url,
            min_size=0,
            max_size=self._max,
            max_idle=_IDLE_S,
            timeout=_POOL_WAIT_S,
            kwargs=self._connection_kwargs,
            configure=_configure_pooled,
            # A connection is tried before it is handed out (one empty statement): after a
            # database restart or failover every pooled one is dead, and each would fail once.
            check=AsyncConnectionPool.check_connection,
            open=False,
            name="troupe",
        )
        await pool.open(wait=False)
        self._pool = pool
        self._state = State.OPEN
        _log.info("opened PostgreSQL database %s (schema %d)", self.path, self._schema_version)

    async def close(self) -> None:
        """Write the queued log rows, then close the pool (waiting for connections in use); safe to
        call more than once."""
        if self._state is not State.OPEN:
            self._state = State.CLOSED
            return
        await self.log_queue.close()
        await self.vector_indexes.close()
        self._state = State.CLOSED
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()
        _log.info("closed PostgreSQL database %s", self.path)

    async def __aenter__(self) -> PostgresDatabase:
        await self.open()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def checkpoint(self) -> bool:
        """True: PostgreSQL keeps no copy of deleted rows that troupe could empty (VACUUM reclaims
        their space in its own time), so a deletion is finished once committed."""
        self._require_pool()
        return True

    def for_agent(self, agent_id: str) -> PgAgentStore:
        """The store as one agent sees it; every read and write is scoped to ``agent_id``."""
        from bot.store.postgres._store import PgAgentStore

        if not agent_id or not isinstance(agent_id, str):
            raise ValueError(f"for_agent needs a non-empty agent id, not {agent_id!r}")
        return PgAgentStore(self, agent_id)

    @property
    def leases(self) -> PgLeases:
        """The troupe's leases, shared by every daemon on this database."""
        return self._leases

    async def room_sharing(self) -> list[RoomSharing]:
        """Pairs of characters that share platform rooms (``bot/store/_sharing.py``)."""
        rows = await self.fetchall(ROOM_SHARING_SQL)
        return [RoomSharing(r["a"], r["b"], int(r["rooms"])) for r in rows]

    def bus(self, origin: str) -> PgBus:
        """The troupe's bus as the daemon ``origin`` posts to and hears it (not listening until
        its ``run()`` runs): a table and LISTEN/NOTIFY (``_bus.py``)."""
        return PgBus(self, origin)

    async def connect_listener(self) -> psycopg.AsyncConnection[Row]:
        """A connection outside the pool, for the bus's LISTEN (the caller closes it). The first
        time, the pool gives up one of its places for it: a daemon still holds at most
        ``max_connections`` (with one, the pool keeps it: two).

        Raises:
            StoreError: the server cannot be reached (or refused the connection).
        """
        pool = self._require_pool()
        if not self._listener and self._max > 1:
            await pool.resize(0, self._max - 1)
        self._listener = True
        try:
            # Named as the pool's (``troupe:<daemon id>``): pg_stat_activity counts it as this daemon's.
            kwargs = {"application_name": "troupe bus", **self._connection_kwargs}
            return await psycopg.AsyncConnection.connect(self._url, **kwargs)
        except (psycopg.Error, OSError) as exc:
            raise StoreError(f"cannot connect to PostgreSQL database {self.path}: {_reason(exc, self._url)}") from None

    @property
    def roster(self) -> PgRoster:
        """The troupe's daemons, as each publishes itself."""
        return self._roster

    def shared_reads(self) -> AbstractContextManager[None]:
        """No read sharing yet: each read is its own query."""
        return nullcontext()

    # -- the ways to use it ------------------------------------------------------------------------

    def _require_pool(self) -> AsyncConnectionPool:
        if self._state is not State.OPEN or self._pool is None:
            hint = "call open() or use 'async with' first" if self._state is State.UNOPENED else "it cannot be used"
            raise RuntimeError(f"{self!r} is {self._state.value}: {hint}")
        return self._pool

    async def fetchall(self, sql: str, params: Sequence[object] | Mapping[str, object] = ()) -> list[Row]:
        """The rows of one read-only query, as dicts."""
        pool = self._require_pool()
        try:
            async with pool.connection() as conn:
                cur = await conn.execute(sql, params)
                return await cur.fetchall()  # type: ignore[return-value]  # dict_row
        except (psycopg.Error, PoolTimeout) as exc:
            raise StoreError(f"database read failed: {_reason(exc, self._url)}") from exc

    async def fetchone(self, sql: str, params: Sequence[object] | Mapping[str, object] = ()) -> Row | None:
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

    async def execute(self, sql: str, params: Sequence[object] | Mapping[str, object] = ()) -> int:
        """One statement in a transaction of its own; its row count."""
        pool = self._require_pool()
        try:
            async with pool.connection() as conn:
                cur = await conn.execute(sql, params)
                return cur.rowcount
        except (psycopg.Error, PoolTimeout) as exc:
            raise StoreError(f"database write failed: {_reason(exc, self._url)}") from exc

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[psycopg.AsyncConnection[Row]]:
        """``async with db.transaction() as conn:`` the block's statements commit together, or
        roll back if it raises. Driver errors come out as StoreError."""
        pool = self._require_pool()
        try:
            async with pool.connection() as conn, conn.transaction():
                yield conn  # type: ignore[misc]  # dict_row connections
        except (psycopg.Error, PoolTimeout) as exc:
            raise StoreError(f"database write failed: {_reason(exc, self._url)}") from exc

    @asynccontextmanager
    async def session(self) -> AsyncIterator[psycopg.AsyncConnection[Row]]:
        """``async with db.session() as conn:`` one pooled connection for several statements, each
        committed alone (for what cannot run in a transaction, or takes session locks). A block that
        raises or is cancelled closes the connection rather than return it with its session state."""
        pool = self._require_pool()
        try:
            async with pool.connection() as conn:
                try:
                    yield conn  # type: ignore[misc]  # dict_row connections
                except BaseException:
                    await conn.close()
                    raise
        except (psycopg.Error, PoolTimeout) as exc:
            raise StoreError(f"database session failed: {_reason(exc, self._url)}") from exc


class _JsonbTextBinaryLoader(Loader):
    """jsonb in a binary result (a version byte, then the JSON text) as its JSON text too."""

    format = Format.BINARY

    def load(self, data: Buffer) -> str:
        return bytes(data[1:]).decode()


async def _configure(conn: psycopg.AsyncConnection[Any]) -> None:
    """Every connection: jsonb comes back as its JSON text, as SQLite's JSON columns do, so the
    store's row converters (bot/store/_rows.py) read both backends alike, whether a query asks
    for text results or binary ones (vector search does: 1536 floats as text cost milliseconds)."""
    conn.adapters.register_loader("jsonb", TextLoader)
    conn.adapters.register_loader("jsonb", _JsonbTextBinaryLoader)


async def _configure_pooled(conn: psycopg.AsyncConnection[Any]) -> None:
    """Pooled connections (opened once the migrations made the type): also pgvector's ``vector``,
    sent and read as ``pgvector.Vector`` (float32, as SQLite stores vectors)."""
    await _configure(conn)
    await register_vector_async(conn)


# Constraint failures worded as SQLite words them, so callers read one message from both backends.
_CONSTRAINTS = (
    (psycopg.errors.CheckViolation, "CHECK"),
    (psycopg.errors.ForeignKeyViolation, "FOREIGN KEY"),
    (psycopg.errors.UniqueViolation, "UNIQUE"),
    (psycopg.errors.NotNullViolation, "NOT NULL"),
)


# What a server that is up says when it refuses for now (libpq gives no SQLSTATE at connect).
_FOR_NOW = ("the database system is", "too many clients", "too many connections", "remaining connection slots")


def _unreachable(exc: BaseException) -> bool:
    """Whether opening failed because the server cannot be reached now (refused, no socket, no
    answer, a name not resolvable yet, starting up or out of connections) rather than because
    it refused this login or database, or the URL is wrong: those need someone to fix them."""
    if isinstance(exc, OSError):
        return True
    if not isinstance(exc, psycopg.OperationalError):
        return False  # ProgrammingError: the URL itself
    text = str(exc)
    return "FATAL:" not in text or any(phrase in text for phrase in _FOR_NOW)


def _reason(exc: BaseException, url: str) -> str:
    """The driver's message, without the URL's password should it quote it."""
    text = str(exc).strip() or type(exc).__name__
    kind = next((name for error, name in _CONSTRAINTS if isinstance(exc, error)), None)
    if kind is not None:
        text = f"{kind} constraint failed: {text}"
    password = urlsplit(url).password
    return text.replace(password, "***") if password else text

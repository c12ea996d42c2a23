"""Opening SQLite connections: the sqlean driver, sqlite-vec, pragmas.

The stdlib ``sqlite3`` of many Python builds (pyenv's among them) cannot load extensions, so troupe
always uses ``sqlean`` (the sqlean-py package), a drop-in ``sqlite3`` module with its own modern
SQLite that can. aiosqlite accepts any connector returning a sqlite3-compatible connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import re
import unicodedata
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import aiosqlite

from bot.kernel.errors import VectorExtensionError

__all__ = [
    "Connection",
    "MEMORY_PATH",
    "Params",
    "Row",
    "SQLValue",
    "VECTOR_BACKEND",
    "begin_immediate",
    "casefold",
    "is_locked_error",
    "open_connection",
    "retry_delay",
    "run_on_thread",
    "search_text",
    "sqlean",
]

_log = logging.getLogger(__name__)

_INSTALL_HINT = (
    "install the 'sqlean-py' and 'sqlite-vec' packages into the Python that runs troupe "
    "(pip install 'sqlean-py>=3.45,<4' 'sqlite-vec>=0.1.6,<0.2')"
)

try:  # Imported here once so every module of the store catches the right exception classes.
    import sqlean
except ImportError as exc:  # pragma: no cover - sqlean-py is a hard dependency
    raise VectorExtensionError(f"the sqlean SQLite driver is missing ({exc}): {_INSTALL_HINT}") from exc

if TYPE_CHECKING:
    # sqlean ships no type stubs; its Connection and Row have the stdlib interface.
    from sqlite3 import Connection, Row
else:
    Connection = sqlean.Connection
    Row = sqlean.Row

#: A value SQLite binds and stores: what one query parameter may be.
SQLValue = str | int | float | bytes | None
#: The parameters of one statement, in order.
Params = Sequence[SQLValue]

T = TypeVar("T")

MEMORY_PATH = ":memory:"
VECTOR_BACKEND = "sqlite-vec"

# How long a connection waits for another writer before SQLITE_BUSY ("database is locked").
BUSY_TIMEOUT_MS = 5000
# Retries of BEGIN IMMEDIATE after the busy timeout ran out (upstream: 3 attempts in all).
BEGIN_ATTEMPTS = 3


def casefold(value: object) -> str | None:
    """SQL ``casefold(x)``: Unicode-aware lowercasing (SQLite's ``lower()`` only knows ASCII)."""
    if value is None:
        return None
    return unicodedata.normalize("NFKC", str(value)).casefold()


_MARKS = re.compile("[\u0300-\u036f]+")


def search_text(value: object) -> object:
    """SQL ``troupe_search_text(x)``: text as keyword search indexes it and looks for it, its
    combining marks removed ("café" is "cafe", "Αθήνα" is "Αθηνα"), as PostgreSQL's function of
    that name. FTS5's ``remove_diacritics`` alone folds only Latin letters. Anything but text
    comes back as it is."""
    if not isinstance(value, str):
        return value
    return unicodedata.normalize("NFC", _MARKS.sub("", unicodedata.normalize("NFD", value)))


async def _load_sqlite_vec(conn: aiosqlite.Connection) -> None:
    """Load sqlite-vec into ``conn``; raises VectorExtensionError saying what to install."""
    try:
        import sqlite_vec
    except ImportError as exc:
        raise VectorExtensionError(f"the sqlite-vec package is missing ({exc}): {_INSTALL_HINT}") from exc
    try:
        await conn.enable_load_extension(True)
        try:
            await conn.load_extension(sqlite_vec.loadable_path())
        finally:
            # Never leave extension loading on: SQL could otherwise load arbitrary libraries.
            await conn.enable_load_extension(False)
        async with conn.execute("SELECT vec_version()") as cur:
            await cur.fetchone()
    except (sqlean.Error, AttributeError, OSError) as exc:
        raise VectorExtensionError(f"sqlite-vec could not be loaded into SQLite ({exc}): {_INSTALL_HINT}") from exc


async def _use_wal(conn: aiosqlite.Connection) -> None:
    """Switch the file to WAL (persistent, so usually already done)."""
    async with conn.execute("PRAGMA journal_mode") as cur:
        row = await cur.fetchone()
    if row is not None and str(row[0]).lower() in ("wal", "memory"):
        return
    # Changing the journal mode needs an exclusive lock, and SQLite may answer "database is
    # locked" at once instead of using the busy timeout (e.g. two processes creating the file
    # together), so retry here for up to about the busy timeout.
    deadline = asyncio.get_running_loop().time() + BUSY_TIMEOUT_MS / 1000
    delay = 0.005
    while True:
        try:
            await conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlean.OperationalError as exc:
            if not is_locked_error(exc) or asyncio.get_running_loop().time() > deadline:
                raise
        await asyncio.sleep(delay + random.uniform(0, delay))
        delay = min(delay * 2, 0.25)


async def _configure(conn: aiosqlite.Connection, *, reader: bool) -> None:
    await conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    # Read the schema once before anything else, so a file that is not a database fails here
    # with the driver's own message instead of looking like an extension problem.
    async with conn.execute("SELECT count(*) FROM sqlite_master") as cur:
        await cur.fetchone()
    await _load_sqlite_vec(conn)
    conn.row_factory = sqlean.Row
    await conn.execute("PRAGMA foreign_keys = ON")
    if reader:
        await conn.execute("PRAGMA query_only = ON")
    else:
        await _use_wal(conn)
    await conn.execute("PRAGMA synchronous = NORMAL")
    await conn.create_function("casefold", 1, casefold, deterministic=True)
    # The keyword index's view and triggers call it (migration 7): every connection has it.
    await conn.create_function("troupe_search_text", 1, search_text, deterministic=True)


#: The database holds private conversations: only its owner may read it, whatever the umask.
_PRIVATE_DIR = 0o700
_PRIVATE_FILE = 0o600


def _make_private(path: str) -> None:
    """Create ``path``'s directory 0700 (if it is new) and the file 0600; tighten existing files.

    SQLite creates the -wal and -shm files with the main file's permissions, so making the main
    file private before SQLite first opens it makes all three private. A directory that already
    exists is left as it is: it may be shared on purpose (systemd's StateDirectory=, say).
    """
    parent = Path(path).parent
    if not parent.is_dir():
        parent.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):  # another process made it meanwhile
            parent.mkdir(mode=_PRIVATE_DIR)
            os.chmod(parent, _PRIVATE_DIR)  # mkdir's mode is filtered by the umask
    # O_EXCL with mode 0600: a new file is never readable by others, not even for an instant
    # (SQLite takes an empty file for a new database).
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, _PRIVATE_FILE))
    for file in (path, path + "-wal", path + "-shm"):
        _tighten(file)


def _tighten(file: str) -> None:
    """Take group and other permissions off ``file`` (left by an earlier version), if it exists."""
    try:
        mode = os.stat(file).st_mode
        if mode & 0o077:
            os.chmod(file, _PRIVATE_FILE)
            _log.info("made %s readable by its owner only (it was readable by others)", file)
    except FileNotFoundError:
        pass
    except PermissionError:  # not ours to change; still usable
        _log.warning(
            "%s is readable by other users and cannot be made private (it belongs to someone "
            "else); chmod 600 it as its owner",
            file,
        )


async def open_connection(path: str, *, reader: bool = False) -> aiosqlite.Connection:
    """Open an aiosqlite connection to ``path`` with sqlite-vec loaded and troupe's pragmas set.

    Creates the parent directories of a file path, the last one private (0700), and the file
    private (0600; see :func:`_make_private`). Raises VectorExtensionError if sqlite-vec
    cannot be loaded, and the driver's error if the file cannot be opened. A ``reader``
    connection refuses writes (``PRAGMA query_only``).
    """
    if path != MEMORY_PATH and not reader:
        await asyncio.to_thread(_make_private, path)
    # isolation_level=None: the driver never opens transactions by itself; Database issues
    # BEGIN IMMEDIATE / COMMIT explicitly so that every write takes the write lock up front.
    conn = aiosqlite.Connection(
        lambda: sqlean.connect(path, isolation_level=None, check_same_thread=False), iter_chunk_size=64
    )
    try:
        await conn
    except BaseException:
        # aiosqlite stops its worker thread without waiting; wait here so that the thread never
        # reports to an event loop that has gone away meanwhile.
        thread = getattr(conn, "_thread", None)
        if thread is not None and thread.is_alive():
            await asyncio.to_thread(thread.join, 5)
        raise
    try:
        await _configure(conn, reader=reader)
    except BaseException:
        await conn.close()
        raise
    _log.debug("opened %s connection to %s", "reader" if reader else "writer", path)
    return conn


def is_locked_error(exc: BaseException) -> bool:
    """True for SQLITE_BUSY/SQLITE_LOCKED, which a retry can cure."""
    if not isinstance(exc, sqlean.OperationalError):
        return False
    message = str(exc).lower()
    return "locked" in message or "busy" in message


async def run_on_thread(conn: aiosqlite.Connection, work: Callable[..., T], *args: object) -> T:
    """Run ``work(raw_connection, *args)`` on ``conn``'s worker thread and return its result.

    Each awaited aiosqlite call is one round trip to that thread (a queue put, a wake-up, a
    self-pipe write back to the loop); a plain function can run several statements in a single
    trip. aiosqlite has no public call for this, so this is the one place that uses its
    ``_execute``/``_conn`` (present, unchanged, in every version troupe allows: 0.20 to 0.22).
    Like any aiosqlite call, it runs after the calls queued before it on that connection.
    """
    execute: Callable[..., Awaitable[T]] = conn._execute  # private, so untyped
    return await execute(work, conn._conn, *args)


def retry_delay(attempt: int) -> float:
    """Seconds to wait before retrying BEGIN IMMEDIATE after failed ``attempt`` (1-based)."""
    return min(0.1 * 2.0 ** (attempt - 1), 1.0) + random.uniform(0, 0.1)


async def begin_immediate(conn: aiosqlite.Connection) -> None:
    """Start a write transaction, waiting for other writers; raises the driver's error after the last attempt.

    The busy timeout already waits up to 5 s inside SQLite; this adds a bounded retry with
    exponential backoff and jitter as a last resort (a checkpoint or another process holding the
    lock for longer). Only BEGIN is retried: once it succeeds the transaction owns the write lock,
    so no later statement of it can fail with "database is locked" in WAL mode.
    """
    for attempt in range(1, BEGIN_ATTEMPTS + 1):
        try:
            await conn.execute("BEGIN IMMEDIATE")
            return
        except sqlean.OperationalError as exc:
            if attempt == BEGIN_ATTEMPTS or not is_locked_error(exc):
                raise
            delay = retry_delay(attempt)
            _log.debug("database is locked (attempt %d of %d); retrying in %.2f s", attempt, BEGIN_ATTEMPTS, delay)
            await asyncio.sleep(delay)

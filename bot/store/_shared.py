"""Read sharing for one unit of work (one message): identical reads run one query.

While handling one message the gate, a dozen providers and several action validators each read
the same room, world and room state; every read is a trip to the reader thread. Inside
``Database.shared_reads()`` such reads (``Database.fetchall_shared``) with the same SQL and
parameters share one query, including reads still in flight. A shared read names the tables it
reads; once a write transaction of the Database that may have changed one of them has ended
(any ``transaction()`` block, or a ``write()`` declaring that table), what was read before it
is read again, so a read never returns rows older than the last write made through troupe.
Callers get rows, which are immutable, and build their own objects.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from bot.store._connect import Params, Row, SQLValue

__all__ = ["SharedReads", "WriteMarks", "active", "scope"]

Key = tuple[str, tuple[SQLValue, ...]]

#: The sharing scope of the running task (tasks started inside a scope inherit it).
_active: ContextVar[SharedReads | None] = ContextVar("troupe_shared_reads", default=None)

_ANY_TABLE = "*"


class WriteMarks:
    """A count of finished write transactions, and for each table the count after its last write."""

    __slots__ = ("_last", "count")

    def __init__(self) -> None:
        self.count = 0
        self._last: dict[str, int] = {}

    def ended(self, tables: Collection[str] | None) -> None:
        """A write transaction ended that may have changed ``tables`` (None: any table)."""
        self.count += 1
        for table in (_ANY_TABLE,) if tables is None else tables:
            self._last[table] = self.count

    def changed_since(self, mark: int, tables: Collection[str]) -> bool:
        """Whether a write that may have changed one of ``tables`` ended after ``count`` was ``mark``."""
        last = self._last
        return last.get(_ANY_TABLE, 0) > mark or any(last.get(t, 0) > mark for t in tables)


class SharedReads:
    """The reads shared in one scope: for each (SQL, parameters), when it started and its result."""

    __slots__ = ("_reads", "_writes", "closed", "owner")

    def __init__(self, owner: object, writes: WriteMarks) -> None:
        self.owner = owner
        self._writes = writes
        self._reads: dict[Key, tuple[int, asyncio.Future[list[Row]]]] = {}
        self.closed = False

    async def fetchall(
        self,
        sql: str,
        params: Params,
        tables: Collection[str],
        fetch: Callable[[], Awaitable[list[Row]]],
    ) -> list[Row]:
        """The rows of ``sql`` (which reads ``tables``): from an earlier read still current, else ``fetch()``."""
        key = (sql, tuple(params))
        entry = self._reads.get(key)
        if entry is not None:
            started, read = entry
            if self._writes.changed_since(started, tables) or (
                read.done() and (read.cancelled() or read.exception() is not None)
            ):
                entry = None  # stale, or failed: read again
            elif read.done():
                return list(read.result())  # the common case: already read in this scope
        if entry is None:
            # A task, so that a caller cancelled while waiting does not cancel the others' read.
            read = asyncio.ensure_future(fetch())
            self._reads[key] = (self._writes.count, read)
        return list(await asyncio.shield(read))

    def close(self) -> None:
        """End the scope: a task started inside it and still running reads on its own from now on."""
        self.closed = True
        self._reads.clear()


def active(owner: object) -> SharedReads | None:
    """The running task's open scope for ``owner`` (a Database), or None."""
    scope = _active.get()
    if scope is None or scope.closed or scope.owner is not owner:
        return None
    return scope


@contextmanager
def scope(owner: object, writes: WriteMarks) -> Iterator[None]:
    """Share reads of ``owner`` in the running task (and tasks it starts) until the block ends."""
    if active(owner) is not None:  # nested: join the outer scope
        yield
        return
    shared = SharedReads(owner, writes)
    token = _active.set(shared)
    try:
        yield
    finally:
        shared.close()
        _active.reset(token)
